/* Waves: the VCD writer (sim/waves.h). Value changes go to a scratch file in time order (a
 * min-heap holds those set for the future); sim_waves_close() writes the header, the initial
 * x values and then copies the changes. */
#include "sim/waves.h"
#include "sim/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_wsig {
	char *name;             /* dotted: "hca0.qp2.sq_psn" */
	unsigned width;         /* bits, 1..64 */
	unsigned idx;           /* declaration order: its VCD id code */
	bool known;             /* a value was written (else x) */
	uint64_t cur;           /* last value written */
	sim_time_t strobe_until; /* a strobe stays 1 until then */
};

enum { CH_SET, CH_STROBE_FALL };

struct change {
	sim_time_t t;
	uint64_t seq; /* keeps changes at the same time in the order they were made */
	struct sim_wsig *s;
	uint64_t v;
	int kind;
};

bool sim_waves_on;

static struct {
	char *path;
	FILE *out;     /* the dump, written at close */
	FILE *body;    /* scratch: the value changes */
	struct sim_wsig **sigs;
	size_t nsigs, capsigs;
	struct sim_wsig **hash; /* open addressing on name */
	size_t hcap;
	struct change *heap;
	size_t hlen, hcapacity;
	uint64_t seq;
	sim_time_t now;    /* everything at or before it is written */
	sim_time_t body_t; /* time of the last #t in the body */
} w;

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static void free_all(void)
{
	for (size_t i = 0; i < w.nsigs; i++) {
		free(w.sigs[i]->name);
		free(w.sigs[i]);
	}
	free(w.sigs);
	free(w.hash);
	free(w.heap);
	free(w.path);
	if (w.body)
		fclose(w.body);
	if (w.out)
		fclose(w.out);
	memset(&w, 0, sizeof(w));
	sim_waves_on = false;
}

int sim_waves_open(const char *path)
{
	FILE *out, *body;
	int rc;

	if (!path || !*path)
		return sim_error(-EINVAL, "waves: no path given");
	if (sim_waves_on && (rc = sim_waves_close()))
		return rc;
	out = fopen(path, "w");
	if (!out)
		return sim_error(-errno, "waves: cannot create '%s': %s", path, strerror(errno));
	body = tmpfile();
	if (!body) {
		rc = -errno;
		fclose(out);
		return sim_error(rc, "waves: no scratch file for '%s': %s", path, strerror(-rc));
	}
	memset(&w, 0, sizeof(w));
	w.out = out;
	w.body = body;
	w.path = strdup(path);
	w.hcap = 256;
	w.hash = calloc(w.hcap, sizeof(*w.hash));
	if (!w.path || !w.hash) {
		free_all();
		return sim_error(-ENOMEM, "waves: out of memory for '%s'", path);
	}
	sim_waves_on = true;
	return 0;
}

const char *sim_waves_path(void)
{
	return sim_waves_on ? w.path : NULL;
}

/* VCD identifier code of variable i: base 94 over the printable characters '!'..'~'. */
static void id_code(unsigned i, char *buf)
{
	int n = 0;

	do {
		buf[n++] = (char)('!' + i % 94);
		i /= 94;
	} while (i);
	buf[n] = 0;
}

static bool valid_name(const char *name)
{
	bool dot = false, any = false;
	int parts = 1;

	for (const char *p = name; *p; p++) {
		if (*p == '.') {
			if (!any || dot)
				return false;
			dot = true;
			parts++;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
		dot = false;
		any = true;
	}
	return any && !dot && parts >= 2;
}

static void rehash(void)
{
	size_t cap = w.hcap * 2;
	struct sim_wsig **h = calloc(cap, sizeof(*h));

	if (!h)
		return; /* keep the old table: lookups still work, only slower */
	for (size_t i = 0; i < w.nsigs; i++) {
		size_t j = hash_name(w.sigs[i]->name) & (cap - 1);

		while (h[j])
			j = (j + 1) & (cap - 1);
		h[j] = w.sigs[i];
	}
	free(w.hash);
	w.hash = h;
	w.hcap = cap;
}

struct sim_wsig *sim_waves_signal(const char *name, unsigned width)
{
	struct sim_wsig *s;
	size_t j;

	if (!sim_waves_on || !name || width < 1 || width > 64 || !valid_name(name))
		return NULL;
	for (j = hash_name(name) & (w.hcap - 1); w.hash[j]; j = (j + 1) & (w.hcap - 1))
		if (!strcmp(w.hash[j]->name, name))
			return w.hash[j];
	if (w.nsigs == w.capsigs) {
		size_t cap = w.capsigs ? w.capsigs * 2 : 256;
		struct sim_wsig **a = realloc(w.sigs, cap * sizeof(*a));

		if (!a)
			return NULL;
		w.sigs = a;
		w.capsigs = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return NULL;
	}
	s->width = width;
	s->idx = (unsigned)w.nsigs;
	w.sigs[w.nsigs++] = s;
	w.hash[j] = s;
	if (w.nsigs * 2 > w.hcap)
		rehash();
	return s;
}

/* ---- the queue of changes, a min-heap on (t, seq) ---- */

static bool ch_less(const struct change *a, const struct change *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(sim_time_t t, struct sim_wsig *s, uint64_t v, int kind)
{
	size_t i;

	if (w.hlen == w.hcapacity) {
		size_t cap = w.hcapacity ? w.hcapacity * 2 : 256;
		struct change *h = realloc(w.heap, cap * sizeof(*h));

		SIM_ASSERT(h != NULL, "waves: out of memory");
		w.heap = h;
		w.hcapacity = cap;
	}
	i = w.hlen++;
	w.heap[i] = (struct change){ t < w.now ? w.now : t, w.seq++, s, v, kind };
	while (i > 0) {
		size_t p = (i - 1) / 2;
		struct change tmp;

		if (!ch_less(&w.heap[i], &w.heap[p]))
			break;
		tmp = w.heap[i];
		w.heap[i] = w.heap[p];
		w.heap[p] = tmp;
		i = p;
	}
}

static struct change pop(void)
{
	struct change top = w.heap[0];
	size_t i = 0;

	w.heap[0] = w.heap[--w.hlen];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct change tmp;

		if (l < w.hlen && ch_less(&w.heap[l], &w.heap[m]))
			m = l;
		if (r < w.hlen && ch_less(&w.heap[r], &w.heap[m]))
			m = r;
		if (m == i)
			break;
		tmp = w.heap[i];
		w.heap[i] = w.heap[m];
		w.heap[m] = tmp;
		i = m;
	}
	return top;
}

static void write_value(FILE *f, const struct sim_wsig *s, bool known, uint64_t v)
{
	char id[8];

	id_code(s->idx, id);
	if (s->width == 1) {
		fprintf(f, "%c%s\n", known ? (char)('0' + (v & 1)) : 'x', id);
		return;
	}
	if (!known) {
		fprintf(f, "bx %s\n", id);
		return;
	}
	{
		char bits[65];
		int n = 0;

		for (int b = (int)s->width - 1; b >= 0; b--)
			if (n || (v >> b & 1) || b == 0)
				bits[n++] = (char)('0' + (v >> b & 1));
		bits[n] = 0;
		fprintf(f, "b%s %s\n", bits, id);
	}
}

static void emit(const struct change *c)
{
	struct sim_wsig *s = c->s;
	uint64_t v = c->v;

	if (s->width < 64)
		v &= (1ull << s->width) - 1;
	if (c->kind == CH_STROBE_FALL && s->strobe_until > c->t)
		return; /* a later strobe keeps it high */
	if (s->known && s->cur == v)
		return;
	if (c->t != w.body_t) {
		fprintf(w.body, "#%llu\n", (unsigned long long)c->t);
		w.body_t = c->t;
	}
	write_value(w.body, s, true, v);
	s->known = true;
	s->cur = v;
}

void sim_waves_advance(sim_time_t now)
{
	if (!sim_waves_on)
		return;
	while (w.hlen && w.heap[0].t <= now) {
		struct change c = pop();

		emit(&c);
	}
	if (now > w.now)
		w.now = now;
}

void sim_waves_set(struct sim_wsig *s, sim_time_t t, uint64_t v)
{
	if (sim_waves_on && s)
		push(t, s, v, CH_SET);
}

void sim_waves_strobe(struct sim_wsig *s, sim_time_t t, sim_time_t width_ps)
{
	if (!sim_waves_on || !s)
		return;
	if (t < w.now)
		t = w.now;
	if (!width_ps)
		width_ps = 1;
	if (t + width_ps > s->strobe_until)
		s->strobe_until = t + width_ps;
	push(t, s, 1, CH_SET);
	push(t + width_ps, s, 0, CH_STROBE_FALL);
}

static int cmp_sig(const void *a, const void *b)
{
	return strcmp((*(struct sim_wsig *const *)a)->name, (*(struct sim_wsig *const *)b)->name);
}

/* Scopes from the sorted names: close the scopes of the previous name beyond the ones the
 * two share, open the new name's others. depth: scopes open (those of prev). */
static int write_scopes(FILE *f, const char *prev, const char *name, int depth)
{
	const char *nl = strrchr(name, '.'), *pl = prev ? strrchr(prev, '.') : NULL;
	const char *p = name, *q = prev;
	int common = 0;

	while (q && p < nl && q < pl) {
		const char *pe = strchr(p, '.'), *qe = strchr(q, '.');

		if (pe - p != qe - q || strncmp(p, q, (size_t)(pe - p)))
			break;
		common++;
		p = pe + 1;
		q = qe + 1;
	}
	for (; depth > common; depth--)
		fputs("$upscope $end\n", f);
	while (p < nl) {
		const char *e = strchr(p, '.');

		fprintf(f, "$scope module %.*s $end\n", (int)(e - p), p);
		depth++;
		p = e + 1;
	}
	return depth;
}

int sim_waves_close(void)
{
	struct sim_wsig **sorted;
	char buf[65536];
	size_t n;
	int depth = 0, rc = 0;

	if (!sim_waves_on)
		return 0;
	while (w.hlen) {
		struct change c = pop();

		emit(&c);
	}
	sorted = malloc((w.nsigs ? w.nsigs : 1) * sizeof(*sorted));
	if (!sorted) {
		rc = sim_error(-ENOMEM, "waves: out of memory writing '%s'", w.path);
		free_all();
		return rc;
	}
	memcpy(sorted, w.sigs, w.nsigs * sizeof(*sorted));
	qsort(sorted, w.nsigs, sizeof(*sorted), cmp_sig);
	fputs("$version hcasim model waves (sim/waves.c) $end\n$timescale 1ps $end\n", w.out);
	for (size_t i = 0; i < w.nsigs; i++) {
		const struct sim_wsig *s = sorted[i];
		char id[8];

		depth = write_scopes(w.out, i ? sorted[i - 1]->name : NULL, s->name, depth);
		id_code(s->idx, id);
		if (s->width == 1)
			fprintf(w.out, "$var wire 1 %s %s $end\n", id, strrchr(s->name, '.') + 1);
		else
			fprintf(w.out, "$var wire %u %s %s [%u:0] $end\n", s->width, id,
				strrchr(s->name, '.') + 1, s->width - 1);
	}
	for (; depth > 0; depth--)
		fputs("$upscope $end\n", w.out);
	fputs("$enddefinitions $end\n#0\n$dumpvars\n", w.out);
	for (size_t i = 0; i < w.nsigs; i++)
		write_value(w.out, w.sigs[i], false, 0);
	fputs("$end\n", w.out);
	free(sorted);
	rewind(w.body);
	while ((n = fread(buf, 1, sizeof(buf), w.body)) > 0)
		if (fwrite(buf, 1, n, w.out) != n)
			break;
	if (ferror(w.body) || ferror(w.out))
		rc = sim_error(-EIO, "waves: writing '%s' failed", w.path);
	if (fclose(w.out) && !rc)
		rc = sim_error(-EIO, "waves: closing '%s': %s", w.path, strerror(errno));
	w.out = NULL;
	free_all();
	return rc;
}

const char *sim_waves_env_dir_var(void)
{
	const char *dir = getenv("HCASIM_WAVES_DIR");

	if (dir && *dir)
		return "HCASIM_WAVES_DIR";
	dir = getenv("WAVES_DIR"); /* the older name */
	return dir && *dir ? "WAVES_DIR" : NULL;
}

const char *sim_waves_env_dir(void)
{
	const char *var = sim_waves_env_dir_var();

	return var ? getenv(var) : "build/waves";
}
