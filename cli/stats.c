/* stats.c — see stats.h. */
#include "cli/stats.h"

#include <stdlib.h>
#include <string.h>

#include "formats/fatal.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

hl_stats hl_stats_of(const double *v, int n) {
  hl_stats s = {0};
  if (n <= 0) return s;
  double *c = HL_CHECK_ALLOC(malloc(sizeof *c * (size_t)n), sizeof *c * (size_t)n, "the samples' sorted copy");
  memcpy(c, v, sizeof *c * (size_t)n);
  qsort(c, (size_t)n, sizeof *c, cmp_double);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += c[i];
  s.n = n;
  s.min = c[0];
  s.max = c[n - 1];
  s.median = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
  s.mean = sum / n;
  free(c);
  return s;
}
