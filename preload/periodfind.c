/*
 * periodfind.c - the analyzer's step finder (analyzer/period.c) built into the shim, for the
 * step window (stepwin.c).
 *
 * How it works: this file includes analyzer/period.c whole, with its names and its allocators
 * renamed. The finder is the same code the analyzer runs, so the shim and `aicprof analyze`
 * agree on what a step is. Its allocators are stepwin.c's: where the analyzer's exit on
 * exhaustion, these unwind to the step window's caller, which gives up on the window; nothing
 * inside the program's process ever exits. The renamed entry points keep the shim's copy apart
 * from the analyzer's where both are linked into one test binary.
 */
#define xmalloc            stepwin_xmalloc
#define xcalloc            stepwin_xcalloc
#define xrealloc           stepwin_xrealloc
#define period_find        stepwin_period_find
#define period_result_free stepwin_period_result_free

#include "analyzer/period.c"
