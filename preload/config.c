/*
 * config.c - reads the AICPROF_* variables into a struct config. Each variable has one parse
 * function (boolean, bounded integer, number, enum, string); a value that does not parse or is
 * out of bounds keeps the default and leaves one message. Nothing here allocates, so it runs
 * safely in the shim's constructor.
 */
#include "preload/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_msg(struct config_msgs *m, const char *var, const char *val, const char *why)
{
	if (!m || m->n >= CONFIG_MAX_MSG)
		return;
	snprintf(m->msg[m->n++], CONFIG_MSG_LEN, "ignoring %s='%.60s': %s", var, val, why);
}

static int parse_bool(const char *var, const char *v, int *out, struct config_msgs *m)
{
	static const char *yes[] = {"1", "on", "yes", "true"}, *no[] = {"0", "off", "no", "false"};
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(v, no[i]))
			return *out = 0, 0;
	}
	add_msg(m, var, v, "expected 1 or 0");
	return -1;
}

static int parse_long(const char *var, const char *v, long lo, long hi, long *out,
                      struct config_msgs *m)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || end == v || *end) {
		add_msg(m, var, v, "not a whole number");
		return -1;
	}
	if (x < lo || x > hi) {
		char why[64];
		snprintf(why, sizeof(why), "out of range %ld..%ld", lo, hi);
		add_msg(m, var, v, why);
		return -1;
	}
	*out = x;
	return 0;
}

static int parse_double(const char *var, const char *v, double lo, double hi, double *out,
                        struct config_msgs *m)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || end == v || *end || !(x >= lo && x <= hi)) {
		add_msg(m, var, v, "not a number in range");
		return -1;
	}
	*out = x;
	return 0;
}

static int parse_str(const char *var, const char *v, char *out, size_t outsz, struct config_msgs *m)
{
	if (!*v) {
		add_msg(m, var, v, "empty");
		return -1;
	}
	if (strlen(v) >= outsz) {
		add_msg(m, var, v, "too long");
		return -1;
	}
	strcpy(out, v);
	return 0;
}

void config_load(struct config *c, const char *(*lookup)(const char *name), struct config_msgs *m)
{
	memset(c, 0, sizeof(*c));
	/* under torchrun (RANK set) the default name says the rank, for the job's glob */
	const char *rk = lookup("RANK");
	strcpy(c->output, rk && *rk ? "aicprof.rank%r.%p.aicp.jsonl" : "aicprof.%p.aicp.jsonl");
	c->attrib = 1;
	c->depth = 4;
	c->alloc_backend = -1;
	c->max_mb = 2048;
	c->steps = 100;
	c->steps_s = 2;
	c->writes = WRITES_INFER;
	c->probe_count = 2;
	c->args = 1;
	c->activity = 1;
	c->mux = 1;
	c->xla_lines = 1;
	c->defer = 1;
	if (m)
		m->n = 0;

	const char *v;
	long l;
	int b;
	if ((v = lookup("AICPROF_OUTPUT")))
		parse_str("AICPROF_OUTPUT", v, c->output, sizeof(c->output), m);
	if ((v = lookup("AICPROF_ATTRIB")) && !parse_bool("AICPROF_ATTRIB", v, &b, m))
		c->attrib = b;
	if ((v = lookup("AICPROF_DEPTH")) && !parse_long("AICPROF_DEPTH", v, 1, 16, &l, m))
		c->depth = (int)l;
	if ((v = lookup("AICPROF_ALLOC_BACKEND")) && !parse_bool("AICPROF_ALLOC_BACKEND", v, &b, m))
		c->alloc_backend = b;
	if ((v = lookup("AICPROF_PAUSE_BLOCKS")) && !parse_bool("AICPROF_PAUSE_BLOCKS", v, &b, m))
		c->pause_blocks = b;
	if ((v = lookup("AICPROF_FINALIZE")) && !parse_bool("AICPROF_FINALIZE", v, &b, m))
		c->finalize = b;
	if ((v = lookup("AICPROF_PAUSE_ACTIVITY")) &&
	    !parse_bool("AICPROF_PAUSE_ACTIVITY", v, &b, m))
		c->pause_activity = b;
	if ((v = lookup("AICPROF_MAX_MB")) && !parse_long("AICPROF_MAX_MB", v, 0, 1L << 30, &l, m))
		c->max_mb = l;
	if ((v = lookup("AICPROF_DELAY")))
		parse_double("AICPROF_DELAY", v, 0, 1e7, &c->delay_s, m);
	if ((v = lookup("AICPROF_DURATION")))
		parse_double("AICPROF_DURATION", v, 0, 1e7, &c->duration_s, m);
	if ((v = lookup("AICPROF_STEPS")) && !parse_long("AICPROF_STEPS", v, 0, 1000000, &l, m))
		c->steps = (int)l;
	if ((v = lookup("AICPROF_STEPS_S")))
		parse_double("AICPROF_STEPS_S", v, 0, 1e7, &c->steps_s, m);
	if ((v = lookup("AICPROF_RANGE")))
		parse_str("AICPROF_RANGE", v, c->range, sizeof(c->range), m);
	if ((v = lookup("AICPROF_QUIET")) && !parse_bool("AICPROF_QUIET", v, &b, m))
		c->quiet = b;
	if ((v = lookup("AICPROF_DEBUG")) && !parse_bool("AICPROF_DEBUG", v, &b, m))
		c->debug = b;
	if ((v = lookup("AICPROF_WRITES"))) {
		if (!strcmp(v, "probe"))
			c->writes = WRITES_PROBE;
		else if (!strcmp(v, "infer"))
			c->writes = WRITES_INFER;
		else
			add_msg(m, "AICPROF_WRITES", v, "expected 'infer' or 'probe'");
	}
	if ((v = lookup("AICPROF_RESOLVE"))) {
		if (!strcmp(v, "shim"))
			c->resolve_shim = 1;
		else if (!strcmp(v, "offline"))
			c->resolve_shim = 0;
		else
			add_msg(m, "AICPROF_RESOLVE", v, "expected 'offline' or 'shim'");
	}
	if ((v = lookup("AICPROF_CAPTURE"))) {
		if (!strcmp(v, "profiler-api"))
			c->capture_api = 1;
		else if (!strcmp(v, "all"))
			c->capture_api = 0;
		else
			add_msg(m, "AICPROF_CAPTURE", v, "expected 'all' or 'profiler-api'");
	}
	if ((v = lookup("AICPROF_PROBE_COUNT")) &&
	    !parse_long("AICPROF_PROBE_COUNT", v, 1, 1000, &l, m))
		c->probe_count = (int)l;
	if ((v = lookup("AICPROF_EAGER")) && !parse_bool("AICPROF_EAGER", v, &b, m))
		c->eager = b;
	if ((v = lookup("AICPROF_ARGS")) && !parse_bool("AICPROF_ARGS", v, &b, m))
		c->args = b;
	if ((v = lookup("AICPROF_DEFER")) && !parse_bool("AICPROF_DEFER", v, &b, m))
		c->defer = b;
	if ((v = lookup("AICPROF_ACTIVITY")) && !parse_bool("AICPROF_ACTIVITY", v, &b, m))
		c->activity = b;
	if ((v = lookup("AICPROF_MUX")) && !parse_bool("AICPROF_MUX", v, &b, m))
		c->mux = b;
	if ((v = lookup("AICPROF_XLA_GRAPHS")) && !parse_bool("AICPROF_XLA_GRAPHS", v, &b, m))
		c->xla_graphs = b;
	if ((v = lookup("AICPROF_XLA_LINES")) && !parse_bool("AICPROF_XLA_LINES", v, &b, m))
		c->xla_lines = b;
	if ((v = lookup("AICPROF_SELFTIME")) && !parse_bool("AICPROF_SELFTIME", v, &b, m))
		c->selftime = b;
	if (c->writes == WRITES_PROBE) /* calibration reads the allocation a pointer is in */
		c->resolve_shim = 1;
	/* No step window where the program says what to record (its profiler ranges). In a job of
	 * several ranks each rank's window closes at a step of its own; the job view matches the
	 * collectives the ranks' traces have in common (tests/func/t-job.sh). */
	if (c->capture_api)
		c->steps = 0;
}

int config_output_path(const char *pat, long pid, const char *rank, const char *host, char *out,
                       size_t outsz)
{
	size_t n = 0;
	char tmp[64];
	for (const char *p = pat; *p; p++) {
		const char *add = NULL;
		char one[2] = {*p, 0};
		if (*p == '%' && p[1]) {
			p++;
			switch (*p) {
			case 'p':
				snprintf(tmp, sizeof(tmp), "%ld", pid);
				add = tmp;
				break;
			case 'r':
				add = rank && *rank ? rank : "0";
				break;
			case 'h':
				add = host && *host ? host : "localhost";
				break;
			case '%':
				add = "%";
				break;
			default:
				one[0] = '%';
				add = one;
				p--;
				break;
			}
		} else {
			add = one;
		}
		size_t k = strlen(add);
		if (n + k + 1 > outsz)
			return -1;
		memcpy(out + n, add, k);
		n += k;
	}
	if (n + 1 > outsz)
		return -1;
	out[n] = 0;
	return 0;
}
