/*
 * record.h - the binary records the shim's hot path copies into its per-thread ring, and the
 * writer thread turns into trace lines (docs/trace-format.md). Fixed layouts, 8-byte aligned;
 * a launch record is followed by its arguments and the pointers found in them.
 */
#ifndef AICPROF_RECORD_H
#define AICPROF_RECORD_H

#include "preload/ring.h"

#include <stdint.h>

enum rec_type {
	R_PAD = 0,
	R_LAUNCH,
	R_KERNEL,
	R_MEMCPY,
	R_MEMSET,
	R_COPY,
	R_SET,
	R_ALLOC,
	R_FREE,
	R_VMM,
	R_SYNC,
	R_EVREC,
	R_WAIT,
	R_PUSH,
	R_POP,
	R_RSTART,
	R_REND,
	R_MARK,
	R_COMM,
	R_COLL,
	R_PROBE,
	R_LAUNCH_DEFER, /* a launch whose parameters the writer scans (struct r_defer) */
};

#define MAX_ARGS 128
#define MAX_PTRS 256

/*
 * A parameter of TAIL_MIN bytes or more that holds device pointers keeps in val the 8 bytes
 * after its last one: a closure (ATen's legacy elementwise loop passes one lambda that captures
 * its offset calculator, the data array and then the functor with its scalars: a tensor *
 * scalar's factor, add's alpha; measured on the H200 with PyTorch 2.11, t-param-tail.sh).
 */
#define TAIL_MIN 128

struct r_arg {
	uint32_t off, size;
	uint64_t val; /* raw value of a parameter of at most 8 bytes, or its first 8 bytes up to
	               * 12 (pad: the rest); of one of TAIL_MIN or more,
	               * the 8 bytes after its last device pointer */
	uint16_t first_ptr; /* index into the record's pointer array */
	uint16_t nptr;
	uint32_t pad; /* bytes 8..11 of a parameter of 9 to 12 bytes (val: bytes 0..7) */
};

struct r_ptr {
	uint32_t word_off;
	int32_t cal; /* calibration: 1 changed, 0 unchanged, -1 not checked */
	uint64_t addr;
	int64_t alloc_id;
	uint64_t alloc_off;
};

/*
 * A launch record is followed by struct r_arg args[nargs]; struct r_ptr ptrs[nptrs];
 * uint32_t coll[ncoll]; uint8_t raw[nraw]: the bytes of each parameter of more than 12 bytes,
 * in order, while they fit, for the kernels whose layout the analyzer needs (ATen's strided
 * loop: the closure's offset calculator holds the operands' sizes and strides).
 */
struct r_launch {
	struct rec_hdr h;
	uint64_t seq, ts, stream;
	uint32_t tid, corr, fn, site;
	uint32_t grid[3], block[3];
	uint32_t smem;
	int32_t result;
	uint16_t api; /* index into the API name table (cupti.c) */
	uint8_t inherited;
	uint8_t has_site;
	int32_t argerr; /* 0, or the CUresult of the failed layout query (negative: other reason) */
	uint16_t nargs, nptrs;
	uint16_t ncoll; /* NCCL collectives this launch carries (nccl.c) */
	uint16_t nraw;  /* bytes of parameters kept whole (RAW_MAX at most, see above) */
};
#define RAW_MAX 2048

/*
 * A deferred launch (R_LAUNCH_DEFER): the launching thread copies the parameters' bytes and
 * the writer thread finds the pointers in them (argscan.c), where an R_LAUNCH record holds
 * what the launching thread found. Used when pointers are resolved offline, so no lookup
 * needs the allocation map of the launch's moment. The r_launch (nargs: the layout's
 * parameters, nptrs 0, nraw: the bytes of the parameters of more than 12 bytes to keep whole)
 * is followed by struct r_defer, uint32_t coll[ncoll], then each parameter's bytes in order
 * (the layout's sizes; DEFER_MAX bytes at most, argscan.h).
 */
struct r_defer {
	uint64_t off, size; /* the layout's arrays (immutable, never freed: cupti.c) */
	uint64_t lo, hi;    /* the allocations' bounds at the launch */
};

struct r_kernel {
	struct rec_hdr h;
	uint64_t start, end;
	uint32_t corr, name, dev, ctx, stream;
	int32_t grid[3], block[3];
	uint32_t regs, ssmem, dsmem, graph;
	uint64_t gnode;
};

/* API side of a copy or memset (R_MEMCPY / R_MEMSET) */
struct r_mem {
	struct rec_hdr h;
	uint64_t seq, ts, stream, dst, src, bytes;
	int64_t dst_alloc, dst_off, src_alloc, src_off;
	uint32_t tid, corr, site, value;
	uint16_t api;
	uint8_t has_site, pad[5];
};

/* activity side of a copy or memset (R_COPY / R_SET) */
struct r_copy {
	struct rec_hdr h;
	uint64_t bytes, start, end;
	uint32_t corr, dev, stream, value;
	uint8_t kind, src_kind, dst_kind, peer, src_dev, dst_dev, pad[2];
};

/* R_ALLOC, R_FREE, R_VMM */
struct r_alloc {
	struct rec_hdr h;
	uint64_t seq, ts, ptr, size, stream;
	int64_t id;
	uint32_t tid, site;
	uint16_t api;
	uint8_t has_site, pad[5];
};

/* R_SYNC, R_EVREC, R_WAIT */
struct r_sync {
	struct rec_hdr h;
	uint64_t seq, ts, dur, stream, event;
	uint32_t tid, corr;
	uint16_t api;
	uint8_t pad[6];
};

/* R_PUSH, R_POP, R_RSTART, R_REND, R_MARK; text follows, NUL-terminated */
struct r_range {
	struct rec_hdr h;
	uint64_t seq, ts, id;
	uint32_t tid, len;
};

/* R_COMM: a new NCCL communicator */
struct r_comm {
	struct rec_hdr h;
	uint64_t seq, ts, comm, uid;
	int32_t nranks, rank, dev;
	uint32_t tid;
};

/* R_COLL: one NCCL collective or point-to-point call */
struct r_coll {
	struct rec_hdr h;
	uint64_t seq, ts, count, bytes, comm, uid, n, stream;
	uint32_t id, tid, site, group;
	int32_t root_or_peer, nranks, rank;
	uint8_t op, dtype, redop, has_site, inherited, pad[3];
};

/* R_PROBE: calibration fingerprints of a launch's allocations after it ran (0: not read) */
struct r_probe {
	struct rec_hdr h;
	uint32_t corr, n;
	/* uint64_t fp[n]: one per pointer of the launch record, in its order */
};

#define REC_ALIGN(n) (((n) + 7u) & ~(size_t)7u)

#endif
