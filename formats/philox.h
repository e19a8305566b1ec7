/* philox.h — Philox4x32-10, the counter-based generator of Salmon et al.,
 * "Parallel random numbers: as easy as 1, 2, 3" (SC'11), the same algorithm
 * as cuRAND's PHILOX4_32_10. Being counter-based, element i of a stream is a
 * pure function of (seed, stream, i): the CPU loop and a CUDA thread that
 * ask for the same element get the same bits, with no state to share.
 */
#ifndef HL_PHILOX_H
#define HL_PHILOX_H

#include <stdint.h>

#include "formats/hd.h" /* HL_HD */

#ifdef __cplusplus
extern "C" {
#endif

HL_HD static inline uint32_t hl_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  return (uint32_t)p;
}

/* Ten rounds on counter c with key k; writes four 32-bit outputs. */
HL_HD static inline void hl_philox4x32_10(const uint32_t c_in[4], const uint32_t k_in[2],
                                          uint32_t out[4]) {
  uint32_t c0 = c_in[0], c1 = c_in[1], c2 = c_in[2], c3 = c_in[3];
  uint32_t k0 = k_in[0], k1 = k_in[1];
  for (int round = 0; round < 10; round++) {
    uint32_t hi0, hi1;
    uint32_t lo0 = hl_mulhilo32(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = hl_mulhilo32(0xCD9E8D57u, c2, &hi1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u; /* golden ratio */
    k1 += 0xBB67AE85u; /* sqrt(3) - 1 */
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* 32-bit word `index` of stream `stream` under `seed`. The layout follows
 * cuRAND's curand_init(seed, subsequence = stream, offset = index): key =
 * seed, counter = (index / 4, stream), output word index % 4. */
HL_HD static inline uint32_t hl_philox_u32(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t block = index >> 2;
  uint32_t c[4] = {(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)stream,
                   (uint32_t)(stream >> 32)};
  uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  hl_philox4x32_10(c, k, out);
  return out[index & 3u];
}

/* Uniform in [0, 1) with 24 random bits: exact in fp32 on every backend. */
HL_HD static inline float hl_u32_to_unit_float(uint32_t u) {
  return (float)(u >> 8) * 0x1p-24f;
}

#ifdef __cplusplus
}
#endif

#endif /* HL_PHILOX_H */
