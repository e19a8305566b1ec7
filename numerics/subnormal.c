/* subnormal.c — `halflab-numerics subnormal`: the bottom of the range.
 * The ladder 2^-10 ... 2^-26 in fp16 and bf16, and each fp8, fp6 and fp4
 * format's own ladder down through its subnormals to zero (value, encoding,
 * class, relative error); loss scaling (which power-of-two scales lift gradients out
 * of fp16's subnormal and zero zones without overflowing); and whether
 * arithmetic flushes subnormals to zero (on a GPU: fp32 with and without
 * -ftz=true; on the CPU: with and without the FTZ/DAZ bits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/format.h"
#include "formats/philox.h"
#include "numerics/nx.h"

/* ----------------------------------------------------------- the tables -- */

static const hl_column ladder_columns[] = {
    NX_DEVICE_COLUMN,
    {"format", "", HL_COL_TEXT, NULL,
     "fp16, bf16, e4m3, e5m2, e2m3, e3m2 or e2m1 (e8m0 has no rows: no sign, no zero and no subnormals; below its "
     "smallest value 2^-127 every positive value rounds up to it)",
     "numerics/subnormal.c: ladder"},
    {"series", "", HL_COL_TEXT, NULL, "which rungs: 2^-k, 1.5*2^-k or 4/3*2^-k", "numerics/subnormal.c: rung"},
    {"k", "1", HL_COL_INT, NULL,
     "the rung's exponent: 10 to 26 for fp16 and bf16; for the others from 4 octaves above the smallest normal (or "
     "the largest power of two's exponent, if lower) to 2 octaves below the smallest subnormal",
     "numerics/subnormal.c: ladder_range"},
    {"x", "1", HL_COL_REAL, "%.17g", "the value stored (fp32)", "numerics/subnormal.c: rung"},
    {"stored", "1", HL_COL_REAL, "%.17g", "x as the probe kernel converted it to the format",
     "numerics/subnormal.c: ladder"},
    {"stored_hex", "", HL_COL_TEXT, NULL, "the stored encoding in hex, as wide as the format", "numerics/subnormal.c: ladder"},
    {"class", "", HL_COL_TEXT, NULL, "the stored value's class: zero, subnormal, normal, inf or nan",
     "numerics/subnormal.c: ladder"},
    {"rel_error", "1", HL_COL_REAL, "%.17g", "|stored - x| / x", "numerics/subnormal.c: rel_error"},
};
const hl_schema nx_subnormal_ladder_schema = {
    "subnormal_ladder.csv", "halflab-numerics subnormal", "numerics/subnormal.c: ladder",
    "One row per device, format, series and k: x = 2^-k, 1.5 x 2^-k or (4/3) x 2^-k stored in the format. e8m0 has "
    "no rows: it has no subnormals and no zero.",
    HL_SCHEMA_COLUMNS(ladder_columns)};

static const hl_column loss_scale_columns[] = {
    NX_DEVICE_COLUMN,
    {"format", "", HL_COL_TEXT, NULL, "the format the scaled gradient is stored in: fp16 or bf16",
     "numerics/subnormal.c: loss_scale"},
    {"gradient", "1", HL_COL_REAL, "%.9g", "the gradient, 1e-3 to 1e-10 (fp32)", "numerics/subnormal.c: loss_scale"},
    {"scale_log2", "1", HL_COL_INT, NULL, "s, where the loss scale S is 2^s (0 to 32)", "numerics/subnormal.c: loss_scale"},
    {"scale", "1", HL_COL_INT, NULL, "the loss scale S = 2^s", "numerics/subnormal.c: loss_scale"},
    {"scaled", "1", HL_COL_REAL, "%.17g", "gradient x S, computed in fp32 and rounded to the format by the probe kernel",
     "numerics/subnormal.c: scale_all"},
    {"scaled_hex", "", HL_COL_TEXT, NULL, "the scaled gradient's encoding in hex, as wide as the format",
     "numerics/subnormal.c: scale_all"},
    {"class", "", HL_COL_TEXT, NULL, "the scaled gradient's class: zero, subnormal, normal, inf or nan",
     "numerics/subnormal.c: loss_scale"},
    {"unscaled_rel_error", "1", HL_COL_REAL, "%.17g", "|scaled / S - gradient| / gradient: what storing it cost",
     "numerics/subnormal.c: rel_error"},
};
const hl_schema nx_loss_scale_schema = {
    "loss_scale.csv", "halflab-numerics subnormal", "numerics/subnormal.c: loss_scale",
    "One row per device, format, gradient and loss scale: the gradient multiplied by S and stored.",
    HL_SCHEMA_COLUMNS(loss_scale_columns)};

static const hl_column distribution_columns[] = {
    NX_DEVICE_COLUMN,
    {"scale_log2", "1", HL_COL_INT, NULL, "s, where the loss scale S is 2^s (0 to 32)",
     "numerics/subnormal.c: loss_scale_distribution"},
    {"scale", "1", HL_COL_INT, NULL, "the loss scale S = 2^s", "numerics/subnormal.c: loss_scale_distribution"},
    {"gradients", "1", HL_COL_INT, NULL, "how many gradients the sample holds (65536; 4096 with --quick)",
     "numerics/subnormal.c: loss_scale_distribution"},
    {"frac_zero", "1", HL_COL_REAL, "%.17g", "the share of the sample that is 0 in fp16 after scaling by S",
     "numerics/subnormal.c: loss_scale_distribution"},
    {"frac_subnormal", "1", HL_COL_REAL, "%.17g", "the share that is subnormal in fp16",
     "numerics/subnormal.c: loss_scale_distribution"},
    {"frac_normal", "1", HL_COL_REAL, "%.17g", "the share that is normal in fp16",
     "numerics/subnormal.c: loss_scale_distribution"},
    {"frac_overflow", "1", HL_COL_REAL, "%.17g", "the share that overflowed to inf",
     "numerics/subnormal.c: loss_scale_distribution"},
};
const hl_schema nx_loss_scale_distribution_schema = {
    "loss_scale_distribution.csv", "halflab-numerics subnormal", "numerics/subnormal.c: loss_scale_distribution",
    "One row per device and loss scale: a sample of gradients spread evenly in log2 over [2^-40, 2^-8], multiplied "
    "by S in fp16, by class.",
    HL_SCHEMA_COLUMNS(distribution_columns)};

static const hl_column ftz_columns[] = {
    NX_DEVICE_COLUMN,
    {"build", "", HL_COL_TEXT, NULL,
     "the arithmetic's variant on that device: on the CPU with and without the FTZ/DAZ bits, on a GPU fp32 with "
     "and without -ftz=true",
     "numerics/subnormal.c: flush_to_zero"},
    {"format", "", HL_COL_TEXT, NULL, "the format of the operation", "numerics/subnormal.c: flush_to_zero"},
    {"operation", "", HL_COL_TEXT, NULL, "the operation, whose exact result (or an input) is subnormal",
     "numerics/subnormal.c: flush_to_zero"},
    {"expected", "1", HL_COL_REAL, "%.17g", "the exact result rounded to the format", "numerics/subnormal.c: exact_of"},
    {"result", "1", HL_COL_REAL, "%.17g", "the result the probe kernel computed", "numerics/subnormal.c: flush_to_zero"},
    {"result_hex", "", HL_COL_TEXT, NULL, "the result's encoding in hex, as wide as the format",
     "numerics/subnormal.c: flush_to_zero"},
    {"flushed", "1", HL_COL_INT, NULL, "1 when the result is 0 and the expected one is not, else 0",
     "numerics/subnormal.c: flush_to_zero"},
};
const hl_schema nx_ftz_schema = {
    "ftz.csv", "halflab-numerics subnormal", "numerics/subnormal.c: flush_to_zero",
    "One row per device, variant and operation (a variant the device lacks has no rows): is a subnormal result kept "
    "or flushed to zero?",
    HL_SCHEMA_COLUMNS(ftz_columns)};

/* --------------------------------------------------------------- ladder -- */

#define NSERIES 3
#define MAX_RUNGS 24
static const char *series_name[NSERIES] = {"2^-k", "1.5*2^-k", "4/3*2^-k"};
/* every format with subnormals (e8m0 has none, nor a zero: it has no ladder) */
static const hl_dtype ladder_formats[] = {HL_F16, HL_BF16, HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1};
#define NLADDER ((int)(sizeof ladder_formats / sizeof ladder_formats[0]))
static const hl_dtype loss_scale_formats[2] = {HL_F16, HL_BF16};

static float rung(int series, int k) {
  const float m[NSERIES] = {1.0f, 1.5f, (float)(4.0 / 3.0)};
  return ldexpf(m[series], -k);
}

static double rel_error(double stored, double x) { return fabs(stored - x) / fabs(x); }

/* The rungs k_min ... k_max of f's ladder: fp16's 10 ... 26 for fp16 and bf16
 * (bf16 is normal all the way down there); for the others from 4 octaves
 * above the smallest normal (at most the largest power of two, so that
 * 1.5 x 2^-k stays finite) to 2 octaves below the smallest subnormal, which
 * is fp16's own range by the same rule. */
static void ladder_range(hl_dtype f, int *k_min, int *k_max) {
  const hl_format_info *fi = hl_format_get(f == HL_BF16 ? HL_F16 : f);
  *k_min = -fi->emin - 4 > -fi->emax ? -fi->emin - 4 : -fi->emax;
  *k_max = -ilogb(fi->min_subnormal) + 2;
  if (*k_max - *k_min + 1 > MAX_RUNGS) hl_fatal("%s's ladder has more than %d rungs", fi->long_name, MAX_RUNGS);
}

typedef struct {
  int k_min, k_max, nk;
  float x[NSERIES * MAX_RUNGS];                  /* x[s * nk + (k - k_min)] */
  uint32_t out[NX_MAX_DEVICES][NSERIES * MAX_RUNGS];
} ladder_rungs;

static void print_fp16_ladder(const nx_ctx *c, const ladder_rungs *h, const ladder_rungs *b) {
  nx_heading("subnormal ladder: 2^-10 ... 2^-26 in fp16 and bf16, on %s", nx_dev_label(c, 0));
  printf("  fp16 is normal down to 2^-14; below it the spacing stays 2^-24 (subnormal), so each step down\n"
         "  keeps one bit less; 2^-25 is half the smallest subnormal and rounds (a tie, to even) to 0.\n"
         "  bf16 has fp32's exponent range: all of these are normal there, with 8 significant bits.\n\n");
  printf("  %3s %-15s %-7s %-10s %-7s %-8s | %-15s %-9s %s\n", "k", "x = 2^-k", "fp16", "class", "bf16", "class",
         "(4/3)2^-k fp16", "rel.err", "bf16 rel.err");
  const int nk = h->nk;
  for (int k = h->k_min; k <= h->k_max; k++) {
    int i = k - h->k_min, j = 2 * nk + i; /* series 0 and series 2 */
    char xs[32], h16[16], hb[16], st[32];
    double v43 = hl_format_decode(HL_F16, h->out[0][j]), b43 = hl_format_decode(HL_BF16, b->out[0][j]);
    printf("  %3d %-15s %-7s %-10s %-7s %-8s | %-15s %-9.3g %.3g\n", k, nx_show(h->x[i], xs, sizeof xs),
           nx_hex(HL_F16, h->out[0][i], h16, sizeof h16), hl_fclass_name(hl_format_classify(HL_F16, h->out[0][i])),
           nx_hex(HL_BF16, b->out[0][i], hb, sizeof hb), hl_fclass_name(hl_format_classify(HL_BF16, b->out[0][i])),
           nx_show(v43, st, sizeof st), rel_error(v43, h->x[j]), rel_error(b43, h->x[j]));
  }
  /* the ties, read from the 1.5 * 2^-k series */
  char a[32], t[32];
  double r25 = hl_format_decode(HL_F16, h->out[0][nk + 25 - h->k_min]);
  double r24 = hl_format_decode(HL_F16, h->out[0][nk + 24 - h->k_min]);
  printf("\n  Relative error doubles with each step below 2^-14 (the (4/3)2^-k column) until it reaches 1/2,\n"
         "  then values round to 0 (relative error 1). Ties: 3*2^-26 = 1.5*2^-25 rounds to %s;\n"
         "  3*2^-25 = 1.5*2^-24 lies halfway between 2^-24 and 2^-23 and rounds to the even %s.\n",
         nx_pow2(r25, a, sizeof a), nx_pow2(r24, t, sizeof t));
}

/* One line per narrow format: where its powers of two turn subnormal and
 * where they reach zero, read from the classes the kernel's codes have. */
static void print_narrow_ladders(const ladder_rungs *lr) {
  printf("\n  The fp8, fp6 and fp4 formats, x = 2^-k (each subnormal step keeps one bit less; the formats\n"
         "  have 3, 2 or 1 mantissa bits, so as many subnormal steps):\n");
  printf("  %-6s %-22s %-26s %-20s %s\n", "format", "last normal 2^-k", "subnormal 2^-k", "first 2^-k stored as 0",
         "(4/3)2^-k rel.err at the last subnormal");
  for (int fi = 2; fi < NLADDER; fi++) {
    const hl_dtype f = ladder_formats[fi];
    const ladder_rungs *r = &lr[fi];
    int last_normal = 0, first_sub = 0, last_sub = 0, first_zero = 0;
    for (int k = r->k_min; k <= r->k_max; k++) {
      hl_fclass cl = hl_format_classify(f, r->out[0][k - r->k_min]);
      if (cl == HL_CLASS_NORMAL) last_normal = k;
      if (cl == HL_CLASS_SUBNORMAL && !first_sub) first_sub = k;
      if (cl == HL_CLASS_SUBNORMAL) last_sub = k;
      if (cl == HL_CLASS_ZERO && !first_zero) first_zero = k;
    }
    char ln[24], sb[80], fz[24], e[24];
    snprintf(ln, sizeof ln, "2^%d", -last_normal);
    const int steps = last_sub - first_sub + 1;
    if (steps == 1) snprintf(sb, sizeof sb, "2^%d (1 step)", -first_sub);
    else snprintf(sb, sizeof sb, "2^%d ... 2^%d (%d steps)", -first_sub, -last_sub, steps);
    snprintf(fz, sizeof fz, "2^%d", -first_zero);
    const int j = 2 * r->nk + (last_sub - r->k_min);
    snprintf(e, sizeof e, "%.3g", rel_error(hl_format_decode(f, r->out[0][j]), r->x[j]));
    printf("  %-6s %-22s %-26s %-20s %s\n", hl_dtype_format_name(f), ln, sb, fz, e);
  }
  printf("  e8m0 (the MX block scale) has no ladder: no sign, no zero and no subnormals; 2^-127 is its\n"
         "  smallest value and every smaller positive value rounds up to it.\n");
}

static void write_ladders(const nx_ctx *c, const ladder_rungs *lr) {
  hl_csv *f = nx_csv_open(c, &nx_subnormal_ladder_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < NLADDER; fi++)
      for (int s = 0; s < NSERIES; s++)
        for (int k = lr[fi].k_min; k <= lr[fi].k_max; k++) {
          const ladder_rungs *l = &lr[fi];
          int i = s * l->nk + (k - l->k_min);
          hl_dtype fm = ladder_formats[fi];
          double v = hl_format_decode(fm, l->out[d][i]);
          char hex[16];
          hl_row_begin(&r, &nx_subnormal_ladder_schema);
          hl_row_text(&r, "device", nx_dev_name(c, d));
          hl_row_text(&r, "format", hl_dtype_format_name(fm));
          hl_row_text(&r, "series", series_name[s]);
          hl_row_int(&r, "k", k);
          hl_row_real(&r, "x", (double)l->x[i]);
          hl_row_real(&r, "stored", v);
          hl_row_text(&r, "stored_hex", nx_hex(fm, l->out[d][i], hex, sizeof hex));
          hl_row_text(&r, "class", hl_fclass_name(hl_format_classify(fm, l->out[d][i])));
          hl_row_real(&r, "rel_error", rel_error(v, l->x[i]));
          hl_csv_put(f, &r);
        }
  nx_csv_close(f);
}

static void ladder(const nx_ctx *c) {
  ladder_rungs lr[NLADDER];
  long bad[NX_MAX_DEVICES] = {0}, total = 0;
  for (int fi = 0; fi < NLADDER; fi++) {
    ladder_rungs *l = &lr[fi];
    ladder_range(ladder_formats[fi], &l->k_min, &l->k_max);
    l->nk = l->k_max - l->k_min + 1;
    for (int s = 0; s < NSERIES; s++)
      for (int k = l->k_min; k <= l->k_max; k++) l->x[s * l->nk + (k - l->k_min)] = rung(s, k);
    for (int d = 0; d < c->ndev; d++)
      c->k[d]->convert(ladder_formats[fi], HL_OVERFLOW_IEEE, l->x, l->out[d], (size_t)NSERIES * l->nk);
    for (int d = 1; d < c->ndev; d++)
      for (int i = 0; i < NSERIES * l->nk; i++) bad[d] += l->out[d][i] != l->out[0][i];
    total += NSERIES * l->nk;
  }
  print_fp16_ladder(c, &lr[0], &lr[1]);
  print_narrow_ladders(lr);
  for (int d = 1; d < c->ndev; d++) nx_report_agreement(c, d, "the ladders", bad[d], total);
  write_ladders(c, lr);
}

/* --------------------------------------------------------- loss scaling -- */

#define S_MAX 32 /* scales 2^0 ... 2^32 */
#define NS (S_MAX + 1)
#define NGRAD 8
static const float gradients[NGRAD] = {1e-3f, 1e-4f, 1e-5f, 1e-6f, 1e-7f, 1e-8f, 1e-9f, 1e-10f};

/* g * S computed in fp32 (exact: S is a power of two) and rounded to fmt,
 * for every gradient and every scale. out[g * NS + s]. */
static void scale_all(const hl_probe_kernels *k, hl_dtype fmt, const float *g, size_t ng, uint32_t *out) {
  float *a = malloc(sizeof(float) * ng * NS), *b = malloc(sizeof(float) * ng * NS);
  if (!a || !b) hl_fatal("out of memory");
  for (size_t i = 0; i < ng; i++)
    for (int s = 0; s < NS; s++) a[i * NS + s] = g[i], b[i * NS + s] = ldexpf(1.0f, s);
  k->arith(HL_ARITH_MUL, HL_ROUND_VIA_FP32, fmt, a, b, out, ng * NS);
  free(a), free(b);
}

static void loss_scale(const nx_ctx *c) {
  uint32_t out[NX_MAX_DEVICES][2][NGRAD * NS];
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < 2; fi++) scale_all(c->k[d], loss_scale_formats[fi], gradients, NGRAD, out[d][fi]);

  nx_heading("loss scaling: which scales S = 2^s lift a gradient into fp16's normal range, on %s", nx_dev_label(c, 0));
  printf("  Scaling the loss by S scales every gradient by S; the optimizer divides by S again in fp32.\n\n");
  printf("  %-9s %-32s %-18s %-14s %s\n", "gradient", "in fp16 at S = 1", "normal from S =", "inf from S =",
         "bf16 at S = 1");
  for (int g = 0; g < NGRAD; g++) {
    const uint32_t *o = &out[0][0][g * NS];
    int first_normal = -1, first_inf = -1;
    for (int s = 0; s < NS; s++) {
      hl_fclass cl = hl_format_classify(HL_F16, o[s]);
      if (cl == HL_CLASS_NORMAL && first_normal < 0) first_normal = s;
      if (cl == HL_CLASS_INF && first_inf < 0) first_inf = s;
    }
    char gs[24], at1[64], v[32], from[24] = "beyond 2^32", inf[24] = "beyond 2^32";
    snprintf(at1, sizeof at1, "%s (%s)", nx_show(hl_format_decode(HL_F16, o[0]), v, sizeof v),
             hl_fclass_name(hl_format_classify(HL_F16, o[0])));
    if (first_normal >= 0) snprintf(from, sizeof from, "2^%d", first_normal);
    if (first_inf >= 0) snprintf(inf, sizeof inf, "2^%d", first_inf);
    snprintf(gs, sizeof gs, "%g", gradients[g]);
    printf("  %-9s %-32s %-18s %-14s %s\n", gs, at1, from, inf,
           hl_fclass_name(hl_format_classify(HL_BF16, out[0][1][g * NS])));
  }
  for (int d = 1; d < c->ndev; d++) {
    long bad = 0;
    for (int fi = 0; fi < 2; fi++)
      for (int i = 0; i < NGRAD * NS; i++) bad += out[d][fi][i] != out[0][fi][i];
    nx_report_agreement(c, d, "the loss-scale table", bad, 2L * NGRAD * NS);
  }

  hl_csv *f = nx_csv_open(c, &nx_loss_scale_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < 2; fi++)
      for (int g = 0; g < NGRAD; g++)
        for (int s = 0; s < NS; s++) {
          hl_dtype fm = loss_scale_formats[fi];
          uint32_t bits = out[d][fi][g * NS + s];
          double v = hl_format_decode(fm, bits), unscaled = ldexp(v, -s);
          char hex[16];
          hl_row_begin(&r, &nx_loss_scale_schema);
          hl_row_text(&r, "device", nx_dev_name(c, d));
          hl_row_text(&r, "format", hl_dtype_format_name(fm));
          hl_row_real(&r, "gradient", gradients[g]);
          hl_row_int(&r, "scale_log2", s);
          hl_row_int(&r, "scale", INT64_C(1) << s);
          hl_row_real(&r, "scaled", v);
          hl_row_text(&r, "scaled_hex", nx_hex(fm, bits, hex, sizeof hex));
          hl_row_text(&r, "class", hl_fclass_name(hl_format_classify(fm, bits)));
          hl_row_real(&r, "unscaled_rel_error", rel_error(unscaled, gradients[g]));
          hl_csv_put(f, &r);
        }
  nx_csv_close(f);
}

/* A sample of gradient magnitudes spread evenly in log2 over [2^-40, 2^-8]:
 * wider than fp16's normal window (2^-14 ... 65504, about 30 octaves), as the
 * activation gradients of real networks are (Micikevicius et al., "Mixed
 * precision training", 2018). */
#define GRAD_LO (-40.0)
#define GRAD_HI (-8.0)
#define GRAD_STREAM 0x4c53u /* "LS" */

static void loss_scale_distribution(const nx_ctx *c) {
  const size_t n = c->quick ? 4096 : 65536;
  float *g = malloc(sizeof(float) * n);
  uint32_t *out = malloc(sizeof(uint32_t) * n * NS);
  double (*frac)[NS][4] = malloc(sizeof(double) * NX_MAX_DEVICES * NS * 4); /* zero, subnormal, normal, overflow */
  if (!g || !out || !frac) hl_fatal("out of memory");
  for (size_t i = 0; i < n; i++)
    g[i] = (float)exp2(GRAD_LO + (GRAD_HI - GRAD_LO) * hl_u32_to_unit_float(hl_philox_u32(c->seed, GRAD_STREAM, i)));
  for (int d = 0; d < c->ndev; d++) {
    scale_all(c->k[d], HL_F16, g, n, out);
    memset(frac[d], 0, sizeof frac[d]);
    for (size_t i = 0; i < n; i++)
      for (int s = 0; s < NS; s++) {
        hl_fclass cl = hl_format_classify(HL_F16, out[i * NS + s]);
        int col = cl == HL_CLASS_ZERO ? 0 : cl == HL_CLASS_SUBNORMAL ? 1 : cl == HL_CLASS_NORMAL ? 2 : 3;
        frac[d][s][col] += 1.0 / (double)n;
      }
  }

  printf("\n  %zu gradients spread evenly in log2 over [2^-40, 2^-8] (seed %llu), multiplied by S in fp16:\n",
         n, (unsigned long long)c->seed);
  printf("  %-8s %9s %11s %9s %9s\n", "S", "zero", "subnormal", "normal", "inf");
  int best = 0;
  for (int s = 0; s < NS; s++)
    if (frac[0][s][3] == 0) best = s;
  for (int s = 0; s < NS; s++) {
    if (s % 4 && s != best && s != best + 1) continue;
    char sl[16];
    snprintf(sl, sizeof sl, "2^%d", s);
    printf("  %-8s %8.3f%% %10.3f%% %8.3f%% %8.3f%%%s\n", sl, 100 * frac[0][s][0], 100 * frac[0][s][1],
           100 * frac[0][s][2], 100 * frac[0][s][3],
           s == best ? "   <- largest S without overflow" : s == 16 ? "   <- PyTorch GradScaler's initial scale" : "");
  }
  printf("  No scale fits all 32 octaves into fp16's 30: raise S until something overflows, then back off,\n"
         "  which is what a dynamic loss scaler does (skip the step on inf, halve S; grow it when calm).\n");
  for (int d = 1; d < c->ndev; d++) {
    long bad = 0;
    for (int s = 0; s < NS; s++)
      for (int col = 0; col < 4; col++) bad += frac[d][s][col] != frac[0][s][col];
    nx_report_agreement(c, d, "the gradient sample's classes", bad, NS * 4L);
  }

  hl_csv *f = nx_csv_open(c, &nx_loss_scale_distribution_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int s = 0; s < NS; s++) {
      hl_row_begin(&r, &nx_loss_scale_distribution_schema);
      hl_row_text(&r, "device", nx_dev_name(c, d));
      hl_row_int(&r, "scale_log2", s);
      hl_row_int(&r, "scale", INT64_C(1) << s);
      hl_row_int(&r, "gradients", (int64_t)n);
      hl_row_real(&r, "frac_zero", frac[d][s][0]);
      hl_row_real(&r, "frac_subnormal", frac[d][s][1]);
      hl_row_real(&r, "frac_normal", frac[d][s][2]);
      hl_row_real(&r, "frac_overflow", frac[d][s][3]);
      hl_csv_put(f, &r);
    }
  nx_csv_close(f);
  free(g), free(out), free(frac);
}

/* ------------------------------------------------------- flush to zero -- */

typedef struct {
  const char *label;
  hl_dtype f;
  hl_arith_op op;
  double a, b;
} ftz_case;

static const ftz_case ftz_cases[] = {
    {"2^-63 * 2^-64", HL_F32, HL_ARITH_MUL, 0x1p-63, 0x1p-64},
    {"1.5*2^-126 - 2^-126", HL_F32, HL_ARITH_SUB, 0x1.8p-126, 0x1p-126},
    {"2^-130 * 1", HL_F32, HL_ARITH_MUL, 0x1p-130, 1.0},
    {"2^-126 / 2", HL_F32, HL_ARITH_DIV, 0x1p-126, 2.0},
    {"2^-14 * 2^-10", HL_F16, HL_ARITH_MUL, 0x1p-14, 0x1p-10},
    {"1.5*2^-14 - 2^-14", HL_F16, HL_ARITH_SUB, 0x1.8p-14, 0x1p-14},
    {"2^-24 * 1", HL_F16, HL_ARITH_MUL, 0x1p-24, 1.0},
};
#define NFTZ ((int)(sizeof ftz_cases / sizeof ftz_cases[0]))

static double exact_of(const ftz_case *k) {
  double r = k->op == HL_ARITH_MUL ? k->a * k->b : k->op == HL_ARITH_SUB ? k->a - k->b : k->a / k->b;
  return hl_format_round(k->f, r, HL_OVERFLOW_IEEE);
}

static void flush_to_zero(const nx_ctx *c) {
  hl_subnormal_case cases[NFTZ];
  for (int i = 0; i < NFTZ; i++) {
    cases[i].format = ftz_cases[i].f;
    cases[i].op = ftz_cases[i].op;
    cases[i].a_bits = hl_format_encode(ftz_cases[i].f, (float)ftz_cases[i].a, HL_OVERFLOW_IEEE);
    cases[i].b_bits = hl_format_encode(ftz_cases[i].f, (float)ftz_cases[i].b, HL_OVERFLOW_IEEE);
  }
  uint32_t out[NX_MAX_DEVICES][2][NFTZ];
  bool have[NX_MAX_DEVICES][2];
  for (int d = 0; d < c->ndev; d++)
    for (int v = 0; v < 2; v++) have[d][v] = c->k[d]->subnormals(v, cases, out[d][v], NFTZ);

  hl_csv *f = nx_csv_open(c, &nx_ftz_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++) {
    const char *const *names = c->k[d]->variant_names;
    nx_heading("flush to zero: are subnormal results kept? on %s", nx_dev_label(c, d));
    printf("  %-22s %-6s %-9s %-27s %s\n", "operation", "format", "exact", names[0], names[1]);
    for (int i = 0; i < NFTZ; i++) {
      char ex[24], r[2][48];
      double want = exact_of(&ftz_cases[i]);
      for (int v = 0; v < 2; v++) {
        if (!have[d][v]) {
          snprintf(r[v], sizeof r[v], "not available here");
          continue;
        }
        double got = hl_format_decode(ftz_cases[i].f, out[d][v][i]);
        char g[24];
        snprintf(r[v], sizeof r[v], "%s%s", nx_pow2(got, g, sizeof g), got == 0 && want != 0 ? " (flushed)" : "");
      }
      printf("  %-22s %-6s %-9s %-27s %s\n", ftz_cases[i].label, hl_dtype_format_name(ftz_cases[i].f),
             nx_pow2(want, ex, sizeof ex), r[0], r[1]);
    }
    for (int v = 0; v < 2; v++) {
      if (!have[d][v]) continue;
      for (int i = 0; i < NFTZ; i++) {
        double want = exact_of(&ftz_cases[i]), got = hl_format_decode(ftz_cases[i].f, out[d][v][i]);
        char hex[16];
        hl_row_begin(&r, &nx_ftz_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_text(&r, "build", names[v]);
        hl_row_text(&r, "format", hl_dtype_format_name(ftz_cases[i].f));
        hl_row_text(&r, "operation", ftz_cases[i].label);
        hl_row_real(&r, "expected", want);
        hl_row_real(&r, "result", got);
        hl_row_text(&r, "result_hex", nx_hex(ftz_cases[i].f, out[d][v][i], hex, sizeof hex));
        hl_row_bool(&r, "flushed", got == 0 && want != 0);
        hl_csv_put(f, &r);
      }
    }
  }
  printf("\n  Flushing makes a != b while a - b == 0 (second line). On a GPU, -ftz=true (implied by\n"
         "  --use_fast_math) flushes fp32 subnormal inputs and results; fp16 arithmetic keeps its\n"
         "  subnormals, which is where fp16 gradients below 2^-14 live.\n");
  nx_csv_close(f);
}

int nx_subnormal(const nx_ctx *c) {
  ladder(c);
  loss_scale(c);
  loss_scale_distribution(c);
  flush_to_zero(c);
  return 0;
}
