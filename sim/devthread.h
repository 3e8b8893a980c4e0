/* The device thread of a fabric process (docs/fabric.md#the-device-thread). */
#ifndef SIM_DEVTHREAD_H
#define SIM_DEVTHREAD_H

#include "sim/kernel.h"

#include <stdbool.h>
#include <stdint.h>

/* Around every call of the program into the simulation (nested calls nest): the program holds
 * the simulation; coming back after the device thread ran, its time first reaches what was
 * promised meanwhile. Without a device thread: a thread-local count. */
void sim_enter(void);
void sim_leave(void);

/* Start the device thread for kernel k: it runs the simulation once the program has left it
 * alone for grace_us of wall time. 0 or -errno. sim_devthread_stop ends it (the caller then
 * holds the simulation alone). */
int sim_devthread_start(struct sim_kernel *k, uint64_t grace_us);
void sim_devthread_stop(void);

#endif
