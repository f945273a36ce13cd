/*
 * tevent.h - the Chrome trace event format's metadata events, shared by report/perfetto.c and
 * report/job.c (which therefore need not include each other).
 */
#ifndef AICPROF_REPORT_TEVENT_H
#define AICPROF_REPORT_TEVENT_H

#include <cJSON.h>

/* Appends to events one metadata event ("ph":"M") named what for process pid, thread tid, with
 * args {key: sval}, or {key: nval} when sval is NULL. Never fails (cJSON's allocation aside). */
void perfetto_meta(cJSON *events, const char *what, int pid, int tid, const char *key,
                   const char *sval, double nval);

#endif
