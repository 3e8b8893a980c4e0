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

/* Process one file: returns how many regions differ from their runs. */
static int process(const char *path, int check, int *nregions)
{
	char full[PATH_MAX * 2], cmd[512];
	struct buf in = { 0 }, out = { 0 };
	int differ = 0, line = 0, regions = 0, errors0 = errors, fence = 0, md;
	FILE *f;
	char chunk[4096];
	size_t n;

	snprintf(full, sizeof(full), "%s/%s", srcdir, path);
	f = fopen(full, "r");
	if (!f) {
		err(path, 0, "%s", strerror(errno));
		return 0;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(&in, chunk, n);
	fclose(f);
	if (!in.len)
		buf_add(&in, "", 0);

	for (const char *p = in.p; *p;) {
		const char *eol = strchr(p, '\n'), *m, *lead = p;
		size_t ll = eol ? (size_t)(eol - p + 1) : strlen(p);

		line++;
		while (*lead == ' ' || *lead == '\t')
			lead++;
		if (!strncmp(lead, "```", 3)) {
			/* A fence opens with 3 or more backquotes and closes with as many. */
			int nb = (int)strspn(lead, "`");

			if (!fence)
				fence = nb;
			else if (nb >= fence && strchr("\n", lead[strspn(lead, "` \t\r")]))
				fence = 0;
		}
		m = fence ? NULL : find_start(p, ll);
		md = !fence && !strncmp(lead, START_MD, strlen(START_MD));
		if (md)
			m = lead;
		if (!m) {
			if (!fence && find_marker(p, ll, END))
				err(path, line, "'%s' without a run marker before it", END);
			buf_add(&out, p, ll);
			p += ll;
			continue;
		}
		regions++;
		if (md || (m == lead && !memmem(m, ll - (size_t)(m - p), END, strlen(END)))) {
			/* A block region: the marker line, up to the END line. */
			int start = line;
			size_t k = parse_start(m + strlen(md ? START_MD : START), cmd, sizeof(cmd),
					       path, line);
			const char *q = p + ll, *body = q, *o;
			size_t endlen = 0;

			buf_add(&out, p, ll);
			while (*q) {
				const char *e2 = strchr(q, '\n');
				size_t l2 = e2 ? (size_t)(e2 - q + 1) : strlen(q);
				const char *t = q;

				line++;
				while (*t == ' ' || *t == '\t')
					t++;
				if (!strncmp(t, END, strlen(END))) {
					endlen = l2;
					break;
				}
				if (find_start(q, l2) || find_marker(q, l2, START_MD)) {
					err(path, line, "a run marker inside the region of line %d",
					    start);
					break;
				}
				q += l2;
			}
			if (!*q) {
				err(path, start, "run marker without its '%s'", END);
				break;
			}
			o = k ? output_of(cmd, path, start) : NULL;
			if (o == skipped) {
				nskipped++;
				o = NULL;
			}
			if (o) {
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
					int d = first_diff(have, want.p, &la, &lb);

					differ++;
					if (check) {
						fprintf(stderr,
							"%s:%d: region '%s' differs from its run "
							"(make docs rewrites it), at line %d:\n",
							path, start + d, cmd, start + d);
						print_line("doc:", la);
						print_line("run:", lb);
					}
				}
				buf_str(&out, want.p);
				free(want.p);
				free(have);
			} else {
				buf_add(&out, body, (size_t)(q - body));
			}
			buf_add(&out, q, endlen);
			p = q + endlen;
			continue;
		}
		/* Inline regions: every START ... END pair on this line. */
		for (const char *s = p; s < p + ll;) {
			const char *ms = find_start(s, (size_t)(p + ll - s));
			size_t k;
			const char *me, *o;

			if (!ms) {
				buf_add(&out, s, (size_t)(p + ll - s));
				break;
			}
			k = parse_start(ms + strlen(START), cmd, sizeof(cmd), path, line);
			me = k ? memmem(ms + strlen(START) + k,
					(size_t)(p + ll - ms - strlen(START) - k), END, strlen(END))
			       : NULL;
			if (!me) {
				if (k)
					err(path, line,
					    "inline run marker without its '%s' on the "
					    "same line",
					    END);
				buf_add(&out, s, (size_t)(p + ll - s));
				break;
			}
			buf_add(&out, s, (size_t)(ms - s) + strlen(START) + k);
			o = output_of(cmd, path, line);
			if (o == skipped) {
				nskipped++;
				o = NULL;
			}
			if (o) {
				size_t ol = strlen(o);
				const char *have = ms + strlen(START) + k;
				size_t hl = (size_t)(me - have);

				if (o[ol - 1] == '\n')
					ol--;
				if (memchr(o, '\n', ol)) {
					err(path, line,
					    "run '%s' printed more than one line for an "
					    "inline region",
					    cmd);
					buf_add(&out, have, hl);
				} else {
					if (hl != ol || memcmp(have, o, ol)) {
						differ++;
						if (check)
							fprintf(
							    stderr,
							    "%s:%d: region '%s' differs from its "
							    "run (make docs rewrites it):\n  doc: "
							    "%.*s\n  run: %.*s\n",
							    path, line, cmd, (int)hl, have, (int)ol,
							    o);
					}
					buf_add(&out, o, ol);
				}
			} else {
				buf_add(&out, ms + strlen(START) + k,
					(size_t)(me - ms - strlen(START) - k));
			}
			buf_add(&out, END, strlen(END));
			s = me + strlen(END);
			if (find_start(s, (size_t)(p + ll - s)))
				regions++;
		}
		p += ll;
	}
	*nregions += regions;
	if (!check && errors == errors0 && differ) {
		char tmp[PATH_MAX * 2 + 8];

		snprintf(tmp, sizeof(tmp), "%s.new", full);
		f = fopen(tmp, "w");
		if (!f || fwrite(out.p, 1, out.len, f) != out.len || fclose(f) ||
		    rename(tmp, full)) {
			err(path, 0, "cannot write: %s", strerror(errno));
		} else {
			printf("hcasim-docrun: %s: %d of %d region(s) rewritten\n", path, differ,
			       regions);
		}
	}
	free(in.p);
	free(out.p);
	return differ;
}

static int rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int main(int argc, char **argv)
{
	const char *src = ".", *rec = NULL;
	char exe[PATH_MAX], tmpl[] = "/tmp/hcasim-docrun-XXXXXX";
	int check = 0, opt, differ = 0, nregions = 0, nfiles = 0;
	ssize_t n;

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

	if (optind < argc) {
		for (int i = optind; i < argc; i++, nfiles++)
			differ += process(argv[i], check, &nregions);
	} else {
		static const char *const pats[] = {"README.md", "docs/*.md", "docs/*/*.md"};
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)) || chdir(srcdir)) {
			perror("hcasim-docrun");
			return 2;
		}
		for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
			glob_t g;

			if (glob(pats[i], 0, NULL, &g))
				continue;
			for (size_t j = 0; j < g.gl_pathc; j++, nfiles++)
				differ += process(g.gl_pathv[j], check, &nregions);
			globfree(&g);
		}
		if (chdir(cwd))
			perror("hcasim-docrun");
	}
	rm_rf(work);
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
