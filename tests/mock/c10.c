/*
 * c10.c - a stand-in for PyTorch's libc10.so for test-poolhook: it defines the function the
 * caching allocator reports its blocks to, c10::reportMemoryUsageToProfiler(void*, long,
 * unsigned long, unsigned long, c10::Device), under its C++ name, and keeps what it was last
 * called with, so the test sees that the shim's wrapper passes every argument on.
 */
#include <stdint.h>

struct c10_device {
	int8_t type, index;
};

static void *last_ptr;
static int64_t last_size;
static uint64_t last_allocated, last_reserved;
static int last_type = -1, last_index = -1;
static long calls;

__attribute__((visibility("default"))) void
_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(void *ptr, int64_t size, uint64_t allocated,
                                                      uint64_t reserved, struct c10_device d)
{
	last_ptr = ptr, last_size = size, last_allocated = allocated, last_reserved = reserved;
	last_type = d.type, last_index = d.index;
	calls++;
}

__attribute__((visibility("default"))) long mock_c10_last(void **ptr, int64_t *size,
                                                          uint64_t *allocated, uint64_t *reserved,
                                                          int *type, int *index)
{
	*ptr = last_ptr, *size = last_size, *allocated = last_allocated;
	*reserved = last_reserved, *type = last_type, *index = last_index;
	return calls;
}
