/*
 * nccl_prog.c - calls every NCCL entry point the shim interposes, against tests/mock's
 * libnccl.so.2, and prints each result; t-nccl.sh compares its output with and without the
 * shim. Built as a program, or with -DAS_LIB as a library that a loader opens with
 * RTLD_LOCAL, the way Python loads PyTorch (and with it libnccl.so.2).
 */
#include <stdio.h>
#include <string.h>

typedef struct nccl_comm *ncclComm_t;
typedef struct {
	char internal[128];
} ncclUniqueId;
int ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int);
int ncclCommInitRankConfig(ncclComm_t *, int, ncclUniqueId, int, void *);
int ncclCommSplit(ncclComm_t, int, int, ncclComm_t *, void *);
int ncclCommDestroy(ncclComm_t);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int ncclAllReduce(const void *, void *, size_t, int, int, ncclComm_t, void *);
int ncclBroadcast(const void *, void *, size_t, int, int, ncclComm_t, void *);
int ncclReduce(const void *, void *, size_t, int, int, int, ncclComm_t, void *);
int ncclAllGather(const void *, void *, size_t, int, ncclComm_t, void *);
int ncclReduceScatter(const void *, void *, size_t, int, int, ncclComm_t, void *);
int ncclSend(const void *, size_t, int, int, ncclComm_t, void *);
int ncclRecv(void *, size_t, int, int, ncclComm_t, void *);

#ifdef AS_LIB
int nccl_calls(void)
#else
int main(void)
#endif
{
	ncclUniqueId id;
	memset(&id, 'x', sizeof(id));
	memcpy(id.internal, "uniqueid", 8);
	ncclComm_t c, c2, s;
	char *a = (char *)0x1000, *b = (char *)0x2000; /* never dereferenced */
	void *st = (void *)0x1234;
	printf("r=%d\n", ncclCommInitRank(&c, 4, id, 2));
	printf("r=%d\n", ncclCommInitRankConfig(&c2, 8, id, 5, &id));
	printf("r=%d\n", ncclCommSplit(c, 1, 7, &s, NULL));
	for (size_t n = 10; n < 13; n++) {
		printf("r=%d\n", ncclAllReduce(a, b, n, 9, 0, c, st));
		printf("r=%d\n", ncclBroadcast(a, b, n, 7, 1, c, st));
		printf("r=%d\n", ncclReduce(a, b, n, 6, 2, 3, c2, st));
		printf("r=%d\n", ncclAllGather(a, b, n, 9, c, st));
		printf("r=%d\n", ncclReduceScatter(a, b, n, 7, 4, s, st));
	}
	printf("r=%d\n", ncclGroupStart());
	printf("r=%d\n", ncclSend(a, 5, 7, 1, c, st));
	printf("r=%d\n", ncclRecv(b, 7, 7, 3, c, st));
	printf("r=%d\n", ncclGroupEnd());
	printf("r=%d\n", ncclCommDestroy(s));
	return 17;
}
