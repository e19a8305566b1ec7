/* error.h — how the AMP core reports what it cannot do.
 *
 * Never crash, never garbage: a core function that cannot give a correct
 * result returns NULL (or false, or NaN for hl_item) and leaves one line
 * here naming the op and the shapes or dtypes involved, e.g.
 *   "mm: dtype mismatch: f32[8,8] and f16[8,8] (cast one of them, or run
 *    inside an autocast region)".
 * A NULL input propagates: the op returns NULL and keeps the message of
 * the failure that produced it, so a chain of calls can be checked once
 * at its end. The message is per thread, like errno: success does not
 * clear it; hl_error_clear() does.
 */
#ifndef HL_ERROR_H
#define HL_ERROR_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The last message on this thread, "" when none. */
const char *hl_error(void);
bool hl_has_error(void);
void hl_error_clear(void);

/* Sets the message (printf-style) and returns NULL, so that a failing
 * function can `return hl_fail("op: ...")`. */
void *hl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, returning false. */
bool hl_fail_bool(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The same as hl_fail_bool, for a system call that failed with errno err.
 * hl_error_is_system() then says whether the cause lies in the system (EIO,
 * ENOMEM, ...: a runtime failure, exit 1 in the programs) rather than in
 * the path the user gave (ENOENT, EACCES, EISDIR, ...: bad input, exit 2).
 * A later message that wraps this one ("load: %s") keeps the cause; any
 * other message, or hl_error_clear(), drops it. */
bool hl_fail_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool hl_error_is_system(void);
/* For programs: if `ok` is false (or a NULL pointer), print the message
 * with the call's file:line and exit 1. */
#define HL_CHECK(expr) hl_check_((expr) ? 1 : 0, #expr, __FILE__, __LINE__)
void hl_check_(int ok, const char *what, const char *file, int line);

#ifdef __cplusplus
}
#endif

#endif
