/*
 * symbolize.c - file:line for native sites, offline, with elfutils' libdw.
 *
 * A native site (preload/sites.c) is a libunwind stack, innermost first, each frame the module
 * (path as the program saw it), the return address's offset from the module's first mapping
 * (dladdr's dli_fbase), and the module's GNU build id. Each module is reported once to its own
 * offline Dwfl (dwfl_report_offline, the standard find_elf/find_debuginfo callbacks, so separate
 * debug files under /usr/lib/debug/.build-id are found too) and cached for the process, keyed
 * by (path, recorded build id). The file's address of a frame is offset + the page-aligned
 * p_vaddr of its first PT_LOAD segment (glibc maps the module from there) + the Dwfl bias; one
 * is taken off the return address so the line is the call's. dwfl_module_getsrc/dwfl_lineinfo
 * give file:line (a relative file joined to the compilation's directory, then made relative to
 * the trace's cwd when under it), dwfl_module_addrname the function (demangled, short form).
 *
 * The user frame: a program linked with nvcc carries the CUDA runtime statically, so the
 * innermost frames are cudart's (no line information, or names cudart*, __cudart*,
 * libcudart_static_*, cudaLaunchKernel*), then nvcc's launch stub (__device_stub__..., in a
 * generated
 * *.cudafe1.stub.c) and the kernel's host wrapper (the function the stub is named after, at the
 * kernel's definition), then the user's call. The first frame with a source file outside the
 * CUDA toolkit (and outside nvcc's generated files) that is none of those is the user's.
 * A module that is missing, rebuilt (its build id differs from the trace's), unreadable or
 * without line information is warned about once and passed over; the caller then keeps
 * module+offset. Built without libdw (AICPROF_NO_LIBDW), nothing is ever named.
 */
#include "analyzer/symbolize.h"
#include "analyzer/builder.h"
#include "analyzer/semantics.h"
#include "lib/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int nwarnings;

int symbolize_warnings(void)
{
	return nwarnings;
}

void native_src_release(struct native_src *src)
{
	free(src->file);
	free(src->func);
	memset(src, 0, sizeof(*src));
}

static char *clean_dup(const char *t)
{
	char *d = xstrdup(t);
	for (unsigned char *p = (unsigned char *)d; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	return d;
}

int symbolize_site(struct siteinfo *s, const cJSON *native, const char *cwd)
{
	struct native_src ns = {0};
	if (!symbolize_native(native, cwd, &ns))
		return 0;
	s->file = clean_dup(ns.file);
	s->line = ns.line;
	s->func = ns.func ? clean_dup(ns.func) : NULL;
	struct strbuf sb = STRBUF_INIT;
	strbuf_addf(&sb, "%s:%d", s->file, s->line);
	s->source = sb.buf;
	native_src_release(&ns);
	return 1;
}

#ifdef AICPROF_NO_LIBDW

int symbolize_native(const cJSON *native, const char *cwd, struct native_src *out)
{
	static int warned;
	if (!warned && cJSON_GetArraySize(native) > 0) {
		warned = 1;
		nwarnings++;
		warning("native sites keep module+offset: aicprof was built without libdw");
	}
	return 0;
}

size_t symbolize_file_build_id(const char *path, char *hex, size_t hexsz)
{
	if (hexsz)
		hex[0] = 0;
	return 0;
}

void symbolize_reset(void)
{
	nwarnings = 0;
}

#else

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>

struct module {
	char *path, *bid; /* the key: as recorded (bid "" when none was) */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr base; /* Dwfl address of offset 0 */
	int ok;
};
#define MAX_MODULES 256 /* a trace naming more (hostile) costs no more than this */
static struct module *mods;
static int nmods, amods, too_many;

static const Dwfl_Callbacks offline_cb = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

void symbolize_reset(void)
{
	for (int i = 0; i < nmods; i++) {
		if (mods[i].dwfl)
			dwfl_end(mods[i].dwfl);
		free(mods[i].path);
		free(mods[i].bid);
	}
	free(mods);
	mods = NULL;
	nmods = amods = too_many = 0;
	nwarnings = 0;
}

static size_t to_hex(const unsigned char *p, size_t n, char *hex, size_t hexsz)
{
	static const char digits[] = "0123456789abcdef";
	size_t k = 0;
	if (!hexsz)
		return 0;
	for (size_t i = 0; i < n && k + 2 < hexsz; i++) {
		hex[k++] = digits[p[i] >> 4];
		hex[k++] = digits[p[i] & 15];
	}
	hex[k] = 0;
	return k;
}

static size_t elf_build_id_hex(Elf *e, char *hex, size_t hexsz)
{
	const void *id = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	if (hexsz)
		hex[0] = 0;
	return n > 0 ? to_hex(id, (size_t)n, hex, hexsz) : 0;
}

size_t symbolize_file_build_id(const char *path, char *hex, size_t hexsz)
{
	if (hexsz)
		hex[0] = 0;
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = elf_kind(e) == ELF_K_ELF ? elf_build_id_hex(e, hex, hexsz) : 0;
	if (e)
		elf_end(e);
	close(fd);
	return n;
}

static void warn_module(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn_module(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nwarnings++;
	warning("%s", msg);
}

static int module_has_lines(Dwfl_Module *m)
{
	Dwarf_Addr bias;
	if (!dwfl_module_getdwarf(m, &bias))
		return 0;
	Dwarf_Die *cu = NULL;
	while ((cu = dwfl_module_nextcu(m, cu, &bias))) {
		Dwarf_Lines *lines;
		size_t n = 0;
		if (dwarf_getsrclines(cu, &lines, &n) == 0 && n)
			return 1;
	}
	return 0;
}

/* Opens what mo names (the fields after the key are zero); warns once when it cannot be used. */
static void module_open(struct module *mo, const char *cwd)
{
	char *file = NULL;
	if (mo->path[0] != '/' && cwd && *cwd) {
		struct strbuf sb = STRBUF_INIT;
		strbuf_addf(&sb, "%s/%s", cwd, mo->path);
		file = sb.buf;
		if (access(file, R_OK)) {
			free(file);
			file = NULL;
		}
	}
	if (!file)
		file = xstrdup(mo->path);
	struct stat st;
	if (stat(file, &st) || access(file, R_OK)) {
		warn_module("'%s': no such module file; its native frames keep module+offset",
		            mo->path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) { /* a FIFO or device named by a trace is never opened */
		warn_module("'%s': not a regular file; its native frames keep module+offset",
		            mo->path);
		goto out;
	}
	mo->dwfl = dwfl_begin(&offline_cb);
	mo->mod = mo->dwfl ? dwfl_report_offline(mo->dwfl, mo->path, file, -1) : NULL;
	if (mo->dwfl)
		dwfl_report_end(mo->dwfl, NULL, NULL);
	GElf_Addr bias = 0;
	Elf *e = mo->mod ? dwfl_module_getelf(mo->mod, &bias) : NULL;
	if (!e) {
		warn_module("'%s': cannot read it (%s); its native frames keep module+offset",
		            mo->path, dwfl_errmsg(-1));
		goto out;
	}
	char hex[2 * 64 + 1];
	elf_build_id_hex(e, hex, sizeof(hex));
	if (*mo->bid && strcmp(hex, mo->bid)) {
		warn_module(
		    "'%s': build id %s differs from the trace's %s (rebuilt since the run?); "
		    "its native frames keep module+offset",
		    mo->path, *hex ? hex : "(none)", mo->bid);
		goto out;
	}
	/* glibc maps a module from its first PT_LOAD segment, page-aligned (dli_fbase) */
	size_t nph = 0;
	GElf_Addr first = 0;
	if (elf_getphdrnum(e, &nph) == 0)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				first = ph.p_vaddr & ~(GElf_Addr)4095;
				break;
			}
		}
	mo->base = first + bias;
	if (!module_has_lines(mo->mod)) {
		warn_module("'%s': no line information; build with -g or -lineinfo", mo->path);
		goto out;
	}
	mo->ok = 1;
out:
	free(file);
}

static struct module *module_get(const char *path, const char *bid, const char *cwd)
{
	for (int i = 0; i < nmods; i++)
		if (!strcmp(mods[i].path, path) && !strcmp(mods[i].bid, bid))
			return &mods[i];
	if (nmods == MAX_MODULES) {
		if (!too_many)
			warn_module("more than %d modules in native sites; the others keep "
			            "module+offset",
			            MAX_MODULES);
		too_many = 1;
		return NULL;
	}
	ALLOC_GROW(mods, nmods, amods);
	struct module *mo = &mods[nmods++];
	memset(mo, 0, sizeof(*mo));
	mo->path = xstrdup(path);
	mo->bid = xstrdup(bid);
	module_open(mo, cwd);
	return mo;
}

/* The identifier a mangled (or plain) symbol starts with, into out: "_ZL25__cudaLaunch..." ->
 * "__cudaLaunch..." (unnested names only; a nested one gives ""). */
static void plain_name(const char *sym, char *out, size_t outsz)
{
	out[0] = 0;
	if (strncmp(sym, "_Z", 2)) {
		snprintf(out, outsz, "%s", sym);
		return;
	}
	const char *p = sym + 2;
	if (*p == 'L')
		p++;
	if (!isdigit((unsigned char)*p))
		return;
	char *end;
	unsigned long n = strtoul(p, &end, 10);
	if (n >= outsz || strlen(end) < n)
		return;
	memcpy(out, end, n);
	out[n] = 0;
}

static int is_cudart_name(const char *sym)
{
	char b[256];
	plain_name(sym, b, sizeof(b));
	return !strncmp(b, "cudart", 6) || !strncmp(b, "__cudart", 8) ||
	       !strncmp(b, "libcudart_static_", 17) || !strncmp(b, "cudaLaunchKernel", 16) ||
	       !strncmp(b, "__cudaLaunchKernel", 18);
}

static int is_cuda_module(const char *m)
{
	const char *b = strrchr(m, '/');
	b = b ? b + 1 : m;
	return !strncmp(b, "libcudart", 9) || !strncmp(b, "libcuda.", 8);
}

/* The CUDA toolkit's files and nvcc's generated ones. */
static int is_toolkit_file(const char *f)
{
	const char *home = getenv("CUDA_HOME");
	if (home && *home && !strncmp(f, home, strlen(home)))
		return 1;
	return !strncmp(f, "/usr/local/cuda", 15) || !strncmp(f, "/opt/cuda", 9) ||
	       strstr(f, "/cuda/include/") || strstr(f, "/targets/x86_64-linux/include/") ||
	       strstr(f, "/targets/sbsa-linux/include/") || strstr(f, ".cudafe1.") ||
	       strstr(f, "/tmpxft_");
}

/* Whether inner (the callee's symbol) is nvcc's launch stub of sym: "_Z29__device_stub__Z5scale
 * PfPKffiPfPKffi" for "_Z5scalePfPKffi", "_Z20__device_stub__scale..." for extern "C" scale. */
static int is_stub_of(const char *inner, const char *sym)
{
	const char *p = inner ? strstr(inner, "__device_stub_") : NULL;
	if (!p || !sym || !*sym)
		return 0;
	p += strlen("__device_stub_");
	size_t n = strlen(sym);
	return !strncmp(p, sym, n) || (*p == '_' && !strncmp(p + 1, sym, n));
}

static const char *rel_to(const char *file, const char *cwd)
{
	size_t n = cwd ? strlen(cwd) : 0;
	while (n > 1 && cwd[n - 1] == '/')
		n--;
	if (n && !strncmp(file, cwd, n) && file[n] == '/')
		return file + n + 1;
	return file;
}

int symbolize_native(const cJSON *native, const char *cwd, struct native_src *out)
{
	const cJSON *f;
	const char *inner_sym = NULL; /* the callee's symbol, in the same module */
	const struct module *inner_mod = NULL;
	cJSON_ArrayForEach(f, native)
	{
		const char *path =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "module"));
		const char *off =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "offset"));
		const char *bid =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "build_id"));
		const char *sym = NULL;
		struct module *mo = NULL;
		char *end = NULL;
		unsigned long long o = off ? strtoull(off, &end, 16) : 0;
		if (path && *path && off && end != off && !*end && o > 0 && !is_cuda_module(path)) {
			mo = module_get(path, bid ? bid : "", cwd);
			if (mo && !mo->ok)
				mo = NULL;
		}
		if (!mo) {
			inner_sym = NULL, inner_mod = NULL;
			continue;
		}
		GElf_Addr a = mo->base + o - 1; /* a return address: the call is before it */
		sym = dwfl_module_addrname(mo->mod, a);
		int skip = sym && (is_cudart_name(sym) || strstr(sym, "__device_stub_") ||
		                   (inner_mod == mo && is_stub_of(inner_sym, sym)));
		inner_sym = sym, inner_mod = mo;
		if (skip)
			continue;
		Dwfl_Line *l = dwfl_module_getsrc(mo->mod, a);
		int line = 0;
		const char *file = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
		if (!file || !*file || is_toolkit_file(file))
			continue;
		const char *dir = file[0] != '/' ? dwfl_line_comp_dir(l) : NULL;
		if (dir && *dir) { /* relative to the compilation's directory */
			struct strbuf sb = STRBUF_INIT;
			strbuf_addf(&sb, "%s/%s", dir, file);
			out->file = xstrdup(rel_to(sb.buf, cwd));
			strbuf_release(&sb);
		} else {
			out->file = xstrdup(rel_to(file, cwd));
		}
		out->line = line;
		out->func = sym ? short_name(sym) : NULL;
		return 1;
	}
	return 0;
}

#endif
