/* shim.c - placeholder until the capture lands: the constructor of libaicprof.so. */
__attribute__((constructor)) static void aicprof_init(void)
{
}
