/*
 * cmd-bench.c - `aicprof bench FUSEDDIR`: builds and runs the bench harness of every group
 * that `aicprof fuse` generated, on this machine's GPU, and prints a before/after table.
 *
 * It needs nvcc (CUDA_HOME/bin/nvcc, else /usr/local/cuda/bin/nvcc, else PATH) and a GPU (asked
 * of the driver through libcuda.so.1, loaded at run time, so the command itself links no CUDA):
 * without either it says so and exits 1. Each harness is built with nvcc -O3 -arch=sm_XY for
 * the device's compute capability (sm_90 on an H100/H200). The tuning cache (a JSON object
 * keyed by "device|group key|kernel source hash", at AICPROF_TUNE_CACHE or
 * ~/.cache/aicprof/tune.json) gives a configuration measured before on the same device, shapes,
 * dtypes and generated kernel (a generator that writes the kernel differently, or offers wider
 * vectors, tunes again instead of reusing an older kernel's choice); the harness then only
 * checks and times that configuration (--retune measures all again). The harness's JSON line
 * becomes FUSEDDIR/<name>/tune.json (choice and timings) and a row of FUSEDDIR/bench.json.
 * Exit status: 0 when every group built and passed its checks, 1 otherwise.
 */
#include "aicprof.h"
#include "fusion/fusion.h"
#include "lib/file.h"
#include "lib/json.h"
#include "lib/parseopt.h"
#include "report/sha256.h"

#include <cJSON.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct gpu {
	char name[256];
	int major, minor;
};

/* Asks the driver for device 0. Returns 0, or -1 with the reason in why. */
static int probe_gpu(struct gpu *gpu, char *why, size_t len)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, len, "no CUDA driver (libcuda.so.1 not found)");
		return -1;
	}
	int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
	int (*get)(int *, int) = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	int (*attr)(int *, int, int) = (int (*)(int *, int, int))dlsym(h, "cuDeviceGetAttribute");
	int (*name)(char *, int, int) = (int (*)(char *, int, int))dlsym(h, "cuDeviceGetName");
	int n = 0, dev = 0, rc;
	if (!init || !count || !get || !attr || !name) {
		snprintf(why, len, "the CUDA driver lacks cuInit/cuDeviceGetCount");
		return -1;
	}
	if ((rc = init(0)) != 0) {
		snprintf(why, len, "cuInit failed with CUDA error %d (no GPU or no driver access)",
		         rc);
		return -1;
	}
	if (count(&n) || n < 1 || get(&dev, 0)) {
		snprintf(why, len, "the CUDA driver sees no device");
		return -1;
	}
	/* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76 */
	if (attr(&gpu->major, 75, dev) || attr(&gpu->minor, 76, dev) ||
	    name(gpu->name, sizeof(gpu->name), dev)) {
		snprintf(why, len, "cannot read device 0's properties");
		return -1;
	}
	return 0;
}

/* nvcc's path as a new string, or NULL: AICPROF_NVCC where set (and only it), else
 * CUDA_HOME/bin, /usr/local/cuda/bin, PATH. */
static char *find_nvcc(void)
{
	const char *explicit = getenv("AICPROF_NVCC");
	if (explicit && *explicit)
		return access(explicit, X_OK) ? NULL : xstrdup(explicit);
	const char *home = getenv("CUDA_HOME");
	struct strbuf sb = STRBUF_INIT;
	if (home && *home) {
		strbuf_addf(&sb, "%s/bin/nvcc", home);
		if (!access(sb.buf, X_OK))
			return sb.buf;
		strbuf_reset(&sb);
	}
	if (!access("/usr/local/cuda/bin/nvcc", X_OK)) {
		strbuf_release(&sb);
		return xstrdup("/usr/local/cuda/bin/nvcc");
	}
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		strbuf_reset(&sb);
		strbuf_add(&sb, path, n);
		strbuf_adds(&sb, "/nvcc");
		if (n && !access(sb.buf, X_OK))
			return sb.buf;
		path = end ? end + 1 : NULL;
	}
	strbuf_release(&sb);
	return NULL;
}

/* Runs argv with stdout (and stderr when both) to out_path; returns the exit status or -1. */
static int run_to_file(char *const argv[], const char *out_path, int both)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return error("cannot fork: %m");
	if (!pid) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		if (both)
			dup2(fd, 2);
		close(fd);
		execv(argv[0], argv);
		fprintf(stderr, "aicprof: error: cannot run '%s': %m\n", argv[0]);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return error("waitpid: %m");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The text of a file this command wrote or reads back (the harness's output, nvcc's log),
 * NULL when it cannot be read: the caller's message says what is missing. */
#define BENCH_FILE_MAX (64UL << 20)
static char *read_quiet(const char *path)
{
	struct strbuf why = STRBUF_INIT;
	char *text = file_read(path, BENCH_FILE_MAX, NULL, &why);
	strbuf_release(&why);
	return text;
}

static cJSON *parse_quiet(const char *path)
{
	struct strbuf why = STRBUF_INIT;
	cJSON *j = json_parse_file(path, BENCH_FILE_MAX, &why);
	strbuf_release(&why);
	return j;
}

/* The last line of text that starts with '{', parsed; NULL when none parses. */
static cJSON *last_json_line(const char *text)
{
	cJSON *j = NULL;
	const char *p = text;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (*p == '{') {
			struct strbuf err = STRBUF_INIT;
			cJSON *k = json_parse_text("the harness's output", p, n, &err);
			strbuf_release(&err);
			if (k) {
				cJSON_Delete(j);
				j = k;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return j;
}

static char *cache_path(void)
{
	const char *env = getenv("AICPROF_TUNE_CACHE");
	if (env && *env)
		return xstrdup(env);
	const char *home = getenv("HOME");
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s/.cache/aicprof/tune.json", home && *home ? home : ".");
	return sb.buf;
}

static cJSON *cache_load(const char *path)
{
	cJSON *j = parse_quiet(path);
	if (!j && access(path, F_OK) == 0)
		warning("tuning cache '%s' is not valid JSON; starting a new one", path);
	if (!j || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "entries"))) {
		cJSON_Delete(j);
		j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "format", 1);
		cJSON_AddObjectToObject(j, "entries");
	}
	return j;
}

static int cache_save(const char *path, const cJSON *j)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir_p(dir)) {
			free(dir);
			return -1;
		}
	}
	free(dir);
	char *text = cJSON_Print(j);
	int rc = write_file_atomic(path, text, strlen(text));
	free(text);
	return rc;
}

struct bench_opts {
	const char *dir;
	int retune;
	int samples;
};

/* The first 8 bytes of the SHA-256 of the text of path, as a number (0 when unreadable): the
 * tuning cache's kernel part. */
static unsigned long long file_hash(const char *path)
{
	char *t = read_quiet(path);
	if (!t)
		return 0;
	uint8_t d[32];
	sha256(t, strlen(t), d);
	free(t);
	unsigned long long h = 0;
	for (int i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h;
}

/* Builds and runs one group; appends its result to results. Returns 0 when it passed. */
static int bench_group(const struct bench_opts *o, const char *nvcc, const struct gpu *gpu,
                       const char *name, cJSON *cache, cJSON *results, int *cache_dirty)
{
	char *gdir = path_join(o->dir, name);
	struct strbuf src = STRBUF_INIT, bin = STRBUF_INIT, log = STRBUF_INIT, out = STRBUF_INIT,
	              meta = STRBUF_INIT, arch = STRBUF_INIT, key = STRBUF_INIT, cfg = STRBUF_INIT,
	              smp = STRBUF_INIT;
	strbuf_addf(&src, "%s/%s_bench.cu", gdir, name);
	strbuf_addf(&bin, "%s/%s_bench", gdir, name);
	strbuf_addf(&log, "%s/%s_build.log", gdir, name);
	strbuf_addf(&out, "%s/%s_bench.out", gdir, name);
	strbuf_addf(&meta, "%s/%s.meta.json", gdir, name);
	strbuf_addf(&arch, "-arch=sm_%d%d", gpu->major, gpu->minor);
	strbuf_addf(&smp, "%d", o->samples);
	int rc = -1;
	cJSON *mj = NULL, *res = NULL;
	mj = parse_quiet(meta.buf);
	const cJSON *mkey = cJSON_GetObjectItemCaseSensitive(mj, "key");
	if (!cJSON_IsString(mkey)) {
		error("'%s' is missing or has no key; run aicprof fuse again", meta.buf);
		goto out;
	}
	strbuf_addf(&key, "%s/%s_kernel.cu", gdir, name);
	const unsigned long long kh = file_hash(key.buf);
	strbuf_reset(&key);
	strbuf_addf(&key, "%s|%s|%016llx", gpu->name, mkey->valuestring, kh);
	fprintf(stderr, "aicprof: building %s (%s)\n", name, arch.buf);
	char *cc[] = {(char *)nvcc, "-O3", arch.buf, "-o", bin.buf, src.buf, NULL};
	int st = run_to_file(cc, log.buf, 1);
	if (st) {
		char *l = read_quiet(log.buf);
		error("%s: nvcc failed (exit %d); its output, in '%s':\n%.4000s", name, st, log.buf,
		      l ? l : "");
		free(l);
		goto out;
	}
	cJSON *entries = cJSON_GetObjectItemCaseSensitive(cache, "entries");
	const cJSON *hit = o->retune ? NULL : cJSON_GetObjectItemCaseSensitive(entries, key.buf);
	const cJSON *hc = cJSON_GetObjectItemCaseSensitive(hit, "config");
	char *run[8] = {bin.buf, "--samples", smp.buf, NULL};
	if (hc) {
		strbuf_addf(&cfg, "%d,%d,%d", (int)json_clamp(hc, "block", 0, 0, 1 << 20),
		            (int)json_clamp(hc, "vec", 0, 0, 1 << 20),
		            (int)json_clamp(hc, "ept", 0, 0, 1 << 20));
		run[3] = "--config";
		run[4] = cfg.buf;
		run[5] = NULL;
		fprintf(stderr, "aicprof: running %s with the cached configuration %s\n", name,
		        cfg.buf);
	} else
		fprintf(stderr, "aicprof: running %s (tuning)\n", name);
	st = run_to_file(run, out.buf, 0);
	char *ot = read_quiet(out.buf);
	res = ot ? last_json_line(ot) : NULL;
	free(ot);
	if (!res) {
		error("%s: the harness exited %d without a result line (see '%s')", name, st,
		      out.buf);
		goto out;
	}
	cJSON_AddBoolToObject(res, "from_cache", hc != NULL);
	const cJSON *okf = cJSON_GetObjectItemCaseSensitive(res, "ok");
	int ok = cJSON_IsTrue(okf) && st == 0;
	/* tune.json beside the kernel: the choice and the timings */
	cJSON *tune = cJSON_CreateObject();
	cJSON_AddStringToObject(tune, "device", gpu->name);
	cJSON_AddStringToObject(tune, "key", mkey->valuestring);
	const char *copy[] = {"config", "timings", "before_us", "after_us", "speedup", "ok"};
	for (size_t i = 0; i < ARRAY_SIZE(copy); i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(res, copy[i]);
		if (f)
			cJSON_AddItemToObject(tune, copy[i], cJSON_Duplicate(f, 1));
	}
	cJSON_AddBoolToObject(tune, "from_cache", hc != NULL);
	char *tt = cJSON_Print(tune);
	char *tpath = path_join(gdir, "tune.json");
	write_file_atomic(tpath, tt, strlen(tt));
	free(tpath);
	free(tt);
	cJSON_Delete(tune);
	const cJSON *conf = cJSON_GetObjectItemCaseSensitive(res, "config");
	if (ok && conf && !hc) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToObject(e, "config", cJSON_Duplicate(conf, 1));
		cJSON_AddNumberToObject(e, "us", jnumd(res, "after_us", 0));
		cJSON_AddNumberToObject(e, "when", (double)time(NULL));
		cJSON_DeleteItemFromObjectCaseSensitive(entries, key.buf);
		cJSON_AddItemToObject(entries, key.buf, e);
		*cache_dirty = 1;
	}
	const cJSON *rb = cJSON_GetObjectItemCaseSensitive(mj, "recorded_before_us");
	if (cJSON_IsNumber(rb))
		cJSON_AddNumberToObject(res, "recorded_before_us", rb->valuedouble);
	if (!ok)
		error("%s: the fused kernel failed its checks against the unfused reference "
		      "(see '%s' and the harness's messages above)",
		      name, out.buf);
	cJSON_AddItemToArray(results, res);
	res = NULL;
	rc = ok ? 0 : -1;
out:
	cJSON_Delete(mj);
	cJSON_Delete(res);
	strbuf_release(&src);
	strbuf_release(&bin);
	strbuf_release(&log);
	strbuf_release(&out);
	strbuf_release(&meta);
	strbuf_release(&arch);
	strbuf_release(&key);
	strbuf_release(&cfg);
	strbuf_release(&smp);
	free(gdir);
	return rc;
}

static void print_table(const cJSON *results)
{
	printf("%-24s %-5s %13s %10s %10s %8s %10s %10s %8s %8s %8s %6s %8s %6s %6s %s\n", "group",
	       "dtype", "elements", "before_us", "after_us", "speedup", "MB_before", "MB_after",
	       "GBs_bef", "GBs_aft", "peak", "%peak", "copy_us", "%copy", "check", "config");
	const cJSON *r;
	cJSON_ArrayForEach(r, results)
	{
		const cJSON *g = cJSON_GetObjectItemCaseSensitive(r, "group");
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(r, "dtype");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(r, "config");
		char cfg[64] = "-";
		if (c)
			snprintf(cfg, sizeof(cfg), "b%d v%d e%d%s",
			         (int)json_clamp(c, "block", 0, 0, 1 << 20),
			         (int)json_clamp(c, "vec", 0, 0, 1 << 20),
			         (int)json_clamp(c, "ept", 0, 0, 1 << 20),
			         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "from_cache"))
			             ? " (cached)"
			             : " (tuned)");
		double pk = jnumd(r, "peak_gbs", 0), cu = jnumd(r, "copy_us", 0),
		       au = jnumd(r, "after_us", 0);
		char cpct[16] = "-";
		if (cu > 0 && au > 0)
			snprintf(cpct, sizeof(cpct), "%.0f%%", 100 * cu / au);
		printf("%-24s %-5s %13.0f %10.2f %10.2f %7.2fx %10.1f %10.1f %8.0f %8.0f %8.0f "
		       "%5.0f%% %8.2f %6s %6s %s\n",
		       cJSON_IsString(g) ? g->valuestring : "?",
		       cJSON_IsString(dt) ? dt->valuestring : "?", jnumd(r, "numel", 0),
		       jnumd(r, "before_us", 0), au, jnumd(r, "speedup", 0),
		       jnumd(r, "bytes_before", 0) / 1e6, jnumd(r, "bytes_after", 0) / 1e6,
		       jnumd(r, "gbs_before", 0), jnumd(r, "gbs_after", 0), pk,
		       pk > 0 ? 100 * jnumd(r, "gbs_after", 0) / pk : 0, cu, cpct,
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")) ? "pass" : "FAIL",
		       cfg);
	}
	printf("before: the unfused sequence (one kernel per op, intermediates in memory); after: "
	       "the fused kernel.\nGB/s: bytes moved / median time; peak: a device-to-device "
	       "cudaMemcpy in the same run; %%peak: GBs_aft / peak (target 90%% at 64 MB or "
	       "more).\ncopy_us: a copy of after's bytes (half read, half written), the faster of "
	       "cudaMemcpy and a copy kernel, timed as the kernel; %%copy: copy_us / after_us, the "
	       "share of the floor at the group's size.\n");
}

static const char *const bench_usage[] = {
    "aicprof bench FUSEDDIR [--retune] [--samples N]",
    NULL,
};

int cmd_bench(int argc, char **argv)
{
	struct bench_opts o = {NULL, 0, 30};
	const struct parseopt options[] = {
	    OPT_FLAG(0, "retune", &o.retune, "measure every configuration again (no cache)"),
	    OPT_INT(0, "samples", &o.samples, "N", 1, 100000,
	            "time each kernel N times, take the median (default: 30)"),
	    OPT_END(),
	};
	argc = parse_options(argc, argv, options, bench_usage, 0);
	if (argc != 1) {
		if (argc)
			error("bench: unexpected argument '%s'", argv[1]);
		else
			error("bench: no directory of fused kernels (FUSEDDIR)");
		usage_with_options(bench_usage, options);
	}
	o.dir = argv[0];
	char *ipath = path_join(o.dir, "groups.json");
	cJSON *idx = parse_quiet(ipath);
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(idx, "groups");
	if (!cJSON_IsArray(groups)) {
		error("'%s' is missing or unreadable; run 'aicprof fuse' first", ipath);
		free(ipath);
		cJSON_Delete(idx);
		return 1;
	}
	free(ipath);
	char *nvcc = find_nvcc();
	if (!nvcc) {
		cJSON_Delete(idx);
		error("bench: no nvcc (looked at $AICPROF_NVCC, else in $CUDA_HOME/bin, "
		      "/usr/local/cuda/bin and PATH); set CUDA_HOME to the CUDA toolkit");
		return 1;
	}
	struct gpu gpu = {{0}, 0, 0};
	char why[256];
	if (probe_gpu(&gpu, why, sizeof(why))) {
		free(nvcc);
		cJSON_Delete(idx);
		error(
		    "bench: no GPU to run on: %s; run 'aicprof bench' on the machine with the GPU",
		    why);
		return 1;
	}
	fprintf(stderr, "aicprof: device %s (cc %d.%d), nvcc %s\n", gpu.name, gpu.major, gpu.minor,
	        nvcc);
	char *cpath = cache_path();
	cJSON *cache = cache_load(cpath);
	cJSON *results = cJSON_CreateArray();
	int fails = 0, dirty = 0;
	const cJSON *g;
	cJSON_ArrayForEach(g, groups)
	{
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(g, "name");
		if (!cJSON_IsString(n) || strchr(n->valuestring, '/')) {
			error("'%s/groups.json': a group without a valid name", o.dir);
			fails++;
			continue;
		}
		if (bench_group(&o, nvcc, &gpu, n->valuestring, cache, results, &dirty))
			fails++;
	}
	if (dirty && cache_save(cpath, cache))
		warning("could not update the tuning cache '%s'", cpath);
	print_table(results);
	char *bj = cJSON_Print(results);
	char *bpath = path_join(o.dir, "bench.json");
	if (write_file_atomic(bpath, bj, strlen(bj)))
		fails++;
	free(bpath);
	free(bj);
	cJSON_Delete(results);
	cJSON_Delete(cache);
	cJSON_Delete(idx);
	free(cpath);
	free(nvcc);
	if (fails)
		error("bench: %d group%s failed", fails, fails > 1 ? "s" : "");
	return fails ? 1 : 0;
}
