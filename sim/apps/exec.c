/* hcasim-exec: run an unmodified program as the host(s) of a fabric, repeatably
 * (docs/fabric.md#hcasim-exec).
 *
 *   hcasim-exec --fabric DIR --host N [--] CMD ARGS...
 *
 * Sets HCASIM_FABRIC=DIR (made absolute) and HCASIM_HOST=N (a host or a list, as the library
 * takes it), puts hcasim's library directory first on LD_LIBRARY_PATH (its libibverbs.so.1
 * replaces the system's), appends libhcasim-exec.so to LD_PRELOAD (the clocks, the TSC,
 * getpid and /proc/cpuinfo served from the simulated host), turns address-space randomisation
 * off (personality ADDR_NO_RANDOMIZE: RDMA headers carry virtual addresses) and executes CMD.
 * Before that it checks what the library would refuse at boot (hcasim_fabric_check).
 *
 * Exit status: CMD's; 2 for bad arguments or a fabric or host the library refuses; 126 when CMD
 * cannot be executed; 127 when it is not found. */
#include "sim/hcasim.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

static const char usage[] = "usage: hcasim-exec --fabric DIR --host N [--] CMD [ARG...]\n";

static int fail(int status, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "hcasim-exec: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return status;
}

/* --fabric DIR, --fabric=DIR, --host N, --host=N, then [--] CMD: the index of CMD in argv,
 * or -1 after saying what is wrong. */
static int parse(int argc, char **argv, const char **fabric, const char **host)
{
	int i;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		const char **to = NULL, *arg = argv[i], *eq = strchr(arg, '=');
		size_t n = eq ? (size_t)(eq - arg) : strlen(arg);

		if (n == 2 && !eq)
			return i + 1 < argc ? i + 1 : (fail(2, "no program to run after '--'%s%s",
							   "", ""), -1);
		if (n == 8 && !strncmp(arg, "--fabric", n))
			to = fabric;
		else if (n == 6 && !strncmp(arg, "--host", n))
			to = host;
		if (!to)
			return fail(2, "unknown option '%s'%s", arg, ""), -1;
		if (!eq && i + 1 == argc)
			return fail(2, "option '%s' needs a value%s", arg, ""), -1;
		*to = eq ? eq + 1 : argv[++i];
		if (!**to)
			return fail(2, "option '%s' is empty%s", arg, ""), -1;
	}
	if (!*fabric || !*host)
		return fail(2, "--%s is missing%s", *fabric ? "host N" : "fabric DIR",
			    ": a fabric directory and the host(s) the program holds are needed"),
		       -1;
	if (i == argc)
		return fail(2, "no program to run%s%s", "", ""), -1;
	return i;
}

/* CMD as execv takes it: a path, or the first executable file of that name on PATH. */
static int find_program(const char *cmd, char *path, size_t len)
{
	const char *dirs = getenv("PATH");

	if (strchr(cmd, '/')) {
		snprintf(path, len, "%s", cmd);
		if (access(path, F_OK))
			return fail(127, "program '%s' not found: %s", cmd, strerror(errno));
		return access(path, X_OK) ? fail(126, "program '%s' is not executable%s", cmd, "")
					  : 0;
	}
	/* Each PATH entry in turn, an empty one being the current directory. */
	for (const char *d = dirs ? dirs : "/usr/bin:/bin";; d++) {
		size_t n = strcspn(d, ":");

		snprintf(path, len, "%.*s/%s", n ? (int)n : 1, n ? d : ".", cmd);
		if (!access(path, X_OK))
			return 0;
		d += n;
		if (!*d)
			break;
	}
	return fail(127, "program '%s' not found in PATH%s", cmd, "");
}

/* The library directory beside this binary's: <bin>/../lib, with the preload library. */
static int find_libs(char *lib, size_t len, char *preload, size_t plen)
{
	char exe[PATH_MAX], dir[PATH_MAX + 8];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return fail(2, "cannot read /proc/self/exe: %s%s", strerror(errno), "");
	exe[n] = 0;
	slash = strrchr(exe, '/');
	*slash = 0;
	snprintf(dir, sizeof(dir), "%s/../lib", exe);
	if (!realpath(dir, lib) || strlen(lib) >= len)
		return fail(2, "cannot find hcasim's library directory %s (make builds it)%s", dir,
			    "");
	snprintf(preload, plen, "%s/libhcasim-exec.so", lib);
	if (access(preload, R_OK))
		return fail(2, "cannot find %s (make builds it): %s", preload, strerror(errno));
	return 0;
}

/* VAR=first:old (or old:last when last), old being the variable's present value. */
static void add_path(const char *var, const char *first, const char *last)
{
	const char *old = getenv(var);
	size_t n = strlen(first ? first : last) + (old ? strlen(old) : 0) + 2;
	char *v = malloc(n);

	if (!v) {
		perror("hcasim-exec");
		exit(2);
	}
	if (first)
		snprintf(v, n, "%s%s%s", first, old && *old ? ":" : "", old ? old : "");
	else
		snprintf(v, n, "%s%s%s", old ? old : "", old && *old ? ":" : "", last);
	setenv(var, v, 1);
	free(v);
}

/* HCASIM_FABRIC and HCASIM_HOST, checked as the library will check them at boot. */
static int set_fabric(const char *fabric, const char *host)
{
	char abs[PATH_MAX * 2], cwd[PATH_MAX];

	if (fabric[0] != '/' && getcwd(cwd, sizeof(cwd)))
		snprintf(abs, sizeof(abs), "%s/%s", cwd, fabric);
	else
		snprintf(abs, sizeof(abs), "%s", fabric);
	setenv("HCASIM_FABRIC", abs, 1);
	setenv("HCASIM_HOST", host, 1);
	if (!hcasim_fabric_check())
		return 0;
	fprintf(stderr, "hcasim-exec: --fabric %s --host %s refused: %s\n", fabric, host,
		hcasim_last_error());
	return 2;
}

int main(int argc, char **argv)
{
	const char *fabric = NULL, *host = NULL;
	char lib[PATH_MAX], preload[PATH_MAX + 32], path[PATH_MAX];
	int cmd = parse(argc, argv, &fabric, &host), rc;

	if (cmd < 0)
		return fputs(usage, stderr), 2;
	if ((rc = find_libs(lib, sizeof(lib), preload, sizeof(preload))) ||
	    (rc = set_fabric(fabric, host)) || (rc = find_program(argv[cmd], path, sizeof(path))))
		return rc;
	add_path("LD_LIBRARY_PATH", lib, NULL);
	add_path("LD_PRELOAD", NULL, preload);
	if (personality((unsigned long)personality(0xffffffff) | ADDR_NO_RANDOMIZE) < 0)
		return fail(2, "cannot turn address-space randomisation off (personality): %s%s",
			    strerror(errno), "");
	execv(path, argv + cmd);
	return fail(126, "cannot execute '%s': %s", path, strerror(errno));
}
