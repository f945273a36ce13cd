/*
 * allocguard.h - after the program's CUDA context dies, keep the allocator that aicprof chose
 * from aborting the process. See allocguard.c.
 */
#ifndef AICPROF_ALLOCGUARD_H
#define AICPROF_ALLOCGUARD_H

/* The constructor says whether it chose PyTorch's allocator (backend:cudaMallocAsync, set by
 * aicprof and not by the user). */
void allocguard_set_switched(int switched);

/* When recording starts (libc10_cuda.so is loaded by then in a PyTorch program): wraps its
 * imports, if allocguard_set_switched(1) was called; else nothing. */
void allocguard_start(void);

/* Called once, on the thread whose driver call returned the first context-killing error: arms
 * the wrappers if allocguard_start() could not. Safe from a CUPTI callback. */
void allocguard_context_died(void);

#endif
