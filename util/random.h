/*
util/random.h: random numbers, counter-based, so every stream is reproducible from its
seed (initialisation, data order, sampling; the dropout masks hash the same function).
*/
#ifndef UTIL_RANDOM_H
#define UTIL_RANDOM_H

#include <math.h>
#include <stdint.h>
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

// splitmix64: a 64-bit mixing function; feeding it a counter gives a good random stream
static inline uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// a sequential generator for initialisation, shuffling and sampling: state is a counter
static inline uint64_t random_u64(uint64_t* state) { return splitmix64((*state)++); }

// uniform in [0,1): the top 24 bits of the next number
static inline float random_f32(uint64_t* state) { return (random_u64(state) >> 40) / 16777216.0f; }

// standard normal by Box-Muller (one value per call, so the stream is simple to follow)
static inline float random_normal(uint64_t* state) {
    double u1 = ((random_u64(state) >> 11) + 1.0) / 9007199254740993.0; // (0,1]
    double u2 = (random_u64(state) >> 11) / 9007199254740992.0;         // [0,1)
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

#endif
