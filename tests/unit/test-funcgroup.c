/* test-funcgroup.c - function groups (funcgroup.c): the import path of a library file
 * (site-packages or dist-packages, .py dropped, __init__ dropped, the last site-packages wins,
 * anything that is not a Python identifier refused), and on a small model: a library function
 * of two alike runs of two kernels is listed (its input, from before the step, a param; the
 * group its two ops and one output); one of a single kernel and the program's own line are
 * not, nor the function once its runs differ. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(module_path),
	    cmocka_unit_test(functions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
