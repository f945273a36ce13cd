/*
 * fuzz.h - what the fuzz targets share: each tests/fuzz/fuzz-<name>.c defines libFuzzer's entry
 * point LLVMFuzzerTestOneInput(data, size), which runs one input through one stage of aicprof
 * and frees everything it made. Built with clang -fsanitize=fuzzer it is a libFuzzer target
 * (`make fuzz`); linked with replay.c instead it is a plain program that runs every file named
 * on its command line (or every file in a named directory) through the target once, which is
 * how `make test` replays the regression corpus with the ASan build and without libFuzzer.
 *
 * Scratch files live in one private directory made on first use (fuzz_dir()), removed at exit.
 */
#ifndef AICPROF_FUZZ_H
#define AICPROF_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The target's private scratch directory (mkdtemp under $TMPDIR or /tmp), made once; dies on
 * failure. Owned by the harness, removed with its files at exit. */
const char *fuzz_dir(void);

/* Writes size bytes to path, replacing it; dies on failure. */
void fuzz_write(const char *path, const uint8_t *data, size_t size);
/* The input as DIR/summary.json (DIR: fuzz_dir()), with util_quiet set; returns that path. */
const char *fuzz_summary(const uint8_t *data, size_t size);

#endif
