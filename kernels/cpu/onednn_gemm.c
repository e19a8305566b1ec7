/* onednn_gemm.c — bf16 GEMM through oneDNN 2's matmul primitive (what it
 * takes and why: kernels/cpu/onednn_gemm.h), built when meson finds oneDNN.
 *
 * hl_gemm is row-major, and so are oneDNN's plain memory descriptors: A is
 * the matmul's source (m x k), B its weights (k x n), C its destination, each
 * described by its strides, so a transpose flag is a swapped pair of strides
 * and a leading dimension the row stride; no data moves. A strided batch is
 * a third, outer dimension, an outer batch (batch_outer) a fourth; a batch
 * stride of 0 (an operand every entry shares) is oneDNN's broadcast, a
 * batch dimension of 1. alpha is a constant
 * output scale, beta a sum post-op (C = alpha A B + beta C, rounded once).
 *
 * Primitive cache. Making a matmul primitive (its descriptor, the choice of
 * implementation, JIT-compiled kernels) costs far more than a small product,
 * so each shape/layout key (sizes, leading dimensions, batch strides,
 * transposes, output type, alpha, beta) keeps its primitive and what was
 * learnt making it: the memory descriptors, the scratchpad size, the
 * implementation's name, or the reason oneDNN cannot run the key, so that a
 * refused layout goes to the widening path without asking oneDNN again. The
 * cache holds at most CACHE_CAPACITY keys behind one mutex, searched
 * linearly (a few dozen comparisons against a GEMM); when full, the key used
 * longest ago goes. A call holds its entry (users) while it runs, so an entry
 * evicted meanwhile is destroyed by the last call that used it. Primitives
 * are made outside the lock; two threads missing on the same key at once
 * both make one and the second is dropped.
 *
 * Threads. A primitive may run on several threads at once when each brings
 * its own scratchpad (user scratchpad mode), so each calling thread keeps a
 * scratchpad buffer and a stream, freed when the thread exits. oneDNN's own
 * threads are libgomp's, the pool OpenBLAS's OpenMP build and halflab's CPU
 * kernels share. */
#include "kernels/cpu/onednn_gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fatal.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/onednn_direct.h"

enum { CACHE_CAPACITY = 64 };

/* ---------------------------------------------------------------- keys -- */

/* Compared with memcmp: always zeroed before its fields are set */
typedef struct {
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c; /* 0 when batch == 1 */
  int64_t outer;                        /* batch_outer, 1 for none */
  int64_t outer_stride_a, outer_stride_b, outer_stride_c; /* 0 when outer == 1 */
  uint32_t alpha_bits, beta_bits;
  int32_t c_type;
  uint8_t trans_a, trans_b;
} matmul_key;

static void say(char *out, size_t len, const char *text) {
  if (out && len) snprintf(out, len, "%s", text);
}

/* The types oneDNN's CPU matmul takes here, before anything is asked of it */
static bool types_fit(const hl_gemm_desc *d, char *why, size_t len) {
  const char *no = NULL;
  if (d->a_type != HL_BF16 || d->b_type != HL_BF16) no = "oneDNN's bf16 matmul takes bf16 A and B";
  else if (d->compute != HL_COMPUTE_F32) no = "oneDNN's bf16 matmul accumulates in fp32";
  else if (d->c_type != HL_BF16 && d->c_type != HL_F32) no = "oneDNN's bf16 matmul writes bf16 or fp32";
  if (no) say(why, len, no);
  return no == NULL;
}

static bool units_allow(char *why, size_t len) {
  const hl_cpu_units *u = hl_cpu_units_get();
  if (u->portable) say(why, len, "HALFLAB_CPU_UNITS=portable");
  else if (!u->avx512_bf16 && !u->amx_bf16) say(why, len, "this CPU has neither AVX512-BF16 nor AMX-BF16");
  return !u->portable && (u->avx512_bf16 || u->amx_bf16);
}

static uint32_t bits_of(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

/* d's key, or false where d is not given to oneDNN: rows that overlap (a
 * leading dimension below the row length), negative batch strides, batch
 * entries of C that overlap (oneDNN runs entries in parallel) */
static bool key_of(const hl_gemm_desc *d, matmul_key *key, char *why, size_t len) {
  if (!types_fit(d, why, len)) return false;
  const int64_t batch = d->batch > 1 ? d->batch : 1;
  const int64_t a_cols = d->trans_a ? d->m : d->k, b_cols = d->trans_b ? d->k : d->n;
  if (d->m <= 0 || d->n <= 0 || d->k <= 0) {
    say(why, len, "an empty product");
    return false;
  }
  if (d->lda < a_cols || d->ldb < b_cols || d->ldc < d->n) {
    say(why, len, "a leading dimension below its row length");
    return false;
  }
  if (batch > 1 && (d->stride_a < 0 || d->stride_b < 0)) {
    say(why, len, "a negative batch stride");
    return false;
  }
  if (batch > 1 && d->stride_c < (d->m - 1) * d->ldc + d->n) {
    say(why, len, "batch entries of C that overlap");
    return false;
  }
  const int64_t outer = d->batch_outer > 1 ? d->batch_outer : 1;
  if (outer > 1 && (d->outer_stride_a < 0 || d->outer_stride_b < 0)) {
    say(why, len, "a negative outer batch stride");
    return false;
  }
  if (outer > 1 && d->outer_stride_c < (batch - 1) * d->stride_c + (d->m - 1) * d->ldc + d->n) {
    say(why, len, "outer batch groups of C that overlap");
    return false;
  }
  memset(key, 0, sizeof *key);
  key->m = d->m, key->n = d->n, key->k = d->k, key->batch = batch;
  key->lda = d->lda, key->ldb = d->ldb, key->ldc = d->ldc;
  if (batch > 1) key->stride_a = d->stride_a, key->stride_b = d->stride_b, key->stride_c = d->stride_c;
  key->outer = outer;
  if (outer > 1)
    key->outer_stride_a = d->outer_stride_a, key->outer_stride_b = d->outer_stride_b,
    key->outer_stride_c = d->outer_stride_c;
  key->alpha_bits = bits_of(d->alpha), key->beta_bits = bits_of(d->beta);
  key->c_type = (int32_t)d->c_type;
  key->trans_a = d->trans_a, key->trans_b = d->trans_b;
  return true;
}

/* A oneDNN failure that is not "cannot run this": one line, exit 1, at the
 * line of the call that failed */
static void check_at(dnnl_status_t st, const char *call, const matmul_key *k, const char *file, int line) {
  if (st == dnnl_success) return;
  if (!k) hl_fatal_at(file, line, "oneDNN: %s failed: %s", call, dnnl_status2str(st));
  char batch[48];
  if (k->outer > 1) snprintf(batch, sizeof batch, "%lld x %lld", (long long)k->outer, (long long)k->batch);
  else snprintf(batch, sizeof batch, "%lld", (long long)k->batch);
  hl_fatal_at(file, line, "oneDNN matmul primitive (bf16 x bf16 -> %s, %lld x %lld x %lld, batch %s): %s failed: %s",
              hl_dtype_name((hl_dtype)k->c_type), (long long)k->m, (long long)k->n, (long long)k->k, batch, call,
              dnnl_status2str(st));
}
#define check(st, call, k) check_at((st), (call), (k), __FILE__, __LINE__)

/* ---------------------------------------------------- engine, threads -- */

static dnnl_engine_t engine_;
static pthread_once_t engine_once_ = PTHREAD_ONCE_INIT;

static void make_engine(void) { check(dnnl_engine_create(&engine_, dnnl_cpu, 0), "dnnl_engine_create(cpu)", NULL); }

static dnnl_engine_t engine(void) {
  pthread_once(&engine_once_, make_engine);
  return engine_;
}

typedef struct {
  dnnl_stream_t stream;
  void *scratchpad;
  size_t scratchpad_bytes;
} thread_context;

static _Thread_local thread_context tc_;
static pthread_key_t tc_key_;
static pthread_once_t tc_once_ = PTHREAD_ONCE_INIT;

static void tc_release(void *p) {
  thread_context *t = p;
  if (t->stream) dnnl_stream_destroy(t->stream);
  free(t->scratchpad);
  memset(t, 0, sizeof *t);
}
static void tc_make_key(void) { pthread_key_create(&tc_key_, tc_release); }

static thread_context *context(void) {
  if (!tc_.stream) {
    pthread_once(&tc_once_, tc_make_key);
    check(dnnl_stream_create(&tc_.stream, engine(), dnnl_stream_default_flags), "dnnl_stream_create", NULL);
    pthread_setspecific(tc_key_, &tc_); /* destroys the stream when this thread exits */
  }
  return &tc_;
}

static void *scratchpad(thread_context *t, size_t bytes) {
  if (t->scratchpad_bytes < bytes) {
    free(t->scratchpad);
    t->scratchpad = HL_CHECK_ALLOC(malloc(bytes), bytes, "oneDNN's matmul scratchpad");
    t->scratchpad_bytes = bytes;
  }
  return t->scratchpad;
}

/* ------------------------------------------------------- primitives -- */

typedef struct {
  matmul_key key;
  dnnl_primitive_t primitive; /* NULL: oneDNN cannot run the key, `what` says why */
  dnnl_memory_desc_t a_md, b_md, c_md, scratchpad_md;
  size_t scratchpad_bytes;
  char what[160];
  int users;          /* calls running it now */
  uint64_t last_use;  /* the cache's clock at the last call */
  bool evicted;       /* out of the cache; destroyed when users drops to 0 */
} matmul_entry;

static dnnl_status_t operand_md(dnnl_memory_desc_t *md, const matmul_key *k, int64_t rows, int64_t cols, bool trans,
                               int64_t ld, int64_t stride, int64_t outer_stride, dnnl_data_type_t type) {
  const dnnl_dim_t row_stride = trans ? 1 : ld, col_stride = trans ? ld : 1;
  if (k->batch == 1 && k->outer == 1)
    return dnnl_memory_desc_init_by_strides(md, 2, (dnnl_dims_t){rows, cols}, type, (dnnl_dims_t){row_stride, col_stride});
  /* batch stride 0: one matrix for every entry, oneDNN's broadcast (a
   * dimension of 1, whose stride is then never used) */
  const dnnl_dim_t entries = stride ? k->batch : 1, entry_stride = stride ? stride : rows * cols;
  if (k->outer == 1)
    return dnnl_memory_desc_init_by_strides(md, 3, (dnnl_dims_t){entries, rows, cols}, type,
                                            (dnnl_dims_t){entry_stride, row_stride, col_stride});
  /* an outer batch: a fourth dimension, broadcast the same way */
  const dnnl_dim_t groups = outer_stride ? k->outer : 1, group_stride = outer_stride ? outer_stride : entries * entry_stride;
  return dnnl_memory_desc_init_by_strides(md, 4, (dnnl_dims_t){groups, entries, rows, cols}, type,
                                          (dnnl_dims_t){group_stride, entry_stride, row_stride, col_stride});
}

static void name_implementation(matmul_entry *e, const char *impl) {
  const dnnl_version_t *v = dnnl_version();
  int n = snprintf(e->what, sizeof e->what, "onednn %d.%d.%d %s", v->major, v->minor, v->patch, impl);
  /* "gemm:jit" names no instruction set: add the one oneDNN allows itself */
  if (!strstr(impl, "avx") && !strstr(impl, "amx") && n > 0 && (size_t)n < sizeof e->what) {
    const char *isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
    if (!strncmp(isa, "cpu_isa_", 8)) isa += 8;
    snprintf(e->what + n, sizeof e->what - (size_t)n, " (isa up to %s)", isa);
  }
  for (char *c = e->what; *c; c++)
    if (*c == ',') *c = ';'; /* the library's words go into CSV cells */
}

static dnnl_primitive_attr_t attributes(const matmul_key *k) {
  dnnl_primitive_attr_t attr;
  check(dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create", k);
  check(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "dnnl_primitive_attr_set_scratchpad_mode", k);
  float alpha, beta;
  memcpy(&alpha, &k->alpha_bits, sizeof alpha);
  memcpy(&beta, &k->beta_bits, sizeof beta);
  if (alpha != 1.0f)
    check(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha), "dnnl_primitive_attr_set_output_scales", k);
  if (beta != 0.0f) {
    dnnl_post_ops_t ops;
    check(dnnl_post_ops_create(&ops), "dnnl_post_ops_create", k);
    check(dnnl_post_ops_append_sum(ops, beta), "dnnl_post_ops_append_sum", k);
    check(dnnl_primitive_attr_set_post_ops(attr, ops), "dnnl_primitive_attr_set_post_ops", k);
    dnnl_post_ops_destroy(ops);
  }
  return attr;
}

/* The primitive for a key, or the reason oneDNN cannot run it. Slow (it
 * may JIT-compile kernels): callers hold no lock. */
static matmul_entry *make_entry(const matmul_key *k) {
  matmul_entry *e = HL_CHECK_ALLOC(calloc(1, sizeof *e), sizeof *e, "a oneDNN matmul cache entry");
  e->key = *k;
  /* "no implementation" and "not a layout it takes" (from any of these
   * calls) send the key to the widening path; anything else is a failure,
   * reported at the call that returned it */
#define REFUSED_OR_FATAL(st, call)                                                                                      \
  if ((st) == dnnl_unimplemented || (st) == dnnl_invalid_arguments) {                                                \
    snprintf(e->what, sizeof e->what, "oneDNN has no matmul for this layout (%s: %s)", (call), dnnl_status2str(st)); \
    return e;                                                                                                          \
  }                                                                                                                    \
  check((st), (call), k)
  dnnl_status_t st = operand_md(&e->a_md, k, k->m, k->k, k->trans_a, k->lda, k->stride_a, k->outer_stride_a, dnnl_bf16);
  if (st == dnnl_success)
    st = operand_md(&e->b_md, k, k->k, k->n, k->trans_b, k->ldb, k->stride_b, k->outer_stride_b, dnnl_bf16);
  if (st == dnnl_success)
    st = operand_md(&e->c_md, k, k->m, k->n, false, k->ldc, k->stride_c, k->outer_stride_c,
                    k->c_type == HL_F32 ? dnnl_f32 : dnnl_bf16);
  REFUSED_OR_FATAL(st, "dnnl_memory_desc_init_by_strides");
  dnnl_matmul_desc_t desc;
  st = dnnl_matmul_desc_init(&desc, &e->a_md, &e->b_md, NULL, &e->c_md);
  REFUSED_OR_FATAL(st, "dnnl_matmul_desc_init");
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = attributes(k);
  st = dnnl_primitive_desc_create(&pd, &desc, attr, engine(), NULL);
  dnnl_primitive_attr_destroy(attr);
  REFUSED_OR_FATAL(st, "dnnl_primitive_desc_create");
#undef REFUSED_OR_FATAL
  const char *impl = NULL;
  check(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl), "dnnl_primitive_desc_query(impl_info_str)", k);
  if (!strncmp(impl, "ref", 3)) {
    /* correct but scalar: the widening path is many times faster */
    snprintf(e->what, sizeof e->what, "oneDNN has only its reference matmul (%s) for this layout", impl);
    dnnl_primitive_desc_destroy(pd);
    return e;
  }
  name_implementation(e, impl);
  const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (pad) e->scratchpad_md = *pad;
  e->scratchpad_bytes = pad ? dnnl_memory_desc_get_size(pad) : 0;
  check(dnnl_primitive_create(&e->primitive, pd), "dnnl_primitive_create", k);
  dnnl_primitive_desc_destroy(pd);
  return e;
}

static void destroy_entry(matmul_entry *e) {
  if (e->primitive) dnnl_primitive_destroy(e->primitive);
  free(e);
}

/* ------------------------------------------------------------ cache -- */

static struct {
  pthread_mutex_t lock;
  matmul_entry *slot[CACHE_CAPACITY];
  int count;
  uint64_t clock, hits, created;
} cache_ = {.lock = PTHREAD_MUTEX_INITIALIZER};

static matmul_entry *find_locked(const matmul_key *k) {
  for (int i = 0; i < cache_.count; i++)
    if (!memcmp(&cache_.slot[i]->key, k, sizeof *k)) return cache_.slot[i];
  return NULL;
}

static void insert_locked(matmul_entry *e) {
  if (cache_.count < CACHE_CAPACITY) {
    cache_.slot[cache_.count++] = e;
    return;
  }
  int oldest = 0;
  for (int i = 1; i < CACHE_CAPACITY; i++)
    if (cache_.slot[i]->last_use < cache_.slot[oldest]->last_use) oldest = i;
  matmul_entry *out = cache_.slot[oldest];
  cache_.slot[oldest] = e;
  out->evicted = true;
  if (out->users == 0) destroy_entry(out);
}

/* The entry of key k, held (users + 1) until release() */
static matmul_entry *acquire(const matmul_key *k) {
  pthread_mutex_lock(&cache_.lock);
  matmul_entry *e = find_locked(k);
  if (e) e->users++, e->last_use = ++cache_.clock, cache_.hits++;
  pthread_mutex_unlock(&cache_.lock);
  if (e) return e;

  matmul_entry *made = make_entry(k);
  pthread_mutex_lock(&cache_.lock);
  e = find_locked(k); /* made by another thread meanwhile? */
  if (e) {
    e->users++, e->last_use = ++cache_.clock, cache_.hits++;
  } else {
    e = made, made = NULL;
    e->users = 1, e->last_use = ++cache_.clock, cache_.created++;
    insert_locked(e);
  }
  pthread_mutex_unlock(&cache_.lock);
  if (made) destroy_entry(made);
  return e;
}

static void release(matmul_entry *e) {
  pthread_mutex_lock(&cache_.lock);
  if (--e->users == 0 && e->evicted) destroy_entry(e);
  pthread_mutex_unlock(&cache_.lock);
}

hl_onednn_cache_stats hl_onednn_cache_stats_get(void) {
  pthread_mutex_lock(&cache_.lock);
  hl_onednn_cache_stats s = {cache_.count, CACHE_CAPACITY, cache_.hits, cache_.created};
  pthread_mutex_unlock(&cache_.lock);
  return s;
}

/* -------------------------------------------------------- the path -- */

static dnnl_memory_t memory_on(const dnnl_memory_desc_t *md, const void *data, const matmul_key *k) {
  dnnl_memory_t m;
  /* oneDNN takes every handle as void *; it never writes A or B */
  check(dnnl_memory_create(&m, md, engine(), (void *)data), "dnnl_memory_create", k);
  return m;
}

static void execute(const matmul_entry *e, const hl_gemm_desc *d) {
  thread_context *t = context();
  dnnl_memory_t a = memory_on(&e->a_md, d->a, &e->key), b = memory_on(&e->b_md, d->b, &e->key);
  dnnl_memory_t c = memory_on(&e->c_md, d->c, &e->key), pad = NULL;
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  int nargs = 3;
  if (e->scratchpad_bytes) {
    pad = memory_on(&e->scratchpad_md, scratchpad(t, e->scratchpad_bytes), &e->key);
    args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, pad};
  }
  check(dnnl_primitive_execute(e->primitive, t->stream, nargs, args), "dnnl_primitive_execute", &e->key);
  check(dnnl_stream_wait(t->stream), "dnnl_stream_wait", &e->key);
  dnnl_memory_destroy(a), dnnl_memory_destroy(b), dnnl_memory_destroy(c);
  if (pad) dnnl_memory_destroy(pad);
}

bool hl_onednn_gemm(const hl_gemm_desc *d) {
  matmul_key k;
  if (!units_allow(NULL, 0) || !key_of(d, &k, NULL, 0)) return false;
  matmul_entry *e = acquire(&k);
  const bool runs = e->primitive != NULL;
  if (runs) execute(e, d);
  release(e);
  return runs;
}

bool hl_onednn_matmul_check(const hl_gemm_desc *d, char *out, size_t len) {
  matmul_key k;
  if (!key_of(d, &k, out, len)) return false;
  matmul_entry *e = acquire(&k);
  const bool runs = e->primitive != NULL;
  say(out, len, e->what);
  release(e);
  return runs;
}

bool hl_onednn_gemm_describe(const hl_gemm_desc *d, char *out, size_t len) {
  if (!types_fit(d, out, len) || !units_allow(out, len)) return false;
  return hl_onednn_matmul_check(d, out, len);
}

/* ------------------------------------------------- direct reference -- */

bool hl_onednn_direct_make(hl_onednn_direct *r, const hl_gemm_desc *d, char *why, size_t len) {
  matmul_key k;
  if (!key_of(d, &k, why, len)) return false;
  matmul_entry *e = make_entry(&k); /* its own primitive: nothing of the cache in the timed call */
  if (!e->primitive) {
    say(why, len, e->what);
    destroy_entry(e);
    return false;
  }
  memset(r, 0, sizeof *r);
  r->primitive = e->primitive;
  e->primitive = NULL;
  snprintf(r->what, sizeof r->what, "%s", e->what);
  check(dnnl_stream_create(&r->stream, engine(), dnnl_stream_default_flags), "dnnl_stream_create", &k);
  r->a = memory_on(&e->a_md, d->a, &k), r->b = memory_on(&e->b_md, d->b, &k), r->c = memory_on(&e->c_md, d->c, &k);
  r->args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, r->a};
  r->args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, r->b};
  r->args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, r->c};
  r->nargs = 3;
  if (e->scratchpad_bytes) {
    r->scratchpad_data = HL_CHECK_ALLOC(malloc(e->scratchpad_bytes), e->scratchpad_bytes, "oneDNN's matmul scratchpad");
    r->scratchpad = memory_on(&e->scratchpad_md, r->scratchpad_data, &k);
    r->args[r->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, r->scratchpad};
  }
  destroy_entry(e);
  return true;
}

void hl_onednn_direct_free(hl_onednn_direct *r) {
  dnnl_memory_destroy(r->a), dnnl_memory_destroy(r->b), dnnl_memory_destroy(r->c);
  if (r->scratchpad) dnnl_memory_destroy(r->scratchpad);
  free(r->scratchpad_data);
  dnnl_stream_destroy(r->stream);
  dnnl_primitive_destroy(r->primitive);
  memset(r, 0, sizeof *r);
}

/* --------------------------------------------------------- metadata -- */

void hl_onednn_line(char *out, size_t len) {
  const dnnl_version_t *v = dnnl_version();
  const char *runtime = v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential" : "threadpool";
  char why[96];
  const hl_cpu_units *u = hl_cpu_units_get();
  if (units_allow(why, sizeof why)) {
    const char *isa = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
    if (!strncmp(isa, "cpu_isa_", 8)) isa += 8;
    snprintf(out, len, "oneDNN %d.%d.%d (libdnnl, %s threads, instruction sets up to %s): bf16 GEMMs on its matmul "
             "primitive (the CPU's %s); fp16 GEMMs widened to fp32 for sgemm (oneDNN 2.6 has no CPU fp16 matmul)",
             v->major, v->minor, v->patch, runtime, isa,
             u->amx_bf16 && u->avx512_bf16 ? "AMX-BF16 and AVX512-BF16" : u->amx_bf16 ? "AMX-BF16" : "AVX512-BF16");
  } else {
    snprintf(out, len, "oneDNN %d.%d.%d built in, not used (%s): bf16 and fp16 GEMMs widened to fp32 for sgemm",
             v->major, v->minor, v->patch, why);
  }
}
