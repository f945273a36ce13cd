/*
 * model.h - the report's view of summary.json (docs/summary-format.md): the parsed cJSON tree,
 * plus arrays of nodes and edges with every field the report draws checked for presence and
 * type. A field that is absent or of the wrong type is "unknown" (a negative number, a NULL
 * string), and the model keeps a list of what was missing so the page can say so. The report
 * never reads the trace; it reads only this.
 */
#ifndef AICPROF_REPORT_MODEL_H
#define AICPROF_REPORT_MODEL_H

#include "lib/json.h"
#include "lib/util.h"

#include <cJSON.h>

/* d as an int when it lies in int's range, else INT_MIN (which no node id is): summary.json's
 * numbers are never converted out of range. */
int rmodel_int(double d);

struct rnode {
	int id;           /* nodes[].id, or the node's index when absent */
	const char *name; /* short name, else full_name; never NULL ("unnamed") */
	const char *full_name, *kind, *family, *op, *dtype, *bound; /* NULL when unknown */
	const char *source; /* first of sources[], or site file:line; NULL when unknown */
	char *source_buf;   /* owns source when it was built from site */
	double us;          /* median time, -1 when unknown */
	double bytes_read, bytes_written, flops, gbs, intensity, roofline_us; /* -1 unknown */
	int count, stream;                                                    /* -1 when unknown */
	int cand;          /* index in candidates[] of the first candidate holding it, or -1 */
	const cJSON *json; /* the node's object in the tree */
};

struct redge {
	int from, to;    /* indices into rmodel.nodes */
	double bytes;    /* -1 when unknown */
	const char *how; /* NULL when unknown */
};

struct rmodel {
	const cJSON *root;
	struct rnode *nodes;
	int nr_nodes;
	struct redge *edges;
	int nr_edges, alloc_edges;
	const cJSON *cands; /* candidates[], possibly empty; never NULL after init */
	int nr_cands;
	int *cand_order;    /* cand_order[k]: index in candidates[] of the k-th (by number) */
	int *cand_rank;     /* cand_rank[i]: 1-based rank of candidates[i]: its number */
	double step_us;     /* steps.median_us, else the sum of node times, else -1 */
	int step_us_known;  /* 1 when step_us came from steps.median_us */
	double kernel_us;   /* sum of known node times */
	double max_node_us; /* largest known node time, 0 when none */
	char **missing;     /* what summary.json lacks, unique, in the order noticed */
	int nr_missing, alloc_missing;
	cJSON *empty; /* an empty array stood in for absent lists; owned */
	struct rmodel_id {
		int id, index;
	} * ids; /* nodes' ids, sorted, for rmodel_find() */
};

/*
 * Builds the model over root (which the caller keeps alive and frees after rmodel_release).
 * Never fails: what is missing is recorded with rmodel_missing().
 */
void rmodel_init(struct rmodel *m, const cJSON *root);
void rmodel_release(struct rmodel *m);

/* Records that what (a field path such as "steps.median_us") is absent; duplicates are kept once.
 */
void rmodel_missing(struct rmodel *m, const char *what);

/* Index in m->nodes of the node with this id, or -1. */
int rmodel_find(const struct rmodel *m, int id);

#endif
