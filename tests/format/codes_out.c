/* codes_out.c — writes halflab's codes and decoded values as raw bytes on
 * stdout, for test_ml_dtypes.py to compare with ml_dtypes (the numerics
 * suite's exhaustive check against an independent reference).
 *
 *   codes_out encode FIRST COUNT BLOCK FORMAT:ROUNDING...
 *       for each BLOCK of the fp32 values whose bits are FIRST .. FIRST +
 *       COUNT - 1, in turn for each FORMAT:ROUNDING: the codes (one byte
 *       each) of that block rounded by FORMAT, ROUNDING, IEEE overflow
 *       (saturation for fp6 and fp4, which have no inf and no NaN),
 *       subnormals kept: formats/round.h's hl_round_bits, the function
 *       every conversion kernel calls (test_round checks that the CPU's array
 *       path gives its bits for every spec)
 *   codes_out encode-list FORMAT:ROUNDING
 *       the same for the fp32 bit patterns read from stdin (uint32, native order)
 *   codes_out decode FORMAT
 *       the fp32 bits (uint32, native order) of every code of FORMAT, by the
 *       CPU backend's decoding kernel
 * FORMAT: e4m3, e5m2, e2m3, e3m2, e2m1, e8m0 (any one-byte format);
 * ROUNDING: nearest-even, nearest-away, toward-zero, toward-positive,
 * toward-negative. Bad arguments: a one-line message and exit 2. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/format.h"
#include "formats/round.h"
#include "kernels/convert.h"

enum { BLOCK = 1 << 20 };

static void usage_error(const char *what) {
  fprintf(stderr, "codes_out: %s (codes_out encode FIRST COUNT BLOCK FORMAT:ROUNDING... | encode-list "
                  "FORMAT:ROUNDING | decode FORMAT)\n", what);
  exit(2);
}

static hl_dtype one_byte_format(const char *name, size_t length) {
  char text[16];
  snprintf(text, sizeof text, "%.*s", (int)(length < sizeof text ? length : sizeof text - 1), name);
  const hl_format_info *fi = hl_format_by_name(text);
  if (!fi || hl_format_code_bytes(fi->id) != 1) usage_error("FORMAT is not a one-byte format");
  return fi->id;
}

static hl_rounding deterministic_rounding(const char *name) {
  if (!name) usage_error("FORMAT:ROUNDING has no ROUNDING");
  for (int r = 0; r < HL_ROUNDING_STOCHASTIC; r++)
    if (!strcmp(name, hl_rounding_name((hl_rounding)r))) return (hl_rounding)r;
  usage_error("ROUNDING is not a deterministic rounding's name");
  return HL_ROUNDINGS;
}

/* "e2m1:nearest-even" */
static hl_round_spec spec_of(const char *text) {
  const char *colon = strchr(text, ':');
  const hl_dtype f = one_byte_format(text, colon ? (size_t)(colon - text) : strlen(text));
  return hl_round_spec_make(f, deterministic_rounding(colon ? colon + 1 : NULL), HL_OVERFLOW_IEEE, false);
}

static uint64_t number(const char *text, uint64_t limit, const char *what) {
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(text, &end, 0);
  if (errno || end == text || *end || text[0] == '-' || v > limit) usage_error(what);
  return v;
}

static void put(const void *data, size_t bytes) {
  if (fwrite(data, 1, bytes, stdout) != bytes) {
    fprintf(stderr, "codes_out: cannot write to stdout: %s\n", strerror(errno));
    exit(1);
  }
}

/* hl_round_bits on n consecutive inputs, with the spec's format and
 * rounding known to the compiler for the specs the test sweeps (3-8 times
 * faster than through a spec read at run time); any other spec through the
 * same function unspecialised. */
#define ENCODE(FORMAT, ROUNDING)                                                                  \
  __attribute__((flatten)) static void encode_##FORMAT##_##ROUNDING(uint32_t first, size_t n,     \
                                                                      uint8_t *out) {             \
    const hl_round_spec s = hl_round_spec_make(HL_##FORMAT, HL_ROUNDING_##ROUNDING, HL_OVERFLOW_IEEE, false); \
    for (size_t i = 0; i < n; i++) out[i] = (uint8_t)hl_round_bits(&s, hl_f32_from_bits(first + (uint32_t)i), 0); \
  }
ENCODE(E4M3, NEAREST_EVEN)
ENCODE(E5M2, NEAREST_EVEN)
ENCODE(E2M3, NEAREST_EVEN)
ENCODE(E3M2, NEAREST_EVEN)
ENCODE(E2M1, NEAREST_EVEN)
ENCODE(E8M0, NEAREST_AWAY)

static void encode(const hl_round_spec *s, uint32_t first, size_t n, uint8_t *out) {
  if (s->overflow == HL_OVERFLOW_IEEE && !s->flush_subnormals) {
    if (s->rounding == HL_ROUNDING_NEAREST_EVEN) switch (s->format) {
        case HL_E4M3: encode_E4M3_NEAREST_EVEN(first, n, out); return;
        case HL_E5M2: encode_E5M2_NEAREST_EVEN(first, n, out); return;
        case HL_E2M3: encode_E2M3_NEAREST_EVEN(first, n, out); return;
        case HL_E3M2: encode_E3M2_NEAREST_EVEN(first, n, out); return;
        case HL_E2M1: encode_E2M1_NEAREST_EVEN(first, n, out); return;
        default: break;
      }
    if (s->rounding == HL_ROUNDING_NEAREST_AWAY && s->format == HL_E8M0) {
      encode_E8M0_NEAREST_AWAY(first, n, out);
      return;
    }
  }
  for (size_t i = 0; i < n; i++) out[i] = (uint8_t)hl_round_bits(s, hl_f32_from_bits(first + (uint32_t)i), 0);
}

int main(int argc, char **argv) {
  enum { MAX_FORMATS = 8 };
  static uint8_t codes[BLOCK];
  static uint32_t bits[BLOCK];
  if (argc >= 6 && argc - 5 <= MAX_FORMATS && !strcmp(argv[1], "encode")) {
    const uint64_t first = number(argv[2], UINT32_MAX, "FIRST is not a number below 2^32");
    const uint64_t count = number(argv[3], (UINT64_C(1) << 32) - first, "COUNT goes past 2^32");
    const uint64_t block = number(argv[4], BLOCK, "BLOCK is not a number up to 2^20");
    if (!block) usage_error("BLOCK is 0");
    hl_round_spec specs[MAX_FORMATS];
    const int formats = argc - 5;
    for (int k = 0; k < formats; k++) specs[k] = spec_of(argv[5 + k]);
    for (uint64_t done = 0; done < count; done += block) {
      const size_t n = count - done < block ? (size_t)(count - done) : (size_t)block;
      for (int k = 0; k < formats; k++) {
        encode(&specs[k], (uint32_t)(first + done), n, codes);
        put(codes, n);
      }
    }
  } else if (argc == 3 && !strcmp(argv[1], "encode-list")) {
    const hl_round_spec s = spec_of(argv[2]);
    size_t n;
    while ((n = fread(bits, sizeof *bits, BLOCK, stdin)) > 0) {
      for (size_t i = 0; i < n; i++) encode(&s, bits[i], 1, codes + i);
      put(codes, n);
    }
  } else if (argc == 3 && !strcmp(argv[1], "decode")) {
    const hl_dtype f = one_byte_format(argv[2], strlen(argv[2]));
    const uint32_t count = 1u << hl_format_code_width(f);
    hl_backend_for(HL_DEVICE_CPU)->convert->decode_range(f, 0, count, bits);
    put(bits, count * sizeof *bits);
  } else {
    usage_error("unknown command or wrong number of arguments");
  }
  if (fflush(stdout)) {
    fprintf(stderr, "codes_out: cannot write to stdout: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}
