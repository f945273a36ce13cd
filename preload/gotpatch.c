/*
 * gotpatch.c - redirect one library's imports of a function to another.
 *
 * How it works: dl_iterate_phdr() lists the loaded objects; for each whose name contains the
 * given substring, the PT_DYNAMIC segment gives the symbol and string tables and the two
 * relocation tables that bind imports (DT_JMPREL for the PLT's JUMP_SLOTs, DT_RELA for the
 * GLOB_DATs of code built with -fno-plt). Each relocation naming the symbol has its slot
 * (load base + r_offset) overwritten with the replacement. A slot inside the object's
 * PT_GNU_RELRO range (read-only once the loader has bound it, under -z now) is made writable
 * for the write and read-only again (whole pages only, as the loader protects them); a slot
 * outside it is already writable. Entries of the
 * dynamic section are addresses already relocated by glibc on most targets; one below the load
 * base is an offset and gets the base added (the targets that keep the section read-only).
 * Only the named object's slots change: other callers, dlsym and the function itself are
 * untouched. The shim uses it for one purpose (shim.c: after the program's CUDA context died,
 * the allocator that aicprof switched to must not abort on the frees that follow).
 */
#include "preload/gotpatch.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB_DAT  R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT  R_AARCH64_GLOB_DAT
#else
#define R_JUMP_SLOT (-1)
#define R_GLOB_DAT  (-1)
#endif

struct job {
	const char *lib, *sym;
	void *repl;
	int n, err;
};

static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) p)
{
	return p < base ? base + p : p;
}

static int write_slot(uintptr_t slot, void *repl, uintptr_t relro_b, uintptr_t relro_e)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (pg <= 0)
		pg = 4096;
	uintptr_t mask = ~((uintptr_t)pg - 1);
	uintptr_t page = slot & mask;
	/* the loader makes read-only only the whole pages of the RELRO range (its end rounded
	 * down): a slot on the last, partial page is on a page that stays writable, and making
	 * it read-only again would take the page's other data with it */
	int ro = slot >= (relro_b & mask) && slot < (relro_e & mask);
	if (ro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE))
		return -1;
	__atomic_store_n((void **)slot, repl, __ATOMIC_SEQ_CST);
	if (ro)
		mprotect((void *)page, (size_t)pg, PROT_READ);
	return 0;
}

static void patch_table(struct job *j, uintptr_t base, const ElfW(Rela) * rel, size_t bytes,
                        const ElfW(Sym) * symtab, const char *strtab, uintptr_t rb, uintptr_t re)
{
	for (size_t i = 0; rel && i < bytes / sizeof(*rel); i++) {
		long type = (long)ELF64_R_TYPE(rel[i].r_info);
		if (type != R_JUMP_SLOT && type != R_GLOB_DAT)
			continue;
		const ElfW(Sym) *s = &symtab[ELF64_R_SYM(rel[i].r_info)];
		if (!s->st_name || strcmp(strtab + s->st_name, j->sym))
			continue;
		if (write_slot(base + rel[i].r_offset, j->repl, rb, re))
			j->err = 1;
		else
			j->n++;
	}
}

/* The object's dynamic section (NULL none) and its RELRO range ([*rb, *re), 0 0 none). */
static const ElfW(Dyn) * dynamic_of(const struct dl_phdr_info *info, uintptr_t *rb, uintptr_t *re)
{
	uintptr_t base = (uintptr_t)info->dlpi_addr;
	const ElfW(Dyn) *dyn = NULL;
	*rb = *re = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
		else if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
			*rb = base + info->dlpi_phdr[i].p_vaddr;
			*re = *rb + info->dlpi_phdr[i].p_memsz;
		}
	}
	return dyn;
}

static int one_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct job *j = data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, j->lib))
		return 0;
	uintptr_t base = (uintptr_t)info->dlpi_addr, rb, re;
	const ElfW(Dyn) *dyn = dynamic_of(info, &rb, &re);
	if (!dyn)
		return 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t jmpsz = 0, relasz = 0;
	int pltrela = 1;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)dyn_addr(base, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = (const char *)dyn_addr(base, dyn->d_un.d_ptr);
			break;
		case DT_JMPREL:
			jmprel = (const ElfW(Rela) *)dyn_addr(base, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			jmpsz = dyn->d_un.d_val;
			break;
		case DT_PLTREL:
			pltrela = dyn->d_un.d_val == DT_RELA;
			break;
		case DT_RELA:
			rela = (const ElfW(Rela) *)dyn_addr(base, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			relasz = dyn->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab || !pltrela) /* REL-only targets: not ours */
		return 0;
	patch_table(j, base, jmprel, jmpsz, symtab, strtab, rb, re);
	patch_table(j, base, rela, relasz, symtab, strtab, rb, re);
	return 0;
}

int got_patch(const char *lib, const char *sym, void *repl)
{
	if (!lib || !sym || !repl || R_JUMP_SLOT < 0)
		return 0;
	struct job j = {lib, sym, repl, 0, 0};
	dl_iterate_phdr(one_object, &j);
	return j.err ? -1 : j.n;
}

struct need {
	const char *lib, *dep;
	char name[256];
};

static int find_needed(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct need *nd = data;
	if (nd->name[0] || !info->dlpi_name || !strstr(info->dlpi_name, nd->lib))
		return 0;
	uintptr_t base = (uintptr_t)info->dlpi_addr, rb, re;
	const ElfW(Dyn) *dyn = dynamic_of(info, &rb, &re);
	if (!dyn)
		return 0;
	const char *strtab = NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)dyn_addr(base, d->d_un.d_ptr);
	if (!strtab)
		return 0;
	size_t dl = strlen(nd->dep);
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED && !strncmp(strtab + d->d_un.d_val, nd->dep, dl) &&
		    strlen(strtab + d->d_un.d_val) < sizeof(nd->name)) {
			strcpy(nd->name, strtab + d->d_un.d_val);
			return 1;
		}
	return 0;
}

void *got_needed_sym(const char *lib, const char *dep, const char *sym)
{
	if (!lib || !dep || !sym)
		return NULL;
	struct need nd = {lib, dep, ""};
	dl_iterate_phdr(find_needed, &nd);
	if (!nd.name[0])
		return NULL;
	void *h = dlopen(nd.name, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		return NULL;
	void *f = dlsym(h, sym);
	dlclose(h); /* RTLD_NOLOAD took a reference; the library stays as loaded */
	return f;
}
