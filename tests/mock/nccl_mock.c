/*
 * nccl_mock.c - a stand-in libnccl.so.2 for tests on machines without GPUs: each entry point
 * prints the arguments it received and returns a result derived from them, so that a test
 * can check that the shim's NCCL interposers (preload/nccl.c) pass every argument and every
 * result through unchanged.
 */
#include <stdio.h>
#include <string.h>

typedef struct nccl_comm *ncclComm_t;
typedef struct {
	char internal[128];
} ncclUniqueId;

static struct nccl_comm {
	int nranks, rank, dev;
} comms[16];
static int ncomms;

static int result(size_t x)
{
	return (int)(x % 3); /* 0 ncclSuccess, 1 ncclUnhandledCudaError, 2 ncclSystemError */
}

int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	comms[ncomms] = (struct nccl_comm){nranks, rank, rank};
	*comm = &comms[ncomms++];
	printf("InitRank %d %d %.8s\n", nranks, rank, id.internal);
	return 0;
}

int ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, void *cfg)
{
	printf("InitRankConfig cfg=%d ", cfg != NULL);
	return ncclCommInitRank(comm, nranks, id, rank);
}

int ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, void *cfg)
{
	comms[ncomms] = (struct nccl_comm){1, 0, comm->dev};
	*newcomm = &comms[ncomms++];
	printf("Split %d %d %d\n", color, key, cfg != NULL);
	return 0;
}

int ncclCommCount(ncclComm_t c, int *n)
{
	*n = c->nranks;
	return 0;
}
int ncclCommUserRank(ncclComm_t c, int *r)
{
	*r = c->rank;
	return 0;
}
int ncclCommCuDevice(ncclComm_t c, int *d)
{
	*d = c->dev;
	return 0;
}
int ncclCommDestroy(ncclComm_t c)
{
	printf("Destroy %d\n", c->rank);
	return 0;
}
int ncclGroupStart(void)
{
	printf("GroupStart\n");
	return 0;
}
int ncclGroupEnd(void)
{
	printf("GroupEnd\n");
	return 1;
}
int ncclAllReduce(const void *s, void *d, size_t n, int dt, int op, ncclComm_t c, void *st)
{
	printf("AllReduce %p %p %zu %d %d %d %p\n", s, d, n, dt, op, c->rank, st);
	return result(n);
}
int ncclBroadcast(const void *s, void *d, size_t n, int dt, int root, ncclComm_t c, void *st)
{
	printf("Broadcast %p %p %zu %d %d %d %p\n", s, d, n, dt, root, c->rank, st);
	return result(n);
}
int ncclReduce(const void *s, void *d, size_t n, int dt, int op, int root, ncclComm_t c, void *st)
{
	printf("Reduce %p %p %zu %d %d %d %d %p\n", s, d, n, dt, op, root, c->rank, st);
	return result(n);
}
int ncclAllGather(const void *s, void *d, size_t n, int dt, ncclComm_t c, void *st)
{
	printf("AllGather %p %p %zu %d %d %p\n", s, d, n, dt, c->rank, st);
	return result(n);
}
int ncclReduceScatter(const void *s, void *d, size_t n, int dt, int op, ncclComm_t c, void *st)
{
	printf("ReduceScatter %p %p %zu %d %d %d %p\n", s, d, n, dt, op, c->rank, st);
	return result(n);
}
int ncclSend(const void *s, size_t n, int dt, int peer, ncclComm_t c, void *st)
{
	printf("Send %p %zu %d %d %d %p\n", s, n, dt, peer, c->rank, st);
	return result(n);
}
int ncclRecv(void *d, size_t n, int dt, int peer, ncclComm_t c, void *st)
{
	printf("Recv %p %zu %d %d %d %p\n", d, n, dt, peer, c->rank, st);
	return result(n);
}
