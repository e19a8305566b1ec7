/* fatal.h — the one way halflab stops on a failure it cannot recover from
 * (a library call that failed, memory that could not be had): one line on
 * stderr,
 *
 *   halflab-train: cudaMalloc(&p, bytes) failed: out of memory (kernels/cuda/backend_cuda.cu:88)
 *
 * naming the program, what failed and the library's own message, then where,
 * and exit status 1. It lives in the bottom layer so that every layer, the
 * kernels included, stops the same way. Bad user input is not fatal in this
 * sense: cli.h's hl_usage_error answers it with exit status 2. */
#ifndef HL_FATAL_H
#define HL_FATAL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HL_EXIT_FAILURE 1

/* The program name the line starts with ("halflab" until a program sets it). */
void hl_fatal_set_program(const char *name);
const char *hl_fatal_program(void);

__attribute__((noreturn, format(printf, 3, 4))) void hl_fatal_at(const char *file, int line, const char *fmt, ...);
/* hl_fatal("cannot write %s: %s", path, strerror(errno))
 *
 * The line is built whole and written with one write(2), then exit(1) runs
 * the exit handlers (which finish the run's files). A second fatal while the
 * first is under way (in an exit handler, or on another thread) writes its
 * line and ends the process at once with _exit(1): every fatal path ends the
 * process, whatever state it is in. */
#define hl_fatal(...) hl_fatal_at(__FILE__, __LINE__, __VA_ARGS__)

/* Writes LEN bytes of LINE (one whole line of text) to FD with one
 * write(2), repeated only for what a signal or a pipe cut short: lines of
 * processes that share a stderr (mpirun's ranks) do not interleave.
 * Async-signal-safe. */
void hl_write_line(int fd, const char *line, size_t len);
/* The line snprintf made in LINE (SIZE bytes, MADE its return value),
 * written as hl_write_line does; one too long for LINE is cut, and still
 * ends in '\n'. */
void hl_write_made_line(int fd, char *line, size_t size, int made);

/* Whether the process is ending through hl_fatal: exit handlers that would
 * start something long (load a library, wait for a lock) skip it. */
int hl_fatal_in_progress(void);

/* p, or a fatal "out of memory: <what> (<bytes>)" when p is NULL. */
void *hl_check_alloc_at(void *p, size_t bytes, const char *what, const char *file, int line);
#define HL_CHECK_ALLOC(p, bytes, what) hl_check_alloc_at((p), (bytes), (what), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif

#endif
