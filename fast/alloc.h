/*
fast/alloc.h: memory for the speed engine: aligned, huge-page-backed big buffers and
per-thread scratch. Part of the speed engine: a reader of the model may skip it.
Plain twin: malloc (the model would compute the same numbers with it, only slower).
*/
#ifndef FAST_ALLOC_H
#define FAST_ALLOC_H

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include "../util/io.h"

// The model's big buffers (weights, gradients, AdamW moments, activations, KV cache) and
// the layers' scratch: aligned to 64 bytes, and those of 2 MiB or more to 2 MiB, which
// does two things. Alignment: glibc hands out big blocks 16 bytes into a page, so every
// 64-byte vector load of a weight row straddled two cache lines (124M step 735 -> 665 ms
// once aligned). Huge pages: the 2 MiB blocks are offered to Linux as transparent huge
// pages (madvise; with THP in "madvise" mode, as here, nothing else gets them): a step
// streams through tens of megabytes, and 2 MiB pages mean 512x fewer TLB entries and
// page faults (665 -> 634 ms; the first 124M step 6 s -> 2.4 s).
// Zeroed if zero is set. Freed with aligned_free(), never free() (on Windows the two differ).
static void* aligned_alloc_check(size_t size, int zero) {
    const size_t huge = (size_t)2 << 20;
    size_t align = size >= huge ? huge : 64;
    size_t rounded = size ? (size + align - 1) / align * align : align;
    void* p = compat_aligned_alloc(align, rounded);
    if (!p) die("out of memory allocating %zu bytes", size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only means small pages
#endif
    if (zero) memset(p, 0, size);
    return p;
}
#define alignedMallocCheck(size) aligned_alloc_check(size, 0)
#define alignedCallocCheck(count, size) aligned_alloc_check((size_t)(count) * (size), 1)
static inline void aligned_free(void* p) { compat_aligned_free(p); }

// Per-thread scratch memory that grows on demand and is kept (OpenMP's threads live as
// long as the program), so the layers allocate nothing once training runs.
static _Thread_local float* thread_scratch_memory;
static _Thread_local size_t thread_scratch_floats;
static inline float* thread_scratch(size_t n) {
    if (n > thread_scratch_floats) {
        aligned_free(thread_scratch_memory);
        thread_scratch_memory = alignedMallocCheck(n * sizeof(float));
        thread_scratch_floats = n;
    }
    return thread_scratch_memory;
}

#endif
