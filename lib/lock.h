/*
 * lock.h - one aicprof run at a time per output directory. The run that writes into DIR holds
 * an exclusive flock on DIR/.aicprof.lock from before its first write until it exits (the
 * descriptor is never closed: the kernel drops the lock when the process, and any child forked
 * from it, is gone, so a killed run never leaves a stale lock). A second run into DIR is refused
 * at once, naming the holder's pid, which the holder writes into the lock file.
 */
#ifndef AICPROF_LIB_LOCK_H
#define AICPROF_LIB_LOCK_H

/*
 * Takes the lock of the existing directory dir for the rest of the process: opens
 * dir/.aicprof.lock (created 0666 & ~umask; O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK, so a link or a FIFO
 * planted there is refused, never followed or blocked on), flock(LOCK_EX|LOCK_NB), and writes
 * the pid into it. Taking the same dir again in the same process is a no-op. Returns 0, or -1
 * after error(): "'DIR' is being written by another aicprof run (pid N); wait for it or choose
 * another -o" when another process holds it, or the path and the reason when the file cannot
 * be opened or is not a regular file.
 */
int outdir_lock(const char *dir);

#endif
