/* tour_fp8.c — the tour's sixth demonstration: the narrow formats' largest
 * values (e4m3's 448, e5m2's 57344, e2m1's 6) and what happens past them,
 * then what a scale does to a tensor whose amax (1000) is beyond e4m3's
 * range: no scale, Transformer Engine's per-tensor scale 448 / amax, and one
 * MX block of fp4 with its E8M0 scale under OCP's FLOOR rule and the RCEIL
 * rule. The scales come from kernels/quantize_math.h (the rules the
 * quantizers use); every rounding to a narrow format is the probe kernels'
 * on each device. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/format.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"
#include "numerics/nx.h"
#include "numerics/tour.h"

static const char *const way_name[NX_FP8_WAYS] = {"e4m3", "e4m3-saturated", "e4m3-tensor-scale", "mxfp4-floor",
                                                  "mxfp4-rceil"};

static const hl_column tour_fp8_columns[] = {
    NX_DEVICE_COLUMN,
    {"way", "", HL_COL_TEXT, NULL,
     "how the tensor is stored: e4m3 (no scale; the format's overflow: NaN), e4m3-saturated (no scale, clamped to "
     "+-448), e4m3-tensor-scale (x times 448 / amax, saturating; Transformer Engine's rule), mxfp4-floor and "
     "mxfp4-rceil (e2m1 elements with the block's E8M0 scale: OCP MX's FLOOR rule, the RCEIL rule)",
     "numerics/tour_fp8.c: way_name"},
    {"element", "1", HL_COL_INT, NULL, "the element's index i, 0 to 31", "numerics/tour_fp8.c: tensor"},
    {"x", "1", HL_COL_REAL, "%.9g", "the element: +-1000 x 2^(-i/4) in fp32, signs alternating",
     "numerics/tour_fp8.c: tensor"},
    {"scale", "1", HL_COL_REAL, "%.9g", "what a code is multiplied by to decode it: 1, amax / 448 (fp32) or the E8M0 scale",
     "numerics/tour_fp8.c: nx_tour_fp8_run"},
    {"stored", "1", HL_COL_REAL, "%.17g", "the value stored and decoded (NaN: the format's NaN)",
     "numerics/tour_fp8.c: store"},
    {"rel_error", "1", HL_COL_REAL, "%.17g", "|stored - x| / |x| (NaN where stored is NaN)",
     "numerics/tour_fp8.c: nx_tour_fp8_write"},
};
const hl_schema nx_tour_fp8_schema = {
    "tour_fp8.csv", "halflab-numerics tour", "numerics/tour_fp8.c: nx_tour_fp8_write",
    "One row per device, way and element: a 32-element tensor with amax 1000 stored in e4m3 without a scale, with a "
    "per-tensor scale, and as one MXFP4 block with its E8M0 scale.",
    HL_SCHEMA_COLUMNS(tour_fp8_columns)};

/* +-1000 x 2^(-i/4): one MX block spanning 8 octaves, amax 1000 */
static void tensor(float *x) {
  for (int i = 0; i < NX_FP8_ELEMENTS; i++) x[i] = (float)((i & 1 ? -1000.0 : 1000.0) * exp2(-i / 4.0));
}

/* x[i] * factor (fp32) rounded to f on device d, each decoded and times decode (fp32) */
static void store(const nx_ctx *c, int d, hl_dtype f, hl_overflow ov, const float *x, float factor, float decode,
                  double *out) {
  float y[NX_FP8_ELEMENTS];
  uint32_t bits[NX_FP8_ELEMENTS];
  for (int i = 0; i < NX_FP8_ELEMENTS; i++) y[i] = x[i] * factor;
  c->k[d]->convert(f, ov, y, bits, NX_FP8_ELEMENTS);
  for (int i = 0; i < NX_FP8_ELEMENTS; i++) out[i] = (float)hl_format_decode(f, bits[i]) * decode;
}

static double worst_rel_error(const nx_tour_fp8 *t, int d, nx_fp8_way w) {
  double worst = 0;
  for (int i = 0; i < NX_FP8_ELEMENTS; i++) {
    double e = fabs(t->stored[d][w][i] - t->x[i]) / fabs(t->x[i]);
    if (e > worst) worst = e;
  }
  return worst;
}

static uint32_t convert1(const nx_ctx *c, int d, hl_dtype f, hl_overflow ov, float x) {
  uint32_t r;
  c->k[d]->convert(f, ov, &x, &r, 1);
  return r;
}

static void add_lines(demo *dm) {
  static const struct { const char *what; hl_dtype f; } lines[] = {
      {"448 in e4m3", HL_E4M3},
      {"464 in e4m3 (halfway to 480)", HL_E4M3},
      {"480 in e4m3", HL_E4M3},
      {"480 in e4m3 saturating", HL_E4M3},
      {"57344 in e5m2", HL_E5M2},
      {"61440 in e5m2 (halfway to 65536)", HL_E5M2},
      {"6 in e2m1", HL_E2M1},
      {"7 in e2m1", HL_E2M1},
      {"tensor amax 1000: 1000 in e4m3", HL_E4M3},
      {"per-tensor scale 448 / amax", HL_F32},
      {"1000 x scale in e4m3", HL_E4M3},
      {"decoded (/ scale)", HL_F32},
      {"worst rel. error: no scale (clamped)", HL_F32},
      {"worst rel. error: per-tensor scale", HL_F32},
      {"MXFP4 block E8M0 scale (FLOOR)", HL_E8M0},
      {"MXFP4 (FLOOR): 1000 decoded", HL_F32},
      {"MXFP4 block E8M0 scale (RCEIL)", HL_E8M0},
      {"MXFP4 (RCEIL): 1000 decoded", HL_F32},
  };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) nx_tour_add_line(dm, lines[i].what, lines[i].f);
}

static void write_text(const nx_ctx *c, demo *dm, const nx_tour_fp8 *t) {
  const int d = c->ndev - 1;
  char v[8][48];
  int nans = 0;
  for (int i = 0; i < NX_FP8_ELEMENTS; i++) nans += isnan(t->stored[d][NX_FP8_E4M3_RAW][i]);
  for (int i = 0; i < 8; i++) nx_show(hl_format_decode(dm->line[i].f, dm->line[i].bits[d]), v[i], sizeof v[i]);
  char floor_1000[48], rceil_1000[48];
  nx_show(t->stored[d][NX_FP8_MXFP4_FLOOR][0], floor_1000, sizeof floor_1000);
  nx_show(t->stored[d][NX_FP8_MXFP4_RCEIL][0], rceil_1000, sizeof rceil_1000);
  snprintf(dm->look, sizeof dm->look,
           "e4m3: 464 gives %s, 480 gives %s (%s saturating); e5m2: 61440 gives %s; e2m1: 7 gives %s. The tensor: %d of "
           "%d values are NaN in e4m3 without a scale; scaled by 448/1000 all are finite, worst error %.2g. MXFP4: "
           "FLOOR's scale 2^%d clips 1000 to %s; RCEIL's 2^%d gives %s",
           v[1], v[2], v[3], v[5], v[7], nans, NX_FP8_ELEMENTS, worst_rel_error(t, d, NX_FP8_E4M3_TENSOR),
           (int)t->mx_scale_code[NX_FP8_MXFP4_FLOOR] - 127, floor_1000, (int)t->mx_scale_code[NX_FP8_MXFP4_RCEIL] - 127,
           rceil_1000);
  static char why[600];
  char values[96] = "";
  for (uint32_t code = 0; code < 8; code++) { /* e2m1's non-negative codes */
    char s[16];
    snprintf(s, sizeof s, "%s%g", code ? ", " : "", hl_format_decode(HL_E2M1, code));
    strncat(values, s, sizeof values - strlen(values) - 1);
  }
  snprintf(why, sizeof why,
           "e4m3 has no inf: its one NaN code S.1111.111 takes 480's place, so 448 = 1.75 x 2^8 is its largest and "
           "from the midpoint 464 up values become NaN unless the conversion saturates (the recipes and PyTorch do). "
           "e5m2 keeps IEEE's inf past 57344 = 1.75 x 2^15. e2m1 holds only %s (and their negatives). A scale maps "
           "the amax onto the largest value: per tensor (Transformer Engine) or per block of 32 with a power of two "
           "(OCP MX's E8M0), whose FLOOR rule can clip the block's largest values",
           values);
  dm->why = why;
}

void nx_tour_fp8_run(const nx_ctx *c, demo *dm, nx_tour_fp8 *t) {
  dm->title = "FP8 and below: 448, 57344, 6, and what a scale does";
  dm->usual_form = "torch.tensor([448., 464., 480.]).to(torch.float8_e4m3fn)  ->  448, 448, 448 (PyTorch clamps)";
  add_lines(dm);
  tensor(t->x);
  float amax = 0;
  for (int i = 0; i < NX_FP8_ELEMENTS; i++) amax = fmaxf(amax, fabsf(t->x[i]));
  const hl_quant_spec tensor_spec = hl_quant_spec_make(HL_E4M3, HL_SCALE_TENSOR);
  t->tensor_scale = hl_quant_tensor_encode_scale(&tensor_spec, amax);
  const float tensor_decode = 1.0f / t->tensor_scale; /* the quantizer's block scale */
  hl_block_scale mx[NX_FP8_WAYS];
  memset(t->mx_scale_code, 0, sizeof t->mx_scale_code);
  for (int w = NX_FP8_MXFP4_FLOOR; w <= NX_FP8_MXFP4_RCEIL; w++) {
    const hl_quant_spec s = hl_quant_spec_make(HL_E2M1, w == NX_FP8_MXFP4_FLOOR ? HL_SCALE_MX_FLOOR : HL_SCALE_MX_RCEIL);
    mx[w] = hl_quant_mx_scale(&s, amax);
    t->mx_scale_code[w] = mx[w].code;
  }
  static const float plain[8] = {448.0f, 464.0f, 480.0f, 480.0f, 57344.0f, 61440.0f, 6.0f, 7.0f};
  for (int d = 0; d < c->ndev; d++) {
    for (int i = 0; i < 8; i++)
      dm->line[i].bits[d] = convert1(c, d, dm->line[i].f, i == 3 ? HL_OVERFLOW_SATURATE : HL_OVERFLOW_IEEE, plain[i]);
    store(c, d, HL_E4M3, HL_OVERFLOW_IEEE, t->x, 1.0f, 1.0f, t->stored[d][NX_FP8_E4M3_RAW]);
    store(c, d, HL_E4M3, HL_OVERFLOW_SATURATE, t->x, 1.0f, 1.0f, t->stored[d][NX_FP8_E4M3_SATURATED]);
    store(c, d, HL_E4M3, HL_OVERFLOW_SATURATE, t->x, t->tensor_scale, tensor_decode, t->stored[d][NX_FP8_E4M3_TENSOR]);
    for (int w = NX_FP8_MXFP4_FLOOR; w <= NX_FP8_MXFP4_RCEIL; w++)
      store(c, d, HL_E2M1, HL_OVERFLOW_SATURATE, t->x, mx[w].encode_factor, mx[w].decode, t->stored[d][w]);
    dm->line[8].bits[d] = convert1(c, d, HL_E4M3, HL_OVERFLOW_IEEE, t->x[0]);
    dm->line[9].bits[d] = hl_f32_bits(t->tensor_scale);
    dm->line[10].bits[d] = convert1(c, d, HL_E4M3, HL_OVERFLOW_SATURATE, t->x[0] * t->tensor_scale);
    dm->line[11].bits[d] = hl_f32_bits((float)t->stored[d][NX_FP8_E4M3_TENSOR][0]);
    dm->line[12].bits[d] = hl_f32_bits((float)worst_rel_error(t, d, NX_FP8_E4M3_SATURATED));
    dm->line[13].bits[d] = hl_f32_bits((float)worst_rel_error(t, d, NX_FP8_E4M3_TENSOR));
    dm->line[14].bits[d] = mx[NX_FP8_MXFP4_FLOOR].code;
    dm->line[15].bits[d] = hl_f32_bits((float)t->stored[d][NX_FP8_MXFP4_FLOOR][0]);
    dm->line[16].bits[d] = mx[NX_FP8_MXFP4_RCEIL].code;
    dm->line[17].bits[d] = hl_f32_bits((float)t->stored[d][NX_FP8_MXFP4_RCEIL][0]);
  }
  write_text(c, dm, t);
}

void nx_tour_fp8_write(const nx_ctx *c, const nx_tour_fp8 *t) {
  hl_csv *f = nx_csv_open(c, &nx_tour_fp8_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int w = 0; w < NX_FP8_WAYS; w++)
      for (int i = 0; i < NX_FP8_ELEMENTS; i++) {
        const double stored = t->stored[d][w][i];
        const double scale = w == NX_FP8_E4M3_TENSOR ? (double)(1.0f / t->tensor_scale)
                             : w >= NX_FP8_MXFP4_FLOOR ? hl_format_decode(HL_E8M0, t->mx_scale_code[w])
                                                       : 1.0;
        hl_row_begin(&r, &nx_tour_fp8_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_text(&r, "way", way_name[w]);
        hl_row_int(&r, "element", i);
        hl_row_real(&r, "x", t->x[i]);
        hl_row_real(&r, "scale", scale);
        hl_row_real(&r, "stored", stored);
        hl_row_real(&r, "rel_error", fabs(stored - t->x[i]) / fabs(t->x[i]));
        hl_csv_put(f, &r);
      }
  nx_csv_close(f);
}
