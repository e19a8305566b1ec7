/* trace.c — NVTX ranges (header-only NVTX3: without a profiler attached each
 * call is a cheap no-op). */
#include "core/base/profiler_ranges.h"

#ifdef HL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
void hl_range_push(const char *name) { nvtxRangePushA(name); }
void hl_range_pop(void) { nvtxRangePop(); }
int hl_trace_enabled(void) { return 1; }
#else
void hl_range_push(const char *name) { (void)name; }
void hl_range_pop(void) {}
int hl_trace_enabled(void) { return 0; }
#endif
