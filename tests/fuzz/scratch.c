/*
 * scratch.c - the scratch directory and file writing every fuzz target uses (see fuzz.h). The
 * directory is made on first use with mkdtemp and emptied and removed by an atexit handler,
 * one level deep: the targets write only plain files into it.
 */
#include "tests/fuzz/fuzz.h"
#include "lib/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];

static void fuzz_cleanup(void)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = path_join(dir, e->d_name);
		unlink(p);
		free(p);
	}
	closedir(d);
	rmdir(dir);
}

const char *fuzz_dir(void)
{
	if (dir[0])
		return dir;
	const char *t = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/aicprof-fuzz.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir))
		die("cannot make a scratch directory '%s': %s", dir, strerror(errno));
	atexit(fuzz_cleanup);
	return dir;
}

void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("cannot write '%s': %s", path, strerror(errno));
	while (size) {
		ssize_t n = write(fd, data, size);
		if (n <= 0)
			die("cannot write '%s': %s", path, strerror(errno));
		data += n;
		size -= (size_t)n;
	}
	close(fd);
}

const char *fuzz_summary(const uint8_t *data, size_t size)
{
	static char *path;
	if (!path)
		path = path_join(fuzz_dir(), "summary.json");
	util_quiet = 1;
	fuzz_write(path, data, size);
	return path;
}
