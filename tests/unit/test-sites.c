/* test-sites.c - Python source attribution inside an embedded interpreter (no GPU needed):
 * the same call site gives the same site id, another line another id, the user's frames and
 * lines are right, and each of the three ways a launching thread is attributed works: holding
 * the GIL, having released it (the only thread state, or with another thread alive: the raw
 * walker), and a C thread with no thread state (inherited). */
#include <Python.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "preload/base.h"
#include "preload/ring.h"
#include "preload/sites.h"
#include "preload/writer.h"

static char path[256];

/* probe.site(mode): mode 0 holds the GIL, 1 releases it around the attribution (as PyTorch's
 * bindings do around a launch), 2 asks from a fresh C thread with no thread state. Returns
 * (site id or -1, inherited). */
struct req {
	uint32_t site;
	int inh, found;
};

static void *c_thread(void *arg)
{
	struct req *r = arg;
	r->found = sites_current(&r->site, &r->inh);
	return NULL;
}

static PyObject *probe_site(PyObject *self, PyObject *args)
{
	(void)self;
	int mode = 0;
	if (!PyArg_ParseTuple(args, "i", &mode))
		return NULL;
	struct req r = {0, 0, 0};
	if (mode == 0) {
		r.found = sites_current(&r.site, &r.inh);
	} else if (mode == 1) {
		Py_BEGIN_ALLOW_THREADS r.found = sites_current(&r.site, &r.inh);
		Py_END_ALLOW_THREADS
	} else {
		pthread_t t;
		Py_BEGIN_ALLOW_THREADS pthread_create(&t, NULL, c_thread, &r);
		pthread_join(t, NULL);
		Py_END_ALLOW_THREADS
	}
	return Py_BuildValue("(ii)", r.found ? (int)r.site : -1, r.inh);
}

static PyMethodDef methods[] = {{"site", probe_site, METH_VARARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {
    PyModuleDef_HEAD_INIT, "probe", NULL, -1, methods, NULL, NULL, NULL, NULL};
static PyObject *init_probe(void)
{
	return PyModule_Create(&mod);
}

static int run(const char *code)
{
	return PyRun_SimpleString(code);
}

static long get_int(const char *expr)
{
	PyObject *m = PyImport_AddModule("__main__");
	PyObject *d = PyModule_GetDict(m);
	PyObject *v = PyRun_String(expr, Py_eval_input, d, d);
	long x = v ? PyLong_AsLong(v) : -99;
	Py_XDECREF(v);
	return x;
}

/* The site record with id, from the trace (caller deletes). */
static cJSON *site_record(long id)
{
	writer_drain();
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char line[16384];
	cJSON *found = NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		cJSON *j = cJSON_Parse(line);
		cJSON *t = j ? cJSON_GetObjectItem(j, "t") : NULL;
		if (t && !strcmp(t->valuestring, "site") &&
		    cJSON_GetObjectItem(j, "id")->valueint == id)
			found = j;
		else
			cJSON_Delete(j);
	}
	fclose(f);
	return found;
}

static const char *program = "import probe, threading\n"
                             "def inner(mode):\n"
                             "    return probe.site(mode)\n"
                             "def outer(mode):\n"
                             "    a = inner(mode)\n"
                             "    b = inner(mode)\n"
                             "    return a, b\n";

static void test_gil_held(void **state)
{
	(void)state;
	assert_int_equal(run(program), 0);
	assert_int_equal(run("r = outer(0)\nsame = [inner(0) for _ in range(3)]"), 0);
	long a = get_int("r[0][0]"), b = get_int("r[1][0]");
	assert_true(a >= 0 && b >= 0);
	assert_int_not_equal(a, b); /* lines 5 and 6 of the program: two sites */
	assert_int_equal(get_int("r[0][1]"), 0);
	assert_int_equal(get_int("len(set(s for s, _ in same))"), 1);
	cJSON *s = site_record(a);
	assert_non_null(s);
	cJSON *fr = cJSON_GetObjectItem(s, "frames");
	assert_true(cJSON_GetArraySize(fr) >= 2);
	cJSON *f0 = cJSON_GetArrayItem(fr, 0);
	assert_string_equal(cJSON_GetObjectItem(f0, "file")->valuestring, "<string>");
	assert_string_equal(cJSON_GetObjectItem(f0, "func")->valuestring, "inner");
	assert_int_equal(cJSON_GetObjectItem(f0, "line")->valueint, 3);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(f0, "user")));
	cJSON *f1 = cJSON_GetArrayItem(fr, 1);
	assert_string_equal(cJSON_GetObjectItem(f1, "func")->valuestring, "outer");
	assert_int_equal(cJSON_GetObjectItem(f1, "line")->valueint, 5);
	cJSON_Delete(s);
}

static void test_gil_released_only_thread(void **state)
{
	(void)state;
	assert_int_equal(run("r0, r1 = [outer(m) for m in (0, 1)]"), 0);
	/* the same sites as with the GIL held: the shim took the GIL, nobody else could hold it */
	assert_int_equal(get_int("r1[0][0]"), get_int("r0[0][0]"));
	assert_int_equal(get_int("r1[1][0]"), get_int("r0[1][0]"));
	assert_int_equal(get_int("r1[0][1]"), 0);
}

static void test_gil_released_other_thread_alive(void **state)
{
	(void)state;
	/* a second Python thread exists (blocked): the shim must not take the GIL, and reads the
	 * frames without it (the raw walker learnt its offsets in the tests above) */
	assert_int_equal(run("ev = threading.Event()\n"
	                     "t = threading.Thread(target=ev.wait)\n"
	                     "t.start()\n"
	                     "r0, r2 = [outer(m) for m in (0, 1)]\n"
	                     "ev.set(); t.join()"),
	                 0);
	assert_int_equal(get_int("r2[0][0]"), get_int("r0[0][0]"));
	assert_int_equal(get_int("r2[1][0]"), get_int("r0[1][0]"));
	assert_int_equal(get_int("r2[0][1]"), 0);
}

/* The stack cache (a whole-stack hash -> site): the same stacks walked again without the GIL
 * give the sites they gave the first time, and the two lines of outer (frames that differ
 * only in the caller's instruction pointer) stay two sites on every repeat. */
static void test_stack_cache_repeats(void **state)
{
	(void)state;
	/* one line: the first call holds the GIL, the six after it are walked raw, then cached */
	assert_int_equal(run("ev = threading.Event()\n"
	                     "t = threading.Thread(target=ev.wait)\n"
	                     "t.start()\n"
	                     "rr = [outer(m) for m in (0, 1, 1, 1, 1, 1, 1)]\n"
	                     "ev.set(); t.join()\n"
	                     "firsts = set(r[0][0] for r in rr)\n"
	                     "seconds = set(r[1][0] for r in rr)\n"),
	                 0);
	assert_int_equal(get_int("len(firsts)"), 1);
	assert_int_equal(get_int("len(seconds)"), 1);
	assert_int_not_equal(get_int("rr[6][0][0]"), get_int("rr[6][1][0]"));
	assert_true(get_int("rr[6][0][0]") >= 0);
	assert_int_equal(get_int("sum(r[0][1] + r[1][1] for r in rr)"), 0);
}

/* A function first seen with the GIL released, called from one named before, while this is the
 * only thread: the raw walk could only name the caller, so the shim takes the GIL and names the
 * new function too (its line is the site's first frame). */
static void test_new_function_gil_released(void **state)
{
	(void)state;
	assert_int_equal(run("def fresh5(mode):\n"
	                     "    return probe.site(mode)\n"
	                     "def caller5(mode):\n"
	                     "    return fresh5(mode) if mode else probe.site(0)\n"
	                     "caller5(0)\n"
	                     "f5 = caller5(1)\n"),
	                 0);
	assert_int_equal(get_int("f5[1]"), 0);
	cJSON *s = site_record(get_int("f5[0]"));
	assert_non_null(s);
	cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "frames"), 0);
	assert_string_equal(cJSON_GetObjectItem(f0, "func")->valuestring, "fresh5");
	assert_int_equal(cJSON_GetObjectItem(f0, "line")->valueint, 2);
	cJSON_Delete(s);
}

/* The same with another thread alive: the GIL is not taken; the frames the shim can name
 * (caller4, named earlier with the GIL) make the site, rather than an inherited one. */
static void test_new_function_other_thread_alive(void **state)
{
	(void)state;
	assert_int_equal(run("def fresh4(mode):\n"
	                     "    return probe.site(mode)\n"
	                     "def caller4(mode):\n"
	                     "    return fresh4(mode) if mode else probe.site(0)\n"
	                     "caller4(0)\n"
	                     "ev = threading.Event()\n"
	                     "t = threading.Thread(target=ev.wait)\n"
	                     "t.start()\n"
	                     "f4 = caller4(1)\n"
	                     "ev.set(); t.join()\n"),
	                 0);
	assert_int_equal(get_int("f4[1]"), 0);
	cJSON *s = site_record(get_int("f4[0]"));
	assert_non_null(s);
	cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "frames"), 0);
	assert_string_equal(cJSON_GetObjectItem(f0, "func")->valuestring, "caller4");
	assert_int_equal(cJSON_GetObjectItem(f0, "line")->valueint, 4);
	cJSON_Delete(s);
}

/* A model in a library: torch's op (innermost library frame), the library's forward that
 * called it through torch's module machinery (the innermost model frame), the user's lines;
 * torch's module frames and the library's outer frames in between are left out. The same with
 * the GIL released (the raw walker, which must keep the same frames). */
static const char *libmodel =
    "def _mk(path, src, **env):\n"
    "    g = dict(probe=probe, **env)\n"
    "    exec(compile(src, path, 'exec'), g)\n"
    "    return g\n"
    "T = _mk('/v/lib/python3.12/site-packages/torch/nn/functional.py',\n"
    "        'def layer_norm(m):\\n    return probe.site(m)\\n')\n"
    "M = _mk('/v/lib/python3.12/site-packages/torch/nn/modules/module.py',\n"
    "        'def call_impl(f, m):\\n    return f(m)\\n')\n"
    "X = _mk('/v/lib/python3.12/site-packages/transformers/modeling_x.py',\n"
    "        'def block_forward(m):\\n    return call(layer_norm, m)\\n'\n"
    "        'def model_forward(m):\\n    return call(block_forward, m)\\n',\n"
    "        call=M['call_impl'], layer_norm=T['layer_norm'])\n"
    "def user_step(m):\n"
    "    return X['model_forward'](m)\n";

static void check_model_frames(long id)
{
	cJSON *s = site_record(id);
	assert_non_null(s);
	cJSON *fr = cJSON_GetObjectItem(s, "frames");
	assert_true(cJSON_GetArraySize(fr) >= 3);
	const char *f0 = cJSON_GetObjectItem(cJSON_GetArrayItem(fr, 0), "file")->valuestring;
	const char *f1 = cJSON_GetObjectItem(cJSON_GetArrayItem(fr, 1), "file")->valuestring;
	cJSON *u = cJSON_GetArrayItem(fr, 2);
	assert_non_null(strstr(f0, "site-packages/torch/nn/functional.py"));
	assert_non_null(strstr(f1, "site-packages/transformers/modeling_x.py"));
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(fr, 1), "func")->valuestring,
	                    "block_forward");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(u, "user")));
	/* no torch module frame and no outer model frame were kept */
	cJSON *f;
	int models = 0;
	cJSON_ArrayForEach(f, fr)
	{
		const char *file = cJSON_GetObjectItem(f, "file")->valuestring;
		assert_null(strstr(file, "modules/module.py"));
		models += strstr(file, "transformers/") != NULL;
	}
	assert_int_equal(models, 1);
	cJSON_Delete(s);
}

static void test_library_model_frames(void **state)
{
	(void)state;
	assert_int_equal(run(program), 0);
	assert_int_equal(run(libmodel), 0);
	assert_int_equal(run("lm0 = user_step(0)\nlm1 = user_step(1)"), 0);
	long a = get_int("lm0[0]"), b = get_int("lm1[0]");
	assert_true(a >= 0 && b >= 0);
	check_model_frames(a);
	check_model_frames(b);
}

static void test_thread_without_python(void **state)
{
	(void)state;
	assert_int_equal(run("r0, r3 = [outer(m) for m in (0, 2)]"), 0);
	/* a C thread: the last Python site stands in, and says so */
	assert_int_equal(get_int("r3[0][1]"), 1);
	assert_int_equal(get_int("r3[0][0]"), get_int("r0[1][0]"));
}

int main(void)
{
	snprintf(path, sizeof(path), "/tmp/aicprof-sites-%d.jsonl", (int)getpid());
	writer_init(path, 0, NULL, NULL);
	PyImport_AppendInittab("probe", init_probe);
	Py_Initialize();
	sites_init(4);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gil_held),
	    cmocka_unit_test(test_gil_released_only_thread),
	    cmocka_unit_test(test_gil_released_other_thread_alive),
	    cmocka_unit_test(test_stack_cache_repeats),
	    cmocka_unit_test(test_new_function_gil_released),
	    cmocka_unit_test(test_new_function_other_thread_alive),
	    cmocka_unit_test(test_thread_without_python),
	    cmocka_unit_test(test_library_model_frames),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	Py_FinalizeEx();
	writer_flush(1, "exit");
	unlink(path);
	return r;
}
