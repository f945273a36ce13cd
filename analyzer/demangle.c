/*
 * demangle.c - readable kernel names: Itanium demangling and the short form shown in reports.
 *
 * demangle() hands mangled names ("_Z...") to libstdc++'s __cxa_demangle, the toolchain's own
 * demangler (so the Makefile links -lstdc++); anything else, and anything it refuses, comes
 * back as a copy. Names longer than DEMANGLE_MAX are not demangled at all: the demangler
 * recurses on nesting, and no real kernel name is that long.
 *
 * short_name() works on the demangled text with a small bracket-aware scanner:
 *   1. drop the return type ("void ") and the parameter list (the first '(' at bracket depth 0
 *      that is not "(anonymous namespace)");
 *   2. drop the namespace prefix (everything up to the last "::" at depth 0);
 *   3. shorten every template argument the same way, recursively: a function-local type
 *      ("ns::GeluCUDAKernelImpl(...)::{lambda()#2}::...") becomes the function that holds it
 *      ("GeluCUDAKernelImpl"); the wrappers ATen puts around a functor (AUnaryFunctor,
 *      BinaryFunctor, func_wrapper_t, ...) give way to the functor they wrap; "2ul" becomes 2;
 *      a nested argument list longer than NESTED_MAX keeps only its functor-like argument;
 *   4. if the result is longer than SHORT_MAX, trailing template arguments become "…".
 */
#include "analyzer/semantics.h"
#include "lib/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define DEMANGLE_MAX (16 * 1024)
#define SHORT_MAX    80
#define NESTED_MAX   40
#define ELLIPSIS     "\xe2\x80\xa6"

char *demangle(const char *name)
{
	if (!name)
		return xstrdup("");
	size_t n = strlen(name);
	if (n < 3 || n > DEMANGLE_MAX || name[0] != '_' || name[1] != 'Z')
		return xstrdup(name);
	int status = 0;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		return xstrdup(name);
	}
	char *r = xstrdup(d);
	free(d);
	return r;
}

static int is_open(char c)
{
	return c == '<' || c == '(' || c == '[' || c == '{';
}

static int is_close(char c)
{
	return c == '>' || c == ')' || c == ']' || c == '}';
}

static const char anon_ns[] = "(anonymous namespace)";

/*
 * Index of the first depth-0 '(' in s[0..len) that opens a parameter list (not
 * "(anonymous namespace)"), or len. "operator()" and "->" are not brackets.
 */
static size_t find_params(const char *s, size_t len)
{
	int depth = 0;
	for (size_t i = 0; i < len; i++) {
		if (!strncmp(s + i, "operator()", 10) && i + 10 <= len) {
			i += 9;
			continue;
		}
		if (s[i] == '-' && i + 1 < len && s[i + 1] == '>') {
			i++;
			continue;
		}
		if (depth == 0 && s[i] == '(' && len - i >= sizeof(anon_ns) - 1 &&
		    !strncmp(s + i, anon_ns, sizeof(anon_ns) - 1)) {
			i += sizeof(anon_ns) - 2;
			continue;
		}
		if (depth == 0 && s[i] == '(')
			return i;
		if (is_open(s[i]))
			depth++;
		else if (is_close(s[i]) && depth > 0)
			depth--;
	}
	return len;
}

/* Start of the last component of the qualified name s[0..len): after the last depth-0 "::". */
static size_t last_component(const char *s, size_t len)
{
	int depth = 0;
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '-' && i + 1 < len && s[i + 1] == '>') {
			i++;
			continue;
		}
		if (is_open(s[i]))
			depth++;
		else if (is_close(s[i]) && depth > 0)
			depth--;
		else if (depth == 0 && s[i] == ':' && i + 1 < len && s[i + 1] == ':')
			start = i + 2;
	}
	return start;
}

/* Splits s[0..len) at depth-0 commas into at most max (start, len) pairs; returns the count. */
static int split_args(const char *s, size_t len, size_t *st, size_t *ln, int max)
{
	int depth = 0, n = 0;
	size_t from = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || (depth == 0 && s[i] == ',')) {
			size_t a = from, b = i;
			while (a < b && isspace((unsigned char)s[a]))
				a++;
			while (b > a && isspace((unsigned char)s[b - 1]))
				b--;
			if (n < max && b > a) {
				st[n] = a;
				ln[n] = b - a;
				n++;
			}
			from = i + 1;
			continue;
		}
		if (s[i] == '-' && i + 1 < len && s[i + 1] == '>') {
			i++;
			continue;
		}
		if (is_open(s[i]))
			depth++;
		else if (is_close(s[i]) && depth > 0)
			depth--;
	}
	return n;
}

/* ATen's wrappers around a functor: the short form shows the functor they wrap. */
static const char *const wrappers[] = {
    "AUnaryFunctor", "BUnaryFunctor", "BinaryFunctor", "func_wrapper_t", "OpaqueType",
};

static int is_wrapper(const char *s, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(wrappers); i++)
		if (strlen(wrappers[i]) == len && !strncmp(s, wrappers[i], len))
			return 1;
	return 0;
}

static int looks_like_functor(const char *s, size_t len)
{
	static const char *const marks[] = {"Functor",  "functor", "Impl",  "kernel", "Ops",
	                                    "Epilogue", "lambda",  "_cuda", "Op<"};
	for (size_t i = 0; i < ARRAY_SIZE(marks); i++) {
		size_t m = strlen(marks[i]);
		for (size_t j = 0; j + m <= len; j++)
			if (!strncmp(s + j, marks[i], m))
				return 1;
	}
	return 0;
}

#define MAX_ARGS 32

static void strbuf_init_empty(struct strbuf *sb)
{
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

static void shorten(struct strbuf *out, const char *s, size_t len, int top, int level);

/* Characters (not bytes: "…" is three) in sb. */
static size_t width(const struct strbuf *sb)
{
	size_t w = 0;
	for (size_t i = 0; i < sb->len; i++)
		w += ((unsigned char)sb->buf[i] & 0xc0) != 0x80;
	return w;
}

/* Width of args joined by ", " with each run of dropped ones shown as one "…". */
static size_t joined_len(const struct strbuf *one, const int *keep, int n)
{
	size_t w = 0;
	for (int i = 0; i < n; i++) {
		if (!keep[i] && i && !keep[i - 1])
			continue;
		w += (i ? 2 : 0) + (keep[i] ? width(&one[i]) : 1);
	}
	return w;
}

/*
 * Appends the shortened template arguments of s[0..len) (without the brackets). At the top
 * level the whole must fit in room: when it does not, arguments that are neither short
 * (numbers, plain types) nor functor-like give way to "…" first, then trailing ones.
 */
static void shorten_args(struct strbuf *out, const char *s, size_t len, int top, int level,
                         size_t room)
{
	size_t st[MAX_ARGS], ln[MAX_ARGS];
	struct strbuf one[MAX_ARGS];
	int n = split_args(s, len, st, ln, MAX_ARGS);
	size_t base = out->len;
	for (int i = 0; i < n; i++) {
		strbuf_init_empty(&one[i]);
		shorten(&one[i], s + st[i], ln[i], 0, level + 1);
	}
	int keep[MAX_ARGS];
	for (int i = 0; i < n; i++)
		keep[i] = 1;
	if (top && joined_len(one, keep, n) > room) {
		/* drop the long arguments that do not name a functor */
		for (int i = n - 1; i >= 0 && joined_len(one, keep, n) > room; i--)
			if (one[i].len > 12 && !looks_like_functor(s + st[i], ln[i]))
				keep[i] = 0;
		/* then the short ones that are not functors, then whatever comes last */
		for (int i = n - 1; i >= 0 && joined_len(one, keep, n) > room; i--)
			if (!looks_like_functor(s + st[i], ln[i]))
				keep[i] = 0;
		/* then the functors lose their own template arguments, then the last ones go */
		for (int i = n - 1; i >= 0 && joined_len(one, keep, n) > room; i--) {
			char *lt = keep[i] && one[i].buf ? strchr(one[i].buf, '<') : NULL;
			if (lt && lt > one[i].buf) {
				one[i].len = (size_t)(lt - one[i].buf);
				one[i].buf[one[i].len] = '\0';
			}
		}
		for (int i = n - 1; i >= 0 && joined_len(one, keep, n) > room; i--)
			keep[i] = 0;
	}
	int elided = 0;
	for (int i = 0; i < n; i++) {
		if (!keep[i] && elided)
			continue;
		if (i)
			strbuf_adds(out, ", ");
		if (keep[i]) {
			strbuf_add(out, one[i].buf ? one[i].buf : "", one[i].len);
			elided = 0;
		} else {
			strbuf_adds(out, ELLIPSIS);
			elided = 1;
		}
	}
	for (int i = 0; i < n; i++)
		strbuf_release(&one[i]);
	if (!top && out->len - base > NESTED_MAX) {
		/* keep only the functor-like argument, if there is one */
		int k = -1;
		for (int i = n - 1; i >= 0; i--)
			if (looks_like_functor(s + st[i], ln[i]))
				k = i;
		out->len = base;
		out->buf[out->len] = '\0';
		if (k >= 0) {
			if (k)
				strbuf_adds(out, ELLIPSIS ", ");
			shorten(out, s + st[k], ln[k], 0, level + 1);
			if (k + 1 < n)
				strbuf_adds(out, ", " ELLIPSIS);
		} else {
			strbuf_adds(out, ELLIPSIS);
		}
	}
}

/*
 * Appends the short form of the (type or function) name s[0..len). top: the kernel's own name
 * (its template arguments are elided to fit SHORT_MAX).
 */
static void shorten(struct strbuf *out, const char *s, size_t len, int top, int level)
{
	while (len && isspace((unsigned char)*s))
		s++, len--;
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (level > 8) {
		strbuf_adds(out, ELLIPSIS);
		return;
	}
	/* a cast to an enum, "(at::native::ADAM_MODE)1": shorten the type, keep the value */
	if (len > 2 && s[0] == '(' && strncmp(s, anon_ns, sizeof(anon_ns) - 1)) {
		int depth = 0;
		size_t i = 0;
		for (; i < len; i++) {
			if (s[i] == '(')
				depth++;
			else if (s[i] == ')' && --depth == 0)
				break;
		}
		if (i < len) {
			strbuf_adds(out, "(");
			shorten(out, s + 1, i - 1, 0, level + 1);
			strbuf_adds(out, ")");
			strbuf_add(out, s + i + 1, len - i - 1);
			return;
		}
	}
	/* a function-local type: name it by the function that holds it */
	size_t p = find_params(s, len);
	if (p < len)
		len = p;
	size_t c = last_component(s, len);
	/* "sum_functor<...>::operator()": the class names it */
	if (c >= 2 && !strncmp(s + c, "operator", 8) && len - c >= 8)
		len = c - 2, c = last_component(s, len);
	s += c;
	len -= c;
	/* integer literals: "2ul" -> "2" */
	if (len && (isdigit((unsigned char)s[0]) || s[0] == '-')) {
		size_t k = 1;
		while (k < len && isdigit((unsigned char)s[k]))
			k++;
		size_t j = k;
		while (j < len && (s[j] == 'u' || s[j] == 'l'))
			j++;
		if (j == len)
			len = k;
	}
	const char *lt = memchr(s, '<', len);
	if (!lt || s[len - 1] != '>' || !strncmp(s, "operator", 8)) {
		strbuf_add(out, s, len);
		return;
	}
	size_t nlen = (size_t)(lt - s);
	const char *args = lt + 1;
	size_t alen = len - nlen - 2;
	if (is_wrapper(s, nlen)) {
		size_t st[MAX_ARGS], ln[MAX_ARGS];
		int n = split_args(args, alen, st, ln, MAX_ARGS);
		int keep = n - 1;
		for (int i = 0; i < n; i++)
			if (looks_like_functor(args + st[i], ln[i]))
				keep = i;
		if (keep >= 0) {
			shorten(out, args + st[keep], ln[keep], 0, level + 1);
			return;
		}
	}
	strbuf_add(out, s, nlen + 1);
	shorten_args(out, args, alen, top, level, SHORT_MAX > nlen + 2 ? SHORT_MAX - nlen - 2 : 8);
	strbuf_adds(out, ">");
}

char *short_name(const char *name)
{
	char *d = demangle(name);
	const char *s = d;
	if (!strncmp(s, "void ", 5))
		s += 5;
	struct strbuf sb = STRBUF_INIT;
	size_t len = strlen(s);
	if (len > DEMANGLE_MAX) {
		/* not a name anyone reads: keep its head */
		strbuf_add(&sb, s, SHORT_MAX);
		strbuf_adds(&sb, ELLIPSIS);
	} else {
		shorten(&sb, s, len, 1, 0);
	}
	if (!sb.len)
		strbuf_adds(&sb, s);
	free(d);
	return sb.buf ? sb.buf : xstrdup("");
}
