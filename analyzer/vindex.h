/*
 * vindex.h - indexes over a step graph's values that keep the passes after the build linear:
 * which values each node reads and writes (in ascending value order), which values share a
 * buffer (a group), and each group's writers in descending node order with a cursor for the
 * invariant search. The dead-work and invariant searches asked these questions by scanning
 * every value for every node or value, which made a buffer read by 200k distinct kernels take
 * more than 300 s.
 */
#ifndef AICPROF_VINDEX_H
#define AICPROF_VINDEX_H

#include "analyzer/model.h"

struct vindex {
	int *rd_off, *rd; /* node n reads values rd[rd_off[n] .. rd_off[n+1]) */
	int *wr_off, *wr; /* node n writes values wr[wr_off[n] .. wr_off[n+1]) */
	int *grp_of;      /* value -> group (the values of one buffer) */
	int ngroups;
	int *gw_off, *gw; /* group g's writers (node ids), descending */
	int *gw_cur;      /* a cursor into gw per group, for the caller (starts at gw_off[g]) */
	char *has_writer; /* group has a value written inside the step */
};

/*
 * Builds the indexes of m's nodes and values into x (every array owned by x; free with
 * vindex_free). Readers or writers outside [0, nnodes) are left out. O((V + R) log V) for V
 * values and R reads. Exits through xmalloc when memory is out.
 */
void vindex_build(const struct model *m, struct vindex *x);

/* Frees what vindex_build allocated in x. */
void vindex_free(struct vindex *x);

#endif
