/*
 * html.c - writes report.html from the report's model (see html.h).
 *
 * The page is built in pieces: each section is appended to its own buffer in the order of the
 * page, and fields found missing along the way are collected in the model; the note listing
 * them is written into the overview when all sections are done, so it is complete.
 *
 * Escaping rule: every string that comes from summary.json goes through strbuf_add_html()
 * (text and attribute values, always double-quoted) or, in the JSON data block the script
 * reads, strbuf_add_json() (which writes <, > and & as \u escapes, so the block cannot be
 * closed early). Nothing from the summary is ever written into a URL, an event handler, the
 * style sheet or the script. The Content-Security-Policy names the SHA-256 of the one style
 * element and the one script element, so even a name that escaped escaping could not run.
 *
 * Unknown values are written as an "unknown" span, and sort as the smallest in tables (their
 * data-v is empty).
 */
#include "report/html.h"
#include "lib/hmap.h"
#include "report/assets.h"
#include "report/beyond.h"
#include "report/findings.h"
#include "report/job.h"
#include "report/lead.h"
#include "report/plot.h"
#include "report/sha256.h"
#include "report/source.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HTML_FULL_CANDS 8 /* candidates shown in full; the rest in a table */

struct page {
	struct rmodel *m;
	struct strbuf *o;
	struct srccache src;
	double peak_bw; /* GB/s, or -1 */
};

#define H(o, s) strbuf_add_html((o), (s))

static void unknown(struct strbuf *o)
{
	strbuf_adds(o, "<span class=\"unk\">unknown</span>");
}

static void add_us(struct strbuf *o, double us)
{
	if (us < 0)
		unknown(o);
	else if (us >= 10000)
		strbuf_addf(o, "%.1f ms", us / 1000);
	else if (us >= 1000)
		strbuf_addf(o, "%.2f ms", us / 1000);
	else if (us >= 100)
		strbuf_addf(o, "%.0f µs", us);
	else
		strbuf_addf(o, "%.1f µs", us);
}

static void add_bytes(struct strbuf *o, double b)
{
	char buf[32];
	if (b < 0)
		unknown(o);
	else
		strbuf_adds(o, fmt_bytes(b, buf));
}

static void add_pct(struct strbuf *o, double part, double whole)
{
	if (part < 0 || whole <= 0)
		unknown(o);
	else
		strbuf_addf(o, "%.1f%%", 100 * part / whole);
}

/* A numeric table cell: data-v holds the value for sorting (empty when unknown). */
static void td_us(struct strbuf *o, double us)
{
	if (us < 0)
		strbuf_adds(o, "<td class=\"n\" data-v=\"\">");
	else
		strbuf_addf(o, "<td class=\"n\" data-v=\"%.6g\">", us);
	add_us(o, us);
	strbuf_adds(o, "</td>");
}

static void td_bytes(struct strbuf *o, double b)
{
	if (b < 0)
		strbuf_adds(o, "<td class=\"n\" data-v=\"\">");
	else
		strbuf_addf(o, "<td class=\"n\" data-v=\"%.17g\">", b);
	add_bytes(o, b);
	strbuf_adds(o, "</td>");
}

static void td_num(struct strbuf *o, double v, const char *fmt)
{
	if (v < 0) {
		strbuf_adds(o, "<td class=\"n\" data-v=\"\">");
		unknown(o);
	} else {
		strbuf_addf(o, "<td class=\"n\" data-v=\"%.6g\">", v);
		strbuf_addf(o, fmt, v);
	}
	strbuf_adds(o, "</td>");
}

static void td_text(struct strbuf *o, const char *s, const char *cls)
{
	if (cls)
		strbuf_addf(o, "<td class=\"%s\">", cls);
	else
		strbuf_adds(o, "<td>");
	if (s)
		H(o, s);
	else
		unknown(o);
	strbuf_adds(o, "</td>");
}

static void swatch(struct strbuf *o, const char *colour)
{
	strbuf_addf(o,
	            "<svg class=\"sw\" viewBox=\"0 0 10 10\" aria-hidden=\"true\"><rect "
	            "width=\"10\" height=\"10\" rx=\"2\" fill=\"%s\"/></svg>",
	            colour);
}

/* A kernel's name in code style, its full name as the hover title. */
static void add_kernel(struct strbuf *o, const struct rnode *n)
{
	strbuf_adds(o, "<span class=\"name\"");
	if (n->full_name) {
		strbuf_adds(o, " title=\"");
		H(o, n->full_name);
		strbuf_adds(o, "\"");
	}
	strbuf_adds(o, ">");
	H(o, n->name);
	strbuf_adds(o, "</span>");
}

/* The text of the source line loc ("file:line"), from a node's site or the file; or NULL. */
static const char *source_text(struct page *pg, const char *loc)
{
	if (!loc)
		return NULL;
	for (int i = 0; i < pg->m->nr_nodes; i++) {
		const struct rnode *n = &pg->m->nodes[i];
		if (!n->source || strcmp(n->source, loc))
			continue; /* before the lookup of site: this loop runs for every node */
		const cJSON *site = jobj(n->json, "site");
		if (jstr(site, "text"))
			return jstr(site, "text");
	}
	char *file;
	long line;
	if (source_split(loc, &file, &line) < 0)
		return NULL;
	const char *t = source_line(&pg->src, file, line);
	free(file);
	return t;
}

/* "file:line" and, when at hand, the line's text. */
static void add_source(struct page *pg, struct strbuf *o, const char *loc)
{
	strbuf_adds(o, "<span class=\"src\"><code>");
	H(o, loc);
	strbuf_adds(o, "</code>");
	const char *t = source_text(pg, loc);
	if (t && *t) {
		strbuf_adds(o, " <span class=\"code\">");
		H(o, t);
		strbuf_adds(o, "</span>");
	}
	strbuf_adds(o, "</span>");
}

static const cJSON *ledger_value(const struct rmodel *m, double id)
{
	const cJSON *v;
	cJSON_ArrayForEach(v, jarr(jobj(m->root, "ledger"), "values"))
	{
		double d;
		if (jnum(v, "id", &d) && d == id)
			return v;
	}
	return NULL;
}

/* Time the candidates would save together, counting no node twice (greedy by rank). */
static double saved_disjoint(const struct rmodel *m, int *counted)
{
	char *used = xcalloc((size_t)m->nr_nodes + 1, 1);
	double sum = 0;
	*counted = 0;
	for (int k = 0; k < m->nr_cands; k++) {
		const cJSON *c = cJSON_GetArrayItem(m->cands, m->cand_order[k]);
		double s;
		if (!jnum(c, "time_saved_us_per_step", &s) || s <= 0)
			continue;
		int clash = 0;
		const cJSON *id;
		cJSON_ArrayForEach(id, jarr(c, "nodes"))
		{
			int i =
			    cJSON_IsNumber(id) ? rmodel_find(m, rmodel_int(id->valuedouble)) : -1;
			clash |= i >= 0 && used[i];
		}
		if (clash)
			continue;
		cJSON_ArrayForEach(id, jarr(c, "nodes"))
		{
			int i =
			    cJSON_IsNumber(id) ? rmodel_find(m, rmodel_int(id->valuedouble)) : -1;
			if (i >= 0)
				used[i] = 1;
		}
		sum += s;
		(*counted)++;
	}
	free(used);
	return sum;
}

struct famrow {
	const char *family;
	double us, bytes;
	int count;
};

/* Kernel time by family: from ledger.by_family, else summed over the nodes. */
static int families(struct page *pg, struct famrow **out)
{
	struct rmodel *m = pg->m;
	struct famrow *f = NULL;
	int nr = 0, alloc = 0;
	const cJSON *bf = jarr(jobj(m->root, "ledger"), "by_family"), *e;
	if (bf && cJSON_GetArraySize(bf)) {
		cJSON_ArrayForEach(e, bf)
		{
			ALLOC_GROW(f, nr, alloc);
			f[nr].family = jstr(e, "family");
			f[nr].us = jnumd(e, "us", -1);
			f[nr].bytes = jnumd(e, "bytes", -1);
			f[nr].count = (int)jnumd(e, "count", -1);
			nr++;
		}
	} else {
		rmodel_missing(m, "ledger.by_family");
		for (int i = 0; i < m->nr_nodes; i++) {
			const struct rnode *n = &m->nodes[i];
			int k = 0;
			while (k < nr &&
			       !((f[k].family && n->family && !strcmp(f[k].family, n->family)) ||
			         (!f[k].family && !n->family)))
				k++;
			if (k == nr) {
				ALLOC_GROW(f, nr, alloc);
				f[nr++] = (struct famrow){n->family, 0, 0, 0};
			}
			if (n->us > 0)
				f[k].us += n->us;
			if (n->bytes_read > 0)
				f[k].bytes += n->bytes_read;
			if (n->bytes_written > 0)
				f[k].bytes += n->bytes_written;
			f[k].count++;
		}
	}
	/* Biggest first. */
	for (int i = 1; i < nr; i++)
		for (int j = i; j > 0 && f[j].us > f[j - 1].us; j--) {
			struct famrow t = f[j];
			f[j] = f[j - 1];
			f[j - 1] = t;
		}
	*out = f;
	return nr;
}

static void card(struct strbuf *o, int highlight, const char *value_html, const char *label_html)
{
	strbuf_addf(o,
	            "<div class=\"card%s\"><div class=\"v\">%s</div><div class=\"l\">%s</div>"
	            "</div>\n",
	            highlight ? " hl" : "", value_html, label_html);
}

static void section_overview(struct page *pg, struct strbuf *o)
{
	struct rmodel *m = pg->m;
	const cJSON *root = m->root, *steps = jobj(root, "steps"), *dev = jobj(root, "device");
	const cJSON *per = jobj(jobj(root, "ledger"), "per_step");
	struct strbuf v = STRBUF_INIT, l = STRBUF_INIT;
	double d;

	strbuf_adds(o, "<div class=\"cards\">\n");
	/* Headline 1: round-trip bytes. */
	double rt = jnumd(per, "roundtrip_bytes", -1), share = jnumd(per, "roundtrip_share", -1);
	if (rt < 0)
		rmodel_missing(m, "ledger.per_step.roundtrip_bytes");
	add_bytes(&v, rt);
	strbuf_adds(&l, "per step written to VRAM and read back by a later kernel");
	if (share >= 0)
		strbuf_addf(&l, " (%.0f%% of all VRAM traffic)", 100 * share);
	card(o, 1, v.buf, l.buf);
	/* Headline 2: time the findings would save, bounded by the step (time_model). */
	int counted = 0;
	const cJSON *tmj = jobj(root, "time_model");
	double saved = jnum(tmj, "promised_us", &d) ? d : saved_disjoint(m, &counted);
	if (tmj && jnum(tmj, "promised_findings", &d))
		counted = (int)d;
	strbuf_reset(&v);
	strbuf_reset(&l);
	if (counted) {
		add_us(&v, saved);
		strbuf_addf(&l,
		            "per step, up to %.1f%% of the step, saved by the top %d proven "
		            "non-overlapping finding%s (bounded by the step's critical path)",
		            m->step_us > 0 ? fmin(100.0, 100 * saved / m->step_us) : 0.0, counted,
		            counted == 1 ? "" : "s");
	} else {
		strbuf_adds(&v, "none");
		strbuf_adds(&l, "no finding saves time on the step's critical path");
	}
	card(o, 1, v.buf, l.buf);
	/* Step time. */
	strbuf_reset(&v);
	strbuf_reset(&l);
	add_us(&v, m->step_us_known ? m->step_us : -1);
	strbuf_adds(&l, "median step time");
	double p10, p90;
	if (jnum(steps, "p10_us", &p10) && jnum(steps, "p90_us", &p90)) {
		strbuf_adds(&l, " (p10 ");
		add_us(&l, p10);
		strbuf_adds(&l, ", p90 ");
		add_us(&l, p90);
		strbuf_adds(&l, ")");
	}
	card(o, 0, v.buf, l.buf);
	/* Bandwidth. */
	double bytes = jnumd(per, "bytes_total", -1);
	if (bytes < 0) {
		double br = jnumd(per, "bytes_read", -1), bw = jnumd(per, "bytes_written", -1);
		bytes = br >= 0 && bw >= 0 ? br + bw : -1;
	}
	double kus = jnumd(per, "kernel_us", m->kernel_us > 0 ? m->kernel_us : -1);
	strbuf_reset(&v);
	strbuf_reset(&l);
	if (bytes >= 0 && kus > 0) {
		double gbs = bytes / (kus * 1e3);
		strbuf_addf(&v, "%.0f GB/s", gbs);
		strbuf_adds(&l, "achieved over the time in kernels");
		if (pg->peak_bw > 0)
			strbuf_addf(&l, ", %.0f%% of the %.0f GB/s peak", 100 * gbs / pg->peak_bw,
			            pg->peak_bw);
	} else {
		unknown(&v);
		strbuf_adds(&l, "achieved bandwidth");
	}
	card(o, 0, v.buf, l.buf);
	strbuf_adds(o, "</div>\n");

	/* The facts, as a list. */
	strbuf_adds(o, "<dl class=\"kv\">\n<dt>program</dt><dd><code>");
	if (jstr(root, "program")) {
		H(o, jstr(root, "program"));
	} else {
		unknown(o);
		rmodel_missing(m, "program");
	}
	strbuf_adds(o, "</code></dd>\n<dt>device</dt><dd>");
	if (jstr(dev, "name")) {
		H(o, jstr(dev, "name"));
		if (jstr(dev, "cc")) {
			strbuf_adds(o, " (compute capability ");
			H(o, jstr(dev, "cc"));
			strbuf_adds(o, ")");
		}
		if (jnum(dev, "sm_count", &d))
			strbuf_addf(o, ", %.0f SMs", d);
	} else {
		unknown(o);
		rmodel_missing(m, "device.name");
	}
	strbuf_adds(o, "; peak bandwidth ");
	if (pg->peak_bw > 0)
		strbuf_addf(o, "%.0f GB/s", pg->peak_bw);
	else
		unknown(o);
	const cJSON *tf = jobj(dev, "peak_tflops"), *c;
	int first = 1;
	cJSON_ArrayForEach(c, tf)
	{
		if (!cJSON_IsNumber(c) || !c->string)
			continue;
		strbuf_adds(o, first ? "; peak compute " : ", ");
		H(o, c->string);
		strbuf_addf(o, " %.0f TFLOP/s", c->valuedouble);
		first = 0;
	}
	strbuf_adds(o, "</dd>\n<dt>steps found</dt><dd>");
	if (jnum(steps, "count", &d)) {
		strbuf_addf(o, "%.0f", d);
		const char *how = jstr(steps, "how");
		if (how) {
			strbuf_adds(o, " (found by ");
			if (!strcmp(how, "nvtx"))
				strbuf_adds(o, "the program's NVTX ranges");
			else if (!strcmp(how, "periodic"))
				strbuf_adds(o, "the repeating sequence of kernels");
			else if (!strcmp(how, "whole"))
				strbuf_adds(o, "none: the whole run is one step");
			else
				H(o, how);
			strbuf_adds(o, ")");
		}
		if (jnum(steps, "warmup", &d) && d > 0)
			strbuf_addf(o, ", %.0f warm-up step%s left out", d, d == 1 ? "" : "s");
	} else {
		unknown(o);
		rmodel_missing(m, "steps.count");
	}
	strbuf_addf(o, "; %d kernels, copies and sets per step", m->nr_nodes);
	strbuf_adds(o, "</dd>\n<dt>median step time</dt><dd>");
	add_us(o, m->step_us_known ? m->step_us : -1);
	const cJSON *tm = jobj(root, "time_model");
	double busy, ovl = jnumd(tm, "overlap_us", 0);
	if (tm && jnum(tm, "busy_us", &busy)) {
		strbuf_adds(o, "; GPU busy ");
		add_us(o, busy);
		strbuf_addf(o, " of the captured step's ");
		add_us(o, jnumd(tm, "step_us", -1));
		strbuf_addf(o, " (%.0f%%; the union of the kernels' intervals over streams",
		            jnumd(tm, "step_us", 0) > 0
		                ? fmin(100.0, 100 * busy / jnumd(tm, "step_us", 1))
		                : 0.0);
		if (ovl > 0) {
			strbuf_adds(o, ": kernel time summed over streams is ");
			add_us(o, jnumd(tm, "kernel_sum_us", -1));
			strbuf_adds(o, ", of which ");
			add_us(o, ovl);
			strbuf_adds(o, " ran beside another stream");
		}
		strbuf_adds(o, "); idle ");
		add_us(o, jnumd(tm, "idle_us", -1));
		strbuf_adds(o, ", of which ");
		add_us(o, jnumd(tm, "host_blocked_us", -1));
		strbuf_adds(o, " after host syncs and blocking copies, ");
		add_us(o, jnumd(tm, "launch_gap_us", -1));
		strbuf_adds(o, " waiting for the host's next launch");
	} else {
		strbuf_adds(o, "; in kernels ");
		add_us(o, kus);
		if (kus > 0 && m->step_us_known)
			strbuf_addf(o, " (%.0f%% of the step; the rest is the GPU idle or waiting)",
			            fmin(100.0, 100 * kus / m->step_us));
	}
	strbuf_adds(o, "</dd>\n<dt>VRAM traffic per step</dt><dd>");
	add_bytes(o, bytes);
	strbuf_adds(o, "</dd>\n<dt>traces</dt><dd>");
	const cJSON *t;
	int nt = 0;
	cJSON_ArrayForEach(t, jarr(root, "traces"))
	{
		if (nt++)
			strbuf_adds(o, "<br>");
		strbuf_adds(o, "<code>");
		if (jstr(t, "path"))
			H(o, jstr(t, "path"));
		else
			unknown(o);
		strbuf_adds(o, "</code>");
		if (jnum(t, "records", &d))
			strbuf_addf(o, ", %.0f records", d);
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "truncated")))
			strbuf_adds(o, ", <strong>truncated</strong> (the process was cut short)");
		const char *end = jstr(t, "end");
		if (end &&
		    (!strcmp(end, "cap") || !strcmp(end, "duration") || !strcmp(end, "steps")))
			strbuf_addf(
			    o,
			    ", recording stopped at its window (%s) while the program ran on: "
			    "the steps after it are not in this trace",
			    !strcmp(end, "cap")        ? "near AICPROF_MAX_MB"
			    : !strcmp(end, "duration") ? "AICPROF_DURATION"
			                               : "AICPROF_STEPS: the loop had run that "
			                                 "many steps alike");
		else if (end && !strcmp(end, "yielded"))
			strbuf_adds(o, ", ended where another CUPTI tool took over");
		else if (end && !strcmp(end, "cuda-error"))
			strbuf_adds(o, ", ended after the program's CUDA context failed");
		if (jnum(t, "capture_ranges", &d) && d > 0)
			strbuf_addf(o,
			            ", recorded only between the program's cudaProfilerStart and "
			            "cudaProfilerStop (%.0f range%s, AICPROF_CAPTURE=profiler-api)",
			            d, d == 1 ? "" : "s");
		if (jnum(t, "dropped_records", &d) && d > 0)
			strbuf_addf(
			    o, ", <strong>%.0f records dropped</strong> (counted by the shim)", d);
		const cJSON *w;
		cJSON_ArrayForEach(w, jarr(t, "warnings"))
		{
			if (!cJSON_IsString(w))
				continue;
			strbuf_adds(o, "<br><span class=\"mute\">warning: ");
			H(o, w->valuestring);
			strbuf_adds(o, "</span>");
		}
	}
	if (!nt)
		unknown(o);
	strbuf_adds(o, "</dd>\n</dl>\n");

	/* Time in kernels by family: a stacked bar and its table. */
	struct famrow *f;
	int nf = families(pg, &f);
	double total = 0;
	for (int i = 0; i < nf; i++)
		total += f[i].us > 0 ? f[i].us : 0;
	strbuf_adds(o, "<h3>Time in kernels by family</h3>\n");
	if (total > 0) {
		strbuf_adds(
		    o, "<svg class=\"bar\" viewBox=\"0 0 1000 26\" preserveAspectRatio=\"none\" "
		       "role=\"img\" aria-label=\"kernel time by family\">");
		double x = 0;
		for (int i = 0; i < nf; i++) {
			if (f[i].us <= 0)
				continue;
			double w = 1000 * f[i].us / total;
			strbuf_addf(o,
			            "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"26\" "
			            "fill=\"%s\"><title>",
			            x, w, family_colour(f[i].family));
			H(o, f[i].family ? f[i].family : "unknown");
			strbuf_addf(o, " %.1f%%</title></rect>", 100 * f[i].us / total);
			x += w;
		}
		strbuf_adds(o, "</svg>\n");
	}
	strbuf_adds(o, "<table class=\"fam\"><thead><tr><th>family</th><th class=\"n\">time per "
	               "step</th><th class=\"n\">share</th><th class=\"n\">kernels</th>"
	               "<th class=\"n\">VRAM traffic</th></tr></thead><tbody>\n");
	for (int i = 0; i < nf; i++) {
		strbuf_adds(o, "<tr><td>");
		swatch(o, family_colour(f[i].family));
		if (f[i].family)
			H(o, f[i].family);
		else
			unknown(o);
		strbuf_adds(o, "</td>");
		td_us(o, f[i].us);
		strbuf_adds(o, "<td class=\"n\">");
		add_pct(o, f[i].us, total);
		strbuf_adds(o, "</td>");
		td_num(o, f[i].count, "%.0f");
		td_bytes(o, f[i].bytes);
		strbuf_adds(o, "</tr>\n");
	}
	strbuf_adds(o, "</tbody></table>\n");
	free(f);
	strbuf_release(&v);
	strbuf_release(&l);
}

static void cand_nodes_list(struct page *pg, struct strbuf *o, const cJSON *ids)
{
	const cJSON *id;
	int any = 0;
	strbuf_adds(o, "<ul class=\"plain\">");
	cJSON_ArrayForEach(id, ids)
	{
		int i = cJSON_IsNumber(id) ? rmodel_find(pg->m, rmodel_int(id->valuedouble)) : -1;
		strbuf_adds(o, "<li>");
		if (i < 0) {
			strbuf_adds(o, "node ");
			if (cJSON_IsNumber(id))
				strbuf_addf(o, "%.0f", id->valuedouble);
			strbuf_adds(o, " <span class=\"unk\">(not in nodes[])</span>");
		} else {
			add_kernel(o, &pg->m->nodes[i]);
			strbuf_adds(o, " <span class=\"mute\">");
			add_us(o, pg->m->nodes[i].us);
			strbuf_adds(o, "</span>");
		}
		strbuf_adds(o, "</li>");
		any = 1;
	}
	if (!any)
		strbuf_adds(o, "<li>"
		               "<span class=\"unk\">unknown</span></li>");
	strbuf_adds(o, "</ul>");
}

/* A pattern's three lines (model, torch op, user) and its count, where summary.json has them. */
static void cand_lines(struct strbuf *o, const cJSON *c)
{
	static const char *const names[] = {"model_site", "user_site"};
	static const char *const labels[] = {"model line", "user line"};
	double cnt;
	if (jnum(c, "count_per_step", &cnt) && cnt > 1)
		strbuf_addf(o, "</dd>\n<dt>occurrences</dt><dd>%.0f a step (one pattern)", cnt);
	for (int i = 0; i < 2; i++) {
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, names[i]);
		if (!cJSON_IsObject(l) || !jstr(l, "file"))
			continue;
		strbuf_addf(o, "</dd>\n<dt>%s</dt><dd><code>", labels[i]);
		H(o, jstr(l, "file"));
		strbuf_addf(o, ":%.0f</code>", jnumd(l, "line", 0));
		if (jstr(l, "func")) {
			strbuf_adds(o, " in <code>");
			H(o, jstr(l, "func"));
			strbuf_adds(o, "</code>");
		}
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "derived")))
			strbuf_adds(o, " (derived: the forward op whose values it reads)");
		if (i == 0 && jstr(c, "torch_op")) {
			strbuf_adds(o, "</dd>\n<dt>torch op</dt><dd><code>");
			H(o, jstr(c, "torch_op"));
			strbuf_adds(o, "</code>");
		}
	}
}

static void section_candidates(struct page *pg, struct strbuf *o)
{
	struct rmodel *m = pg->m;
	if (!m->nr_cands)
		strbuf_adds(o, "<p>No fusion candidate was found: no intermediate in this step is "
		               "written by one kernel and read only by kernels that could join it."
		               "</p>\n");
	char *brief = xcalloc((size_t)m->nr_cands + 1, 1); /* 1: in the collapsed table */
	int nfull = 0, nbrief = 0;
	for (int k = 0; k < m->nr_cands; k++) {
		int ci = m->cand_order[k];
		const cJSON *c = cJSON_GetArrayItem(m->cands, ci);
		if (finding_minor(c) || nfull >= HTML_FULL_CANDS) {
			brief[k] = 1;
			nbrief++;
			continue;
		}
		nfull++;
		double saved = jnumd(c, "time_saved_us_per_step", -1), d;
		int num = finding_number(c, k);
		const char *tk = jstr(c, "time_kind");
		strbuf_addf(o, "<article class=\"cand\" id=\"cand-%d\"><h3>#%d ", num, num);
		H(o, tk && !strcmp(tk, "host-blocked") ? "host-blocked"
		     : jstr(c, "kind")                 ? jstr(c, "kind")
		                                       : "fusion");
		strbuf_adds(o, " <span class=\"save\">saves up to ");
		add_us(o, saved);
		strbuf_adds(o, " of the step");
		if (saved >= 0 && m->step_us > 0)
			strbuf_addf(o, " (up to %.1f%% of the step)",
			            fmin(100.0, 100 * saved / m->step_us));
		if (jnum(c, "kernel_saved_us", &d) && tk && strcmp(tk, "none")) {
			strbuf_adds(o, !strcmp(tk, "gpu") ? "; kernel time saved "
			                                  : "; the host blocks ");
			add_us(o, d);
		}
		if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(c, "proven")))
			strbuf_adds(o, "; unproven");
		strbuf_adds(o, "</span></h3>\n<dl class=\"kv\">\n");
		if (jstr(c, "why")) {
			strbuf_adds(o, "<dt>why</dt><dd>");
			H(o, jstr(c, "why"));
			strbuf_adds(o, "</dd>\n");
		}
		strbuf_adds(o, "<dt>kernels</dt><dd>");
		cand_nodes_list(pg, o, jarr(c, "nodes"));
		strbuf_adds(o, "</dd>\n<dt>intermediates removed</dt><dd>");
		const cJSON *vr = jarr(c, "values_removed"), *id;
		int nv = vr ? cJSON_GetArraySize(vr) : 0;
		strbuf_addf(o, "%d value%s, ", nv, nv == 1 ? "" : "s");
		add_bytes(o, jnumd(c, "bytes_saved_per_step", -1));
		strbuf_adds(o, " of VRAM traffic per step");
		int shown = 0;
		cJSON_ArrayForEach(id, vr)
		{
			if (!cJSON_IsNumber(id) || shown >= 8)
				continue;
			const cJSON *val = ledger_value(m, id->valuedouble);
			strbuf_addf(o, "%s value %.0f", shown ? ", " : ": ", id->valuedouble);
			if (jnum(val, "size", &d)) {
				strbuf_adds(o, " (");
				add_bytes(o, d);
				strbuf_adds(o, ")");
			}
			shown++;
		}
		if (nv > shown && shown)
			strbuf_addf(o, " and %d more", nv - shown);
		const cJSON *vk = jarr(c, "values_kept");
		if (vk && cJSON_GetArraySize(vk))
			strbuf_addf(o, "; %d still written because read later",
			            cJSON_GetArraySize(vk));
		strbuf_adds(o, "</dd>\n<dt>estimate</dt><dd>");
		/* a comm-overlap candidate hides communication; it fuses nothing */
		const char *ck = jstr(c, "kind");
		int comm = ck && !strcmp(ck, "comm-overlap");
		int beyond = ck && (!strcmp(ck, "dead") || !strcmp(ck, "invariant") ||
		                    !strcmp(ck, "memory"));
		if (tk && !strcmp(tk, "host-blocked")) {
			strbuf_adds(o, "the host blocks ");
			add_us(o, jnumd(c, "time_before_us", -1));
			strbuf_adds(o, " a step (host time); the GPU sits idle ");
			add_us(o, saved);
			strbuf_adds(o, " because of it: what removing it can save");
		} else if (beyond) {
			add_us(o, jnumd(c, "time_before_us", -1));
			strbuf_adds(o, " of kernel time a step, all of it removed");
		} else {
			add_us(o, jnumd(c, "time_before_us", -1));
			strbuf_adds(o, " now, ");
			add_us(o, jnumd(c, "time_after_us", -1));
			strbuf_adds(o, comm ? " exposed once hidden under compute (at most its "
			                      "transfer time)"
			                    : " fused (bounded by the bandwidth roof)");
		}
		if (tk && !strcmp(tk, "gpu") && jnum(c, "kernel_saved_us", &d) && saved < 0.5 * d)
			strbuf_adds(o,
			            "; most of it is off the step's critical path: the GPU waits "
			            "for the host's next launch after these kernels, so a faster "
			            "kernel waits longer (one launch fewer still saves the host "
			            "its launch time)");
		strbuf_adds(o, "</dd>\n<dt>source</dt><dd>");
		const cJSON *s;
		int ns = 0;
		cJSON_ArrayForEach(s, jarr(c, "sources"))
		{
			if (cJSON_IsString(s)) {
				add_source(pg, o, s->valuestring);
				ns++;
			}
		}
		if (!ns)
			unknown(o);
		cand_lines(o, c);
		strbuf_adds(o, "</dd>\n<dt>what to do</dt><dd class=\"todo\">");
		const char *lib = jstr(c, "library_form");
		if (lib && *lib && comm) {
			strbuf_adds(o, "change the schedule: ");
			H(o, lib);
		} else if (lib && *lib) {
			strbuf_adds(o, "use the library's fused form: <code>");
			H(o, lib);
			strbuf_adds(o, "</code>");
		} else {
			finding_todo(o, c, num);
		}
		finding_package(o, cJSON_GetObjectItemCaseSensitive(m->root, "functions"), c);
		strbuf_adds(o, "</dd>\n</dl></article>\n");
	}
	if (nbrief) {
		strbuf_addf(o,
		            "<details id=\"more-cands\"><summary>%d more findings: unproven, not "
		            "actionable from the source, under 1 µs and 1 MiB a step, or past the "
		            "first %d</summary>\n"
		            "<table><thead><tr><th class=\"n\">#</th><th>kind</th>"
		            "<th>listed here because</th>"
		            "<th class=\"n\">saves of the step</th><th>kernels</th><th>source</th>"
		            "<th>what to do</th></tr></thead><tbody>\n",
		            nbrief, HTML_FULL_CANDS);
		for (int k = 0; k < m->nr_cands; k++) {
			if (!brief[k])
				continue;
			const cJSON *c = cJSON_GetArrayItem(m->cands, m->cand_order[k]), *s;
			strbuf_addf(o, "<tr id=\"cand-%d\"><td class=\"n\">%d</td>",
			            finding_number(c, k), finding_number(c, k));
			const char *tk2 = jstr(c, "time_kind");
			td_text(o,
			        tk2 && !strcmp(tk2, "host-blocked") ? "host-blocked"
			                                            : jstr(c, "kind"),
			        NULL);
			td_text(o,
			        finding_minor(c) ? finding_minor(c)
			                         : "past the first findings shown in full",
			        NULL);
			td_us(o, jnumd(c, "time_saved_us_per_step", -1));
			strbuf_adds(o, "<td>");
			cand_nodes_list(pg, o, jarr(c, "nodes"));
			strbuf_adds(o, "</td><td class=\"loc\">");
			cJSON_ArrayForEach(s, jarr(c, "sources"))
			{
				if (!cJSON_IsString(s))
					continue;
				strbuf_adds(o, "<code>");
				H(o, s->valuestring);
				strbuf_adds(o, "</code> ");
			}
			strbuf_adds(o, "</td><td>");
			const char *lib = jstr(c, "library_form");
			if (lib && *lib) {
				strbuf_adds(o, "<code>");
				H(o, lib);
				strbuf_adds(o, "</code>");
			} else {
				finding_todo(o, c, finding_number(c, k));
			}
			strbuf_adds(o, "</td></tr>\n");
		}
		strbuf_adds(o, "</tbody></table></details>\n");
	}
	free(brief);
	const cJSON *rej = jarr(m->root, "rejected"), *r;
	int nr = rej ? cJSON_GetArraySize(rej) : 0;
	if (!rej)
		rmodel_missing(m, "rejected");
	strbuf_addf(o, "<details id=\"rejected\"><summary>Rejected candidates (%d)</summary>\n",
	            nr);
	if (!nr) {
		strbuf_adds(o, "<p class=\"mute\">None.</p>");
	} else {
		strbuf_adds(o, "<table><thead><tr><th>kind</th><th>kernels</th><th>reason</th></tr>"
		               "</thead><tbody>\n");
		cJSON_ArrayForEach(r, rej)
		{
			strbuf_adds(o, "<tr>");
			td_text(o, jstr(r, "kind"), NULL);
			strbuf_adds(o, "<td>");
			cand_nodes_list(pg, o, jarr(r, "nodes"));
			strbuf_adds(o, "</td>");
			td_text(o, jstr(r, "reason"), NULL);
			strbuf_adds(o, "</tr>\n");
		}
		strbuf_adds(o, "</tbody></table>\n");
	}
	strbuf_adds(o, "</details>\n");
}

void html_add_svg_body(struct strbuf *out, const char *svg)
{
	const char *s = svg ? strstr(svg, "<svg") : NULL;
	if (s)
		strbuf_adds(out, s);
}

static void section_graph(struct page *pg, const struct html_input *in, struct strbuf *o)
{
	const struct gview *all = in->all, *top = in->top;
	if (!in->all_svg && !(top && in->top_svg)) {
		strbuf_adds(o,
		            "<p class=\"note\">The step graph could not be drawn (Graphviz "
		            "failed or ran past its time budget, AICPROF_LAYOUT_S); graph.dot is "
		            "beside this page.</p>\n");
		return;
	}
	if (!in->all_svg)
		strbuf_adds(o,
		            "<p class=\"note\">The whole step was too large to draw in time "
		            "(AICPROF_LAYOUT_S): only the top view is drawn; graph.dot beside this "
		            "page has the whole graph.</p>\n");
	strbuf_adds(o, "<div class=\"controls\">");
	if (top && in->top_svg && in->all_svg) {
		strbuf_addf(o,
		            "<button type=\"button\" data-view=\"g-top\">Top %d by time and "
		            "their neighbours</button>",
		            top->top_n);
		strbuf_addf(o, "<button type=\"button\" data-view=\"g-all\">Whole step</button>");
	}
	strbuf_adds(o, "<button type=\"button\" id=\"g-reset\">Reset zoom</button>"
	               "<button type=\"button\" id=\"g-fit\">Fit all</button>"
	               "<span class=\"hint\">wheel to zoom, drag to pan, click a kernel for its "
	               "details</span></div>\n");
	strbuf_adds(o, "<p class=\"legend\"><span>fill: share of the largest kernel's time "
	               "(pale to red)</span><span>blue dashed box: a fusion candidate</span>"
	               "<span>grey dashed: a run of small kernels collapsed</span>"
	               "<span>edge label: bytes passed</span><span>dotted edge: order only</span>");
	if (all->collapsed)
		strbuf_addf(o, "<span>%d kernels under 1%% of the step collapsed</span>",
		            all->collapsed);
	if (all->nr_folds)
		strbuf_addf(
		    o,
		    "<span>grey-blue box ×N: a sequence of kernels repeated N times in a row "
		    "(a layer), drawn once; %d kernels folded into %d such boxes, times "
		    "summed over the copies (graph.dot has them all)</span>",
		    all->folded, all->nr_folds);
	if (top && in->top_svg)
		strbuf_addf(o,
		            "<span>the top view leaves out %d kernels (grey dashed edges pass "
		            "through them)</span>",
		            top->hidden);
	if (in->graph_legend)
		strbuf_adds(o, in->graph_legend);
	strbuf_adds(o, "</p>\n<div class=\"graphwrap\"><div>\n");
	if (!in->all_svg) {
		strbuf_adds(o, "<div class=\"graphbox\" id=\"g-top\">");
		html_add_svg_body(o, in->top_svg);
	} else if (top && in->top_svg) {
		strbuf_adds(o, "<div class=\"graphbox\" id=\"g-top\">");
		html_add_svg_body(o, in->top_svg);
		strbuf_adds(o, "</div>\n<div class=\"graphbox\" id=\"g-all\" hidden>");
	} else {
		strbuf_adds(o, "<div class=\"graphbox\" id=\"g-all\">");
	}
	if (in->all_svg)
		html_add_svg_body(o, in->all_svg);
	strbuf_adds(o,
	            "</div>\n</div><aside id=\"nodeinfo\" aria-live=\"polite\">Click a kernel in "
	            "the graph to see its full name, bytes and source line.</aside></div>\n");
	(void)pg;
}

static void filter_box(struct strbuf *o, const char *table, const char *what)
{
	strbuf_addf(o,
	            "<div class=\"controls filter\"><input type=\"search\" data-filter=\"%s\" "
	            "data-count=\"%s-count\" placeholder=\"filter %s\" aria-label=\"filter %s\">"
	            "<span class=\"hint\" id=\"%s-count\"></span></div>\n",
	            table, table, what, what, table);
}

/* A small bar of share (0..1) of the peak bandwidth; grey for compute-bound kernels. */
static void pct_bar(struct strbuf *o, double share, int compute)
{
	double w = fmax(0, fmin(1, share)) * 60;
	strbuf_addf(o,
	            "<svg class=\"pct\" viewBox=\"0 0 60 9\" aria-hidden=\"true\"><rect "
	            "width=\"60\" height=\"9\" fill=\"#e4e8ec\"/><rect width=\"%.1f\" height=\"9\" "
	            "fill=\"%s\"/></svg>",
	            w,
	            compute       ? "#9aa3ab"
	            : share > 0.6 ? "#59a14f"
	            : share > 0.3 ? "#edc948"
	                          : "#e15759");
}

static int double_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* The k-th largest of t[0..n) (1 <= k <= n), the cut of a table listing the k largest rows;
 * frees t. */
static double kth_largest(double *t, int n, int k)
{
	qsort(t, (size_t)n, sizeof(double), double_desc);
	double c = t[k - 1];
	free(t);
	return c;
}

static void section_ledger(struct page *pg, struct strbuf *o)
{
	struct rmodel *m = pg->m;
	struct strbuf plot = STRBUF_INIT;
	int np = plot_roofline(m, &plot);
	int zero = 0;
	for (int i = 0; i < m->nr_nodes; i++)
		zero += m->nodes[i].flops == 0;
	strbuf_adds(o, "<h3>Roofline</h3>\n");
	if (np) {
		strbuf_adds(o, "<div class=\"roofwrap\"><div>");
		strbuf_add(o, plot.buf, plot.len);
		strbuf_adds(o, "</div><div><p class=\"legend\">");
		/* The families drawn, in the plot's colours. */
		const char *seen[64];
		int nseen = 0;
		for (int i = 0; i < m->nr_nodes && nseen < 64; i++) {
			const struct rnode *n = &m->nodes[i];
			if (n->flops <= 0 || n->intensity <= 0 || n->us <= 0)
				continue;
			int dup = 0;
			for (int k = 0; k < nseen; k++)
				dup |= (!seen[k] && !n->family) ||
				       (seen[k] && n->family && !strcmp(seen[k], n->family));
			if (dup)
				continue;
			seen[nseen++] = n->family;
			strbuf_adds(o, "<span>");
			swatch(o, family_colour(n->family));
			H(o, n->family ? n->family : "unknown family");
			strbuf_adds(o, "</span>");
		}
		strbuf_addf(
		    o,
		    "</p><p class=\"mute\">Each circle is a kernel: its area is its share "
		    "of the time in kernels, its colour its family. Left of the ridge, under "
		    "the sloped roof, a kernel is limited by VRAM bandwidth: fusing it with "
		    "its neighbours removes traffic and moves it right. Right of the ridge "
		    "the limit is compute (dashed ceilings, one per data type). A kernel far "
		    "below its roof is bound by latency or launch overhead.</p>"
		    "<p class=\"mute\">%d kernel%s doing no floating-point work (casts, "
		    "copies, fills, indexing) %s in the strip under the plot, at the "
		    "bandwidth %s achieved against the peak. Hover a circle for its name.</p>"
		    "</div></div>\n",
		    zero, zero == 1 ? "" : "s", zero == 1 ? "is" : "are",
		    zero == 1 ? "it" : "they");
		/* above the roof is possible only from the cache: say so where it happens */
		int above = 0;
		for (int i = 0; i < m->nr_nodes; i++)
			above += pg->peak_bw > 0 && m->nodes[i].gbs > pg->peak_bw;
		if (above)
			strbuf_addf(
			    o,
			    "<p class=\"mute\">%d kernel%s moved %s bytes faster than VRAM's "
			    "peak: %s data was served by the L2 cache, not VRAM, so %s above "
			    "the sloped roof, which is VRAM's.</p>\n",
			    above, above == 1 ? "" : "s", above == 1 ? "its" : "their",
			    above == 1 ? "its" : "their", above == 1 ? "it sits" : "they sit");
	} else {
		strbuf_adds(o, "<p class=\"note\">No kernel has known FLOPs, bytes and time, so "
		               "there is no roofline to draw.</p>\n");
	}
	strbuf_release(&plot);

	strbuf_adds(o, "<h3>Kernels</h3>\n");
	filter_box(o, "t-nodes", "kernels");
	/* At most max_kernels rows, the longest: a step of 200k distinct kernels made a table of
	 * 140 MB that no browser opens; summary.json has them all. */
	const int max_kernels = 3000;
	double kcut = -1;
	if (m->nr_nodes > max_kernels) {
		double *t = xmalloc(sizeof(double) * (size_t)m->nr_nodes);
		for (int i = 0; i < m->nr_nodes; i++)
			t[i] = m->nodes[i].us;
		kcut = kth_largest(t, m->nr_nodes, max_kernels);
		strbuf_addf(o,
		            "<p class=\"mute\">The %d longest kernels of %d are listed; "
		            "summary.json has every one.</p>\n",
		            max_kernels, m->nr_nodes);
	}
	int krows = 0;
	strbuf_adds(o, "<div class=\"tablewrap\"><table class=\"sortable\" id=\"t-nodes\" "
	               "data-sort-init=\"3\"><thead><tr><th class=\"n\" data-type=\"num\">#</th>"
	               "<th>kernel</th><th>family</th><th class=\"n\" data-type=\"num\">time</th>"
	               "<th class=\"n\" data-type=\"num\">of step</th>"
	               "<th class=\"n\" data-type=\"num\">read</th>"
	               "<th class=\"n\" data-type=\"num\">written</th>"
	               "<th class=\"n\" data-type=\"num\">bandwidth</th>"
	               "<th class=\"n\" data-type=\"num\">FLOP/B</th><th>bound</th>"
	               "<th class=\"n\" data-type=\"num\">fusion</th><th>source</th></tr></thead>"
	               "<tbody>\n");
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct rnode *n = &m->nodes[i];
		if (kcut >= 0 && (n->us < kcut || krows >= max_kernels))
			continue;
		krows++;
		strbuf_addf(o, "<tr><td class=\"n\" data-v=\"%d\">%d</td><td>", n->id, n->id);
		add_kernel(o, n);
		strbuf_adds(o, "</td><td class=\"fam\">");
		swatch(o, family_colour(n->family));
		if (n->family)
			H(o, n->family);
		else
			unknown(o);
		strbuf_adds(o, "</td>");
		td_us(o, n->us);
		if (n->us >= 0 && m->step_us > 0)
			strbuf_addf(o, "<td class=\"n\" data-v=\"%.6g\">%.1f%%</td>",
			            n->us / m->step_us, 100 * n->us / m->step_us);
		else
			strbuf_adds(o, "<td class=\"n\" data-v=\"\"></td>");
		td_bytes(o, n->bytes_read);
		td_bytes(o, n->bytes_written);
		if (n->gbs >= 0) {
			strbuf_addf(o, "<td class=\"n\" data-v=\"%.6g\">%.0f GB/s", n->gbs, n->gbs);
			if (pg->peak_bw > 0)
				pct_bar(o, n->gbs / pg->peak_bw,
				        n->bound && !strcmp(n->bound, "compute"));
			strbuf_adds(o, "</td>");
		} else {
			td_num(o, -1, "");
		}
		td_num(o, n->intensity, "%.3g");
		td_text(o, n->bound, NULL);
		if (n->cand >= 0)
			strbuf_addf(
			    o, "<td class=\"n\" data-v=\"%d\"><a href=\"#cand-%d\">#%d</a></td>",
			    m->cand_rank[n->cand], m->cand_rank[n->cand], m->cand_rank[n->cand]);
		else
			strbuf_adds(o, "<td class=\"n\" data-v=\"\"></td>");
		strbuf_adds(o, "<td class=\"loc\">");
		if (n->source) {
			strbuf_adds(o, "<code>");
			H(o, n->source);
			strbuf_adds(o, "</code>");
		}
		strbuf_adds(o, "</td></tr>\n");
	}
	strbuf_adds(o, "</tbody></table></div>\n");

	const cJSON *vals = jarr(jobj(m->root, "ledger"), "values"), *v;
	strbuf_adds(o, "<h3>Values (one version of a buffer: its writer and its readers)</h3>\n");
	if (!vals) {
		rmodel_missing(m, "ledger.values");
		strbuf_adds(o, "<p class=\"note\">The summary has no value ledger.</p>\n");
		return;
	}
	const int max_rows = 3000;
	int nv = cJSON_GetArraySize(vals);
	filter_box(o, "t-values", "values");
	if (nv > max_rows)
		strbuf_addf(o,
		            "<p class=\"mute\">The %d values with the most traffic of %d are "
		            "listed.</p>\n",
		            max_rows, nv);
	strbuf_adds(o,
	            "<div class=\"tablewrap\"><table class=\"sortable\" id=\"t-values\" "
	            "data-sort-init=\"6\"><thead><tr><th class=\"n\" data-type=\"num\">value</th>"
	            "<th class=\"n\" data-type=\"num\">size</th><th>writer</th><th>readers</th>"
	            "<th class=\"n\" data-type=\"num\">written</th>"
	            "<th class=\"n\" data-type=\"num\">read</th>"
	            "<th class=\"n\" data-type=\"num\">traffic</th><th>round trip</th>"
	            "<th>source</th></tr></thead><tbody>\n");
	/* Rank by traffic when there are too many to list. */
	double cut = -1;
	if (nv > max_rows) {
		double *t = xmalloc(sizeof(double) * (size_t)nv);
		int k = 0;
		cJSON_ArrayForEach(v, vals)
		{
			t[k++] = jnumd(v, "bytes_written", 0) + jnumd(v, "bytes_read", 0);
		}
		cut = kth_largest(t, nv, max_rows);
	}
	int rows = 0;
	cJSON_ArrayForEach(v, vals)
	{
		double w = jnumd(v, "bytes_written", -1), r = jnumd(v, "bytes_read", -1), d;
		double traffic = (w > 0 ? w : 0) + (r > 0 ? r : 0);
		if (cut >= 0 && (traffic < cut || rows >= max_rows))
			continue;
		rows++;
		strbuf_adds(o, "<tr>");
		td_num(o, jnumd(v, "id", -1), "%.0f");
		td_bytes(o, jnumd(v, "size", -1));
		strbuf_adds(o, "<td>");
		int wi = jnum(v, "writer", &d) ? rmodel_find(m, (int)d) : -1;
		if (wi >= 0)
			add_kernel(o, &m->nodes[wi]);
		else
			strbuf_adds(o, "<span class=\"mute\">before the step</span>");
		strbuf_adds(o, "</td><td>");
		const cJSON *rd;
		int nr = 0;
		cJSON_ArrayForEach(rd, jarr(v, "readers"))
		{
			int ri =
			    cJSON_IsNumber(rd) ? rmodel_find(m, rmodel_int(rd->valuedouble)) : -1;
			if (ri < 0)
				continue;
			if (nr < 3) {
				if (nr)
					strbuf_adds(o, ", ");
				add_kernel(o, &m->nodes[ri]);
			}
			nr++;
		}
		if (nr > 3)
			strbuf_addf(o, " and %d more", nr - 3);
		if (!nr)
			strbuf_adds(o, "<span class=\"mute\">none in the step</span>");
		strbuf_adds(o, "</td>");
		td_bytes(o, w);
		td_bytes(o, r);
		td_bytes(o, w < 0 && r < 0 ? -1 : traffic);
		const cJSON *im = cJSON_GetObjectItemCaseSensitive(v, "intermediate");
		const cJSON *live = cJSON_GetObjectItemCaseSensitive(v, "live_after_step");
		strbuf_adds(o, "<td>");
		if (cJSON_IsBool(im))
			strbuf_adds(o, cJSON_IsTrue(im)
			                   ? (cJSON_IsTrue(live) ? "yes, kept after step" : "yes")
			                   : "no");
		else
			unknown(o);
		strbuf_adds(o, "</td><td class=\"loc\">");
		if (jstr(v, "source")) {
			strbuf_adds(o, "<code>");
			H(o, jstr(v, "source"));
			strbuf_adds(o, "</code>");
		}
		strbuf_adds(o, "</td></tr>\n");
	}
	strbuf_adds(o, "</tbody></table></div>\n");
}

struct srcrow {
	const char *source;
	double us, bytes;
	int *nodes, nr, alloc;
};

static void srcrows_release(struct srcrow *s, int n)
{
	for (int i = 0; i < n; i++)
		free(s[i].nodes);
	free(s);
}

static int srcrows(struct page *pg, struct srcrow **out)
{
	struct rmodel *m = pg->m;
	struct srcrow *s = NULL;
	int nr = 0, alloc = 0;
	const cJSON *bs = jarr(jobj(m->root, "ledger"), "by_source"), *e, *id;
	if (bs) {
		cJSON_ArrayForEach(e, bs)
		{
			if (!jstr(e, "source"))
				continue;
			ALLOC_GROW(s, nr, alloc);
			struct srcrow *r = &s[nr++];
			memset(r, 0, sizeof(*r));
			r->source = jstr(e, "source");
			r->us = jnumd(e, "us", -1);
			r->bytes = jnumd(e, "bytes", -1);
			cJSON_ArrayForEach(id, jarr(e, "nodes"))
			{
				int i = cJSON_IsNumber(id)
				            ? rmodel_find(m, rmodel_int(id->valuedouble))
				            : -1;
				if (i < 0)
					continue;
				ALLOC_GROW(r->nodes, r->nr, r->alloc);
				r->nodes[r->nr++] = i;
			}
		}
	} else {
		rmodel_missing(m, "ledger.by_source");
		for (int i = 0; i < m->nr_nodes; i++) {
			const struct rnode *n = &m->nodes[i];
			if (!n->source)
				continue;
			int k = 0;
			while (k < nr && strcmp(s[k].source, n->source))
				k++;
			if (k == nr) {
				ALLOC_GROW(s, nr, alloc);
				memset(&s[nr], 0, sizeof(s[nr]));
				s[nr++].source = n->source;
			}
			s[k].us += n->us > 0 ? n->us : 0;
			s[k].bytes += (n->bytes_read > 0 ? n->bytes_read : 0) +
			              (n->bytes_written > 0 ? n->bytes_written : 0);
			ALLOC_GROW(s[k].nodes, s[k].nr, s[k].alloc);
			s[k].nodes[s[k].nr++] = i;
		}
	}
	*out = s;
	return nr;
}

static void source_table(struct page *pg, struct strbuf *o, struct srcrow *s, int n, int by_bytes)
{
	int *order = xmalloc(sizeof(int) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--) {
			double a = by_bytes ? s[order[j]].bytes : s[order[j]].us;
			double b = by_bytes ? s[order[j - 1]].bytes : s[order[j - 1]].us;
			if (a <= b)
				break;
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	strbuf_addf(o,
	            "<table class=\"bysrc\" id=\"t-src-%s\"><thead><tr><th>source line</th>"
	            "<th class=\"n\">%s</th><th class=\"n\">%s</th><th>kernels it launched</th>"
	            "</tr></thead><tbody>\n",
	            by_bytes ? "bytes" : "time", by_bytes ? "VRAM traffic" : "time",
	            by_bytes ? "time" : "VRAM traffic");
	for (int k = 0; k < n && k < 20; k++) {
		struct srcrow *r = &s[order[k]];
		strbuf_adds(o, "<tr><td>");
		add_source(pg, o, r->source);
		strbuf_adds(o, "</td>");
		if (by_bytes) {
			td_bytes(o, r->bytes);
			td_us(o, r->us);
		} else {
			td_us(o, r->us);
			td_bytes(o, r->bytes);
		}
		strbuf_adds(o, "<td>");
		for (int i = 0; i < r->nr && i < 6; i++) {
			if (i)
				strbuf_adds(o, ", ");
			add_kernel(o, &pg->m->nodes[r->nodes[i]]);
		}
		if (r->nr > 6)
			strbuf_addf(o, " and %d more", r->nr - 6);
		strbuf_adds(o, "</td></tr>\n");
	}
	strbuf_adds(o, "</tbody></table>\n");
	free(order);
}

static void section_sources(struct page *pg, struct strbuf *o)
{
	struct srcrow *s;
	int n = srcrows(pg, &s);
	if (!n) {
		strbuf_adds(o, "<p class=\"note\">No kernel has a source line: the trace was "
		               "recorded without attribution, or no frame was the user's.</p>\n");
	} else {
		strbuf_adds(o, "<h3>By time</h3>\n");
		source_table(pg, o, s, n, 0);
		strbuf_adds(o, "<h3>By VRAM traffic</h3>\n");
		source_table(pg, o, s, n, 1);
	}
	srcrows_release(s, n);
}

static void section_timeline(struct page *pg, struct strbuf *o)
{
	struct strbuf plot = STRBUF_INIT;
	const cJSON *tl = jobj(pg->m->root, "timeline");
	double d;
	if (plot_timeline(pg->m, &plot)) {
		strbuf_adds(o, "<p class=\"legend\">");
		if (jnum(tl, "step", &d))
			strbuf_addf(o, "<span>step %.0f (the median one)</span>", d);
		strbuf_adds(o, "<span>");
		swatch(o, "#2ca02c");
		strbuf_adds(o, "copy</span><span>");
		swatch(o, "#9c755f");
		strbuf_adds(o, "set</span><span>");
		swatch(o, "#d62728");
		strbuf_adds(o, "synchronisation</span><span>kernels: family colours as in the "
		               "overview; blue outline: part of a fusion candidate</span></p>\n");
		strbuf_add(o, plot.buf, plot.len);
	} else {
		rmodel_missing(pg->m, "timeline.events");
		strbuf_adds(o, "<p class=\"note\">The summary has no timeline.</p>\n");
	}
	strbuf_adds(o, "<p class=\"mute\">The same step is in <a href=\"trace.perfetto.json\">"
	               "trace.perfetto.json</a> beside this page: open it in ui.perfetto.dev or "
	               "chrome://tracing.</p>\n");
	strbuf_release(&plot);
}

/* The JSON block the script reads: nodes by id and collapsed groups by their graph name. */
static void data_block(struct page *pg, const struct html_input *in, struct strbuf *o)
{
	struct rmodel *m = pg->m;
	struct strbuf t = STRBUF_INIT;
	struct hmap seen; /* FNV-1a of a source: the first node's index that has it */
	hmap_init(&seen);
	const char **texts = xcalloc((size_t)m->nr_nodes + 1, sizeof(*texts));
	strbuf_adds(o, "{\"nodes\":{");
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct rnode *n = &m->nodes[i];
		strbuf_addf(o, "%s\"%d\":{\"name\":", i ? "," : "", n->id);
		strbuf_add_json(o, n->name);
		if (n->full_name) {
			strbuf_adds(o, ",\"full_name\":");
			strbuf_add_json(o, n->full_name);
		}
		if (n->family) {
			strbuf_adds(o, ",\"family\":");
			strbuf_add_json(o, n->family);
		}
		char b[32];
		strbuf_reset(&t);
		if (n->us >= 0)
			strbuf_addf(&t, "%.1f µs", n->us);
		else
			strbuf_adds(&t, "unknown");
		strbuf_adds(o, ",\"time\":");
		strbuf_add_json(o, t.buf);
		strbuf_adds(o, ",\"read\":");
		strbuf_add_json(o, n->bytes_read >= 0 ? fmt_bytes(n->bytes_read, b) : "unknown");
		strbuf_adds(o, ",\"written\":");
		strbuf_add_json(o,
		                n->bytes_written >= 0 ? fmt_bytes(n->bytes_written, b) : "unknown");
		if (n->gbs >= 0) {
			strbuf_reset(&t);
			strbuf_addf(&t, "%.0f GB/s", n->gbs);
			if (pg->peak_bw > 0)
				strbuf_addf(&t, " (%.0f%% of peak)", 100 * n->gbs / pg->peak_bw);
			strbuf_adds(o, ",\"bw\":");
			strbuf_add_json(o, t.buf);
		}
		if (n->source) {
			strbuf_adds(o, ",\"source\":");
			strbuf_add_json(o, n->source);
			/* source_text() walks every node: once per distinct source, not per node */
			uint64_t h = 1469598103934665603ull, first;
			for (const char *c = n->source; *c; c++)
				h = (h ^ (unsigned char)*c) * 1099511628211ull;
			const char *text;
			if (hmap_get(&seen, h, &first) &&
			    !strcmp(m->nodes[first].source, n->source)) {
				text = texts[first];
			} else {
				text = source_text(pg, n->source);
				hmap_put(&seen, h, (uint64_t)i);
			}
			texts[i] = text;
			if (text) {
				strbuf_adds(o, ",\"text\":");
				strbuf_add_json(o, text);
			}
		}
		if (n->cand >= 0)
			strbuf_addf(o, ",\"cand\":\"#%d\"", m->cand_rank[n->cand]);
		strbuf_adds(o, "}");
	}
	strbuf_adds(o, "},\"groups\":{");
	int first = 1;
	const struct gview *views[2] = {in->all, in->top};
	for (int w = 0; w < 2; w++) {
		if (!views[w] || (w == 1 && !in->top_svg))
			continue;
		for (int i = 0; i < views[w]->nr; i++) {
			const struct gvert *v = &views[w]->v[i];
			if (v->count < 2 || (w == 1 && in->all))
				continue;
			strbuf_addf(o, "%s\"g%d\":[", first ? "" : ",", m->nodes[v->node].id);
			for (int k = 0; k < v->count; k++)
				strbuf_addf(o, "%s%d", k ? "," : "", m->nodes[v->members[k]].id);
			strbuf_adds(o, "]");
			first = 0;
		}
	}
	strbuf_adds(o, "}}");
	strbuf_release(&t);
	hmap_release(&seen);
	free(texts);
}

void html_write(const struct html_input *in, struct strbuf *out)
{
	struct page pg = {.m = in->m};
	struct rmodel *m = in->m;
	srccache_init(&pg.src);
	const cJSON *tr;
	cJSON_ArrayForEach(tr, jarr(m->root, "traces"))
	{
		srccache_add_dir(&pg.src, jstr(tr, "cwd"));
	}
	srccache_add_dir(&pg.src, in->summary_dir);
	srccache_add_dir(&pg.src, ".");
	pg.peak_bw = jnumd(jobj(m->root, "device"), "peak_bw_gbs", -1);
	if (pg.peak_bw <= 0) {
		pg.peak_bw = -1;
		rmodel_missing(m, "device.peak_bw_gbs");
	}

	static const struct {
		const char *id, *nav, *title, *question;
	} sec[] = {
	    {"overview", "Overview", "1. Overview",
	     "Where do the step's time and VRAM traffic go, and how much could fusion win?"},
	    {"candidates", "Fusions", "2. Fusion candidates",
	     "Which kernels should become one, what does it save, and what do I change?"},
	    {"graph", "Graph", "3. The step graph",
	     "Which kernel feeds which, and how many bytes pass between them?"},
	    {"ledger", "Ledger", "4. The VRAM ledger",
	     "Which kernels and values move the bytes, and how close is each to the roof?"},
	    {"sources", "Source lines", "5. By source line",
	     "Which of my lines cost the most time and traffic?"},
	    {"timeline", "Timeline", "6. One step's timeline",
	     "What ran when, on which stream, and where did the GPU wait?"},
	    {"beyond", "Beyond fusion", "7. Dead work, unchanging work, memory",
	     "What runs for nothing, what could run once, and how much memory does a step need?"},
	    {"job", "Ranks", "8. The job: ranks and communication",
	     "Which rank is slow, how much communication is exposed, and what would hide it?"},
	};
	/* the job section only for a summary of several ranks: one process's page is unchanged */
	const size_t nsec = report_has_job(m) ? ARRAY_SIZE(sec) : ARRAY_SIZE(sec) - 1;
	struct strbuf body[ARRAY_SIZE(sec)];
	for (size_t i = 0; i < ARRAY_SIZE(sec); i++)
		body[i] = (struct strbuf)STRBUF_INIT;
	section_overview(&pg, &body[0]);
	section_candidates(&pg, &body[1]);
	section_graph(&pg, in, &body[2]);
	section_ledger(&pg, &body[3]);
	section_sources(&pg, &body[4]);
	section_timeline(&pg, &body[5]);
	report_beyond_section(m, &body[6]);
	if (nsec == ARRAY_SIZE(sec))
		report_job_section(m, &body[7]);

	char css_hash[45], js_hash[45];
	sha256_base64(report_css, strlen(report_css), css_hash);
	sha256_base64(report_js, strlen(report_js), js_hash);
	const char *prog = jstr(m->root, "program");
	strbuf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
	strbuf_addf(out,
	            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	            "style-src 'sha256-%s'; script-src 'sha256-%s'; img-src data:; "
	            "base-uri 'none'; form-action 'none'\">\n",
	            css_hash, js_hash);
	strbuf_adds(out,
	            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	            "<meta name=\"referrer\" content=\"no-referrer\">\n<title>aicprof: ");
	H(out, prog ? prog : "report");
	strbuf_adds(out, "</title>\n<style>");
	strbuf_adds(out, report_css);
	strbuf_adds(out,
	            "</style>\n</head>\n<body>\n<header><h1>aicprof report</h1><p class=\"sub\">");
	if (prog) {
		strbuf_adds(out, "<code>");
		H(out, prog);
		strbuf_adds(out, "</code>");
	} else {
		unknown(out);
	}
	const char *dev = jstr(jobj(m->root, "device"), "name");
	if (dev) {
		strbuf_adds(out, " on ");
		H(out, dev);
	}
	if (jstr(m->root, "tool")) {
		strbuf_adds(out, " · analysed by ");
		H(out, jstr(m->root, "tool"));
	}
	strbuf_adds(out, "</p>\n<nav>");
	for (size_t i = 0; i < nsec; i++)
		strbuf_addf(out, "<a href=\"#%s\">%s</a>", sec[i].id, sec[i].nav);
	strbuf_adds(out, "</nav></header>\n<main>\n");
	report_lead_section(m, out); /* the GPU idle or busy, before the findings */
	for (size_t i = 0; i < nsec; i++) {
		strbuf_addf(out, "<section id=\"%s\">\n<h2>%s</h2>\n<p class=\"q\">%s</p>\n",
		            sec[i].id, sec[i].title, sec[i].question);
		if (i == 0 && m->nr_missing) {
			strbuf_adds(out,
			            "<p class=\"note\" id=\"missing\">This summary.json does not "
			            "give ");
			for (int k = 0; k < m->nr_missing; k++) {
				strbuf_adds(out, k ? ", <code>" : "<code>");
				H(out, m->missing[k]);
				strbuf_adds(out, "</code>");
			}
			strbuf_adds(out, "; what depends on it shows as <span class=\"unk\">unknown"
			                 "</span>.</p>\n");
		}
		strbuf_add(out, body[i].buf ? body[i].buf : "", body[i].len);
		strbuf_adds(out, "</section>\n");
		strbuf_release(&body[i]);
	}
	strbuf_adds(out,
	            "</main>\n<footer>Written by aicprof from summary.json. Beside this page: "
	            "<a href=\"graph.svg\">graph.svg</a>, <a href=\"graph.dot\">graph.dot</a>, "
	            "<a href=\"trace.perfetto.json\">trace.perfetto.json</a>.</footer>\n");
	strbuf_adds(out, "<script type=\"application/json\" id=\"aicprof-data\">");
	data_block(&pg, in, out);
	strbuf_adds(out, "</script>\n<script>");
	strbuf_adds(out, report_js);
	strbuf_adds(out, "</script>\n</body>\n</html>\n");
	srccache_release(&pg.src);
}
