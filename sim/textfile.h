/* Text files the simulator takes from users (configuration, scenarios): a regular file of
 * bounded size without NUL bytes, read whole, then handed out line by line with line numbers,
 * so that every error can say FILE:LINE. Nothing from such a file may hang or crash the
 * simulator: /dev/zero, a FIFO, a directory or a huge file is refused up front. */
#ifndef SIM_TEXTFILE_H
#define SIM_TEXTFILE_H

#include <stdbool.h>
#include <stddef.h>

#define SIM_TEXTFILE_MAX_BYTES (1u << 20) /* the largest file accepted */

struct sim_textfile {
	char *buf;        /* the whole file, NUL-terminated (malloc'd) */
	size_t len;       /* its bytes */
	size_t pos;       /* where the next line starts */
	unsigned line;    /* lines handed out so far (the number of the last one) */
	unsigned toolong; /* the first line longer than a reader's buffer, 0 if none */
	size_t maxline;   /* the longest line that reader's buffer took (newline included) */
};

/* Read path whole into f: 0, or -errno with sim_error() naming the path and the rule (cannot
 * be opened, not a regular file, larger than SIM_TEXTFILE_MAX_BYTES, holds a NUL byte). what
 * names the kind of file in messages ("config file 'PATH': ..."); NULL for "PATH: ...". */
int sim_textfile_read(struct sim_textfile *f, const char *path, const char *what);
void sim_textfile_free(struct sim_textfile *f);
/* The next line into str (at most num - 1 bytes, with its newline), as fgets() would; NULL at
 * the end. A line that does not fit is cut there, counted once in f->toolong, and its rest
 * skipped. Usable as libinih's ini_reader. */
char *sim_textfile_gets(char *str, int num, void *f);

#endif
