/* test_quantize_error.c — suite e2e: halflab-train --dump-activations and
 * halflab-bench quantize-error end to end, the CSVs read back:
 *   - the activations file holds each linear layer's input of the first
 *     step, named after the layer, shaped [batch, seq, width];
 *   - both CSVs follow their column tables; on every row the zero,
 *     subnormal, normal and clipped shares sum to 1;
 *   - MX FLOOR clips at least as many blocks as RCEIL, tensor by tensor;
 *   - on a tensor with an outlier (written here), per-block scales give a
 *     higher SQNR than the per-tensor scale in every format;
 *   - the e2m1 MX rows (FLOOR and RCEIL) agree with a recomputation here:
 *     the scale rule from frexp, nearest-even on e2m1's eight magnitudes;
 *   - the sweep's scale is (max / amax) 2^x;
 *   - the GEMM study (quantize_gemm.csv) has every layer under every format
 *     and rule, labelled emulated; MXFP4's error is above MXFP8's layer by
 *     layer; one layer's e4m3 per-tensor row agrees with a recomputation
 *     here (Transformer Engine's scale, elements rounded by formats/round.h,
 *     an fp64 product); with no activations, no quantize_gemm.csv;
 *   - bad input (a malformed --tensors, a missing, foreign, truncated or
 *     corrupt file, --device cuda; --dump-activations for the MLP or with
 *     --steps 0): exit 2, one line, no file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/round.h"
#include "tests/bench/schema_check.h"
#include "tests/peers/weights.h"
#include "tests/support/hltest.h"

static const char *bench(void) { return hl_test_prog("halflab-bench"); }

/* ------------------------------------------------ independent e2m1 MX -- */

static const double e2m1_grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

/* |v| rounded to nearest-even on e2m1's magnitudes (saturating): the index */
static int e2m1_index(double v) {
  if (v >= 6) return 7;
  int i = 0;
  while (e2m1_grid[i + 1] <= v) i++;
  const double mid = (e2m1_grid[i] + e2m1_grid[i + 1]) / 2;
  return v < mid ? i : v > mid ? i + 1 : (i % 2 ? i + 1 : i);
}

/* The block's scale exponent k (scale 2^k): FLOOR floor(log2 amax) - 2,
 * RCEIL ceil(log2(amax / 6)), amax / 6 rounded to fp32 */
static int mx_exponent(float amax, bool floor_rule) {
  int e;
  if (floor_rule) {
    frexp(amax, &e); /* amax = f 2^e, f in [0.5, 1) */
    return e - 1 - 2;
  }
  const float d = amax / 6.0f;
  const double f = frexp(d, &e);
  return f == 0.5 ? e - 1 : e;
}

typedef struct {
  double zero, subnormal, clipped, blocks_clipped, sqnr_db;
} recomputed;

static recomputed mx_e2m1(const float *x, int64_t rows, int64_t cols, bool floor_rule) {
  recomputed r = {0};
  int64_t zero = 0, sub = 0, clipped = 0, blocks = 0, blocks_clipped = 0;
  double signal = 0, noise = 0;
  for (int64_t row = 0; row < rows; row++)
    for (int64_t c0 = 0; c0 < cols; c0 += 32, blocks++) {
      const int64_t c1 = c0 + 32 < cols ? c0 + 32 : cols;
      float amax = 0;
      for (int64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(x[row * cols + c]));
      const int k = amax > 0 ? mx_exponent(amax, floor_rule) : -127;
      bool any = false;
      for (int64_t c = c0; c < c1; c++) {
        const double v = x[row * cols + c], scaled = fabs(v) * ldexp(1.0, -k);
        const int i = e2m1_index(scaled);
        zero += i == 0, sub += i == 1;
        const bool clip = scaled > 6;
        clipped += clip, any |= clip;
        const double q = copysign(e2m1_grid[i] * ldexp(1.0, k), v);
        signal += v * v, noise += (q - v) * (q - v);
      }
      blocks_clipped += any;
    }
  const double n = (double)(rows * cols);
  r.zero = zero / n, r.subnormal = sub / n, r.clipped = clipped / n;
  r.blocks_clipped = (double)blocks_clipped / (double)blocks;
  r.sqnr_db = 10 * log10(signal / noise);
  return r;
}

/* ---------------------------------------------- independent e4m3 GEMM -- */

/* x (rows x k) under Transformer Engine's per-tensor rule in e4m3: scale =
 * 448 / amax (fp32), codes by formats/round.h (nearest-even, saturating),
 * decoded and divided by the scale in fp64; the first `keep` rows */
static double *e4m3_tensor_rule(const float *x, int64_t rows, int64_t keep, int64_t k) {
  float amax = 0;
  for (int64_t i = 0; i < rows * k; i++) amax = fmaxf(amax, fabsf(x[i]));
  const float scale = 448.0f / amax;
  const hl_round_spec r = hl_round_spec_make(HL_E4M3, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE, false);
  double *q = malloc(sizeof(double) * (size_t)(keep * k));
  for (int64_t i = 0; i < keep * k; i++) q[i] = hl_round_decode(HL_E4M3, hl_round_bits_generic(&r, x[i] * scale, 0)) / scale;
  return q;
}

/* ||X W^T - Xq Wq^T||_F / ||X W^T||_F in fp64 over X's first m rows (W n x k, out x in) */
static double e4m3_tensor_gemm_err(const wtensor *x, const wtensor *w, int64_t m) {
  const int64_t k = w->dims[1], n = w->dims[0], x_rows = x->numel / k;
  double *xq = e4m3_tensor_rule(x->values, x_rows, m, k), *wq = e4m3_tensor_rule(w->values, n, n, k);
  double num = 0, den = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double y = 0, yq = 0;
      for (int64_t p = 0; p < k; p++) {
        y += (double)x->values[i * k + p] * w->values[j * k + p];
        yq += xq[i * k + p] * wq[j * k + p];
      }
      num += (yq - y) * (yq - y), den += y * y;
    }
  free(xq), free(wq);
  return sqrt(num / den);
}

/* ------------------------------------------------------------ helpers -- */

/* A weight file of one tensor, written here (the format of core/models/nn.h) */
static void write_one_tensor(const char *path, const char *name, int64_t rows, int64_t cols, const float *v) {
  const size_t n = (size_t)(rows * cols), len = 8 + 4 + 4 + strlen(name) + 4 + 16 + 4 * n + 4;
  unsigned char *b = malloc(len), *p = b;
  const uint32_t count = 1, name_len = (uint32_t)strlen(name), ndim = 2;
  const int64_t dims[2] = {rows, cols};
  memcpy(p, "HLWTS001", 8), p += 8;
  memcpy(p, &count, 4), p += 4;
  memcpy(p, &name_len, 4), p += 4;
  memcpy(p, name, name_len), p += name_len;
  memcpy(p, &ndim, 4), p += 4;
  memcpy(p, dims, 16), p += 16;
  memcpy(p, v, 4 * n), p += 4 * n;
  const uint32_t crc = hl_test_crc32(b, (size_t)(p - b));
  memcpy(p, &crc, 4);
  hl_write_file(path, b, len);
  free(b);
}

static double num(const hl_table *t, int row, const char *col) { return hl_table_num(t, row, col); }
static const char *cell(const hl_table *t, int row, const char *col) { return hl_table_get(t, row, col); }

/* The row of tensor x format x rule, -1 when absent (a weight and its gradient share a name) */
static int row_of(const hl_table *t, const char *model, const char *kind, const char *tensor, const char *format,
                  const char *rule) {
  return hl_table_find(t, "model", model, "kind", kind, "tensor", tensor, "format", format, "rule", rule, NULL);
}

static void expect_shares_sum_to_one(const hl_table *t) {
  for (int r = 0; r < t->nrows; r++) {
    const double sum = num(t, r, "zero_share") + num(t, r, "subnormal_share") + num(t, r, "normal_share") +
                       num(t, r, "clipped_share");
    if (fabs(sum - 1) > 4e-6) fail_msg("row %d (%s %s): shares sum to %.9g", r, cell(t, r, "tensor"), cell(t, r, "format"), sum);
    if (num(t, r, "flushed_share") > num(t, r, "zero_share") + 1e-9) fail_msg("row %d: flushed above zero", r);
  }
}

static void expect_near(double got, double want, double tol, const char *what, const char *tensor) {
  if (!(fabs(got - want) <= tol)) fail_msg("%s of %s: CSV %.9g, recomputed %.9g", what, tensor, got, want);
}

/* Every e2m1 mx-floor and mx-rceil row of `model` against mx_e2m1 on the file's values */
static int expect_e2m1_recomputed(const hl_table *t, const char *model, const char *kind, const wfile *w) {
  int checked = 0;
  for (int i = 0; i < w->n; i++) {
    const wtensor *x = &w->t[i];
    if (x->ndim < 2) continue;
    const int64_t cols = x->dims[x->ndim - 1], rows = x->numel / cols;
    for (int rule = 0; rule < 2; rule++) {
      const int r = row_of(t, model, kind, x->name, "e2m1", rule ? "mx-rceil" : "mx-floor");
      if (r < 0) fail_msg("no e2m1 row of %s", x->name);
      const recomputed want = mx_e2m1(x->values, rows, cols, rule == 0);
      /* shares are written with 6 significant digits */
      expect_near(num(t, r, "zero_share"), want.zero, 6e-6 * want.zero + 1e-12, "zero_share", x->name);
      expect_near(num(t, r, "subnormal_share"), want.subnormal, 6e-6 * want.subnormal + 1e-12, "subnormal_share", x->name);
      expect_near(num(t, r, "clipped_share"), want.clipped, 6e-6 * want.clipped + 1e-12, "clipped_share", x->name);
      expect_near(num(t, r, "blocks_clipped_share"), want.blocks_clipped, 6e-6 * want.blocks_clipped + 1e-12,
                  "blocks_clipped_share", x->name);
      expect_near(num(t, r, "sqnr_db"), want.sqnr_db, 2e-4, "sqnr_db", x->name);
      checked++;
    }
  }
  return checked;
}


/* quantize_gemm.csv of the tiny GPT's tensors (weights w, activations a) */
static void expect_gemm_table(const char *path, const wfile *w, const wfile *a) {
  expect_csv_follows_schema(path, &bench_quantize_gemm_schema);
  hl_table *g = hl_table_read(path);
  assert_non_null(g);
  static const char *const recipes[][2] = {{"fp32", "none"},     {"e4m3", "tensor"},   {"e5m2", "tensor"},
                                           {"e4m3", "block-fp32"}, {"e4m3", "mx-rceil"}, {"e5m2", "mx-rceil"},
                                           {"e2m3", "mx-rceil"}, {"e3m2", "mx-rceil"}, {"e2m1", "mx-rceil"},
                                           {"e2m1", "mx-floor"}, {"e2m1", "nvfp4"}};
  enum { NREC = sizeof recipes / sizeof recipes[0] };
  assert_int_equal(g->nrows, a->n * NREC); /* every linear layer's input meets its weight */
  for (int r = 0; r < g->nrows; r++) assert_non_null(strstr(cell(g, r, "unit"), "(emulated)"));
  for (int i = 0; i < a->n; i++) {
    char layer[128];
    snprintf(layer, sizeof layer, "%.*s", (int)(strlen(a->t[i].name) - strlen(".input")), a->t[i].name);
    int row[NREC];
    for (int q = 0; q < NREC; q++) {
      row[q] = hl_table_find(g, "model", "tiny", "layer", layer, "format", recipes[q][0], "rule", recipes[q][1], NULL);
      if (row[q] < 0) fail_msg("quantize_gemm.csv: no %s %s row of %s", recipes[q][0], recipes[q][1], layer);
    }
    const int64_t k = a->t[i].dims[a->t[i].ndim - 1];
    assert_int_equal((int64_t)num(g, row[0], "k"), k);
    assert_int_equal((int64_t)num(g, row[0], "x_rows"), a->t[i].numel / k);
    /* fp32 as given: the accumulation's own error alone */
    if (!(num(g, row[0], "rel_err") < 1e-5)) fail_msg("%s: fp32 rel_err %s", layer, cell(g, row[0], "rel_err"));
    /* MXFP4 (RCEIL and FLOOR) loses more than MXFP8 e4m3 and e5m2, layer by layer */
    for (int fp4 = 8; fp4 <= 9; fp4++)
      for (int fp8 = 4; fp8 <= 5; fp8++)
        if (!(num(g, row[fp4], "rel_err") > num(g, row[fp8], "rel_err")))
          fail_msg("%s: %s %s rel_err %s not above %s %s's %s", layer, recipes[fp4][0], recipes[fp4][1],
                   cell(g, row[fp4], "rel_err"), recipes[fp8][0], recipes[fp8][1], cell(g, row[fp8], "rel_err"));
  }
  /* one layer's e4m3 per-tensor row recomputed: the CSV's six digits and its fp32 sums are within 1e-4 of it */
  const wtensor *x = wfile_find(a, "transformer.h.1.mlp.c_fc.input"), *wt = wfile_find(w, "transformer.h.1.mlp.c_fc.weight");
  assert_non_null(x);
  assert_non_null(wt);
  const int r = hl_table_find(g, "model", "tiny", "layer", "transformer.h.1.mlp.c_fc", "format", "e4m3", "rule", "tensor", NULL);
  assert_true(r >= 0);
  assert_int_equal((int64_t)num(g, r, "n"), wt->dims[0]);
  const int64_t m = (int64_t)num(g, r, "m"), x_rows = x->numel / wt->dims[1];
  assert_int_equal(m, x_rows < 128 ? x_rows : 128); /* --quick: the first 128 rows */
  const double want = e4m3_tensor_gemm_err(x, wt, m);
  expect_near(num(g, r, "rel_err"), want, 1e-4 * want, "e4m3 per-tensor GEMM rel_err", "transformer.h.1.mlp.c_fc");
  hl_table_free(g);
}

/* ------------------------------------------------------------- tests -- */

static void test_gpt_tensors(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result tr = hl_run_ok("%s --device cpu --batch 4 --eval-samples 8 --steps 1 --save-init %s --dump-grads %s "
                               "--dump-activations %s --out %s",
                               hl_test_prog("halflab-train"), hl_path(dir, "w.bin"), hl_path(dir, "g.bin"),
                               hl_path(dir, "a.bin"), dir);
  hl_run_free(&tr);
  char why[512];
  wfile *a = wfile_read(hl_path(dir, "a.bin"), why, sizeof why);
  if (!a) fail_msg("%s", why);
  assert_int_equal(a->n, 2 * 4 + 1); /* c_attn, attn.c_proj, c_fc, mlp.c_proj per block of 2; the head */
  const wtensor *fc_in = wfile_find(a, "transformer.h.1.mlp.c_proj.input"), *head = wfile_find(a, "lm_head.input");
  assert_non_null(fc_in);
  assert_non_null(head);
  assert_int_equal(fc_in->ndim, 3);
  assert_int_equal(fc_in->dims[0], 4);                    /* the batch */
  assert_int_equal(fc_in->dims[2], 4 * head->dims[2]);   /* the MLP's width, 4 C */

  char out[4096];
  snprintf(out, sizeof out, "%s", hl_path(dir, "q"));
  char cmd[20000];
  snprintf(cmd, sizeof cmd, "%s quantize-error --quick --tensors tiny:weight:%s --tensors tiny:gradient:%s --tensors tiny:activation:%s --out %s",
           bench(), hl_path(dir, "w.bin"), hl_path(dir, "g.bin"), hl_path(dir, "a.bin"), out);
  hl_run_result qr = hl_run_ok("%s", cmd);
  hl_run_free(&qr);
  expect_csv_follows_schema(hl_path(out, "quantize_error.csv"), &bench_quantize_error_schema);
  expect_csv_follows_schema(hl_path(out, "quantize_sweep.csv"), &bench_quantize_sweep_schema);
  hl_table *t = hl_table_read(hl_path(out, "quantize_error.csv"));
  hl_table *s = hl_table_read(hl_path(out, "quantize_sweep.csv"));
  assert_non_null(t);
  assert_non_null(s);
  expect_shares_sum_to_one(t);
  expect_shares_sum_to_one(s);
  for (int r = 0; r < t->nrows; r++) assert_string_equal(cell(t, r, "unit"), "cpu: software quantization (emulated)");

  /* FLOOR against RCEIL, tensor by tensor and format by format; strictly more blocks in all */
  double floor_blocks = 0, rceil_blocks = 0;
  for (int r = 0; r < t->nrows; r++) {
    if (strcmp(cell(t, r, "rule"), "mx-floor")) continue;
    const int rc = row_of(t, cell(t, r, "model"), cell(t, r, "kind"), cell(t, r, "tensor"), cell(t, r, "format"), "mx-rceil");
    assert_true(rc >= 0);
    if (num(t, r, "blocks_clipped_share") < num(t, rc, "blocks_clipped_share"))
      fail_msg("%s %s: FLOOR clips fewer blocks than RCEIL", cell(t, r, "tensor"), cell(t, r, "format"));
    floor_blocks += num(t, r, "blocks_clipped_share"), rceil_blocks += num(t, rc, "blocks_clipped_share");
  }
  assert_true(floor_blocks > rceil_blocks);
  /* RCEIL clips nothing: the smallest fp32 amax above max 2^k makes amax / max more than half an ulp above
   * 2^k for each format's max (1.75, 1.875, 1.5 times a power of two), so the quotient rounds up past it */
  assert_true(rceil_blocks == 0);

  /* the e2m1 MX rows of the activations, recomputed */
  assert_int_equal(expect_e2m1_recomputed(t, "tiny", "activation", a), 2 * a->n);

  /* the sweep's scale: (max / amax) 2^x, amax from the tensor's row in the error table */
  for (int r = 0; r < s->nrows; r++) {
    const int e = row_of(t, cell(s, r, "model"), cell(s, r, "kind"), cell(s, r, "tensor"), cell(s, r, "format"), "tensor");
    assert_true(e >= 0);
    const char *f = cell(s, r, "format");
    const double max = !strcmp(f, "e4m3") ? 448 : !strcmp(f, "e5m2") ? 57344 : !strcmp(f, "e2m3") ? 7.5 :
                       !strcmp(f, "e3m2") ? 28 : 6;
    const double want = max / num(t, e, "amax") * ldexp(1.0, (int)num(s, r, "log2_scale_rel"));
    expect_near(num(s, r, "scale") / want, 1.0, 1e-5, "scale", cell(s, r, "tensor"));
  }
  hl_table_free(t);
  hl_table_free(s);

  wfile *w = wfile_read(hl_path(dir, "w.bin"), why, sizeof why);
  if (!w) fail_msg("%s", why);
  expect_gemm_table(hl_path(out, "quantize_gemm.csv"), w, a);
  wfile_free(w);
  wfile_free(a);
  hl_rmtree(dir);
}

/* A 64 x 128 tensor of values in +-[0.5, 1.5) with one outlier 2^40: the
 * per-tensor scale puts the rest under each format's normal range (e5m2's
 * too, whose range spans 2^31), per-block scales leave one block of 32 so */
static void test_outlier(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  enum { ROWS = 64, COLS = 128 };
  static float v[ROWS * COLS];
  uint32_t u = 12345;
  for (int i = 0; i < ROWS * COLS; i++) {
    u = u * 1664525u + 1013904223u;
    v[i] = (float)((u >> 8) / 16777216.0 + 0.5) * (u & 1 ? -1.0f : 1.0f);
  }
  v[3 * COLS + 70] = 0x1p40f;
  write_one_tensor(hl_path(dir, "o.bin"), "outlier", ROWS, COLS, v);
  hl_run_result r = hl_run_ok("%s quantize-error --quick --tensors synth:weight:%s --out %s", bench(),
                              hl_path(dir, "o.bin"), hl_path(dir, "q"));
  hl_run_free(&r);
  hl_table *t = hl_table_read(hl_path(hl_path(dir, "q"), "quantize_error.csv"));
  assert_non_null(t);
  expect_shares_sum_to_one(t);
  assert_false(hl_file_exists(hl_path(hl_path(dir, "q"), "quantize_gemm.csv"))); /* no activations: no GEMM */
  static const char *const formats[] = {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1"};
  for (int f = 0; f < 5; f++) {
    const int per_tensor = row_of(t, "synth", "weight", "outlier", formats[f], "tensor");
    const int per_block = row_of(t, "synth", "weight", "outlier", formats[f], "mx-rceil");
    assert_true(per_tensor >= 0 && per_block >= 0);
    if (!(num(t, per_block, "sqnr_db") > num(t, per_tensor, "sqnr_db")))
      fail_msg("%s: per-block SQNR %s dB not above per-tensor %s dB", formats[f], cell(t, per_block, "sqnr_db"),
               cell(t, per_tensor, "sqnr_db"));
  }
  const int fp32_blocks = row_of(t, "synth", "weight", "outlier", "e4m3", "block-fp32");
  assert_true(num(t, fp32_blocks, "sqnr_db") > num(t, row_of(t, "synth", "weight", "outlier", "e4m3", "tensor"), "sqnr_db"));
  wfile w = {.n = 1, .t = &(wtensor){.name = "outlier", .ndim = 2, .dims = {ROWS, COLS}, .numel = ROWS * COLS, .values = v}};
  assert_int_equal(expect_e2m1_recomputed(t, "synth", "weight", &w), 2);
  hl_table_free(t);
  hl_rmtree(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_write_file(hl_path(dir, "junk.bin"), "not a weight file", 17);
  /* a good file, then cut short and with one value changed (its checksum kept) */
  const float v[4] = {1, 2, 3, 4};
  write_one_tensor(hl_path(dir, "good.bin"), "t", 2, 2, v);
  size_t len = 0;
  char *bytes = hl_read_file(hl_path(dir, "good.bin"), &len);
  hl_write_file(hl_path(dir, "short.bin"), bytes, len - 2); /* into the checksum */
  bytes[len - 8] ^= 1; /* in the last value */
  hl_write_file(hl_path(dir, "flipped.bin"), bytes, len);
  free(bytes);
  hl_expect_refused(dir, 2, "truncated", "%s quantize-error --tensors t:weight:%s/short.bin --out %s/out", bench(), dir, dir);
  hl_expect_refused(dir, 2, "checksum", "%s quantize-error --tensors t:weight:%s/flipped.bin --out %s/out", bench(), dir, dir);
  hl_expect_refused(dir, 2, "MODEL:KIND:FILE", "%s quantize-error --tensors w.bin --out %s/out", bench(), dir);
  hl_expect_refused(dir, 2, "unknown kind", "%s quantize-error --tensors tiny:bias:w.bin --out %s/out", bench(), dir);
  hl_expect_refused(dir, 2, "HLWTS001", "%s quantize-error --tensors tiny:weight:%s/junk.bin --out %s/out", bench(), dir, dir);
  hl_expect_refused(dir, 2, "cannot open", "%s quantize-error --tensors tiny:weight:%s/none.bin --out %s/out", bench(), dir, dir);
  hl_expect_refused(dir, 2, "--tensors", "%s quantize-error --out %s/out", bench(), dir);
  /* halflab-train's dump: the GPT's layers, at a step that runs */
  hl_expect_refused(dir, 2, "--model gpt", "%s --device cpu --model mlp --steps 1 --dump-activations %s/a.bin --out %s/out",
                    hl_test_prog("halflab-train"), dir, dir);
  hl_expect_refused(dir, 2, "--steps", "%s --device cpu --steps 0 --save-init %s/w.bin --dump-activations %s/a.bin --out %s/out",
                    hl_test_prog("halflab-train"), dir, dir, dir);
  hl_expect_refused(dir, 2, "--device", "%s quantize-error --device cuda --tensors tiny:weight:%s/junk.bin --out %s/out",
                    bench(), dir, dir);
  hl_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpt_tensors),
      cmocka_unit_test(test_outlier),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
