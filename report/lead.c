/*
 * lead.c - the lead of the report page, said before the findings: is the GPU busy for most of
 * the step, or idle?
 *
 * From the summary's timeline (one captured step: every kernel, copy and set with start_us and
 * dur_us from the step's first GPU start): busy is the union of the events' intervals (streams
 * that overlap count once), the step is the captured step's time (steps.times_us[timeline.step],
 * at least the last event's end). Both are clamped so that busy never exceeds the step.
 *
 * Busy over half the step: one line says the step is GPU-bound and the findings lead. Else the
 * section leads with "The GPU is idle N% of the step (kernels busy X of Y)", then the causes as
 * the trace shows them: many short kernels with gaps between them (kernels under 10 us, the
 * median gap between consecutive events), long gaps (over 100 us: the host was busy elsewhere:
 * a sync, host work, a wait), and the host syncs and device-to-host copies inside the step (the
 * host-sync and host-copy findings, with their source lines and finding numbers, the GPU idle
 * time the time model gives each). Busy and step come from summary.json's time_model where it
 * has one (analyzer/timemodel.c), so the lead and the overview agree. The remedies carry estimates:
 * CUDA graphs or torch.compile(mode="reduce-overhead") remove the launch gaps (gaps under
 * 100 us, less the ~2 us a graph's node still costs), removing a sync saves its stall, and a
 * larger batch grows the kernels but not the gaps (the busy share at twice the batch), and the
 * findings' kernel savings (their kernel_saved_us, at most the busy time, as fuse says it) are
 * what then shortens the step. A wait
 * between steps (data loading) is outside the step's time as the analyzer measures it (first
 * GPU start to last GPU end), so it cannot show here.
 */
#include "report/lead.h"
#include "lib/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LEAD_SHORT_US  10.0  /* a short kernel */
#define LEAD_LAUNCH_US 100.0 /* a gap launch overhead can explain */
#define LEAD_GRAPH_US  2.0   /* what a CUDA graph's node still costs */

struct ev {
	double s, e;
	const char *name;
	int kernel, node;
};

static int ev_cmp(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void add_time(struct strbuf *o, double us)
{
	if (us >= 1000)
		strbuf_addf(o, "%.2f ms", us / 1000);
	else
		strbuf_addf(o, "%.1f µs", us);
}

/* The host syncs and device-to-host copies found in the step: a list item each. A stall is
 * shown at most as long as the step (step_us): the host cannot block longer than the step it
 * blocks in, whatever the summary says. */
static int host_syncs(const struct rmodel *m, struct strbuf *o, double step_us, double *stall)
{
	int n = 0;
	const cJSON *c;
	*stall = 0;
	cJSON_ArrayForEach(c, m->cands)
	{
		const cJSON *ev = jobj(c, "evidence");
		const char *what = jstr(ev, "what");
		if (!what || (strcmp(what, "host-sync") && strcmp(what, "host-copy")))
			continue;
		double st = fmin(json_clamp(ev, "stall_us", 0, 0, 1e12), step_us);
		if (!strcmp(what, "host-copy") && st <= 0)
			continue; /* an HtoD copy the host does not wait for */
		const cJSON *src = jarr(c, "sources");
		const char *at = src && cJSON_IsString(cJSON_GetArrayItem(src, 0))
		                     ? cJSON_GetArrayItem(src, 0)->valuestring
		                     : NULL;
		strbuf_adds(o, n ? ", " : "");
		strbuf_adds(o, !strcmp(what, "host-sync") ? "a sync" : "a device-to-host copy");
		if (at) {
			strbuf_adds(o, " at <code>");
			strbuf_add_html(o, at);
			strbuf_adds(o, "</code>");
		}
		double num, idle_after = jnumd(c, "time_saved_us_per_step", -1);
		if (jnum(c, "number", &num))
			strbuf_addf(o, " (finding #%.0f: the host blocks ", num);
		else
			strbuf_adds(o, " (the host blocks ");
		add_time(o, st);
		if (idle_after >= 0 && jstr(c, "time_kind")) {
			/* the time model's figure: what the GPU sits idle because of it */
			strbuf_adds(o, ", the GPU then idles ");
			add_time(o, idle_after);
			st = idle_after;
		}
		strbuf_adds(o, ")");
		*stall += st;
		n++;
	}
	return n;
}

/*
 * How the steps were found and what ran outside them: the findings are about one step, so a
 * reader must know whether that step is exact (NVTX), found from the launch sequence (how
 * sure), or the whole run, and how much work (setup, warm-up, compilation, autotuning) was
 * left out of it.
 */
static void steps_paragraph(const struct rmodel *m, struct strbuf *o)
{
	const cJSON *st = jobj(m->root, "steps");
	if (!st)
		return;
	const char *how = jstr(st, "how"), *reason = jstr(st, "reason");
	int count = rmodel_int(jnumd(st, "count", 0));
	double conf = json_clamp(st, "confidence", -1, -1, 1);
	long pre = (long)json_clamp(st, "prelude_ops", -1, -1, 1e12);
	long post = (long)json_clamp(st, "epilogue_ops", -1, -1, 1e12);
	long outside = (long)json_clamp(st, "outside_ops", -1, -1, 1e12);
	strbuf_adds(o, "<p class=\"steps\"><strong>Steps:</strong> ");
	if (how && !strcmp(how, "nvtx"))
		strbuf_addf(o, "%d, from the program's NVTX ranges (exact).", count);
	else if (how && !strcmp(how, "periodic"))
		strbuf_addf(o,
		            "%d, found without NVTX from the repeating launch sequence "
		            "(confidence %.2f).",
		            count, conf < 0 ? 0 : conf);
	else
		strbuf_adds(o, "none found: the whole run is analysed as one step, so setup and "
		               "warm-up are counted as work.");
	if (reason) {
		strbuf_adds(o, " <span class=\"why\">");
		strbuf_add_html(o, reason);
		strbuf_adds(o, "</span>");
	}
	strbuf_adds(o, "</p>\n");
	if (pre > 0 || post > 0 || outside > 0) {
		strbuf_adds(o,
		            "<p class=\"outside\"><strong>Outside the steps</strong> (not in the "
		            "findings): ");
		if (pre >= 0 || post >= 0)
			strbuf_addf(o,
			            "%ld ops before the first step (setup, warm-up, compilation, "
			            "autotuning) and %ld after the last",
			            pre > 0 ? pre : 0, post > 0 ? post : 0);
		else
			strbuf_addf(o, "%ld ops ran in no step", outside);
		strbuf_adds(o, ".</p>\n");
	}
}

void report_lead_section(const struct rmodel *m, struct strbuf *o)
{
	const cJSON *tl = jobj(m->root, "timeline"), *e;
	int n = 0, cap = 0, kernels = 0, shorts = 0, syncs = 0;
	struct ev *ev = NULL;
	cJSON_ArrayForEach(e, jarr(tl, "events"))
	{
		double s = json_clamp(e, "start_us", -1, -1, 1e12);
		double d = json_clamp(e, "dur_us", 0, 0, 1e12);
		const char *kind = jstr(e, "kind");
		if (s < 0)
			continue;
		if (kind && !strcmp(kind, "sync")) {
			syncs++;
			continue;
		}
		if (n == cap)
			ev = xrealloc(ev, sizeof(*ev) * (size_t)(cap = cap ? 2 * cap : 64));
		int k = !kind || !strcmp(kind, "kernel");
		ev[n++] =
		    (struct ev){s, s + d, jstr(e, "name"), k, rmodel_int(jnumd(e, "node", -1))};
		kernels += k;
		shorts += k && d < LEAD_SHORT_US;
	}
	if (!n) {
		free(ev);
		return;
	}
	qsort(ev, (size_t)n, sizeof(*ev), ev_cmp);
	double *gaps = xmalloc(sizeof(double) * (size_t)n);
	int ng = 0, longest = -1;
	double end = ev[0].s, busy = 0, launch = 0, waits = 0;
	for (int i = 0; i < n; i++) {
		double g = ev[i].s - end;
		if (g > 0) {
			gaps[ng++] = g;
			if (g < LEAD_LAUNCH_US)
				launch += fmax(0, g - LEAD_GRAPH_US);
			else
				waits += g;
		}
		if (ev[i].e > end) {
			busy += ev[i].e - fmax(end, ev[i].s);
			end = ev[i].e;
		}
	}
	/* the longest gap and the event after it */
	double lg = 0, run = ev[0].s;
	for (int i = 0; i < n; i++) {
		if (ev[i].s - run > lg)
			lg = ev[i].s - run, longest = i;
		run = fmax(run, ev[i].e);
	}
	double step = fmax(end, 0);
	int si = rmodel_int(jnumd(tl, "step", -1));
	const cJSON *times = jarr(jobj(m->root, "steps"), "times_us");
	const cJSON *t = si >= 0 ? cJSON_GetArrayItem(times, si) : NULL;
	if (t && cJSON_IsNumber(t) && isfinite(t->valuedouble) && t->valuedouble > step &&
	    t->valuedouble < 1e12)
		step = t->valuedouble;
	/* the analyzer's time model, where the summary has one: the same figures as the overview */
	const cJSON *tm = jobj(m->root, "time_model");
	double tb, ts;
	if (jnum(tm, "busy_us", &tb) && jnum(tm, "step_us", &ts) && ts > 0 && tb >= 0 && tb <= ts)
		busy = tb, step = ts;
	busy = fmin(busy, step);
	double idle = step - busy;
	qsort(gaps, (size_t)ng, sizeof(double), dbl_cmp);
	double median_gap = ng ? gaps[ng / 2] : 0;
	free(gaps);
	strbuf_adds(o, "<section id=\"lead\">\n");
	steps_paragraph(m, o);
	if (step <= 0 || busy > 0.5 * step) {
		strbuf_adds(
		    o, "<p class=\"lead\"><strong>The step is GPU-bound:</strong> kernels busy ");
		add_time(o, busy);
		strbuf_adds(o, " of ");
		add_time(o, step);
		strbuf_addf(o, " (%.0f%%). The findings below are where the time goes.</p>\n",
		            step > 0 ? 100 * busy / step : 0);
		strbuf_adds(o, "</section>\n");
		free(ev);
		return;
	}
	strbuf_addf(o,
	            "<p class=\"lead\"><strong>The GPU is idle %.0f%% of the step</strong> "
	            "(kernels busy ",
	            100 * idle / step);
	add_time(o, busy);
	strbuf_adds(o, " of ");
	add_time(o, step);
	strbuf_adds(o, "): the step waits on the host more than on the GPU, so this comes before "
	               "any fusion below.</p>\n<p>What the trace shows:</p>\n<ul>\n");
	strbuf_addf(o, "<li>%d of %d kernels run under %.0f µs, with a median gap of ", shorts,
	            kernels, LEAD_SHORT_US);
	add_time(o, median_gap);
	strbuf_adds(o, " between one event and the next; gaps under 100 µs, which launch overhead "
	               "explains, add up to ");
	add_time(o, fmin(launch, idle));
	strbuf_adds(o, ".</li>\n");
	if (waits > 0 && longest >= 0) {
		strbuf_adds(o,
		            "<li>Gaps over 100 µs (the host busy elsewhere: a sync, host work, a "
		            "wait) add up to ");
		add_time(o, fmin(waits, idle));
		strbuf_adds(o, "; the longest, ");
		add_time(o, lg);
		if (longest > 0) {
			strbuf_adds(o, ", after <code>");
			strbuf_add_html(o,
			                ev[longest - 1].name ? ev[longest - 1].name : "an event");
			strbuf_adds(o, "</code>");
		}
		strbuf_adds(o, ", before <code>");
		strbuf_add_html(o, ev[longest].name ? ev[longest].name : "an event");
		strbuf_adds(o, "</code>");
		int ni = ev[longest].node >= 0 ? rmodel_find(m, ev[longest].node) : -1;
		if (ni >= 0 && m->nodes[ni].source) {
			strbuf_adds(o, " (launched at <code>");
			strbuf_add_html(o, m->nodes[ni].source);
			strbuf_adds(o, "</code>: the host work before that line)");
		}
		strbuf_adds(o, ".</li>\n");
	}
	struct strbuf hs = STRBUF_INIT;
	double stall = 0;
	int nh = host_syncs(m, &hs, step, &stall);
	if (nh || syncs) {
		strbuf_addf(o, "<li>The host waits for the GPU inside the step: ");
		if (nh)
			strbuf_add(o, hs.buf, hs.len);
		else
			strbuf_addf(o, "%d sync%s in the timeline", syncs, syncs == 1 ? "" : "s");
		strbuf_adds(o, ".</li>\n");
	}
	strbuf_adds(o, "</ul>\n<p>Remedies, with what each could save of the step:</p>\n<ul>\n");
	double g = fmin(launch, idle);
	strbuf_adds(o, "<li>CUDA graphs, or <code>torch.compile(mode=\"reduce-overhead\")</code>: "
	               "one launch for the whole step removes the launch gaps, up to ");
	add_time(o, g);
	strbuf_addf(o, " (%.0f%% of the step).</li>\n", 100 * g / step);
	if (nh) {
		strbuf_adds(
		    o,
		    "<li>Remove or defer the host syncs (<code>.item()</code>, "
		    "<code>.cpu()</code>, "
		    "printing a tensor) at the lines above, or move them out of the step: up to ");
		add_time(o, fmin(stall, idle));
		strbuf_addf(o,
		            " of GPU idle time (%.1f%% of the step), and CUDA graphs need them "
		            "gone.</li>\n",
		            100 * fmin(stall, idle) / step);
	}
	/* twice the batch: each kernel about twice as long, the gaps the same */
	double busy2 = 2 * busy, share2 = busy2 / (busy2 + idle);
	strbuf_addf(o,
	            "<li>A larger batch: kernels grow with it, the gaps do not; at twice the "
	            "batch the GPU would be busy about %.0f%% of the step (now %.0f%%).</li>\n",
	            100 * share2, 100 * busy / step);
	strbuf_adds(
	    o, "</ul>\n<p>Until the gaps are gone, a faster kernel mostly waits longer for the "
	       "host's next launch: each finding below counts only the part of its saving "
	       "on the step's critical path (the rest is shown as kernel time).");
	/* what the findings take off the GPU's busy time: fuse's host-bound note says the same */
	double gpu = summary_gpu_saved(m->root, busy, NULL, NULL);
	if (gpu > 0) {
		strbuf_adds(o, " Of the GPU's own ");
		add_time(o, busy);
		strbuf_adds(o, " a step, the findings take off ");
		add_time(o, gpu);
		strbuf_addf(o,
		            " (%.0f%%): that part shows end to end where the GPU bounds the step, "
		            "at a larger batch or sequence with the same launches.",
		            100 * gpu / busy);
	}
	strbuf_adds(o, "</p>\n</section>\n");
	strbuf_release(&hs);
	free(ev);
}
