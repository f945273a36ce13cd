/*
 * sha256.h - SHA-256 (FIPS 180-4), for the Content-Security-Policy hash of the report's inline
 * script. No crypto library is among aicprof's dependencies, and this is all the report needs.
 */
#ifndef AICPROF_SHA256_H
#define AICPROF_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Computes the SHA-256 digest of len bytes at data into out (32 bytes). Cannot fail. */
void sha256(const void *data, size_t len, uint8_t out[32]);

/*
 * Writes the digest of data as standard base64 (with '=' padding, 44 characters and a NUL)
 * into out, the form a CSP source expression 'sha256-...' takes. Cannot fail.
 */
void sha256_base64(const void *data, size_t len, char out[45]);

#endif
