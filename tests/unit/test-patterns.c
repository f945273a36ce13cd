/* test-patterns.c - findings as patterns (pattern.c) and the lines a finding names (lines.c):
 * two occurrences that differ only by layer (node ids, values) fold into one pattern of count 2
 * with summed bytes; a different dtype, or another model line, does not fold; ranking is by
 * total bytes; and from a site's frames the model line is the innermost frame outside torch,
 * the user line the innermost "user" frame, the op the innermost torch frame's function; and
 * a backward kernel's line is derived from the forward function that read what it reads (a
 * saved input's reader, where one other function reads it), else that value's writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/model.h"
#include "lib/util.h"

/* n nodes: pairs (2k, 2k+1) = gelu -> dropout, bf16, 1M elements, at activations.py:66 */
static struct model *mk(int n)
{
	struct model *m = xcalloc(1, sizeof(*m));
	m->nodes = xcalloc(n, sizeof(struct node));
	m->nnodes = n;
	for (int i = 0; i < n; i++) {
		struct node *d = &m->nodes[i];
		d->id = i;
		d->name = xstrdup(i % 2 ? "dropout_kernel" : "gelu_kernel");
		d->sem.family = FAM_ELEMENTWISE;
		d->sem.op = i % 2 ? "dropout" : "gelu";
		d->sem.dtype = DT_BF16;
		d->numel = 1 << 20;
		d->own_site.file = xstrdup("transformers/activations.py");
		d->own_site.line = 66;
	}
	return m;
}

static void add_cand(struct model *m, int a, uint64_t bytes)
{
	m->cands = xrealloc(m->cands, sizeof(*m->cands) * (m->ncands + 1));
	struct candidate *c = &m->cands[m->ncands];
	memset(c, 0, sizeof(*c));
	c->id = m->ncands++;
	c->kind = "elementwise-chain";
	c->nodes = xmalloc(sizeof(int) * 2);
	c->nodes[0] = a;
	c->nodes[1] = a + 1;
	c->nnodes = 2;
	c->bytes_saved = bytes;
	c->saved_us = 1.0;
}

static void test_fold_layers(void **state)
{
	(void)state;
	struct model *m = mk(6);
	add_cand(m, 0, 100);
	add_cand(m, 2, 300);            /* another layer: same ops, dtypes, sizes, line */
	m->nodes[4].sem.dtype = DT_F32; /* a third chain in f32: another pattern */
	add_cand(m, 4, 1000);
	patterns_fold(m);
	assert_int_equal(m->npats, 2);
	/* ranked by total bytes: the f32 one (1000) before the folded pair (400) */
	assert_int_equal(m->pats[0].ncands, 1);
	assert_int_equal(m->pats[0].bytes_saved, 1000);
	assert_int_equal(m->pats[1].ncands, 2);
	assert_int_equal(m->pats[1].bytes_saved, 400);
	assert_int_equal(m->pats[1].cands[0], 0);
	assert_int_equal(m->pats[1].cands[1], 1);
	assert_int_equal(m->pats[1].rep, 1); /* the occurrence with most bytes */
	assert_true(m->pats[1].saved_us > 1.9 && m->pats[1].saved_us < 2.1);
	model_free(m);
}

static void test_no_fold_other_line(void **state)
{
	(void)state;
	struct model *m = mk(4);
	free(m->nodes[2].own_site.file);
	m->nodes[2].own_site.file = xstrdup("transformers/models/gpt2/modeling_gpt2.py");
	add_cand(m, 0, 10);
	add_cand(m, 2, 10);
	char *k0 = pattern_key(m, &m->cands[0]), *k1 = pattern_key(m, &m->cands[1]);
	assert_string_not_equal(k0, k1);
	assert_non_null(strstr(k0, "activations.py:66"));
	free(k0);
	free(k1);
	patterns_fold(m);
	assert_int_equal(m->npats, 2);
	model_free(m);
}

static void test_pick_lines(void **state)
{
	(void)state;
	cJSON *fr = cJSON_Parse(
	    "[{\"file\":\"/v/lib/python3.12/site-packages/torch/nn/functional.py\",\"line\":2935,"
	    "\"func\":\"layer_norm\",\"user\":false},"
	    "{\"file\":\"/v/lib/python3.12/site-packages/transformers/models/gpt2/"
	    "modeling_gpt2.py\","
	    "\"line\":282,\"func\":\"GPT2Block.forward\",\"user\":false},"
	    "{\"file\":\"train.py\",\"line\":36,\"func\":\"main\",\"user\":true}]");
	struct lineref mo = {0}, us = {0};
	char *op = NULL;
	lines_pick(fr, &mo, &us, &op);
	assert_non_null(strstr(mo.file, "modeling_gpt2.py"));
	assert_int_equal(mo.line, 282);
	assert_string_equal(mo.func, "GPT2Block.forward");
	assert_string_equal(us.file, "train.py");
	assert_int_equal(us.line, 36);
	assert_string_equal(op, "layer_norm");
	lineref_free(&mo);
	lineref_free(&us);
	free(op);
	cJSON_Delete(fr);
	/* only the user's frame: model line = user line, no torch op */
	fr = cJSON_Parse("[{\"file\":\"train.py\",\"line\":9,\"func\":\"f\",\"user\":true}]");
	lines_pick(fr, &mo, &us, &op);
	assert_string_equal(mo.file, "train.py");
	assert_int_equal(us.line, 9);
	assert_null(op);
	lineref_free(&mo);
	lineref_free(&us);
	cJSON_Delete(fr);
	assert_true(lines_is_torch("/x/dist-packages/torch/autograd/__init__.py"));
	assert_false(lines_is_torch("/x/site-packages/transformers/activations.py"));
}

/* Forward and backward nodes over values for lines_resolve() (no site records: the lines
 * are set here). Forward: 0 Emb.forward writes v0 (sin); 1 and 2 rot() read v0 (q * sin,
 * k * sin); 3 A.forward writes v1, read by 4 B.forward and 5 C.forward; 6 Norm.forward
 * writes v2 (rsqrt), read by 7 Norm.forward. Backward: 8 reads v0 and v3 (a gradient, no
 * forward writer); 9 reads v1; 10 reads v2; 11 reads only v4, 8's result. */
static void test_derive_backward(void **state)
{
	(void)state;
	static const char *const fn[] = {"Emb.forward",  "rot",         "rot",
	                                 "A.forward",    "B.forward",   "C.forward",
	                                 "Norm.forward", "Norm.forward"};
	static const int line[] = {125, 159, 160, 10, 20, 30, 65, 66};
	static const int writer[] = {0, 3, 6, -1, 8};
	static const int rd[5][3] = {{1, 2, 8}, {4, 5, 9}, {7, 10, -1}, {8, -1, -1}, {11, -1, -1}};
	struct model *m = xcalloc(1, sizeof(*m));
	m->nnodes = 12;
	m->nodes = xcalloc(m->nnodes, sizeof(struct node));
	m->nvalues = 5;
	m->values = xcalloc(m->nvalues, sizeof(struct value));
	for (int i = 0; i < m->nnodes; i++) {
		struct node *d = &m->nodes[i];
		d->id = i;
		d->site_id = -1;
		d->name = xstrdup("k");
		if (i < 8) {
			d->model_site.file = xstrdup(i == 0 ? "emb.py" : "model.py");
			d->model_site.func = xstrdup(fn[i]);
			d->model_site.line = line[i];
		} else {
			d->autograd = 1; /* backward()'s own line, as the trace gives it */
			d->model_site.file = xstrdup("train.py");
			d->model_site.func = xstrdup("main");
			d->model_site.line = 36;
		}
	}
	for (int v = 0; v < m->nvalues; v++) {
		struct value *x = &m->values[v];
		x->id = v;
		x->writer = writer[v];
		x->readers = xcalloc(3, sizeof(int));
		for (int k = 0; k < 3 && rd[v][k] >= 0; k++) {
			x->readers[x->nreaders++] = rd[v][k];
			struct node *r = &m->nodes[rd[v][k]];
			r->reads[r->nreads++] = v;
		}
	}
	lines_resolve(m, NULL);
	/* sin's one other reader is rot(): its latest read (k * sin, line 160), not Emb */
	assert_string_equal(m->nodes[8].model_site.func, "rot");
	assert_int_equal(m->nodes[8].model_site.line, 160);
	assert_true(m->nodes[8].model_derived);
	/* v1 is read by two other functions: no one of them owns it, so its writer's line */
	assert_string_equal(m->nodes[9].model_site.func, "A.forward");
	/* v2's readers are its writer's own function: the writer */
	assert_string_equal(m->nodes[10].model_site.func, "Norm.forward");
	assert_int_equal(m->nodes[10].model_site.line, 65);
	/* only a backward value: from its backward writer's derived line */
	assert_string_equal(m->nodes[11].model_site.func, "rot");
	assert_true(m->nodes[11].model_derived);
	/* forward nodes keep their own lines */
	assert_string_equal(m->nodes[0].model_site.func, "Emb.forward");
	assert_false(m->nodes[0].model_derived);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fold_layers),
	    cmocka_unit_test(test_no_fold_other_line),
	    cmocka_unit_test(test_pick_lines),
	    cmocka_unit_test(test_derive_backward),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
