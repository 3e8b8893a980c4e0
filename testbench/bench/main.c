/* hcasim-bench: the benchmarks of `make bench` (docs/bench/README.md).
 *   hcasim-bench list            the scenarios
 *   hcasim-bench run NAME        one scenario in this process; FIG and INFO lines on stdout
 *   hcasim-bench report [FILE]   every scenario, each in its own processes (section A twice, to
 *                                check determinism; section B several times, for medians),
 *                                judged against docs/targets; markdown to FILE and stdout */
#include "testbench/bench/bench.h"
#include "testbench/bench/report.h"

#include <stdio.h>
#include <string.h>

static const struct bscenario *find(const char *name)
{
	const struct bscenario *const sets[] = { bench_fidelity, bench_speed, bench_fabric };

	for (int i = 0; i < 3; i++)
		for (const struct bscenario *sc = sets[i]; sc->name; sc++)
			if (!strcmp(sc->name, name))
				return sc;
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: hcasim-bench list | run NAME | report [FILE]\n");
	return 2;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "list")) {
		const struct bscenario *const sets[] = { bench_fidelity, bench_speed, bench_fabric };

		for (int i = 0; i < 3; i++)
			for (const struct bscenario *sc = sets[i]; sc->name; sc++)
				printf("%-16s %s %s\n", sc->name, i ? "B" : "A", sc->doc);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "run")) {
		const struct bscenario *sc = find(argv[2]);

		if (!sc) {
			fprintf(stderr, "hcasim-bench: no scenario '%s' (see: hcasim-bench list)\n",
				argv[2]);
			return 2;
		}
		return sc->fn();
	}
	if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "report"))
		return bench_report(argc == 3 ? argv[2] : NULL);
	return usage();
}
