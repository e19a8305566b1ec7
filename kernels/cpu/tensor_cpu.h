/* tensor_cpu.h — what the CPU tensor kernels (tensor_cpu_*.c) share:
 * per-dtype load/store, vectorised clones, parallel thresholds, and the
 * entry points each file contributes to the table in tensor_cpu.c.
 *
 * How the loops are built: a switch on dtype and op sits OUTSIDE each loop;
 * inside, one element is loaded, widened, computed by the HL_HD function of
 * kernels/tensor_math.h with a constant op, and rounded once on store. The
 * innermost row/chunk functions are compiled for several x86 ISAs
 * (target_clones; chosen once per process by the loader), since the library
 * is built for baseline x86-64 and AVX-512 doubles what SSE2 gets from exp
 * and GELU. The build does not contract a*b+c (ISO C17), so every clone
 * rounds the same way: results do not depend on the machine's ISA.
 * OpenMP splits work into fixed chunks, so sums and statistics do not
 * depend on the thread count either.
 */
#ifndef HL_TENSOR_CPU_H
#define HL_TENSOR_CPU_H

#include <stdint.h>
#include <string.h>

#include "formats/fatal.h" /* HL_CHECK_ALLOC */
#include "formats/half.h"
#include "kernels/tensor_kernels.h"
#include "kernels/tensor_math.h"

#include "kernels/cpu/vector_clones.h" /* HL_VECTOR_CLONES */

/* Below this many elements a loop stays on one thread: an OpenMP fork and
 * join costs a few microseconds, about what 32K simple elements take. */
#define HL_PAR_MIN 32768
/* Work unit of parallel element-wise loops (elements). */
#define HL_CHUNK 16384

/* Load/store of each float storage type; compute type float (f64: double). */
#define HL_LD_F64(v) (v)
#define HL_ST_F64(v) (v)
#define HL_LD_F32(v) (v)
#define HL_ST_F32(v) (v)
#define HL_LD_F16(v) hl_f16_to_f32(v)
#define HL_ST_F16(v) hl_f32_to_f16(v)
#define HL_LD_BF16(v) hl_bf16_to_f32(v)
#define HL_ST_BF16(v) hl_f32_to_bf16(v)

/* X(SUF, storage type, compute type, compute suffix) once per float dtype. */
#define HL_FOR_FLOAT_TYPES(X)        \
  X(F64, double, double, f64)        \
  X(F32, float, float, f32)          \
  X(F16, uint16_t, float, f32)       \
  X(BF16, uint16_t, float, f32)

static inline int64_t hl_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Deterministic sums: 16 independent lane accumulators (a vector register
 * on AVX-512, four on SSE; the same order either way), folded by a fixed
 * tree. Faster than one running sum and not dependent on the ISA. */
#define HL_LANES 16
#define HL_FOLD_LANES(acc)                                          \
  do {                                                              \
    for (int w_ = HL_LANES / 2; w_ > 0; w_ /= 2)                    \
      for (int k_ = 0; k_ < w_; k_++) (acc)[k_] += (acc)[k_ + w_];  \
  } while (0)

/* Runs the statement list on i = 0 .. n-1 with `lane` = i % HL_LANES, written
 * as blocks of HL_LANES so that the lane accumulators become vector
 * registers; the tail keeps the same lane assignment. */
#define HL_LANE_LOOP(n, ...)                                                    \
  do {                                                                          \
    int64_t i_ = 0;                                                             \
    for (; i_ + HL_LANES <= (n); i_ += HL_LANES)                                \
      for (int lane = 0; lane < HL_LANES; lane++) {                             \
        const int64_t i = i_ + lane;                                            \
        __VA_ARGS__                                                             \
      }                                                                         \
    for (int lane = 0; i_ < (n); i_++, lane++) {                                \
      const int64_t i = i_;                                                     \
      __VA_ARGS__                                                               \
    }                                                                           \
  } while (0)

/* The entry points of the CPU table (tensor_cpu.c), hl_cpu_fill ...
 * hl_cpu_embedding_backward, each defined in one tensor_cpu_*.c: declared
 * from the one list of kernels/tensor_kernels.h. */
HL_TENSOR_KERNEL_PROTOTYPES(hl_cpu_)

#endif
