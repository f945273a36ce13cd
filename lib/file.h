/*
 * file.h - reading a whole file into memory, bounded, with errors that name the file.
 */
#ifndef AICPROF_FILE_H
#define AICPROF_FILE_H

#include "lib/util.h"

#include <stddef.h>

/*
 * Reads the regular file at path whole into a new NUL-terminated buffer the caller frees;
 * *len (when len is not NULL) is its size without the NUL. Returns NULL when it cannot be
 * opened or read, is not a regular file, or is larger than max bytes, with the message
 * ("cannot open 'p': No such file or directory", "'p' is larger than 16777216 bytes") appended
 * to err when err is not NULL, else printed with error(). errno is left as the failure set it
 * (EFBIG for too large).
 */
char *file_read(const char *path, size_t max, size_t *len, struct strbuf *err);

#endif
