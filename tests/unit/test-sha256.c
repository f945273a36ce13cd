/*
 * test-sha256.c - SHA-256 against FIPS 180-4's published vectors ("", "abc", the 448-bit
 * message, a million 'a'), lengths on either side of the one- and two-block padding boundary
 * (55, 56, 63, 64, 119 bytes; digests from an independent implementation), and the base64
 * form a Content-Security-Policy hash takes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/sha256.h"

static void hex(const uint8_t d[32], char out[65])
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void check(const void *data, size_t len, const char *want)
{
	uint8_t d[32];
	char h[65];
	sha256(data, len, d);
	hex(d, h);
	assert_string_equal(h, want);
}

static void test_fips_vectors(void **state)
{
	check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	check(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	char *a = malloc(1000000);
	memset(a, 'a', 1000000);
	check(a, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

static void test_padding_boundaries(void **state)
{
	static const struct {
		size_t len;
		const char *digest;
	} v[] = {
	    {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
	    {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
	    {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
	    {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
	    {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
	};
	char buf[128];
	memset(buf, 'a', sizeof(buf));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check(buf, v[i].len, v[i].digest);
}

static void test_base64(void **state)
{
	char b[45];
	sha256_base64("", 0, b);
	assert_string_equal(b, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
	assert_int_equal(strlen(b), 44);
	sha256_base64("abc", 3, b);
	assert_string_equal(b, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fips_vectors),
	    cmocka_unit_test(test_padding_boundaries),
	    cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
