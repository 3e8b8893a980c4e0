/* hcasim-vcdcheck [-q] [-r NAME]... FILE.vcd: check that a VCD is well formed, strictly —
 * vcd2fst is not a validator (toolchain-facts.md §4). Checked: the header's sections are
 * closed by $end, scopes balance, every $var has a type, a width >= 1, an id code and a
 * reference whose [msb:lsb] range (if any) spans the width; $timescale is present;
 * $enddefinitions comes before any value; time stamps (#t) strictly increase; every value
 * change names a declared id, a scalar change is for a 1-bit variable, a vector change
 * (b...) has only 0/1/x/z digits and no more of them than the variable's width. -r NAME
 * (dotted: "hca0.qp2.state", no range) must be declared. Prints "ok: ..." with the counts, or
 * "FILE:LINE: what is wrong" and exits 1 (2 for a usage or I/O error). docs/waves.md. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct var {
	char *id;
	char *name; /* dotted, scopes included, no range */
	unsigned width;
	bool real;
};

static struct var *vars;
static size_t nvars, capvars;
static const char *file;
static unsigned long line = 1;
static FILE *in;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%lu: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Next whitespace-separated token (NULL at end of file); counts lines. */
static char *token(void)
{
	static char buf[4096];
	size_t n = 0;
	int c;

	while ((c = fgetc(in)) != EOF && isspace(c))
		if (c == '\n')
			line++;
	if (c == EOF)
		return NULL;
	do {
		if (n + 1 >= sizeof(buf))
			fail("token longer than 4095 bytes");
		buf[n++] = (char)c;
	} while ((c = fgetc(in)) != EOF && !isspace(c));
	if (c == '\n')
		line++;
	buf[n] = 0;
	return buf;
}

static char *need(const char *what)
{
	char *t = token();

	if (!t)
		fail("end of file inside %s", what);
	return t;
}

/* Skip to $end (a section whose text is free). */
static void skip_section(const char *kw)
{
	char *t;

	while ((t = need(kw)) && strcmp(t, "$end"))
		;
}

static struct var *find(const char *id)
{
	/* Linear over a sorted copy would be faster; VCDs checked here have thousands of vars at
	 * most, so a simple hash on the id is enough. */
	static struct var **h;
	static size_t hcap;

	if (!h || hcap < nvars * 2) {
		free(h);
		hcap = 64;
		while (hcap < nvars * 2)
			hcap *= 2;
		h = calloc(hcap, sizeof(*h));
		if (!h) {
			fprintf(stderr, "vcdcheck: out of memory\n");
			exit(2);
		}
		for (size_t i = 0; i < nvars; i++) {
			uint64_t x = 1469598103934665603ull;

			for (const char *p = vars[i].id; *p; p++)
				x = (x ^ (uint8_t)*p) * 1099511628211ull;
			for (x &= hcap - 1; h[x]; x = (x + 1) & (hcap - 1))
				if (!strcmp(h[x]->id, vars[i].id))
					break;
			if (!h[x])
				h[x] = &vars[i];
		}
	}
	{
		uint64_t x = 1469598103934665603ull;

		for (const char *p = id; *p; p++)
			x = (x ^ (uint8_t)*p) * 1099511628211ull;
		for (x &= hcap - 1; h[x]; x = (x + 1) & (hcap - 1))
			if (!strcmp(h[x]->id, id))
				return h[x];
	}
	return NULL;
}

static void add_var(const char *scope, const char *type, const char *w, const char *id,
		    const char *ref, const char *range)
{
	char *end;
	unsigned long width = strtoul(w, &end, 10);
	struct var *v;

	if (*end || !width || width > 1u << 20)
		fail("$var %s: width '%s' is not a positive number", ref, w);
	for (const char *p = id; *p; p++)
		if (*p < 33 || *p > 126)
			fail("$var %s: id code '%s' has a non-printable character", ref, id);
	if (range) {
		long msb, lsb;

		if (sscanf(range, "[%ld:%ld]", &msb, &lsb) == 2) {
			if ((unsigned long)(msb > lsb ? msb - lsb : lsb - msb) + 1 != width)
				fail("$var %s: range %s does not span the declared width", ref, range);
		} else if (sscanf(range, "[%ld]", &msb) != 1) {
			fail("$var %s: malformed range '%s'", ref, range);
		} else if (width != 1) {
			fail("$var %s: bit select %s on a multi-bit variable", ref, range);
		}
	}
	if (nvars == capvars) {
		capvars = capvars ? capvars * 2 : 256;
		vars = realloc(vars, capvars * sizeof(*vars));
		if (!vars) {
			fprintf(stderr, "vcdcheck: out of memory\n");
			exit(2);
		}
	}
	v = &vars[nvars++];
	v->id = strdup(id);
	v->name = malloc(strlen(scope) + strlen(ref) + 2);
	if (!v->id || !v->name) {
		fprintf(stderr, "vcdcheck: out of memory\n");
		exit(2);
	}
	sprintf(v->name, "%s%s%s", scope, *scope ? "." : "", ref);
	v->width = (unsigned)width;
	v->real = !strcmp(type, "real") || !strcmp(type, "realtime");
}

static void header(bool *timescale)
{
	char scope[4096] = "";
	int depth = 0;
	char *t;

	while ((t = token())) {
		if (!strcmp(t, "$enddefinitions")) {
			if (strcmp(need("$enddefinitions"), "$end"))
				fail("$enddefinitions not closed by $end");
			if (depth)
				fail("$enddefinitions with %d scope(s) still open", depth);
			return;
		} else if (!strcmp(t, "$scope")) {
			char type[64], name[1024];

			snprintf(type, sizeof(type), "%s", need("$scope"));
			snprintf(name, sizeof(name), "%s", need("$scope"));
			if (!strcmp(name, "$end"))
				fail("$scope %s without a name", type);
			if (strcmp(need("$scope"), "$end"))
				fail("$scope %s not closed by $end", name);
			if (strlen(scope) + strlen(name) + 2 > sizeof(scope))
				fail("scope %s.%s nested too deep", scope, name);
			if (*scope)
				strcat(scope, ".");
			strcat(scope, name);
			depth++;
		} else if (!strcmp(t, "$upscope")) {
			char *dot;

			if (strcmp(need("$upscope"), "$end"))
				fail("$upscope not closed by $end");
			if (!depth)
				fail("$upscope without a matching $scope");
			dot = strrchr(scope, '.');
			if (dot)
				*dot = 0;
			else
				scope[0] = 0;
			depth--;
		} else if (!strcmp(t, "$var")) {
			char type[64], w[64], id[256], ref[1024];
			char *r;

			snprintf(type, sizeof(type), "%s", need("$var"));
			snprintf(w, sizeof(w), "%s", need("$var"));
			snprintf(id, sizeof(id), "%s", need("$var"));
			snprintf(ref, sizeof(ref), "%s", need("$var"));
			if (!strcmp(w, "$end") || !strcmp(id, "$end") || !strcmp(ref, "$end"))
				fail("$var with fewer than four fields before $end");
			r = need("$var");
			if (!strcmp(r, "$end")) {
				add_var(scope, type, w, id, ref, NULL);
			} else {
				char range[256];

				snprintf(range, sizeof(range), "%s", r);
				if (strcmp(need("$var"), "$end"))
					fail("$var %s not closed by $end", ref);
				add_var(scope, type, w, id, ref, range);
			}
		} else if (!strcmp(t, "$timescale")) {
			*timescale = true;
			skip_section(t);
		} else if (!strcmp(t, "$date") || !strcmp(t, "$version") || !strcmp(t, "$comment")) {
			skip_section(t);
		} else {
			fail("'%s' in the header: expected a $keyword", t);
		}
	}
	fail("no $enddefinitions");
}

static bool is_digit_set(const char *s, const char *set)
{
	for (; *s; s++)
		if (!strchr(set, *s))
			return false;
	return true;
}

/* The options and the file name (into file): 0, or 2 after a usage message. */
static int parse_args(int argc, char **argv, bool *quiet, const char **required, int *nreq)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-q")) {
			*quiet = true;
		} else if (!strcmp(argv[i], "-r") && i + 1 < argc && *nreq < 64) {
			required[(*nreq)++] = argv[++i];
		} else if (argv[i][0] == '-' || file) {
			fprintf(stderr, "usage: hcasim-vcdcheck [-q] [-r NAME]... FILE.vcd\n");
			return 2;
		} else {
			file = argv[i];
		}
	}
	if (!file) {
		fprintf(stderr, "usage: hcasim-vcdcheck [-q] [-r NAME]... FILE.vcd\n");
		return 2;
	}
	return 0;
}

/* Fails unless every -r NAME is declared. */
static void check_required(const char **required, int nreq)
{
	for (int i = 0; i < nreq; i++) {
		size_t j;

		for (j = 0; j < nvars && strcmp(vars[j].name, required[i]); j++)
			;
		if (j == nvars)
			fail("required variable %s is not declared", required[i]);
	}
}

/* The variable a value change names by its id code; fails if none is declared. */
static struct var *declared(const char *id)
{
	struct var *v = find(id);

	if (!v)
		fail("value change for id '%s', which no $var declares", id);
	return v;
}

/* A keyword after $enddefinitions: a dump section's, or a $comment (skipped). */
static void body_keyword(const char *t)
{
	if (strcmp(t, "$dumpvars") && strcmp(t, "$dumpall") && strcmp(t, "$dumpon") &&
	    strcmp(t, "$dumpoff") && strcmp(t, "$end")) {
		if (!strcmp(t, "$comment"))
			skip_section(t);
		else
			fail("'%s' after $enddefinitions", t);
	}
}

/* A vector value change t ("b..."), its id code the next token. */
static void vector_change(const char *t, bool any_time)
{
	char bits[4096];
	struct var *v;

	snprintf(bits, sizeof(bits), "%s", t + 1);
	if (!any_time)
		fail("value change before the first time stamp");
	if (!*bits || !is_digit_set(bits, "01xXzZ"))
		fail("vector value '%s' has a digit other than 0 1 x z", t);
	v = declared(need("a vector value change"));
	if (v->real)
		fail("vector value for real variable %s", v->name);
	if (strlen(bits) > v->width)
		fail("value b%s for %s has %zu bits, more than the %u declared", bits, v->name,
		     strlen(bits), v->width);
}

/* A real value change t ("r..."), its id code the next token. */
static void real_change(const char *t)
{
	char *end;
	struct var *v;

	strtod(t + 1, &end);
	if (*end || end == t + 1)
		fail("malformed real value '%s'", t);
	v = declared(need("a real value change"));
	if (!v->real)
		fail("real value for non-real variable %s", v->name);
}

/* A scalar value change t (a digit of 01xXzZ, then the id code). */
static void scalar_change(const char *t, bool any_time)
{
	struct var *v;

	if (!any_time)
		fail("value change before the first time stamp");
	if (!t[1])
		fail("scalar value '%s' without an id code", t);
	v = declared(t + 1);
	if (v->width != 1)
		fail("scalar value change for %s, a multi-bit variable", v->name);
}

int main(int argc, char **argv)
{
	const char *required[64];
	int nreq = 0;
	bool quiet = false, timescale = false, any_time = false;
	unsigned long long last_t = 0, changes = 0, stamps = 0;
	char *t;

	if (parse_args(argc, argv, &quiet, required, &nreq))
		return 2;
	in = fopen(file, "r");
	if (!in) {
		fprintf(stderr, "hcasim-vcdcheck: cannot open '%s': %s\n", file, strerror(errno));
		return 2;
	}
	header(&timescale);
	if (!timescale)
		fail("no $timescale in the header");
	if (!nvars)
		fail("no $var declared");
	check_required(required, nreq);
	while ((t = token())) {
		if (t[0] == '#') {
			char *end;
			unsigned long long ts = strtoull(t + 1, &end, 10);

			if (!t[1] || *end || !isdigit((unsigned char)t[1]))
				fail("malformed time stamp '%s'", t);
			if (any_time && ts <= last_t)
				fail("time #%llu does not increase (previous #%llu)", ts, last_t);
			last_t = ts;
			any_time = true;
			stamps++;
		} else if (t[0] == '$') {
			body_keyword(t);
		} else if (t[0] == 'b' || t[0] == 'B') {
			vector_change(t, any_time);
			changes++;
		} else if (t[0] == 'r' || t[0] == 'R') {
			real_change(t);
			changes++;
		} else if (strchr("01xXzZ", t[0])) {
			scalar_change(t, any_time);
			changes++;
		} else {
			fail("'%s' is not a time stamp, value change or keyword", t);
		}
	}
	if (!quiet)
		printf("ok: %s: %zu variables, %llu value changes, %llu time stamps, last #%llu\n",
		       file, nvars, changes, stamps, last_t);
	return 0;
}
