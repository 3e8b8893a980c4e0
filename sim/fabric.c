/* The fabric's directory and the environment that names it (docs/fabric.md#starting-a-fabric). */
#include "sim/fabric.h"
#include "sim/hcasim.h"
#include "sim/env.h"
#include "sim/error.h"
#include "sim/link.h"
#include "sim/shmchan.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* HCASIM_HOST: N or N,M,...; each a host of the system, once. */
static int parse_hosts(const char *v, unsigned nhosts, uint32_t *mask)
{
	const char *s = v;

	*mask = 0;
	for (;;) {
		char *end;
		unsigned long h = strtoul(s, &end, 10);

		if (end == s || (*end && *end != ',') || *s == '-' || *s == '+' || *s == ' ')
			return sim_error(-EINVAL, "HCASIM_HOST '%s': '%.*s' is not a host number "
					 "(a number, or a list such as 0,1)", v,
					 (int)strcspn(s, ","), s);
		if (h >= nhosts)
			return sim_error(-EINVAL, "HCASIM_HOST '%s': host %lu is not in the system "
					 "(sim.hosts %u: hosts 0..%u)", v, h, nhosts, nhosts - 1);
		if (*mask & (1u << h))
			return sim_error(-EINVAL, "HCASIM_HOST '%s': host %lu is listed twice", v, h);
		*mask |= 1u << h;
		if (!*end)
			return 0;
		s = end + 1;
	}
}

int sim_fabric_from_env(struct sim_fabric *f, unsigned nhosts)
{
	const char *dir = sim_env("HCASIM_FABRIC"), *hosts = sim_env("HCASIM_HOST");
	uint32_t mask;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!dir && !hosts)
		return 0;
	if (!dir)
		return sim_error(-EINVAL, "HCASIM_HOST is set but HCASIM_FABRIC is not: a process "
				 "holds some of the hosts only in a fabric (HCASIM_FABRIC=DIR)");
	if (!hosts)
		return sim_error(-EINVAL, "HCASIM_FABRIC is set but HCASIM_HOST is not: it names "
				 "the host(s) this process holds (N, or a list such as 0,1)");
	if ((rc = sim_env_path_len("HCASIM_FABRIC", dir, sizeof(f->dir) - 64)))
		return rc;
	if ((rc = parse_hosts(hosts, nhosts, &mask)))
		return rc;
	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	f->hosts = mask;
	return 0;
}

bool sim_fabric_holds(const struct sim_fabric *f, unsigned h)
{
	return !f->dir[0] || (h < 32 && (f->hosts & (1u << h)));
}

/* The keys that shape the fabric: every process must agree on them. */
static bool shaping(const char *key)
{
	return !strcmp(key, "sim.hosts") || !strcmp(key, "sim.seed") ||
	       !strcmp(key, "sim.topology") || !strncmp(key, "switch.", 7) ||
	       !strcmp(key, "hca.ports") || !strcmp(key, "hca.link_layer") ||
	       (!strncmp(key, "link.", 5) && strcmp(key, "link.pcap")) ||
	       !strncmp(key, "fault.", 6) || !strcmp(key, "fabric.start");
}

static bool gone(uint32_t pid)
{
	return !pid || (kill((pid_t)pid, 0) && errno == ESRCH);
}

#define INI_MARK "; the fabric's configuration, written by the process that created it\n"

/* The directory's lock (DIR/.lock, flock): joins, claims, leaving and stale channels are
 * decided under it. The fd, or -errno. */
static int fabric_lock(const char *dir)
{
	char lock[4200];
	int fd;

	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 || flock(fd, LOCK_EX)) {
		int rc = sim_error(-errno, "HCASIM_FABRIC: cannot lock %s: %s", lock,
				   strerror(errno));

		if (fd >= 0)
			close(fd);
		return rc;
	}
	return fd;
}

/* The pid in DIR/host<h> (0: no claim, or unreadable). */
static uint32_t claim_pid(const char *dir, unsigned h)
{
	char path[4200], buf[32] = "";
	int fd;

	snprintf(path, sizeof(path), "%s/host%u", dir, h);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	return (uint32_t)strtoul(buf, NULL, 10);
}

/* Whether any host of the fabric is claimed by a live process (clean: the claims of processes
 * that are gone are removed on the way, with a word). */
static bool live_claims(const char *dir, unsigned nhosts, bool clean)
{
	bool live = false;

	for (unsigned h = 0; h < nhosts && h < 32; h++) {
		char path[4200];
		uint32_t pid = claim_pid(dir, h);

		snprintf(path, sizeof(path), "%s/host%u", dir, h);
		if (pid && !gone(pid)) {
			live = true;
		} else if (clean && access(path, F_OK) == 0) {
			fprintf(stderr, "hcasim: fabric: %s was claimed by pid %u, which is gone: "
				"replaced\n", path, pid);
			unlink(path);
		}
	}
	return live;
}

/* Claim the hosts this process holds: DIR/host<N> with our pid. A host a live process holds
 * is refused, naming it. */
static int claim_hosts(const struct sim_fabric *f, unsigned nhosts)
{
	for (unsigned h = 0; h < nhosts && h < 32; h++) {
		char path[4200], pid[32];
		uint32_t holder = claim_pid(f->dir, h);
		int fd;

		if (!(f->hosts & (1u << h)))
			continue;
		snprintf(path, sizeof(path), "%s/host%u", f->dir, h);
		if (holder && !gone(holder))
			return sim_error(-EBUSY, "HCASIM_HOST: host %u is held by pid %u (%s)", h,
					 holder, path);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (fd < 0 || write(fd, pid, strlen(pid)) != (ssize_t)strlen(pid)) {
			int rc = sim_error(-errno, "HCASIM_FABRIC: cannot write %s: %s", path,
					   strerror(errno));

			if (fd >= 0)
				close(fd);
			return rc;
		}
		close(fd);
	}
	return 0;
}

/* Remove the claims this process made. */
static void drop_claims(const struct sim_fabric *f, unsigned nhosts)
{
	char path[4200];

	for (unsigned h = 0; h < nhosts && h < 32; h++)
		if ((f->hosts & (1u << h)) && claim_pid(f->dir, h) == (uint32_t)getpid()) {
			snprintf(path, sizeof(path), "%s/host%u", f->dir, h);
			unlink(path);
		}
}

/* Whether the fabric.ini at path was written by a process (not put there by the user). */
static bool ini_written(const char *path)
{
	char line[128] = "";
	FILE *fp = fopen(path, "r");

	if (!fp)
		return false;
	if (!fgets(line, sizeof(line), fp))
		line[0] = 0;
	fclose(fp);
	return !strcmp(line, INI_MARK);
}

/* Write the shaping keys of c as an INI file at path (a new file). */
static int write_ini(const char *path, const struct sim_config *c, bool mark)
{
	FILE *fp = fopen(path, "wx");
	char sect[64] = "", val[256];
	const char *key;

	if (!fp)
		return sim_error(-errno, "HCASIM_FABRIC: cannot create %s: %s", path,
				 strerror(errno));
	fputs(mark ? INI_MARK : "; the fabric's configuration, written by hcasim-fabric\n", fp);
	for (size_t i = 0; (key = sim_config_key_at(i)); i++) {
		const char *dot = strchr(key, '.');

		if (!shaping(key) || !dot)
			continue;
		if (strncmp(sect, key, (size_t)(dot - key)) || sect[dot - key]) {
			snprintf(sect, sizeof(sect), "%.*s", (int)(dot - key), key);
			fprintf(fp, "[%s]\n", sect);
		}
		sim_config_get(c, key, val, sizeof(val));
		fprintf(fp, "%s = %s\n", dot + 1, val);
	}
	if (fclose(fp))
		return sim_error(-EIO, "HCASIM_FABRIC: cannot write %s", path);
	return 0;
}

/* c against the fabric.ini at path: the first shaping key that differs. */
static int compare_ini(const char *path, const struct sim_config *c)
{
	struct sim_config there;
	char a[256], b[256];
	const char *key;
	int rc;

	sim_config_defaults(&there);
	if ((rc = sim_config_load(&there, path)))
		return sim_error_prefix(rc, "HCASIM_FABRIC");
	for (size_t i = 0; (key = sim_config_key_at(i)); i++) {
		if (!shaping(key))
			continue;
		sim_config_get(c, key, a, sizeof(a));
		sim_config_get(&there, key, b, sizeof(b));
		if (strcmp(a, b))
			return sim_error(-EINVAL, "HCASIM_FABRIC: config key '%s' is %s here but %s "
					 "in %s: every process of a fabric must agree on it", key,
					 a, b, path);
	}
	return 0;
}

/* Under the lock: a fabric.ini that processes wrote, in a directory no live process claims a
 * host of, is a crashed run's (or a finished one's that could not clean up): replaced. */
static int ini_under_lock(const struct sim_fabric *f, const struct sim_config *c)
{
	char path[4200], tmp[4300];
	int rc;

	snprintf(path, sizeof(path), "%s/fabric.ini", f->dir);
	if (!live_claims(f->dir, (unsigned)c->hosts, true) && ini_written(path)) {
		fprintf(stderr, "hcasim: fabric: %s is left from a run whose processes are gone: "
			"replaced\n", path);
		unlink(path);
	}
	if (access(path, F_OK) == 0)
		return compare_ini(path, c);
	/* Written under a temporary name and linked: a process arriving meanwhile sees all of
	 * it or none, and of two creators one wins and the other compares. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	if ((rc = write_ini(tmp, c, true)))
		return rc;
	rc = link(tmp, path) ? -errno : 0;
	unlink(tmp);
	if (rc == -EEXIST)
		return compare_ini(path, c);
	return rc ? sim_error(rc, "HCASIM_FABRIC: cannot create %s: %s", path, strerror(-rc)) : 0;
}

int hcasim_fabric_check(void)
{
	const char *cfg = sim_env("HCASIM_CONFIG");
	struct sim_config c;
	struct sim_fabric f;
	char ini[4200];
	int rc;

	sim_config_defaults(&c);
	if (cfg && (rc = sim_config_load(&c, cfg)))
		return sim_error_prefix(rc, "HCASIM_CONFIG");
	if ((rc = sim_fabric_from_env(&f, (unsigned)c.hosts)) || !f.dir[0])
		return rc;
	snprintf(ini, sizeof(ini), "%s/fabric.ini", f.dir);
	/* one a crashed run left is replaced at boot, not compared */
	if (access(ini, F_OK) || (ini_written(ini) && !live_claims(f.dir, (unsigned)c.hosts, false)))
		return 0;
	return compare_ini(ini, &c);
}

int sim_fabric_ini(const struct sim_fabric *f, const struct sim_config *c)
{
	int rc, lfd;

	for (int tries = 0;; tries++) {
		struct stat a, b;
		char lock[4200];

		if (mkdir(f->dir, 0700) && errno != EEXIST)
			return sim_error(-errno, "HCASIM_FABRIC '%s': cannot create the directory: "
					 "%s", f->dir, strerror(errno));
		if ((lfd = fabric_lock(f->dir)) < 0)
			return lfd;
		/* A process leaving removes the lock file with the directory: a lock taken on a
		 * file that is gone by now locks nothing. */
		snprintf(lock, sizeof(lock), "%s/.lock", f->dir);
		if ((!fstat(lfd, &a) && !stat(lock, &b) && a.st_ino == b.st_ino) || tries > 100)
			break;
		close(lfd);
	}
	rc = ini_under_lock(f, c);
	if (!rc && (rc = claim_hosts(f, (unsigned)c->hosts)))
		drop_claims(f, (unsigned)c->hosts);
	close(lfd);
	return rc;
}

void sim_fabric_leave(const struct sim_fabric *f, unsigned nhosts)
{
	char path[4200];
	int lfd;

	if (!f->dir[0] || (lfd = fabric_lock(f->dir)) < 0)
		return;
	drop_claims(f, nhosts);
	snprintf(path, sizeof(path), "%s/fabric.ini", f->dir);
	if (!live_claims(f->dir, nhosts, true) && ini_written(path)) {
		/* The last one out: the directory goes, if nothing but the fabric's files is
		 * left in it (a user's file keeps it). */
		unlink(path);
		snprintf(path, sizeof(path), "%s/.lock", f->dir);
		unlink(path);
		rmdir(f->dir);
	}
	close(lfd);
}

/* A channel file whose two sides are unclaimed or claimed by processes that no longer exist
 * was left by a run that crashed: its rings hold that run's messages. Removed, with a word. */
static void replace_stale(const char *path)
{
	uint32_t pid[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (pread(fd, pid, sizeof(pid), 72) == (ssize_t)sizeof(pid) && gone(pid[0]) &&
	    gone(pid[1])) {
		fprintf(stderr, "hcasim: fabric: %s was left by processes that are gone (pids %u "
			"and %u): replaced\n", path, pid[0], pid[1]);
		unlink(path);
	}
	close(fd);
}

/* A channel the other side's process creates: wait (under no lock) for its file, bounded. */
static int await_creator(const char *path, const char *dir, uint64_t timeout_ms)
{
	struct timespec ms = { 0, 1000000 };

	for (uint64_t i = 0; access(path, F_OK); i++) {
		if (i >= timeout_ms)
			return sim_error(-ETIMEDOUT, "HCASIM_FABRIC: %s did not come in %" PRIu64
					 " ms (fabric.join_timeout_ms): its creator, the process "
					 "holding the switch (host 0's), has not joined %s", path,
					 timeout_ms, dir);
		nanosleep(&ms, NULL);
	}
	return 0;
}

int sim_fabric_link(const struct sim_fabric *f, struct sim_link *l, const char *name,
		    int side, bool follow, uint64_t latency_ps, uint64_t timeout_ms)
{
	struct sim_chan_params cp;
	struct sim_chan *c;
	char path[4200];
	int rc, lfd;

	if (!latency_ps)
		return sim_error(-EINVAL, "config key 'link.latency_ns': 0 in a fabric (the link "
				 "latency is the lookahead between processes: at least 1 ns)");
	snprintf(path, sizeof(path), "%s/%s.chan", f->dir, name);
	sim_chan_default_params(&cp, latency_ps);
	for (;;) {
		if (follow && (rc = await_creator(path, f->dir, timeout_ms)))
			return rc;
		/* Under the directory's lock: two processes never both find a file stale and
		 * replace each other's. */
		if ((lfd = fabric_lock(f->dir)) < 0)
			return lfd;
		replace_stale(path);
		rc = follow && access(path, F_OK) ? 1 /* it was stale: wait for a new one */
		     : follow ? sim_chan_attach(&c, path, side, &cp)
			      : sim_chan_join(&c, path, side, &cp);
		close(lfd); /* unlocks */
		if (rc <= 0)
			break;
	}
	if (rc)
		return rc;
	if ((rc = sim_link_remote(l, side, c, timeout_ms)))
		sim_chan_close(c);
	return rc;
}

int sim_fabric_create(const char *dir, const struct sim_config *c)
{
	char path[4200];
	int rc;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return sim_error(-errno, "hcasim-fabric '%s': cannot create the directory: %s", dir,
				 strerror(errno));
	snprintf(path, sizeof(path), "%s/fabric.ini", dir);
	if (access(path, F_OK) == 0)
		return compare_ini(path, c) ? -EINVAL : 1;
	/* Without the processes' mark: the fabric's own, kept when its last process leaves. */
	rc = write_ini(path, c, false);
	return rc ? rc : 0;
}
