/*
 * report.h - the report stage: from DIR/summary.json (docs/summary-format.md), the analyzer's
 * model of a run, write into DIR
 *
 *   report.html          the self-contained report (docs/report.md says how to read it)
 *   graph.dot            the step graph in Graphviz's language, candidates as clusters
 *   graph.svg            the same graph laid out by Graphviz's dot
 *   trace.perfetto.json  one step's timeline in the Chrome trace event format
 *
 * The report reads only summary.json (and, where it can, the user's source files for the text
 * of source lines); never the trace.
 */
#ifndef AICPROF_REPORT_H
#define AICPROF_REPORT_H

/*
 * Reads dir/summary.json and writes the four files into dir, each whole or not at all
 * (write_file_atomic). Fields absent from the summary or of the wrong type are shown as
 * unknown, never a failure. Returns 0, or -1 after error() naming the file at fault: the
 * summary when it cannot be read or parsed (with the line where parsing stopped), or the
 * output that could not be written or drawn. Files already written stay written.
 */
int report_write_all(const char *dir);

#endif
