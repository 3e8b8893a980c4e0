/* hcasim-bench report: runs every scenario in child processes and writes docs/bench/results.md
 * (report.c). */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

/* Run everything, judge each figure against its target, print the markdown and write it to
 * path (NULL: stdout only). 0 when every scenario ran, 1 otherwise (verdicts do not count). */
int bench_report(const char *path);

#endif
