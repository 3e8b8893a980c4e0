/* libhcasim-exec.so, the library hcasim-exec preloads into the program it runs
 * (docs/fabric.md#hcasim-exec): the program's clocks, TSC, pid and /proc/cpuinfo come from the
 * simulated host, so that its runs repeat. exec_clock.c serves the time and the pid,
 * exec_trap.c traps rdtsc and serves /proc/cpuinfo, exec_sock.c and exec_sockio.c place the
 * program's TCP traffic with other processes of the fabric in simulated time. */
#ifndef SIM_APPS_EXEC_PRELOAD_H
#define SIM_APPS_EXEC_PRELOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The configuration, read once at load (exec.* keys). */
struct exec_cfg {
	uint64_t read_ps; /* exec.clock_read_ns: what one read of a clock costs */
	uint64_t tsc_mhz; /* exec.tsc_mhz */
	uint64_t epoch_s; /* exec.epoch_s: CLOCK_REALTIME at served time 0 */
	int pid;          /* what getpid() returns: 1000 + the first host held */
};
extern struct exec_cfg exec_cfg;

/* The program's time in ps: charges one read and returns the time it is served at. Called
 * from inside the simulation (a trace observer reading the clock), it returns the last time
 * served and charges nothing. */
uint64_t exec_now_ps(void);
/* Whether code at address pc belongs to hcasim (libhcasim, its libibverbs, this library):
 * its reads of the clock, the TSC and the pid are the machine's own. */
bool exec_own_code(const void *pc);
/* Whether pc lies in a sanitizer's runtime (libasan, libubsan), preloaded ahead of this library
 * in a sanitized build: its interceptors stand between a caller and these functions. */
bool exec_sanitizer_code(const void *pc);
/* The caller of the sanitizer's function that called the interposed function which calls
 * this: found by unwinding (the runtime does not always keep frame pointers); the address of
 * exec_own_code when that is in the runtime too. */
const void *exec_sanitizer_caller(void);
/* The code that called the interposed function: the return address; in a sanitized build,
 * when that is in the sanitizer's runtime, the caller of the runtime's function: the program
 * or hcasim behind an interceptor, or, when the runtime reads the clock for itself (its
 * allocator does), the runtime, which counts as hcasim's own code. */
#ifdef __SANITIZE_ADDRESS__
#define EXEC_CALLER()                                                                     \
	({                                                                                \
		const void *ra_ = __builtin_return_address(0);                            \
		exec_sanitizer_code(ra_) ? exec_sanitizer_caller() : ra_;                 \
	})
#else
#define EXEC_CALLER() __builtin_return_address(0)
#endif
/* Whether pc lies in the vDSO, whose clock functions read the real TSC. */
bool exec_vdso_code(const void *pc);
/* Start trapping rdtsc (exec_trap.c); a message and -1 on failure. */
int exec_trap_start(void);
/* The real clock (a system call: the vDSO would read the trapped TSC). */
int exec_real_clock(int id, void *ts);
/* The C library's function name, looked up once into *f (abort if missing). */
void *exec_libc(void **f, const char *name);

/* ---- TCP sockets between processes of the fabric (exec_sock.c, exec_sockio.c;
 * docs/fabric.md#determinism) ---- */
/* A socket the library follows: a listening one, or a connection to another fabric process
 * whose byte stream is cut into records stamped with the writer's simulated time. */
struct exec_sock {
	int listen;	/* the listen registration (a listening socket), or -1 */
	int conn;	/* the connection's slot, or -1 */
	int side;	/* 0: the connecting side, 1: the accepting one */
	uint32_t left;	/* bytes of the record being read that are still to come */
	bool eof;	/* the peer's end of stream was read */
	bool wr_closed; /* this side's end of stream was written */
};
/* Open the fabric's shared socket state and set hcasim's rules (the constructor); 0, or -1
 * with a message. Nothing without HCASIM_FABRIC. */
int exec_sock_start(void);
/* The followed socket fd is, or NULL. */
struct exec_sock *exec_sock_of(int fd);
/* recv, send, close and shutdown(SHUT_WR) of a followed connection. */
ssize_t exec_sock_recv(int fd, struct exec_sock *s, void *buf, size_t n, int flags);
ssize_t exec_sock_send(int fd, struct exec_sock *s, const void *buf, size_t n, int flags);
void exec_sock_close(int fd);
void exec_sock_shut(struct exec_sock *s);

#endif
