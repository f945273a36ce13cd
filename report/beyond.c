/*
 * beyond.c - the report section "Beyond fusion". It reads only summary.json (through the
 * rmodel): the candidates of kinds dead and invariant become two tables, rows in the order of
 * the candidates' shared rank by time saved (rank links to the candidate's article; autograd's
 * findings, which save 0 us, come last), and the top-level `memory` object becomes its
 * figures, a plot, the values alive at the peak and, for every fusion candidate, the bytes it
 * frees there. The plot is inline SVG drawn
 * with presentation attributes only (the page's Content Security Policy allows no inline
 * style): held bytes (what the allocator records show) and ideal bytes (values' lifetimes)
 * over the step's node positions, a step line each, with the two peaks marked.
 */
#include "report/beyond.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#define H(o, s) strbuf_add_html((o), (s))

static void nodes_cell(struct strbuf *o, const cJSON *ids)
{
	const cJSON *id;
	int k = 0;
	strbuf_adds(o, "<td>");
	cJSON_ArrayForEach(id, ids)
	{
		if (cJSON_IsNumber(id))
			strbuf_addf(o, "%s%d", k++ ? ", " : "", rmodel_int(id->valuedouble));
	}
	strbuf_adds(o, "</td>");
}

static void sources_cell(struct strbuf *o, const cJSON *c)
{
	const cJSON *s;
	int k = 0;
	strbuf_adds(o, "<td>");
	cJSON_ArrayForEach(s, jarr(c, "sources"))
	{
		if (cJSON_IsString(s)) {
			strbuf_adds(o, k++ ? "<br>" : "");
			H(o, s->valuestring);
		}
	}
	strbuf_adds(o, "</td>");
}

/* Rows in the order of the candidates' rank by time saved (shared with the fusion ones), at
 * most MAX_ROWS: the rest are counted in one line (summary.json has them all). */
#define MAX_ROWS 500
static void table(const struct rmodel *m, struct strbuf *o, const char *kind)
{
	char b[32];
	int n = 0, more = 0;
	for (int r = 0; r < m->nr_cands; r++) {
		int ci = m->cand_order ? m->cand_order[r] : r;
		const cJSON *c = cJSON_GetArrayItem(m->cands, ci);
		const char *k = jstr(c, "kind");
		if (!k || strcmp(k, kind))
			continue;
		if (n >= MAX_ROWS) {
			more++;
			continue;
		}
		if (!n++)
			strbuf_addf(
			    o,
			    "<table class=\"beyond\" id=\"beyond-%s\"><thead><tr><th>rank</th>"
			    "<th>nodes</th><th>source</th><th>saved us/step</th><th>bytes/step</th>"
			    "<th>verdict</th><th>why</th></tr></thead><tbody>\n",
			    kind);
		const cJSON *ev = jobj(c, "evidence");
		strbuf_addf(o, "<tr><td class=\"n\"><a href=\"#cand-%d\">#%d</a></td>", r + 1,
		            r + 1);
		nodes_cell(o, jarr(c, "nodes"));
		sources_cell(o, c);
		strbuf_addf(o, "<td class=\"n\">%.1f</td><td class=\"n\">%s</td><td>",
		            jnumd(c, "time_saved_us_per_step", 0),
		            fmt_bytes(jnumd(c, "bytes_saved_per_step", 0), b));
		const char *v = jstr(ev, "verdict");
		const char *w = jstr(ev, "what");
		if (v)
			H(o, v);
		else if (w)
			H(o, w);
		else
			strbuf_adds(o, cJSON_IsTrue(cJSON_GetObjectItem(ev, "refuted"))
			                   ? "refuted by fingerprints"
			               : cJSON_IsTrue(cJSON_GetObjectItem(ev, "confirmed"))
			                   ? "confirmed by fingerprints"
			                   : "from the graph; not confirmed");
		if (cJSON_IsFalse(cJSON_GetObjectItem(ev, "actionable")))
			strbuf_adds(o, "<br>inside autograd: not actionable from the source");
		strbuf_adds(o, "</td><td>");
		H(o, jstr(c, "why") ? jstr(c, "why") : "");
		strbuf_adds(o, "</td></tr>\n");
	}
	if (n)
		strbuf_adds(o, "</tbody></table>\n");
	else
		strbuf_addf(o, "<p>No %s finding in this step.</p>\n", kind);
	if (more)
		strbuf_addf(o,
		            "<p class=\"mute\">%d more %s finding%s, ranked lower, are in "
		            "summary.json.</p>\n",
		            more, kind, more == 1 ? "" : "s");
}

static void plot(struct strbuf *o, const cJSON *curve, double top)
{
	int n = cJSON_GetArraySize(curve);
	if (n < 1 || top <= 0)
		return;
	const int W = 760, Hh = 220, L = 70, R = 10, T = 10, B = 30;
	double dx = (double)(W - L - R) / n;
	strbuf_addf(o,
	            "<svg class=\"memplot\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	            "role=\"img\" aria-label=\"live bytes over the step\">\n",
	            W, Hh, W, Hh);
	strbuf_addf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", L,
	            Hh - B, W - R, Hh - B);
	strbuf_addf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", L, T, L,
	            Hh - B);
	for (int g = 0; g <= 4; g++) {
		char b[32];
		double y = Hh - B - (Hh - B - T) * g / 4.0;
		strbuf_addf(o,
		            "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" "
		            "fill=\"#444\">%s</text>\n",
		            L - 4, y + 3, fmt_bytes(top * g / 4.0, b));
	}
	strbuf_addf(o,
	            "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#444\">node position in the "
	            "step (0 .. %d)</text>\n",
	            L, Hh - 8, n - 1);
	static const char *keys[] = {"held", "ideal"}, *cols[] = {"#c0392b", "#2471a3"};
	for (int s = 0; s < 2; s++) {
		strbuf_addf(o,
		            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		            cols[s]);
		int i = 0;
		const cJSON *p;
		cJSON_ArrayForEach(p, curve)
		{
			double v = jnumd(p, keys[s], 0);
			double y = Hh - B - (Hh - B - T) * (v / top);
			strbuf_addf(o, "%.1f,%.1f %.1f,%.1f ", L + dx * i, y, L + dx * (i + 1), y);
			i++;
		}
		strbuf_adds(o, "\"/>\n");
	}
	strbuf_addf(o,
	            "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">held (allocator "
	            "records)</text><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">ideal "
	            "(values' lifetimes)</text>\n</svg>\n",
	            L + 260, Hh - 8, cols[0], L + 420, Hh - 8, cols[1]);
}

void report_beyond_section(const struct rmodel *m, struct strbuf *o)
{
	char b1[32], b2[32], b3[32];
	strbuf_adds(o, "<h3>Dead work</h3>\n<p>Kernels and copies whose every output is written "
	               "and never read. <em>kept-alive</em> outputs only look dead: they outlive "
	               "the step and may be read after it.</p>\n");
	table(m, o, "dead");
	strbuf_adds(o, "<h3>Work that never changes</h3>\n<p>Kernels whose inputs are the same "
	               "every step (compute once, keep the result), and host traffic repeated "
	               "every step. A probe trace (<code>AICPROF_WRITES=probe</code>) confirms "
	               "or refutes each with the kept values' fingerprints across steps. "
	               "Findings launched inside autograd save nothing: the source cannot move "
	               "them. Ranks are shared with the fusion candidates (by time saved).</p>\n");
	table(m, o, "invariant");
	strbuf_adds(o, "<h3>The memory plan</h3>\n");
	const cJSON *mem = jobj(m->root, "memory");
	if (!mem) {
		strbuf_adds(o, "<p>No memory plan in this summary.</p>\n");
		return;
	}
	double held = jnumd(mem, "held_peak_any_bytes", jnumd(mem, "held_peak_bytes", 0));
	double ideal = jnumd(mem, "ideal_peak_bytes", 0);
	strbuf_addf(o,
	            "<p>Step %d: the program held <b>%s</b> in live allocations at peak; the "
	            "step's values need <b>%s</b> at peak with exact frees (after node %d): "
	            "<b>%s</b> is held by late frees and values kept past their last use.</p>\n",
	            (int)jnumd(mem, "step", 0), fmt_bytes(held, b1), fmt_bytes(ideal, b2),
	            (int)jnumd(mem, "ideal_peak_after_node", 0),
	            fmt_bytes(held > ideal ? held - ideal : 0, b3));
	plot(o, jarr(mem, "curve"), held > ideal ? held : ideal);
	const cJSON *v;
	int n = 0;
	cJSON_ArrayForEach(v, jarr(mem, "at_peak"))
	{
		if (!n++)
			strbuf_adds(
			    o, "<details><summary>Values alive at the ideal peak</summary>"
			       "<table class=\"beyond\"><thead><tr><th>value</th><th>bytes</th>"
			       "<th>writer</th><th>source</th><th>removed by candidate</th>"
			       "</tr></thead><tbody>\n");
		const cJSON *rb = cJSON_GetObjectItem(v, "removed_by");
		strbuf_addf(
		    o,
		    "<tr><td class=\"n\">%d</td><td class=\"n\">%s</td><td class=\"n\">%d</td><td>",
		    (int)jnumd(v, "value", -1), fmt_bytes(jnumd(v, "bytes", 0), b1),
		    (int)jnumd(v, "writer", -1));
		H(o, jstr(v, "source") ? jstr(v, "source") : "");
		if (cJSON_IsNumber(rb))
			strbuf_addf(o, "</td><td>%d</td></tr>\n", rmodel_int(rb->valuedouble));
		else
			strbuf_adds(o, "</td><td></td></tr>\n");
	}
	if (n)
		strbuf_adds(o, "</tbody></table></details>\n");
	/* the fusion candidates that free something at the ideal peak; a table of zeros says
	 * nothing, so when none does, one line says that */
	n = 0;
	int fusions = 0;
	for (int r = 0; r < m->nr_cands; r++) {
		int ci = m->cand_order ? m->cand_order[r] : r;
		const cJSON *c = cJSON_GetArrayItem(m->cands, ci);
		const char *k = jstr(c, "kind");
		if (!k || !strcmp(k, "dead") || !strcmp(k, "invariant") || !strcmp(k, "memory"))
			continue;
		double freed = 0;
		cJSON_ArrayForEach(v, jarr(mem, "freed_by_candidate"))
		{
			if ((int)jnumd(v, "candidate", -1) == (int)jnumd(c, "id", -2))
				freed = jnumd(v, "bytes", 0);
		}
		fusions++;
		if (!(freed > 0))
			continue;
		if (!n++)
			strbuf_adds(o, "<table class=\"beyond\" id=\"beyond-frees\"><thead><tr>"
			               "<th>rank</th><th>fusion candidate</th><th>frees at the peak"
			               "</th></tr></thead><tbody>\n");
		strbuf_addf(o, "<tr><td class=\"n\"><a href=\"#cand-%d\">#%d</a></td><td>", r + 1,
		            r + 1);
		H(o, k);
		strbuf_addf(o, "</td><td class=\"n\">%s</td></tr>\n", fmt_bytes(freed, b1));
	}
	if (n)
		strbuf_adds(o, "</tbody></table>\n");
	else if (fusions)
		strbuf_addf(o,
		            "<p class=\"note\" id=\"beyond-frees\">None of the %d fusion "
		            "findings frees memory at the ideal peak: the intermediates they keep "
		            "on chip are not live there.</p>\n",
		            fusions);
}
