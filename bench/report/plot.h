/*
 * `fencebench plot FILE.json [-o DIR] [-f svg|png] [--script]`: charts of a
 * run or a sweep, drawn by gnuplot (fed on a pipe, the data inline). Each
 * chart is DIR/<basename>-<chart>.svg (or .png), DIR being the document's
 * own directory unless -o names another:
 *
 *   throughput  ops/s against threads, one line per discipline (and per
 *               fence source, key distribution or pause rate the sweep
 *               also varies), the machine's floor dashed when measured;
 *               a sweep over at least two thread counts
 *   cycle-p99   the whole cycle's p99 latency against threads; the same
 *   latency     the percentile spectrum p50 .. p99.99, max on a
 *               1/(1-percentile) axis for acquire, write and cycle: of the
 *               run, or one panel per phase and a line per sweep row
 *   corruption  unfenced stale writes accepted and updates lost,
 *               write-fenced updates lost and fenced (zero) against the
 *               pause rate; a sweep over at least two pause rates
 *   timeseries  a run's "series" over time: ops/s with the faults taken a
 *               second as a band behind it, then the stale writes accepted
 *               and the updates lost so far per discipline, each line
 *               ending at the run's totals; a run
 *
 * With --script each chart's whole gnuplot script (terminal, output, data
 * inline) goes beside it as <basename>-<chart>.gp: the chart to adapt by
 * hand, redrawn with `gnuplot FILE.gp`. The charts stay C: their axes,
 * series and stripes are computed from the data, which a template could
 * not do, and gnuplot cannot read the JSON a template would need.
 *
 * A chart that does not apply is skipped with a note on stderr; the paths
 * written go to stdout, one a line. Exit 0, 2 bad input (malformed JSON,
 * another schema or tool, an unknown --format), 3 gnuplot missing or
 * failing, an unwritable directory.
 */
#ifndef FB_PLOT_H
#define FB_PLOT_H

int fb_plot_main(int argc, char **argv);

#endif
