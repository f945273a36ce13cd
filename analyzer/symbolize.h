/*
 * symbolize.h - native sites (programs without Python) named offline: the shim records a
 * libunwind stack as module + offset (+ the module's GNU build id) per frame; `analyze` turns
 * the user's frame into file:line and function from the module's debug information (libdw).
 */
#ifndef AICPROF_SYMBOLIZE_H
#define AICPROF_SYMBOLIZE_H

#include <cJSON.h>
#include <stddef.h>

/* A native site's user frame, named; the strings are owned (native_src_release frees them). */
struct native_src {
	char *file; /* relative to the trace's cwd when under it */
	int line;
	char *func; /* demangled, without parameters; NULL when the module has no symbol there */
};

/*
 * Names the user frame of a site's "native" array (innermost first; each frame {"module",
 * "offset" "0x..", "build_id"}): the first frame whose source file lies outside the CUDA
 * toolkit, after the statically linked CUDA runtime's frames (cudart*, __cudart*,
 * cudaLaunchKernel*), frames in libcudart/libcuda, nvcc's generated launch stubs and the host
 * wrapper of a kernel are skipped. Relative module paths are tried under cwd (the trace's, may
 * be NULL) first. Modules are opened once and cached for the process; a module whose file is
 * missing or whose build id differs from the recorded one, or which has no line information,
 * gets one warning (naming it) and its frames are passed over. Returns 1 and fills *out when a
 * frame was named, else 0 (*out untouched). Never fails on bad input.
 */
int symbolize_native(const cJSON *native, const char *cwd, struct native_src *out);

/*
 * The graph builder's hook (parse_site): names site s from its "native" array with
 * symbolize_native and sets s->file, s->line, s->func and s->source ("file:line"; owned by s,
 * control characters replaced by '?'). Returns 1 when named, else 0 with s untouched.
 */
struct siteinfo;
int symbolize_site(struct siteinfo *s, const cJSON *native, const char *cwd);

/* Frees what *src holds and clears it. */
void native_src_release(struct native_src *src);

/*
 * The GNU build id of the ELF file at path, as lower-case hex into hex (NUL-terminated, ""
 * when none; cut to hexsz - 1 digits). Returns the number of digits, 0 when the file cannot be
 * read, is not ELF or has no build id.
 */
size_t symbolize_file_build_id(const char *path, char *hex, size_t hexsz);

/* Warnings given so far (tests), and a reset that closes every cached module and forgets
 * which modules were warned about. */
int symbolize_warnings(void);
void symbolize_reset(void);

#endif
