/*
 * job.c - the report's job section and per-rank Perfetto processes, from summary.json's "job"
 * object only (analyzer/jobmerge.c writes it; docs/summary-format.md, "The job view").
 *
 * The section answers, in order: which rank is slow and why (verdict, straggler table sorted by
 * compute per step, the slowest rank's extra kernels), how much communication is exposed
 * (collectives table, an overlap chart with one bar per step: overlapped time, then exposed
 * time of which the part spent waiting for a late rank is drawn apart), what ran where (one
 * lane per rank and stream, each rank's representative step from its own start) and which
 * reductions could start earlier (early-start table). Charts are inline SVG with presentation
 * attributes only (the page's Content Security Policy allows no inline style). Tables list at
 * most JOB_ROWS ranks (the slowest first); the rest are counted.
 */
#include "report/job.h"
#include "report/tevent.h"
#include "report/plot.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H(o, s)   strbuf_add_html((o), (s))
#define JOB_ROWS  16
#define C_OVER    "#59a14f"
#define C_EXPOSED "#e15759"
#define C_WAIT    "#f28e2b"

int report_has_job(const struct rmodel *m)
{
	return cJSON_IsObject(jobj(m->root, "job"));
}

static void us(struct strbuf *o, double v)
{
	if (v >= 1000)
		strbuf_addf(o, "%.2f ms", v / 1000);
	else
		strbuf_addf(o, "%.1f µs", v);
}

static void td_us(struct strbuf *o, const cJSON *x, const char *k)
{
	double v;
	strbuf_adds(o, "<td class=\"num\">");
	if (jnum(x, k, &v))
		us(o, v);
	else
		strbuf_adds(o, "<span class=\"unk\">unknown</span>");
	strbuf_adds(o, "</td>");
}

static void td_rank(struct strbuf *o, const cJSON *x, const char *k)
{
	double v;
	if (jnum(x, k, &v))
		strbuf_addf(o, "<td class=\"num\">%.0f</td>", v);
	else
		strbuf_adds(o, "<td><span class=\"unk\">none</span></td>");
}

static int by_compute_desc(const void *a, const void *b)
{
	double x = jnumd(*(const cJSON *const *)a, "compute_us", 0);
	double y = jnumd(*(const cJSON *const *)b, "compute_us", 0);
	return (x < y) - (x > y);
}

static void verdict(const cJSON *job, struct strbuf *o)
{
	const cJSON *sl = jobj(job, "slowest");
	double n = jnumd(job, "ranks", 0), v;
	strbuf_addf(o, "<p>%.0f ranks", n);
	const char *clock = jstr(jobj(job, "clock"), "method");
	if (clock) {
		strbuf_adds(o, ", clocks ");
		H(o, !strcmp(clock, "shared-host")              ? "shared on one host"
		     : !strcmp(clock, "aligned-by-collectives") ? "aligned by matching collectives"
		                                                : "not aligned");
	}
	strbuf_addf(o, "; %.0f collectives a step, %.0f of %.0f matched on every rank.</p>\n",
	            jnumd(job, "collectives_per_step", 0), jnumd(job, "collectives_matched", 0),
	            jnumd(job, "collectives_seen", 0));
	if (sl && jstr(sl, "why")) {
		strbuf_adds(o, "<p class=\"note\"><b>Slowest rank</b>: ");
		H(o, jstr(sl, "why"));
		strbuf_adds(o, ".</p>\n");
	}
	if (jnum(job, "exposed_us_per_step", &v)) {
		strbuf_adds(o, "<p class=\"note\"><b>Communication</b>: ");
		us(o, v);
		strbuf_adds(o, " per step with no compute beside it (median rank), ");
		us(o, jnumd(job, "overlapped_us_per_step", 0));
		strbuf_adds(o, " hidden under compute. The <code>comm-overlap</code> candidates in "
		               "the fusion list say what to change.</p>\n");
	}
}

static void straggler_table(const cJSON *job, struct strbuf *o)
{
	const cJSON *pr = jarr(job, "per_rank");
	int n = cJSON_GetArraySize(pr), k = 0;
	if (n <= 0) {
		strbuf_adds(o, "<p>No per-rank figures in this summary.</p>\n");
		return;
	}
	const cJSON **rows = xcalloc((size_t)n, sizeof(*rows));
	const cJSON *x;
	cJSON_ArrayForEach(x, pr) rows[k++] = x;
	qsort(rows, (size_t)n, sizeof(*rows), by_compute_desc);
	strbuf_adds(o,
	            "<h3>Ranks, slowest first</h3>\n<table class=\"job\" id=\"job-ranks\"><thead>"
	            "<tr><th>rank</th><th>host</th><th>step (median)</th><th>compute/step</th>"
	            "<th>collectives/step</th><th>waiting</th><th>exposed</th>"
	            "<th>overlapped</th><th>trace</th></tr></thead><tbody>\n");
	for (int i = 0; i < n && i < JOB_ROWS; i++) {
		x = rows[i];
		strbuf_adds(o, "<tr>");
		td_rank(o, x, "rank");
		strbuf_adds(o, "<td>");
		H(o, jstr(x, "host") ? jstr(x, "host") : "");
		strbuf_adds(o, "</td>");
		td_us(o, x, "step_median_us");
		td_us(o, x, "compute_us");
		td_us(o, x, "collective_us");
		td_us(o, x, "wait_us");
		td_us(o, x, "exposed_us");
		td_us(o, x, "overlapped_us");
		strbuf_adds(o, cJSON_IsTrue(cJSON_GetObjectItem(x, "truncated"))
		                   ? "<td>cut short</td>"
		                   : "<td>whole</td>");
		strbuf_adds(o, "</tr>\n");
	}
	strbuf_adds(o, "</tbody></table>\n");
	if (n > JOB_ROWS)
		strbuf_addf(o,
		            "<p>%d more ranks in summary.json (<code>job.per_rank</code>).</p>\n",
		            n - JOB_ROWS);
	free(rows);

	const cJSON *ek = jarr(jobj(job, "slowest"), "extra_kernels");
	if (cJSON_GetArraySize(ek) > 0) {
		strbuf_adds(o,
		            "<h3>The slowest rank's extra kernels (against the median rank)</h3>\n"
		            "<table class=\"job\" id=\"job-extra\"><thead><tr><th>kernel</th>"
		            "<th>count/step</th><th>median rank's</th><th>time/step</th>"
		            "<th>median rank's</th><th>extra</th></tr></thead><tbody>\n");
		cJSON_ArrayForEach(x, ek)
		{
			strbuf_adds(o, "<tr><td class=\"name\">");
			H(o, jstr(x, "name") ? jstr(x, "name") : "");
			strbuf_addf(o,
			            "</td><td class=\"num\">%.0f</td><td class=\"num\">%.0f</td>",
			            jnumd(x, "count", 0), jnumd(x, "median_rank_count", 0));
			td_us(o, x, "us");
			td_us(o, x, "median_rank_us");
			td_us(o, x, "extra_us");
			strbuf_adds(o, "</tr>\n");
		}
		strbuf_adds(o, "</tbody></table>\n");
	}
}

static void collectives_table(const cJSON *job, struct strbuf *o)
{
	const cJSON *rows = jarr(job, "collectives"), *x;
	strbuf_adds(o, "<h3>Collectives of a step</h3>\n");
	if (cJSON_GetArraySize(rows) <= 0) {
		strbuf_adds(o, "<p>No collectives were matched.</p>\n");
		return;
	}
	strbuf_adds(o, "<table class=\"job\" id=\"job-colls\"><thead><tr><th>#</th><th>op</th>"
	               "<th>dtype</th><th>bytes</th><th>ranks</th><th>matched</th>"
	               "<th>transfer</th><th>bus bandwidth</th><th>longest wait</th>"
	               "<th>exposed</th><th>overlapped</th><th>last to arrive</th></tr></thead>"
	               "<tbody>\n");
	char b[32];
	cJSON_ArrayForEach(x, rows)
	{
		strbuf_addf(o, "<tr><td class=\"num\">%.0f</td><td>", jnumd(x, "pos", 0));
		H(o, jstr(x, "op") ? jstr(x, "op") : "");
		strbuf_adds(o, "</td><td>");
		H(o, jstr(x, "dtype") ? jstr(x, "dtype") : "");
		strbuf_addf(o, "</td><td class=\"num\">%s</td><td class=\"num\">%.0f</td>",
		            fmt_bytes(jnumd(x, "bytes", 0), b), jnumd(x, "nranks", 0));
		strbuf_addf(o, "<td class=\"num\">%.0f/%.0f</td>", jnumd(x, "matched", 0),
		            jnumd(x, "rounds", 0));
		td_us(o, x, "duration_us");
		double bw;
		if (jnum(x, "busbw_gbs", &bw))
			strbuf_addf(o, "<td class=\"num\">%.1f GB/s</td>", bw);
		else
			strbuf_adds(o, "<td><span class=\"unk\">unknown</span></td>");
		td_us(o, x, "wait_us");
		td_us(o, x, "exposed_us");
		td_us(o, x, "overlapped_us");
		td_rank(o, x, "last_to_arrive");
		strbuf_adds(o, "</tr>\n");
	}
	strbuf_adds(o,
	            "</tbody></table>\n<p>Transfer: the fastest rank's kernel time (the last "
	            "rank to arrive waits for nobody); bus bandwidth as NCCL's tests compute it. "
	            "Exposed and overlapped: the mean over ranks, the median over steps.</p>\n");
}

/* one bar per step: overlapped, then exposed (its waiting part apart) */
static void overlap_chart(const cJSON *job, struct strbuf *o)
{
	const cJSON *st = jarr(job, "overlap_steps"), *x;
	int n = cJSON_GetArraySize(st);
	if (n <= 0)
		return;
	double mx = 0;
	cJSON_ArrayForEach(x, st) mx =
	    fmax(mx, jnumd(x, "overlapped_us", 0) + jnumd(x, "exposed_us", 0));
	if (mx <= 0)
		return;
	const double W = 1000, L = 70, R = 20, T = 24, bar = 18, gap = 6;
	double Ht = T + n * (bar + gap) + 20, scale = (W - L - R) / mx;
	strbuf_addf(o,
	            "<h3>Overlap per step</h3>\n<svg class=\"plot joboverlap\" viewBox=\"0 0 %.0f "
	            "%.0f\" role=\"img\" aria-label=\"overlap per step\" "
	            "xmlns=\"http://www.w3.org/2000/svg\">\n",
	            W, Ht);
	strbuf_addf(o,
	            "<rect x=\"%.0f\" y=\"4\" width=\"12\" height=\"12\" fill=\"%s\"/><text "
	            "class=\"tick\" x=\"%.0f\" y=\"14\">overlapped</text><rect x=\"%.0f\" y=\"4\" "
	            "width=\"12\" height=\"12\" fill=\"%s\"/><text class=\"tick\" x=\"%.0f\" "
	            "y=\"14\">exposed</text><rect x=\"%.0f\" y=\"4\" width=\"12\" height=\"12\" "
	            "fill=\"%s\"/><text class=\"tick\" x=\"%.0f\" y=\"14\">waiting for a late "
	            "rank</text>\n",
	            L, C_OVER, L + 16, L + 110, C_EXPOSED, L + 126, L + 200, C_WAIT, L + 216);
	int i = 0;
	cJSON_ArrayForEach(x, st)
	{
		double ov = jnumd(x, "overlapped_us", 0), ex = jnumd(x, "exposed_us", 0);
		double wt = fmin(jnumd(x, "wait_us", 0), ex), y = T + i * (bar + gap);
		strbuf_addf(o,
		            "<text class=\"tick\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">step "
		            "%.0f</text>\n",
		            L - 6, y + bar - 5, jnumd(x, "round", i));
		strbuf_addf(o,
		            "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
		            "fill=\"%s\"><title>overlapped ",
		            L, y, ov * scale, bar, C_OVER);
		us(o, ov);
		strbuf_addf(o,
		            "</title></rect>\n<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
		            "height=\"%.0f\" fill=\"%s\"><title>exposed ",
		            L + ov * scale, y, (ex - wt) * scale, bar, C_EXPOSED);
		us(o, ex - wt);
		strbuf_addf(o,
		            "</title></rect>\n<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
		            "height=\"%.0f\" fill=\"%s\"><title>waiting ",
		            L + (ov + ex - wt) * scale, y, wt * scale, bar, C_WAIT);
		us(o, wt);
		strbuf_adds(o, "</title></rect>\n");
		i++;
	}
	strbuf_addf(o, "<text class=\"tick\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">", W - R,
	            Ht - 4);
	us(o, mx);
	strbuf_adds(o, "</text>\n</svg>\n<p>Medians over ranks of each step's collective time. "
	               "Waiting (drawn apart) is the part of the exposed time a rank spent for a "
	               "late rank: shorten the straggler's step, not the communication.</p>\n");
}

/* one lane per rank and stream: each rank's representative step from its own start */
static void lanes_chart(const cJSON *job, struct strbuf *o)
{
	const cJSON *lanes = jarr(job, "lanes"), *ln, *ev;
	int nl = 0;
	double t1 = 0;
	cJSON_ArrayForEach(ln, lanes)
	{
		int streams[16], ns = 0;
		cJSON_ArrayForEach(ev, jarr(ln, "events"))
		{
			int s = (int)json_clamp(ev, "stream", 0, -1e9, 1e9), k = 0;
			for (int i = 0; i < ns; i++)
				k |= streams[i] == s;
			if (!k && ns < 16)
				streams[ns++] = s;
			t1 = fmax(t1, jnumd(ev, "start_us", 0) + jnumd(ev, "dur_us", 0));
		}
		nl += ns;
	}
	if (!nl || t1 <= 0)
		return;
	const double W = 1000, L = 110, R = 12, T = 6, lane = 22;
	double Ht = T + nl * lane + 22, scale = (W - L - R) / t1;
	strbuf_addf(o,
	            "<h3>Ranks side by side (each rank's representative step)</h3>\n<svg "
	            "class=\"plot timeline joblanes\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
	            "aria-label=\"per-rank lanes\" xmlns=\"http://www.w3.org/2000/svg\">\n",
	            W, Ht);
	int li = 0;
	cJSON_ArrayForEach(ln, lanes)
	{
		int streams[16], ns = 0;
		cJSON_ArrayForEach(ev, jarr(ln, "events"))
		{
			int s = (int)json_clamp(ev, "stream", 0, -1e9, 1e9), k = 0;
			for (int i = 0; i < ns; i++)
				k |= streams[i] == s;
			if (!k && ns < 16)
				streams[ns++] = s;
		}
		for (int i = 0; i < ns; i++) {
			double y = T + (li + i) * lane;
			strbuf_addf(o,
			            "<rect class=\"lane%s\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
			            "height=\"%.0f\"/><text class=\"tick\" x=\"%.0f\" y=\"%.0f\" "
			            "text-anchor=\"end\">rank %.0f · s%d</text>\n",
			            (li + i) % 2 ? " odd" : "", L, y, W - L - R, lane, L - 6,
			            y + lane / 2 + 4, jnumd(ln, "rank", -1), streams[i]);
		}
		cJSON_ArrayForEach(ev, jarr(ln, "events"))
		{
			int s = (int)json_clamp(ev, "stream", 0, -1e9, 1e9), k = 0;
			for (int i = 0; i < ns; i++)
				if (streams[i] == s)
					k = i;
			double x = L + jnumd(ev, "start_us", 0) * scale;
			double w = fmax(jnumd(ev, "dur_us", 0) * scale, 1.0);
			double y = T + (li + k) * lane;
			strbuf_addf(o,
			            "<rect class=\"ev\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
			            "height=\"%.0f\" fill=\"%s\"><title>",
			            x, y + 3, w, lane - 6, family_colour(jstr(ev, "family")));
			H(o, jstr(ev, "name") ? jstr(ev, "name") : "kernel");
			strbuf_adds(o, "\nat ");
			us(o, jnumd(ev, "start_us", 0));
			strbuf_adds(o, ", ");
			us(o, jnumd(ev, "dur_us", 0));
			strbuf_adds(o, "</title></rect>\n");
		}
		li += ns;
	}
	strbuf_addf(o, "<text class=\"tick\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">", W - R,
	            Ht - 4);
	us(o, t1);
	strbuf_adds(o, "</text>\n</svg>\n");
}

static void early_table(const cJSON *job, struct strbuf *o)
{
	const cJSON *rows = jarr(job, "early_start"), *x;
	if (cJSON_GetArraySize(rows) <= 0)
		return;
	strbuf_adds(o, "<h3>Could the reductions start earlier?</h3>\n<table class=\"job\" "
	               "id=\"job-early\"><thead><tr><th>#</th><th>collective</th><th>last input "
	               "written by</th><th>source</th><th>input ready</th><th>started</th>"
	               "<th>slack</th><th>previous collective ended</th></tr></thead><tbody>\n");
	cJSON_ArrayForEach(x, rows)
	{
		strbuf_addf(o, "<tr><td class=\"num\">%.0f</td><td class=\"name\">",
		            jnumd(x, "pos", 0));
		H(o, jstr(x, "name") ? jstr(x, "name") : "");
		strbuf_adds(o, "</td><td class=\"name\">");
		H(o, jstr(x, "writer_name") ? jstr(x, "writer_name") : "(written before the step)");
		strbuf_adds(o, "</td><td>");
		H(o, jstr(x, "writer_source") ? jstr(x, "writer_source") : "");
		strbuf_adds(o, "</td>");
		td_us(o, x, "writer_end_us");
		td_us(o, x, "start_us");
		td_us(o, x, "slack_us");
		if (jnum(x, "prev_end_us", &(double){0}))
			td_us(o, x, "prev_end_us");
		else
			strbuf_adds(o, "<td>none before it</td>");
		strbuf_adds(o, "</tr>\n");
	}
	strbuf_adds(o, "</tbody></table>\n<p>Times from the lowest rank's step start. Slack: how "
	               "long the collective's input was ready before it started; when the previous "
	               "collective on its stream ended later than the input was ready, the buckets "
	               "queue behind each other: smaller buckets (DDP <code>bucket_cap_mb</code>) "
	               "start sooner.</p>\n");
}

void report_job_section(const struct rmodel *m, struct strbuf *o)
{
	const cJSON *job = jobj(m->root, "job");
	if (!job) {
		strbuf_adds(o, "<p>This summary is of one process; there is no job view.</p>\n");
		return;
	}
	verdict(job, o);
	straggler_table(job, o);
	collectives_table(job, o);
	overlap_chart(job, o);
	early_table(job, o);
	lanes_chart(job, o);
}

void report_job_perfetto(const struct rmodel *m, cJSON *events)
{
	const cJSON *ln, *ev;
	int idx = 0;
	cJSON_ArrayForEach(ln, jarr(jobj(m->root, "job"), "lanes"))
	{
		double r;
		int rank = jnum(ln, "rank", &r) && r >= 0 && r < 1e6 ? (int)r : 100000 + idx;
		int pid = JOB_PID_BASE + rank;
		char name[64];
		snprintf(name, sizeof(name), "rank %d (one step)", rank);
		perfetto_meta(events, "process_name", pid, 0, "name", name, 0);
		perfetto_meta(events, "process_sort_index", pid, 0, "sort_index", NULL, rank + 1);
		int streams[16], ns = 0;
		cJSON_ArrayForEach(ev, jarr(ln, "events"))
		{
			int s = (int)json_clamp(ev, "stream", 0, -1e9, 1e9), k = 0;
			for (int i = 0; i < ns; i++)
				k |= streams[i] == s;
			if (!k && ns < 16) {
				streams[ns++] = s;
				snprintf(name, sizeof(name), "stream %d", s);
				perfetto_meta(events, "thread_name", pid, s, "name", name, 0);
			}
			cJSON *e = cJSON_CreateObject();
			const char *nm = jstr(ev, "name");
			cJSON_AddStringToObject(e, "name", nm ? nm : "kernel");
			cJSON_AddStringToObject(e, "cat",
			                        jstr(ev, "family") ? jstr(ev, "family") : "kernel");
			cJSON_AddStringToObject(e, "ph", "X");
			cJSON_AddNumberToObject(e, "ts", jnumd(ev, "start_us", 0));
			cJSON_AddNumberToObject(e, "dur", fmax(jnumd(ev, "dur_us", 0), 0));
			cJSON_AddNumberToObject(e, "pid", pid);
			cJSON_AddNumberToObject(e, "tid", s);
			cJSON_AddItemToArray(events, e);
		}
		idx++;
	}
}
