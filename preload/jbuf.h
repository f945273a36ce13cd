/*
 * jbuf.h - appending JSON text to a fixed buffer without allocating: integers, hex addresses,
 * escaped strings. Used by the writer thread and for the shim's rare records. Appends that do
 * not fit set the overflow flag and write nothing more; callers check it once at the end.
 */
#ifndef AICPROF_JBUF_H
#define AICPROF_JBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct jbuf {
	char *p;
	size_t len, cap;
	int overflow;
};

static inline void jb_raw(struct jbuf *b, const char *s, size_t n)
{
	if (b->overflow || b->len + n >= b->cap) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static inline void jb_s(struct jbuf *b, const char *s)
{
	jb_raw(b, s, strlen(s));
}

static inline void jb_u64(struct jbuf *b, uint64_t v)
{
	char t[24];
	int i = 23;
	t[i] = 0;
	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	jb_raw(b, t + i, (size_t)(23 - i));
}

static inline void jb_i64(struct jbuf *b, int64_t v)
{
	if (v < 0) {
		jb_raw(b, "-", 1);
		jb_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		jb_u64(b, (uint64_t)v);
	}
}

/* "0x..." with quotes */
static inline void jb_hex(struct jbuf *b, uint64_t v)
{
	static const char d[] = "0123456789abcdef";
	char t[20];
	int i = 20;
	t[--i] = '"';
	do {
		t[--i] = d[v & 15];
		v >>= 4;
	} while (v);
	t[--i] = 'x';
	t[--i] = '0';
	t[--i] = '"';
	jb_raw(b, t + i, (size_t)(20 - i));
}

/* n bytes as one quoted hex string, two digits a byte in memory order */
static inline void jb_hexbytes(struct jbuf *b, const unsigned char *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	jb_raw(b, "\"", 1);
	for (size_t k = 0; k < n; k++) {
		char two[2] = {d[p[k] >> 4], d[p[k] & 15]};
		jb_raw(b, two, 2);
	}
	jb_raw(b, "\"", 1);
}

/* A JSON string literal, quotes included; bytes < 0x20, quote and backslash escaped. */
static inline void jb_str(struct jbuf *b, const char *s)
{
	static const char d[] = "0123456789abcdef";
	jb_raw(b, "\"", 1);
	for (const unsigned char *q = (const unsigned char *)(s ? s : ""); *q; q++) {
		if (*q == '"' || *q == '\\') {
			char e[2] = {'\\', (char)*q};
			jb_raw(b, e, 2);
		} else if (*q < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', d[*q >> 4], d[*q & 15]};
			jb_raw(b, e, 6);
		} else {
			jb_raw(b, (const char *)q, 1);
		}
	}
	jb_raw(b, "\"", 1);
}

/* ,"key": */
static inline void jb_key(struct jbuf *b, const char *k)
{
	jb_raw(b, ",\"", 2);
	jb_s(b, k);
	jb_raw(b, "\":", 2);
}

#endif
