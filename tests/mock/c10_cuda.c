/*
 * c10_cuda.c - a stand-in for PyTorch's libc10_cuda.so for test-poolhook: its "allocator"
 * reports a block handed out (size > 0) or taken back (size < 0) to libc10's
 * reportMemoryUsageToProfiler through its own GOT, as the caching allocator does. Linked -z now
 * (read-only GOT, as PyTorch's) against the mock libc10.so.
 */
#include <stdint.h>

struct c10_device {
	int8_t type, index;
};

void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(void *ptr, int64_t size,
                                                           uint64_t allocated, uint64_t reserved,
                                                           struct c10_device d);

__attribute__((visibility("default"))) void mock_block(void *ptr, int64_t size, int type, int index)
{
	struct c10_device d = {(int8_t)type, (int8_t)index};
	_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(ptr, size, 1000 + (uint64_t)size,
	                                                      2000, d);
}
