/* The quoted runs of the docs (docs/writing-docs.md): every marked region of README.md and
 * docs/ holds what its run prints today (hcasim-docrun -c, the check behind make docs), and the
 * checker itself names a region that differs, rewrites it, and refuses what is malformed. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOCRUN HCASIM_BUILD_DIR "/bin/hcasim-docrun"

/* The committed docs: a region whose run prints something else fails here, naming the file,
 * the line and the recipe, with the first line that differs. */
Test(docs, quoted_runs_match_the_program)
{
	int st;
	char *out = tb_run_cmd(DOCRUN " -c -C " HCASIM_SRC_DIR " 2>&1", &st);

	cr_assert_eq(st, 0, "a doc differs from what make docs would write:\n%s", out);
	cr_assert(strstr(out, "as their runs print them"), "%s", out);
	free(out);
}

static char dir[] = "/tmp/hcasim-docs-XXXXXX";

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static char *read_file(const char *name)
{
	char path[256];
	char *text = calloc(1, 4096);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	cr_assert_lt(fread(text, 1, 4095, f), 4095);
	fclose(f);
	return text;
}

static char *docrun(const char *flags, int *status)
{
	char cmd[512];
	char *out;

	snprintf(cmd, sizeof(cmd), DOCRUN " %s -C %s -r %s/recipes.sh doc.md 2>&1", flags, dir,
		 dir);
	out = tb_run_cmd(cmd, status);
	return out;
}

static void make_dir(void)
{
	cr_assert_not_null(mkdtemp(dir));
	/* Recipes: say prints its arguments and how often it ran, one prints 42 and how often it
	 * ran; any other fails. */
	write_file("recipes.sh", "case $1 in\n"
				 "say) shift; echo \"$@\"; echo x >> \"$HCASIM_DOC_WORK/runs\";\n"
				 "     echo \"runs $(wc -l < \"$HCASIM_DOC_WORK/runs\")\" ;;\n"
				 "one) echo x >> \"$HCASIM_DOC_WORK/ones\";\n"
				 "     echo \"42/$(wc -l < \"$HCASIM_DOC_WORK/ones\")\" ;;\n"
				 "*) echo \"no recipe $1\" >&2; exit 3 ;;\n"
				 "esac\n");
}

static void remove_dir(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(docs_checker, .init = make_dir, .fini = remove_dir);

/* Block, Markdown and inline regions that drifted: -c names each with its file and line and
 * the first differing line, changes nothing and exits 1; without -c they are rewritten (the
 * Markdown block without fences), a repeated run is made once, and a marker quoted in a fence
 * (a ```` fence holding ``` lines too) or in `code` is left alone. */
Test(docs_checker, a_drifted_region_is_named_then_rewritten)
{
	static const char doc[] = "# t\n"
				  "\n"
				  "<!-- run: say hello -->\n"
				  "```\n"
				  "hello\n"
				  "runs 0\n"
				  "```\n"
				  "<!-- end -->\n"
				  "The answer is <!-- run: one -->41<!-- end --> and "
				  "<!-- run: one -->42/1<!-- end -->.\n"
				  "<!-- run-md: say x -->\n"
				  "| old |\n"
				  "<!-- end -->\n"
				  "\n"
				  "```\n"
				  "<!-- run: nothing -->\n"
				  "```\n"
				  "Quoted: `<!-- run: nothing -->`.\n"
				  "````\n"
				  "```\n"
				  "<!-- run: nothing -->\n"
				  "```\n"
				  "````\n";
	char *out, *text;
	int st;

	write_file("doc.md", doc);
	out = docrun("-c", &st);
	cr_assert_eq(st, 1, "%s", out);
	cr_assert(strstr(out, "doc.md:6: region 'say hello' differs from its run"), "%s", out);
	cr_assert(strstr(out, "doc: runs 0\n  run: runs 1\n"), "%s", out);
	cr_assert(strstr(out, "doc.md:9: region 'one' differs from its run"), "%s", out);
	cr_assert(strstr(out, "doc: 41\n  run: 42/1\n"), "%s", out);
	cr_assert(strstr(out, "doc.md:11: region 'say x' differs from its run"), "%s", out);
	cr_assert(strstr(out, "doc: | old |\n  run: x\n"), "%s", out);
	cr_assert(strstr(out, "3 of 4 region(s) in 1 file(s) differ"), "%s", out);
	free(out);
	text = read_file("doc.md");
	cr_assert_str_eq(text, doc, "-c changed the file");
	free(text);

	out = docrun("", &st);
	cr_assert_eq(st, 0, "%s", out);
	free(out);
	text = read_file("doc.md");
	cr_assert(strstr(text, "<!-- run: say hello -->\n```\nhello\nruns 1\n```\n<!-- end -->\n"),
		  "%s", text);
	cr_assert(strstr(text, "<!-- run-md: say x -->\nx\nruns 2\n<!-- end -->\n"), "%s", text);
	cr_assert(strstr(text, "The answer is <!-- run: one -->42/1<!-- end --> and "
			       "<!-- run: one -->42/1<!-- end -->."),
		  "%s", text);
	cr_assert(strstr(text, "```\n<!-- run: nothing -->\n```\nQuoted: `<!-- run: nothing -->`.\n"
			       "````\n```\n<!-- run: nothing -->\n```\n````\n"),
		  "%s", text);
	free(text);

	out = docrun("-c", &st);
	cr_assert_eq(st, 0, "%s", out);
	free(out);
}

/* A recipe that fails, a region without its end and a marker with a character outside the
 * recipe words: exit status 2, each named, the file left as it was. */
Test(docs_checker, a_failing_run_or_a_malformed_marker_is_an_error)
{
	static const char doc[] = "<!-- run: broken -->\n"
				  "```\nold\n```\n"
				  "<!-- end -->\n"
				  "x <!-- run: say $(id) -->y<!-- end -->\n"
				  "<!-- run: one -->\n"
				  "never ended\n";
	char *out, *text;
	int st;

	write_file("doc.md", doc);
	out = docrun("", &st);
	cr_assert_eq(st, 2, "%s", out);
	cr_assert(strstr(out, "doc.md:1: run 'broken' failed (exit status 3)"), "%s", out);
	cr_assert(strstr(out, "  no recipe broken"), "%s", out);
	cr_assert(strstr(out, "doc.md:6: run marker 'say $(id)': character '$'"), "%s", out);
	cr_assert(strstr(out, "doc.md:7: run marker without its '<!-- end -->'"), "%s", out);
	free(out);
	text = read_file("doc.md");
	cr_assert_str_eq(text, doc);
	free(text);
}
