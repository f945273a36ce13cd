/*
 * offcalc.h - ATen's offset calculator, read back from the closure bytes of its strided loop.
 *
 * at::native::elementwise_kernel<nt, vt, func_t>(int N, func_t f) is the loop gpu_kernel runs
 * where its TensorIterator is not contiguous; f's closure captures an
 * OffsetCalculator<NARGS>: `int dims; IntDivider<uint32_t> sizes_[25]; uint32_t
 * strides_[25][NARGS]` (byte strides, dimension 0 the fastest, as TensorIterator ordered and
 * coalesced them), beside the data array and the functor. The shim keeps that parameter's
 * bytes whole (the trace's "x"). The calculator is found by its signature, not by an offset
 * that a compiler's capture order could move: a count of dimensions, then dividers each
 * holding its divisor's magic number and shift exactly as IntDivider computes them, whose
 * product is the loop's element count (the entries past the count are unset). What it gives the
 * analyzer: each operand's layout over the loop's index, so that a fused kernel that reads an
 * operand at a flat index is known to be right (offcalc_kind()).
 */
#ifndef AICPROF_OFFCALC_H
#define AICPROF_OFFCALC_H

#include <stddef.h>
#include <stdint.h>

#define OFFCALC_DIMS 25 /* ATen's MAX_DIMS on CUDA */
#define OFFCALC_ARGS 4  /* operands read (NARGS is arity + 1: where's 3 inputs) */

struct offcalc {
	int dims, nargs;
	int at; /* byte offset of the calculator in the closure */
	uint32_t size[OFFCALC_DIMS];
	uint32_t stride[OFFCALC_DIMS][OFFCALC_ARGS]; /* bytes */
	/* each operand's data pointer (the data array beside the calculator), as the trace's
	 * allocation id and offset in it; set by the parser (parse.c), not by offcalc_decode */
	int64_t alloc[OFFCALC_ARGS];
	uint64_t off[OFFCALC_ARGS];
};

/*
 * Finds the offset calculator of nargs operands (1 to OFFCALC_ARGS: the data array's length,
 * the loop's arity + 1) in the n bytes of x (a closure). The count must come from outside:
 * the bytes alone do not fix it (an operand whose strides are all 0 reads as the next
 * dimension's first stride). numel (the loop's N, required) must be the product of the sizes.
 * Returns 0 and fills *oc, or -1 when no calculator is there (then *oc is untouched).
 */
int offcalc_decode(const uint8_t *x, size_t n, int nargs, long numel, struct offcalc *oc);

/* The calculator's size in bytes with nargs operands (where the data array beside it starts
 * or ends). */
size_t offcalc_bytes(int nargs);

/* Decodes a hex string (two digits a byte, memory order) into at most cap bytes; returns the
 * byte count, or -1 on a character that is not a hex digit or an odd length. */
long offcalc_hex(const char *hex, uint8_t *out, size_t cap);

/* An operand's layout over the loop's flat index i (dims of size 1 ignored). */
enum offcalc_layout {
	OC_DENSE,     /* offset = i * elem: contiguous in the loop's order */
	OC_BROADCAST, /* offset = (i % inner) * elem: contiguous inner dims, stride 0 outside */
	OC_PER_ROW,   /* offset = (i / inner) * elem: stride 0 inner dims, contiguous outside */
	OC_SCALAR,    /* every stride 0: one element */
	OC_OTHER      /* a transpose, a slice, a gap: no flat-index form */
};

/* Operand a's layout (a < oc->nargs); *elem its element size in bytes (the fastest stepping
 * dimension's stride, 0 for OC_SCALAR; the caller compares it with the operand's type, since
 * a slice of every second element looks like elements twice as wide) and *inner: the element
 * count of its contiguous part (OC_BROADCAST; the loop's numel for OC_DENSE) or of the
 * broadcast inner part (OC_PER_ROW: the row length). */
enum offcalc_layout offcalc_kind(const struct offcalc *oc, int a, uint32_t *elem, long *inner);

/* Operand a's byte offset at the loop's index j (0 <= j < the product of the sizes), as the
 * calculator computes it: j split over the sizes, dimension 0 the fastest, times the strides. */
uint64_t offcalc_offset(const struct offcalc *oc, int a, uint64_t j);

/* "sizes [64, 4, 256] strides [2, 8192, 128]" for operand a, into buf (cap bytes). */
void offcalc_describe(const struct offcalc *oc, int a, char *buf, size_t cap);

#endif
