/*
 * funcgroup.h - function-level fusion groups (funcgroup.c): the library functions of a step
 * whose every invocation's forward kernels one generated kernel can replace, and the library
 * forms keyed by a function (eager attention). summary.json's "functions" (docs/summary-format.md).
 */
#ifndef AICPROF_FUNCGROUP_H
#define AICPROF_FUNCGROUP_H

#include "analyzer/model.h"

struct cJSON;

/*
 * The function groups of model m as a new cJSON array the caller deletes (empty when none):
 * one object per library function (a model line's file under site-packages/ or dist-packages/
 * and function) whose invocations in the step are runs of consecutive forward kernels that are
 * all alike and describable (fusegroup_build(), or the RMS norm rule), with the import path and
 * qualified name to replace at run time, the fusion group, and each group input bound as "arg"
 * or "param". Needs ledger_compute() and lines_resolve(). Never fails.
 */
struct cJSON *funcgroups_json(const struct model *m);

/* The import path of a library file ("/x/site-packages/transformers/activations.py" ->
 * "transformers.activations"), a new string, or NULL when the file is under no site-packages or
 * dist-packages, is no .py file, or a component is no Python identifier. */
char *funcgroup_module(const char *file);

#endif
