/*
 * poolhook.h - record the blocks that PyTorch's caching allocator hands out, as allocations of
 * their own, without changing the allocator. See poolhook.c.
 */
#ifndef AICPROF_POOLHOOK_H
#define AICPROF_POOLHOOK_H

/* The constructor says whether PyTorch keeps its own caching allocator (aicprof did not set
 * backend:cudaMallocAsync, and the user set no backend of that name). Only then is the hook
 * armed: under cudaMallocAsync every tensor is already one CUDA allocation. */
void poolhook_set_enabled(int on);

/*
 * Arms the hook if enabled and libc10_cuda.so is loaded: its import of
 * c10::reportMemoryUsageToProfiler is pointed at a wrapper that records each block allocated
 * (an alloc record, api "c10::CachingAllocator") and each block freed, then calls the real
 * function, so torch.profiler's memory view sees what it saw before. Idempotent; cheap once
 * armed or once given up (a bounded number of tries). Safe from a CUPTI callback, never from
 * inside dlopen. `when` names the caller for the debug line.
 */
void poolhook_try(const char *when);
/* (With shim_cfg.pause_blocks, AICPROF_PAUSE_BLOCKS, for benchmarks only, the wrapper skips the
 * blocks reported while a capture range is paused; by default it records them, as the analyzer
 * needs.) */

/* Whether the hook is armed (the trace's allocations are then the allocator's blocks). */
int poolhook_armed(void);

#endif
