/*
 * shim.c - libaicprof.so's life in the host process: configuration, when to start recording,
 * and how to finish.
 *
 * Start: the constructor reads AICPROF_* (bad values: one line each, defaults kept), sets
 * PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync unless the user set it (and, for JAX,
 * XLA_PYTHON_CLIENT_PREALLOCATE=false and XLA_PYTHON_CLIENT_ALLOCATOR=platform unless the user
 * set either, XLA's command buffers off in XLA_FLAGS unless the user set that flag or
 * AICPROF_XLA_GRAPHS=1, and an HLO dump beside the trace for XLA's source lines, xla.c), and
 * points
 * CUDA_INJECTION64_PATH at this library, so that the driver calls InitializeInjection() from
 * cuInit in processes that use CUDA, and only in them: a process that never touches CUDA never
 * loads CUPTI and writes nothing. Where another tool already injects (Nsight Systems sets
 * CUDA_INJECTION64_PATH), aicprof steps aside with one line. AICPROF_EAGER=1 subscribes from the
 * constructor instead (for programs that bypass cuInit's injection).
 * Window: recording stops for good, mid-run, at AICPROF_DURATION or near the size cap
 * (window_stop below), and the program runs on at its own speed.
 * Finish: at exit (atexit, registered at start, so it runs before CUDA's own teardown),
 * on SIGTERM/SIGINT when the program left them at their defaults (flush, then the default
 * action), the activity buffers are flushed, the rings drained, and the end line written.
 * Fork: the child forgets the parent's records and opens its own trace if it records.
 * Nothing here changes what the program computes, prints (beyond "aicprof:" lines on
 * stderr) or returns. This is the entry point only: the services every part shares (messages,
 * the recursion guard, clocks, shim_cfg) are base.c's.
 */
#include "preload/allocguard.h"
#include "preload/poolhook.h"
#include "preload/base.h"
#include "preload/cupti.h"
#include "preload/ptrmap.h"
#include "preload/ring.h"
#include "preload/selftime.h"
#include "preload/sites.h"
#include "preload/stepwin.h"
#include "preload/writer.h"
#include "preload/xla.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct config_msgs cfg_msgs;
static int init_done, start_done, start_ok;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t t_start;
static char alloc_note[256] = "default";
static char xla_note[256] = "default";
static char xla_graphs_note[64] = "default";
static char xla_lines_note[1024] = "default";
static char self_path[PATH_MAX];
static pid_t trace_pid; /* the process whose trace this is */

static const char *env_lookup(const char *name)
{
	return getenv(name);
}

static void header(struct jbuf *b)
{
	jb_s(b, ",\"format\":1,\"tool\":\"aicprof " AICPROF_VERSION "\"");
	jb_key(b, "pid"), jb_i64(b, getpid());
	jb_key(b, "ppid"), jb_i64(b, getppid());
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	jb_key(b, "host"), jb_str(b, host);
	jb_s(b, ",\"argv\":[");
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (f) {
		char arg[4096];
		int c, n = 0, first = 1;
		while ((c = fgetc(f)) != EOF) {
			if (c && n < (int)sizeof(arg) - 1) {
				arg[n++] = (char)c;
				continue;
			}
			if (c)
				continue;
			arg[n] = 0;
			if (!first)
				jb_s(b, ",");
			jb_str(b, arg);
			first = 0;
			n = 0;
		}
		fclose(f);
	}
	jb_s(b, "]");
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	jb_key(b, "exe"), jb_str(b, exe);
	char cwd[PATH_MAX] = "";
	if (getcwd(cwd, sizeof(cwd)))
		jb_key(b, "cwd"), jb_str(b, cwd);
	static const char *rk[][2] = {
	    {"RANK", "rank"}, {"LOCAL_RANK", "local_rank"}, {"WORLD_SIZE", "world_size"}};
	for (size_t i = 0; i < 3; i++) {
		const char *v = getenv(rk[i][0]);
		if (v && *v) {
			char *end;
			long x = strtol(v, &end, 10);
			if (!*end)
				jb_key(b, rk[i][1]), jb_i64(b, x);
		}
	}
	jb_s(b, ",\"clock\":\"realtime\"");
	/* ranks of one host read the same CLOCK_REALTIME; across hosts a reader aligns them by
	 * matching collectives (docs/trace-format.md) */
	const char *ws = getenv("WORLD_SIZE");
	if (ws && *ws)
		jb_s(b, ",\"job\":{\"clock\":\"realtime-shared-host\"}");
	jb_key(b, "ts"), jb_u64(b, shim_now_ns());
	jb_key(b, "start_ts"), jb_u64(b, t_start);
	cupti_header_fields(b);
	const struct config *c = &shim_cfg;
	jb_s(b, ",\"config\":{\"output\":"), jb_str(b, c->output);
	jb_key(b, "attrib"), jb_i64(b, c->attrib);
	jb_key(b, "depth"), jb_i64(b, c->depth);
	jb_key(b, "alloc_backend"), jb_i64(b, c->alloc_backend);
	jb_key(b, "max_mb"), jb_i64(b, c->max_mb);
	char d[32];
	snprintf(d, sizeof(d), "%g", c->delay_s);
	jb_key(b, "delay_s"), jb_s(b, d);
	snprintf(d, sizeof(d), "%g", c->duration_s);
	jb_key(b, "duration_s"), jb_s(b, d);
	jb_key(b, "steps"), jb_i64(b, c->steps);
	snprintf(d, sizeof(d), "%g", c->steps_s);
	jb_key(b, "steps_s"), jb_s(b, d);
	jb_key(b, "range"), jb_str(b, c->range);
	jb_key(b, "capture"), jb_str(b, c->capture_api ? "profiler-api" : "all");
	jb_key(b, "writes"), jb_str(b, c->writes == WRITES_PROBE ? "probe" : "infer");
	jb_key(b, "probe_count"), jb_i64(b, c->probe_count);
	jb_key(b, "resolve"), jb_str(b, c->resolve_shim ? "shim" : "offline");
	jb_key(b, "eager"), jb_i64(b, c->eager);
	jb_key(b, "args"), jb_i64(b, c->args);
	jb_key(b, "activity"), jb_i64(b, c->activity);
	jb_s(b, "}");
	jb_key(b, "alloc_backend"), jb_str(b, alloc_note);
	jb_key(b, "xla_allocator"), jb_str(b, xla_note);
	jb_key(b, "xla_command_buffers"), jb_str(b, xla_graphs_note);
	jb_key(b, "xla_lines"), jb_str(b, xla_lines_note);
}

static void finish(const char *reason)
{
	if (!start_ok)
		return;
	shim_enter_thread();
	cupti_flush();
	if (getpid() == trace_pid)
		xla_lines_emit(1);
	writer_flush(1, cupti_context_dead() && !strcmp(reason, "exit") ? "cuda-error" : reason);
	selftime_report();
}

static void at_exit(void)
{
	finish("exit");
}

/* Registered by the constructor: a process that never started recording (XLA on the CPU, say)
 * still removes the HLO dump it was asked to write. */
static pid_t ctor_pid;
static void at_exit_unstarted(void)
{
	if (!start_ok && getpid() == ctor_pid)
		xla_lines_emit(0);
}

static struct sigaction old_term, old_int;

static void on_signal(int sig)
{
	/* The writer thread does the flushing (writer_request_final): this thread may hold any
	 * lock when the signal lands. At most 2 s, then the default action regardless. */
	if (start_ok && !shim_inside()) {
		shim_enter_thread();
		writer_request_final("signal", 2000);
	}
	sigaction(sig, sig == SIGTERM ? &old_term : &old_int, NULL);
	raise(sig);
}

static void install_signals(void)
{
	int sigs[] = {SIGTERM, SIGINT};
	struct sigaction *olds[] = {&old_term, &old_int};
	for (int i = 0; i < 2; i++) {
		struct sigaction cur;
		if (sigaction(sigs[i], NULL, &cur) || cur.sa_handler != SIG_DFL)
			continue; /* the program handles it: its exit path flushes */
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESETHAND;
		*olds[i] = cur;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* This process's trace path from the output pattern (pid, rank, host): 0, or -1 too long. */
static int trace_path(char *out, size_t n)
{
	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	return config_output_path(shim_cfg.output, getpid(), getenv("RANK"), host, out, n) ? -1 : 0;
}

static void after_fork_child(void)
{
	shim_base_after_fork();
	xla_lines_after_fork();
	ring_reset_after_fork();
	writer_reset_after_fork();
	sites_after_fork();
	if (start_ok) {
		stepwin_init(shim_cfg.steps, shim_cfg.steps_s);
		char path[1024];
		if (trace_path(path, sizeof(path)) == 0)
			writer_init(path, (uint64_t)shim_cfg.max_mb << 20, header, cupti_api_name);
		writer_start();
	}
}

/*
 * The recording window. A trace that has what the analysis needs (a few dozen steps) gains
 * nothing from more, while the program keeps paying for every launch recorded, so recording
 * stops for good when the window closes: AICPROF_DURATION seconds after recording began (at
 * CUDA's initialisation, or AICPROF_DELAY after the program's start, whichever is later), or
 * when the trace is within a margin of its size cap (an eighth of the cap, at most 64 MiB:
 * room for what is in flight, so that the trace ends whole and nothing is dropped). The writer
 * thread then stops the sources (window_stop: the allocator hook, CUPTI's callbacks and
 * activity) and closes the trace; the program runs on without the shim's costs.
 */
static uint64_t window_soft_cap(void)
{
	uint64_t cap = (uint64_t)shim_cfg.max_mb << 20, margin = cap / 8;
	if (margin > (64u << 20))
		margin = 64u << 20;
	return cap ? cap - margin : 0;
}

static uint64_t window_end_ns(void)
{
	if (shim_cfg.duration_s <= 0)
		return 0;
	/* recording begins at start() (CUDA's initialisation) or AICPROF_DELAY, the later */
	uint64_t from = shim_now_ns(), delayed = t_start + (uint64_t)(shim_cfg.delay_s * 1e9);
	return (delayed > from ? delayed : from) + (uint64_t)(shim_cfg.duration_s * 1e9);
}

static void window_stop(const char *why)
{
	shim_stop();
	cupti_detach();
	shim_say("the recording window closed (%s): the trace ends here and the program runs on "
	         "unrecorded",
	         !strcmp(why, "cap")     ? "the trace is near AICPROF_MAX_MB"
	         : !strcmp(why, "steps") ? "the training loop ran AICPROF_STEPS steps"
	                                 : "AICPROF_DURATION");
}

/* Starts recording: CUPTI, the writer, exit hooks. Idempotent; returns 0 when recording. */
static int start(void)
{
	pthread_mutex_lock(&start_lock);
	if (start_done) {
		pthread_mutex_unlock(&start_lock);
		return start_ok ? 0 : -1;
	}
	start_done = 1;
	shim_enter_thread();
	trace_pid = getpid();
	char path[1024];
	if (trace_path(path, sizeof(path))) {
		shim_say("output path '%s' is too long: not recording", shim_cfg.output);
		goto out;
	}
	writer_init(path, (uint64_t)shim_cfg.max_mb << 20, header, cupti_api_name);
	sites_init(shim_cfg.depth);
	if (cupti_start())
		goto out;
	writer_set_window(window_soft_cap(), window_end_ns(), window_stop); /* before the thread */
	stepwin_init(shim_cfg.steps, shim_cfg.steps_s);
	if (writer_start()) {
		shim_say("cannot start the writer thread: not recording");
		goto out;
	}
	atexit(at_exit);
	writer_set_before_final(cupti_flush);
	install_signals();
	pthread_atfork(NULL, NULL, after_fork_child);
	allocguard_start();
	poolhook_try("at start");
	start_ok = 1;
	const char *nv = getenv("NVTX_INJECTION64_PATH");
	const char *cp = cupti_find_library();
	if ((!nv || !*nv) && cp)
		setenv("NVTX_INJECTION64_PATH", cp, 0);
out:
	shim_leave();
	pthread_mutex_unlock(&start_lock);
	return start_ok ? 0 : -1;
}

/*
 * _exit() skips atexit, so a process leaving through it (os._exit, multiprocessing's workers)
 * would lose what is still buffered: close the trace first. Only in the process that records:
 * a vfork child shares the parent's memory and has another pid, and must touch nothing.
 */
__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	if (start_ok && !shim_inside() && getpid() == trace_pid)
		finish("exit");
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/*
 * exec replaces the process image without running atexit: close the trace first ("reason":
 * "exec"), as _exit does, so the trace ends whole. Only in the process that records (a vfork
 * child, as subprocess uses, has another pid and must touch nothing). When the exec fails the
 * program goes on, its trace already closed: one line says so. execl* end in execve inside
 * libc, which is not interposable; Python, shells and posix_spawn callers use these four.
 */
static void before_exec(const char *path)
{
	if (start_ok && !shim_inside() && getpid() == trace_pid)
		finish("exec");
}

static void exec_failed(const char *path)
{
	if (start_ok && getpid() == trace_pid) {
		int e = errno;
		shim_say("exec of '%s' failed; the trace was closed before it", path ? path : "?");
		errno = e;
	}
}

/* The real entry points, found at load time: a vfork child must not call dlsym. */
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execv)(const char *, char *const[]);
static int (*real_execvp)(const char *, char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);

__attribute__((constructor)) static void exec_resolve(void)
{
	real_execve =
	    (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
	real_execv = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execv");
	real_execvp = (int (*)(const char *, char *const[]))dlsym(RTLD_NEXT, "execvp");
	real_execvpe =
	    (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execvpe");
}

#define EXEC_CALL(real, call)                                                                      \
	do {                                                                                       \
		if (!real) {                                                                       \
			errno = ENOSYS;                                                            \
			return -1;                                                                 \
		}                                                                                  \
		before_exec(file);                                                                 \
		int r = call;                                                                      \
		exec_failed(file);                                                                 \
		return r;                                                                          \
	} while (0)

__attribute__((visibility("default"))) int execve(const char *file, char *const argv[],
                                                  char *const envp[])
{
	EXEC_CALL(real_execve, real_execve(file, argv, envp));
}

__attribute__((visibility("default"))) int execv(const char *file, char *const argv[])
{
	EXEC_CALL(real_execv, real_execv(file, argv));
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
	EXEC_CALL(real_execvp, real_execvp(file, argv));
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[],
                                                   char *const envp[])
{
	EXEC_CALL(real_execvpe, real_execvpe(file, argv, envp));
}

/* Called by the CUDA driver from cuInit when CUDA_INJECTION64_PATH names this library. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	if (!init_done)
		return 1;
	start();
	return 1;
}

/* Whether the comma-separated list holds tok. */
static int has_token(const char *list, const char *tok)
{
	size_t n = strlen(tok);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == n && !strncmp(p, tok, n))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/* Appends tok to the comma-separated list in buf (size sz). */
static void add_token(char *buf, size_t sz, const char *tok)
{
	size_t l = strlen(buf);
	snprintf(buf + l, sz - l, "%s%s", l ? "," : "", tok);
}

__attribute__((constructor)) static void aicprof_init(void)
{
	if (init_done)
		return;
	init_done = 1;
	shim_enter_thread();
	t_start = shim_now_ns();
	config_load(&shim_cfg, env_lookup, &cfg_msgs);
	selftime_on = shim_cfg.selftime;
	ptrmap_set_offline(!shim_cfg.resolve_shim);
	for (int i = 0; i < cfg_msgs.n; i++)
		shim_say("%s", cfg_msgs.msg[i]);
	if (shim_cfg.delay_s > 0)
		shim_record_from(t_start + (uint64_t)(shim_cfg.delay_s * 1e9));

	/* AICPROF_ENV_SET lists what a shim set in this environment (alloc, xla_alloc,
	 * xla_graphs): a process started by a process under the shim (a shell, timeout, a
	 * launcher's workers) inherits those values, and they are still aicprof's, not the
	 * user's, as long as they are the values aicprof sets */
	const char *mine = getenv("AICPROF_ENV_SET");
	char mark[64] = "";
	const char *ac = getenv("PYTORCH_CUDA_ALLOC_CONF");
	if (ac && *ac && has_token(mine, "alloc") && !strcmp(ac, "backend:cudaMallocAsync")) {
		snprintf(alloc_note, sizeof(alloc_note),
		         "cudaMallocAsync (set by aicprof in a parent process)");
		add_token(mark, sizeof(mark), "alloc");
		allocguard_set_switched(1);
	} else if (ac && *ac) {
		snprintf(alloc_note, sizeof(alloc_note), "user: %s", ac);
		/* a backend of the user's: the async one makes a CUDA allocation per tensor */
		poolhook_set_enabled(!strstr(ac, "cudaMallocAsync"));
	} else if (shim_cfg.alloc_backend == 1) {
		setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", 0);
		snprintf(alloc_note, sizeof(alloc_note), "cudaMallocAsync (set by aicprof)");
		add_token(mark, sizeof(mark), "alloc");
		allocguard_set_switched(1);
	} else {
		poolhook_set_enabled(1); /* PyTorch's caching allocator: its blocks are recorded */
	}
	/* JAX/XLA preallocates 75% of the device as one arena, so every buffer would map to it:
	 * unless the user chose, ask for its platform allocator (one cuMemAlloc per buffer) */
	const char *xp = getenv("XLA_PYTHON_CLIENT_PREALLOCATE"),
	           *xa = getenv("XLA_PYTHON_CLIENT_ALLOCATOR");
	if (xp && xa && has_token(mine, "xla_alloc") && !strcmp(xp, "false") &&
	    !strcmp(xa, "platform")) {
		snprintf(xla_note, sizeof(xla_note),
		         "platform, no preallocation (set by aicprof in a parent process)");
		add_token(mark, sizeof(mark), "xla_alloc");
	} else if ((xp && *xp) || (xa && *xa)) {
		snprintf(xla_note, sizeof(xla_note), "user: preallocate=%.100s allocator=%.100s",
		         xp ? xp : "", xa ? xa : "");
	} else if (shim_cfg.alloc_backend) { /* unset (-1) or 1 */
		setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false", 0);
		setenv("XLA_PYTHON_CLIENT_ALLOCATOR", "platform", 0);
		snprintf(xla_note, sizeof(xla_note), "platform, no preallocation (set by aicprof)");
		add_token(mark, sizeof(mark), "xla_alloc");
	}
	/* XLA runs its fusions inside CUDA graphs (command buffers) by default: a graph's kernels
	 * come as activity records only, with no launch and no parameters, so no data flow. Unless
	 * the user set the flag (or AICPROF_XLA_GRAPHS=1), ask for plain launches. */
	static const char xflag[] = "--xla_gpu_enable_command_buffer=";
	const char *xf = getenv("XLA_FLAGS");
	/* the parent's flag: the whole token, with no value, where a shim put it */
	const char *xp2 = xf ? strstr(xf, xflag) : NULL;
	if (xp2 && has_token(mine, "xla_graphs") && (xp2 == xf || xp2[-1] == ' ') &&
	    (!xp2[sizeof(xflag) - 1] || xp2[sizeof(xflag) - 1] == ' ')) {
		snprintf(xla_graphs_note, sizeof(xla_graphs_note),
		         "off (set by aicprof in a parent process)");
		add_token(mark, sizeof(mark), "xla_graphs");
	} else if (xf && strstr(xf, "xla_gpu_enable_command_buffer")) {
		snprintf(xla_graphs_note, sizeof(xla_graphs_note), "user");
	} else if (!shim_cfg.xla_graphs) {
		char flags[4096];
		if (snprintf(flags, sizeof(flags), "%s%s%s", xf ? xf : "", xf && *xf ? " " : "",
		             xflag) < (int)sizeof(flags)) {
			setenv("XLA_FLAGS", flags, 1);
			snprintf(xla_graphs_note, sizeof(xla_graphs_note), "off (set by aicprof)");
			add_token(mark, sizeof(mark), "xla_graphs");
		}
	}
	/* XLA's HLO with its source lines, dumped beside the trace (xla.c) */
	{
		char tpath[1024];
		if (trace_path(tpath, sizeof(tpath)))
			tpath[0] = 0;
		xla_lines_setup(tpath, has_token(mine, "xla_lines"), mark, sizeof(mark),
		                xla_lines_note, sizeof(xla_lines_note));
		ctor_pid = getpid();
		atexit(at_exit_unstarted);
	}
	if (*mark)
		setenv("AICPROF_ENV_SET", mark, 1);
	else
		unsetenv("AICPROF_ENV_SET");

	Dl_info di;
	if (dladdr((void *)aicprof_init, &di) && di.dli_fname) {
		char *real = realpath(di.dli_fname, NULL);
		snprintf(self_path, sizeof(self_path), "%s", real ? real : di.dli_fname);
		free(real);
	}
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	if (shim_cfg.eager) {
		shim_leave();
		start();
		return;
	}
	if (inj && *inj && strcmp(inj, self_path)) {
		char *real = realpath(inj, NULL);
		int ours = real && !strcmp(real, self_path);
		free(real);
		if (!ours) {
			shim_say("another tool injects into CUDA (CUDA_INJECTION64_PATH=%s): "
			         "aicprof steps aside",
			         inj);
			shim_leave();
			return;
		}
	} else if (self_path[0]) {
		setenv("CUDA_INJECTION64_PATH", self_path, 1);
	}
	/* CUDA already initialised before us (a program that initialises CUDA in an earlier
	 * constructor): the driver will not inject again, so start now. */
	void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (cu) {
		int (*drv_ver)(int *) = (int (*)(int *))dlsym(cu, "cuDriverGetVersion");
		int (*ctx_cur)(void **) = (int (*)(void **))dlsym(cu, "cuCtxGetCurrent");
		void *ctx = NULL;
		int v = 0;
		if (drv_ver && !drv_ver(&v) && ctx_cur && !ctx_cur(&ctx) && ctx) {
			shim_leave();
			start();
			return;
		}
	}
	shim_leave();
}
