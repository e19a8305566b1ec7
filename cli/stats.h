/* stats.h — the summary statistics every benchmark reports over its
 * repetitions (min, median, max, mean). */
#ifndef HL_STATS_H
#define HL_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

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
