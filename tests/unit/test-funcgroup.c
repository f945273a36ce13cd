/* test-funcgroup.c - function groups (funcgroup.c): the import path of a library file
 * (site-packages or dist-packages, .py dropped, __init__ dropped, the last site-packages wins,
 * anything that is not a Python identifier refused), and on a small model: a library function
 * of two alike runs of two kernels is listed (its input, from before the step, a param; the
 * group its two ops and one output); one of a single kernel and the program's own line are
 * not, nor the function once its runs differ. A gated MLP (three GEMMs of one function, an
 * activation module's kernel between the first two, the product of its result and the second
 * GEMM's read by the third) is the form "gated" with the activation's class, its group
 * act -> mul; with the product reading the gate itself instead, it is not listed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/funcgroup.h"
#include "lib/util.h"

static void module_path(void **state)
{
	(void)state;
	static const struct {
		const char *file, *mod;
	} t[] = {
	    {"/v/lib/python3.12/site-packages/transformers/activations.py",
	     "transformers.activations"},
	    {"/usr/lib/python3/dist-packages/transformers/models/llama/modeling_llama.py",
	     "transformers.models.llama.modeling_llama"},
	    {"/v/site-packages/pkg/__init__.py", "pkg"},
	    {"/a/site-packages/x/site-packages/y/z.py", "y.z"},
	    {"/v/site-packages/pkg/mod.pyc", NULL},
	    {"/v/site-packages/my-pkg/mod.py", NULL},
	    {"/v/site-packages/pkg/1mod.py", NULL},
	    {"samples/gpt2_train.py", NULL},
	    {"/v/site-packages/__init__.py", NULL},
	    {"/v/site-packages/.py", NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char *m = funcgroup_module(t[i].file);
		if (t[i].mod) {
			assert_non_null(m);
			assert_string_equal(m, t[i].mod);
		} else {
			assert_null(m);
		}
		free(m);
	}
}

#define LIB "/v/site-packages/lib/act.py"

/* a chain of tanh kernels, node i reading value i and writing value i + 1 (value 0 from
 * before the step, the last value live after it): nodes 0-1 and 3-4 are F.forward's two runs,
 * node 2 G.forward's one kernel, nodes 5-7 the program's own line */
static struct model *mk(void)
{
	struct model *m = xcalloc(1, sizeof(*m));
	int nn = 8;
	m->nodes = xcalloc(nn, sizeof(struct node));
	m->nnodes = nn;
	static const char *func[] = {"F.forward", "F.forward", "G.forward", "F.forward",
	                             "F.forward", "main",      "main",      "main"};
	for (int i = 0; i < nn; i++) {
		struct node *d = &m->nodes[i];
		d->id = i;
		d->name = xstrdup("tanh_kernel");
		d->full_name =
		    xstrdup("void at::native::tanh_kernel_cuda(at::TensorIteratorBase&)");
		d->sem.family = FAM_ELEMENTWISE;
		d->sem.op = "tanh";
		d->sem.dtype = DT_F32;
		d->numel = 256;
		d->model_site.file = xstrdup(i >= 5 ? "train.py" : LIB);
		d->model_site.func = xstrdup(func[i]);
		d->model_site.line = 10;
		d->bytes_read = d->bytes_written = 1024;
		d->claimed = -1;
		d->reads[0] = i;
		d->nreads = 1;
	}
	m->nvalues = nn + 1;
	m->values = xcalloc(m->nvalues, sizeof(struct value));
	for (int i = 0; i < m->nvalues; i++) {
		struct value *v = &m->values[i];
		v->id = i;
		v->buffer = 100 + i;
		v->size = 1024;
		v->writer = i - 1;
		if (i < nn) {
			v->readers = xmalloc(sizeof(int));
			v->readers[0] = i;
			v->nreaders = 1;
		}
	}
	m->values[nn].live_after_step = 1;
	return m;
}

static void functions(void **state)
{
	(void)state;
	struct model *m = mk();
	cJSON *a = funcgroups_json(m);
	assert_int_equal(cJSON_GetArraySize(a), 1);
	const cJSON *f = cJSON_GetArrayItem(a, 0);
	assert_string_equal(cJSON_GetObjectItem(f, "func")->valuestring, "F.forward");
	assert_string_equal(cJSON_GetObjectItem(f, "form")->valuestring, "fused");
	assert_int_equal(cJSON_GetObjectItem(f, "invocations")->valueint, 2);
	const cJSON *b = cJSON_GetObjectItem(f, "binding");
	assert_string_equal(cJSON_GetObjectItem(b, "module")->valuestring, "lib.act");
	assert_string_equal(cJSON_GetObjectItem(b, "qualname")->valuestring, "F.forward");
	const cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "inputs"), 0);
	assert_string_equal(cJSON_GetObjectItem(in, "kind")->valuestring, "param");
	const cJSON *g = cJSON_GetObjectItem(f, "group");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "ops")), 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(g, "outputs")), 1);
	cJSON_Delete(a);
	/* the second run of F no longer alike: F is not listed */
	m->nodes[4].numel = 512;
	a = funcgroups_json(m);
	assert_int_equal(cJSON_GetArraySize(a), 0);
	cJSON_Delete(a);
	model_free(m);
}

/* a gated MLP, M.forward: gemm (v0 -> v1), Act.forward's silu (v1 -> v2), gemm (v0 -> v3),
 * mul (v2, v3 -> v4), gemm (v4 -> v5) */
static struct model *mk_gated(void)
{
	struct model *m = xcalloc(1, sizeof(*m));
	int nn = 5;
	m->nodes = xcalloc(nn, sizeof(struct node));
	m->nnodes = nn;
	m->nvalues = 6;
	m->values = xcalloc(m->nvalues, sizeof(struct value));
	static const int rd[5][2] = {{0, -1}, {1, -1}, {0, -1}, {2, 3}, {4, -1}};
	for (int i = 0; i < nn; i++) {
		struct node *d = &m->nodes[i];
		int k = i;
		d->id = i;
		d->claimed = -1;
		d->model_site.file = xstrdup(LIB);
		d->model_site.line = k == 1 ? 20 : 10;
		d->model_site.func = xstrdup(k == 1 ? "Act.forward" : "M.forward");
		d->sem.dtype = DT_F32;
		d->bytes_read = d->bytes_written = 1024;
		if (k == 0 || k == 2 || k == 4) {
			d->name = xstrdup("nvjet_sm90_tst_64x64");
			d->full_name = xstrdup("nvjet_sm90_tst_64x64");
			d->sem.family = FAM_GEMM;
			d->sem.op = "gemm";
		} else {
			d->name = xstrdup(k == 1 ? "silu_kernel" : "mul_kernel");
			d->full_name =
			    xstrdup(k == 1 ? "void at::native::vectorized_elementwise_kernel<4, "
			                     "at::native::silu_kernel(at::TensorIteratorBase&)>"
			                   : "void at::native::vectorized_elementwise_kernel<4, "
			                     "at::native::BinaryFunctor<float, float, float, "
			                     "at::native::binary_internal::MulFunctor<float> > >");
			d->sem.family = FAM_ELEMENTWISE;
			d->sem.op = k == 1 ? "silu" : "mul";
			d->numel = 256;
		}
		for (int r = 0; r < 2; r++)
			if (rd[k][r] >= 0)
				d->reads[d->nreads++] = rd[k][r];
	}
	static const int wr[5] = {1, 2, 3, 4, 5};
	for (int i = 0; i < m->nvalues; i++) {
		struct value *v = &m->values[i];
		v->id = i;
		v->buffer = 100 + i;
		v->size = 1024;
		v->writer = -1;
	}
	for (int i = 0; i < nn; i++)
		m->values[wr[i]].writer = i;
	for (int i = 0; i < nn; i++)
		for (int r = 0; r < m->nodes[i].nreads; r++) {
			struct value *v = &m->values[m->nodes[i].reads[r]];
			v->readers = xrealloc(v->readers, sizeof(int) * (size_t)(v->nreaders + 1));
			v->readers[v->nreaders++] = i;
		}
	m->values[5].live_after_step = 1;
	return m;
}

static void gated(void **state)
{
	(void)state;
	struct model *m = mk_gated();
	cJSON *a = funcgroups_json(m);
	assert_int_equal(cJSON_GetArraySize(a), 1);
	const cJSON *f = cJSON_GetArrayItem(a, 0);
	assert_string_equal(cJSON_GetObjectItem(f, "form")->valuestring, "gated");
	assert_string_equal(cJSON_GetObjectItem(f, "func")->valuestring, "M.forward");
	assert_int_equal(cJSON_GetObjectItem(f, "invocations")->valueint, 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f, "nodes")), 5);
	const cJSON *b = cJSON_GetObjectItem(f, "binding");
	assert_string_equal(cJSON_GetObjectItem(b, "act_class")->valuestring, "Act");
	const cJSON *ins = cJSON_GetObjectItem(b, "inputs");
	assert_int_equal(cJSON_GetArraySize(ins), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 0), "kind")->valuestring,
	                    "gate");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 1), "kind")->valuestring,
	                    "up");
	const cJSON *ops = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "group"), "ops");
	assert_int_equal(cJSON_GetArraySize(ops), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ops, 0), "op")->valuestring,
	                    "silu");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ops, 1), "op")->valuestring,
	                    "mul");
	cJSON_Delete(a);
	/* the product of the gate and up, the activation's result unread: not the gated MLP */
	m->nodes[3].reads[0] = 1;
	a = funcgroups_json(m);
	assert_int_equal(cJSON_GetArraySize(a), 0);
	cJSON_Delete(a);
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(module_path),
	    cmocka_unit_test(functions),
	    cmocka_unit_test(gated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
