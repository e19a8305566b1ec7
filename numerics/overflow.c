/* overflow.c — `halflab-numerics overflow [--count N] [--value V]`: the
 * classic 4096 x 16.0 (exact sum 65536, beyond fp16's 65504), summed seven
 * ways on every device, with the element at which each way first loses an
 * add or overflows, and the running sum along the way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "formats/format.h"
#include "numerics/nx.h"

static const char *strategy_id[HL_SUM_STRATEGIES] = {
    "fp16_sequential", "fp16_pairwise", "fp16_kahan", "fp32_acc_fp16_result", "fp32", "bf16_sequential",
    "bf16_pairwise"};
static const char *strategy_label[HL_SUM_STRATEGIES] = {
    "fp16 sequential",        "fp16 pairwise (tree)",   "fp16 Kahan-compensated", "fp32 accumulator -> fp16",
    "fp32 accumulator, fp32", "bf16 sequential",        "bf16 pairwise (tree)"};

#define TRAJECTORY_POINTS 4096 /* at most this many steps (+ step 0) in the trajectory */

/* ----------------------------------------------------------- the tables -- */

#define STRATEGY_MEANING                                                                                         \
  "how the sum is taken: fp16_sequential; fp16_pairwise (a tree); fp16_kahan (Kahan-compensated); "              \
  "fp32_acc_fp16_result (fp16 data, fp32 accumulator, the result rounded to fp16); fp32; bf16_sequential; "      \
  "bf16_pairwise"

static const hl_column overflow_columns[] = {
    NX_DEVICE_COLUMN,
    {"count", "1", HL_COL_INT, NULL, "how many copies of the value are summed (--count)", "numerics/overflow.c: nx_overflow"},
    {"value", "1", HL_COL_REAL, "%.9g", "the value summed, as given (fp32; --value)", "numerics/overflow.c: nx_overflow"},
    {"strategy", "", HL_COL_TEXT, NULL, STRATEGY_MEANING, "numerics/overflow.c: write_outcomes"},
    {"format", "", HL_COL_TEXT, NULL, "the format of the strategy's result", "numerics/overflow.c: write_outcomes"},
    {"addend", "1", HL_COL_REAL, "%.17g", "the value as the strategy stores it (rounded to its format)",
     "numerics/overflow.c: write_outcomes"},
    {"exact_sum", "1", HL_COL_REAL, "%.17g", "count x addend, computed exactly", "numerics/overflow.c: write_outcomes"},
    {"result", "1", HL_COL_REAL, "%.17g", "the sum as the probe kernel computed it (inf or nan where it overflowed)",
     "numerics/overflow.c: nx_overflow"},
    {"result_hex", "", HL_COL_TEXT, NULL, "the result's encoding in hex, as wide as the format",
     "numerics/overflow.c: nx_overflow"},
    {"first_lost_add", "1", HL_COL_INT, NULL,
     "the first element (counted from 1) that left the running sum unchanged; empty: none did",
     "numerics/overflow.c: nx_overflow"},
    {"total_at_lost", "1", HL_COL_REAL, "%.17g", "the running sum that element met; empty: none was lost",
     "numerics/overflow.c: nx_overflow"},
    {"first_overflow_add", "1", HL_COL_INT, NULL,
     "the first element after which the running sum was inf or NaN; empty: it stayed finite",
     "numerics/overflow.c: nx_overflow"},
    {"total_before_overflow", "1", HL_COL_REAL, "%.17g", "the running sum before that element; empty: it stayed finite",
     "numerics/overflow.c: nx_overflow"},
    {"first_nan_add", "1", HL_COL_INT, NULL, "the first element after which the running sum was NaN; empty: never",
     "numerics/overflow.c: nx_overflow"},
};
const hl_schema nx_overflow_schema = {
    "overflow.csv", "halflab-numerics overflow", "numerics/overflow.c: write_outcomes",
    "One row per device, case (count x value) and strategy: the sum, and the elements at which it first lost an add, "
    "overflowed and became NaN.",
    HL_SCHEMA_COLUMNS(overflow_columns)};

static const hl_column trajectory_columns[] = {
    NX_DEVICE_COLUMN,
    {"count", "1", HL_COL_INT, NULL, "how many copies of the value are summed (--count)", "numerics/overflow.c: nx_overflow"},
    {"value", "1", HL_COL_REAL, "%.9g", "the value summed, as given (fp32; --value)", "numerics/overflow.c: nx_overflow"},
    {"strategy", "", HL_COL_TEXT, NULL, STRATEGY_MEANING, "numerics/overflow.c: write_trajectory"},
    {"adds", "1", HL_COL_INT, NULL, "elements added so far (every one up to 4096, else 4096 points evenly spread)",
     "numerics/overflow.c: sample_points"},
    {"running_sum", "1", HL_COL_REAL, "%.17g", "the strategy's sum after that many elements (inf or nan once it overflowed)",
     "numerics/overflow.c: nx_overflow"},
};
const hl_schema nx_overflow_trajectory_schema = {
    "overflow_trajectory.csv", "halflab-numerics overflow", "numerics/overflow.c: write_trajectory",
    "One row per device, strategy and sampled element of the first case: the running sum along the way.",
    HL_SCHEMA_COLUMNS(trajectory_columns)};

typedef struct {
  uint64_t count;
  float value;
  bool primary; /* the case whose trajectory is written */
} sum_case;

typedef struct {
  hl_sum_outcome out[HL_SUM_STRATEGIES];
  double *traj; /* [strategy][nsamples] */
} sum_result;

/* Smallest value that rounds to inf in f: max + half a spacing there. */
static double overflow_threshold(hl_dtype f) {
  const hl_format_info *fi = hl_format_get(f);
  return fi->max + ldexp(1.0, fi->emax - fi->man_bits - 1);
}

/* Gap from x (>= 0, finite, in f) to the next value of f. */
static double spacing_at(hl_dtype f, double x) {
  uint32_t bits = hl_format_encode(f, (float)x, HL_OVERFLOW_IEEE), up;
  if (!hl_format_next_up(f, bits, &up)) return INFINITY;
  return hl_format_decode(f, up) - x;
}

/* One line saying why the strategy ended where it did, from what it recorded.
 * value: the value as given (fp32); v: the addend as the strategy stores it. */
static void explain(hl_sum_strategy s, const hl_sum_outcome *o, uint64_t count, float value, double v, double result,
                    double exact, char *buf, size_t len) {
  const hl_dtype f = hl_sum_format(s);
  const char *fn = hl_dtype_format_name(f);
  char a[48], b[48], t[48], u[48];
  size_t k = 0;
#define SAY(...) (k += (size_t)snprintf(buf + k, k < len ? len - k : 0, __VA_ARGS__))
  buf[0] = '\0';
  if (isinf(v)) {
    SAY("%s itself is beyond %s's range and rounds to %s: every element is %s already", nx_show(value, a, sizeof a), fn,
        nx_show(v, b, sizeof b), b);
    if (o->first_nan) SAY("; element %llu then meets inf - inf = NaN", (unsigned long long)o->first_nan);
    return;
  }
  if (v == 0 && value != 0) {
    SAY("%s rounds to 0 in %s (below half its smallest subnormal): every element is 0", nx_show(value, a, sizeof a), fn);
    return;
  }
  bool lost_first = o->first_lost && (!o->first_overflow || o->first_lost < o->first_overflow);
  if (lost_first) {
    const hl_dtype acc = s == HL_SUM_FP32_TO_FP16 ? HL_F32 : f; /* where the adds happen */
    const double T = o->total_at_lost, gap = spacing_at(acc, fabs(T));
    char ts[48], vs[48], gs[48], us[48];
    nx_show(T, ts, sizeof ts), nx_show(v, vs, sizeof vs), nx_show(gap, gs, sizeof gs);
    nx_show(T + copysign(gap, T), us, sizeof us);
    const unsigned long long at = (unsigned long long)o->first_lost;
    if (s == HL_SUM_FP16_PAIRWISE || s == HL_SUM_BF16_PAIRWISE)
      SAY("element %llu changes nothing: the tree's merges round it away", at);
    else if (s == HL_SUM_FP16_KAHAN)
      SAY("element %llu changes neither the sum nor its compensation", at);
    else if (2 * fabs(v) == gap)
      SAY("element %llu is lost: %s + %s is a tie between %s and %s (%s spacing there: %s) and rounds to the even %s",
          at, ts, vs, ts, us, hl_dtype_format_name(acc), gs, ts);
    else
      SAY("element %llu is lost: %s + %s rounds back to %s (%s spacing there: %s, more than twice %s)", at, ts, vs, ts,
          hl_dtype_format_name(acc), gs, vs);
    if (result == T && !o->first_overflow) SAY("; so is every later one");
  }
  if (o->first_overflow) {
    const double T = o->total_before_overflow, reach = T + v;
    const unsigned long long at = (unsigned long long)o->first_overflow;
    const char *inf = reach < 0 ? "-inf" : "inf";
    if (k) SAY("; ");
    if (s == HL_SUM_FP32_TO_FP16 && o->first_overflow == count && fabs(reach) <= hl_format_get(HL_F32)->max)
      SAY("the fp32 accumulator holds %s exactly; the final cast to fp16 rounds it to %s (fp16 overflows from magnitude %s)",
          nx_show(reach, a, sizeof a), inf, nx_show(overflow_threshold(HL_F16), b, sizeof b));
    else {
      const hl_dtype of = s == HL_SUM_FP32_TO_FP16 ? HL_F32 : f;
      if (s == HL_SUM_FP16_PAIRWISE || s == HL_SUM_BF16_PAIRWISE)
        SAY("the partial sums are exact until element %llu, whose merges reach %s: %s rounds that to %s", at,
            nx_show(reach, a, sizeof a), hl_dtype_format_name(of), inf);
      else
        SAY("element %llu: %s + %s = %s, which %s rounds to %s", at, nx_show(T, t, sizeof t), nx_show(v, a, sizeof a),
            nx_show(reach, u, sizeof u), hl_dtype_format_name(of), inf);
      SAY(" (%s overflows from magnitude %s)", hl_dtype_format_name(of), nx_show(overflow_threshold(of), b, sizeof b));
    }
    if (o->first_nan)
      SAY("; element %llu then meets inf - inf = NaN%s", (unsigned long long)o->first_nan,
          s == HL_SUM_FP16_KAHAN ? " in the compensation" : "");
  }
  if (!k) {
    if (result == exact) SAY("exact: every partial sum is representable");
    else SAY("rounded to %s (exact %s), but no element was lost entirely", nx_show(result, a, sizeof a),
             nx_show(exact, b, sizeof b));
  }
#undef SAY
}

static void print_case(const nx_ctx *c, const sum_case *sc, const sum_result *r, int d) {
  char v[48], ex[48];
  nx_heading("overflow: %llu x %s summed seven ways, on %s", (unsigned long long)sc->count,
             nx_show(sc->value, v, sizeof v), nx_dev_label(c, d));
  long double exact = (long double)sc->count * sc->value;
  printf("  exact sum %s; fp16 holds at most 65504 and rounds to inf from 65520; bf16 keeps 8 significant bits\n\n",
         nx_show((double)exact, ex, sizeof ex));
  printf("  %-26s %-15s %-11s %-11s %s\n", "strategy", "result", "bits", "first lost", "first inf/NaN");
  for (int s = 0; s < HL_SUM_STRATEGIES; s++) {
    hl_dtype f = hl_sum_format((hl_sum_strategy)s);
    char res[48], hex[16], lost[24] = "-", over[24] = "-";
    if (r->out[s].first_lost) snprintf(lost, sizeof lost, "%llu", (unsigned long long)r->out[s].first_lost);
    if (r->out[s].first_overflow) snprintf(over, sizeof over, "%llu", (unsigned long long)r->out[s].first_overflow);
    printf("  %-26s %-15s %-11s %-11s %s\n", strategy_label[s], nx_show(hl_format_decode(f, r->out[s].result_bits), res, sizeof res),
           nx_hex(f, r->out[s].result_bits, hex, sizeof hex), lost, over);
  }
  printf("\n");
  for (int s = 0; s < HL_SUM_STRATEGIES; s++) {
    hl_dtype f = hl_sum_format((hl_sum_strategy)s);
    double vf = hl_format_stored(f, sc->value);
    char why[512];
    explain((hl_sum_strategy)s, &r->out[s], sc->count, sc->value, vf, hl_format_decode(f, r->out[s].result_bits),
            (double)((long double)sc->count * vf), why, sizeof why);
    char first[40];
    snprintf(first, sizeof first, "  %-26s ", strategy_label[s]);
    nx_print_wrapped(first, 29, 110, why);
  }
}

/* Trajectory points: every element up to TRAJECTORY_POINTS, else evenly spread. */
static int sample_points(uint64_t count, uint64_t **at) {
  uint64_t m = count < TRAJECTORY_POINTS ? count : TRAJECTORY_POINTS;
  *at = malloc(sizeof(uint64_t) * (size_t)(m + 1));
  if (!*at) hl_fatal("out of memory");
  for (uint64_t i = 0; i <= m; i++) (*at)[i] = (uint64_t)(((long double)i * count) / m + 0.5L);
  return (int)(m + 1);
}

/* An event's element (0: it did not happen) and the running sum it met. */
static void put_event(hl_row *r, const char *at_column, uint64_t at, const char *total_column, double total) {
  if (!at) {
    hl_row_missing(r, at_column);
    if (total_column) hl_row_missing(r, total_column);
    return;
  }
  hl_row_int(r, at_column, (int64_t)at);
  if (total_column) hl_row_real(r, total_column, total);
}

static void write_outcomes(const nx_ctx *c, const sum_case *cases, int ncases, sum_result res[][NX_MAX_DEVICES]) {
  hl_csv *f = nx_csv_open(c, &nx_overflow_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int i = 0; i < ncases; i++)
      for (int s = 0; s < HL_SUM_STRATEGIES; s++) {
        const hl_sum_outcome *o = &res[i][d].out[s];
        hl_dtype fm = hl_sum_format((hl_sum_strategy)s);
        double vf = hl_format_stored(fm, cases[i].value);
        char hex[16];
        hl_row_begin(&r, &nx_overflow_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_int(&r, "count", (int64_t)cases[i].count);
        hl_row_real(&r, "value", cases[i].value);
        hl_row_text(&r, "strategy", strategy_id[s]);
        hl_row_text(&r, "format", hl_dtype_format_name(fm));
        hl_row_real(&r, "addend", vf);
        hl_row_real_long(&r, "exact_sum", (long double)cases[i].count * vf); /* up to 55 bits */
        hl_row_real(&r, "result", hl_format_decode(fm, o->result_bits));
        hl_row_text(&r, "result_hex", nx_hex(fm, o->result_bits, hex, sizeof hex));
        put_event(&r, "first_lost_add", o->first_lost, "total_at_lost", o->total_at_lost);
        put_event(&r, "first_overflow_add", o->first_overflow, "total_before_overflow", o->total_before_overflow);
        put_event(&r, "first_nan_add", o->first_nan, NULL, 0);
        hl_csv_put(f, &r);
      }
  nx_csv_close(f);
}

/* The first case's running sums at the sampled elements `at`. */
static void write_trajectory(const nx_ctx *c, const sum_case *sc, const sum_result *res, const uint64_t *at, int ns) {
  hl_csv *f = nx_csv_open(c, &nx_overflow_trajectory_schema);
  hl_row r;
  for (int d = 0; d < c->ndev; d++)
    for (int s = 0; s < HL_SUM_STRATEGIES; s++)
      for (int j = 0; j < ns; j++) {
        hl_row_begin(&r, &nx_overflow_trajectory_schema);
        hl_row_text(&r, "device", nx_dev_name(c, d));
        hl_row_int(&r, "count", (int64_t)sc->count);
        hl_row_real(&r, "value", sc->value);
        hl_row_text(&r, "strategy", strategy_id[s]);
        hl_row_int(&r, "adds", (int64_t)at[j]);
        hl_row_real(&r, "running_sum", res[d].traj[s * ns + j]);
        hl_csv_put(f, &r);
      }
  nx_csv_close(f);
}

int nx_overflow(const nx_ctx *c, const nx_overflow_opts *opts) {
  sum_case cases[3];
  int ncases = 0;
  cases[ncases++] = (sum_case){opts->count, (float)opts->value, true};
  if (!opts->has_count && !opts->has_value) { /* contrasts: no overflow, and a smaller addend */
    cases[ncases++] = (sum_case){4000, 16.0f, false};
    cases[ncases++] = (sum_case){4096, 1.0f, false};
  }
  if (opts->count > 100000000 && isatty(2))
    fprintf(stderr, "%s: summing %llu values seven ways: a minute or more on a CPU\n", hl_prog(),
            (unsigned long long)opts->count);

  uint64_t *at;
  const int ns = sample_points(cases[0].count, &at);
  uint64_t none[1] = {0};
  static double no_traj[HL_SUM_STRATEGIES];
  sum_result res[3][NX_MAX_DEVICES];
  for (int i = 0; i < ncases; i++)
    for (int d = 0; d < c->ndev; d++) {
      sum_result *r = &res[i][d];
      r->traj = cases[i].primary ? malloc(sizeof(double) * HL_SUM_STRATEGIES * (size_t)ns) : no_traj;
      if (!r->traj) hl_fatal("out of memory");
      c->k[d]->sum(cases[i].value, cases[i].count, cases[i].primary ? at : none, cases[i].primary ? ns : 0, r->out,
                   r->traj);
    }

  for (int i = 0; i < ncases; i++) {
    print_case(c, &cases[i], &res[i][0], 0);
    for (int d = 1; d < c->ndev; d++) {
      long bad = 0, total = 0;
      for (int s = 0; s < HL_SUM_STRATEGIES; s++) {
        const hl_sum_outcome *a = &res[i][0].out[s], *b = &res[i][d].out[s];
        total += 4;
        bad += !nx_same_bits(hl_sum_format((hl_sum_strategy)s), a->result_bits, b->result_bits);
        bad += a->first_lost != b->first_lost;
        bad += a->first_overflow != b->first_overflow;
        bad += a->first_nan != b->first_nan;
        if (cases[i].primary)
          for (int j = 0; j < ns; j++) {
            double x = res[i][0].traj[s * ns + j], y = res[i][d].traj[s * ns + j];
            total++;
            bad += !(x == y || (isnan(x) && isnan(y)));
          }
      }
      printf("\n");
      nx_report_agreement(c, d, "results, events and trajectories", bad, total);
    }
  }

  write_outcomes(c, cases, ncases, res);
  write_trajectory(c, &cases[0], res[0], at, ns);
  for (int d = 0; d < c->ndev; d++) free(res[0][d].traj);
  free(at);
  return 0;
}
