/*
 * nccl.c - records NCCL's communicators and collectives (docs/trace-format.md, "Collectives").
 *
 * How it works: the shim is preloaded, so it is first in symbol lookup for the NCCL entry
 * points that a program's libraries call through the dynamic linker (PyTorch's
 * ProcessGroupNCCL calls libnccl.so.2 this way). Each interposer finds the real function once
 * (shim_real_fn: RTLD_NEXT, else the loaded object that defines it), calls it, and, while the shim
 * records, writes a `comm` record for a new communicator or a `coll` record for a collective. A
 * collective's kernel is launched inside the call (or inside the ncclGroupEnd that closes its
 * group), on the calling thread: while the real call runs, this thread's "current collectives" hold
 * the call's ids, and the launch callback (cupti.c) copies them into the launch record, which ties
 * NCCL's kernel to the operations it carries. Communicators get a `uid` that is the same on every
 * rank (a hash of the ncclUniqueId, or of the parent's uid, the split's index and colour), and each
 * collective the index `n` of the call on its communicator, so that a reader matches the same
 * collective across ranks by (uid, n).
 * The interposers never change what NCCL does: arguments and results pass through untouched,
 * recording happens after the real call and is skipped when the shim is not recording. A
 * program that loads NCCL with dlopen(RTLD_LOCAL) and dlsym bypasses this file: its NCCL
 * kernels are then recognised by name only.
 */
#include "preload/nccl.h"
#include "preload/base.h"
#include "preload/record.h"
#include "preload/ring.h"
#include "preload/sites.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* NCCL's ABI, as its public header nccl.h declares it (stable across 2.x). */
typedef struct nccl_comm *ncclComm_t;
typedef struct {
	char internal[128];
} ncclUniqueId;
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef void *cudaStream_t;
#define NCCL_SYSTEM_ERROR 2

static const char *const dtype_names[] = {"i8",  "u8",  "i32", "u32",  "i64",    "u64",
                                          "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2"};
static const uint8_t dtype_sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static const char *const redop_names[] = {"sum", "prod", "max", "min", "avg"};
static const char *const op_names[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "Send",      "Recv"};
enum { OP_ALLREDUCE, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_SEND, OP_RECV };

/* ---- communicators ------------------------------------------------------------------------ */

#define MAX_COMMS 256
static struct comm_ent {
	uintptr_t comm;
	uint64_t uid, calls, splits;
	int32_t nranks, rank;
} comms[MAX_COMMS];
static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t next_coll_id = 1;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}
#define FNV0 14695981039346656037ull

/* Under comm_lock: the entry of a communicator, created (with uid 0) when absent and create. */
static struct comm_ent *comm_get(uintptr_t c, int create)
{
	struct comm_ent *free_slot = NULL;
	for (int i = 0; i < MAX_COMMS; i++) {
		if (comms[i].comm == c)
			return &comms[i];
		if (!comms[i].comm && !free_slot)
			free_slot = &comms[i];
	}
	if (!create || !free_slot)
		return NULL;
	*free_slot = (struct comm_ent){c, 0, 0, 0, -1, -1};
	return free_slot;
}

/* The real function, of the interposer's own type (the two have the same signature). */
#define REAL(name)                                                                                 \
	static __typeof__(name) *real_##name;                                                      \
	if (!real_##name)                                                                          \
		real_##name = (__typeof__(name) *)shim_real_fn(#name, (void *)name);               \
	if (!real_##name)                                                                          \
		return NCCL_SYSTEM_ERROR;

static void put_comm(ncclComm_t comm, uint64_t uid)
{
	if (!comm)
		return;
	int nranks = -1, rank = -1, dev = -1;
	typedef ncclResult_t (*q_t)(ncclComm_t, int *);
	static q_t count, user_rank, cu_dev;
	if (!count) {
		count = (q_t)shim_real_fn("ncclCommCount", NULL);
		user_rank = (q_t)shim_real_fn("ncclCommUserRank", NULL);
		cu_dev = (q_t)shim_real_fn("ncclCommCuDevice", NULL);
	}
	if (count)
		count(comm, &nranks);
	if (user_rank)
		user_rank(comm, &rank);
	if (cu_dev)
		cu_dev(comm, &dev);
	pthread_mutex_lock(&comm_lock);
	struct comm_ent *e = comm_get((uintptr_t)comm, 1);
	if (e)
		*e = (struct comm_ent){(uintptr_t)comm, uid, 0, 0, nranks, rank};
	pthread_mutex_unlock(&comm_lock);
	if (!shim_recording() || !shim_enter())
		return;
	struct r_comm *r = ring_reserve(sizeof(*r));
	if (r) {
		memset(r, 0, sizeof(*r));
		r->h = (struct rec_hdr){R_COMM, 0, sizeof(*r)};
		r->seq = shim_seq();
		r->ts = shim_now_ns();
		r->comm = (uintptr_t)comm;
		r->uid = uid;
		r->nranks = nranks, r->rank = rank, r->dev = dev;
		r->tid = shim_tid();
		ring_commit();
	}
	shim_leave();
}

static void drop_comm(ncclComm_t comm)
{
	pthread_mutex_lock(&comm_lock);
	struct comm_ent *e = comm_get((uintptr_t)comm, 0);
	if (e)
		e->comm = 0;
	pthread_mutex_unlock(&comm_lock);
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks,
                                                                     ncclUniqueId id, int rank)
{
	REAL(ncclCommInitRank);
	ncclResult_t r = real_ncclCommInitRank(comm, nranks, id, rank);
	if (r == 0 && comm)
		put_comm(*comm, fnv(&id, sizeof(id), FNV0));
	return r;
}

__attribute__((visibility("default"))) ncclResult_t
ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, void *config)
{
	REAL(ncclCommInitRankConfig);
	ncclResult_t r = real_ncclCommInitRankConfig(comm, nranks, id, rank, config);
	/* a non-blocking communicator returns ncclInProgress (7) and is usable later */
	if ((r == 0 || r == 7) && comm)
		put_comm(*comm, fnv(&id, sizeof(id), FNV0));
	return r;
}

__attribute__((visibility("default"))) ncclResult_t
ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid, ncclUniqueId *ids,
                         void *config)
{
	REAL(ncclCommInitRankScalable);
	ncclResult_t r = real_ncclCommInitRankScalable(comm, nranks, rank, nid, ids, config);
	if ((r == 0 || r == 7) && comm && ids && nid > 0)
		put_comm(*comm, fnv(ids, sizeof(*ids), FNV0));
	return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev,
                                                                    const int *devlist)
{
	REAL(ncclCommInitAll);
	ncclResult_t r = real_ncclCommInitAll(comm, ndev, devlist);
	if (r == 0 && comm) {
		static _Atomic uint64_t n;
		uint64_t key[2] = {(uint64_t)getpid(), atomic_fetch_add(&n, 1)};
		uint64_t uid = fnv(key, sizeof(key), FNV0);
		for (int i = 0; i < ndev; i++)
			put_comm(comm[i], uid);
	}
	return r;
}

__attribute__((visibility("default"))) ncclResult_t
ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *config)
{
	REAL(ncclCommSplit);
	uint64_t parent = 0, idx = 0;
	pthread_mutex_lock(&comm_lock);
	struct comm_ent *e = comm_get((uintptr_t)comm, 0);
	if (e)
		parent = e->uid, idx = e->splits++;
	pthread_mutex_unlock(&comm_lock);
	ncclResult_t r = real_ncclCommSplit(comm, color, key, newcomm, config);
	if ((r == 0 || r == 7) && newcomm && *newcomm) {
		uint64_t k[3] = {parent, idx, (uint64_t)(int64_t)color};
		put_comm(*newcomm, fnv(k, sizeof(k), FNV0));
	}
	return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	REAL(ncclCommDestroy);
	drop_comm(comm);
	return real_ncclCommDestroy(comm);
}

__attribute__((visibility("default"))) ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	REAL(ncclCommAbort);
	drop_comm(comm);
	return real_ncclCommAbort(comm);
}

/* ---- collectives -------------------------------------------------------------------------- */

/* This thread's group nesting, the ids of the collectives queued in the open group, and the
 * ids whose kernels the real call now running may launch. */
static __thread int group_depth;
static __thread uint32_t group_ids[NCCL_MAX_IDS], cur_ids[NCCL_MAX_IDS];
static __thread int group_n, cur_n, group_more;
static _Atomic uint32_t next_group = 1;
static __thread uint32_t group_tag;

int nccl_current(uint32_t *ids, int max)
{
	int n = cur_n < max ? cur_n : max;
	memcpy(ids, cur_ids, sizeof(*ids) * (size_t)n);
	return n;
}

/* Writes the `coll` record of one call; returns its id (0 when not recorded). */
static uint32_t put_coll(int op, size_t count, ncclDataType_t dt, int redop, int root_or_peer,
                         ncclComm_t comm, cudaStream_t stream)
{
	/* counted whether or not this call is recorded, so that n agrees across ranks */
	uint64_t uid = 0, n = UINT64_MAX;
	int32_t nranks = -1, rank = -1;
	pthread_mutex_lock(&comm_lock);
	struct comm_ent *e = comm_get((uintptr_t)comm, 0);
	if (e)
		uid = e->uid, n = e->calls++, nranks = e->nranks, rank = e->rank;
	pthread_mutex_unlock(&comm_lock);
	if (!shim_recording() || !shim_enter())
		return 0;
	uint32_t site = 0;
	int inh = 0, has_site = shim_cfg.attrib ? sites_current(&site, &inh) : 0;
	uint32_t id = atomic_fetch_add(&next_coll_id, 1);
	struct r_coll *r = ring_reserve(sizeof(*r));
	if (r) {
		memset(r, 0, sizeof(*r));
		r->h = (struct rec_hdr){R_COLL, 0, sizeof(*r)};
		r->seq = shim_seq();
		r->ts = shim_now_ns();
		r->count = count;
		unsigned d = (unsigned)dt;
		r->bytes = d < sizeof(dtype_sizes) ? count * dtype_sizes[d] : 0;
		r->comm = (uintptr_t)comm;
		r->uid = uid;
		r->n = n;
		r->nranks = nranks, r->rank = rank;
		r->stream = (uintptr_t)stream;
		r->id = id;
		r->tid = shim_tid();
		r->site = site;
		r->group = group_depth ? group_tag : 0;
		r->root_or_peer = root_or_peer;
		r->op = (uint8_t)op;
		r->dtype = (uint8_t)(d < sizeof(dtype_sizes) ? d : 255);
		r->redop = (uint8_t)(redop >= 0 && (unsigned)redop < 5 ? redop : 255);
		r->has_site = (uint8_t)has_site;
		r->inherited = (uint8_t)inh;
		ring_commit();
	}
	shim_leave();
	return r ? id : 0;
}

/* Around a real collective: inside a group the id waits for ncclGroupEnd; outside, the call
 * itself launches the kernel. */
#define COLL_CALL(call, ...)                                                                       \
	do {                                                                                       \
		uint32_t id_ = put_coll(__VA_ARGS__);                                              \
		if (group_depth) {                                                                 \
			if (id_ && group_n < NCCL_MAX_IDS)                                         \
				group_ids[group_n++] = id_;                                        \
			else if (id_)                                                              \
				group_more++;                                                      \
			return call;                                                               \
		}                                                                                  \
		int saved_n_ = cur_n;                                                              \
		uint32_t saved_id_ = cur_ids[0];                                                   \
		if (id_)                                                                           \
			cur_ids[0] = id_, cur_n = 1;                                               \
		ncclResult_t r_ = call;                                                            \
		cur_n = saved_n_, cur_ids[0] = saved_id_;                                          \
		return r_;                                                                         \
	} while (0)

__attribute__((visibility("default"))) ncclResult_t ncclGroupStart(void)
{
	REAL(ncclGroupStart);
	if (group_depth++ == 0) {
		group_n = 0, group_more = 0;
		group_tag = atomic_fetch_add(&next_group, 1);
	}
	return real_ncclGroupStart();
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupEnd(void)
{
	REAL(ncclGroupEnd);
	if (group_depth > 0 && --group_depth == 0) {
		memcpy(cur_ids, group_ids, sizeof(*cur_ids) * (size_t)group_n);
		cur_n = group_n;
		group_n = 0;
		ncclResult_t r = real_ncclGroupEnd();
		cur_n = 0;
		return r;
	}
	return real_ncclGroupEnd();
}

__attribute__((visibility("default"))) ncclResult_t ncclAllReduce(const void *s, void *d,
                                                                  size_t count, ncclDataType_t dt,
                                                                  ncclRedOp_t op, ncclComm_t comm,
                                                                  cudaStream_t st)
{
	REAL(ncclAllReduce);
	COLL_CALL(real_ncclAllReduce(s, d, count, dt, op, comm, st), OP_ALLREDUCE, count, dt, op,
	          -1, comm, st);
}

__attribute__((visibility("default"))) ncclResult_t ncclBroadcast(const void *s, void *d,
                                                                  size_t count, ncclDataType_t dt,
                                                                  int root, ncclComm_t comm,
                                                                  cudaStream_t st)
{
	REAL(ncclBroadcast);
	COLL_CALL(real_ncclBroadcast(s, d, count, dt, root, comm, st), OP_BROADCAST, count, dt, -1,
	          root, comm, st);
}

__attribute__((visibility("default"))) ncclResult_t ncclReduce(const void *s, void *d, size_t count,
                                                               ncclDataType_t dt, ncclRedOp_t op,
                                                               int root, ncclComm_t comm,
                                                               cudaStream_t st)
{
	REAL(ncclReduce);
	COLL_CALL(real_ncclReduce(s, d, count, dt, op, root, comm, st), OP_REDUCE, count, dt, op,
	          root, comm, st);
}

__attribute__((visibility("default"))) ncclResult_t ncclAllGather(const void *s, void *d,
                                                                  size_t count, ncclDataType_t dt,
                                                                  ncclComm_t comm, cudaStream_t st)
{
	REAL(ncclAllGather);
	COLL_CALL(real_ncclAllGather(s, d, count, dt, comm, st), OP_ALLGATHER, count, dt, -1, -1,
	          comm, st);
}

__attribute__((visibility("default"))) ncclResult_t
ncclReduceScatter(const void *s, void *d, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                  ncclComm_t comm, cudaStream_t st)
{
	REAL(ncclReduceScatter);
	COLL_CALL(real_ncclReduceScatter(s, d, count, dt, op, comm, st), OP_REDUCESCATTER, count,
	          dt, op, -1, comm, st);
}

__attribute__((visibility("default"))) ncclResult_t
ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t st)
{
	REAL(ncclSend);
	COLL_CALL(real_ncclSend(s, count, dt, peer, comm, st), OP_SEND, count, dt, -1, peer, comm,
	          st);
}

__attribute__((visibility("default"))) ncclResult_t
ncclRecv(void *d, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t st)
{
	REAL(ncclRecv);
	COLL_CALL(real_ncclRecv(d, count, dt, peer, comm, st), OP_RECV, count, dt, -1, peer, comm,
	          st);
}

const char *nccl_op_name(unsigned op)
{
	return op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "unknown";
}

const char *nccl_dtype_name(unsigned dt)
{
	return dt < sizeof(dtype_names) / sizeof(dtype_names[0]) ? dtype_names[dt] : "unknown";
}

const char *nccl_redop_name(unsigned op)
{
	return op < sizeof(redop_names) / sizeof(redop_names[0]) ? redop_names[op] : NULL;
}
