/*
 * graph.c - the step graph view, its collapse of small nodes, its top-N cut, and its drawing by
 * Graphviz.
 *
 * Collapse: each node gets its unique successor and unique predecessor (or "none"/"several"),
 * counting distinct neighbours and ignoring self-edges. A chain starts at a small node that is
 * not the only successor of a small node whose only successor it is; it extends while the
 * current node has one successor, that successor has one predecessor, and it is small. Chains
 * are formed first, over all starts, so a chain's members never become singles; every node left
 * becomes a vertex of its own. A cycle of small nodes has no start and stays uncollapsed.
 * Edges are mapped onto vertices, self-edges dropped and parallel ones merged (bytes summed).
 *
 * Top-N: vertices ranked by time; the first N, every vertex adjacent to one of them, and the
 * nodes of the best GVIEW_TOP_CANDS candidates are kept. So that the cut graph still shows what
 * leads to what, a kept vertex that reached another kept vertex only through left-out ones gets
 * an "elided" edge to it (found by a depth-first walk through the left-out vertices).
 *
 * Drawing: cgraph builds the graph (one subgraph "cluster_<rank>" per candidate, so dot draws a
 * box around it), agwrite gives the DOT text before layout, and gvc lays it out with "dot" and
 * renders SVG into memory. Nodes are filled on a pale-to-red scale by the square root of their
 * share of the largest node's time, so the few heavy kernels stand out.
 */
#include "report/graph.h"

#include <errno.h>
#include <fcntl.h>
#include <gvc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MULTI (-2)

/* The unique distinct neighbour, -1 when none, MULTI when several. */
static void note_neighbour(int *slot, int who)
{
	if (*slot == -1)
		*slot = who;
	else if (*slot != who)
		*slot = MULTI;
}

static int is_small(const struct rmodel *m, int i, double small_share)
{
	const struct rnode *n = &m->nodes[i];
	return n->us >= 0 && m->step_us > 0 && n->us < small_share * m->step_us && n->cand < 0;
}

static int gvert_add(struct gview *gv, int node, double us, int cand)
{
	ALLOC_GROW(gv->v, gv->nr, gv->alloc);
	struct gvert *v = &gv->v[gv->nr];
	memset(v, 0, sizeof(*v));
	v->node = node;
	v->count = 1;
	v->us = us;
	v->cand = cand;
	return gv->nr++;
}

static int gedge_cmp(const void *a, const void *b)
{
	const struct gedge *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->elided - y->elided; /* a real edge before an elided one, which merges into it */
}

/* Sorts gv's edges, merging parallel ones. */
static void gview_merge_edges(struct gview *gv)
{
	if (!gv->nr_e)
		return;
	qsort(gv->e, (size_t)gv->nr_e, sizeof(*gv->e), gedge_cmp);
	int w = 0;
	for (int r = 0; r < gv->nr_e; r++) {
		if (w && gv->e[w - 1].from == gv->e[r].from && gv->e[w - 1].to == gv->e[r].to) {
			if (gv->e[r].bytes >= 0)
				gv->e[w - 1].bytes =
				    (gv->e[w - 1].bytes < 0 ? 0 : gv->e[w - 1].bytes) +
				    gv->e[r].bytes;
			continue;
		}
		gv->e[w++] = gv->e[r];
	}
	gv->nr_e = w;
}

static void gview_collapse(struct gview *gv, const struct rmodel *m, double small_share)
{
	int n = m->nr_nodes;
	int *succ = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *pred = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *vert = xmalloc(sizeof(int) * (size_t)(n + 1));
	char *small = xcalloc((size_t)n + 1, 1);
	for (int i = 0; i < n; i++) {
		succ[i] = pred[i] = vert[i] = -1;
		small[i] = (char)is_small(m, i, small_share);
	}
	for (int k = 0; k < m->nr_edges; k++) {
		const struct redge *e = &m->edges[k];
		if (e->from == e->to)
			continue;
		note_neighbour(&succ[e->from], e->to);
		note_neighbour(&pred[e->to], e->from);
	}
	/* Pass 1: chains. */
	for (int i = 0; i < n; i++) {
		if (!small[i] || vert[i] >= 0)
			continue;
		int p = pred[i];
		if (p >= 0 && small[p] && succ[p] == i)
			continue; /* not a start: a chain through p will reach i */
		int len = 1, cur = i;
		while (succ[cur] >= 0 && pred[succ[cur]] == cur && small[succ[cur]] &&
		       vert[succ[cur]] == -1 && succ[cur] != i) {
			cur = succ[cur];
			vert[cur] = -3; /* provisional, so a cycle cannot loop */
			len++;
		}
		if (len < 2) {
			continue;
		}
		int v = gvert_add(gv, i, 0, -1);
		struct gvert *gvv = &gv->v[v];
		gvv->count = len;
		gvv->members = xmalloc(sizeof(int) * (size_t)len);
		cur = i;
		for (int k = 0; k < len; k++) {
			gvv->members[k] = cur;
			gvv->us += m->nodes[cur].us;
			vert[cur] = v;
			cur = succ[cur];
		}
		gv->collapsed += len;
	}
	/* Pass 2: every other node is its own vertex, in the model's order. */
	for (int i = 0; i < n; i++)
		if (vert[i] < 0)
			vert[i] = gvert_add(gv, i, m->nodes[i].us, m->nodes[i].cand);
	for (int k = 0; k < m->nr_edges; k++) {
		const struct redge *e = &m->edges[k];
		int a = vert[e->from], b = vert[e->to];
		if (a == b)
			continue;
		ALLOC_GROW(gv->e, gv->nr_e, gv->alloc_e);
		gv->e[gv->nr_e++] = (struct gedge){a, b, e->bytes, 0};
	}
	gview_merge_edges(gv);
	free(succ);
	free(pred);
	free(vert);
	free(small);
}

static const struct gview *sort_view;

static int by_time_desc(const void *a, const void *b)
{
	double x = sort_view->v[*(const int *)a].us, y = sort_view->v[*(const int *)b].us;
	if (x != y)
		return x > y ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Adds elided edges from kept vertex v to the kept vertices it reaches through dropped ones. */
static void add_elided(const struct gview *gv, const char *keep, int v, int *first_out, int *stack,
                       char *seen, struct gedge **out, int *nr, int *alloc)
{
	int sp = 0;
	for (int k = first_out[v]; k < first_out[v + 1]; k++)
		if (!keep[gv->e[k].to] && !seen[gv->e[k].to]) {
			seen[gv->e[k].to] = 1;
			stack[sp++] = gv->e[k].to;
		}
	while (sp) {
		int u = stack[--sp];
		for (int k = first_out[u]; k < first_out[u + 1]; k++) {
			int w = gv->e[k].to;
			if (seen[w])
				continue;
			seen[w] = 1;
			if (keep[w]) {
				ALLOC_GROW(*out, *nr, *alloc);
				(*out)[(*nr)++] = (struct gedge){v, w, -1, 1};
			} else {
				stack[sp++] = w;
			}
		}
	}
}

static void gview_top(struct gview *gv, const struct rmodel *m, int top_n)
{
	int *order = xmalloc(sizeof(int) * (size_t)gv->nr);
	char *keep = xcalloc((size_t)gv->nr, 1);
	for (int i = 0; i < gv->nr; i++)
		order[i] = i;
	sort_view = gv;
	qsort(order, (size_t)gv->nr, sizeof(int), by_time_desc);
	sort_view = NULL;
	for (int k = 0; k < top_n && k < gv->nr; k++)
		keep[order[k]] = 1;
	for (int i = 0; i < gv->nr; i++)
		if (gv->v[i].cand >= 0 && m->cand_rank[gv->v[i].cand] <= GVIEW_TOP_CANDS)
			keep[i] = 1;
	/* Neighbours of the kept (one step, from the kept set before this loop). */
	char *core = xmalloc((size_t)gv->nr);
	memcpy(core, keep, (size_t)gv->nr);
	for (int k = 0; k < gv->nr_e; k++) {
		if (core[gv->e[k].from])
			keep[gv->e[k].to] = 1;
		if (core[gv->e[k].to])
			keep[gv->e[k].from] = 1;
	}
	/* Elided edges, over the edges sorted by source (gview_merge_edges sorted them). */
	int *first_out = xcalloc((size_t)gv->nr + 1, sizeof(int));
	for (int k = 0; k < gv->nr_e; k++)
		first_out[gv->e[k].from + 1]++;
	for (int i = 0; i < gv->nr; i++)
		first_out[i + 1] += first_out[i];
	int *stack = xmalloc(sizeof(int) * (size_t)(gv->nr + 1));
	char *seen = xmalloc((size_t)gv->nr + 1);
	struct gedge *extra = NULL;
	int nr_extra = 0, alloc_extra = 0;
	for (int i = 0; i < gv->nr; i++) {
		if (!keep[i])
			continue;
		memset(seen, 0, (size_t)gv->nr);
		add_elided(gv, keep, i, first_out, stack, seen, &extra, &nr_extra, &alloc_extra);
	}
	free(first_out);
	free(stack);
	free(seen);
	for (int k = 0; k < nr_extra; k++) {
		ALLOC_GROW(gv->e, gv->nr_e, gv->alloc_e);
		gv->e[gv->nr_e++] = extra[k];
	}
	free(extra);

	int *map = xmalloc(sizeof(int) * (size_t)gv->nr);
	int w = 0;
	for (int i = 0; i < gv->nr; i++) {
		if (keep[i]) {
			map[i] = w;
			gv->v[w++] = gv->v[i];
		} else {
			map[i] = -1;
			gv->hidden += gv->v[i].count;
			free(gv->v[i].members);
		}
	}
	gv->nr = w;
	int we = 0;
	for (int k = 0; k < gv->nr_e; k++) {
		int a = map[gv->e[k].from], b = map[gv->e[k].to];
		if (a < 0 || b < 0)
			continue;
		gv->e[we++] = (struct gedge){a, b, gv->e[k].bytes, gv->e[k].elided};
	}
	gv->nr_e = we;
	gview_merge_edges(gv);
	free(order);
	free(keep);
	free(core);
	free(map);
}

void gview_build(struct gview *gv, const struct rmodel *m, double small_share, int top_n)
{
	memset(gv, 0, sizeof(*gv));
	gview_collapse(gv, m, small_share);
	if (top_n > 0 && gv->nr > top_n) {
		gview_top(gv, m, top_n);
		gv->top_n = top_n;
	}
}

void gview_release(struct gview *gv)
{
	for (int i = 0; i < gv->nr; i++)
		free(gv->v[i].members);
	free(gv->v);
	free(gv->e);
	memset(gv, 0, sizeof(*gv));
}

/* Appends s to sb with backslashes doubled, cut to at most max bytes on a UTF-8 boundary. */
static void add_gv_text(struct strbuf *sb, const char *s, size_t max)
{
	size_t n = strlen(s);
	int cut = 0;
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		cut = 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\')
			strbuf_adds(sb, "\\\\");
		else if (s[i] == '\n' || s[i] == '\r')
			strbuf_adds(sb, " ");
		else
			strbuf_add(sb, s + i, 1);
	}
	if (cut)
		strbuf_adds(sb, "…");
}

static void add_us(struct strbuf *sb, double us)
{
	if (us < 0)
		strbuf_adds(sb, "time unknown");
	else if (us >= 1000)
		strbuf_addf(sb, "%.2f ms", us / 1000);
	else
		strbuf_addf(sb, "%.1f µs", us);
}

/* Fill colour for a vertex taking us out of the largest node's max_us. */
static void fill_colour(char out[8], double us, double max_us, int *dark)
{
	if (us < 0 || max_us <= 0) {
		snprintf(out, 8, "#e8e8e8");
		*dark = 0;
		return;
	}
	double t = sqrt(fmin(us / max_us, 1.0));
	int r = (int)lround(255 + (215 - 255) * t), g = (int)lround(247 + (48 - 247) * t),
	    b = (int)lround(236 + (31 - 236) * t);
	snprintf(out, 8, "#%02x%02x%02x", r & 255, g & 255, b & 255);
	*dark = t > 0.62;
}

static void set(void *obj, const char *name, const char *value)
{
	agsafeset(obj, (char *)name, (char *)value, "");
}

static const char *cand_kind(const struct rmodel *m, int c)
{
	const char *k = jstr(cJSON_GetArrayItem(m->cands, c), "kind");
	return k ? k : "fusion";
}

static Agraph_t *gview_graph(const struct gview *gv, const struct rmodel *m)
{
	Agraph_t *g = agopen("step", Agdirected, NULL);
	struct strbuf sb = STRBUF_INIT;
	set(g, "rankdir", "TB");
	set(g, "nodesep", "0.25");
	set(g, "ranksep", "0.35");
	set(g, "fontname", "Helvetica");
	set(g, "fontsize", "11");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "style", "rounded,filled");
	agattr(g, AGNODE, "fontname", "Helvetica");
	agattr(g, AGNODE, "fontsize", "10");
	agattr(g, AGNODE, "penwidth", "0.8");
	agattr(g, AGEDGE, "fontname", "Helvetica");
	agattr(g, AGEDGE, "fontsize", "8");
	agattr(g, AGEDGE, "color", "#7a7a7a");
	agattr(g, AGEDGE, "fontcolor", "#555555");
	agattr(g, AGEDGE, "arrowsize", "0.6");

	Agraph_t **clusters = xcalloc((size_t)m->nr_cands + 1, sizeof(*clusters));
	Agnode_t **an = xcalloc((size_t)gv->nr + 1, sizeof(*an));
	for (int i = 0; i < gv->nr; i++) {
		const struct gvert *v = &gv->v[i];
		const struct rnode *n = &m->nodes[v->node];
		Agraph_t *home = g;
		if (v->cand >= 0 && v->cand < m->nr_cands) {
			if (!clusters[v->cand]) {
				const cJSON *c = cJSON_GetArrayItem(m->cands, v->cand);
				strbuf_reset(&sb);
				strbuf_addf(&sb, "cluster_%d", m->cand_rank[v->cand]);
				Agraph_t *sub = agsubg(g, sb.buf, 1);
				strbuf_reset(&sb);
				strbuf_addf(&sb, "candidate #%d: ", m->cand_rank[v->cand]);
				add_gv_text(&sb, cand_kind(m, v->cand), 40);
				double saved;
				if (jnum(c, "time_saved_us_per_step", &saved)) {
					strbuf_adds(&sb, ", saves ");
					add_us(&sb, saved);
				}
				set(sub, "label", sb.buf);
				set(sub, "style", "dashed,rounded");
				set(sub, "color", "#1f6fb2");
				set(sub, "fontcolor", "#1f6fb2");
				set(sub, "penwidth", "1.5");
				clusters[v->cand] = sub;
			}
			home = clusters[v->cand];
		}
		strbuf_reset(&sb);
		if (v->count > 1)
			strbuf_addf(&sb, "g%d", n->id);
		else
			strbuf_addf(&sb, "n%d", n->id);
		Agnode_t *a = agnode(home, sb.buf, 1);
		an[i] = a;
		char colour[8];
		int dark;
		strbuf_reset(&sb);
		if (v->count > 1) {
			strbuf_addf(&sb, "%d small kernels\\n", v->count);
			add_us(&sb, v->us);
			set(a, "label", sb.buf);
			set(a, "style", "rounded,filled,dashed");
			set(a, "fillcolor", "#f2f2f2");
			strbuf_reset(&sb);
			for (int k = 0; k < v->count && k < 8; k++) {
				if (k)
					strbuf_adds(&sb, ", ");
				add_gv_text(&sb, m->nodes[v->members[k]].name, 60);
			}
			if (v->count > 8)
				strbuf_addf(&sb, " and %d more", v->count - 8);
			set(a, "tooltip", sb.buf);
			continue;
		}
		add_gv_text(&sb, n->name, 44);
		strbuf_adds(&sb, "\\n");
		add_us(&sb, n->us);
		if (n->bytes_read >= 0 && n->bytes_written >= 0) {
			char b[32];
			strbuf_addf(&sb, " · %s", fmt_bytes(n->bytes_read + n->bytes_written, b));
		}
		set(a, "label", sb.buf);
		fill_colour(colour, n->us, m->max_node_us, &dark);
		set(a, "fillcolor", colour);
		if (dark)
			set(a, "fontcolor", "white");
		if (n->kind && strcmp(n->kind, "kernel"))
			set(a, "shape", "cds");
		strbuf_reset(&sb);
		add_gv_text(&sb, n->full_name ? n->full_name : n->name, 400);
		if (n->source) {
			strbuf_adds(&sb, " @ ");
			add_gv_text(&sb, n->source, 200);
		}
		set(a, "tooltip", sb.buf);
	}
	for (int k = 0; k < gv->nr_e; k++) {
		const struct gedge *e = &gv->e[k];
		Agedge_t *ae = agedge(g, an[e->from], an[e->to], NULL, 1);
		if (e->elided) {
			set(ae, "style", "dashed");
			set(ae, "color", "#b0b0b0");
			set(ae, "tooltip", "through kernels the top view leaves out");
		} else if (e->bytes > 0) {
			char b[32];
			set(ae, "label", fmt_bytes(e->bytes, b));
			double w = 0.6 + log10(1 + e->bytes / 65536.0);
			strbuf_reset(&sb);
			strbuf_addf(&sb, "%.2f", fmin(w, 4.0));
			set(ae, "penwidth", sb.buf);
		} else {
			set(ae, "style", "dotted");
		}
	}
	free(clusters);
	free(an);
	strbuf_release(&sb);
	return g;
}

/* cgraph's write callback into a strbuf, through a memory stream. */
static int graph_dot(Agraph_t *g, struct strbuf *dot)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return error("cannot open a memory stream for the graph");
	int r = agwrite(g, f);
	if (fclose(f) || r) {
		free(buf);
		return error("cannot write the step graph as DOT");
	}
	strbuf_add(dot, buf, len);
	free(buf);
	return 0;
}

/*
 * One Graphviz context for the process, made on first use and kept. Graphviz 2.42 keeps a
 * static cache of the last font name that outlives a context: laying out in a second context
 * after gvFreeContext() on the first reads freed memory (AddressSanitizer shows it in
 * textspan_size). And gvFreeContext() leaves fontconfig's and the text layout's caches
 * unreachable, so freeing it at exit only turns reachable memory into reported leaks. The
 * context therefore lives as long as the process, like the libraries' own caches.
 */
static GVC_t *report_gvc;

static GVC_t *gvc_get(void)
{
	if (!report_gvc)
		report_gvc = gvContext();
	return report_gvc;
}

/* Lays g out and renders it as SVG into svg, in this process; 0, or -1 with a message.
 * free_layout 0 leaves the layout for the process's exit to reclaim (the child below). */
static int render_here(Agraph_t *g, struct strbuf *svg, int free_layout)
{
	GVC_t *gvc = gvc_get();
	if (!gvc)
		return error("cannot start Graphviz");
	int r = 0;
	if (gvLayout(gvc, g, "dot")) {
		r = error("graphviz cannot lay out the step graph");
	} else {
		char *data = NULL;
		unsigned int len = 0;
		if (gvRenderData(gvc, g, "svg", &data, &len) || !data)
			r = error("graphviz cannot render the step graph as SVG");
		else
			strbuf_add(svg, data, len);
		if (data)
			gvFreeRenderData(data);
		if (free_layout)
			gvFreeLayout(gvc, g);
	}
	return r;
}

/*
 * The layout runs in a child process: Graphviz 2.42's dot layout frees a block twice on some
 * graphs (seen on the two-rank DDP sample: "double free or corruption" in gvFreeLayout), and a
 * crash inside a library must cost the drawing, not the report. The child writes the SVG to a
 * pipe; anything but a clean exit with the whole SVG is an error here.
 */
static int render_isolated(Agraph_t *g, struct strbuf *svg)
{
	int fds[2];
	if (pipe(fds))
		return render_here(g, svg, 1);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return render_here(g, svg, 1);
	}
	if (pid == 0) {
		close(fds[0]);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2); /* a crash's glibc message would read as ours */
		struct strbuf out = STRBUF_INIT;
		/* the crash seen is in gvFreeLayout: the child never frees, it exits */
		int rc = render_here(g, &out, 0) ? 1 : 0;
		for (size_t off = 0; !rc && off < out.len;) {
			ssize_t w = write(fds[1], out.buf + off, out.len - off);
			if (w <= 0) {
				rc = 1;
				break;
			}
			off += (size_t)w;
		}
		_exit(rc);
	}
	close(fds[1]);
	char buf[65536];
	for (;;) {
		ssize_t n = read(fds[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		strbuf_add(svg, buf, (size_t)n);
	}
	close(fds[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && svg->len)
		return 0;
	strbuf_reset(svg);
	if (WIFSIGNALED(st))
		return error("graphviz crashed laying out the step graph (signal %d); the report "
		             "has no drawing",
		             WTERMSIG(st));
	return error("graphviz cannot lay out the step graph");
}

int gview_render(const struct gview *gv, const struct rmodel *m, struct strbuf *dot,
                 struct strbuf *svg)
{
	Agraph_t *g = gview_graph(gv, m);
	int r = 0;
	if (dot)
		r = graph_dot(g, dot);
	if (!r && svg)
		r = render_isolated(g, svg);
	agclose(g);
	return r;
}
