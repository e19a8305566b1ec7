/* tour.h — what tour.c and its demonstrations in other files share: a
 * demonstration's lines (a value per device, in one format) and its text. */
#ifndef HL_NX_TOUR_H
#define HL_NX_TOUR_H

#include <stdint.h>

#include "formats/dtype.h"
#include "numerics/nx.h"

#define NX_TOUR_MAX_LINES 20

typedef struct {
  const char *what; /* "fp16, fp32 accumulator" */
  hl_dtype f;
  uint32_t bits[NX_MAX_DEVICES];
} tour_line;

typedef struct {
  const char *title, *usual_form, *why;
  char look[640]; /* what to look at, from the results */
  tour_line line[NX_TOUR_MAX_LINES];
  int n;
} demo;

/* A line of demonstration dm (its bits filled in afterwards). */
void nx_tour_add_line(demo *dm, const char *what, hl_dtype f);

/* ------------------------------------------------ 6. fp8 (tour_fp8.c) -- */

/* The tensor of demonstration 6: one MX block of 32 values, largest 1000. */
#define NX_FP8_ELEMENTS 32
typedef enum {
  NX_FP8_E4M3_RAW = 0,  /* e4m3, no scale: the format's own overflow (NaN) */
  NX_FP8_E4M3_SATURATED,/* e4m3, no scale, clamped to +-448 */
  NX_FP8_E4M3_TENSOR,   /* e4m3 after the per-tensor scale 448 / amax */
  NX_FP8_MXFP4_FLOOR,   /* e2m1 with the block's E8M0 scale, OCP's FLOOR rule */
  NX_FP8_MXFP4_RCEIL,   /* e2m1 with the block's E8M0 scale, the RCEIL rule */
  NX_FP8_WAYS
} nx_fp8_way;

typedef struct {
  float x[NX_FP8_ELEMENTS];
  double stored[NX_MAX_DEVICES][NX_FP8_WAYS][NX_FP8_ELEMENTS]; /* the value the way gives back for x */
  float tensor_scale;              /* 448 / amax (fp32) */
  uint8_t mx_scale_code[NX_FP8_WAYS]; /* the E8M0 code of the MX ways' block scale */
} nx_tour_fp8;

/* Demonstration 6 computed on every device: its lines, look and why in dm,
 * the tensor's values in t. */
void nx_tour_fp8_run(const nx_ctx *c, demo *dm, nx_tour_fp8 *t);
/* tour_fp8.csv: one row per device, way and element. */
void nx_tour_fp8_write(const nx_ctx *c, const nx_tour_fp8 *t);

#endif /* HL_NX_TOUR_H */
