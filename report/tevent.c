/*
 * tevent.c - pieces of the Chrome trace event format that perfetto.c (one run) and job.c (one
 * process per rank) both write (tevent.h). Its own file so that neither includes the other.
 */
#include "report/tevent.h"

void perfetto_meta(cJSON *events, const char *what, int pid, int tid, const char *key,
                   const char *sval, double nval)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "name", what);
	cJSON_AddStringToObject(e, "ph", "M");
	cJSON_AddNumberToObject(e, "pid", pid);
	cJSON_AddNumberToObject(e, "tid", tid);
	cJSON *args = cJSON_AddObjectToObject(e, "args");
	if (sval)
		cJSON_AddStringToObject(args, key, sval);
	else
		cJSON_AddNumberToObject(args, key, nval);
	cJSON_AddItemToArray(events, e);
}
