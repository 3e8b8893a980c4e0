/* Checked reading of environment variables (sim/env.h). */
#include "sim/env.h"
#include "sim/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sim_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int sim_env_path_len(const char *what, const char *path, size_t max)
{
	size_t n = strlen(path);

	if (n <= max)
		return 0;
	return sim_error(-ENAMETOOLONG, "%s: a path of %zu bytes ('%.40s...'), longer than the %zu "
			 "a path may have", what, n, path, max);
}

int sim_env_dir_writable(const char *what, const char *dir)
{
	char buf[SIM_ENV_PATH_MAX + 1];
	struct stat st;
	int rc = sim_env_path_len(what, dir, SIM_ENV_PATH_MAX);

	if (rc)
		return rc;
	strcpy(buf, dir);
	/* Walk up to the first part that exists: that one must be a writable directory. */
	while (stat(buf, &st)) {
		char *slash = strrchr(buf, '/');

		if (errno != ENOENT)
			return sim_error(-errno, "%s: '%s': %s", what, buf, strerror(errno));
		if (!slash)
			strcpy(buf, "."); /* a relative path: its first part goes in . */
		else if (slash == buf)
			buf[1] = 0; /* "/" */
		else
			*slash = 0;
	}
	if (!S_ISDIR(st.st_mode))
		return sim_error(-ENOTDIR, "%s: '%s' is not a directory", what, buf);
	if (access(buf, W_OK | X_OK))
		return sim_error(-errno, "%s: directory '%s' is not writable: %s", what, buf,
				 strerror(errno));
	return 0;
}
