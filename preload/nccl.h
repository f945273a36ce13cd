/*
 * nccl.h - NCCL's communicators and collectives, recorded by interposing NCCL's entry points
 * (nccl.c).
 */
#ifndef AICPROF_NCCL_H
#define AICPROF_NCCL_H

#include <stdint.h>

/* The most collective ids one launch record carries (a larger group is cut, and says so). */
#define NCCL_MAX_IDS 64

/* Copies into ids (room for max) the ids of the collectives whose kernels the NCCL call now
 * running on this thread may launch; returns how many (0 outside NCCL). */
int nccl_current(uint32_t *ids, int max);

/* Names for the `coll` record's fields; "unknown" (redop: NULL) for a value out of range. */
const char *nccl_op_name(unsigned op);
const char *nccl_dtype_name(unsigned dt);
const char *nccl_redop_name(unsigned op);

#endif
