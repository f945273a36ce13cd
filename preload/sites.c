/*
 * sites.c - attribution of a launch to the user's source line.
 *
 * Python (found with dlsym, so any CPython 3.8+ that exports its C API works; the shim links
 * no Python). Frames are read with the public API only, which needs the GIL:
 *   - a thread that holds the GIL (PyGILState_Check) is walked at once;
 *   - a thread that has a Python thread state but released the GIL (PyTorch's bindings release
 *     it around every op) takes it with PyGILState_Ensure ONLY when its thread state is the
 *     interpreter's only one. Why this cannot deadlock: the GIL is only ever held by a thread
 *     with a thread state; when ours is the only one, nobody holds the GIL, so Ensure takes it
 *     without waiting, and a wait is the only way to deadlock. (A thread state being created
 *     at that instant is the one window; it would have to call CUDA while holding the GIL.)
 *   - any other thread (PyTorch's autograd threads, a second Python thread) is never made to
 *     wait: it inherits the last Python site seen in the process, and the launch says so.
 * Walking: innermost frame outwards, up to 64 frames, keeping the innermost library frame for
 * context, the innermost model frame (a library outside torch and the standard library:
 * transformers, timm, torchvision) and the first `depth` user frames (user = not site-packages,
 * dist-packages, the standard library or <frozen ...>). The key of a stack is a hash of its (code
 * object, instruction offset) pairs; a hash table maps keys to site ids, and only a new key costs
 * string work. Code objects in the table are kept alive (Py_IncRef) so an address is never
 * reused for other code; their addresses sit in a dense index of their own (8 to a cache line),
 * apart from the entries' strings, so a lookup touches one line, not a 392-byte entry.
 * The stack cache: the raw walk first hashes the whole stack's (code object, instruction
 * pointer) words, three loads a frame and no lookup, and a lock-free table maps that hash to the
 * site it gave when every frame was known; a hit is the whole attribution. Only a new stack
 * classifies its frames and takes the site table's lock.
 * Native programs: unw_backtrace from libunwind, opened RTLD_LOCAL (its _Unwind_* symbols must
 * never replace libgcc's in the program), keyed by the return addresses; frames in CUDA's own
 * libraries, libc and the shim are skipped, the rest symbolised with dladdr on first sight, and
 * each frame carries its module's GNU build id, read once per module from the loaded module's
 * PT_NOTE segments (dl_iterate_phdr; static cache, no allocation), so that `analyze` can name the
 * line from the module's debug information offline and know when the file has been rebuilt.
 */
#include "preload/sites.h"
#include "preload/base.h"
#include "preload/selftime.h"
#include "preload/jbuf.h"
#include "preload/writer.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void PyObject;
typedef void PyThreadState;
typedef void PyInterpreterState;

static struct {
	int (*IsInitialized)(void);
	int (*IsFinalizing)(void);
	int (*GILState_Check)(void);
	int (*GILState_Ensure)(void);
	void (*GILState_Release)(int);
	PyThreadState *(*GILState_GetThisThreadState)(void);
	PyInterpreterState *(*ThreadState_GetInterpreter)(PyThreadState *);
	PyThreadState *(*Interp_ThreadHead)(PyInterpreterState *);
	PyThreadState *(*ThreadState_Next)(PyThreadState *);
	PyObject *(*Eval_GetFrame)(void);
	PyObject *(*Frame_GetBack)(PyObject *);
	PyObject *(*Frame_GetCode)(PyObject *);
	int (*Frame_GetLineNumber)(PyObject *);
	int (*Frame_GetLasti)(PyObject *);
	int (*Code_Addr2Location)(PyObject *, int, int *, int *, int *, int *);
	PyObject *(*Object_GetAttrString)(PyObject *, const char *);
	const char *(*Unicode_AsUTF8)(PyObject *);
	void (*IncRef)(PyObject *);
	void (*DecRef)(PyObject *);
	void (*Err_Clear)(void);
	int ok;
} py;

static int (*unw_bt)(void **, int);
static int depth = 4;
static char cwd[1024];
static size_t cwd_len;

/* site table: open addressing, key -> id; Python entries are guarded by the GIL, native
 * entries by native_lock. */
#define SITE_TABLE (1u << 16)
struct site_ent {
	uint64_t key;
	uint32_t id;
	int used;
};
static struct site_ent *table;
static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t next_site;
static _Atomic uint32_t last_py_site; /* id + 1; 0 = none */

/* code object -> what attribution needs of it, kept alive (Py_IncRef) so the address is never
 * reused. Filled with the GIL held; read without it by the raw walker, so an entry is published
 * by storing its code pointer last. */
#define CODE_TABLE (1u << 14)
struct code_ent { /* codes[i] names the code object at code_keys[i] */
	int user;
	int model; /* a library frame outside torch and the standard library (see is_model_file) */
	char file[256];
	char name[128];
};
static struct code_ent *codes;
static _Atomic(void *) *code_keys; /* the code objects, densely: what code_find probes */

/* The code object an entry names. */
static void *code_of(const struct code_ent *ce)
{
	return atomic_load_explicit(&code_keys[ce - codes], memory_order_relaxed);
}

/* the stack cache (see the top of this file): whole-stack hash -> site id + 1 */
#define STACK_TABLE (1u << 14)
#define STACK_PROBE 8
struct stack_ent {
	_Atomic uint64_t key; /* 0: empty */
	_Atomic uint32_t site1;
};
static struct stack_ent *stacks;

/* The raw walker (see raw_calibrate): offsets learned from this interpreter, not assumed. */
static struct {
	int state;          /* 0 not tried, 1 usable, -1 failed */
	int ts_off, cf_off; /* tstate word holding the frame (cf_off < 0: directly) */
	int code_off, prev_off, instr_off;
	long code_delta;     /* instruction pointer - code object - lasti */
	void *trampoline[4]; /* code of frames the public API never shows (3.12's entry frames) */
	int ntrampoline;
	int tries; /* calibrations that failed (RAW_TRIES) */
} raw;
enum { FRAME_OBJ_F_FRAME = 24 };

#define SYM(f, name) py.f = (__typeof__(py.f))dlsym(RTLD_DEFAULT, name)

void sites_init(int d)
{
	depth = d;
	if (getcwd(cwd, sizeof(cwd) - 1)) {
		cwd_len = strlen(cwd);
		if (cwd_len && cwd[cwd_len - 1] != '/')
			cwd[cwd_len++] = '/', cwd[cwd_len] = 0;
	}
	table = calloc(SITE_TABLE, sizeof(*table));
	codes = calloc(CODE_TABLE, sizeof(*codes));
	code_keys = calloc(CODE_TABLE, sizeof(*code_keys));
	stacks = calloc(STACK_TABLE, sizeof(*stacks));
	SYM(IsInitialized, "Py_IsInitialized");
	SYM(IsFinalizing, "Py_IsFinalizing");
	if (!py.IsFinalizing)
		SYM(IsFinalizing, "_Py_IsFinalizing");
	SYM(GILState_Check, "PyGILState_Check");
	SYM(GILState_Ensure, "PyGILState_Ensure");
	SYM(GILState_Release, "PyGILState_Release");
	SYM(GILState_GetThisThreadState, "PyGILState_GetThisThreadState");
	SYM(ThreadState_GetInterpreter, "PyThreadState_GetInterpreter");
	SYM(Interp_ThreadHead, "PyInterpreterState_ThreadHead");
	SYM(ThreadState_Next, "PyThreadState_Next");
	SYM(Eval_GetFrame, "PyEval_GetFrame");
	SYM(Frame_GetBack, "PyFrame_GetBack");
	SYM(Frame_GetCode, "PyFrame_GetCode");
	SYM(Frame_GetLineNumber, "PyFrame_GetLineNumber");
	SYM(Frame_GetLasti, "PyFrame_GetLasti");
	SYM(Code_Addr2Location, "PyCode_Addr2Location");
	SYM(Object_GetAttrString, "PyObject_GetAttrString");
	SYM(Unicode_AsUTF8, "PyUnicode_AsUTF8");
	SYM(IncRef, "Py_IncRef");
	SYM(DecRef, "Py_DecRef");
	SYM(Err_Clear, "PyErr_Clear");
	py.ok = table && codes && code_keys && stacks && py.IsInitialized && py.GILState_Check &&
	        py.GILState_Ensure && py.GILState_Release && py.GILState_GetThisThreadState &&
	        py.ThreadState_GetInterpreter && py.Interp_ThreadHead && py.ThreadState_Next &&
	        py.Eval_GetFrame && py.Frame_GetBack && py.Frame_GetCode &&
	        py.Frame_GetLineNumber && py.Object_GetAttrString && py.Unicode_AsUTF8 &&
	        py.IncRef && py.DecRef && py.Err_Clear;
	if (!py.Frame_GetLasti || !py.Code_Addr2Location)
		raw.state = -1; /* before 3.11: no raw walker */
	if (!py.ok) {
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		if (h)
			unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	}
	shim_debug("attribution: python %s, libunwind %s", py.ok ? "yes" : "no",
	           unw_bt ? "yes" : "no");
}

void sites_after_fork(void)
{
	pthread_mutex_init(&native_lock, NULL);
}

uint32_t sites_count(void)
{
	return atomic_load(&next_site);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* Looks key up; returns 1 and *id when present, else 0 and the slot in *slot. site_lock held. */
static int table_find(uint64_t key, uint32_t *id, struct site_ent **slot)
{
	for (uint32_t i = (uint32_t)key & (SITE_TABLE - 1), n = 0; n < SITE_TABLE / 2;
	     i = (i + 1) & (SITE_TABLE - 1), n++) {
		if (!table[i].used) {
			*slot = &table[i];
			return 0;
		}
		if (table[i].key == key) {
			*id = table[i].id;
			return 1;
		}
	}
	*slot = NULL;
	return 0;
}

static const char *rel(const char *path)
{
	if (cwd_len && !strncmp(path, cwd, cwd_len))
		return path + cwd_len;
	return path;
}

static int is_user_file(const char *f)
{
	if (!strcmp(f, "<string>") || !strcmp(f, "<stdin>"))
		return 1;
	if (f[0] == '<')
		return 0;
	if (strstr(f, "/site-packages/") || strstr(f, "/dist-packages/"))
		return 0;
	if (strstr(f, "/lib/python3") || strstr(f, "/lib64/python3"))
		return 0;
	return 1;
}

/* A library file that is the model's code: site-packages or dist-packages, not torch's own
 * package (transformers, timm, torchvision, a user's installed package). */
static int is_model_file(const char *f)
{
	const char *p = strstr(f, "/site-packages/");
	if (!p)
		p = strstr(f, "/dist-packages/");
	if (!p)
		return 0;
	p = strchr(p + 1, '/') + 1;
	return strncmp(p, "torch/", 6) != 0;
}

static void code_str(void *code, const char *attr, char *out, size_t outsz)
{
	PyObject *o = py.Object_GetAttrString(code, attr);
	const char *s = o ? py.Unicode_AsUTF8(o) : NULL;
	if (!s)
		py.Err_Clear();
	snprintf(out, outsz, "%s", s ? s : "?");
	if (o)
		py.DecRef(o);
}

/* The cache entry of code, or NULL. Safe without the GIL. */
static struct code_ent *code_find(void *code)
{
	uint64_t h = mix(0, (uint64_t)(uintptr_t)code);
	for (uint32_t i = (uint32_t)h & (CODE_TABLE - 1), n = 0; n < CODE_TABLE / 2;
	     i = (i + 1) & (CODE_TABLE - 1), n++) {
		void *c = atomic_load_explicit(&code_keys[i], memory_order_acquire);
		if (c == code)
			return &codes[i];
		if (!c)
			return NULL;
	}
	return NULL;
}

/* The cache entry of code, made when missing. GIL held. NULL when the table is full. */
static struct code_ent *code_get(void *code)
{
	struct code_ent *e = code_find(code);
	if (e)
		return e;
	pthread_mutex_lock(&native_lock);
	uint64_t h = mix(0, (uint64_t)(uintptr_t)code);
	for (uint32_t i = (uint32_t)h & (CODE_TABLE - 1), n = 0; n < CODE_TABLE / 2;
	     i = (i + 1) & (CODE_TABLE - 1), n++) {
		void *c = atomic_load(&code_keys[i]);
		if (c == code) {
			e = &codes[i];
			break;
		}
		if (!c) {
			e = &codes[i];
			code_str(code, "co_filename", e->file, sizeof(e->file));
			code_str(code, "co_qualname", e->name, sizeof(e->name));
			if (!strcmp(e->name, "?"))
				code_str(code, "co_name", e->name, sizeof(e->name));
			e->user = is_user_file(e->file);
			e->model = !e->user && is_model_file(e->file);
			py.IncRef(code);
			atomic_store_explicit(&code_keys[i], code, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&native_lock);
	return e;
}

struct pyframe {
	struct code_ent *ce;
	int lasti;
};

/*
 * Chooses the frames a site keeps: the innermost library frame (the op's own code, torch's
 * functional.py for example), the innermost model frame when that is another one
 * (transformers' GPT2Block.forward that called torch's LayerNorm), then up to depth user
 * frames; finds or makes the site, and returns its id. Frames are innermost first. Any thread.
 */
static int site_of(struct pyframe *all, int n, uint32_t *site)
{
	struct pyframe fr[24];
	int k = 0, users = 0, have_lib = 0, have_model = 0;
	uint64_t key = 0x1234;
	for (int i = 0; i < n && users < depth && k < 24; i++) {
		const struct code_ent *ce = all[i].ce;
		if (!ce->user && have_lib && (have_model || !ce->model))
			continue;
		fr[k++] = all[i];
		key = mix(mix(key, (uint64_t)(uintptr_t)ce), (uint64_t)all[i].lasti);
		if (ce->user)
			users++;
		else
			have_lib = 1;
		if (ce->model)
			have_model = 1;
	}
	if (!users)
		return 0;
	uint32_t id = 0;
	struct site_ent *slot;
	int found = 0;
	pthread_mutex_lock(&native_lock);
	if (table_find(key, &id, &slot)) {
		found = 1;
	} else if (slot) {
		id = atomic_fetch_add(&next_site, 1);
		char buf[8192];
		struct jbuf b = {buf, 0, sizeof(buf), 0};
		jb_s(&b, "{\"t\":\"site\",\"id\":");
		jb_u64(&b, id);
		jb_s(&b, ",\"how\":\"python\",\"frames\":[");
		for (int i = 0; i < k; i++) {
			int line = -1, col = -1, eline = -1, ecol = -1;
			void *code = code_of(fr[i].ce);
			if (!py.Code_Addr2Location ||
			    !py.Code_Addr2Location(code, fr[i].lasti, &line, &col, &eline, &ecol))
				line = -1;
			if (i)
				jb_s(&b, ",");
			jb_s(&b, "{\"file\":"), jb_str(&b, rel(fr[i].ce->file));
			jb_key(&b, "line"), jb_i64(&b, line);
			if (col >= 0 && eline == line)
				jb_key(&b, "col"), jb_i64(&b, col), jb_key(&b, "end_col"),
				    jb_i64(&b, ecol);
			jb_key(&b, "func"), jb_str(&b, fr[i].ce->name);
			jb_key(&b, "user"), jb_s(&b, fr[i].ce->user ? "true" : "false");
			jb_s(&b, "}");
		}
		jb_s(&b, "]}");
		if (!b.overflow)
			writer_meta(buf, b.len);
		slot->key = key;
		slot->id = id;
		slot->used = 1;
		found = 1;
	}
	pthread_mutex_unlock(&native_lock);
	if (found) {
		*site = id;
		atomic_store(&last_py_site, id + 1);
	}
	return found;
}

/* The current thread's frames through the public API. GIL held. Returns the count. */
static int api_frames(struct pyframe *out, int max, void **top_obj)
{
	PyObject *f = py.Eval_GetFrame(); /* borrowed */
	*top_obj = f;
	int n = 0, owned = 0;
	while (f && n < max) {
		PyObject *code = py.Frame_GetCode(f);
		if (code) {
			struct code_ent *ce = code_get(code);
			int lasti = py.Frame_GetLasti ? py.Frame_GetLasti(f) : -1;
			py.DecRef(code); /* the code table keeps it alive */
			if (ce)
				out[n++] = (struct pyframe){ce, lasti};
		}
		PyObject *back = py.Frame_GetBack(f);
		if (owned)
			py.DecRef(f);
		f = back;
		owned = 1;
	}
	if (owned && f)
		py.DecRef(f);
	return n;
}

static uintptr_t rd(uintptr_t p)
{
	return *(volatile uintptr_t *)p;
}

/*
 * The innermost interpreter frame of thread state ts, read without the GIL with the learned
 * offsets. The thread is the calling one, parked in C code, so its frames cannot change.
 */
static uintptr_t raw_top(PyThreadState *ts)
{
	uintptr_t v = rd((uintptr_t)ts + (uintptr_t)raw.ts_off);
	return raw.cf_off < 0 ? v : v ? rd(v + (uintptr_t)raw.cf_off) : 0;
}

/* The whole stack's hash from frame f: each frame's code object and instruction pointer, as
 * raw_frames walks them (0 when the walk finds no frame). */
static uint64_t raw_key(uintptr_t f)
{
	uint64_t key = 0x5eed;
	int walked = 0;
	/* one multiply a frame on the chain of frames: the frame's own word is mixed beside it */
	for (; f && walked < 256; walked++, f = rd(f + (uintptr_t)raw.prev_off)) {
		uint64_t v = rd(f + (uintptr_t)raw.code_off) * 0x9e3779b97f4a7c15ull ^
		             rd(f + (uintptr_t)raw.instr_off);
		key = (key ^ v) * 0xff51afd7ed558ccdull;
	}
	return walked ? mix(key, (uint64_t)walked) | 1 : 0;
}

/* The site a whole-stack hash gave before; 0 when unknown. Lock-free, any thread. */
static int stack_find(uint64_t key, uint32_t *site)
{
	for (uint32_t i = (uint32_t)(key >> 20) & (STACK_TABLE - 1), n = 0; n < STACK_PROBE;
	     i = (i + 1) & (STACK_TABLE - 1), n++) {
		uint64_t k = atomic_load_explicit(&stacks[i].key, memory_order_acquire);
		if (k == key) {
			uint32_t s1 = atomic_load_explicit(&stacks[i].site1, memory_order_relaxed);
			if (!s1)
				return 0;
			*site = s1 - 1;
			return 1;
		}
		if (!k)
			return 0;
	}
	return 0;
}

/* Remembers key -> site (a full run of probes keeps the stack uncached). */
static void stack_put(uint64_t key, uint32_t site)
{
	pthread_mutex_lock(&native_lock);
	for (uint32_t i = (uint32_t)(key >> 20) & (STACK_TABLE - 1), n = 0; n < STACK_PROBE;
	     i = (i + 1) & (STACK_TABLE - 1), n++) {
		uint64_t k = atomic_load_explicit(&stacks[i].key, memory_order_relaxed);
		if (k == key)
			break;
		if (!k) {
			atomic_store_explicit(&stacks[i].site1, site + 1, memory_order_relaxed);
			atomic_store_explicit(&stacks[i].key, key, memory_order_release);
			break;
		}
	}
	pthread_mutex_unlock(&native_lock);
}

/* Walks interpreter frames from f, keeping those whose code object is in the cache (named
 * while the GIL was held); *unknown counts the others. Returns the count kept. */
static int raw_frames(uintptr_t f, struct pyframe *out, int max, int *unknown)
{
	int n = 0;
	*unknown = 0;
	for (int walked = 0; f && walked < 256 && n < max;
	     walked++, f = rd(f + (uintptr_t)raw.prev_off)) {
		void *code = (void *)rd(f + (uintptr_t)raw.code_off);
		struct code_ent *ce = code_find(code);
		if (!ce) {
			int t = 0;
			while (t < raw.ntrampoline && raw.trampoline[t] != code)
				t++;
			if (t == raw.ntrampoline)
				(*unknown)++; /* never named with the GIL */
			continue;
		}
		long lasti =
		    (long)(rd(f + (uintptr_t)raw.instr_off) - (uintptr_t)code) - raw.code_delta;
		out[n++] = (struct pyframe){ce, (int)lasti};
	}
	return n;
}

/* A check that fails leaves the walker to a later walk with the GIL, RAW_TRIES times in all,
 * then off for good. A stack too shallow to learn from (fewer than three frames: launches at
 * module level, a warm-up loop there) is no failed check and costs no try (RAW_SHALLOW):
 * before, a module-level loop spent the tries in its first 16 launches, and every launch after
 * took the GIL and the public API's walk (bench_step.py's oop loop on the H200: all 228,703). */
#define RAW_TRIES 16
#define RAW_SHALLOW                                                                                \
	do {                                                                                       \
		raw.state = 0;                                                                     \
		return;                                                                            \
	} while (0)
#define RAW_FAIL                                                                                   \
	do {                                                                                       \
		raw.state = ++raw.tries < RAW_TRIES ? 0 : -1;                                      \
		shim_debug("raw frame walker %s (check at line %d failed)",                        \
		           raw.state ? "off" : "not yet", __LINE__);                               \
		return;                                                                            \
	} while (0)
static void raw_calibrate(PyThreadState *ts, PyObject *top, struct pyframe *api, int n_api)
{
	raw.state = -1; /* while calibrating: no raw walk elsewhere */
	raw.ntrampoline = 0;
	if (!py.Frame_GetLasti)
		return; /* no public lasti to check against: off for good (state -1 above) */
	if (!top || n_api < 3)
		RAW_SHALLOW;
	uintptr_t cur = rd((uintptr_t)top + FRAME_OBJ_F_FRAME);
	PyObject *back = py.Frame_GetBack(top);
	uintptr_t next = back ? rd((uintptr_t)back + FRAME_OBJ_F_FRAME) : 0;
	if (back)
		py.DecRef(back);
	uintptr_t code0 = (uintptr_t)code_of(api[0].ce);
	if (!cur || !next)
		RAW_SHALLOW;
	raw.code_off = raw.prev_off = raw.instr_off = -1;
	uintptr_t code1 = (uintptr_t)code_of(api[1].ce);
	for (int w = 0; w < 12; w++) {
		uintptr_t v = rd(cur + (uintptr_t)w * 8);
		if (v == code0 && raw.code_off < 0)
			raw.code_off = w * 8;
		else if (v == next && raw.prev_off < 0)
			raw.prev_off = w * 8;
	}
	/* the instruction pointer: the word that gives the API's lasti in this frame and the
	 * next with one constant offset from the code object */
	for (int w = 0; w < 12 && raw.instr_off < 0 && raw.code_off >= 0; w++) {
		uintptr_t v = rd(cur + (uintptr_t)w * 8), v2 = rd(next + (uintptr_t)w * 8);
		if (w * 8 == raw.code_off || w * 8 == raw.prev_off || v <= code0 ||
		    v >= code0 + (1u << 20) || v2 <= code1 || v2 >= code1 + (1u << 20))
			continue;
		if ((long)(v - code0) - api[0].lasti == (long)(v2 - code1) - api[1].lasti)
			raw.instr_off = w * 8;
	}
	if (raw.code_off < 0 || raw.instr_off < 0)
		RAW_FAIL;
	if (raw.prev_off < 0) { /* a C-stack frame between: previous's previous */
		for (int w = 0; w < 12 && raw.prev_off < 0; w++) {
			uintptr_t v = rd(cur + (uintptr_t)w * 8);
			if (v && v != code0 && v > 4096 && (v & 7) == 0 &&
			    rd(v + (uintptr_t)w * 8) == next)
				raw.prev_off = w * 8;
		}
		if (raw.prev_off < 0)
			RAW_FAIL;
	}
	raw.code_delta = (long)(rd(cur + (uintptr_t)raw.instr_off) - code0) - api[0].lasti;
	/* where the thread state keeps the current frame */
	pthread_attr_t a;
	void *stk = NULL;
	size_t stksz = 0;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstack(&a, &stk, &stksz);
		pthread_attr_destroy(&a);
	}
	uintptr_t lo = (uintptr_t)&a, hi = (uintptr_t)stk + stksz;
	raw.ts_off = -1;
	for (int i = 0; i < 48 && raw.ts_off < 0; i++) {
		uintptr_t v = rd((uintptr_t)ts + (uintptr_t)i * 8);
		if (v == cur) {
			raw.ts_off = i * 8, raw.cf_off = -1;
		} else if (stk && v > lo && v + 16 < hi) {
			for (int j = 0; j < 2; j++)
				if (rd(v + (uintptr_t)j * 8) == cur) {
					raw.ts_off = i * 8, raw.cf_off = j * 8;
					break;
				}
		}
	}
	if (raw.ts_off < 0)
		RAW_FAIL;
	struct pyframe mine[64];
	int unknown;
	int n = raw_frames(raw_top(ts), mine, 64, &unknown);
	/* frames the API skipped are the interpreter's own entry frames: remember their code */
	for (uintptr_t f = raw_top(ts); f && unknown && raw.ntrampoline < 4;
	     f = rd(f + (uintptr_t)raw.prev_off)) {
		void *code = (void *)rd(f + (uintptr_t)raw.code_off);
		int seen = code_find(code) != NULL;
		for (int t = 0; t < raw.ntrampoline; t++)
			seen |= raw.trampoline[t] == code;
		if (!seen)
			raw.trampoline[raw.ntrampoline++] = code;
	}
	if (n != n_api)
		RAW_FAIL;
	for (int i = 0; i < n; i++)
		if (mine[i].ce != api[i].ce || mine[i].lasti != api[i].lasti)
			RAW_FAIL;
	raw.state = 1;
	shim_debug("python frames readable without the GIL (thread state word %d/%d, frame words "
	           "%d %d %d)",
	           raw.ts_off, raw.cf_off, raw.code_off, raw.prev_off, raw.instr_off);
}

/* Attribution with the GIL held. */
static int py_walk_gil(PyThreadState *ts, uint32_t *site)
{
	struct pyframe all[64];
	void *top;
	int n = api_frames(all, 64, &top);
	if (raw.state == 0 && ts)
		raw_calibrate(ts, top, all, n);
	return n > 0 && site_of(all, n, site);
}

static int only_thread_state(PyThreadState *ts)
{
	PyInterpreterState *in = py.ThreadState_GetInterpreter(ts);
	if (!in)
		return 0;
	PyThreadState *h = py.Interp_ThreadHead(in);
	return h == ts && py.ThreadState_Next(h) == NULL;
}

static int skip_module(const char *m)
{
	const char *b = strrchr(m, '/');
	b = b ? b + 1 : m;
	return !strncmp(b, "libcuda.", 8) || !strncmp(b, "libcudart", 9) ||
	       !strncmp(b, "libcupti", 8) || !strncmp(b, "libaicprof", 10) ||
	       !strncmp(b, "libc.so", 7) || !strncmp(b, "libcublas", 9);
}

struct bid_find {
	uintptr_t addr;
	char *hex;
	size_t hexsz, len;
	int found, is_main;
};

/* Appends the hex of the first NT_GNU_BUILD_ID note in [p, end) (notes aligned to align). */
static size_t note_build_id(const char *p, const char *end, size_t align, char *hex, size_t hexsz)
{
	static const char digits[] = "0123456789abcdef";
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		size_t name = (nh->n_namesz + align - 1) & ~(align - 1);
		size_t desc = (nh->n_descsz + align - 1) & ~(align - 1);
		const char *np = p + sizeof(*nh), *dp = np + name;
		if (name > (size_t)(end - np) || desc > (size_t)(end - dp))
			return 0;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(np, "GNU", 4) &&
		    nh->n_descsz) {
			size_t n = 0;
			for (size_t i = 0; i < nh->n_descsz && n + 2 < hexsz; i++) {
				hex[n++] = digits[(unsigned char)dp[i] >> 4];
				hex[n++] = digits[(unsigned char)dp[i] & 15];
			}
			hex[n] = 0;
			return n;
		}
		p = dp + desc;
	}
	return 0;
}

static int bid_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct bid_find *f = data;
	int inside = 0;
	for (int i = 0; i < info->dlpi_phnum && !inside; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		inside = ph->p_type == PT_LOAD && f->addr >= lo && f->addr - lo < ph->p_memsz;
	}
	if (!inside)
		return 0;
	f->found = 1;
	f->is_main = !info->dlpi_name || !info->dlpi_name[0];
	for (int i = 0; i < info->dlpi_phnum && !f->len; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		f->len =
		    note_build_id(p, p + ph->p_memsz, ph->p_align == 8 ? 8 : 4, f->hex, f->hexsz);
	}
	return 1;
}

size_t sites_build_id(const void *addr, char *hex, size_t hexsz)
{
	if (!hexsz)
		return 0;
	hex[0] = 0;
	struct bid_find f = {(uintptr_t)addr, hex, hexsz, 0, 0, 0};
	dl_iterate_phdr(bid_cb, &f);
	return f.len;
}

/* As sites_build_id; *is_main = 1 when the module is the program itself. */
static size_t build_id_of(const void *addr, char *hex, size_t hexsz, int *is_main)
{
	hex[0] = 0;
	struct bid_find f = {(uintptr_t)addr, hex, hexsz, 0, 0, 0};
	dl_iterate_phdr(bid_cb, &f);
	*is_main = f.is_main;
	return f.len;
}

/* load address (dladdr's dli_fbase) -> build id; native_lock held */
#define BUILD_IDS 64
static struct {
	const void *base;
	char hex[2 * 64 + 1];
	int is_main;
} build_ids[BUILD_IDS];
static int nbuild_ids;
static char exe_path[1024]; /* the program's file (dladdr names it by argv[0]); "" unknown */

/*
 * The build id of the module loaded at base that holds addr, "" when none; read once. *path is
 * left alone, except for the program itself, whose file is /proc/self/exe's target (argv[0],
 * dladdr's name for it, may be relative to a PATH entry).
 */
static const char *module_build_id(const void *base, const void *addr, const char **path)
{
	int i = 0;
	while (i < nbuild_ids && build_ids[i].base != base)
		i++;
	if (i == BUILD_IDS)
		return "";
	if (i == nbuild_ids) {
		nbuild_ids++;
		build_ids[i].base = base;
		build_id_of(addr, build_ids[i].hex, sizeof(build_ids[i].hex),
		            &build_ids[i].is_main);
		if (build_ids[i].is_main && !exe_path[0]) {
			ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
			exe_path[n > 0 ? n : 0] = 0;
		}
	}
	if (build_ids[i].is_main && exe_path[0])
		*path = exe_path;
	return build_ids[i].hex;
}

static int native_site(uint32_t *site)
{
	void *ips[32];
	int n = unw_bt(ips, 32);
	if (n <= 0)
		return 0;
	uint64_t key = 0x5678;
	for (int i = 2; i < n; i++)
		key = mix(key, (uint64_t)(uintptr_t)ips[i]);
	uint32_t id;
	struct site_ent *slot;
	pthread_mutex_lock(&native_lock);
	int found = table_find(key ^ 0xa5a5, &id, &slot);
	if (!found && slot) {
		id = atomic_fetch_add(&next_site, 1);
		char buf[8192];
		struct jbuf b = {buf, 0, sizeof(buf), 0};
		jb_s(&b, "{\"t\":\"site\",\"id\":");
		jb_u64(&b, id);
		jb_s(&b, ",\"how\":\"native\",\"native\":[");
		int k = 0;
		/* + 8: before the user's frame, a program linked with nvcc has the static CUDA
		 * runtime's (2-3), nvcc's launch helper and stub, and the kernel's host wrapper */
		for (int i = 1; i < n && k < depth + 8; i++) {
			Dl_info di;
			if (!dladdr(ips[i], &di) || !di.dli_fname || skip_module(di.dli_fname))
				continue;
			const char *mod = di.dli_fname;
			const char *bid = module_build_id(di.dli_fbase, ips[i], &mod);
			if (k++)
				jb_s(&b, ",");
			jb_s(&b, "{\"module\":"), jb_str(&b, rel(mod));
			jb_key(&b, "offset");
			jb_hex(&b, (uint64_t)((char *)ips[i] - (char *)di.dli_fbase));
			if (di.dli_sname)
				jb_key(&b, "sym"), jb_str(&b, di.dli_sname);
			if (*bid)
				jb_key(&b, "build_id"), jb_str(&b, bid);
			jb_s(&b, "}");
		}
		jb_s(&b, "]}");
		if (!b.overflow)
			writer_meta(buf, b.len);
		slot->key = key ^ 0xa5a5;
		slot->id = id;
		slot->used = 1;
		found = 1;
	}
	pthread_mutex_unlock(&native_lock);
	if (found)
		*site = id;
	return found;
}

/* how sites_current went, timed when AICPROF_SELFTIME is on (selftime.h) */
#define WENT(part, v)                                                                              \
	do {                                                                                       \
		int v_ = (v);                                                                      \
		selftime_add(part, t0);                                                            \
		return v_;                                                                         \
	} while (0)

int sites_current(uint32_t *site, int *inherited)
{
	*inherited = 0;
	uint64_t t0 = selftime_start();
	if (py.ok && py.IsInitialized()) {
		if (py.IsFinalizing && py.IsFinalizing())
			return 0;
		PyThreadState *ts = py.GILState_GetThisThreadState();
		/* The raw walk first, with or without the GIL, when it can name every frame: it
		 * reads three words a frame, where the public API makes a frame object of each
		 * (several microseconds on a model's stack). With the GIL, the API otherwise, which
		 * names the new frames for the raw walks that follow. Without the GIL, the GIL when
		 * taking it cannot wait (see the top of this file); otherwise the frames it could
		 * name. */
		struct pyframe all[64];
		int n = 0, unknown = 1;
		uint64_t key = 0;
		if (ts && raw.state == 1) {
			uintptr_t top = raw_top(ts);
			key = top ? raw_key(top) : 0;
			if (key && stack_find(key, site)) {
				atomic_store_explicit(&last_py_site, *site + 1,
				                      memory_order_relaxed);
				WENT(ST_SITE_CACHED, 1);
			}
			n = top ? raw_frames(top, all, 64, &unknown) : 0;
		}
		if (n > 0 && !unknown && site_of(all, n, site)) {
			if (key) /* every frame known: the same stack gives this site from now on */
				stack_put(key, *site);
			WENT(ST_SITE_RAW, 1);
		}
		if (py.GILState_Check())
			WENT(ST_SITE_GIL, py_walk_gil(ts, site));
		if (ts && only_thread_state(ts)) {
			int g = py.GILState_Ensure();
			int r = py_walk_gil(ts, site);
			py.GILState_Release(g);
			WENT(ST_SITE_ENSURE, r);
		}
		if (n > 0 && site_of(all, n, site))
			WENT(ST_SITE_PARTIAL, 1);
		uint32_t last = atomic_load(&last_py_site);
		if (!last)
			return 0;
		*site = last - 1;
		*inherited = 1;
		WENT(ST_SITE_INHERIT, 1);
	}
	if (unw_bt)
		WENT(ST_SITE_NATIVE, native_site(site));
	return 0;
}
