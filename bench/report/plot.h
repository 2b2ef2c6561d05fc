/*
 * `fencebench plot FILE.json [-o DIR]`: SVG charts of a run or a sweep,
 * drawn by gnuplot (fed on a pipe, the data inline; nothing else is written
 * but the charts). Each chart is DIR/<basename>-<chart>.svg, DIR being the
 * document's own directory unless -o names another:
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
 *
 * A chart that does not apply is skipped with a note on stderr; the paths
 * written go to stdout, one a line. Exit 0, 2 bad input (malformed JSON,
 * another schema or tool), 3 gnuplot missing or failing, an unwritable
 * directory.
 */
#ifndef FB_PLOT_H
#define FB_PLOT_H

int fb_plot_main(int argc, char **argv);

#endif
