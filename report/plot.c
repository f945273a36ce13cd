/*
 * plot.c - roofline and timeline as SVG, drawn by hand (Graphviz lays out graphs, not plots).
 *
 * Roofline: both axes are log10, spanning whole decades that hold every point and every roof.
 * A kernel is a circle whose area follows its share of the step's kernel time, coloured by
 * family. The bandwidth roof is y = peak_bw * x; each compute ceiling is a horizontal line at
 * peak_tflops[dtype] from the point where it meets the bandwidth roof (the ridge). Ceilings of
 * the same peak share one line and one label ("bf16/fp16 tensor core 989 TFLOP/s", each
 * tensor-core dtype named). Labels never overlap: each text's box is estimated from its font
 * size and characters (text_w(): 0.6 em a character, the box from 0.8 em above the baseline to
 * 0.25 em below; tests/func/t-plot.sh checks with the same estimate) and placed where it meets
 * no box placed before (struct boxes): the bandwidth roof's label first, then each ceiling's
 * above its line, else under it, else stepped further away; then the names of the largest
 * kernels beside their points (right, left, above, below, else none), elided in the middle
 * (elide_mid()) with the full name in a <title>. Every kernel with a FLOP count is a point
 * (GEMMs at the FLOPs the analyzer derived from their operand extents); the kernels with none
 * (data movement: no intensity, so no place on a roofline) are points of a strip under the plot,
 * at the bandwidth they achieved against the peak (data_strip()).
 *
 * Every number from the summary is checked before it becomes an int or a log: non-finite and
 * out-of-range values are left out or clamped (decades to [-30, 30], stream and node ids to
 * int), so a hostile summary gives a plot, never undefined behaviour.
 *
 * Timeline: streams are lanes in the order they first appear; the x axis runs from the first
 * event's start to the last event's end, with ticks at 1, 2 or 5 times a power of ten. Names
 * are written inside a box only when at least 5 characters fit (about 6 px a character), elided
 * in the middle when the whole does not (the box's <title> has it).
 */
#include "report/plot.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *family, *colour;
} family_colours[] = {
    {"elementwise", "#4e79a7"}, {"reduction", "#f28e2b"}, {"norm", "#e15759"},
    {"softmax", "#76b7b2"},     {"gemm", "#59a14f"},      {"attention", "#edc948"},
    {"index", "#b07aa1"},       {"copy", "#ff9da7"},      {"memset", "#9c755f"},
    {"optimizer", "#d4a6c8"},   {"triton", "#86bcb6"},    {"nccl", "#d37295"},
};

const char *family_colour(const char *family)
{
	for (size_t i = 0; family && i < ARRAY_SIZE(family_colours); i++)
		if (!strcmp(family, family_colours[i].family))
			return family_colours[i].colour;
	return "#a0a0a0";
}

static void add_us(struct strbuf *sb, double us)
{
	if (us >= 1000)
		strbuf_addf(sb, "%.2f ms", us / 1000);
	else
		strbuf_addf(sb, "%.1f µs", us);
}

/* "1G", "10T", "0.1" for a power of ten with an SI prefix where it has one. */
static void add_decade(struct strbuf *sb, int e)
{
	static const char *pre[] = {"", "k", "M", "G", "T", "P", "E"};
	if (e >= 0 && e / 3 < (int)ARRAY_SIZE(pre)) {
		static const char *mul[] = {"1", "10", "100"};
		strbuf_addf(sb, "%s%s", mul[e % 3], pre[e / 3]);
	} else {
		strbuf_addf(sb, "%g", pow(10, e));
	}
}

struct axis {
	int lo, hi;      /* decades */
	double px0, px1; /* pixel positions of lo and hi */
};

static double axis_px(const struct axis *a, double v)
{
	return a->px0 + (log10(v) - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

/* v as an int in [lo, hi]: NaN gives lo, values beyond the range its nearer end. */
static int clamp_int(double v, int lo, int hi)
{
	if (!(v >= lo)) /* NaN too */
		return lo;
	if (v > hi)
		return hi;
	return (int)v;
}

/* A label's estimated width in px: 0.6 em a character (UTF-8 continuation bytes not counted). */
static double text_w(const char *s, double fs)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return 0.6 * fs * n;
}

/* The boxes of the labels placed so far, to keep the next one off them. */
struct boxes {
	double b[64][4]; /* x0, y0, x1, y1 */
	int n;
};

static int box_free(const struct boxes *bx, double x0, double y0, double x1, double y1)
{
	for (int i = 0; i < bx->n; i++)
		if (x0 < bx->b[i][2] && bx->b[i][0] < x1 && y0 < bx->b[i][3] && bx->b[i][1] < y1)
			return 0;
	return 1;
}

static void box_add(struct boxes *bx, double x0, double y0, double x1, double y1)
{
	if (bx->n < (int)ARRAY_SIZE(bx->b)) {
		bx->b[bx->n][0] = x0;
		bx->b[bx->n][1] = y0;
		bx->b[bx->n][2] = x1;
		bx->b[bx->n][3] = y1;
		bx->n++;
	}
}

/* Appends name, HTML-escaped, cut to at most max characters by an ellipsis in the middle. */
static void elide_mid(struct strbuf *out, const char *name, int max)
{
	int n = 0;
	for (const char *p = name; *p; p++)
		n += ((unsigned char)*p & 0xC0) != 0x80;
	if (n <= max || max < 5) {
		strbuf_add_html(out, name);
		return;
	}
	int head = (max - 1) / 2 + (max - 1) % 2, tail = (max - 1) / 2, c = 0;
	struct strbuf cut = STRBUF_INIT;
	const char *p = name;
	for (; *p; p++) { /* the first head characters */
		if (((unsigned char)*p & 0xC0) != 0x80 && c++ == head)
			break;
		strbuf_add(&cut, p, 1);
	}
	strbuf_adds(&cut, "…");
	c = 0;
	const char *q = name + strlen(name);
	while (q > name && c < tail) /* the last tail characters */
		if (((unsigned char)*--q & 0xC0) != 0x80)
			c++;
	strbuf_adds(&cut, q);
	strbuf_add_html(out, cut.buf);
	strbuf_release(&cut);
}

/* Whether a node is a roofline point: finite positive FLOPs, intensity and time. */
static int roof_point(const struct rnode *p)
{
	return isfinite(p->flops) && isfinite(p->intensity) && isfinite(p->us) && p->flops > 0 &&
	       p->intensity > 0 && p->us > 0 && isfinite(p->flops / (p->us * 1e-6));
}

/* A tensor-core dtype's name among the ceilings (fp32 runs on the CUDA cores). */
static int tensor_dtype(const char *name)
{
	return !strcmp(name, "bf16") || !strcmp(name, "fp16") || !strcmp(name, "tf32") ||
	       !strncmp(name, "fp8", 3) || !strcmp(name, "int8");
}

struct ceiling {
	double tflops;
	char names[64]; /* "bf16/fp16" */
	int tensor;
};

/* The device's compute ceilings, those of equal peak (within 0.5%) merged, highest first. */
static int ceilings(const cJSON *tf, struct ceiling *out, int max)
{
	int n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, tf)
	{
		if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble <= 0 ||
		    c->valuedouble > 1e9 || !c->string)
			continue;
		int k = 0;
		while (k < n && fabs(out[k].tflops - c->valuedouble) > 0.005 * out[k].tflops)
			k++;
		if (k == n) {
			if (n == max)
				continue;
			out[n].tflops = c->valuedouble;
			out[n].names[0] = 0;
			out[n].tensor = 0;
			n++;
		}
		size_t len = strlen(out[k].names);
		if (len + strlen(c->string) + 2 < sizeof(out[k].names))
			snprintf(out[k].names + len, sizeof(out[k].names) - len, "%s%s",
			         len ? "/" : "", c->string);
		out[k].tensor |= tensor_dtype(c->string);
	}
	for (int i = 1; i < n; i++) /* insertion sort, descending */
		for (int j = i; j > 0 && out[j].tflops > out[j - 1].tflops; j--) {
			struct ceiling t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

/* Whether a node is a kernel that moves data without a FLOP count: the strip's points. */
static int strip_point(const struct rnode *p)
{
	return (!p->kind || !strcmp(p->kind, "kernel")) && !roof_point(p) && isfinite(p->us) &&
	       p->us > 0 && isfinite(p->gbs) && p->gbs >= 0;
}

#define STRIP_H 76
/*
 * The kernels with no FLOP count (casts, copies, fills, cat, a library's helpers) have no
 * place on a roofline: they are drawn in a strip under it, at the bandwidth they achieved on
 * a linear axis from 0 to the peak (a kernel whose bytes stayed in L2 can pass the peak: it
 * sits at the right end, its title says by how much), sized like the roofline's points.
 */
static void data_strip(const struct rmodel *m, struct strbuf *out, double peak_gbs, double total,
                       double x0, double x1, double top, int without)
{
	int n = 0;
	for (int i = 0; i < m->nr_nodes; i++)
		n += strip_point(&m->nodes[i]);
	double y = top + 44;
	strbuf_addf(out,
	            "<text class=\"tick\" x=\"%.0f\" y=\"%.0f\">%d kernel%s without FLOPs "
	            "(casts, copies, fills, helpers): achieved bandwidth, 0 to the peak",
	            x0, top + 18, n, n == 1 ? "" : "s");
	if (without > n)
		strbuf_addf(out, "; %d with no time or bandwidth not drawn", without - n);
	strbuf_adds(out, "</text>\n");
	strbuf_addf(out, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>\n",
	            x0, y, x1, y);
	for (int k = 0; k <= 4; k++) {
		double x = x0 + (x1 - x0) * k / 4;
		strbuf_addf(
		    out,
		    "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>"
		    "<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"%s\">%.0f GB/s"
		    "</text>\n",
		    x, y - 4, x, y + 4, x, y + 26,
		    k == 0   ? "start"
		    : k == 4 ? "end"
		             : "middle",
		    peak_gbs * k / 4);
	}
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct rnode *p = &m->nodes[i];
		if (!strip_point(p))
			continue;
		double f = peak_gbs > 0 ? fmin(p->gbs / peak_gbs, 1) : 0;
		double r = 3 + 10 * sqrt(fmin(p->us / total, 1));
		strbuf_addf(out,
		            "<circle class=\"pt nf\" cx=\"%.1f\" cy=\"%.0f\" r=\"%.1f\" "
		            "fill=\"%s\" data-node=\"%d\"><title>",
		            x0 + (x1 - x0) * f, y, r, family_colour(p->family), p->id);
		strbuf_add_html(out, p->name);
		strbuf_addf(out, "\n%.0f GB/s (%.0f%% of the peak), ", p->gbs,
		            peak_gbs > 0 ? 100 * p->gbs / peak_gbs : 0);
		add_us(out, p->us);
		strbuf_adds(out, "</title></circle>\n");
	}
}

int plot_roofline(const struct rmodel *m, struct strbuf *out)
{
	const cJSON *dev = jobj(m->root, "device");
	double bw = jnumd(dev, "peak_bw_gbs", -1) * 1e9; /* bytes/s */
	if (!isfinite(bw) || bw > 1e21)
		bw = -1;
	const cJSON *tf = jobj(dev, "peak_tflops");
	double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0, peak = 0;
	int n = 0, without = 0;
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct rnode *p = &m->nodes[i];
		if (!roof_point(p)) {
			without += !p->kind || !strcmp(p->kind, "kernel");
			continue;
		}
		double y = p->flops / (p->us * 1e-6);
		xmin = fmin(xmin, p->intensity);
		xmax = fmax(xmax, p->intensity);
		ymin = fmin(ymin, y);
		ymax = fmax(ymax, y);
		n++;
	}
	if (!n)
		return 0;
	struct ceiling ceil_of[8];
	int nceil = ceilings(tf, ceil_of, (int)ARRAY_SIZE(ceil_of));
	if (nceil)
		peak = ceil_of[0].tflops * 1e12;
	if (peak > 0)
		ymax = fmax(ymax, peak);
	if (bw > 0 && peak > 0)
		xmax = fmax(xmax, peak / bw); /* show the ridge */
	ymax *= 3;                            /* room for the ceilings' labels */
	xmax *= 2;
	const double W = 760, H = 440, L = 70, R = 24, T = 16, B = 50;
	struct axis ax = {clamp_int(floor(log10(xmin)), -30, 30),
	                  clamp_int(ceil(log10(xmax)), -30, 30), L, W - R};
	struct axis ay = {clamp_int(floor(log10(ymin)), -30, 30),
	                  clamp_int(ceil(log10(ymax)), -30, 30), H - B, T};
	if (ax.hi <= ax.lo)
		ax.hi = ax.lo + 1;
	if (ay.hi <= ay.lo)
		ay.hi = ay.lo + 1;
	strbuf_addf(out,
	            "<svg class=\"plot\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
	            "aria-label=\"roofline\" xmlns=\"http://www.w3.org/2000/svg\">\n",
	            W, H + (without && bw > 0 ? STRIP_H : 0));
	strbuf_addf(out,
	            "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
	            "class=\"frame\"/>\n",
	            L, T, W - R - L, H - B - T);
	for (int e = ax.lo; e <= ax.hi; e++) {
		double x = axis_px(&ax, pow(10, e));
		strbuf_addf(out,
		            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
		            "y2=\"%.0f\"/><text class=\"tick\" x=\"%.1f\" y=\"%.0f\" "
		            "text-anchor=\"middle\">",
		            x, T, x, H - B, x, H - B + 16);
		add_decade(out, e);
		strbuf_adds(out, "</text>\n");
	}
	for (int e = ay.lo; e <= ay.hi; e++) {
		double y = axis_px(&ay, pow(10, e));
		strbuf_addf(out,
		            "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" "
		            "y2=\"%.1f\"/><text class=\"tick\" x=\"%.0f\" y=\"%.1f\" "
		            "text-anchor=\"end\">",
		            L, y, W - R, y, L - 6, y + 4);
		add_decade(out, e);
		strbuf_adds(out, "</text>\n");
	}
	strbuf_addf(out,
	            "<text class=\"axis\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">"
	            "arithmetic intensity (FLOP per byte of VRAM traffic)</text>\n",
	            (L + W - R) / 2, H - 12);
	strbuf_addf(out,
	            "<text class=\"axis\" transform=\"translate(16 %.0f) rotate(-90)\" "
	            "text-anchor=\"middle\">achieved FLOP/s</text>\n",
	            (T + H - B) / 2);
	/* Clip the roofs to the frame. */
	strbuf_addf(out,
	            "<clipPath id=\"rf-clip\"><rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
	            "height=\"%.0f\"/></clipPath><g clip-path=\"url(#rf-clip)\">\n",
	            L, T, W - R - L, H - B - T);
	double x0 = pow(10, ax.lo), x1 = pow(10, ax.hi);
	struct boxes bx = {.n = 0};
	if (without && bw <= 0) /* the note's box first: it is written last, at the top left */
		box_add(&bx, L + 6, T + 14 - 0.8 * 11, L + 6 + 0.6 * 11 * 42, T + 14 + 0.25 * 11);
	if (bw > 0) {
		double xe = peak > 0 ? peak / bw : x1;
		strbuf_addf(out,
		            "<line class=\"roof\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		            "y2=\"%.1f\"><title>bandwidth roof %.0f GB/s</title></line>\n",
		            axis_px(&ax, x0), axis_px(&ay, bw * x0), axis_px(&ax, xe),
		            axis_px(&ay, bw * xe), bw / 1e9);
		/* The label sits on the roof, left of the ridge, turned to its slope. */
		double lx = xe / 12, ly = bw * lx;
		double ang =
		    atan2(axis_px(&ay, 10) - axis_px(&ay, 1), axis_px(&ax, 10) - axis_px(&ax, 1));
		struct strbuf lab = STRBUF_INIT;
		strbuf_addf(&lab, "bandwidth roof %.0f GB/s", bw / 1e9);
		double w = text_w(lab.buf, 11), px = axis_px(&ax, lx), py = axis_px(&ay, ly);
		/* the rotated box, (-w, -5 - 0.8 em) to (0, -5 + 0.25 em), as an upright one */
		double ca = cos(ang), sa = sin(ang), bx0 = INFINITY, by0 = INFINITY,
		       bx1 = -INFINITY, by1 = -INFINITY;
		for (int c = 0; c < 4; c++) {
			double u = c & 1 ? 0 : -w, v = c & 2 ? -5 + 0.25 * 11 : -5 - 0.8 * 11;
			bx0 = fmin(bx0, px + u * ca - v * sa);
			bx1 = fmax(bx1, px + u * ca - v * sa);
			by0 = fmin(by0, py + u * sa + v * ca);
			by1 = fmax(by1, py + u * sa + v * ca);
		}
		strbuf_release(&lab);
		if (lx > x0 && ly > pow(10, ay.lo) && ly < pow(10, ay.hi) &&
		    box_free(&bx, bx0, by0, bx1, by1)) {
			box_add(&bx, bx0, by0, bx1, by1);
			strbuf_addf(out,
			            "<text class=\"rooflabel\" text-anchor=\"end\" "
			            "transform=\"translate(%.1f %.1f) rotate(%.1f)\" dy=\"-5\">"
			            "bandwidth roof %.0f GB/s</text>\n",
			            px, py, ang * 180 / M_PI, bw / 1e9);
		}
	}
	for (int k = 0; k < nceil; k++) {
		double f = ceil_of[k].tflops * 1e12, xs = bw > 0 ? f / bw : x0;
		double y = axis_px(&ay, f);
		struct strbuf lab = STRBUF_INIT;
		strbuf_adds(&lab, ceil_of[k].names);
		strbuf_addf(&lab, "%s %.0f TFLOP/s", ceil_of[k].tensor ? " tensor core" : "",
		            ceil_of[k].tflops);
		double w = text_w(lab.buf, 11), xr = W - R - 4, ly = NAN;
		/* above the line, under it, then further away on either side */
		for (int t = 0; t < 24 && isnan(ly); t++) {
			double c = t == 0   ? y - 4
			           : t == 1 ? y + 12
			           : t % 2  ? y + 12 + 12 * (t / 2)
			                    : y - 4 - 12 * (t / 2);
			if (c - 0.8 * 11 >= T && c + 0.25 * 11 <= H - B &&
			    box_free(&bx, xr - w, c - 0.8 * 11, xr, c + 0.25 * 11))
				ly = c;
		}
		strbuf_addf(out,
		            "<line class=\"ceil\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		            "y2=\"%.1f\"/>",
		            axis_px(&ax, fmax(xs, x0)), y, axis_px(&ax, x1), y);
		if (!isnan(ly)) {
			box_add(&bx, xr - w, ly - 0.8 * 11, xr, ly + 0.25 * 11);
			strbuf_addf(out,
			            "<text class=\"rooflabel\" x=\"%.1f\" y=\"%.1f\" "
			            "text-anchor=\"end\">",
			            xr, ly);
			strbuf_add_html(out, lab.buf);
			strbuf_adds(out, "</text>");
		}
		strbuf_adds(out, "\n");
		strbuf_release(&lab);
	}
	strbuf_adds(out, "</g>\n");
	double total = m->kernel_us > 0 ? m->kernel_us : 1;
	if (!isfinite(total))
		total = 1;
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct rnode *p = &m->nodes[i];
		if (!roof_point(p))
			continue;
		double y = p->flops / (p->us * 1e-6);
		double r = 3 + 14 * sqrt(fmin(p->us / total, 1));
		strbuf_addf(out,
		            "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" "
		            "fill=\"%s\" data-node=\"%d\"><title>",
		            axis_px(&ax, p->intensity), axis_px(&ay, y), r,
		            family_colour(p->family), p->id);
		strbuf_add_html(out, p->name);
		strbuf_addf(out, "\n%.3g FLOP/B, %.3g GFLOP/s, ", p->intensity, y / 1e9);
		add_us(out, p->us);
		if (p->bound) {
			strbuf_adds(out, ", ");
			strbuf_add_html(out, p->bound);
			strbuf_adds(out, "-bound");
		}
		strbuf_adds(out, "</title></circle>\n");
	}
	/* the names of the largest points (by time), where they fit */
	int order[12], no = 0;
	for (int i = 0; i < m->nr_nodes; i++) {
		const struct rnode *p = &m->nodes[i];
		if (!roof_point(p))
			continue;
		int j = no;
		if (no == (int)ARRAY_SIZE(order)) { /* full: p replaces the last when larger */
			if (m->nodes[order[no - 1]].us >= p->us)
				continue;
			j = no - 1;
		} else {
			no++;
		}
		order[j] = i;
		for (; j > 0 && m->nodes[order[j]].us > m->nodes[order[j - 1]].us; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	}
	for (int k = 0, shown = 0; k < no && shown < 8; k++) {
		const struct rnode *p = &m->nodes[order[k]];
		int seen = 0; /* one label a name: the largest point of it */
		for (int j = 0; j < k && !seen; j++)
			seen = !strcmp(m->nodes[order[j]].name, p->name);
		if (seen)
			continue;
		shown++;
		double cx = axis_px(&ax, p->intensity),
		       cy = axis_px(&ay, p->flops / (p->us * 1e-6));
		double r = 3 + 14 * sqrt(fmin(p->us / total, 1)), fs = 11;
		struct strbuf lab = STRBUF_INIT;
		elide_mid(&lab, p->name, 28);
		/* the width of what is shown: the escaped text, entities counted as one */
		int chars = 0;
		if (!lab.buf) /* an empty name (found by fuzz-summary) */
			strbuf_adds(&lab, "");
		for (const char *q = lab.buf ? lab.buf : ""; *q; q++) {
			if (*q == '&')
				q = strchr(q, ';') ? strchr(q, ';') : q;
			chars += ((unsigned char)*q & 0xC0) != 0x80;
		}
		double w = 0.6 * fs * chars;
		double cand[4][2] = {{cx + r + 3, cy + 4},
		                     {cx - r - 3 - w, cy + 4},
		                     {cx - w / 2, cy - r - 4},
		                     {cx - w / 2, cy + r + 12}};
		for (int c = 0; c < 4; c++) {
			double tx = cand[c][0], ty = cand[c][1];
			double b0 = tx, b1 = ty - 0.8 * fs, b2 = tx + w, b3 = ty + 0.25 * fs;
			if (b0 < L + 2 || b2 > W - R - 2 || b1 < T + 2 || b3 > H - B - 2 ||
			    !box_free(&bx, b0, b1, b2, b3))
				continue;
			box_add(&bx, b0, b1, b2, b3);
			strbuf_addf(out,
			            "<text class=\"tick ptlabel\" x=\"%.1f\" y=\"%.1f\"><title>",
			            tx, ty);
			strbuf_add_html(out, p->full_name ? p->full_name : p->name);
			strbuf_addf(out, "</title>%s</text>\n", lab.buf);
			break;
		}
		strbuf_release(&lab);
	}
	if (without && bw > 0)
		data_strip(m, out, bw / 1e9, total, L, W - R, H, without);
	else if (without)
		strbuf_addf(out,
		            "<text class=\"tick\" x=\"%.0f\" y=\"%.0f\">%d kernel%s without a FLOP "
		            "count not drawn (no peak bandwidth to place them by)</text>\n",
		            L + 6, T + 14, without, without == 1 ? "" : "s");
	strbuf_adds(out, "</svg>\n");
	return n;
}

/* A tick step of 1, 2 or 5 times a power of ten giving about 8 ticks over span. */
static double nice_step(double span)
{
	double raw = span / 8, p = pow(10, floor(log10(raw)));
	return raw / p < 1.5 ? p : raw / p < 3.5 ? 2 * p : raw / p < 7.5 ? 5 * p : 10 * p;
}

int plot_timeline(const struct rmodel *m, struct strbuf *out)
{
	const cJSON *evs = jarr(jobj(m->root, "timeline"), "events");
	int streams[64], nr = 0, n = 0;
	double t0 = INFINITY, t1 = -INFINITY, d;
	const cJSON *ev;
	cJSON_ArrayForEach(ev, evs)
	{
		double s, dur;
		if (!jnum(ev, "start_us", &s) || !isfinite(s))
			continue;
		dur = jnum(ev, "dur_us", &dur) && dur > 0 && isfinite(dur) ? dur : 0;
		t0 = fmin(t0, s);
		t1 = fmax(t1, s + dur);
		int st = jnum(ev, "stream", &d) ? clamp_int(d, INT_MIN, INT_MAX) : 0, known = 0;
		for (int i = 0; i < nr; i++)
			known |= streams[i] == st;
		if (!known && nr < (int)ARRAY_SIZE(streams))
			streams[nr++] = st;
		n++;
	}
	if (!n || !isfinite(t1 - t0))
		return 0;
	if (t1 <= t0)
		t1 = t0 + 1;
	const double W = 1000, L = 78, R = 12, T = 8, lane = 34, axis_h = 26;
	double H = T + nr * lane + axis_h;
	double scale = (W - L - R) / (t1 - t0);
	strbuf_addf(out,
	            "<svg class=\"plot timeline\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
	            "aria-label=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\">\n",
	            W, H);
	for (int i = 0; i < nr; i++) {
		double y = T + i * lane;
		strbuf_addf(out,
		            "<rect class=\"lane%s\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
		            "height=\"%.0f\"/><text class=\"tick\" x=\"%.0f\" y=\"%.0f\" "
		            "text-anchor=\"end\">stream %d</text>\n",
		            i % 2 ? " odd" : "", L, y, W - L - R, lane, L - 6, y + lane / 2 + 4,
		            streams[i]);
	}
	double step = nice_step(t1 - t0);
	for (double t = ceil(t0 / step) * step; t <= t1 + step * 1e-9; t += step) {
		double x = L + (t - t0) * scale;
		strbuf_addf(out,
		            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
		            "y2=\"%.0f\"/><text class=\"tick\" x=\"%.1f\" y=\"%.0f\" "
		            "text-anchor=\"middle\">",
		            x, T, x, T + nr * lane, x, T + nr * lane + 16);
		double tt = t - t0;
		if (step >= 1 && tt < 1000)
			strbuf_addf(out, "%.0f µs", tt);
		else
			add_us(out, tt);
		strbuf_adds(out, "</text>\n");
	}
	cJSON_ArrayForEach(ev, evs)
	{
		double s, dur;
		if (!jnum(ev, "start_us", &s) || !isfinite(s))
			continue;
		dur = jnum(ev, "dur_us", &dur) && dur > 0 && isfinite(dur) ? dur : 0;
		int st = jnum(ev, "stream", &d) ? clamp_int(d, INT_MIN, INT_MAX) : 0, lanei = 0;
		for (int i = 0; i < nr; i++)
			if (streams[i] == st)
				lanei = i;
		const char *kind = jstr(ev, "kind");
		int k = jnum(ev, "node", &d) ? rmodel_find(m, clamp_int(d, INT_MIN, INT_MAX)) : -1;
		const struct rnode *p = k >= 0 ? &m->nodes[k] : NULL;
		const char *name = jstr(ev, "name");
		if (!name)
			name = p ? p->name : kind ? kind : "event";
		double x = L + (s - t0) * scale, w = fmax(dur * scale, 1.5), y = T + lanei * lane;
		const char *fill = "#4e79a7";
		if (kind && !strcmp(kind, "copy"))
			fill = "#2ca02c";
		else if (kind && !strcmp(kind, "set"))
			fill = "#9c755f";
		else if (p)
			fill = family_colour(p->family);
		int sync = kind && !strcmp(kind, "sync");
		if (sync)
			strbuf_addf(out,
			            "<rect class=\"sync\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
			            "height=\"%.0f\"><title>",
			            x - 1, y + 1, fmax(w, 2.5), lane - 2);
		else
			strbuf_addf(out,
			            "<rect class=\"ev\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
			            "height=\"%.0f\" fill=\"%s\"%s><title>",
			            x, y + 4, w, lane - 8, fill,
			            p && p->cand >= 0 ? " stroke=\"#1f6fb2\" stroke-width=\"2\""
			                              : "");
		strbuf_add_html(out, name);
		strbuf_addf(out, "\n%s at ", kind ? kind : "event");
		add_us(out, s - t0);
		strbuf_adds(out, ", ");
		add_us(out, dur);
		strbuf_adds(out, "</title></rect>\n");
		/* The name inside the box when at least 5 characters fit. */
		int fit = clamp_int((w - 6) / 6.2, -1, 1 << 20);
		if (!sync && fit >= 5) {
			strbuf_addf(out, "<text class=\"evlabel\" x=\"%.1f\" y=\"%.0f\">", x + 3,
			            y + lane / 2 + 4);
			elide_mid(out, name, fit);
			strbuf_adds(out, "</text>\n");
		}
	}
	strbuf_adds(out, "</svg>\n");
	return n;
}
