/*
 * steps.h - the NVTX-step rule: which NVTX ranges are a program's steps. One rule for the
 * single-trace view (the graph builder, steps.c) and the job view (job.c), implemented in
 * steps.c; internal to analyzer/.
 *
 * The rule:
 *  - a closed NVTX range (a push matched with the next pop of the same thread; the builder also
 *    takes a range start with its end, at depth 0) has a key: its text with every run of digits
 *    made one '#' ("step 3" and "step 14" are "step #"), control characters made '?', cut at
 *    64 KiB; a text that is empty or only spaces has none and is never a step (NCCL pushes such
 *    ranges around its calls);
 *  - keys are tallied in the order their ranges close: how many, and their lowest nesting depth
 *    on their thread (0 outermost);
 *  - the step key is the outermost repeated key: among keys closed at least twice the lowest
 *    depth, then the most closed, then the first seen. It is final as soon as it is at depth 0,
 *    or closed 3 times (a streaming reader decides there and keeps no other ranges); at the end
 *    of the trace the best so far is taken;
 *  - the steps are the step key's ranges, at any depth, in the order they close, less each that
 *    holds no op or starts before the previous step's end (nvtx_step_accept()).
 */
#ifndef AICPROF_STEPS_H
#define AICPROF_STEPS_H

/*
 * A range is a step candidate only when it holds at least this many ops: ranges around no op
 * (XLA's compile passes, a logging range) repeat too, and are not steps. (Frameworks' own
 * ranges around single kernels, XLA's "Thunk:", are known by their text: steps.c.)
 */
#define NVTX_STEP_MIN_OPS 1

#define NVTX_MAX_KEYS 4096 /* keys held; texts beyond them have no key */

/* The keys seen and their tally. Zero it with nvtx_rule_init(); free with nvtx_rule_release(). */
struct nvtx_rule {
	char **text; /* per key: its text, owned */
	long *count; /* ranges closed */
	int *depth;  /* their lowest depth */
	int nkeys;
	int key; /* the step key once final, -1 before */
};

void nvtx_rule_init(struct nvtx_rule *r);
/* Frees what r holds; r can be initialised again. */
void nvtx_rule_release(struct nvtx_rule *r);
/*
 * The key of a range's text (NULL is no text), interned in r: the same number for texts with
 * the same key. Returns -1 for a text with no key (blank), or when NVTX_MAX_KEYS are held.
 */
int nvtx_rule_key(struct nvtx_rule *r, const char *text);
/*
 * Tallies a closed range of key (from nvtx_rule_key(); -1 is ignored) at nesting depth.
 * Returns the step key when it is final (made so by this range, or before; its later ranges
 * are no longer tallied), else -1.
 */
int nvtx_rule_closed(struct nvtx_rule *r, int key, int depth);
/* The step key as things stand: the final one, else the best so far; -1 when no key repeats. */
int nvtx_rule_best(const struct nvtx_rule *r);
/* key's text ("step #"), owned by r; NULL for a key r does not have. */
const char *nvtx_rule_text(const struct nvtx_rule *r, int key);
/*
 * The rule's last part, for a range of the step key over the ops [s, e) (ops numbered in
 * order): it is a step when it holds an op (e > s) and starts at or after *last_end, the end
 * of the last step accepted (0 before the first). Then sets *last_end = e and returns 1; else
 * returns 0.
 */
int nvtx_step_accept(long *last_end, long s, long e);

#endif
