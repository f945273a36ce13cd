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

/*
 * The definition of sym in the library that the loaded object lib (a path substring) names in
 * its DT_NEEDED entries with the prefix dep ("libcudart.so" finds libcudart.so.13), looked up in
 * that already-loaded library (dlopen RTLD_NOLOAD): the function lib's own calls reach, even
 * when another version of that library is loaded too. NULL when lib, such a dependency or sym
 * is absent. Takes the loader's lock.
 */
void *got_needed_sym(const char *lib, const char *dep, const char *sym);

#endif
