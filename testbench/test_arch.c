/* Architecture: model/'s blocks form the DAG that model/blocks.dag declares
 * (docs/architecture.md#the-block-graph), read from the object files this build made, and the
 * check says so when they do not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Run the check with dag (NULL: the project's) and return its exit status; *out gets its
 * output (malloc'd). */
static int dag_check(const char *dag, char **out)
{
	char cmd[1024];
	FILE *p;
	size_t cap = 1 << 14, len = 0, n;
	int rc;

	snprintf(cmd, sizeof(cmd), "cd '%s' && sh testbench/dag-check.sh '%s/obj' %s 2>&1",
		 HCASIM_SRC_DIR, HCASIM_BUILD_DIR, dag ? dag : "");
	p = popen(cmd, "r");
	cr_assert_not_null(p, "%s", cmd);
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

Test(arch, model_blocks_form_the_declared_dag)
{
	char *out;
	int rc = dag_check(NULL, &out);

	cr_assert_eq(rc, 0, "model/blocks.dag is broken:\n%s", out);
	cr_assert(strstr(out, "no call or include against") != NULL, "%s", out);
	free(out);
}

/* The same objects against a DAG in which the requester sits below the port: its calls to
 * hm_port_send go against it, and the check names them. */
Test(arch, a_call_against_the_dag_is_named)
{
	char path[] = "/tmp/hcasim-dag-XXXXXX", line[256], *out;
	FILE *in, *f;
	int fd = mkstemp(path), rc;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	snprintf(line, sizeof(line), "%s/model/blocks.dag", HCASIM_SRC_DIR);
	in = fopen(line, "r");
	cr_assert(f && in);
	while (fgets(line, sizeof(line), in))
		if (strcmp(line, "req\n"))
			fputs(line, f);
	fputs("req\n", f); /* the requester last: below everything it calls */
	fclose(in);
	fclose(f);
	rc = dag_check(path, &out);
	unlink(path);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "dag-check: req -> port (hm_port_send) goes against") != NULL, "%s",
		  out);
	free(out);
}

/* Each part of a QP has one writer: with the requester's part given to the completer, the
 * requester's own writes are named. */
Test(arch, a_write_to_another_blocks_part_is_named)
{
	char path[] = "/tmp/hcasim-dag-XXXXXX", line[256], *out;
	FILE *in, *f;
	int fd = mkstemp(path), rc;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	snprintf(line, sizeof(line), "%s/model/blocks.dag", HCASIM_SRC_DIR);
	in = fopen(line, "r");
	cr_assert(f && in);
	while (fgets(line, sizeof(line), in))
		fputs(strncmp(line, "owner:", 6) ? line : "owner: req=comp\n", f);
	fclose(in);
	fclose(f);
	rc = dag_check(path, &out);
	unlink(path);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "model/req.c:") && strstr(out, "writes the req part of a QP, which "
							     "comp owns"),
		  "%s", out);
	free(out);
}

/* A model file that is not a block of the DAG fails the check. */
Test(arch, a_file_outside_the_dag_is_named)
{
	char path[] = "/tmp/hcasim-dag-XXXXXX", line[256], *out;
	FILE *in, *f;
	int fd = mkstemp(path), rc;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	snprintf(line, sizeof(line), "%s/model/blocks.dag", HCASIM_SRC_DIR);
	in = fopen(line, "r");
	cr_assert(f && in);
	while (fgets(line, sizeof(line), in))
		if (strcmp(line, "dma\n"))
			fputs(line, f);
	fclose(in);
	fclose(f);
	rc = dag_check(path, &out);
	unlink(path);
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "dag-check: model/dma.c is not a block of") != NULL, "%s", out);
	free(out);
}
