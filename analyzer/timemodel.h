#ifndef AICPROF_TIMEMODEL_H
#define AICPROF_TIMEMODEL_H

/*
 * The step's time model (timemodel.c): what part of the captured step the GPU is busy, what
 * part it waits on the host, and for each finding the part of its saving that shrinks the step.
 */
struct model;
struct cJSON;

struct timemodel {
	double step_us;         /* the captured step (at least its last GPU end) */
	double kernel_sum_us;   /* sum of the events' durations, streams counted apart */
	double busy_us;         /* union of the events' intervals over streams */
	double overlap_us;      /* kernel_sum_us - busy_us: time two streams ran at once */
	double idle_us;         /* step_us - busy_us */
	double host_blocked_us; /* GPU idle right after a host sync or blocking copy */
	double launch_gap_us;   /* the other GPU idle time: gaps the host was late to fill */
	int ngaps;              /* gaps over TM_GAP_US between busy stretches */
	double gap_median_us;
	double on_path_us;  /* busy time the step waits on (the GPU's critical path) */
	double promised_us; /* the headline: non-overlapping proven findings, bounded */
	double promised_gpu_us, promised_host_us;
	int npromised;
	/* per pattern (m->pats order, after timemodel_compute() sorted them) */
	double *kernel_saved; /* the finding's kernel-time saving */
	double *step_saved;   /* the part of it that shrinks the step */
	char *host;           /* 1: a host-blocked finding (sync, blocking copy) */
	char *proven;         /* 1: counted in the headline */
	char *counted;        /* 1: one of the findings the headline sums */
	double *on_path;      /* per node: its share of the critical busy time */
	int nnodes, npats;
};

/*
 * Builds m->tm from the captured step's timeline (m->tl) and the candidates, then bounds every
 * pattern's saved_us by the step (saved_us becomes the step saving; kernel_saved keeps the
 * kernel-time figure) and re-ranks m->pats: proven first, then by it, then bytes saved. Call after
 * patterns_fold(). Never fails; with no timeline it leaves the savings as they were.
 */
void timemodel_compute(struct model *m);

/* The model as summary.json's "time_model" object (a new cJSON object; null when none). */
struct cJSON *timemodel_json(const struct model *m);

/*
 * Ranks a summary's candidates array in place as timemodel_compute() ranks patterns (proven
 * first, then time_saved_us_per_step; stable), writes each one's "number" (1-based) and
 * renames its fusion group "c<id>_ops" to "c<number>_ops", so the report, summary.json and
 * fuse's directories use one number. summary_json() calls it; so does jobmerge.c after it
 * appends the communication findings. Never fails.
 */
void timemodel_renumber(struct cJSON *root);

/* The parts of timemodel_renumber() for a writer that emits candidates one at a time
 * (summary.c's streaming writer): the rank key of candidate object c at position at, the order
 * of two keys (qsort), and writing number n (1-based) into c with its group renamed. */
struct tm_rank {
	int proven, at;
	double saved;
};
void timemodel_rank_key(const struct cJSON *c, int at, struct tm_rank *k);
int timemodel_rank_cmp(const void *a, const void *b);
void timemodel_set_number(struct cJSON *c, int number);

/* A time in µs for a finding's text into buf (32 bytes): "12.3 µs", "4.56 ms"; returns buf. */
char *fmt_us(double us, char *buf);

void timemodel_free(struct timemodel *tm);

#endif
