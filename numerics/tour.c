/* tour.c — `halflab-numerics tour`: the classic demonstrations in their order,
 * each as the operation, the result per format (and per device), a line
 * saying what to look at and one line of why, for a teacher to run live:
 * all of them, one (--only), or one at a time (--step). Every number is
 * computed by the probe kernels on each device, not written down here. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/format.h"
#include "numerics/nx.h"
#include "numerics/tour.h"

/* The demonstrations in the tour's order: --list prints them, --only takes
 * a number or a name. */
static const struct {
  const char *name, *shows;
} demo_index[NX_TOUR_DEMOS] = {
    {"rounding", "0.4 stored in fp32, fp16 and bf16: none of them holds it exactly"},
    {"overflow", "4096 copies of 16.0 summed in fp32, fp16 and bf16: the exact sum is beyond fp16's range"},
    {"absorption", "1 + 0.0001 in fp32, fp16 and bf16: an update too small to move 1"},
    {"subnormal", "2^-24, fp16's smallest value, and 2^-25 below it"},
    {"largest", "65504, fp16's largest value, and where rounding turns to inf"},
    {"fp8", "448, 57344 and 6: the largest e4m3, e5m2 and e2m1 values, and what a scale does"},
};

int nx_tour_demo(const char *s) {
  for (int i = 0; i < NX_TOUR_DEMOS; i++) {
    char number[8];
    snprintf(number, sizeof number, "%d", i + 1);
    if (!strcmp(s, number) || !strcasecmp(s, demo_index[i].name)) return i + 1;
  }
  return 0;
}

void nx_tour_list(void) {
  printf("The tour's demonstrations (tour --only N or NAME shows one):\n");
  for (int i = 0; i < NX_TOUR_DEMOS; i++) printf("  %d  %-11s %s\n", i + 1, demo_index[i].name, demo_index[i].shows);
}

/* --step's pause: the prompt on `prompt`, then one line read from `in`. */
typedef enum {
  ANSWER_NEXT,         /* Enter (or any line not starting with q) */
  ANSWER_STOP,         /* a line starting with q or Q */
  ANSWER_END_OF_INPUT, /* the rest is shown without pausing */
} pause_answer;

static pause_answer pause_for_enter(FILE *in, FILE *prompt) {
  fputs("   -- press Enter for the next demo, q then Enter to stop -- ", prompt);
  fflush(prompt);
  char line[64];
  if (!fgets(line, sizeof line, in)) {
    fputc('\n', prompt); /* the prompt's line ends here: nothing will echo a newline */
    return ANSWER_END_OF_INPUT;
  }
  bool quit = line[strspn(line, " \t")] == 'q' || line[strspn(line, " \t")] == 'Q';
  while (!strchr(line, '\n') && fgets(line, sizeof line, in)) {} /* the rest of a long line */
  return quit ? ANSWER_STOP : ANSWER_NEXT;
}

static const hl_column tour_columns[] = {
    NX_DEVICE_COLUMN,
    {"demo", "1", HL_COL_INT, NULL, "the demonstration's number, 1 to 6, in the order the tour shows them",
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

void nx_tour_add_line(demo *dm, const char *what, hl_dtype f) {
  if (dm->n == NX_TOUR_MAX_LINES) hl_fatal("a demonstration of more than %d lines", NX_TOUR_MAX_LINES);
  dm->line[dm->n].what = what;
  dm->line[dm->n].f = f;
  dm->n++;
}
#define add_line nx_tour_add_line

/* bits of x converted to f on device d */
static uint32_t convert(const nx_ctx *c, int d, hl_dtype f, float x) {
  uint32_t r;
  c->k[d]->convert(f, HL_OVERFLOW_IEEE, &x, &r, 1);
  return r;
}

static void print_demo(const nx_ctx *c, int number, const demo *dm) {
  printf("\n%d. %s\n", number, dm->title);
  if (dm->usual_form) printf("   usually shown as: %s\n", dm->usual_form);
  for (int i = 0; i < dm->n; i++) {
    const tour_line *l = &dm->line[i];
    printf("   %-40s", l->what);
    for (int d = 0; d < c->ndev; d++) {
      char v[48], h[16], cell[72];
      snprintf(cell, sizeof cell, "%s (%s)", nx_show(hl_format_decode(l->f, l->bits[d]), v, sizeof v),
               nx_hex(l->f, l->bits[d], h, sizeof h));
      printf(d + 1 < c->ndev ? " %-28s" : " %s", cell);
    }
    printf("\n");
  }
  nx_print_wrapped("   look: ", 9, 100, dm->look);
  nx_print_wrapped("   why: ", 8, 100, dm->why);
}

/* the result of line i on device d */
static double result(const demo *dm, int i, int d) { return hl_format_decode(dm->line[i].f, dm->line[i].bits[d]); }

/* the result of line i on device d as the tables show it */
static const char *shown(const demo *dm, int i, int d, char *buf, size_t len) {
  return nx_show(result(dm, i, d), buf, len);
}

/* Each demonstration's "look" line, in plain words, from the results in the
 * last column (the GPU's when it ran), with a note where the devices differ. */
static void write_look_lines(const nx_ctx *c, demo *demos) {
  const int d = c->ndev - 1;
  char v[4][48];
  demo *dm = &demos[0];
  double miss[3];
  for (int i = 0; i < 3; i++) miss[i] = fabs(result(dm, i, d) - 0.4);
  snprintf(dm->look, sizeof dm->look,
           "how far each result is from 0.4: fp32 misses by %.2g, fp16 by %.2g, bf16 by %.2g%s",
           miss[0], miss[1], miss[2],
           miss[0] < miss[1] && miss[1] < miss[2] ? ". The fewer mantissa bits, the bigger the miss" : "");

  dm = &demos[1];
  snprintf(dm->look, sizeof dm->look,
           "the first two lines: the same 4096 x 16 gives %s in fp32 and %s once the result is stored in fp16. "
           "A plain fp16 accumulator ends at %s, a bf16 one at %s (exact: 65536)",
           shown(dm, 0, d, v[0], 48), shown(dm, 1, d, v[1], 48), shown(dm, 2, d, v[2], 48), shown(dm, 4, d, v[3], 48));

  dm = &demos[2];
  bool lost = result(dm, 1, d) == 1 && result(dm, 2, d) == 1;
  snprintf(dm->look, sizeof dm->look, "fp16 gives %s and bf16 %s%s; fp32 gives %s", shown(dm, 1, d, v[1], 48),
           shown(dm, 2, d, v[2], 48), lost ? ": the update of 0.0001 is gone" : "", shown(dm, 0, d, v[0], 48));

  dm = &demos[3];
  char hex[16], kept[160];
  const bool others_keep = result(dm, 2, d) == 0x1p-25 && result(dm, 3, d) == 0x1p-25;
  if (result(dm, 1, d) == 0 && others_keep)
    snprintf(kept, sizeof kept, "2^-25 becomes 0 in fp16, while bf16 and fp32 keep it");
  else
    snprintf(kept, sizeof kept, "2^-25 gives %s in fp16, %s in bf16, %s in fp32", shown(dm, 1, d, v[1], 48),
             shown(dm, 2, d, v[2], 48), shown(dm, 3, d, v[3], 48));
  snprintf(dm->look, sizeof dm->look, "2^-24 is stored in fp16 as %s%s; %s",
           nx_hex(HL_F16, dm->line[0].bits[d], hex, sizeof hex),
           dm->line[0].bits[d] == 0x0001 ? ", the smallest code above zero" : "", kept);

  dm = &demos[4];
  snprintf(dm->look, sizeof dm->look, "the fp16 lines: 65519.996 gives %s, 65520 gives %s; bf16 turns 65520 into %s",
           shown(dm, 1, d, v[1], 48), shown(dm, 2, d, v[2], 48), shown(dm, 3, d, v[3], 48));
  /* demonstration 6 wrote its own (tour_fp8.c) */

  for (int i = 0; i < NX_TOUR_DEMOS; i++) {
    bool agree = true;
    for (int j = 0; j < demos[i].n; j++) {
      const tour_line *l = &demos[i].line[j];
      for (int e = 0; e < d; e++) agree = agree && nx_same_bits(l->f, l->bits[e], l->bits[d]);
    }
    if (!agree)
      strncat(demos[i].look, " (the devices differ here: compare the columns)",
              sizeof demos[i].look - strlen(demos[i].look) - 1);
  }
}

/* The demonstrations on stdout: every one, or o->only; with o->step and a
 * terminal on stdin, a pause after each but the last. */
static void show_demos(const nx_ctx *c, const demo *demos, const nx_tour_opts *o) {
  nx_heading("tour: the classic demonstrations, computed here");
  printf("   %-40s", "");
  for (int d = 0; d < c->ndev; d++) printf(d + 1 < c->ndev ? " %-28s" : " %s", nx_dev_name(c, d));
  printf("\n");
  bool pausing = o->step && !o->only && isatty(STDIN_FILENO);
  for (int i = 0; i < NX_TOUR_DEMOS; i++) {
    if (o->only && o->only != i + 1) continue;
    print_demo(c, i + 1, &demos[i]);
    if (!pausing || i + 1 == NX_TOUR_DEMOS) continue;
    fflush(stdout);
    pause_answer answer = pause_for_enter(stdin, stderr);
    if (answer == ANSWER_STOP) break;
    pausing = answer == ANSWER_NEXT;
  }
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

int nx_tour(const nx_ctx *c, const nx_tour_opts *o) {
  demo demos[NX_TOUR_DEMOS];
  memset(demos, 0, sizeof demos);

  /* 1. 0.4 in binary */
  demo *dm = &demos[0];
  dm->title = "0.4 as a float: 0.0110 0110 0110 ... in binary never ends, so every format rounds it";
  dm->usual_form = "n = 0.4  (fp32: sign 0, exponent 01111101 = -2 + 127, mantissa 10011001100110011001101)";
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
  dm->usual_form = "a = torch.cuda.HalfTensor(4096); a.fill_(16.0); a.sum()  ->  inf; the FloatTensor gives 65536";
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
  dm->usual_form = "torch.cuda.HalfTensor([1.0]) + torch.cuda.HalfTensor([.0001])  ->  1.; in fp32  ->  1.0001";
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
  dm->usual_form = "torch.cuda.HalfTensor([2**-24])  ->  5.9605e-08; below that fp16 has only 0";
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
  dm->usual_form = NULL;
  dm->why = "65504 = (2 - 2^-10) x 2^15; the next step would be 65536 = 2^16, which fp16 cannot hold, so values "
            "from the midpoint 65520 up round to inf. bf16 has fp32's range and rounds 65520 to 65536";
  add_line(dm, "65504 in fp16", HL_F16);
  add_line(dm, "65519.996 in fp16", HL_F16);
  add_line(dm, "65520 in fp16", HL_F16);
  add_line(dm, "65520 in bf16", HL_BF16);
  const float x5[] = {65504.0f, 65519.996f, 65520.0f, 65520.0f};
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < dm->n; i++) dm->line[i].bits[d] = convert(c, d, dm->line[i].f, x5[i]);

  /* 6. fp8, fp6, fp4 and scales */
  nx_tour_fp8 fp8;
  nx_tour_fp8_run(c, &demos[5], &fp8);

  write_look_lines(c, demos);
  show_demos(c, demos, o);
  if (!o->only) {
    write_tour(c, demos, NX_TOUR_DEMOS);
    nx_tour_fp8_write(c, &fp8);
  }
  return 0;
}
