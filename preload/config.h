/*
 * config.h - the shim's configuration, read once from AICPROF_* environment variables.
 *
 * config_load() fills a struct config from an environment lookup function (getenv in the
 * shim, a table in tests). A bad value never stops anything: it leaves the default and adds
 * one message to the returned list, which the shim prints as one "aicprof:" line each.
 */
#ifndef AICPROF_CONFIG_H
#define AICPROF_CONFIG_H

#include <stddef.h>

enum writes_mode { WRITES_INFER = 0, WRITES_PROBE = 1 };

struct config {
	char output[512];  /* AICPROF_OUTPUT: path pattern, %p pid, %r rank, %h host, %% */
	int attrib;        /* AICPROF_ATTRIB: source attribution on (1) or off (0) */
	int depth;         /* AICPROF_DEPTH: user frames kept per site, 1..16 */
	int alloc_backend; /* AICPROF_ALLOC_BACKEND: unset (-1): PyTorch keeps its caching
	                    * allocator, whose blocks are recorded (poolhook.c), and XLA gets its
	                    * platform allocator; 1 also sets PyTorch's cudaMallocAsync backend; 0
	                    * leaves both allocators as they are (each only if the user set none) */
	long max_mb;       /* AICPROF_MAX_MB: trace size cap in MiB, 0 = none */
	double delay_s;    /* AICPROF_DELAY: seconds after start before recording */
	double duration_s; /* AICPROF_DURATION: seconds of recording, then the shim stops (0: to
	                    * the end, or the size cap) */
	int steps;         /* AICPROF_STEPS: the window closes once a loop of this many steps alike
	                    * has run (stepwin.c; 0: no step window, as under AICPROF_CAPTURE=
	                    * profiler-api) */
	double steps_s;    /* AICPROF_STEPS_S: ... and has lasted this many seconds */
	char range[128];   /* AICPROF_RANGE: record only inside NVTX ranges with this text prefix */
	int quiet;         /* AICPROF_QUIET: no "aicprof:" lines at all */
	int debug;         /* AICPROF_DEBUG: extra diagnostics on stderr */
	enum writes_mode writes; /* AICPROF_WRITES: "infer" or "probe" (calibration) */
	int probe_count;         /* AICPROF_PROBE_COUNT: launches per kernel name to calibrate */
	int eager;               /* AICPROF_EAGER: subscribe in the constructor, not at cuInit */
	int args;                /* AICPROF_ARGS: record kernel arguments (1) or not (0) */
	int activity;   /* AICPROF_ACTIVITY: GPU times from CUPTI activity (diagnostics: 0) */
	int xla_graphs; /* AICPROF_XLA_GRAPHS: 1 leaves XLA's command buffers (CUDA graphs) on */
	int xla_lines;  /* AICPROF_XLA_LINES: 0 asks XLA for no HLO dump (xla.c), default 1 */
	int selftime;   /* AICPROF_SELFTIME: time the shim's own parts, printed at exit */
	int mux; /* AICPROF_MUX: share CUPTI with other tools (1, default), or yield to them (0) */
	int capture_api;    /* AICPROF_CAPTURE=profiler-api: record only between the program's
	                     * cudaProfilerStart and cudaProfilerStop (0: "all", the default) */
	int resolve_shim;   /* AICPROF_RESOLVE: "offline" (0, the default: the analyzer resolves
	                     * pointers to allocations, ptrmap.c) or "shim" (1: the shim's map does);
	                     * AICPROF_WRITES=probe needs the map and sets 1 */
	int pause_blocks;   /* AICPROF_PAUSE_BLOCKS: 1, for benchmarks only: a paused capture range
	                     * also records no caching-allocator blocks (poolhook.c), so that a paired
	                     * benchmark's difference holds the allocation path's cost; such a trace
	                     * cannot resolve pointers into blocks handed out while paused */
	int pause_activity; /* AICPROF_PAUSE_ACTIVITY: 1, for benchmarks only: a paused capture
	                     * range also turns CUPTI's activity kinds off (cupti.c's capture), so
	                     * that a paired benchmark's difference holds what timing the kernels
	                     * costs, the GPU's side included */
	int finalize;       /* AICPROF_FINALIZE: 1: when the recording window closes, CUPTI is
	                     * finalized at the program's next driver API exit (cupti.c), not only
	                     * its callbacks and kinds turned off (0, the default) */
	int defer;          /* AICPROF_DEFER: resolved offline, the writer thread scans a launch's
	                     * parameters (1, default; argscan.c), or the launching thread does (0) */
};

/* Up to this many messages, each at most CONFIG_MSG_LEN bytes. */
#define CONFIG_MAX_MSG 16
#define CONFIG_MSG_LEN 160
struct config_msgs {
	int n;
	char msg[CONFIG_MAX_MSG][CONFIG_MSG_LEN];
};

/*
 * Fills *c with defaults overridden by what lookup(name) returns for each AICPROF_* name
 * (NULL: unset). Bad values keep the default and append a message naming the variable and the
 * value to *msgs (which may be NULL). Never allocates, never fails.
 */
void config_load(struct config *c, const char *(*lookup)(const char *name),
                 struct config_msgs *msgs);

/*
 * Expands the output pattern into out (size outsz): %p pid, %r rank (or "0" when unset... see
 * README), %h host, %% a percent sign. Returns 0, or -1 when the result does not fit.
 */
int config_output_path(const char *pattern, long pid, const char *rank, const char *host, char *out,
                       size_t outsz);

#endif
