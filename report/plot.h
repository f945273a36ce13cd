/*
 * plot.h - the report's hand-drawn SVG plots: the roofline of the step's kernels and the
 * timeline of one step per stream. Both are inline SVG written into a strbuf, every text from
 * the trace escaped with strbuf_add_html, with <title> elements as hover tooltips.
 */
#ifndef AICPROF_REPORT_PLOT_H
#define AICPROF_REPORT_PLOT_H

#include "report/model.h"

/* The colour of a kernel family (elementwise, gemm, ...); a grey for NULL or unknown ones. */
const char *family_colour(const char *family);

/*
 * Appends a log-log roofline (arithmetic intensity in FLOP/byte against achieved FLOP/s) of
 * the nodes with known FLOPs, bytes and time, with the bandwidth roof from
 * device.peak_bw_gbs and one compute ceiling per entry of device.peak_tflops. Returns the
 * number of nodes plotted; when it is 0 nothing is appended.
 */
int plot_roofline(const struct rmodel *m, struct strbuf *out);

/*
 * Appends the timeline of summary.timeline: one lane per stream, kernels coloured by family,
 * copies and sets in their own colours, synchronisations as red markers. Returns the number of
 * events drawn; when it is 0 nothing is appended.
 */
int plot_timeline(const struct rmodel *m, struct strbuf *out);

#endif
