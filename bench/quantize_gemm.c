/* quantize_gemm.c — quantize_gemm.h: the GPT's linear layers as GEMMs.
 *
 * The GPT stores a linear weight out x in (PyTorch's layout, y = x W^T):
 * W is n x k and X (batch x seq x in) is m x k, so both operands are
 * reduced along their rows, and every block runs along k, as the recipes
 * lay them out: X in 1x128 tiles, W in 128x128 blocks (DeepSeek-V3), both
 * in 1x32 (MX) or 1x16 (NVFP4) blocks. The tied head reads the token
 * embedding (vocab x C) the same way. X's scales see all its rows; the
 * product is taken over its first rows only, to keep the study short.
 * Each operand goes through the CPU backend's quantizer and back
 * (bench/gemm_quantized.h), the product accumulates the decoded values in
 * fp32 (8 lanes, as a vectorized GEMM sums), and the error is
 * ||Y - Y_fp64||_F / ||Y_fp64||_F, Y_fp64 the fp64 product of the fp32
 * tensors as given. */
#include "bench/quantize_gemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/gemm_quantized.h"
#include "kernels/quantize.h"

#define UNIT "cpu: software quantization and fp32 sums (emulated)"

/* One way to store both operands; quantized false: fp32 as given */
typedef struct {
  bool quantized;
  hl_dtype element;
  hl_scale_rule rule;
  uint32_t x_block[2], w_block[2]; /* rows x cols; the tensor rule: whole */
} gemm_recipe;

static const gemm_recipe recipes[] = {
    {false, HL_F32, HL_SCALE_TENSOR, {0, 0}, {0, 0}},
    {true, HL_E4M3, HL_SCALE_TENSOR, {0, 0}, {0, 0}},
    {true, HL_E5M2, HL_SCALE_TENSOR, {0, 0}, {0, 0}},
    {true, HL_E4M3, HL_SCALE_BLOCK_FP32, {1, 128}, {128, 128}},
    {true, HL_E4M3, HL_SCALE_MX_RCEIL, {1, 32}, {1, 32}},
    {true, HL_E5M2, HL_SCALE_MX_RCEIL, {1, 32}, {1, 32}},
    {true, HL_E2M3, HL_SCALE_MX_RCEIL, {1, 32}, {1, 32}},
    {true, HL_E3M2, HL_SCALE_MX_RCEIL, {1, 32}, {1, 32}},
    {true, HL_E2M1, HL_SCALE_MX_RCEIL, {1, 32}, {1, 32}},
    {true, HL_E2M1, HL_SCALE_MX_FLOOR, {1, 32}, {1, 32}},
    {true, HL_E2M1, HL_SCALE_NVFP4, {1, 16}, {1, 16}},
};
enum { NRECIPES = sizeof recipes / sizeof recipes[0] };

static const hl_weight_entry *find_entry(const hl_weight_file *f, const char *name) {
  for (int i = 0; i < f->n; i++)
    if (!strcmp(f->items[i].name, name)) return &f->items[i];
  return NULL;
}

/* The weight a layer's input meets: LAYER.input -> LAYER.weight; the tied
 * head's lm_head.input -> transformer.wte.weight. NULL when absent. */
static const hl_weight_entry *weight_of(const hl_weight_file *weights, const char *input_name, char *layer,
                                        size_t len) {
  const size_t n = strlen(input_name), suffix = strlen(".input");
  if (n <= suffix || strcmp(input_name + n - suffix, ".input")) return NULL;
  snprintf(layer, len, "%.*s", (int)(n - suffix), input_name);
  if (!strcmp(layer, "lm_head")) return find_entry(weights, "transformer.wte.weight");
  char name[300];
  snprintf(name, sizeof name, "%s.weight", layer);
  return find_entry(weights, name);
}

static float dot_f32(const float *a, const float *b, size_t k) {
  float lane[8] = {0};
  size_t p = 0;
  for (; p + 8 <= k; p += 8)
    for (int l = 0; l < 8; l++) lane[l] += a[p + l] * b[p + l];
  float sum = 0;
  for (; p < k; p++) sum += a[p] * b[p];
  for (int l = 0; l < 8; l++) sum += lane[l];
  return sum;
}

static double dot_f64(const float *a, const float *b, size_t k) {
  double lane[4] = {0};
  size_t p = 0;
  for (; p + 4 <= k; p += 4)
    for (int l = 0; l < 4; l++) lane[l] += (double)a[p + l] * b[p + l];
  double sum = 0;
  for (; p < k; p++) sum += (double)a[p] * b[p];
  for (int l = 0; l < 4; l++) sum += lane[l];
  return sum;
}

/* ||X W^T - ref||_F / ||ref||_F, X m x k, W n x k */
static double rel_err(const float *x, const float *w, const double *ref, size_t m, size_t n, size_t k) {
  double num = 0, den = 0;
#pragma omp parallel for schedule(static) reduction(+ : num, den)
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      const double e = (double)dot_f32(x + i * k, w + j * k, k) - ref[i * n + j];
      num += e * e, den += ref[i * n + j] * ref[i * n + j];
    }
  return den > 0 ? sqrt(num / den) : 0.0;
}

static hl_quant_spec recipe_spec(const gemm_recipe *r, const uint32_t block[2]) {
  hl_quant_spec s = hl_quant_spec_make(r->element, r->rule);
  if (r->rule != HL_SCALE_TENSOR) s.block_rows = block[0], s.block_cols = block[1];
  return s;
}

static void block_text(const gemm_recipe *r, const uint32_t block[2], char *out, size_t len) {
  if (!r->quantized || r->rule == HL_SCALE_TENSOR) snprintf(out, len, "whole");
  else snprintf(out, len, "%ux%u", block[0], block[1]);
}

static void put_row(hl_csv_rows *rows, const char *model, const char *layer, size_t m, size_t x_rows, size_t n,
                    size_t k, const gemm_recipe *r, double err) {
  hl_row row;
  hl_row_begin(&row, &bench_quantize_gemm_schema);
  hl_row_text(&row, "device", "cpu");
  hl_row_text(&row, "unit", UNIT);
  hl_row_text(&row, "model", model);
  hl_row_text(&row, "layer", layer);
  hl_row_int(&row, "m", (int64_t)m);
  hl_row_int(&row, "x_rows", (int64_t)x_rows);
  hl_row_int(&row, "n", (int64_t)n);
  hl_row_int(&row, "k", (int64_t)k);
  hl_row_text(&row, "format", r->quantized ? hl_dtype_format_name(r->element) : "fp32");
  hl_row_text(&row, "rule", r->quantized ? hl_scale_rule_name(r->rule) : "none");
  char block[32];
  block_text(r, r->x_block, block, sizeof block);
  hl_row_text(&row, "x_block", block);
  block_text(r, r->w_block, block, sizeof block);
  hl_row_text(&row, "w_block", block);
  hl_row_real(&row, "rel_err", err);
  hl_csv_rows_put(rows, &row);
}

/* Every recipe on one layer: X (x_rows x k, the first m kept), W (n x k) */
static void study_layer(const char *model, const char *layer, const float *x, size_t m, size_t x_rows,
                        const float *w, size_t n, size_t k, hl_csv_rows *rows) {
  double *ref = bench_host_alloc(sizeof(double) * m * n, "fp64 product");
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) ref[i * n + j] = dot_f64(x + i * k, w + j * k, k);
  for (int ri = 0; ri < NRECIPES; ri++) {
    const gemm_recipe *r = &recipes[ri];
    bench_progress("quantize-error gemm %s %s %s %s", model, layer,
                   r->quantized ? hl_dtype_format_name(r->element) : "fp32",
                   r->quantized ? hl_scale_rule_name(r->rule) : "none");
    if (!r->quantized) {
      put_row(rows, model, layer, m, x_rows, n, k, r, rel_err(x, w, ref, m, n, k));
      continue;
    }
    const hl_quant_spec xs = recipe_spec(r, r->x_block), ws = recipe_spec(r, r->w_block);
    quantized_operand qx, qw;
    quantized_operand_make(&qx, &xs, x, m, x_rows, k);
    quantized_operand_make(&qw, &ws, w, n, n, k);
    put_row(rows, model, layer, m, x_rows, n, k, r, rel_err(qx.dequantized, qw.dequantized, ref, m, n, k));
    quantized_operand_free(&qx), quantized_operand_free(&qw);
  }
  free(ref);
}

static bool all_finite(const float *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return false;
  return true;
}

int quantize_gemm_rows(const char *model, const hl_weight_file *weights, const hl_weight_file *activations,
                       size_t x_rows_max, hl_csv_rows *rows) {
  int layers = 0;
  for (int ai = 0; ai < activations->n; ai++) {
    const hl_weight_entry *a = &activations->items[ai];
    char layer[256];
    const hl_weight_entry *wt = weight_of(weights, a->name, layer, sizeof layer);
    if (!wt || a->ndim < 2 || wt->ndim != 2 || a->numel == 0) continue;
    const size_t k = (size_t)a->dims[a->ndim - 1], x_rows = (size_t)a->numel / k, n = (size_t)wt->dims[0];
    if ((size_t)wt->dims[1] != k) {
      fprintf(stderr, "%s: quantize-error: %s: %s is %lld wide, %s %zu: no GEMM\n", hl_prog(), model, a->name,
              (long long)k, wt->name, (size_t)wt->dims[1]);
      continue;
    }
    if (!all_finite(a->values, (size_t)a->numel) || !all_finite(wt->values, (size_t)wt->numel)) {
      fprintf(stderr, "%s: quantize-error: %s: %s or %s holds an inf or NaN: no GEMM\n", hl_prog(), model, a->name,
              wt->name);
      continue;
    }
    const size_t m = x_rows < x_rows_max ? x_rows : x_rows_max;
    study_layer(model, layer, a->values, m, x_rows, wt->values, n, k, rows);
    layers++;
  }
  return layers;
}
