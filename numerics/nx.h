/* nx.h — what the subcommands of halflab-numerics share: the run context
 * (devices, output folder, options), CSV files and value formatting. */
#ifndef HL_NX_H
#define HL_NX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/csv.h"
#include "formats/format.h"
#include "kernels/backend.h"
#include "kernels/probe.h"

#define NX_MAX_DEVICES 2

typedef struct {
  int ndev;
  hl_device_kind dev[NX_MAX_DEVICES]; /* the CPU first when both run */
  const hl_probe_kernels *k[NX_MAX_DEVICES];
  const char *outdir;
  bool quick;
  uint64_t seed;
} nx_ctx;

/* The options of `overflow`; has_count / has_value: given on the command line. */
typedef struct {
  uint64_t count;
  double value;
  bool has_count, has_value;
} nx_overflow_opts;

int nx_formats(const nx_ctx *c, const double *value); /* value: --value X, or NULL */
int nx_overflow(const nx_ctx *c, const nx_overflow_opts *o);
int nx_absorption(const nx_ctx *c);
int nx_subnormal(const nx_ctx *c);

/* The tour (tour.c): its demonstrations are numbered 1 to NX_TOUR_DEMOS. */
#define NX_TOUR_DEMOS 6
typedef struct {
  int only;  /* --only: the one demonstration to show, 1 to NX_TOUR_DEMOS; 0: all, and tour.csv written */
  bool step; /* --step: pause after each demonstration when stdin is a terminal */
} nx_tour_opts;
int nx_tour(const nx_ctx *c, const nx_tour_opts *o);
/* A demonstration's number from its number or its name ("2", "overflow",
 * any case); 0 when s is neither. */
int nx_tour_demo(const char *s);
/* --list: the demonstrations, one line each (number, name, what it shows). */
void nx_tour_list(void);

/* ------------------------------------------------------------ schemas -- */

/* Each CSV the program writes, described once (cli/schema.h): the table
 * writes its header, its "# units:" line, every row and its section of
 * docs/columns.md. Defined next to the code that fills them. */
extern const hl_schema nx_formats_schema, nx_formats_value_schema;                    /* formats.c */
extern const hl_schema nx_overflow_schema, nx_overflow_trajectory_schema;             /* overflow.c */
extern const hl_schema nx_absorption_schema, nx_absorption_sweep_schema, nx_lost_update_schema,
    nx_harmonic_schema;                                                                /* absorption.c */
extern const hl_schema nx_subnormal_ladder_schema, nx_loss_scale_schema, nx_loss_scale_distribution_schema,
    nx_ftz_schema;                                                                     /* subnormal.c */
extern const hl_schema nx_tour_schema;                                                 /* tour.c */
extern const hl_schema nx_tour_fp8_schema;                                             /* tour_fp8.c */

/* The columns every probe's table starts with. */
#define NX_DEVICE_COLUMN \
  {"device", "", HL_COL_TEXT, NULL, "where the probe ran: cpu or cuda", "numerics/nx_util.c: nx_dev_name"}

/* ------------------------------------------------------------ helpers -- */

const char *nx_dev_name(const nx_ctx *c, int d);   /* "cpu", "cuda" (CSV device column) */
const char *nx_dev_label(const nx_ctx *c, int d);  /* "cpu (Intel Xeon ...)" for headings */

/* Locks table NAME of the output folder for the rest of the run
 * (cli/output_guard.h): another run writing it is refused, exit 2 naming
 * its PID. main.c locks every table of the subcommand before it starts;
 * nx_csv_open locks any other before writing it. */
void nx_lock_table(const nx_ctx *c, const char *name);

/* The table schema s describes (cli/schema.h), in the output folder: its
 * metadata, "# units:" line and header; rows go in with hl_csv_put. I/O
 * failure is fatal (exit 1). */
hl_csv *nx_csv_open(const nx_ctx *c, const hl_schema *s);
void nx_csv_close(hl_csv *f);

/* Display of a value held in format f: "%.9g" (every fp32 value reads back
 * exactly), "inf", "-inf", "nan". */
const char *nx_show(double v, char *buf, size_t len);
/* Hex of an encoding, as wide as the format: 0x3c00, 0x3f800000, 0x7e. */
const char *nx_hex(hl_dtype f, uint32_t bits, char *buf, size_t len);
/* The exact decimal value of a double when it has at most `maxdig`
 * significant digits, else the shortest round-trip form. */
const char *nx_exact(double v, int maxdig, char *buf, size_t len);
/* "2^-24" for exact powers of two, else nx_show. */
const char *nx_pow2(double v, char *buf, size_t len);

/* Do two encodings of format f agree bit for bit (any NaN matches any NaN)? */
bool nx_same_bits(hl_dtype f, uint32_t a, uint32_t b);
/* Print, after a probe's table, how the other devices compare with device 0:
 * `mismatches` values differed out of `total`. */
void nx_report_agreement(const nx_ctx *c, int d, const char *what, long mismatches, long total);

/* Print `text` on stdout wrapped at `width` columns: `first` before the
 * first line, `indent` spaces before the others. */
void nx_print_wrapped(const char *first, int indent, int width, const char *text);

/* Section heading on stdout. */
void nx_heading(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
