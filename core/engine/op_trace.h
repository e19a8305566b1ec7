/* op_trace.h — `--trace-ops`: one line per op as it runs, with the dtypes
 * it was given, the dtype it computed in and what autocast did, so a user
 * can watch the policy act:
 *
 *   mm        in f32[8,8] f32[8,8]  -> f16[8,8]   autocast cpu f16: lower precision
 *   to        in f32[8,8]           -> f16[8,8]   (autocast cast, cached)
 *   mm        in f16[8,8] f16[8,8]  -> f16[8,8]   backward
 *
 * Off by default; a program turns it on with hl_op_trace_to(stderr). The
 * sink is process-wide (lines from several threads interleave whole). */
#ifndef HL_OP_TRACE_H
#define HL_OP_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NULL turns tracing off. */
void hl_op_trace_to(FILE *out);
bool hl_op_tracing(void);
/* One line (the dispatcher calls this). */
void hl_op_trace_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif
