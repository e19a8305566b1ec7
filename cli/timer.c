/* timer.c — the monotonic clock. */
#include "cli/timer.h"

#include <time.h>

uint64_t hl_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

double hl_now_s(void) { return (double)hl_now_ns() * 1e-9; }
