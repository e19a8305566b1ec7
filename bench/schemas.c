/* schemas.c — the column table of every CSV halflab-bench writes (cli/schema.h).
 * Each table writes its file's header, its "# units:" line and every row,
 * and `halflab-bench --columns-md` prints them for docs/columns.md. */
#include "bench/bench.h"

#define DEVICE_COLUMN \
  {"device", "", HL_COL_TEXT, NULL, "the device that ran the row: cpu or cuda", "bench/common.c: bench_device_open_deferred"}

/* The timing columns every measured point has (bench.h: the method) */
#define TIMING_COUNT_COLUMNS                                                                                           \
  {"warmups", "1", HL_COL_INT, NULL, "untimed launches before the samples (at least 3, more while still speeding up)",  \
   "bench/common.c: bench_time"},                                                                                      \
  {"samples", "1", HL_COL_INT, NULL, "timed samples of the attempt kept", "bench/common.c: bench_time"},               \
  {"inner", "1", HL_COL_INT, NULL,                                                                                     \
   "back-to-back launches per sample (a GPU sample lasts at least 0.5 ms; 1 on the CPU)", "bench/common.c: bench_time"}
#define TIMING_MS_COLUMNS(fmt)                                                                                         \
  {"time_ms_min", "ms", HL_COL_REAL, fmt, "the fastest sample's time per launch", "bench/common.c: bench_time"},       \
  {"time_ms_median", "ms", HL_COL_REAL, fmt, "the median sample's time per launch (what the charts use)",             \
   "bench/common.c: bench_time"},                                                                                      \
  {"time_ms_max", "ms", HL_COL_REAL, fmt, "the slowest sample's time per launch", "bench/common.c: bench_time"}
#define ATTEMPTS_COLUMN                                                                                                \
  {"attempts", "1", HL_COL_INT, NULL,                                                                                  \
   "sample sets measured: more than 1 when the median exceeded the minimum by over 25% (other work on the machine); "  \
   "the set with the lowest median is kept",                                                                           \
   "bench/common.c: bench_time"}

/* ---------------------------------------------------------------- gemm -- */

static const hl_column gemm_columns[] = {
    DEVICE_COLUMN,
    {"study", "", HL_COL_TEXT, NULL, "square (n x n x n sweep), align (n x n x n at sizes on and off multiples of 8) or gpt2 (GPT-2's "
     "training products)", "bench/gemm.c: build_shapes"},
    {"shape", "", HL_COL_TEXT, NULL, "the shape's name within its study", "bench/gemm.c: build_shapes"},
    {"variant", "", HL_COL_TEXT, NULL, "the precision variant (halflab-bench gemm --list)", "bench/gemm.c: gemm_variants"},
    {"dtype", "", HL_COL_TEXT, NULL, "the inputs' element type", "bench/gemm.c: gemm_variants"},
    {"accumulate", "", HL_COL_TEXT, NULL, "the type the products are summed in", "bench/gemm.c: gemm_variants"},
    {"out_dtype", "", HL_COL_TEXT, NULL, "the output's element type", "bench/gemm.c: gemm_variants"},
    {"implementation", "", HL_COL_TEXT, NULL, "what ran: the library, its kernel or path, and how it was reached",
     "bench/gemm.c: gemm_implementation"},
    {"m", "1", HL_COL_INT, NULL, "rows of the output", "bench/gemm.c: build_shapes"},
    {"n", "1", HL_COL_INT, NULL, "columns of the output", "bench/gemm.c: build_shapes"},
    {"k", "1", HL_COL_INT, NULL, "the length of each dot product", "bench/gemm.c: build_shapes"},
    {"batch", "1", HL_COL_INT, NULL, "products per launch (strided batch)", "bench/gemm.c: build_shapes"},
    {"trans_a", "1", HL_COL_INT, NULL, "1 when A is read transposed, else 0", "bench/gemm.c: build_shapes"},
    {"trans_b", "1", HL_COL_INT, NULL, "1 when B is read transposed, else 0", "bench/gemm.c: build_shapes"},
    {"flop", "flop", HL_COL_INT, NULL, "floating-point operations per launch: 2 m n k batch", "bench/gemm.c: record_point"},
    TIMING_COUNT_COLUMNS,
    {"rotation_slots", "1", HL_COL_INT, NULL,
     "operand slots the launches rotate through, so that a launch's inputs are not in the cache",
     "bench/gemm.c: slots_for"},
    TIMING_MS_COLUMNS("%.6g"),
    {"tflop_per_s", "Tflop/s", HL_COL_REAL, "%.6g", "flop / time_ms_median", "bench/gemm.c: record_point"},
    {"tflop_per_s_best", "Tflop/s", HL_COL_REAL, "%.6g", "flop / time_ms_min", "bench/gemm.c: record_point"},
    {"peak_tflop_per_s", "Tflop/s", HL_COL_REAL, "%.6g",
     "the dense peak of the variant's unit (datasheet or CPU table, scaled to the part); empty when unknown",
     "bench/peak.c: bench_peaks_for"},
    {"peak_pct", "%", HL_COL_REAL, "%.6g", "tflop_per_s as a percentage of peak_tflop_per_s; empty when the peak is "
     "unknown", "bench/gemm.c: record_point"},
    {"max_err_norm", "1", HL_COL_REAL, "%.3g",
     "validation: the largest |error| of the sampled entries against fp64, over sum |a b|", "bench/gemm.c: validate"},
    {"err_bound_norm", "1", HL_COL_REAL, "%.3g",
     "validation: the bound's term per unit of sum |a b| (kernels/gemm.h hl_gemm_error_bound)", "bench/gemm.c: validate"},
    {"max_err_over_bound", "1", HL_COL_REAL, "%.3g", "validation: the largest |error| over its bound (at most 1, or the "
     "run stops)", "bench/gemm.c: validate"},
    ATTEMPTS_COLUMN,
};

const hl_schema bench_gemm_schema = {
    "gemm.csv", "halflab-bench gemm", "bench/gemm.c: record_point",
    "One row per precision variant and shape: the product validated, then timed.", HL_SCHEMA_COLUMNS(gemm_columns)};

static const hl_column gemm_accuracy_columns[] = {
    {"device", "", HL_COL_TEXT, NULL, "the device that computed the products: cpu or cuda",
     "bench/gemm_accuracy.c: gemm_accuracy_main"},
    {"method", "", HL_COL_TEXT, NULL, "simulated (sequential sums on the CPU), emulated (block-scaled inputs or the narrow fp8 "
     "accumulator, on the CPU: never a hardware speed), cublas or onednn (the library's GEMM)",
     "bench/gemm_accuracy.c: gemm_accuracy_main"},
    {"variant", "", HL_COL_TEXT, NULL, "the precision variant", "bench/gemm_accuracy.c: variants"},
    {"input", "", HL_COL_TEXT, NULL, "the inputs' element type (tf32: fp32 inputs rounded to tf32)",
     "bench/gemm_accuracy.c: variants"},
    {"accumulate", "", HL_COL_TEXT, NULL, "the type the products are summed in (e8m13: the model of Hopper's fp8 "
     "accumulator; e8m13-fp32-every-128: the same promoted to fp32 every 128 products)", "bench/gemm_accuracy.c: variants"},
    {"out_dtype", "", HL_COL_TEXT, NULL, "the output's element type", "bench/gemm_accuracy.c: gemm_accuracy_main"},
    {"data", "", HL_COL_TEXT, NULL, "signed (uniform in [-1, 1)) or positive (uniform in [0, 1))",
     "bench/gemm_accuracy.c: make_data"},
    {"m", "1", HL_COL_INT, NULL, "rows of the output", "bench/gemm_accuracy.c: gemm_accuracy_main"},
    {"n", "1", HL_COL_INT, NULL, "columns of the output", "bench/gemm_accuracy.c: gemm_accuracy_main"},
    {"k", "1", HL_COL_INT, NULL, "the length of each dot product", "bench/gemm_accuracy.c: gemm_accuracy_main"},
    {"rel_err", "1", HL_COL_REAL, "%.6g",
     "normwise (Frobenius) relative error against the fp64 product of the original fp32 data",
     "bench/gemm_accuracy.c: simulate, on_device"},
    {"rel_err_accumulation", "1", HL_COL_REAL, "%.6g",
     "normwise relative error against the fp64 product of the inputs as stored: accumulation and output rounding only",
     "bench/gemm_accuracy.c: simulate, on_device"},
    {"implementation", "", HL_COL_TEXT, NULL, "what computed the products", "bench/gemm.c: gemm_implementation"},
};

const hl_schema bench_gemm_accuracy_schema = {
    "gemm_accuracy.csv", "halflab-bench gemm --accuracy", "bench/gemm_accuracy.c: gemm_accuracy_main",
    "One row per variant, data set, k and method: the error of the product against fp64.",
    HL_SCHEMA_COLUMNS(gemm_accuracy_columns)};

/* -------------------------------------------------------- expectations -- */

#define EXPECTATION_COLUMNS(checker)                                                                                   \
  {"expectation", "", HL_COL_TEXT, NULL, "what the run should show", checker},                                         \
  DEVICE_COLUMN,                                                                                                       \
  {"value", "1", HL_COL_REAL, "%.4f", "the measured ratio; empty for an expectation skipped", checker},                \
  {"low", "1", HL_COL_REAL, "%.4g", "the smallest value that passes; empty where nothing bounds it from below, and "  \
   "for INFO and SKIP", checker},                                                                                      \
  {"high", "1", HL_COL_REAL, "%.4g", "the largest value that passes; empty where nothing bounds it from above, and "  \
   "for INFO and SKIP", checker},                                                                                      \
  {"status", "", HL_COL_TEXT, NULL, "PASS (low <= value <= high), MISS, INFO (a ratio reported beside the "            \
   "expectations) or SKIP", "bench/common.c: bench_expect"},                                                           \
  {"detail", "", HL_COL_TEXT, NULL, "the figures behind the value, or why the expectation was skipped", checker},      \
  {"reason", "", HL_COL_TEXT, NULL, "why the value should lie between the bounds: the physics or the peer behind it", \
   checker}

static const hl_column gemm_expectations_columns[] = {EXPECTATION_COLUMNS("bench/gemm.c: check_expectations")};
static const hl_column bandwidth_expectations_columns[] = {
    EXPECTATION_COLUMNS("bench/bandwidth.c: expect_triad_against_copy, expect_half_rate")};
static const hl_column mlp_step_expectations_columns[] = {EXPECTATION_COLUMNS("bench/mlp_step.c: report_expectations")};
static const hl_column quantize_expectations_columns[] = {EXPECTATION_COLUMNS("bench/quantize.c: expectations")};

#define EXPECTATIONS_ABOUT                                                                                             \
  "One row per expectation (a measured ratio between bounds with its physical or peer reason): PASS, MISS, INFO or " \
  "SKIP, as printed on stdout."
const hl_schema bench_gemm_expectations_schema = {"gemm_expectations.csv", "halflab-bench gemm",
                                                  "bench/common.c: bench_expectations_write", EXPECTATIONS_ABOUT,
                                                  HL_SCHEMA_COLUMNS(gemm_expectations_columns)};
const hl_schema bench_bandwidth_expectations_schema = {"bandwidth_expectations.csv", "halflab-bench bandwidth",
                                                       "bench/common.c: bench_expectations_write", EXPECTATIONS_ABOUT,
                                                       HL_SCHEMA_COLUMNS(bandwidth_expectations_columns)};
const hl_schema bench_mlp_step_expectations_schema = {"mlp_step_expectations.csv", "halflab-bench mlp-step",
                                                      "bench/common.c: bench_expectations_write", EXPECTATIONS_ABOUT,
                                                      HL_SCHEMA_COLUMNS(mlp_step_expectations_columns)};
const hl_schema bench_quantize_expectations_schema = {"quantize_expectations.csv", "halflab-bench quantize",
                                                      "bench/common.c: bench_expectations_write", EXPECTATIONS_ABOUT,
                                                      HL_SCHEMA_COLUMNS(quantize_expectations_columns)};

/* ----------------------------------------------------------- bandwidth -- */

static const hl_column bandwidth_columns[] = {
    DEVICE_COLUMN,
    {"kernel", "", HL_COL_TEXT, NULL, "copy, scale, add, triad or dot; or a reference copy the kernels are compared "
     "with: memcpy, memcpy-omp, copy-loop, copy-loop-nt (CPU); memcpy-d2d, copy-kernel (GPU)",
     "bench/bandwidth.c: time_kernels, time_references"},
    {"dtype", "", HL_COL_TEXT, NULL, "the arrays' element type: fp32, fp16 or bf16; bytes for the reference copies",
     "bench/bandwidth.c: time_kernels, time_references"},
    {"array_bytes", "bytes", HL_COL_INT, NULL, "bytes per array", "bench/bandwidth.c: run_type"},
    {"elements", "1", HL_COL_INT, NULL, "elements per array (array_bytes for the reference copies)",
     "bench/bandwidth.c: run_type"},
    {"arrays", "1", HL_COL_INT, NULL, "arrays read and written per launch (BabelStream's count)",
     "bench/bandwidth.c: kernel_arrays"},
    {"moved_bytes", "bytes", HL_COL_INT, NULL, "bytes moved per launch: arrays x array_bytes",
     "bench/bandwidth.c: time_kernels, time_references"},
    TIMING_COUNT_COLUMNS,
    TIMING_MS_COLUMNS("%.6g"),
    {"gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "moved_bytes / time_ms_median, in 10^9 bytes per second",
     "bench/bandwidth.c: time_kernels, time_references"},
    {"gb_per_s_best", "GB/s", HL_COL_REAL, "%.6g", "moved_bytes / time_ms_min", "bench/bandwidth.c: time_kernels, time_references"},
    {"gelem_per_s", "Gelem/s", HL_COL_REAL, "%.6g", "gb_per_s over the element size: 10^9 elements moved per second; "
     "empty for the reference copies", "bench/bandwidth.c: time_kernels"},
    {"ref_kernel", "", HL_COL_TEXT, NULL, "the fastest reference copy of the same size in this run (the copy the "
     "reference is); empty for the copies", "bench/bandwidth.c: time_references"},
    {"ref_gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "ref_kernel's gb_per_s: the bandwidth reference at this size; empty "
     "for the copies",
     "bench/bandwidth.c: time_references"},
    {"ref_pct", "%", HL_COL_REAL, "%.4g", "gb_per_s as a percentage of ref_gb_per_s; empty for the reference copies",
     "bench/bandwidth.c: time_kernels"},
    {"datasheet_gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "the memory's datasheet bandwidth; empty when unknown (a CPU, "
     "a MIG slice)", "bench/peak.c: bench_peaks_for"},
    {"datasheet_pct", "%", HL_COL_REAL, "%.6g", "gb_per_s as a percentage of datasheet_gb_per_s; empty when that is "
     "unknown and for the reference copies", "bench/bandwidth.c: time_kernels"},
    ATTEMPTS_COLUMN,
};

const hl_schema bench_bandwidth_schema = {
    "bandwidth.csv", "halflab-bench bandwidth", "bench/bandwidth.c: time_references, time_kernels",
    "One row per array size, element type and kernel, and per size the reference copies.",
    HL_SCHEMA_COLUMNS(bandwidth_columns)};

static const hl_column bandwidth_host_columns[] = {
    DEVICE_COLUMN,
    {"direction", "", HL_COL_TEXT, NULL, "h2d (host to device) or d2h (device to host)", "bench/bandwidth.c: time_host_copies"},
    {"memory", "", HL_COL_TEXT, NULL, "the host buffer: pageable or pinned (page-locked)", "bench/bandwidth.c: time_host_copies"},
    {"bytes", "bytes", HL_COL_INT, NULL, "bytes per copy", "bench/bandwidth.c: time_host_copies"},
    TIMING_COUNT_COLUMNS,
    TIMING_MS_COLUMNS("%.6g"),
    {"gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "bytes / time_ms_median, in 10^9 bytes per second",
     "bench/bandwidth.c: time_host_copies"},
    {"gb_per_s_best", "GB/s", HL_COL_REAL, "%.6g", "bytes / time_ms_min", "bench/bandwidth.c: time_host_copies"},
    ATTEMPTS_COLUMN,
};

const hl_schema bench_bandwidth_host_schema = {
    "bandwidth_host.csv", "halflab-bench bandwidth", "bench/bandwidth.c: time_host_copies",
    "GPU runs only: one row per size, direction and host memory kind, a copy between host and device.",
    HL_SCHEMA_COLUMNS(bandwidth_host_columns)};

/* ------------------------------------------------------------ mlp-step -- */

static const hl_column mlp_step_columns[] = {
    {"impl", "", HL_COL_TEXT, NULL, "core (through the AMP core) or direct (the same arithmetic called directly)",
     "bench/mlp_step.c: keep_rows"},
    DEVICE_COLUMN,
    {"batch", "1", HL_COL_INT, NULL, "rows per step (--batch)", "bench/mlp_step.c: parse_options"},
    {"threads", "1", HL_COL_INT, NULL, "OpenMP threads", "bench/mlp_step.c: keep_rows"},
    TIMING_MS_COLUMNS("%.4f"),
    {"samples", "1", HL_COL_INT, NULL, "timed steps", "bench/common.c: bench_time"},
    {"gflop_per_s", "Gflop/s", HL_COL_REAL, "%.2f", "the step's products' flop over time_ms_median",
     "bench/mlp_step.c: keep_rows"},
    {"ratio_to_direct", "1", HL_COL_REAL, "%.4f", "time_ms_median over the direct row's of the same precision",
     "bench/mlp_step.c: keep_rows"},
    {"precision", "", HL_COL_TEXT, NULL, "fp32, or bf16 (bf16 autocast)", "bench/mlp_step.c: keep_rows"},
    {"note", "", HL_COL_TEXT, NULL, "not run: the reason, for a row that was not measured (its numbers empty); else "
     "empty", "bench/mlp_step.c: bf16_plan"},
};

const hl_schema bench_mlp_step_schema = {
    "mlp_step.csv", "halflab-bench mlp-step", "bench/mlp_step.c: keep_rows",
    "One row per side (core, direct) and precision: one MLP training step's time.", HL_SCHEMA_COLUMNS(mlp_step_columns)};

/* ----------------------------------------------------------- footprint -- */

#define MODEL_COLUMN {"model", "", HL_COL_TEXT, NULL, "gpt2 (GPT-2 124M) or custom (--layers ...)", "bench/footprint.c: parse_options"}

static const hl_column footprint_params_columns[] = {
    DEVICE_COLUMN,
    MODEL_COLUMN,
    {"layers", "1", HL_COL_INT, NULL, "transformer blocks", "bench/footprint.c: parse_options"},
    {"heads", "1", HL_COL_INT, NULL, "attention heads", "bench/footprint.c: parse_options"},
    {"embd", "1", HL_COL_INT, NULL, "embedding width", "bench/footprint.c: parse_options"},
    {"vocab", "1", HL_COL_INT, NULL, "vocabulary size", "bench/footprint.c: parse_options"},
    {"block", "1", HL_COL_INT, NULL, "the longest sequence (position table)", "bench/footprint.c: parse_options"},
    {"policy", "", HL_COL_TEXT, NULL, "the weight policy: the type the weights are kept in", "bench/footprint.c: measure_policy"},
    {"params", "1", HL_COL_INT, NULL, "parameters", "core/models/nn_models.c: hl_gpt_param_count"},
    {"tensors", "1", HL_COL_INT, NULL, "parameter tensors", "bench/footprint.c: measure_params"},
    {"analytic_bytes", "bytes", HL_COL_INT, NULL, "parameter bytes computed from the shapes",
     "core/models/nn_memory.c: hl_gpt_param_bytes"},
    {"allocator_bytes", "bytes", HL_COL_INT, NULL, "parameter bytes the accounting allocator saw",
     "bench/footprint.c: measure_params"},
    {"independent_bytes", "bytes", HL_COL_INT, NULL, "parameter bytes measured outside halflab (independent_method)",
     "bench/footprint.c: measure_params"},
    {"independent_method", "", HL_COL_TEXT, NULL, "how independent_bytes was measured", "bench/footprint.c: independent_method"},
    {"independent_of_analytic_pct", "%", HL_COL_REAL, "%.3f", "independent_bytes as a percentage of analytic_bytes",
     "bench/footprint.c: measure_policy"},
};

const hl_schema bench_footprint_params_schema = {
    "footprint_params.csv", "halflab-bench footprint", "bench/footprint.c: measure_policy",
    "One row per model and weight policy: the parameters' bytes three ways.", HL_SCHEMA_COLUMNS(footprint_params_columns)};

#define ESTIMATE(name, what)                                                                                           \
  {name, "bytes", HL_COL_INT, NULL, what, "core/models/nn_memory.c: hl_gpt_train_bytes"}
/* ------------------------------------------------------------ quantize -- */

static const hl_column quantize_columns[] = {
    DEVICE_COLUMN,
    {"unit", "", HL_COL_TEXT, NULL, "what computed the codes: on the CPU the AVX2 integer lanes or portable C, "
     "software either way (no fp8, fp6 or fp4 conversion instruction: x86 CPUs before AVX10.2 have none); cuda "
     "kernels; copy for the reference copies", "bench/quantize.c: unit_text"},
    {"kernel", "", HL_COL_TEXT, NULL, "quantize, amax (the pass that finds the tensor's largest |x|), or a reference "
     "copy: memcpy, memcpy-omp, copy-loop, copy-loop-nt (CPU); memcpy-d2d, copy-kernel (GPU)",
     "bench/quantize.c: time_recipe, time_amax, time_references"},
    {"format", "", HL_COL_TEXT, NULL, "the recipe: fp8 (per tensor or per block), mxfp8, mxfp6, mxfp4, nvfp4; - for "
     "the amax pass and the copies", "bench/quantize.c: kRecipes"},
    {"element", "", HL_COL_TEXT, NULL, "the codes' element format: e4m3, e2m3, e3m2, e2m1", "bench/quantize.c: kRecipes"},
    {"rule", "", HL_COL_TEXT, NULL, "the scale rule (kernels/quantize.h): tensor, block-fp32, mx-floor, mx-rceil, "
     "nvfp4", "bench/quantize.c: kRecipes"},
    {"block", "", HL_COL_TEXT, NULL, "rows x columns of a block (1x32: along a row; 32x1: down a column), or tensor",
     "bench/quantize.c: block_text"},
    {"direction", "", HL_COL_TEXT, NULL, "rows (blocks along a row: a GEMM's A), columns (down a column: its B) or "
     "both (square blocks, the whole tensor)", "bench/quantize.c: direction_of"},
    {"rows", "1", HL_COL_INT, NULL, "rows of the fp32 input", "bench/quantize.c: bench_quantize_main"},
    {"cols", "1", HL_COL_INT, NULL, "columns of the fp32 input", "bench/quantize.c: bench_quantize_main"},
    {"bytes_read", "bytes", HL_COL_INT, NULL, "bytes read per launch: 4 per element (the copies: the input)",
     "bench/quantize.c: time_recipe"},
    {"bytes_written", "bytes", HL_COL_INT, NULL, "bytes written per launch: 1 per code, 4 per block scale and 1 per "
     "scale code (mx, nvfp4); 0 for amax", "bench/quantize.c: time_recipe"},
    TIMING_COUNT_COLUMNS,
    TIMING_MS_COLUMNS("%.6g"),
    {"gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "(bytes_read + bytes_written) / time_ms_median, in 10^9 bytes per second",
     "bench/quantize.c: row_cells"},
    {"gb_per_s_best", "GB/s", HL_COL_REAL, "%.6g", "the same from time_ms_min", "bench/quantize.c: row_cells"},
    {"gelem_per_s", "Gelem/s", HL_COL_REAL, "%.6g", "fp32 elements per second / 10^9 (median)",
     "bench/quantize.c: row_cells"},
    {"ref_kernel", "", HL_COL_TEXT, NULL, "the fastest reference copy of the input's bytes in this run; empty for the "
     "copies", "bench/quantize.c: time_references"},
    {"ref_gb_per_s", "GB/s", HL_COL_REAL, "%.6g", "ref_kernel's gb_per_s; empty for the copies",
     "bench/quantize.c: time_references"},
    {"ref_ratio", "1", HL_COL_REAL, "%.4g", "gb_per_s / ref_gb_per_s; empty for the copies",
     "bench/quantize.c: ref_cells"},
    {"amax_first", "", HL_COL_TEXT, NULL, "yes where the rule reads the whole input for its amax before the codes (the "
     "tensor rule, nvfp4: not in bytes_read; the amax row times that pass), else no; empty for amax and the copies",
     "bench/quantize.c: time_recipe"},
    ATTEMPTS_COLUMN,
};

const hl_schema bench_quantize_schema = {
    "quantize.csv", "halflab-bench quantize", "bench/quantize.c: time_recipe, time_amax, time_references",
    "One row per quantizer recipe and block direction, one for the amax pass, one per reference copy.",
    HL_SCHEMA_COLUMNS(quantize_columns)};

#define ALLOCATED(name, what)                                                                                          \
  {name, "bytes", HL_COL_INT, NULL, what " the accounting allocator saw in the measured step; empty when measured is 0", \
   "bench/footprint.c: measure_step"}

static const hl_column footprint_training_columns[] = {
    DEVICE_COLUMN,
    MODEL_COLUMN,
    {"mode", "", HL_COL_TEXT, NULL, "halflab-train's precision mode", "bench/footprint.c: parse_options"},
    {"optimizer", "", HL_COL_TEXT, NULL, "the optimizer whose moments are counted", "bench/footprint.c: parse_options"},
    {"batch", "1", HL_COL_INT, NULL, "sequences per step", "bench/footprint.c: training_state"},
    {"seq", "1", HL_COL_INT, NULL, "tokens per sequence", "bench/footprint.c: training_state"},
    ESTIMATE("weights_bytes", "estimated: the model's parameters"),
    ESTIMATE("master_bytes", "estimated: fp32 master weights (fp16-master)"),
    ESTIMATE("gradients_bytes", "estimated: parameter gradients (and fp32 master gradients)"),
    ESTIMATE("moments_bytes", "estimated: the optimizer's state"),
    ESTIMATE("weight_casts_bytes", "estimated: autocast's cached low-precision copies of the fp32 weights"),
    ESTIMATE("activations_bytes", "estimated: what forward and the loss leave saved for backward"),
    ESTIMATE("peak_bytes", "estimated: the step's allocator peak"),
    {"memory_bytes", "bytes", HL_COL_INT, NULL, "the memory max_batch must fit in (--memory, or the device's free memory)",
     "bench/footprint.c: bench_footprint_main"},
    {"max_batch", "1", HL_COL_INT, NULL, "the largest batch whose peak_bytes fits in memory_bytes",
     "core/models/nn_memory.c: hl_gpt_max_batch"},
    {"measured", "1", HL_COL_INT, NULL, "1 on the row of the measured step's shape, whose alloc_ columns are filled; else 0",
     "bench/footprint.c: training_state_row"},
    ALLOCATED("alloc_weights_bytes", "weights"),
    ALLOCATED("alloc_master_bytes", "master weights"),
    ALLOCATED("alloc_gradients_bytes", "gradients"),
    ALLOCATED("alloc_moments_bytes", "moments"),
    ALLOCATED("alloc_saved_bytes", "weight casts and activations together"),
    ALLOCATED("alloc_peak_bytes", "the peak"),
};

const hl_schema bench_footprint_training_schema = {
    "footprint_training.csv", "halflab-bench footprint", "bench/footprint.c: training_state_row",
    "One row per model, mode and shape: the training state's bytes estimated, and at the measured step's shape what "
    "the allocator saw.",
    HL_SCHEMA_COLUMNS(footprint_training_columns)};

/* ------------------------------------------------------ quantize-error -- */

#define QUANTIZE_TENSOR_COLUMNS(checker)                                                                               \
  {"device", "", HL_COL_TEXT, NULL, "the device that ran the row: cpu (the quantizers run in software)", checker},      \
  {"unit", "", HL_COL_TEXT, NULL, "what quantized: cpu: software quantization (emulated; no fp8, fp6 or fp4 unit)",    \
   checker},                                                                                                           \
  {"model", "", HL_COL_TEXT, NULL, "the model the tensors come from, as --tensors named it (e.g. tiny, small)",       \
   "bench/quantize_error.c: parse_source"},                                                                            \
  {"kind", "", HL_COL_TEXT, NULL, "weight (--save-init), gradient (--dump-grads: the first step's, unscaled) or "    \
   "activation (--dump-activations: a linear layer's input)", "bench/quantize_error.c: parse_source"},                 \
  {"tensor", "", HL_COL_TEXT, NULL, "the tensor's name in its file (activations: the layer's name and .input)",       \
   "core/models/weight_file.c: hl_weight_file_read"}
#define QUANTIZE_SHARE_COLUMNS                                                                                         \
  {"zero_share", "1", HL_COL_REAL, "%.6g", "elements whose code is a zero (zeros in, and values flushed to zero), "    \
   "over all elements", "bench/quantize_error.c: row_outcome"},                                                        \
  {"subnormal_share", "1", HL_COL_REAL, "%.6g", "elements whose code is subnormal in the format, over all elements",   \
   "bench/quantize_error.c: row_outcome"},                                                                             \
  {"normal_share", "1", HL_COL_REAL, "%.6g", "elements whose code is normal and that were not clipped, over all "      \
   "elements (the four shares sum to 1)", "bench/quantize_error.c: row_outcome"},                                      \
  {"clipped_share", "1", HL_COL_REAL, "%.6g", "elements whose scaled magnitude exceeded the format's max (saturated "  \
   "to it), over all elements", "bench/quantize_error.c: row_outcome"},                                                \
  {"flushed_share", "1", HL_COL_REAL, "%.6g", "non-zero elements whose code is a zero, over all elements (part of "   \
   "zero_share)", "bench/quantize_error.c: row_outcome"},                                                              \
  {"sqnr_db", "dB", HL_COL_REAL, "%.4f", "signal to quantization noise: 10 log10(sum x^2 / sum (q - x)^2), q the "     \
   "decoded value; empty where q = x everywhere", "bench/quantize_error.c: quantize_once, row_outcome"}

static const hl_column quantize_error_columns[] = {
    QUANTIZE_TENSOR_COLUMNS("bench/quantize_error.c: error_rows"),
    {"rows", "1", HL_COL_INT, NULL, "the tensor as a matrix: its elements over its last dimension",
     "bench/quantize_error.c: matrix_of"},
    {"cols", "1", HL_COL_INT, NULL, "the tensor's last dimension (1xN blocks run along it)",
     "bench/quantize_error.c: matrix_of"},
    {"amax", "1", HL_COL_REAL, "%.6g", "the tensor's largest |x|", "kernels/cpu/quantize_cpu.c: cpu_quantize"},
    {"format", "", HL_COL_TEXT, NULL, "the element format: e4m3, e5m2 (fp8), e2m3, e3m2 (fp6), e2m1 (fp4)",
     "bench/quantize_error.c: probes"},
    {"rule", "", HL_COL_TEXT, NULL, "the scale rule: none (scale 1), tensor (max / amax, Transformer Engine), "
     "block-fp32 (amax / max per block, DeepSeek-V3), mx-floor, mx-rceil (E8M0 per block, OCP MX's rule and the "
     "rounded-up one), nvfp4 (E4M3 per block and an fp32 tensor scale)", "bench/quantize_error.c: probes"},
    {"block", "", HL_COL_TEXT, NULL, "the block a scale covers, rows x columns, or whole (one scale)",
     "bench/quantize_error.c: block_text"},
    QUANTIZE_SHARE_COLUMNS,
    {"blocks", "1", HL_COL_INT, NULL, "blocks (1 for a whole-tensor scale)", "kernels/cpu/quantize_cpu.c: cpu_quantize"},
    {"blocks_clipped_share", "1", HL_COL_REAL, "%.6g", "blocks holding at least one clipped element, over blocks",
     "bench/quantize_error.c: error_rows"},
    {"max_rel_err", "1", HL_COL_REAL, "%.6g", "the largest |q - x| / |x| over the non-zero elements (1 where one "
     "flushed to zero); empty for a tensor of zeros", "bench/quantize_error.c: quantize_once"},
};

const hl_schema bench_quantize_error_schema = {
    "quantize_error.csv", "halflab-bench quantize-error", "bench/quantize_error.c: error_rows",
    "One row per tensor, element format and scale rule: what quantizing it and decoding it again did.",
    HL_SCHEMA_COLUMNS(quantize_error_columns)};

static const hl_column quantize_sweep_columns[] = {
    QUANTIZE_TENSOR_COLUMNS("bench/quantize_error.c: sweep_rows"),
    {"format", "", HL_COL_TEXT, NULL, "the element format: e4m3, e5m2, e2m3, e3m2 or e2m1",
     "bench/quantize_error.c: sweep_formats"},
    {"log2_scale_rel", "1", HL_COL_INT, NULL, "x: the per-tensor scale is (max / amax) 2^x; at 0 the tensor's amax "
     "lands on the format's max, above it the largest values clip, below it the smallest underflow",
     "bench/quantize_error.c: sweep_rows"},
    {"scale", "1", HL_COL_REAL, "%.6g", "the scale the elements were multiplied by", "kernels/quantize_math.h: "
     "hl_quant_tensor_encode_scale"},
    QUANTIZE_SHARE_COLUMNS,
};

const hl_schema bench_quantize_sweep_schema = {
    "quantize_sweep.csv", "halflab-bench quantize-error", "bench/quantize_error.c: sweep_rows",
    "One row per swept tensor (per model and kind, the one with the largest amax / rms), format and scale.",
    HL_SCHEMA_COLUMNS(quantize_sweep_columns)};

static const hl_column quantize_gemm_columns[] = {
    {"device", "", HL_COL_TEXT, NULL, "the device that ran the row: cpu (software quantization)",
     "bench/quantize_gemm.c: put_row"},
    {"unit", "", HL_COL_TEXT, NULL, "what computed: cpu: software quantization and fp32 sums (emulated; no fp8, "
     "fp6 or fp4 unit)", "bench/quantize_gemm.c: put_row"},
    {"model", "", HL_COL_TEXT, NULL, "the model the tensors come from, as --tensors named it (e.g. tiny, small)",
     "bench/quantize_error.c: parse_source"},
    {"layer", "", HL_COL_TEXT, NULL, "the linear layer: its input LAYER.input (activations) times LAYER.weight "
     "(weights) transposed; lm_head, the tied head, reads transformer.wte.weight", "bench/quantize_gemm.c: weight_of"},
    {"m", "1", HL_COL_INT, NULL, "rows of X in the product: its first m rows (tokens)", "bench/quantize_gemm.c: "
     "quantize_gemm_rows"},
    {"x_rows", "1", HL_COL_INT, NULL, "rows of X in the file (batch x seq); X's scales and amax see them all",
     "bench/quantize_gemm.c: quantize_gemm_rows"},
    {"n", "1", HL_COL_INT, NULL, "the layer's outputs: rows of W (stored out x in)", "bench/quantize_gemm.c: "
     "quantize_gemm_rows"},
    {"k", "1", HL_COL_INT, NULL, "the reduction: the layer's inputs, the last dimension of X and of W",
     "bench/quantize_gemm.c: quantize_gemm_rows"},
    {"format", "", HL_COL_TEXT, NULL, "both operands' element format: e4m3, e5m2, e2m3, e3m2, e2m1, or fp32 (not "
     "quantized: the fp32 accumulation's own error)", "bench/quantize_gemm.c: recipes"},
    {"rule", "", HL_COL_TEXT, NULL, "the scale rule (kernels/quantize.h): tensor (max / amax, Transformer Engine), "
     "block-fp32 (DeepSeek-V3), mx-rceil, mx-floor (E8M0 per block), nvfp4; none for fp32",
     "bench/quantize_gemm.c: recipes"},
    {"x_block", "", HL_COL_TEXT, NULL, "the block a scale of X covers, rows x columns (along k), or whole",
     "bench/quantize_gemm.c: block_text"},
    {"w_block", "", HL_COL_TEXT, NULL, "the block a scale of W covers, rows x columns (along k), or whole",
     "bench/quantize_gemm.c: block_text"},
    {"rel_err", "1", HL_COL_REAL, "%.6g", "||Y - Y_fp64||_F / ||Y_fp64||_F: Y = X W^T from the decoded operands summed "
     "in fp32, Y_fp64 the fp64 product of the fp32 tensors as given", "bench/quantize_gemm.c: rel_err"},
};

const hl_schema bench_quantize_gemm_schema = {
    "quantize_gemm.csv", "halflab-bench quantize-error", "bench/quantize_gemm.c: study_layer",
    "One row per linear layer (input and weight both given), element format and scale rule: the product's error.",
    HL_SCHEMA_COLUMNS(quantize_gemm_columns)};

const hl_schema *const bench_schemas[] = {
    &bench_gemm_schema,          &bench_gemm_expectations_schema,     &bench_gemm_accuracy_schema,
    &bench_bandwidth_schema,     &bench_bandwidth_host_schema,        &bench_bandwidth_expectations_schema,
    &bench_mlp_step_schema,      &bench_mlp_step_expectations_schema, &bench_footprint_params_schema,
    &bench_footprint_training_schema, &bench_quantize_error_schema, &bench_quantize_sweep_schema, &bench_quantize_gemm_schema,
    &bench_quantize_schema,
    &bench_quantize_expectations_schema, NULL};
