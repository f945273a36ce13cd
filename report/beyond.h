/*
 * beyond.h - the report's section on work beyond fusion: dead work, work that never changes,
 * and the memory plan with its live-bytes plot (report/beyond.c).
 */
#ifndef AICPROF_REPORT_BEYOND_H
#define AICPROF_REPORT_BEYOND_H

#include "lib/util.h"
#include "report/model.h"

/*
 * Appends the section's body (HTML, every string from the summary escaped) to o: a table of the
 * `dead` candidates, one of the `invariant` candidates, and the `memory` object's figures, its
 * curve as an inline SVG (held and ideal live bytes per node position) and the values alive at
 * the ideal peak. Missing parts are said to be missing. Never fails.
 */
void report_beyond_section(const struct rmodel *m, struct strbuf *o);

#endif
