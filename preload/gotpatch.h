/*
 * gotpatch.h - redirect one loaded library's imports of a function (its GOT slots) to another
 * function, leaving every other caller alone. See gotpatch.c.
 */
#ifndef AICPROF_GOTPATCH_H
#define AICPROF_GOTPATCH_H

/*
 * In every loaded object whose path contains lib (a substring such as "libc10_cuda.so"), point
 * the GOT slots that its dynamic relocations bind to the symbol sym (JUMP_SLOT and GLOB_DAT)
 * at repl. Returns the number of slots rewritten (0: no such object, or it does not import
 * sym), -1 when a page could not be made writable. Not reversible; not thread-safe against a
 * concurrent dlclose of that object. Takes the loader's lock (dl_iterate_phdr): never call it
 * from inside a dlopen.
 */
int got_patch(const char *lib, const char *sym, void *repl);

#endif
