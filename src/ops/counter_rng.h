/*
 * counter_rng.h — the counter-based random bits of the ops that draw them (dropout's mask,
 * cast_stochastic's rounding): a pure function of a 64-bit key and an element's index, so a node
 * makes the same bits again in any run, thread split, pipeline stage or replica, with no state.
 *
 *   key   = ts_rng_key(seed, id, step): mix64 chained over them (each op says what id is)
 *   k0    = lo32(key), k1 = hi32(key)
 *   u32_i = fmix32(fmix32(lo32(i) * 0x9e3779b9 + k0) ^ hi32(i) ^ k1)
 * For a fixed key, i -> u32_i is a bijection on every 2^32 consecutive indices (each step is
 * one), so the bits of a tensor are uniform without repeats; a new key changes them all
 * (mix64 avalanches). 32-bit lanes keep the per-element hash 16 wide under AVX-512. Loops hoist
 * hi32(i) ^ k1 per chunk of TS_RNG_CHUNK elements (a divisor of 2^32: hi32 is fixed in a chunk).
 */
#ifndef TS_COUNTER_RNG_H
#define TS_COUNTER_RNG_H

#include <stdint.h>

#define TS_RNG_CHUNK 16384

/* splitmix64's finaliser: a bijection of 64-bit keys with full avalanche. */
static inline uint64_t ts_rng_mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A node's key for a step: mix64 chained over the seed, the node's identity `id` (dropout's salt,
 * cast_stochastic's name key) and the step. */
static inline uint64_t ts_rng_key(uint64_t seed, uint64_t id, uint64_t step) {
    return ts_rng_mix64(ts_rng_mix64(ts_rng_mix64(seed) ^ id) ^ step);
}

/* murmur3's 32-bit finaliser. */
static inline uint32_t ts_rng_fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* u32_i of the header for lo = lo32(i), hi = hi32(i) ^ k1, k0 = lo32(key). */
static inline uint32_t ts_rng_u32(uint32_t lo, uint32_t hi, uint32_t k0) {
    return ts_rng_fmix32(ts_rng_fmix32(lo * 0x9e3779b9u + k0) ^ hi);
}

#endif
