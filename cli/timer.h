/* timer.h — a monotonic clock and the summary statistics every benchmark
 * reports (min, median, max over repetitions). */
#ifndef HL_TIMER_H
#define HL_TIMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC, in seconds / nanoseconds */
double hl_now_s(void);
uint64_t hl_now_ns(void);

typedef struct {
  int n;
  double min, median, max, mean;
} hl_stats;

/* Statistics of v[0..n) (v is not modified). n == 0 gives all zeros. */
hl_stats hl_stats_of(const double *v, int n);

#ifdef __cplusplus
}
#endif

#endif
