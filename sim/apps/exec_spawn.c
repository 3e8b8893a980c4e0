/* libhcasim-exec.so: programs started by the program (docs/fabric.md#hcasim-exec). The TSC
 * trap (PR_SET_TSC) survives execve, and the dynamic loader reads the TSC before any handler
 * exists, so a new image would die of its first instruction's fault. Every way of executing a
 * program therefore runs with the calling thread's TSC untrapped (a child created meanwhile
 * inherits that) and traps it again when the call returns. The new image loads this library
 * again through the inherited LD_PRELOAD and traps its own TSC. */
#include "sim/apps/exec_preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		fprintf(stderr, "libhcasim-exec: the C library's %s is not found\n", name);
		abort();
	}
	return f;
}

static void untrap(void)
{
	prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
}

static int retrap(int rc)
{
	int e = errno;

	prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
	errno = e;
	return rc;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

int execve(const char *path, char *const argv[], char *const envp[])
{
	untrap();
	return retrap(((execve_fn)next("execve"))(path, argv, envp));
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	untrap();
	return retrap(((execve_fn)next("execvpe"))(file, argv, envp));
}

int execv(const char *path, char *const argv[])
{
	untrap();
	return retrap(((execv_fn)next("execv"))(path, argv));
}

int execvp(const char *file, char *const argv[])
{
	untrap();
	return retrap(((execv_fn)next("execvp"))(file, argv));
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
	untrap();
	return retrap(((fexecve_fn)next("fexecve"))(fd, argv, envp));
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	untrap();
	return retrap(((spawn_fn)next("posix_spawn"))(pid, path, fa, attr, argv, envp));
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	untrap();
	return retrap(((spawn_fn)next("posix_spawnp"))(pid, file, fa, attr, argv, envp));
}

int system(const char *cmd)
{
	untrap();
	return retrap(((int (*)(const char *))next("system"))(cmd));
}

FILE *popen(const char *cmd, const char *mode)
{
	FILE *f;

	untrap();
	f = ((FILE * (*)(const char *, const char *)) next("popen"))(cmd, mode);
	retrap(0);
	return f;
}

/* execl, execlp, execle: the argument list as an array (and, for execle, the environment
 * after its NULL), then the array form. */
static int exec_list(int kind, const char *path, const char *arg, va_list ap)
{
	va_list count;
	size_t n = arg ? 1 : 0; /* arguments, arg included */

	va_copy(count, ap);
	while (n && va_arg(count, char *))
		n++;
	va_end(count);
	{
		char *argv[n + 1];

		argv[0] = (char *)arg;
		for (size_t i = 1; i <= n; i++) /* the rest and the NULL */
			argv[i] = va_arg(ap, char *);
		if (kind == 2)
			return execve(path, argv, va_arg(ap, char **));
		return kind ? execvp(path, argv) : execv(path, argv);
	}
}

int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = exec_list(0, path, arg, ap);
	va_end(ap);
	return rc;
}

int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = exec_list(1, file, arg, ap);
	va_end(ap);
	return rc;
}

int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = exec_list(2, path, arg, ap);
	va_end(ap);
	return rc;
}
