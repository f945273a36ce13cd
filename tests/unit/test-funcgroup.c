/* test-funcgroup.c - function groups (funcgroup.c): the import path of a library file
 * (site-packages or dist-packages, .py dropped, __init__ dropped, the last site-packages wins,
 * anything that is not a Python identifier refused), and on a small model: a library function
 * of two alike runs of two kernels is listed (its input, from before the step, a param; the
 * group its two ops and one output); one of a single kernel and the program's own line are
 * not, nor the function once its runs differ. A gated MLP (three GEMMs of one function, an
 * activation module's kernel between the first two, the product of its result and the second
 * GEMM's read by the third) is the form "gated" with the activation's class, its group
 * act -> mul; with the product reading the gate itself instead, it is not listed. GELU's form
 * comes from ATen's first lambda of GeluCUDAKernelImpl / GeluBackwardCUDAKernelImpl (#1 tanh,
 * #2 erf), whatever the dtype lambda nested in it: Gemma's gelu_tanh as the gated activation,
 * the backward kernels as gelu_tanh_backward and gelu_backward, an unknown lambda refused. */
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

#define GELU_TANH_BF16                                                                             \
	"void at::native::vectorized_elementwise_kernel<8, "                                       \
	"at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "                                 \
	"at::native::GeluType)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() "     \
	"const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >"
#define GELU_BWD(outer, inner)                                                                     \
	"void at::native::vectorized_elementwise_kernel<8, "                                       \
	"at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, "                         \
	"at::native::GeluType)::{lambda()#" outer "}::operator()() const::{lambda()#" inner        \
	"}::operator()() const::{lambda(float, float)#1}, std::array<char*, 3ul> >"

/* op of the one-op group fusegroup_build() makes of model m's node n, or NULL (why set) */
static char *one_op(struct model *m, int n, char **why)
{
	struct candidate c;
	memset(&c, 0, sizeof(c));
	c.kind = "elementwise-chain";
	c.nodes = &n;
	c.nnodes = 1;
	cJSON *g = fusegroup_build(m, &c, why);
	if (!g)
		return NULL;
	const cJSON *op =
	    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "ops"), 0), "op");
	char *r = cJSON_IsString(op) ? xstrdup(op->valuestring) : NULL;
	cJSON_Delete(g);
	return r;
}

static void gelu_forms(void **state)
{
	(void)state;
	/* Gemma's MLP: act_fn is GELUTanh, its kernel the tanh lambda on bf16 (inner lambda #4) */
	struct model *m = mk_gated();
	struct node *act = &m->nodes[1];
	free(act->name);
	free(act->full_name);
	free(act->model_site.func);
	act->name = xstrdup("vectorized_elementwise_kernel<8, GeluCUDAKernelImpl>");
	act->full_name = xstrdup(GELU_TANH_BF16);
	act->model_site.func = xstrdup("GELUTanh.forward");
	act->sem.op = "gelu_tanh"; /* semantics.c's name for the tanh lambda */
	cJSON *a = funcgroups_json(m);
	assert_int_equal(cJSON_GetArraySize(a), 1);
	const cJSON *f = cJSON_GetArrayItem(a, 0);
	assert_string_equal(cJSON_GetObjectItem(f, "form")->valuestring, "gated");
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(f, "binding"), "act_class")->valuestring,
	    "GELUTanh");
	const cJSON *ops = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "group"), "ops");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ops, 0), "op")->valuestring,
	                    "gelu_tanh");
	cJSON_Delete(a);
	/* named gelu by an older table, the tanh lambda still decides */
	act->sem.op = "gelu";
	char *why = NULL, *op = one_op(m, 1, &why);
	assert_non_null(op);
	assert_string_equal(op, "gelu_tanh");
	free(op);

	/* the backward kernels, (dy, x): node 3 (the mul) as ATen's GeluBackward */
	struct node *b = &m->nodes[3];
	free(b->full_name);
	b->sem.op = "gelu_backward";
	b->sem.backward = 1;
	static const struct {
		const char *name, *op;
	} t[] = {
	    {GELU_BWD("1", "4"), "gelu_tanh_backward"}, /* tanh, bf16 */
	    {GELU_BWD("1", "2"), "gelu_tanh_backward"}, /* an inner #2 is not the erf form */
	    {GELU_BWD("2", "1"), "gelu_backward"},      /* erf */
	    {GELU_BWD("3", "1"), NULL},                 /* neither: refused */
	};
	b->full_name = NULL;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		free(b->full_name);
		b->full_name = xstrdup(t[i].name);
		why = NULL;
		op = one_op(m, 3, &why);
		if (t[i].op) {
			assert_non_null(op);
			assert_string_equal(op, t[i].op);
		} else {
			assert_null(op);
			assert_non_null(why);
			assert_non_null(strstr(why, "cannot tell GELU's form"));
		}
		free(op);
		free(why);
	}
	model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(module_path),
	    cmocka_unit_test(functions),
	    cmocka_unit_test(gated),
	    cmocka_unit_test(gelu_forms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
