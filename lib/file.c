/*
 * file.c - whole-file reads (file.h). The file is opened without blocking, checked to be a
 * regular file (a directory, a FIFO or a device is refused before any read), and read in 64 KiB
 * pieces into a strbuf; the limit is checked against fstat's size first and again while reading, so
 * a file that grows under the read is still bounded.
 */
#include "lib/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *file_read(const char *path, size_t max, size_t *len, struct strbuf *err)
{
	/* O_NONBLOCK: a FIFO or a device named where a file was meant must not block the open */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		error_into(err, "cannot open '%s': %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	struct stat st;
	FILE *f = NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "rb"))) {
		close(fd);
		error_into(err, "cannot read '%s': not a regular file", path);
		errno = EINVAL;
		return NULL;
	}
	if ((unsigned long long)st.st_size > max)
		goto too_big;
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (sb.len + n > max) {
			strbuf_release(&sb);
			goto too_big;
		}
		strbuf_add(&sb, buf, n);
	}
	if (ferror(f)) {
		int e = errno;
		fclose(f);
		strbuf_release(&sb);
		error_into(err, "cannot read '%s': %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	fclose(f);
	strbuf_grow(&sb, 1); /* a buffer and its NUL even for an empty file */
	sb.buf[sb.len] = 0;
	if (len)
		*len = sb.len;
	return sb.buf;
too_big:
	fclose(f);
	error_into(err, "'%s' is larger than %zu bytes", path, max);
	errno = EFBIG;
	return NULL;
}
