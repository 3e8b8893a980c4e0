/* The last error message of the simulator and driver: every -errno returned for bad input
 * comes with a sentence naming the field or rule, readable through hcasim_last_error(). */
#ifndef SIM_ERROR_H
#define SIM_ERROR_H

#include <stdarg.h>

/* Record the message and return err (a negative errno), for `return sim_error(-EINVAL, ...)`. */
int sim_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sim_verror(int err, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The same, never printed (HCASIM_VERBOSE printed the error when it was raised): to restore
 * a message, or to put its cause in front. fmt's arguments may include sim_last_error(). */
int sim_error_quiet(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "PREFIX: <the last message>" (the setting or variable that caused it); returns err. */
int sim_error_prefix(int err, const char *prefix);
const char *sim_last_error(void);
void sim_clear_error(void);

#endif
