/* test-symbolize.c - native lines on the test binary itself (built with -g): the shim's
 * build-id reader (sites_build_id, from the loaded module's notes in memory) agrees with the
 * analyzer's (symbolize_file_build_id, from the file) and is a 160-bit GNU build id; a return
 * address captured at a known line of this file comes back as that file, line and function; a
 * missing module, a build id that differs and an unparsable offset are passed over, with one
 * warning per module however often its frames come. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cJSON.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "analyzer/symbolize.h"
#include "lib/util.h"
#include "preload/sites.h"

static void *captured;
static int captured_line;

static __attribute__((noinline)) void capture(void)
{
	captured = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void launching_function(void)
{
	captured_line = __LINE__ + 1;
	capture();
	__asm__ volatile("" ::: "memory"); /* no tail call: the return address stays here */
}

static char self_bid[130];

static void test_build_id_reader(void **state)
{
	(void)state;
	char file_bid[130];
	size_t n = sites_build_id((const void *)launching_function, self_bid, sizeof(self_bid));
	assert_int_equal(n, 40); /* gcc's default: sha1 */
	assert_int_equal(strspn(self_bid, "0123456789abcdef"), 40);
	assert_int_equal(symbolize_file_build_id("/proc/self/exe", file_bid, sizeof(file_bid)), 40);
	assert_string_equal(self_bid, file_bid);
	/* a library's own: libc's differs from ours */
	char libc_bid[130];
	if (sites_build_id((const void *)printf, libc_bid, sizeof(libc_bid)))
		assert_string_not_equal(libc_bid, self_bid);
	/* an address in no module; a buffer cut short */
	void *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED);
	char h[130] = "x";
	assert_int_equal(sites_build_id(anon, h, sizeof(h)), 0);
	assert_string_equal(h, "");
	munmap(anon, 4096);
	char small[9];
	assert_int_equal(sites_build_id((const void *)launching_function, small, sizeof(small)), 8);
	assert_memory_equal(small, self_bid, 8);
	assert_int_equal(symbolize_file_build_id("/nonexistent/aicprof", h, sizeof(h)), 0);
	assert_int_equal(symbolize_file_build_id("/proc/self/cmdline", h, sizeof(h)), 0);
}

/* [{"module":..,"offset":"0x..","build_id":..}] */
static cJSON *frame(cJSON *arr, const char *module, uint64_t off, const char *bid)
{
	if (!arr)
		arr = cJSON_CreateArray();
	cJSON *f = cJSON_CreateObject();
	char o[32];
	snprintf(o, sizeof(o), "0x%llx", (unsigned long long)off);
	cJSON_AddStringToObject(f, "module", module);
	cJSON_AddStringToObject(f, "offset", o);
	if (bid)
		cJSON_AddStringToObject(f, "build_id", bid);
	cJSON_AddItemToArray(arr, f);
	return arr;
}

static void test_self_line(void **state)
{
	(void)state;
	symbolize_reset();
	util_quiet = 1;
	launching_function();
	Dl_info di;
	assert_true(dladdr(captured, &di));
	uint64_t off = (uint64_t)((char *)captured - (char *)di.dli_fbase);
	sites_build_id((const void *)launching_function, self_bid, sizeof(self_bid));
	/* first a missing module's frame and a bad offset, passed over */
	cJSON *a = frame(NULL, "/nonexistent/libfoo.so", 0x1234, "ab");
	a = frame(a, "/proc/self/exe", 0, self_bid);
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(a, 1), "offset",
	                                       cJSON_CreateString("zz"));
	a = frame(a, "/proc/self/exe", off, self_bid);
	struct native_src src = {0};
	assert_int_equal(symbolize_native(a, NULL, &src), 1);
	assert_non_null(src.file);
	const char *tail = "tests/unit/test-symbolize.c";
	assert_true(strlen(src.file) >= strlen(tail));
	assert_string_equal(src.file + strlen(src.file) - strlen(tail), tail);
	assert_int_equal(src.line, captured_line);
	assert_string_equal(src.func, "launching_function");
	assert_int_equal(symbolize_warnings(), 1); /* the missing module */
	native_src_release(&src);
	/* the same again: cached, no new warning */
	assert_int_equal(symbolize_native(a, NULL, &src), 1);
	assert_int_equal(src.line, captured_line);
	assert_int_equal(symbolize_warnings(), 1);
	native_src_release(&src);
	cJSON_Delete(a);
	/* a relative module is tried under the trace's cwd */
	a = frame(NULL, "self/exe", off, self_bid);
	assert_int_equal(symbolize_native(a, "/proc/", &src), 1);
	assert_int_equal(src.line, captured_line);
	native_src_release(&src);
	cJSON_Delete(a);
	assert_int_equal(symbolize_warnings(), 1);
}

static void test_build_id_mismatch(void **state)
{
	(void)state;
	symbolize_reset();
	util_quiet = 1;
	launching_function();
	Dl_info di;
	assert_true(dladdr(captured, &di));
	uint64_t off = (uint64_t)((char *)captured - (char *)di.dli_fbase);
	cJSON *a = frame(NULL, "/proc/self/exe", off, "00112233445566778899aabbccddeeff00112233");
	a = frame(a, "/proc/self/exe", off + 1, "00112233445566778899aabbccddeeff00112233");
	struct native_src src = {0};
	assert_int_equal(symbolize_native(a, NULL, &src), 0);
	assert_null(src.file);
	assert_int_equal(symbolize_native(a, NULL, &src), 0);
	assert_int_equal(symbolize_warnings(), 1);
	cJSON_Delete(a);
	/* without a recorded build id the file is trusted */
	a = frame(NULL, "/proc/self/exe", off, NULL);
	assert_int_equal(symbolize_native(a, NULL, &src), 1);
	assert_int_equal(src.line, captured_line);
	native_src_release(&src);
	cJSON_Delete(a);
	/* frames of libcuda/libcudart are never opened */
	a = frame(NULL, "/nonexistent/libcudart.so.13", 0x10, NULL);
	a = frame(a, "/nonexistent/libcuda.so.1", 0x10, NULL);
	assert_int_equal(symbolize_native(a, NULL, &src), 0);
	assert_int_equal(symbolize_warnings(), 1);
	cJSON_Delete(a);
	symbolize_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_id_reader),
	    cmocka_unit_test(test_self_line),
	    cmocka_unit_test(test_build_id_mismatch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
