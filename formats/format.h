/* format.h — what each floating-point format is: its fields, range and
 * precision, and a generic, format-parameterised rounding routine.
 *
 * half.h converts by bit manipulation, one routine per format. This file
 * rounds any format through double arithmetic (scale to an integer
 * significand, nearbyint, scale back), which is written independently of
 * half.h so that each can check the other.
 */
#ifndef HL_FORMAT_H
#define HL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"
#include "formats/round.h" /* hl_overflow */

#ifdef __cplusplus
extern "C" {
#endif

/* The floating-point formats described here are the float hl_dtypes
 * (formats/dtype.h) other than f64, in this order: */
#define HL_FORMATS 10
extern const hl_dtype hl_formats[HL_FORMATS]; /* f32, tf32, f16, bf16, e4m3, e5m2, e2m3, e3m2, e2m1, e8m0 */

typedef enum {
  HL_CLASS_ZERO = 0,
  HL_CLASS_SUBNORMAL,
  HL_CLASS_NORMAL,
  HL_CLASS_INF,
  HL_CLASS_NAN
} hl_fclass;

typedef struct {
  hl_dtype id;          /* its name: hl_dtype_format_name(id), "fp16" */
  const char *long_name;/* "IEEE 754 binary16" */
  int bits;             /* stored width (tf32: 19 significant bits in an fp32 container) */
  int sign_bits;        /* 1, or 0 for e8m0 (unsigned) */
  int exp_bits;
  int man_bits;         /* stored fraction bits; precision p = man_bits + 1 */
  int bias;
  int emin;             /* exponent of the smallest normal */
  int emax;             /* exponent of the largest finite */
  double max;           /* largest finite */
  double min_normal;
  double min_subnormal; /* e8m0, which has no subnormals and no zero: its smallest value, min_normal */
  double epsilon;       /* 2^-man_bits: spacing just above 1 */
  double unit_roundoff; /* epsilon / 2 */
  bool has_inf;
  bool has_nan;         /* false for fp6 and fp4, whose every code is finite */
  bool ieee_max;        /* the top exponent holds only inf and NaN: false for e4m3, fp6, fp4 and e8m0 */
} hl_format_info;

const hl_format_info *hl_format_get(hl_dtype f);
/* NULL if no format has that name ("fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2", "e2m3", "e3m2",
 * "e2m1", "e8m0"; "fp8-e4m3" / "fp8_e4m3", "fp6-e2m3", "fp4-e2m1" accepted too). */
const hl_format_info *hl_format_by_name(const char *name);

/* x rounded to the format, to nearest with ties to even, by the generic
 * double-based method. NaN in, NaN out. */
double hl_format_round(hl_dtype f, double x, hl_overflow ov);

/* Encode an fp32 value into the format's bits (right-aligned), RNE, with
 * overflow rule ov (formats/round.h, which uses half.h's conversions for
 * these specs). tf32 keeps its 19 bits (fp32 bits >> 13). */
uint32_t hl_format_encode(hl_dtype f, float x, hl_overflow ov);
/* Decode bits to the exact value. */
double hl_format_decode(hl_dtype f, uint32_t bits);
/* The value x holds once stored in the format: decode(encode(x)), overflow
 * to inf as IEEE does. */
double hl_format_stored(hl_dtype f, float x);
hl_fclass hl_format_classify(hl_dtype f, uint32_t bits);
const char *hl_fclass_name(hl_fclass c);

/* Split bits into fields. */
void hl_format_fields(hl_dtype f, uint32_t bits, uint32_t *sign, uint32_t *exp, uint32_t *man);
/* "0 01111101 10011001100110011001101" (sign | exponent | fraction). buf >= 48. */
char *hl_format_bitstring(hl_dtype f, uint32_t bits, char *buf, size_t len);

/* Neighbouring representable values of a finite encoding (towards -inf and
 * +inf). Returns false when there is none (NaN, or past +-max / inf). */
bool hl_format_next_down(hl_dtype f, uint32_t bits, uint32_t *out);
bool hl_format_next_up(hl_dtype f, uint32_t bits, uint32_t *out);

#ifdef __cplusplus
}
#endif

#endif /* HL_FORMAT_H */
