/*
 * gotvictim.c - a library for test-gotpatch: its functions call getppid() and getpgrp()
 * through its own PLT (or GOT, under -fno-plt), so that rewriting its import of one shows in
 * what it returns while the test's own calls stay with libc.
 */
#include <unistd.h>

__attribute__((visibility("default"))) long victim_ppid(void)
{
	return (long)getppid();
}

__attribute__((visibility("default"))) long victim_pgrp(void)
{
	return (long)getpgrp();
}
