/* hcasim-docrun: the quoted runs of the docs. A marked region of a Markdown file holds the
 * output of a run; this tool runs it again and writes the output into the region (make docs),
 * or compares (-c, the test docs.quoted_runs_match_the_program).
 *
 *   hcasim-docrun [-c] [-C SRCDIR] [-r RECIPES] [FILE.md...]
 *
 * Markers (docs/writing-docs.md):
 *   <!-- run: NAME ARG... -->        a line of its own: a block region, up to a line
 *   ...                               <!-- end -->; its content is the run's output in a
 *   <!-- end -->                      ``` fence
 *   <!-- run-md: NAME ARG... -->     the same, the output being Markdown (a table): no fence
 *   text <!-- run: NAME ARG... -->0.87<!-- end --> text    an inline region: one line of output
 * NAME ARG... is a recipe of RECIPES (default SRCDIR/sim/apps/docruns.sh), run as
 * `sh RECIPES NAME ARG...` in a scratch directory shared by every region of one invocation,
 * with HCASIM_DOC_SRC, HCASIM_DOC_BUILD (this binary's build directory) and HCASIM_DOC_WORK
 * (the scratch directory) in its environment, and with -c HCASIM_DOC_CHECK=1 (a recipe whose
 * run is checked elsewhere may then skip). Words are letters, digits and _ . , : / = + - #
 * @ % * (passed as they are: no shell sees them); the same NAME ARG... is run once per
 * invocation. Without FILE arguments: README.md,
 * docs/NAME.md and docs/DIR/NAME.md of SRCDIR.
 *
 * Exit status: 0 all regions as their runs print them (-c) or written; 1 (-c) a region
 * differs, each named FILE:LINE with its recipe and first differing line; 2 a malformed marker
 * or a recipe that failed or printed nothing. */
#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define START "<!-- run: "
#define START_MD "<!-- run-md: "
#define START_END " -->"
#define END "<!-- end -->"
#define MAX_WORDS 16

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			perror("hcasim-docrun");
			exit(2);
		}
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* One run, by its recipe line (NAME ARG...): output kept for the regions that repeat it. */
struct run {
	char *cmd;
	char *out; /* NULL: it failed */
	struct run *next;
};

static struct run *runs;
static char skipped[] = ""; /* the output of a run its recipe cannot make here (exit 77) */
static int nskipped;
static char recipes[PATH_MAX], work[PATH_MAX], srcdir[PATH_MAX], builddir[PATH_MAX];
static int errors;

static void err(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	errors++;
}

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_.,:/=+-#@%*", c);
}

/* Run `sh RECIPES NAME ARG...` in the scratch directory; its stdout, or NULL after printing
 * why it failed (with its stderr). */
static char *execute(const char *cmd, const char *file, int line)
{
	char *words[MAX_WORDS + 3], copy[512], errpath[PATH_MAX + 16];
	int nw = 0, pipefd[2], status;
	struct buf out = { 0 };
	char chunk[4096];
	ssize_t n;
	pid_t pid;

	snprintf(copy, sizeof(copy), "%s", cmd);
	words[nw++] = "sh";
	words[nw++] = recipes;
	for (char *w = strtok(copy, " "); w; w = strtok(NULL, " ")) {
		if (nw == MAX_WORDS + 2) {
			err(file, line, "run '%s': more than %d words", cmd, MAX_WORDS);
			return NULL;
		}
		words[nw++] = w;
	}
	words[nw] = NULL;
	snprintf(errpath, sizeof(errpath), "%s/.stderr", work);
	if (pipe(pipefd)) {
		perror("pipe");
		exit(2);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		FILE *e = freopen(errpath, "w", stderr);

		if (!e || chdir(work))
			_exit(127);
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execv("/bin/sh", words);
		_exit(127);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], chunk, sizeof(chunk))) > 0)
		buf_add(&out, chunk, (size_t)n);
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		exit(2);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		/* Its stderr says why: a program this build lacks, a run checked elsewhere. */
		FILE *e = fopen(errpath, "r");

		if (!e || !fgets(chunk, sizeof(chunk), e))
			snprintf(chunk, sizeof(chunk), "this build cannot make it\n");
		if (e)
			fclose(e);
		fprintf(stderr, "%s:%d: run '%s' skipped: %s", file, line, cmd, chunk);
		free(out.p);
		return skipped;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) || !out.len) {
		FILE *e = fopen(errpath, "r");

		if (!WIFEXITED(status) || WEXITSTATUS(status))
			err(file, line, "run '%s' failed (%s %d); its stderr:", cmd,
			    WIFEXITED(status) ? "exit status" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		else
			err(file, line, "run '%s' printed nothing; its stderr:", cmd);
		while (e && fgets(chunk, sizeof(chunk), e))
			fprintf(stderr, "  %s", chunk);
		if (e)
			fclose(e);
		free(out.p);
		return NULL;
	}
	return out.p;
}

static const char *output_of(const char *cmd, const char *file, int line)
{
	struct run *r;

	for (r = runs; r; r = r->next)
		if (!strcmp(r->cmd, cmd))
			return r->out;
	r = calloc(1, sizeof(*r));
	r->cmd = strdup(cmd);
	r->out = execute(cmd, file, line);
	r->next = runs;
	runs = r;
	return r->out;
}

/* The first marker pat in s[0..n), or NULL. A marker quoted in `code` is not one. */
static const char *find_marker(const char *s, size_t n, const char *pat)
{
	for (const char *m = s; (m = memmem(m, n - (size_t)(m - s), pat, strlen(pat))); m++)
		if (m == s || m[-1] != '`')
			return m;
	return NULL;
}

static const char *find_start(const char *s, size_t n)
{
	return find_marker(s, n, START);
}

/* The recipe line of a start marker at s (after "<!-- run: "), into cmd; its length up to
 * and including " -->", or 0 if malformed. */
static size_t parse_start(const char *s, char *cmd, size_t cap, const char *file, int line)
{
	const char *e = strstr(s, START_END);
	size_t n;

	if (!e || (size_t)(e - s) >= cap || e == s) {
		err(file, line, "a run marker without its recipe or ' -->'");
		return 0;
	}
	n = (size_t)(e - s);
	memcpy(cmd, s, n);
	cmd[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (!word_char(cmd[i]) && !(cmd[i] == ' ' && i && cmd[i - 1] != ' ')) {
			err(file, line,
			    "run marker '%s': character '%c' (words are letters, digits "
			    "and _.,:/=+-#@%%*, one space apart)",
			    cmd, cmd[i]);
			return 0;
		}
	return n + strlen(START_END);
}

/* The first line where a and b differ (1-based within the region), into *la and *lb. */
static int first_diff(const char *a, const char *b, const char **la, const char **lb)
{
	int line = 1;

	*la = a;
	*lb = b;
	while (*a && *a == *b) {
		if (*a == '\n') {
			line++;
			*la = a + 1;
			*lb = b + 1;
		}
		a++;
		b++;
	}
	return line;
}

static void print_line(const char *what, const char *s)
{
	size_t n = strcspn(s, "\n");

	if (!*s)
		fprintf(stderr, "  %s (nothing)\n", what);
	else
		fprintf(stderr, "  %s %.*s\n", what, (int)n, s);
}

/* The state of processing one file: its lines are copied, regions rewritten, into out. */
struct doc {
	const char *path;
	int check, line, regions, differ;
	struct buf out;
};

/* Reads the file at full (named path in messages) into in: 0, or -1 after an error. */
static int read_doc(const char *full, const char *path, struct buf *in)
{
	FILE *f = fopen(full, "r");
	char chunk[4096];
	size_t n;

	if (!f) {
		err(path, 0, "%s", strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(in, chunk, n);
	fclose(f);
	if (!in->len)
		buf_add(in, "", 0);
	return 0;
}

/* The output of cmd's run, or NULL if it failed or its recipe skipped it (counted). */
static const char *region_output(const char *cmd, const char *file, int line)
{
	const char *o = output_of(cmd, file, line);

	if (o == skipped) {
		nskipped++;
		o = NULL;
	}
	return o;
}

/* The END line of the block region whose body starts at q (its marker on line start), its
 * length into *endlen; or where a marker inside the region is, or the end of the text. */
static const char *block_end(struct doc *d, const char *q, int start, size_t *endlen)
{
	while (*q) {
		const char *e2 = strchr(q, '\n');
		size_t l2 = e2 ? (size_t)(e2 - q + 1) : strlen(q);
		const char *t = q;

		d->line++;
		while (*t == ' ' || *t == '\t')
			t++;
		if (!strncmp(t, END, strlen(END))) {
			*endlen = l2;
			break;
		}
		if (find_start(q, l2) || find_marker(q, l2, START_MD)) {
			err(d->path, d->line, "a run marker inside the region of line %d", start);
			break;
		}
		q += l2;
	}
	return q;
}

/* A block region's body [body, q) against o, the output of run cmd: counted (and shown with
 * -c) if it differs; the output, fenced unless md, goes to d->out. */
static void fill_block(struct doc *d, const char *body, const char *q, const char *o, int md,
		       const char *cmd, int start)
{
	struct buf want = { 0 };
	char *have = strndup(body, (size_t)(q - body));

	if (!md)
		buf_str(&want, "```\n");
	buf_str(&want, o);
	if (o[strlen(o) - 1] != '\n')
		buf_str(&want, "\n");
	if (!md)
		buf_str(&want, "```\n");
	if (strcmp(have, want.p)) {
		const char *la, *lb;
		int dl = first_diff(have, want.p, &la, &lb);

		d->differ++;
		if (d->check) {
			fprintf(stderr,
				"%s:%d: region '%s' differs from its run "
				"(make docs rewrites it), at line %d:\n",
				d->path, start + dl, cmd, start + dl);
			print_line("doc:", la);
			print_line("run:", lb);
		}
	}
	buf_str(&d->out, want.p);
	free(want.p);
	free(have);
}

/* A block region: the marker line p[0..ll) (its marker at m, run-md if md), up to the END
 * line. Returns where the line after it starts, or NULL if the region has no END. */
static const char *block_region(struct doc *d, const char *p, size_t ll, const char *m, int md)
{
	char cmd[512];
	int start = d->line;
	size_t k =
	    parse_start(m + strlen(md ? START_MD : START), cmd, sizeof(cmd), d->path, d->line);
	const char *q, *body = p + ll, *o;
	size_t endlen = 0;

	buf_add(&d->out, p, ll);
	q = block_end(d, body, start, &endlen);
	if (!*q) {
		err(d->path, start, "run marker without its '%s'", END);
		return NULL;
	}
	o = k ? region_output(cmd, d->path, start) : NULL;
	if (o)
		fill_block(d, body, q, o, md, cmd, start);
	else
		buf_add(&d->out, body, (size_t)(q - body));
	buf_add(&d->out, q, endlen);
	return q + endlen;
}

/* An inline region's text have[0..hl) against o, the output of run cmd: one line, counted
 * (and shown with -c) if it differs; the output goes to d->out. */
static void fill_inline(struct doc *d, const char *have, size_t hl, const char *o, const char *cmd)
{
	size_t ol = strlen(o);

	if (o[ol - 1] == '\n')
		ol--;
	if (memchr(o, '\n', ol)) {
		err(d->path, d->line, "run '%s' printed more than one line for an inline region",
		    cmd);
		buf_add(&d->out, have, hl);
		return;
	}
	if (hl != ol || memcmp(have, o, ol)) {
		d->differ++;
		if (d->check)
			fprintf(stderr,
				"%s:%d: region '%s' differs from its run (make docs rewrites "
				"it):\n  doc: %.*s\n  run: %.*s\n",
				d->path, d->line, cmd, (int)hl, have, (int)ol, o);
	}
	buf_add(&d->out, o, ol);
}

/* Inline regions: every START ... END pair on the line p[0..ll). */
static void inline_regions(struct doc *d, const char *p, size_t ll)
{
	char cmd[512];

	for (const char *s = p; s < p + ll;) {
		const char *ms = find_start(s, (size_t)(p + ll - s));
		size_t k;
		const char *me, *o, *have;

		if (!ms) {
			buf_add(&d->out, s, (size_t)(p + ll - s));
			break;
		}
		k = parse_start(ms + strlen(START), cmd, sizeof(cmd), d->path, d->line);
		have = ms + strlen(START) + k;
		me = k ? memmem(have, (size_t)(p + ll - have), END, strlen(END)) : NULL;
		if (!me) {
			if (k)
				err(d->path, d->line,
				    "inline run marker without its '%s' on the same line", END);
			buf_add(&d->out, s, (size_t)(p + ll - s));
			break;
		}
		buf_add(&d->out, s, (size_t)(have - s));
		o = region_output(cmd, d->path, d->line);
		if (o)
			fill_inline(d, have, (size_t)(me - have), o, cmd);
		else
			buf_add(&d->out, have, (size_t)(me - have));
		buf_add(&d->out, END, strlen(END));
		s = me + strlen(END);
		if (find_start(s, (size_t)(p + ll - s)))
			d->regions++;
	}
}

/* The fence state after a line lead that starts with ```: a fence opens with 3 or more
 * backquotes and closes with as many. */
static int fence_after(const char *lead, int fence)
{
	int nb = (int)strspn(lead, "`");

	if (!fence)
		return nb;
	if (nb >= fence && strchr("\n", lead[strspn(lead, "` \t\r")]))
		return 0;
	return fence;
}

/* Writes the rewritten file out over full (named path in messages). */
static void write_doc(const char *full, const char *path, const struct doc *d)
{
	char tmp[PATH_MAX * 2 + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", full);
	f = fopen(tmp, "w");
	if (!f || fwrite(d->out.p, 1, d->out.len, f) != d->out.len || fclose(f) ||
	    rename(tmp, full)) {
		err(path, 0, "cannot write: %s", strerror(errno));
	} else {
		printf("hcasim-docrun: %s: %d of %d region(s) rewritten\n", path, d->differ,
		       d->regions);
	}
}

/* Process one file: returns how many regions differ from their runs. */
static int process(const char *path, int check, int *nregions)
{
	char full[PATH_MAX * 2];
	struct buf in = { 0 };
	struct doc d = { .path = path, .check = check };
	int errors0 = errors, fence = 0, md;

	snprintf(full, sizeof(full), "%s/%s", srcdir, path);
	if (read_doc(full, path, &in))
		return 0;
	for (const char *p = in.p; *p;) {
		const char *eol = strchr(p, '\n'), *m, *lead = p;
		size_t ll = eol ? (size_t)(eol - p + 1) : strlen(p);

		d.line++;
		while (*lead == ' ' || *lead == '\t')
			lead++;
		if (!strncmp(lead, "```", 3))
			fence = fence_after(lead, fence);
		m = fence ? NULL : find_start(p, ll);
		md = !fence && !strncmp(lead, START_MD, strlen(START_MD));
		if (md)
			m = lead;
		if (!m) {
			if (!fence && find_marker(p, ll, END))
				err(path, d.line, "'%s' without a run marker before it", END);
			buf_add(&d.out, p, ll);
			p += ll;
			continue;
		}
		d.regions++;
		if (md || (m == lead && !memmem(m, ll - (size_t)(m - p), END, strlen(END)))) {
			p = block_region(&d, p, ll, m, md);
			if (!p)
				break;
			continue;
		}
		inline_regions(&d, p, ll);
		p += ll;
	}
	*nregions += d.regions;
	if (!check && errors == errors0 && d.differ)
		write_doc(full, path, &d);
	free(in.p);
	free(d.out.p);
	return d.differ;
}

static int rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* The source, recipes and build directories, the scratch directory and the recipes'
 * environment: 0, or 2 after an error. */
static int setup(const char *src, const char *rec, int check)
{
	char exe[PATH_MAX], tmpl[] = "/tmp/hcasim-docrun-XXXXXX";
	ssize_t n;

	if (!realpath(src, srcdir)) {
		fprintf(stderr, "hcasim-docrun: %s: %s\n", src, strerror(errno));
		return 2;
	}
	if (rec ? !realpath(rec, recipes)
		: snprintf(recipes, sizeof(recipes), "%s/sim/apps/docruns.sh", srcdir) < 0 ||
		      access(recipes, R_OK)) {
		fprintf(stderr, "hcasim-docrun: recipes %s: %s\n", rec ? rec : recipes,
			strerror(errno));
		return 2;
	}
	/* The build directory: this binary is <build>/bin/hcasim-docrun. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		perror("hcasim-docrun: /proc/self/exe");
		return 2;
	}
	exe[n] = 0;
	snprintf(builddir, sizeof(builddir), "%s", dirname(dirname(exe)));
	if (!mkdtemp(tmpl)) {
		perror("hcasim-docrun: mkdtemp");
		return 2;
	}
	snprintf(work, sizeof(work), "%s", tmpl);
	setenv("HCASIM_DOC_SRC", srcdir, 1);
	setenv("HCASIM_DOC_BUILD", builddir, 1);
	setenv("HCASIM_DOC_WORK", work, 1);
	if (check)
		setenv("HCASIM_DOC_CHECK", "1", 1);
	else
		unsetenv("HCASIM_DOC_CHECK");
	return 0;
}

/* Processes the default files of SRCDIR: README.md, docs/NAME.md and docs/DIR/NAME.md. Returns
 * how many regions differ, or -1 after an error. */
static int process_default(int check, int *nregions, int *nfiles)
{
	static const char *const pats[] = {"README.md", "docs/*.md", "docs/*/*.md"};
	char cwd[PATH_MAX];
	int differ = 0;

	if (!getcwd(cwd, sizeof(cwd)) || chdir(srcdir)) {
		perror("hcasim-docrun");
		return -1;
	}
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;

		if (glob(pats[i], 0, NULL, &g))
			continue;
		for (size_t j = 0; j < g.gl_pathc; j++, (*nfiles)++)
			differ += process(g.gl_pathv[j], check, nregions);
		globfree(&g);
	}
	if (chdir(cwd))
		perror("hcasim-docrun");
	return differ;
}

/* The summary line, and the exit status. */
static int report(int check, int differ, int nregions, int nfiles)
{
	if (errors) {
		fprintf(stderr, "hcasim-docrun: %d error(s)\n", errors);
		return 2;
	}
	if (check) {
		if (differ)
			fprintf(stderr,
				"hcasim-docrun: %d of %d region(s) in %d file(s) differ from "
				"their runs: run make docs\n",
				differ, nregions, nfiles);
		else
			printf("hcasim-docrun: %d region(s) in %d file(s) as their runs print them"
			       " (%d skipped)\n",
			       nregions, nfiles, nskipped);
		return differ ? 1 : 0;
	}
	printf("hcasim-docrun: %d region(s) in %d file(s), %d rewritten, %d skipped\n", nregions,
	       nfiles, differ, nskipped);
	return 0;
}

int main(int argc, char **argv)
{
	const char *src = ".", *rec = NULL;
	int check = 0, opt, differ = 0, nregions = 0, nfiles = 0;

	while ((opt = getopt(argc, argv, "cC:r:")) != -1) {
		switch (opt) {
		case 'c':
			check = 1;
			break;
		case 'C':
			src = optarg;
			break;
		case 'r':
			rec = optarg;
			break;
		default:
			fprintf(stderr, "usage: hcasim-docrun [-c] [-C SRCDIR] [-r RECIPES] "
					"[FILE.md...]\n");
			return 2;
		}
	}
	if (setup(src, rec, check))
		return 2;
	if (optind < argc) {
		for (int i = optind; i < argc; i++, nfiles++)
			differ += process(argv[i], check, &nregions);
	} else {
		differ = process_default(check, &nregions, &nfiles);
		if (differ < 0)
			return 2;
	}
	rm_rf(work);
	return report(check, differ, nregions, nfiles);
}
