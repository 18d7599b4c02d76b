/*
fast/caches.h: the sizes of the CPU's data caches as the operating system reports them,
for the matrix multiply's blocking (gemm_kernel.h, gemm_blocking). Linux: sysconf where
glibc answers, else /sys/devices/system/cpu/cpu0/cache; macOS: sysctl; elsewhere, or where
nothing answers: 0, and the caller keeps its constants.
*/
#ifndef FAST_CACHES_H
#define FAST_CACHES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

// the size in bytes of one cache of `level` (1: L1 data, 2: L2) of cpu0, as in
// /sys/devices/system/cpu/cpu0/cache/index*/ ("48K"); 0 if none says so
static long cache_size_sysfs(int level) {
    for (int index = 0; index < 8; index++) {
        char path[96], type[32] = "", size[32] = "";
        int lev = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        FILE* f = fopen(path, "r");
        if (!f) continue;
        int ok = fscanf(f, "%d", &lev) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
        if (ok && (f = fopen(path, "r"))) { ok = fscanf(f, "%31s", type) == 1; fclose(f); }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        if (ok && (f = fopen(path, "r"))) { ok = fscanf(f, "%31s", size) == 1; fclose(f); }
        if (!ok || lev != level || type[0] == 'I') continue;  // (not the instruction cache)
        char* end;
        long n = strtol(size, &end, 10);
        if (*end == 'K') n <<= 10;
        else if (*end == 'M') n <<= 20;
        if (n > 0) return n;
    }
    return 0;
}

// bytes of the level-1 data cache (level 1) or of the level-2 cache (level 2); 0: not known
static long cache_size(int level) {
    long n = 0;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    n = sysconf(level == 1 ? _SC_LEVEL1_DCACHE_SIZE : _SC_LEVEL2_CACHE_SIZE);
#endif
#ifdef __APPLE__
    int64_t v = 0;
    size_t len = sizeof v;
    if (n <= 0 && sysctlbyname(level == 1 ? "hw.l1dcachesize" : "hw.l2cachesize", &v, &len, NULL, 0) == 0)
        n = (long)v;
#endif
    if (n <= 0) n = cache_size_sysfs(level);
    return n > 0 ? n : 0;
}

#endif
