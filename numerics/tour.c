/* tour.c — `halflab-numerics tour`: the classic demonstrations in their order,
 * each as the operation, the result per format (and per device) and one line
 * of why, for a teacher to run live. Every number is computed by the probe
 * kernels on each device, not written down here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "formats/format.h"
#include "numerics/nx.h"

typedef struct {
  const char *what; /* "fp16, fp32 accumulator" */
  hl_dtype f;
  uint32_t bits[NX_MAX_DEVICES];
} tour_line;

typedef struct {
  const char *title, *seed_code, *why;
  tour_line line[8];
  int n;
} demo;

static const hl_column tour_columns[] = {
    NX_DEVICE_COLUMN,
    {"demo", "1", HL_COL_INT, NULL, "the demonstration's number, 1 to 5, in the order the tour shows them",
     "numerics/tour.c: nx_tour"},
    {"title", "", HL_COL_TEXT, NULL, "the demonstration's title, up to its colon", "numerics/tour.c: nx_tour"},
    {"what", "", HL_COL_TEXT, NULL, "the line of the demonstration: the value or the way of computing it",
     "numerics/tour.c: add_line"},
    {"format", "", HL_COL_TEXT, NULL, "the format of the result", "numerics/tour.c: add_line"},
    {"result", "1", HL_COL_REAL, "%.17g", "the result as the probe kernels computed it", "numerics/tour.c: nx_tour"},
    {"result_hex", "", HL_COL_TEXT, NULL, "the result's encoding in hex, as wide as the format", "numerics/tour.c: nx_tour"},
};
const hl_schema nx_tour_schema = {
    "tour.csv", "halflab-numerics tour", "numerics/tour.c: write_tour",
    "One row per device, demonstration and line of the tour.", HL_SCHEMA_COLUMNS(tour_columns)};

static void add_line(demo *dm, const char *what, hl_dtype f) {
  dm->line[dm->n].what = what;
  dm->line[dm->n].f = f;
  dm->n++;
}

/* bits of x converted to f on device d */
static uint32_t convert(const nx_ctx *c, int d, hl_dtype f, float x) {
  uint32_t r;
  c->k[d]->convert(f, HL_OVERFLOW_IEEE, &x, &r, 1);
  return r;
}

static void print_demo(const nx_ctx *c, int number, const demo *dm) {
  printf("\n%d. %s\n", number, dm->title);
  if (dm->seed_code) printf("   seed: %s\n", dm->seed_code);
  for (int i = 0; i < dm->n; i++) {
    const tour_line *l = &dm->line[i];
    printf("   %-36s", l->what);
    for (int d = 0; d < c->ndev; d++) {
      char v[48], h[16], cell[72];
      snprintf(cell, sizeof cell, "%s (%s)", nx_show(hl_format_decode(l->f, l->bits[d]), v, sizeof v),
               nx_hex(l->f, l->bits[d], h, sizeof h));
      printf(d + 1 < c->ndev ? " %-28s" : " %s", cell);
    }
    printf("\n");
  }
  nx_print_wrapped("   why: ", 8, 100, dm->why);
}

static void write_tour(const nx_ctx *c, const demo *demos, int ndemos) {
  hl_csv *f = nx_csv_open(c, &nx_tour_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < ndemos; i++)
      for (int j = 0; j < demos[i].n; j++) {
        const tour_line *l = &demos[i].line[j];
        char hex[16], title[96];
        /* the title up to its colon, without commas: CSV cells are never quoted */
        snprintf(title, sizeof title, "%.*s", (int)strcspn(demos[i].title, ":"), demos[i].title);
        hl_row_begin(&r, &nx_tour_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_int(&r, "demo", i + 1);
        hl_row_text(&r, "title", title);
        hl_row_text(&r, "what", l->what);
        hl_row_text(&r, "format", hl_dtype_format_name(l->f));
        hl_row_real(&r, "result", hl_format_decode(l->f, l->bits[d]));
        hl_row_text(&r, "result_hex", nx_hex(l->f, l->bits[d], hex, sizeof hex));
        hl_csv_put(f, &r);
      }
  nx_csv_close(f);
}

int nx_tour(const nx_ctx *c) {
  demo demos[5];
  memset(demos, 0, sizeof demos);

  /* 1. 0.4 in binary */
  demo *dm = &demos[0];
  dm->title = "0.4 as a float: 0.0110 0110 0110 ... in binary never ends, so every format rounds it";
  dm->seed_code = "n = 0.4  (fp32: sign 0, exponent 01111101 = -2 + 127, mantissa 10011001100110011001101)";
  add_line(dm, "fp32 (23 mantissa bits)", HL_F32);
  add_line(dm, "fp16 (10)", HL_F16);
  add_line(dm, "bf16 (7)", HL_BF16);
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < dm->n; i++) dm->line[i].bits[d] = convert(c, d, dm->line[i].f, 0.4f);
  static char why1[320];
  double err[3];
  char bits32[48];
  for (int i = 0; i < 3; i++) err[i] = hl_format_decode(dm->line[i].f, dm->line[i].bits[0]) - 0.4;
  snprintf(why1, sizeof why1,
           "the fp32 bits computed here are %s; each format keeps 1 + (mantissa bits) significant bits of "
           "1.1001 1001 ... x 2^-2 and rounds the rest: off by %.2g in fp32, %.2g in fp16, %.2g in bf16",
           hl_format_bitstring(HL_F32, dm->line[0].bits[0], bits32, sizeof bits32), err[0], err[1], err[2]);
  dm->why = why1;

  /* 2. overflow: 4096 x 16 */
  dm = &demos[1];
  dm->title = "Overflow: the sum of 4096 copies of 16.0 (exact 65536)";
  dm->seed_code = "a = torch.cuda.HalfTensor(4096); a.fill_(16.0); a.sum()  ->  inf; the FloatTensor gives 65536";
  dm->why = "65536 is beyond fp16's largest value, 65504 (everything from 65520 up rounds to inf). A plain fp16 "
            "accumulator fails sooner: from 32768 on its spacing is 32, so + 16 is a tie that rounds back";
  add_line(dm, "fp32 accumulator and result", HL_F32);
  add_line(dm, "fp16 data + fp32 accumulator (torch)", HL_F16);
  add_line(dm, "fp16 sequential accumulator", HL_F16);
  add_line(dm, "fp16 pairwise (tree)", HL_F16);
  add_line(dm, "bf16 sequential accumulator", HL_BF16);
  const hl_sum_strategy pick[] = {HL_SUM_FP32, HL_SUM_FP32_TO_FP16, HL_SUM_FP16_SEQUENTIAL, HL_SUM_FP16_PAIRWISE,
                                  HL_SUM_BF16_SEQUENTIAL};
  for (int d = 0; d < c->ndev; d++) {
    hl_sum_outcome out[HL_SUM_STRATEGIES];
    double no_traj[HL_SUM_STRATEGIES];
    uint64_t none = 0;
    c->k[d]->sum(16.0f, 4096, &none, 0, out, no_traj);
    for (int i = 0; i < dm->n; i++) dm->line[i].bits[d] = out[pick[i]].result_bits;
  }

  /* 3. absorption: 1 + 0.0001 */
  dm = &demos[2];
  dm->title = "Underflow of an update: 1 + 0.0001";
  dm->seed_code = "torch.cuda.HalfTensor([1.0]) + torch.cuda.HalfTensor([.0001])  ->  1.; in fp32  ->  1.0001";
  dm->why = "near 1 fp16's numbers are 2^-10 = 0.000977 apart and bf16's 2^-7; an update below half of that "
            "rounds away entirely, so small weight updates are lost unless an fp32 master copy receives them";
  add_line(dm, "fp32", HL_F32);
  add_line(dm, "fp16", HL_F16);
  add_line(dm, "bf16", HL_BF16);
  const float one = 1.0f, tiny = 0.0001f;
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < dm->n; i++)
      c->k[d]->arith(HL_ARITH_ADD, HL_ROUND_NATIVE, dm->line[i].f, &one, &tiny, &dm->line[i].bits[d], 1);

  /* 4. 2^-24 */
  dm = &demos[3];
  dm->title = "The smallest fp16: 2^-24, and half of it";
  dm->seed_code = "torch.cuda.HalfTensor([2**-24])  ->  5.9605e-08; below that fp16 has only 0";
  dm->why = "below 2^-14 fp16 is subnormal: fixed spacing 2^-24, fewer significant bits at every step down; "
            "2^-25 is a tie between 0 and 2^-24 and goes to the even 0. Loss scaling lifts gradients out of this zone";
  add_line(dm, "2^-24 in fp16", HL_F16);
  add_line(dm, "2^-25 in fp16", HL_F16);
  add_line(dm, "2^-25 in bf16", HL_BF16);
  add_line(dm, "2^-25 in fp32", HL_F32);
  const float x4[] = {0x1p-24f, 0x1p-25f, 0x1p-25f, 0x1p-25f};
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < dm->n; i++) dm->line[i].bits[d] = convert(c, d, dm->line[i].f, x4[i]);

  /* 5. the largest fp16 */
  dm = &demos[4];
  dm->title = "The largest fp16: 65504";
  dm->seed_code = NULL;
  dm->why = "65504 = (2 - 2^-10) x 2^15; the next step would be 65536 = 2^16, which fp16 cannot hold, so values "
            "from the midpoint 65520 up round to inf. bf16 has fp32's range and rounds 65520 to 65536";
  add_line(dm, "65504 in fp16", HL_F16);
  add_line(dm, "65519.996 in fp16", HL_F16);
  add_line(dm, "65520 in fp16", HL_F16);
  add_line(dm, "65520 in bf16", HL_BF16);
  const float x5[] = {65504.0f, 65519.996f, 65520.0f, 65520.0f};
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < dm->n; i++) dm->line[i].bits[d] = convert(c, d, dm->line[i].f, x5[i]);

  nx_heading("tour: the classic demonstrations, computed here");
  printf("   %-36s", "");
  for (int d = 0; d < c->ndev; d++) printf(d + 1 < c->ndev ? " %-28s" : " %s", nx_dev_name(c, d));
  printf("\n");
  for (int i = 0; i < 5; i++) print_demo(c, i + 1, &demos[i]);

  write_tour(c, demos, 5);
  return 0;
}
