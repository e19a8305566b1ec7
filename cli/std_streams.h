/* std_streams.h — the three standard streams, checked: at start a closed
 * one is replaced, so that no file a program opens takes its number (a CSV
 * must never become "stdout"); at exit what went to stdout is flushed and
 * closed, and a write that failed there (a full disk, a closed pipe, a
 * stdout that was closed at start) is one line on stderr,
 *
 *   halflab-bench: cannot write to stdout: No space left on device
 *
 * and exit status 1: a listing cut short never passes for a whole one. */
#ifndef HL_STD_STREAMS_H
#define HL_STD_STREAMS_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens /dev/null on descriptors 0 and 2, and /dev/full on 1, where they
 * are closed (every later write to a closed stdout then fails, and the exit
 * check names it as "Bad file descriptor"), and registers the exit check.
 * Once per process (hl_cli_init calls it); the first thing a program does. */
void hl_std_streams_guard(void);

/* The exit check, for a program that chooses its own exit status (a run
 * stopped by a signal): flushes and closes stdout; on a failure prints the
 * line above and returns 1 when `status` is 0, else `status`. The exit
 * check then has nothing left to do. */
int hl_stdout_finish(int status);

#ifdef __cplusplus
}
#endif

#endif
