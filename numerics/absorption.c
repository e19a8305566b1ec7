/* absorption.c — `halflab-numerics absorption`: updates too small to move a
 * number. 1 + 0.0001; the threshold at 1 in each format (fp32, fp16, bf16 and
 * the fp8, fp6, fp4 and e8m0 formats); a sweep of updates u from 2^-30 to 1
 * (fl(1 + u) - 1 against u) in the same formats; the lost-update
 * experiment (10000 updates of 1e-4 to a weight of 1, five ways); and the
 * harmonic series, which stops growing in every format. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/format.h"
#include "formats/half.h"
#include "numerics/nx.h"

static const hl_dtype arith_formats[] = {HL_F32, HL_F16, HL_BF16};
#define NARITH 3
/* 1 + u in every format: the narrow ones have no hardware addition; theirs is
 * the exact sum rounded once (kernels/probe_math.h: hl_probe_native_op) */
static const hl_dtype absorb_formats[] = {HL_F32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
#define NABSORB 9

/* ----------------------------------------------------------- the tables -- */

static const hl_column absorption_columns[] = {
    NX_DEVICE_COLUMN,
    {"case", "", HL_COL_TEXT, NULL,
     "the addition: 1+0.0001; 1+u (u = half the spacing at 1: a tie); 1+next_above_u (the format's next value above "
     "u); 1+(2^-11+2^-34) (double "
     "rounding); 1.9+1.9/2100 (the ratio rule)",
     "numerics/absorption.c: build_cases"},
    {"format", "", HL_COL_TEXT, NULL,
     "the format the addition is done in: fp32, fp16, bf16, e4m3, e5m2, e2m3, e3m2, e2m1, e8m0 (the last six have no "
     "hardware addition: their sum is the exact sum rounded once)",
     "numerics/absorption.c: build_cases"},
    {"rounding", "", HL_COL_TEXT, NULL,
     "native: operands and sum in the format; fp32_then_round: the sum rounded to fp32, then to the format; "
     "rounded_once: the exact sum rounded once to the format",
     "numerics/absorption.c: mode_name"},
    {"a", "1", HL_COL_REAL, "%.9g", "the first operand as given (fp32)", "numerics/absorption.c: build_cases"},
    {"b", "1", HL_COL_REAL, "%.9g", "the second operand as given (fp32)", "numerics/absorption.c: build_cases"},
    {"b_stored", "1", HL_COL_REAL, "%.17g", "b as the addition uses it: rounded to the format when native, else as given",
     "numerics/absorption.c: view_case"},
    {"result", "1", HL_COL_REAL, "%.17g", "a + b as the probe kernel computed it", "numerics/absorption.c: run_cases"},
    {"result_hex", "", HL_COL_TEXT, NULL, "the result's encoding in hex, as wide as the format",
     "numerics/absorption.c: run_cases"},
    {"change", "1", HL_COL_REAL, "%.17g", "result minus a as the addition uses it: how far the addition moved a",
     "numerics/absorption.c: view_case"},
};
const hl_schema nx_absorption_schema = {
    "absorption.csv", "halflab-numerics absorption", "numerics/absorption.c: write_cases",
    "One row per device and addition: small numbers added to 1 (and to 1.9), and what the sum keeps of them.",
    HL_SCHEMA_COLUMNS(absorption_columns)};

static const hl_column sweep_columns[] = {
    NX_DEVICE_COLUMN,
    {"format", "", HL_COL_TEXT, NULL,
     "the format of the addition 1 + u: fp32, fp16, bf16, e4m3, e5m2, e2m3, e3m2, e2m1, e8m0 (e8m0: powers of two "
     "only, so 1 + u is 1 or 2)",
     "numerics/absorption.c: sweep"},
    {"update", "1", HL_COL_REAL, "%.9g", "the intended update u, from 2^-30 to 1 (fp32)", "numerics/absorption.c: sweep"},
    {"update_stored", "1", HL_COL_REAL, "%.17g", "u rounded to the format", "numerics/absorption.c: sweep"},
    {"effective_update", "1", HL_COL_REAL, "%.17g", "fl(1 + u) - 1: what the addition kept of u (0: lost entirely)",
     "numerics/absorption.c: sweep"},
};
const hl_schema nx_absorption_sweep_schema = {
    "absorption_sweep.csv", "halflab-numerics absorption", "numerics/absorption.c: sweep",
    "One row per device, format and update u: 1 + u in the format, against u.", HL_SCHEMA_COLUMNS(sweep_columns)};

static const hl_column lost_update_columns[] = {
    NX_DEVICE_COLUMN,
    {"strategy", "", HL_COL_TEXT, NULL,
     "how the weight is held: fp16, bf16, fp32_master (fp16 updates), fp16_kahan (Kahan compensation), "
     "fp16_stochastic (stochastic rounding)",
     "numerics/absorption.c: lost_update"},
    {"step", "1", HL_COL_INT, NULL, "updates applied so far (every 100th step is written)",
     "numerics/absorption.c: lost_update"},
    {"weight", "1", HL_COL_REAL, "%.17g", "the weight after that many updates of 0.0001, from 1",
     "numerics/absorption.c: lost_update"},
    {"exact_weight", "1", HL_COL_REAL, "%.17g", "1 + step x the update as the strategy stores it, computed in double",
     "numerics/absorption.c: lost_update"},
};
const hl_schema nx_lost_update_schema = {
    "lost_update.csv", "halflab-numerics absorption", "numerics/absorption.c: lost_update",
    "One row per device, strategy and sampled step of the lost-update experiment: w = 1, then 10000 updates of 0.0001.",
    HL_SCHEMA_COLUMNS(lost_update_columns)};

static const hl_column harmonic_columns[] = {
    NX_DEVICE_COLUMN,
    {"format", "", HL_COL_TEXT, NULL, "the format of the running sum", "numerics/absorption.c: harmonic"},
    {"stall_n", "1", HL_COL_INT, NULL,
     "the first n whose term 1/n left the sum unchanged (empty: none within the terms tried)",
     "numerics/absorption.c: harmonic"},
    {"terms", "1", HL_COL_INT, NULL, "terms added: stall_n - 1, or all the terms tried", "numerics/absorption.c: harmonic"},
    {"sum", "1", HL_COL_REAL, "%.17g", "the sum in the format", "numerics/absorption.c: harmonic"},
    {"sum_hex", "", HL_COL_TEXT, NULL, "the sum's encoding in hex, as wide as the format", "numerics/absorption.c: harmonic"},
    {"true_sum", "1", HL_COL_REAL, "%.17g", "the same terms summed in double, smallest first",
     "numerics/absorption.c: harmonic"},
};
const hl_schema nx_harmonic_schema = {
    "harmonic.csv", "halflab-numerics absorption", "numerics/absorption.c: harmonic",
    "One row per device and format: the harmonic series 1 + 1/2 + 1/3 + ... summed until a term no longer moves the sum.",
    HL_SCHEMA_COLUMNS(harmonic_columns)};

static const char *mode_name(hl_arith_mode m) {
  return m == HL_ROUND_NATIVE ? "native" : m == HL_ROUND_VIA_FP32 ? "fp32_then_round" : "rounded_once";
}

/* ---------------------------------------------------------- the cases -- */

typedef struct {
  const char *id;
  hl_dtype f;
  hl_arith_mode mode;
  float a, b;
} add_case;

#define MAX_CASES 32

static int build_cases(add_case *cs) {
  int n = 0;
  for (int i = 0; i < NABSORB; i++) cs[n++] = (add_case){"1+0.0001", absorb_formats[i], HL_ROUND_NATIVE, 1.0f, 0.0001f};
  for (int i = 0; i < NABSORB; i++) {
    const hl_format_info *fi = hl_format_get(absorb_formats[i]);
    float u = (float)fi->unit_roundoff;
    /* a tie: to the even code, 1 (e8m0: 2, whose code 128 is the even one) */
    cs[n++] = (add_case){"1+u", absorb_formats[i], HL_ROUND_NATIVE, 1.0f, u};
    /* the format's next value above u (u itself, or 0 where u is below the smallest subnormal, plus one code) */
    const float next = (float)hl_format_decode(fi->id, hl_format_encode(fi->id, u, HL_OVERFLOW_IEEE) + 1u);
    cs[n++] = (add_case){"1+next_above_u", absorb_formats[i], HL_ROUND_NATIVE, 1.0f, next};
  }
  const float trap = 0x1p-11f + 0x1p-34f; /* an fp32 value just above fp16's half-spacing at 1 */
  cs[n++] = (add_case){"1+(2^-11+2^-34)", HL_F16, HL_ROUND_VIA_FP32, 1.0f, trap};
  cs[n++] = (add_case){"1+(2^-11+2^-34)", HL_F16, HL_ROUND_ONCE, 1.0f, trap};
  cs[n++] = (add_case){"1.9+1.9/2100", HL_F16, HL_ROUND_NATIVE, 1.9f, 1.9f / 2100.0f};
  return n;
}

typedef struct {
  double a, b_stored, result, change;
  uint32_t bits;
} add_view;

static add_view view_case(const add_case *k, uint32_t bits) {
  add_view v;
  bool native = k->mode == HL_ROUND_NATIVE;
  v.a = hl_format_stored(k->f, k->a);
  v.b_stored = native ? hl_format_stored(k->f, k->b) : (double)k->b;
  v.bits = bits;
  v.result = hl_format_decode(k->f, bits);
  v.change = v.result - (native ? v.a : (double)k->a);
  return v;
}

static void run_cases(const nx_ctx *c, add_case *cs, int n, uint32_t bits[NX_MAX_DEVICES][MAX_CASES]) {
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < n; i++) c->k[d]->arith(HL_ARITH_ADD, cs[i].mode, cs[i].f, &cs[i].a, &cs[i].b, &bits[d][i], 1);
}

static void print_cases(const nx_ctx *c, const add_case *cs, int n, uint32_t bits[NX_MAX_DEVICES][MAX_CASES]) {
  char s1[64], s2[64], s3[64], s4[64];
  nx_heading("absorption: 1 + 0.0001 (the classic absorption example), on %s", nx_dev_label(c, 0));
  printf("  %-6s %-27s %-26s %s\n", "format", "0.0001 is stored as", "1 + that", "why");
  for (int i = 0; i < n; i++) {
    if (strcmp(cs[i].id, "1+0.0001")) continue;
    add_view v = view_case(&cs[i], bits[0][i]);
    const hl_format_info *fi = hl_format_get(cs[i].f);
    uint32_t b16 = hl_format_encode(cs[i].f, cs[i].b, HL_OVERFLOW_IEEE);
    char stored[64], sum[64];
    snprintf(stored, sizeof stored, "%s (%s)", nx_show(v.b_stored, s1, sizeof s1), nx_hex(cs[i].f, b16, s2, sizeof s2));
    snprintf(sum, sizeof sum, "%s (%s)", nx_show(v.result, s3, sizeof s3), nx_hex(cs[i].f, v.bits, s4, sizeof s4));
    printf("  %-6s %-27s %-26s spacing at 1 is %s = %.3g: 0.0001 is %s half of it\n", hl_dtype_format_name(fi->id), stored, sum,
           nx_pow2(fi->epsilon, s1, sizeof s1), fi->epsilon, v.b_stored < fi->epsilon / 2 ? "less than" : "more than");
  }
  printf("\n  The threshold at 1: an update u survives 1 + u only above half the spacing (u > epsilon/2).\n");
  printf("  %-6s %-36s %s\n", "format", "1 + epsilon/2 (a tie, to even)", "1 + the next value above epsilon/2");
  for (int i = 0; i < n; i++) {
    if (strcmp(cs[i].id, "1+u")) continue;
    add_view tie = view_case(&cs[i], bits[0][i]), above = view_case(&cs[i + 1], bits[0][i + 1]);
    char l[96], r[96];
    snprintf(l, sizeof l, "1 + %s = %s", nx_pow2(tie.b_stored, s1, sizeof s1), nx_show(tie.result, s2, sizeof s2));
    snprintf(r, sizeof r, "1 + %s (%s) = %s", nx_show(above.b_stored, s3, sizeof s3),
             nx_hex(cs[i].f, hl_format_encode(cs[i].f, cs[i + 1].b, HL_OVERFLOW_IEEE), s4, sizeof s4),
             nx_show(above.result, s1, sizeof s1));
    printf("  %-6s %-36s %s\n", hl_dtype_format_name(cs[i].f), l, r);
  }
  char below[96] = "";
  for (int i = 0; i < n; i++)
    if (!strcmp(cs[i].id, "1+u") && view_case(&cs[i], bits[0][i]).b_stored == 0)
      snprintf(below + strlen(below), sizeof below - strlen(below), "%s%s", below[0] ? " and " : "",
               hl_dtype_format_name(cs[i].f));
  if (below[0])
    printf("  %s cannot hold epsilon/2 at all: it is at most half their smallest subnormal and rounds to 0.\n", below);
  printf("  e8m0 holds powers of two only: 1.5 lies halfway between 1 and 2, and 2's code (128) is the even one.\n");
  for (int i = 0; i < n; i++) {
    if (!strcmp(cs[i].id, "1+(2^-11+2^-34)") && cs[i].mode == HL_ROUND_VIA_FP32) {
      add_view twice = view_case(&cs[i], bits[0][i]), once = view_case(&cs[i + 1], bits[0][i + 1]);
      printf("\n  Double rounding: x = 2^-11 + 2^-34 held in fp32. 1 + x rounded to fp32 is 1 + 2^-11, a tie in\n"
             "  fp16, so rounding that to fp16 gives %s; rounded once, straight to fp16, 1 + x is %s.\n",
             nx_show(twice.result, s1, sizeof s1), nx_exact(once.result, 20, s2, sizeof s2));
    }
    if (!strcmp(cs[i].id, "1.9+1.9/2100")) {
      add_view v = view_case(&cs[i], bits[0][i]);
      printf("\n  Ratio rule: in fp16 an update u may be lost once |w/u| > 2048 and always is once |w/u| > 4096.\n"
             "  w = 1.9, u = w/2100 (ratio 2100): w + u = %s, a move of %s: not lost yet.\n",
             nx_show(v.result, s1, sizeof s1), nx_pow2(v.change, s2, sizeof s2));
    }
  }
}

static void write_cases(const nx_ctx *c, const add_case *cs, int n, uint32_t bits[NX_MAX_DEVICES][MAX_CASES]) {
  hl_csv *f = nx_csv_open(c, &nx_absorption_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < n; i++) {
      add_view v = view_case(&cs[i], bits[d][i]);
      char hex[16];
      hl_row_begin(&r, &nx_absorption_schema);
      hl_row_text(&r, "device", nx_dev_name(c, d));
      hl_row_text(&r, "case", cs[i].id);
      hl_row_text(&r, "format", hl_dtype_format_name(cs[i].f));
      hl_row_text(&r, "rounding", mode_name(cs[i].mode));
      hl_row_real(&r, "a", cs[i].a);
      hl_row_real(&r, "b", cs[i].b);
      hl_row_real(&r, "b_stored", v.b_stored);
      hl_row_real(&r, "result", v.result);
      hl_row_text(&r, "result_hex", nx_hex(cs[i].f, v.bits, hex, sizeof hex));
      hl_row_real(&r, "change", v.change);
      hl_csv_put(f, &r);
    }
  nx_csv_close(f);
}

/* ------------------------------------------------------------ the sweep -- */

static void sweep(const nx_ctx *c) {
  const int per_octave = c->quick ? 4 : 16, n = 30 * per_octave + 1;
  float *u = malloc(sizeof(float) * (size_t)n), *ones = malloc(sizeof(float) * (size_t)n);
  uint32_t *out = malloc(sizeof(uint32_t) * (size_t)n * NABSORB * NX_MAX_DEVICES);
  if (!u || !ones || !out) hl_fatal("out of memory");
  for (int i = 0; i < n; i++) u[i] = (float)exp2(-30.0 + (double)i / per_octave), ones[i] = 1.0f;
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < NABSORB; fi++)
      c->k[d]->arith(HL_ARITH_ADD, HL_ROUND_NATIVE, absorb_formats[fi], ones, u, out + ((size_t)d * NABSORB + fi) * n, n);

  nx_heading("absorption sweep: fl(1 + u) - 1 for u = 2^-30 ... 1, %d per octave, on %s", per_octave, nx_dev_label(c, 0));
  printf("  %-6s %-34s %s\n", "format", "u lost entirely (1 + u = 1) up to", "above that, 1 + u moves in steps of");
  for (int fi = 0; fi < NABSORB; fi++) {
    hl_dtype f = absorb_formats[fi];
    double lost_up_to = 0;
    for (int i = 0; i < n; i++)
      if (hl_format_decode(f, out[(size_t)fi * n + i]) == 1.0) lost_up_to = u[i];
    char s1[48], s2[48];
    printf("  %-6s %-34s %s\n", hl_dtype_format_name(f), nx_pow2(lost_up_to, s1, sizeof s1),
           nx_pow2(hl_format_get(f)->epsilon, s2, sizeof s2));
  }
  for (int d = 1; d < c->ndev; d++) {
    long bad = 0;
    for (size_t i = 0; i < (size_t)n * NABSORB; i++)
      bad += !nx_same_bits(absorb_formats[i / n], out[i], out[(size_t)d * NABSORB * n + i]);
    nx_report_agreement(c, d, "the sweep", bad, (long)n * NABSORB);
  }

  hl_csv *f = nx_csv_open(c, &nx_absorption_sweep_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < NABSORB; fi++) {
      hl_dtype fm = absorb_formats[fi];
      for (int i = 0; i < n; i++) {
        hl_row_begin(&r, &nx_absorption_sweep_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_text(&r, "format", hl_dtype_format_name(fm));
        hl_row_real(&r, "update", u[i]);
        hl_row_real(&r, "update_stored", hl_format_stored(fm, u[i]));
        hl_row_real(&r, "effective_update", hl_format_decode(fm, out[((size_t)d * NABSORB + fi) * n + i]) - 1.0);
        hl_csv_put(f, &r);
      }
    }
  nx_csv_close(f);
  free(u), free(ones), free(out);
}

/* ------------------------------------------------------- lost update -- */

static const char *update_id[HL_UPDATE_STRATEGIES] = {"fp16", "bf16", "fp32_master", "fp16_kahan", "fp16_stochastic"};
static const char *update_label[HL_UPDATE_STRATEGIES] = {
    "fp16 weight", "bf16 weight", "fp32 master weight (fp16 updates)", "fp16 weight + Kahan compensation",
    "fp16 weight, stochastic rounding"};

static void lost_update(const nx_ctx *c) {
  hl_update_params p = {.weight = 1.0f, .update = 1e-4f, .steps = 10000, .sample_every = 100, .seed = c->seed};
  const uint32_t ns = hl_update_samples(&p);
  uint32_t fin[NX_MAX_DEVICES][HL_UPDATE_STRATEGIES];
  double *tr[NX_MAX_DEVICES];
  for (int d = 0; d < c->ndev; d++) {
    tr[d] = malloc(sizeof(double) * HL_UPDATE_STRATEGIES * ns);
    if (!tr[d]) hl_fatal("out of memory");
    c->k[d]->update(&p, fin[d], tr[d]);
  }
  double stored_update[HL_UPDATE_STRATEGIES];
  for (int s = 0; s < HL_UPDATE_STRATEGIES; s++) {
    hl_dtype f = hl_update_step_format((hl_update_strategy)s);
    stored_update[s] = hl_format_stored(f, p.update);
  }

  nx_heading("lost update: w = 1, then %u updates of 0.0001 each, on %s", p.steps, nx_dev_label(c, 0));
  printf("  %-35s %-13s %-11s %s\n", "strategy", "final weight", "bits", "exact (1 + 10000 x the stored update)");
  for (int s = 0; s < HL_UPDATE_STRATEGIES; s++) {
    hl_dtype f = hl_update_weight_format((hl_update_strategy)s);
    char w[48], hex[16], ex[48];
    printf("  %-35s %-13s %-11s %s\n", update_label[s], nx_show(hl_format_decode(f, fin[0][s]), w, sizeof w),
           nx_hex(f, fin[0][s], hex, sizeof hex), nx_show(1.0 + p.steps * stored_update[s], ex, sizeof ex));
  }
  printf("\n  fp16 and bf16 weights never move: 0.0001 is less than half their spacing at 1 (2^-11, 2^-8),\n"
         "  so every single add rounds back. An fp32 master copy keeps the updates (its spacing at 1 is\n"
         "  2^-23); Kahan's compensation carries what each rounding dropped into the next add; stochastic\n"
         "  rounding (seed %llu) rounds up with probability (distance to the value below) / spacing, so\n"
         "  the weight is right on average (about 0.04 either way after 10000 updates).\n",
         (unsigned long long)p.seed);
  for (int d = 1; d < c->ndev; d++) {
    long bad = 0;
    for (int s = 0; s < HL_UPDATE_STRATEGIES; s++) {
      bad += !nx_same_bits(hl_update_weight_format((hl_update_strategy)s), fin[0][s], fin[d][s]);
      for (uint32_t j = 0; j < ns; j++) bad += tr[0][s * ns + j] != tr[d][s * ns + j];
    }
    nx_report_agreement(c, d, "the lost-update experiment (stochastic rounding included)", bad,
                        (long)HL_UPDATE_STRATEGIES * (ns + 1));
  }

  hl_csv *f = nx_csv_open(c, &nx_lost_update_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int s = 0; s < HL_UPDATE_STRATEGIES; s++)
      for (uint32_t j = 0; j < ns; j++) {
        uint32_t step = j * p.sample_every;
        hl_row_begin(&r, &nx_lost_update_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_text(&r, "strategy", update_id[s]);
        hl_row_int(&r, "step", step);
        hl_row_real(&r, "weight", tr[d][s * ns + j]);
        hl_row_real(&r, "exact_weight", 1.0 + step * stored_update[s]);
        hl_csv_put(f, &r);
      }
  nx_csv_close(f);
  for (int d = 0; d < c->ndev; d++) free(tr[d]);
}

/* ---------------------------------------------------------- harmonic -- */

static void harmonic(const nx_ctx *c) {
  const uint64_t max_terms[NARITH] = {1u << 24, 1u << 20, 1u << 20}; /* fp32 stalls at 2^21 */
  hl_harmonic_outcome o[NX_MAX_DEVICES][NARITH];
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < NARITH; fi++) c->k[d]->harmonic(arith_formats[fi], max_terms[fi], &o[d][fi]);

  double true_sum[NARITH];
  for (int fi = 0; fi < NARITH; fi++) { /* H_terms in double, small terms first */
    true_sum[fi] = 0;
    for (uint64_t k = o[0][fi].terms; k >= 1; k--) true_sum[fi] += 1.0 / (double)k;
  }
  nx_heading("harmonic series 1 + 1/2 + 1/3 + ... in each format, on %s", nx_dev_label(c, 0));
  printf("  %-6s %-16s %-12s %-10s %s\n", "format", "stalls at term", "sum", "bits", "true sum of those terms");
  for (int fi = 0; fi < NARITH; fi++) {
    hl_dtype f = arith_formats[fi];
    char n[32] = "-", sum[48], hex[16], t[48];
    if (o[0][fi].stall_n) snprintf(n, sizeof n, "1/%llu", (unsigned long long)o[0][fi].stall_n);
    printf("  %-6s %-16s %-12s %-10s %s\n", hl_dtype_format_name(f), n,
           nx_show(hl_format_decode(f, o[0][fi].sum_bits), sum, sizeof sum), nx_hex(f, o[0][fi].sum_bits, hex, sizeof hex),
           nx_show(true_sum[fi], t, sizeof t));
  }
  printf("\n  The series diverges, but each format's sum stops growing at the first term smaller than half\n"
         "  its spacing at the sum (the term is absorbed), and every later term is smaller still.\n");
  for (int d = 1; d < c->ndev; d++) {
    long bad = 0;
    for (int fi = 0; fi < NARITH; fi++)
      bad += o[d][fi].stall_n != o[0][fi].stall_n || o[d][fi].sum_bits != o[0][fi].sum_bits;
    nx_report_agreement(c, d, "the harmonic series", bad, NARITH);
  }

  hl_csv *f = nx_csv_open(c, &nx_harmonic_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int fi = 0; fi < NARITH; fi++) {
      hl_dtype fm = arith_formats[fi];
      char hex[16];
      hl_row_begin(&r, &nx_harmonic_schema);
      hl_row_text(&r, "device", nx_dev_name(c, d));
      hl_row_text(&r, "format", hl_dtype_format_name(fm));
      if (o[d][fi].stall_n) hl_row_int(&r, "stall_n", (int64_t)o[d][fi].stall_n);
      else hl_row_missing(&r, "stall_n"); /* the sum still grew at its last term */
      hl_row_int(&r, "terms", (int64_t)o[d][fi].terms);
      hl_row_real(&r, "sum", hl_format_decode(fm, o[d][fi].sum_bits));
      hl_row_text(&r, "sum_hex", nx_hex(fm, o[d][fi].sum_bits, hex, sizeof hex));
      hl_row_real(&r, "true_sum", true_sum[fi]);
      hl_csv_put(f, &r);
    }
  nx_csv_close(f);
}

int nx_absorption(const nx_ctx *c) {
  add_case cs[MAX_CASES];
  uint32_t bits[NX_MAX_DEVICES][MAX_CASES];
  int n = build_cases(cs);
  run_cases(c, cs, n, bits);
  print_cases(c, cs, n, bits);
  for (int d = 1; d < c->ndev; d++) {
    long bad = 0;
    for (int i = 0; i < n; i++) bad += !nx_same_bits(cs[i].f, bits[0][i], bits[d][i]);
    nx_report_agreement(c, d, "the cases above", bad, n);
  }
  write_cases(c, cs, n, bits);
  sweep(c);
  lost_update(c);
  harmonic(c);
  return 0;
}
