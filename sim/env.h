/* The environment variables the simulator reads (docs/config.md, "Environment variables"):
 * each is read through these, so that a bad value refuses the boot (or is ignored with a
 * warning) with a message naming the variable and the bad part. */
#ifndef SIM_ENV_H
#define SIM_ENV_H

#include <stddef.h>

#define SIM_ENV_PATH_MAX 4095 /* the longest path a variable may give (PATH_MAX - 1) */

/* name's value, or NULL when it is unset or empty (both mean "not given"). */
const char *sim_env(const char *name);
/* 0 if path, given by what (a variable, or a configuration key), is at most max bytes; else
 * -ENAMETOOLONG naming what and the start of the path. */
int sim_env_path_len(const char *what, const char *path, size_t max);
/* 0 if files can be written under dir later (at shutdown, or when a dump starts): dir is a
 * writable directory, or does not exist yet and its nearest existing parent is one. Else
 * -errno naming what and the part of the path at fault. Creates nothing. */
int sim_env_dir_writable(const char *what, const char *dir);

#endif
