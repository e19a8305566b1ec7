/* timer.h — a monotonic clock (summary statistics: stats.h). */
#ifndef HL_TIMER_H
#define HL_TIMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC, in seconds / nanoseconds */
double hl_now_s(void);
uint64_t hl_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif
