/* Architecture: model/'s blocks form the DAG that model/blocks.dag declares
 * (docs/architecture.md#the-block-graph), read from the object files this build made, and the
 * check says so when they do not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Run cmd in the source tree; its exit status, and its output in *out (malloc'd). */
static int run_in_src(const char *cmd, char **out);

/* The DAG check with dag (NULL: the project's). */
static int run_in_src(const char *cmd, char **out)
{
	char full[1536];
	FILE *p;
	size_t cap = 1 << 14, len = 0, n;
	int rc;

	snprintf(full, sizeof(full), "cd '%s' && %s 2>&1", HCASIM_SRC_DIR, cmd);
	p = popen(full, "r");
	cr_assert_not_null(p, "%s", full);
	*out = malloc(cap);
	cr_assert_not_null(*out);
	while ((n = fread(*out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			*out = realloc(*out, cap *= 2);
			cr_assert_not_null(*out);
		}
	}
	(*out)[len] = 0;
	rc = pclose(p);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int dag_check(const char *dag, char **out)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "sh testbench/dag-check.sh '%s/obj' %s", HCASIM_BUILD_DIR,
		 dag ? dag : "");
	return run_in_src(cmd, out);
}

Test(arch, model_blocks_form_the_declared_dag)
{
	char *out;
	int rc = dag_check(NULL, &out);

	cr_assert_eq(rc, 0, "model/blocks.dag is broken:\n%s", out);
	cr_assert(strstr(out, "no call or include against") != NULL, "%s", out);
	free(out);
}

/* The check run against model/blocks.dag with the line starting with `match` replaced by
 * `with` (NULL: dropped) and `append` added at the end (NULL: nothing): its exit status, and
 * its output in *out. */
static int dag_variant(const char *match, const char *with, const char *append, char **out)
{
	char path[] = "/tmp/hcasim-dag-XXXXXX", line[256];
	FILE *in, *f;
	int fd = mkstemp(path), rc;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	snprintf(line, sizeof(line), "%s/model/blocks.dag", HCASIM_SRC_DIR);
	in = fopen(line, "r");
	cr_assert(f && in);
	while (fgets(line, sizeof(line), in))
		if (strncmp(line, match, strlen(match)))
			fputs(line, f);
		else if (with)
			fputs(with, f);
	if (append)
		fputs(append, f);
	fclose(in);
	fclose(f);
	rc = dag_check(path, out);
	unlink(path);
	return rc;
}

/* The same objects against a DAG in which the requester sits below the port: its calls to
 * hm_port_send go against it, and the check names them. */
Test(arch, a_call_against_the_dag_is_named)
{
	char *out;
	int rc = dag_variant("req\n", NULL, "req\n", &out); /* the requester last */

	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "dag-check: req -> port (hm_port_send) goes against") != NULL, "%s",
		  out);
	free(out);
}

/* Each part of a QP has one writer: with the requester's part given to the completer, the
 * requester's own writes are named. */
Test(arch, a_write_to_another_blocks_part_is_named)
{
	char *out;
	int rc = dag_variant("owner:", "owner: req=comp\n", NULL, &out);

	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "model/req.c:") &&
			  strstr(out, "writes the req part of a QP, which comp owns"),
		  "%s", out);
	free(out);
}

/* The kernel is reached through the device: a block that calls sim_kernel() without leave is
 * named (here the wave writer, with the leave taken away). */
Test(arch, a_block_reaching_the_kernel_directly_is_named)
{
	char *out;
	int rc = dag_variant("only: sim_kernel", "only: sim_kernel hca\n", NULL, &out);

	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "dag-check: waves calls sim_kernel, which only hca may call") != NULL,
		  "%s", out);
	free(out);
}

/* A model file that is not a block of the DAG fails the check. */
Test(arch, a_file_outside_the_dag_is_named)
{
	char *out;
	int rc = dag_variant("dma\n", NULL, NULL, &out);

	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "dag-check: model/dma.c is not a block of") != NULL, "%s", out);
	free(out);
}

Test(arch, product_functions_are_short_and_no_run_of_lines_is_repeated)
{
	char *out;
	int rc = run_in_src("sh testbench/code-check.sh", &out);

	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "no function over 80 lines, no 10-line run repeated") != NULL, "%s",
		  out);
	free(out);
}

/* A function of 81 lines, and ten lines written twice, are both named. */
Test(arch, a_long_function_and_a_repeated_run_are_named)
{
	char path[] = "/tmp/hcasim-code-XXXXXX", cmd[256], *out;
	int fd = mkstemp(path), rc;
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs("int long_one(int x)\n{\n", f);
	for (int i = 0; i < 81; i++)
		fprintf(f, "\tx += %d;\n", i);
	fputs("\treturn x;\n}\n\nint twice(int y)\n{\n", f);
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 10; i++)
			fprintf(f, "\ty = y * %d + 1; /* %d */\n", i + 100, r);
	fputs("\treturn y;\n}\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "sh testbench/code-check.sh %s", path);
	rc = run_in_src(cmd, &out);
	unlink(path);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "int long_one(int x): 82 lines, more than 80") != NULL, "%s", out);
	cr_assert(strstr(out, "repeats") != NULL && strstr(out, "(10 lines)") != NULL, "%s", out);
	free(out);
}
