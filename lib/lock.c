/*
 * lock.c - the output directory's lock (see lock.h).
 *
 * flock, not fcntl locks: an fcntl lock belongs to the process and is dropped when any
 * descriptor of the file is closed, and is not inherited by fork; flock belongs to the open
 * file description, so job_run's forked map processes keep it and nothing else in the process
 * can drop it by closing some other descriptor of the file. The pid is written after the lock
 * is taken; a refused run that reads the file before the holder wrote it tries again for up to
 * 50 ms, then says "pid unknown".
 */
#include "lib/lock.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the directories this process holds (their lock files' descriptors stay open until exit) */
static char **held;
static int nheld, alloc_held;

/* The pid written in the lock file open at fd, or 0 when it has none (yet). */
static long holder_pid(int fd)
{
	for (int tries = 0; tries < 10; tries++) {
		char buf[32];
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			char *end;
			long pid = strtol(buf, &end, 10);
			if (pid > 0 && end != buf && (*end == '\n' || !*end))
				return pid;
		}
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

int outdir_lock(const char *dir)
{
	for (int i = 0; i < nheld; i++)
		if (!strcmp(held[i], dir))
			return 0;
	char *path = path_join(dir, ".aicprof.lock");
	int fd =
	    open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0666);
	if (fd < 0) {
		int e = errno;
		error("cannot open '%s': %s", path,
		      e == ELOOP ? "it is a symbolic link" : strerror(e));
		free(path);
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		error("cannot lock '%s': not a regular file", path);
		close(fd);
		free(path);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (e == EWOULDBLOCK) {
			long pid = holder_pid(fd);
			if (pid > 0)
				error("'%s' is being written by another aicprof run (pid %ld); "
				      "wait for "
				      "it or choose another -o",
				      dir, pid);
			else
				error("'%s' is being written by another aicprof run (pid unknown); "
				      "wait for it or choose another -o",
				      dir);
		} else {
			error("cannot lock '%s': %s", path, strerror(e));
		}
		close(fd);
		free(path);
		return -1;
	}
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len)
		warning("cannot write the pid into '%s': %s", path, strerror(errno));
	free(path);
	ALLOC_GROW(held, nheld, alloc_held);
	held[nheld++] = xstrdup(dir);
	return 0; /* fd stays open: the lock lasts until exit */
}
