/*
 * sites.h - source attribution: the place in the user's program that caused a launch, as a
 * deduplicated site id. Python programs get the user's Python frames; other programs a native
 * stack from libunwind. A new site is written once as a "site" record (writer_meta).
 */
#ifndef AICPROF_SITES_H
#define AICPROF_SITES_H

#include <stddef.h>
#include <stdint.h>

/* Finds Python and libunwind at run time; depth = user frames per site. Call once. */
void sites_init(int depth);

/*
 * The site of the current call: returns 1 and sets *site, with *inherited = 1 when the calling
 * thread could not be attributed and the last Python site of the process stands in for it;
 * returns 0 when there is none. Never blocks on a lock the program may hold (see sites.c).
 */
int sites_current(uint32_t *site, int *inherited);

/*
 * The GNU build id (NT_GNU_BUILD_ID note) of the loaded module whose segments hold addr, as
 * lower-case hex into hex (NUL-terminated; "" when none), read from the module's PT_NOTE
 * segments in memory through dl_iterate_phdr. Returns the number of hex digits written, 0 when
 * no loaded module holds addr or it has no build id. Allocates nothing; any thread.
 */
size_t sites_build_id(const void *addr, char *hex, size_t hexsz);

/* Sites created so far (tests). */
uint32_t sites_count(void);
/* In a forked child (one thread): the lock a parent's thread may have held at the fork is
 * made free again. The tables are kept: the child's frames are the parent's. */
void sites_after_fork(void);

#endif
