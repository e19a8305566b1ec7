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
/* hl_fatal("cannot write %s: %s", path, strerror(errno)) */
#define hl_fatal(...) hl_fatal_at(__FILE__, __LINE__, __VA_ARGS__)

/* p, or a fatal "out of memory: <what> (<bytes>)" when p is NULL. */
void *hl_check_alloc_at(void *p, size_t bytes, const char *what, const char *file, int line);
#define HL_CHECK_ALLOC(p, bytes, what) hl_check_alloc_at((p), (bytes), (what), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif

#endif
