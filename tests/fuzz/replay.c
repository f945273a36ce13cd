/*
 * replay.c - the main() that turns a fuzz target into a plain program: every argument is a file
 * (run through LLVMFuzzerTestOneInput once) or a directory (each regular file in it, sorted by
 * name). Prints one TAP line per input, "ok - <target> <file>", after the input ran; a crash or
 * sanitizer report stops the program before its line, and the test runner counts the non-zero
 * exit. Exits 0 when every input ran, 1 when an input could not be read.
 */
#include "tests/fuzz/fuzz.h"
#include "lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *prog, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return error("cannot open '%s': %s", path, strerror(errno));
	struct strbuf sb = STRBUF_INIT;
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&sb, buf, n);
	fclose(f);
	/* a copy of exactly the file's size, so ASan sees reads past its end */
	uint8_t *data = xmalloc(sb.len ? sb.len : 1);
	memcpy(data, sb.buf ? sb.buf : "", sb.len);
	LLVMFuzzerTestOneInput(data, sb.len);
	printf("ok - %s %s\n", prog, path);
	fflush(stdout);
	free(data);
	strbuf_release(&sb);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int ret = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			ret = error("cannot open '%s': %s", argv[i], strerror(errno));
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			ret |= run_file(prog, argv[i]);
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			ret = error("cannot open '%s': %s", argv[i], strerror(errno));
			continue;
		}
		char **names = NULL;
		int nr = 0, alloc = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			ALLOC_GROW(names, nr, alloc);
			names[nr++] = path_join(argv[i], e->d_name);
		}
		closedir(d);
		if (nr)
			qsort(names, (size_t)nr, sizeof(*names), cmp);
		for (int k = 0; k < nr; k++) {
			ret |= run_file(prog, names[k]);
			free(names[k]);
		}
		free(names);
	}
	return ret ? 1 : 0;
}
