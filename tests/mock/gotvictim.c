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

/* writable data, placed by the linker right after the RELRO part (.got): patching a slot on
 * the page they may share must leave the page writable */
static long counter = 1;
__attribute__((visibility("default"))) long victim_bump(void)
{
	return ++counter;
}
