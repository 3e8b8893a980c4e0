/* Bounded, line-numbered reading of the text files users give the simulator (sim/textfile.h). */
#include "sim/textfile.h"
#include "sim/error.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sim_textfile_read(struct sim_textfile *f, const char *path, const char *what)
{
	struct stat st;
	ssize_t n;
	int fd, err = 0;
	char who[320]; /* "config file 'PATH'", or "PATH" */
	const char *nul;

	memset(f, 0, sizeof(*f));
	if (!path || !*path)
		return sim_error(-EINVAL, "%s: no path given", what ? what : "file");
	if (what)
		snprintf(who, sizeof(who), "%s '%s'", what, path);
	else
		snprintf(who, sizeof(who), "%s", path);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return sim_error(-errno, "%s: cannot open: %s", who, strerror(errno));
	if (fstat(fd, &st)) {
		err = sim_error(-errno, "%s: cannot stat: %s", who, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		err = sim_error(-EINVAL, "%s: not a regular file", who);
	} else if ((uint64_t)st.st_size > SIM_TEXTFILE_MAX_BYTES) {
		err = sim_error(-EFBIG, "%s: %lld bytes, more than the %u a file may hold", who,
				(long long)st.st_size, SIM_TEXTFILE_MAX_BYTES);
	} else if (!(f->buf = malloc((size_t)st.st_size + 1))) {
		err = sim_error(-ENOMEM, "%s: out of memory", who);
	}
	/* Read what is there now, at most the size seen (a file that grows is cut there). */
	while (!err && f->len < (size_t)st.st_size) {
		n = read(fd, f->buf + f->len, (size_t)st.st_size - f->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = sim_error(-errno, "%s: cannot read: %s", who, strerror(errno));
		if (n <= 0)
			break;
		f->len += (size_t)n;
	}
	close(fd);
	nul = err ? NULL : memchr(f->buf, 0, f->len);
	if (nul) {
		unsigned line = 1;

		for (const char *p = f->buf; p < nul; p++)
			line += *p == '\n';
		err = sim_error(-EINVAL, "%s:%u: a NUL byte (not a text file)", who, line);
	}
	if (err) {
		sim_textfile_free(f);
		return err;
	}
	f->buf[f->len] = 0;
	return 0;
}

void sim_textfile_free(struct sim_textfile *f)
{
	free(f->buf);
	memset(f, 0, sizeof(*f));
}

char *sim_textfile_gets(char *str, int num, void *stream)
{
	struct sim_textfile *f = stream;
	const char *p, *nl;
	size_t n, room;

	if (f->pos >= f->len || num < 2)
		return NULL;
	p = f->buf + f->pos;
	nl = memchr(p, '\n', f->len - f->pos);
	n = nl ? (size_t)(nl - p) + 1 : f->len - f->pos;
	room = (size_t)num - 1;
	f->line++;
	if (n > room) {
		if (!f->toolong) {
			f->toolong = f->line;
			f->maxline = room;
		}
		memcpy(str, p, room);
		str[room] = 0;
	} else {
		memcpy(str, p, n);
		str[n] = 0;
	}
	f->pos += n;
	return str;
}
