/* trace.h — named ranges for profiler timelines (NVTX when built with it,
 * nothing otherwise), so that an Nsight Systems capture reads by itself. */
#ifndef HL_TRACE_H
#define HL_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

void hl_range_push(const char *name);
void hl_range_pop(void);
/* true when the ranges go to NVTX */
int hl_trace_enabled(void);

#ifdef __cplusplus
}
#endif

#endif
