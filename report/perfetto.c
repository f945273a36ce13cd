/*
 * perfetto.c - Chrome trace event export of summary.timeline.
 *
 * The document is built as a cJSON tree and printed by cJSON, so every name from the trace is
 * quoted and escaped by the same code that parses it back. Streams become threads of one
 * process: pid is the traced program's pid where summary.traces[0] gives it (else 1), tid the
 * stream number (0 when unknown). Each stream's thread is named once, in the order streams
 * first appear, and sorted by that order (thread_sort_index). Zero-length events (a sync) keep
 * dur 0, which both viewers draw as a thin slice. A job's summary adds one process per rank
 * (report/job.c), each rank's representative step from its own start.
 */
#include "report/perfetto.h"
#include "report/job.h"
#include "report/tevent.h"

#include <string.h>

void perfetto_write(const struct rmodel *m, struct strbuf *out)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON *events = cJSON_AddArrayToObject(doc, "traceEvents");
	const cJSON *tr0 = cJSON_GetArrayItem(jarr(m->root, "traces"), 0);
	double d;
	int pid = jnum(tr0, "pid", &d) && d > 0 ? (int)d : 1;
	const char *prog = jstr(m->root, "program");
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s (one step)", prog ? prog : "program");
	perfetto_meta(events, "process_name", pid, 0, "name", sb.buf, 0);

	const cJSON *tl = jobj(m->root, "timeline");
	const cJSON *evs = jarr(tl, "events");
	int streams[256], nr_streams = 0;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, evs)
	{
		double start, dur;
		if (!jnum(ev, "start_us", &start))
			continue;
		if (!jnum(ev, "dur_us", &dur) || dur < 0)
			dur = 0;
		int tid = jnum(ev, "stream", &d) ? (int)d : 0;
		int known = 0;
		for (int i = 0; i < nr_streams; i++)
			known |= streams[i] == tid;
		if (!known && nr_streams < (int)(sizeof(streams) / sizeof(streams[0]))) {
			streams[nr_streams] = tid;
			strbuf_reset(&sb);
			strbuf_addf(&sb, "stream %d", tid);
			perfetto_meta(events, "thread_name", pid, tid, "name", sb.buf, 0);
			perfetto_meta(events, "thread_sort_index", pid, tid, "sort_index", NULL,
			              nr_streams);
			nr_streams++;
		}
		const char *kind = jstr(ev, "kind");
		int node = jnum(ev, "node", &d) ? rmodel_find(m, (int)d) : -1;
		const struct rnode *n = node >= 0 ? &m->nodes[node] : NULL;
		const char *name = jstr(ev, "name");
		if (!name)
			name = n ? n->name : kind ? kind : "event";
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", name);
		cJSON_AddStringToObject(e, "cat", kind ? kind : "kernel");
		cJSON_AddStringToObject(e, "ph", "X");
		cJSON_AddNumberToObject(e, "ts", start);
		cJSON_AddNumberToObject(e, "dur", dur);
		cJSON_AddNumberToObject(e, "pid", pid);
		cJSON_AddNumberToObject(e, "tid", tid);
		cJSON *args = cJSON_AddObjectToObject(e, "args");
		if (n) {
			cJSON_AddNumberToObject(args, "node", n->id);
			if (n->full_name)
				cJSON_AddStringToObject(args, "full_name", n->full_name);
			if (n->family)
				cJSON_AddStringToObject(args, "family", n->family);
			if (n->bytes_read >= 0)
				cJSON_AddNumberToObject(args, "bytes_read", n->bytes_read);
			if (n->bytes_written >= 0)
				cJSON_AddNumberToObject(args, "bytes_written", n->bytes_written);
			if (n->source)
				cJSON_AddStringToObject(args, "source", n->source);
			if (n->cand >= 0)
				cJSON_AddNumberToObject(args, "candidate", m->cand_rank[n->cand]);
		}
		cJSON_AddItemToArray(events, e);
	}
	report_job_perfetto(m, events); /* one process per rank of a job; nothing otherwise */
	cJSON_AddStringToObject(doc, "displayTimeUnit", "ns");
	cJSON *meta = cJSON_AddObjectToObject(doc, "metadata");
	cJSON_AddStringToObject(meta, "source", "aicprof summary.timeline");
	if (jnum(tl, "step", &d))
		cJSON_AddNumberToObject(meta, "step", d);
	if (jnum(tl, "t0_ns", &d))
		cJSON_AddNumberToObject(meta, "t0_ns", d);
	char *text = cJSON_PrintUnformatted(doc);
	if (!text)
		die("out of memory printing the trace export");
	strbuf_adds(out, text);
	strbuf_adds(out, "\n");
	cJSON_free(text);
	cJSON_Delete(doc);
	strbuf_release(&sb);
}
