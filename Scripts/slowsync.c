/* A slower disk for benchmarks: every fsync and fdatasync of the process waits SLOWSYNC_US
 * microseconds more after it returns, as an SD card, an eMMC module or a network volume would
 * (docs/PERFORMANCE.md, "One writer for every write"). Never used by the agent or the tests.
 *
 *   gcc -shared -fPIC -O2 -o /tmp/slowsync.so Scripts/slowsync.c -ldl
 *   make bench   # once, to build .build-bench
 *   LD_PRELOAD=/tmp/slowsync.so SLOWSYNC_US=2000 BENCH_ONLY=group .build-bench/release/orderlive-bench
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static void pause_for_disk(void) {
    const char *text = getenv("SLOWSYNC_US");
    long us = text ? atol(text) : 0;
    if (us > 0) { struct timespec t = { us / 1000000, (us % 1000000) * 1000 }; nanosleep(&t, NULL); }
}
int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fsync");
    int r = real(fd); pause_for_disk(); return r;
}
int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
    int r = real(fd); pause_for_disk(); return r;
}
