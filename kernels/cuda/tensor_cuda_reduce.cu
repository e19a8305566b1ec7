/* tensor_cuda_reduce.cu — reductions on the GPU: sum, softmax / log_softmax
 * (+ backward), layer norm (+ backward), cross-entropy (+ backward), one-hot.
 * The CPU twin is kernels/cpu/tensor_cpu_reduce.c: the same per-element
 * formulas (kernels/tensor_math.h), the same statistics (max, sum of
 * exp(x - max), two-pass mean and variance), summed in another order.
 *
 * Launch shapes (256 threads per block, grid-stride everywhere):
 *   row kernels (softmax, layer norm, cross-entropy and their backward):
 *     rows of up to 1024 elements: one warp per row, 8 rows per block;
 *     longer rows: one block per row. Each thread walks its row with a
 *     stride of the group size, 16-byte vectors when the row length and the
 *     pointers allow; statistics are combined by xor-shuffle butterflies
 *     (and, per block, through shared memory), so every thread of a row
 *     holds the same bits. Softmax and cross-entropy keep an online
 *     (max, sum) pair and read each row twice (once for cross-entropy).
 *   sum over the middle dim of [outer, r, inner]:
 *     inner == 1: one warp per (row, chunk); long rows are cut into chunks
 *     when there are too few rows to fill the GPU;
 *     inner > 1: blocks of 32 columns x 8 row lanes, one block per (column
 *     tile, chunk of r), the 8 lanes folded in a fixed order.
 *     Chunk partials go to the workspace and a second kernel folds them in
 *     chunk order: no atomics, the same bits on every run.
 *   layer_norm_backward: dx by the row kernel; dw, db by the column scheme.
 *   cross-entropy: the row kernel writes lse and row losses; one block then
 *     sums the row losses and counts bad targets (sets *bad).
 * No host synchronisation anywhere. */
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/tensor_cuda.cuh"

namespace hl_tc {
namespace {

/* ---------------------------------------------------------- row shapes -- */

template <bool WARP>
unsigned row_grid(int64_t rows) {
  return WARP ? grid_for(rows, kWarps) : grid_for(rows, 1);
}

/* Calls f(integral_constant<bool, WARP>, integral_constant<int, V>) for rows
 * of `cols` elements: a warp per row up to kWarpRowMax, else a block; V the
 * 16-byte width when every row start is aligned (vec_ok: the pointers are,
 * cols a multiple of the width), else 1. */
template <hl_dtype T, typename F>
void with_row_shape(int64_t cols, bool vec_ok, F &&f) {
  constexpr int VW = vec16<typename elt<T>::S>::n;
  const bool vec = vec_ok && cols % VW == 0;
  if (cols <= kWarpRowMax) {
    if (vec) f(std::true_type(), std::integral_constant<int, VW>());
    else f(std::true_type(), std::integral_constant<int, 1>());
  } else {
    if (vec) f(std::false_type(), std::integral_constant<int, VW>());
    else f(std::false_type(), std::integral_constant<int, 1>());
  }
}

/* ----------------------------------------------------------------- sum -- */

/* inner == 1: warp per (row o, chunk k) item; out directly when one chunk,
 * else partial[o * nchunk + k] */
template <hl_dtype T>
__global__ void sum_rows_kernel(const typename elt<T>::S *x, int64_t outer, int64_t r, int64_t nchunk,
                                typename elt<T>::C alpha, typename elt<T>::S *out, typename elt<T>::C *partial) {
  typedef typename elt<T>::C C;
  const int lane = threadIdx.x & 31;
  const int64_t items = outer * nchunk;
  for (int64_t item = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5); item < items;
       item += (int64_t)gridDim.x * kWarps) {
    const int64_t o = item / nchunk, k = item % nchunk;
    int64_t lo, hi;
    hl_cuda_chunk(r, nchunk, k, &lo, &hi);
    const typename elt<T>::S *row = x + o * r;
    C acc = 0;
    for (int64_t j = lo + lane; j < hi; j += 32) acc += elt<T>::ld(row[j]);
    acc = warp_sum(acc);
    if (lane == 0) {
      if (nchunk == 1) out[o] = elt<T>::st(alpha * acc);
      else partial[item] = acc;
    }
  }
}

/* warp per row: the row's nchunk partials in a fixed order */
template <hl_dtype T>
__global__ void sum_rows_finish_kernel(const typename elt<T>::C *partial, int64_t outer, int64_t nchunk,
                                       typename elt<T>::C alpha, typename elt<T>::S *out) {
  typedef typename elt<T>::C C;
  const int lane = threadIdx.x & 31;
  for (int64_t o = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5); o < outer; o += (int64_t)gridDim.x * kWarps) {
    C acc = 0;
    for (int64_t k = lane; k < nchunk; k += 32) acc += partial[o * nchunk + k];
    acc = warp_sum(acc);
    if (lane == 0) out[o] = elt<T>::st(alpha * acc);
  }
}

/* inner > 1: thread (tx, ty) of a 32 x 8 block sums column tile*32 + tx over
 * rows lo + ty, lo + ty + 8, ... of chunk blockIdx.y; the 8 row lanes are
 * folded in order. Out directly when one chunk, else
 * partial[k * outer * inner + o * inner + c]. */
template <hl_dtype T>
__global__ void sum_cols_kernel(const typename elt<T>::S *x, int64_t outer, int64_t r, int64_t inner,
                                int64_t tiles_per_outer, int64_t nchunk, typename elt<T>::C alpha,
                                typename elt<T>::S *out, typename elt<T>::C *partial) {
  typedef typename elt<T>::C C;
  __shared__ C sh[kWarps][32];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t k = blockIdx.y, tiles = outer * tiles_per_outer, nout = outer * inner;
  int64_t lo, hi;
  hl_cuda_chunk(r, nchunk, k, &lo, &hi);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t o = tile / tiles_per_outer, c = (tile % tiles_per_outer) * 32 + tx;
    C acc = 0;
    if (c < inner)
      for (int64_t j = lo + ty; j < hi; j += kWarps) acc += elt<T>::ld(x[(o * r + j) * inner + c]);
    sh[ty][tx] = acc;
    __syncthreads();
    if (ty == 0 && c < inner) {
      C t = sh[0][tx];
      for (int w = 1; w < kWarps; w++) t += sh[w][tx];
      if (nchunk == 1) out[o * inner + c] = elt<T>::st(alpha * t);
      else partial[k * nout + o * inner + c] = t;
    }
    __syncthreads(); /* sh is rewritten by the next tile */
  }
}

/* element e of nout: its nchunk partials in chunk order */
template <hl_dtype T>
__global__ void sum_cols_finish_kernel(const typename elt<T>::C *partial, int64_t nout, int64_t nchunk,
                                       typename elt<T>::C alpha, typename elt<T>::S *out) {
  typedef typename elt<T>::C C;
  for (int64_t e = first_index(); e < nout; e += grid_stride()) {
    C t = 0;
    for (int64_t k = 0; k < nchunk; k++) t += partial[k * nout + e];
    out[e] = elt<T>::st(alpha * t);
  }
}

template <hl_dtype T>
void launch_sum(void *out, const void *x, int64_t outer, int64_t r, int64_t inner, double alpha_d) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  const C alpha = (C)alpha_d;
  cudaStream_t s = hl_cuda_stream();
  if (inner == 1) {
    const int64_t nchunk = hl_cuda_row_chunks(outer, r, (int64_t)hl_cuda_sm_count() * 64);
    C *partial = nchunk > 1 ? (C *)workspace(sizeof(C) * (size_t)(outer * nchunk)) : NULL;
    sum_rows_kernel<T><<<grid_for(outer * nchunk, kWarps), kBlock, 0, s>>>((const S *)x, outer, r, nchunk, alpha,
                                                                            (S *)out, partial);
    HL_CUDA_CHECK_LAUNCH();
    if (nchunk > 1) {
      sum_rows_finish_kernel<T><<<grid_for(outer, kWarps), kBlock, 0, s>>>(partial, outer, nchunk, alpha, (S *)out);
      HL_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  const int64_t tiles_per_outer = (inner + 31) / 32, tiles = outer * tiles_per_outer;
  const int64_t nchunk = hl_cuda_col_chunks(tiles, r, (int64_t)hl_cuda_sm_count() * 8);
  C *partial = nchunk > 1 ? (C *)workspace(sizeof(C) * (size_t)(outer * inner * nchunk)) : NULL;
  const dim3 grid(grid_for(tiles, 1), (unsigned)nchunk);
  sum_cols_kernel<T><<<grid, kBlock, 0, s>>>((const S *)x, outer, r, inner, tiles_per_outer, nchunk, alpha, (S *)out,
                                            partial);
  HL_CUDA_CHECK_LAUNCH();
  if (nchunk > 1) {
    sum_cols_finish_kernel<T><<<grid_for(outer * inner, kBlock), kBlock, 0, s>>>(partial, outer * inner, nchunk, alpha,
                                                                                  (S *)out);
    HL_CUDA_CHECK_LAUNCH();
  }
}

/* ------------------------------------------------------------- softmax -- */

/* Row xr's max and sum of exp(x - max) (online), walked by the row group's
 * threads from c0 with `step`, combined so that every thread holds the same
 * bits: the statistics of softmax and cross-entropy. */
template <hl_dtype T, bool WARP, int V>
__device__ __forceinline__ max_sum<typename elt<T>::C> row_max_sum(const typename elt<T>::S *xr, int64_t cols,
                                                                   int64_t c0, int64_t step,
                                                                   max_sum<typename elt<T>::C> *sh) {
  typedef typename elt<T>::C C;
  max_sum<C> ms;
  ms.m = -(C)INFINITY;
  ms.s = (C)0;
  for (int64_t c = c0; c < cols; c += step) {
    C v[V];
    load_row<T, V>(xr, c, v);
#pragma unroll
    for (int j = 0; j < V; j++) max_sum_add(ms, v[j]);
  }
  return max_sum_finish(row_group<WARP>::max_sum_all(ms, sh), cols);
}

template <hl_dtype T, bool WARP, int V>
__global__ void softmax_kernel(typename elt<T>::S *y, const typename elt<T>::S *x, int64_t rows, int64_t cols,
                               bool log) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  typedef row_group<WARP> G;
  __shared__ max_sum<C> sh[kWarps];
  const int64_t c0 = (int64_t)G::tid() * V, step = (int64_t)G::nthreads() * V;
  for (int64_t r = G::first_row(); r < rows; r += G::row_step()) {
    const S *xr = x + r * cols;
    S *yr = y + r * cols;
    const max_sum<C> ms = row_max_sum<T, WARP, V>(xr, cols, c0, step, sh);
    if (log) {
      const C ls = math_log(ms.s);
      for (int64_t c = c0; c < cols; c += step) {
        C v[V];
        load_row<T, V>(xr, c, v);
#pragma unroll
        for (int j = 0; j < V; j++) v[j] = (v[j] - ms.m) - ls;
        store_row<T, V>(yr, c, v);
      }
    } else {
      for (int64_t c = c0; c < cols; c += step) {
        C v[V];
        load_row<T, V>(xr, c, v);
#pragma unroll
        for (int j = 0; j < V; j++) v[j] = math_exp(v[j] - ms.m) / ms.s;
        store_row<T, V>(yr, c, v);
      }
    }
  }
}

template <hl_dtype T, bool WARP, int V>
__global__ void softmax_backward_kernel(typename elt<T>::S *dx, const typename elt<T>::S *dy,
                                        const typename elt<T>::S *y, int64_t rows, int64_t cols, bool log) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  typedef row_group<WARP> G;
  __shared__ C sh[kWarps];
  const int64_t c0 = (int64_t)G::tid() * V, step = (int64_t)G::nthreads() * V;
  for (int64_t r = G::first_row(); r < rows; r += G::row_step()) {
    const S *gr = dy + r * cols, *yr = y + r * cols;
    S *dr = dx + r * cols;
    /* log: sum(dy); softmax: sum(dy * y) */
    C acc = 0;
    for (int64_t c = c0; c < cols; c += step) {
      C g[V], yv[V];
      load_row<T, V>(gr, c, g);
      if (log) {
#pragma unroll
        for (int j = 0; j < V; j++) acc += g[j];
      } else {
        load_row<T, V>(yr, c, yv);
#pragma unroll
        for (int j = 0; j < V; j++) acc += g[j] * yv[j];
      }
    }
    acc = G::sum(acc, sh);
    for (int64_t c = c0; c < cols; c += step) {
      C g[V], yv[V];
      load_row<T, V>(gr, c, g);
      load_row<T, V>(yr, c, yv);
#pragma unroll
      for (int j = 0; j < V; j++) g[j] = log ? g[j] - math_exp(yv[j]) * acc : yv[j] * (g[j] - acc);
      store_row<T, V>(dr, c, g);
    }
  }
}

/* ---------------------------------------------------------- layer norm -- */

template <hl_dtype T, bool WARP, int V>
__global__ void layer_norm_kernel(typename elt<T>::S *y, typename elt<T>::C *mean_out, typename elt<T>::C *rstd_out,
                                  const typename elt<T>::S *x, const typename elt<T>::S *w,
                                  const typename elt<T>::S *b, int64_t rows, int64_t cols, typename elt<T>::C eps) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  typedef row_group<WARP> G;
  __shared__ C sh[kWarps];
  const int64_t c0 = (int64_t)G::tid() * V, step = (int64_t)G::nthreads() * V;
  for (int64_t r = G::first_row(); r < rows; r += G::row_step()) {
    const S *xr = x + r * cols;
    S *yr = y + r * cols;
    C acc = 0;
    for (int64_t c = c0; c < cols; c += step) {
      C v[V];
      load_row<T, V>(xr, c, v);
#pragma unroll
      for (int j = 0; j < V; j++) acc += v[j];
    }
    const C mean = G::sum(acc, sh) / (C)cols;
    C acc2 = 0;
    for (int64_t c = c0; c < cols; c += step) {
      C v[V];
      load_row<T, V>(xr, c, v);
#pragma unroll
      for (int j = 0; j < V; j++) {
        const C d = v[j] - mean;
        acc2 += d * d;
      }
    }
    const C rstd = (C)1 / math_sqrt(G::sum(acc2, sh) / (C)cols + eps);
    if (G::tid() == 0) {
      mean_out[r] = mean;
      rstd_out[r] = rstd;
    }
    for (int64_t c = c0; c < cols; c += step) {
      C v[V], wv[V], bv[V];
      load_row<T, V>(xr, c, v);
      if (w) load_row<T, V>(w, c, wv);
      if (b) load_row<T, V>(b, c, bv);
#pragma unroll
      for (int j = 0; j < V; j++) {
        C o = (v[j] - mean) * rstd;
        if (w) o = o * wv[j];
        if (b) o = o + bv[j];
        v[j] = o;
      }
      store_row<T, V>(yr, c, v);
    }
  }
}

/* dx of each row: g = dy * w (or dy), xhat = (x - mean) rstd,
 * dx = (g - mean(g) - xhat mean(g xhat)) rstd */
template <hl_dtype T, bool WARP, int V>
__global__ void layer_norm_dx_kernel(typename elt<T>::S *dx, const typename elt<T>::S *dy, const typename elt<T>::S *x,
                                     const typename elt<T>::S *w, const typename elt<T>::C *mean,
                                     const typename elt<T>::C *rstd, int64_t rows, int64_t cols) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  typedef row_group<WARP> G;
  __shared__ C sh[kWarps];
  const int64_t c0 = (int64_t)G::tid() * V, step = (int64_t)G::nthreads() * V;
  for (int64_t r = G::first_row(); r < rows; r += G::row_step()) {
    const S *gr = dy + r * cols, *xr = x + r * cols;
    S *dr = dx + r * cols;
    const C mu = mean[r], rs = rstd[r];
    C sg = 0, sgx = 0;
    for (int64_t c = c0; c < cols; c += step) {
      C g[V], v[V], wv[V];
      load_row<T, V>(gr, c, g);
      load_row<T, V>(xr, c, v);
      if (w) load_row<T, V>(w, c, wv);
#pragma unroll
      for (int j = 0; j < V; j++) {
        const C gg = w ? g[j] * wv[j] : g[j];
        sg += gg;
        sgx += gg * ((v[j] - mu) * rs);
      }
    }
    const C a = G::sum(sg, sh) / (C)cols;
    const C cc = G::sum(sgx, sh) / (C)cols;
    for (int64_t c = c0; c < cols; c += step) {
      C g[V], v[V], wv[V];
      load_row<T, V>(gr, c, g);
      load_row<T, V>(xr, c, v);
      if (w) load_row<T, V>(w, c, wv);
#pragma unroll
      for (int j = 0; j < V; j++) {
        const C gg = w ? g[j] * wv[j] : g[j];
        const C xhat = (v[j] - mu) * rs;
        g[j] = (gg - a - xhat * cc) * rs;
      }
      store_row<T, V>(dr, c, g);
    }
  }
}

/* dw[c] = sum_r dy xhat, db[c] = sum_r dy: the column scheme of sum_cols;
 * pw/pb[k * cols + c] when there are several chunks */
template <hl_dtype T>
__global__ void layer_norm_dwdb_kernel(typename elt<T>::S *dw, typename elt<T>::S *db, const typename elt<T>::S *dy,
                                       const typename elt<T>::S *x, const typename elt<T>::C *mean,
                                       const typename elt<T>::C *rstd, int64_t rows, int64_t cols, int64_t nchunk,
                                       typename elt<T>::C *pw, typename elt<T>::C *pb) {
  typedef typename elt<T>::C C;
  __shared__ C shw[kWarps][32], shb[kWarps][32];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t k = blockIdx.y, tiles = (cols + 31) / 32;
  int64_t lo, hi;
  hl_cuda_chunk(rows, nchunk, k, &lo, &hi);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t c = tile * 32 + tx;
    C aw = 0, ab = 0;
    if (c < cols)
      for (int64_t j = lo + ty; j < hi; j += kWarps) {
        const C g = elt<T>::ld(dy[j * cols + c]);
        aw += g * ((elt<T>::ld(x[j * cols + c]) - mean[j]) * rstd[j]);
        ab += g;
      }
    shw[ty][tx] = aw;
    shb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && c < cols) {
      C tw = shw[0][tx], tb = shb[0][tx];
      for (int i = 1; i < kWarps; i++) {
        tw += shw[i][tx];
        tb += shb[i][tx];
      }
      if (nchunk == 1) {
        if (dw) dw[c] = elt<T>::st(tw);
        if (db) db[c] = elt<T>::st(tb);
      } else {
        pw[k * cols + c] = tw;
        pb[k * cols + c] = tb;
      }
    }
    __syncthreads();
  }
}

template <hl_dtype T>
__global__ void layer_norm_dwdb_finish_kernel(typename elt<T>::S *dw, typename elt<T>::S *db,
                                              const typename elt<T>::C *pw, const typename elt<T>::C *pb,
                                              int64_t cols, int64_t nchunk) {
  typedef typename elt<T>::C C;
  for (int64_t c = first_index(); c < cols; c += grid_stride()) {
    C tw = 0, tb = 0;
    for (int64_t k = 0; k < nchunk; k++) {
      tw += pw[k * cols + c];
      tb += pb[k * cols + c];
    }
    if (dw) dw[c] = elt<T>::st(tw);
    if (db) db[c] = elt<T>::st(tb);
  }
}

/* ------------------------------------------------------- cross-entropy -- */

/* lse[r] = max + log(sum exp(x - max)); row_loss[r] = lse - x[target], NaN
 * for a target outside [0, cols) */
template <hl_dtype T, bool WARP, int V>
__global__ void cross_entropy_rows_kernel(const typename elt<T>::S *x, const int32_t *tg, int64_t rows, int64_t cols,
                                          typename elt<T>::C *row_loss, typename elt<T>::C *lse) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  typedef row_group<WARP> G;
  __shared__ max_sum<C> sh[kWarps];
  const int64_t c0 = (int64_t)G::tid() * V, step = (int64_t)G::nthreads() * V;
  for (int64_t r = G::first_row(); r < rows; r += G::row_step()) {
    const S *xr = x + r * cols;
    const max_sum<C> ms = row_max_sum<T, WARP, V>(xr, cols, c0, step, sh);
    if (G::tid() == 0) {
      const C l = ms.m + math_log(ms.s);
      const int32_t t = tg[r];
      lse[r] = l;
      row_loss[r] = (t < 0 || t >= cols) ? (C)NAN : l - elt<T>::ld(xr[t]);
    }
  }
}

/* one block: *loss = mean of the row losses, *bad = targets out of range */
template <hl_dtype T>
__global__ void cross_entropy_mean_kernel(const typename elt<T>::C *row_loss, const int32_t *tg, int64_t rows,
                                          int64_t cols, typename elt<T>::S *loss, int32_t *bad) {
  typedef typename elt<T>::C C;
  __shared__ C sh[kWarps];
  __shared__ int shn[kWarps];
  C acc = 0;
  int nbad = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    acc += row_loss[i];
    nbad += tg[i] < 0 || tg[i] >= cols;
  }
  acc = block_sum(acc, sh);
  nbad = block_sum(nbad, shn);
  if (threadIdx.x == 0) {
    *loss = elt<T>::st(acc / (C)rows);
    *bad = nbad;
  }
}

/* dx = (exp(x - lse) - [c == target]) * dloss / rows */
template <hl_dtype T, bool WARP, int V>
__global__ void cross_entropy_backward_kernel(typename elt<T>::S *dx, const typename elt<T>::S *x, const int32_t *tg,
                                              const typename elt<T>::C *lse, const typename elt<T>::S *dloss,
                                              int64_t rows, int64_t cols) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  typedef row_group<WARP> G;
  const C g = elt<T>::ld(*dloss) / (C)rows;
  const int64_t c0 = (int64_t)G::tid() * V, step = (int64_t)G::nthreads() * V;
  for (int64_t r = G::first_row(); r < rows; r += G::row_step()) {
    const S *xr = x + r * cols;
    S *dr = dx + r * cols;
    const C l = lse[r];
    const int64_t t = tg[r];
    for (int64_t c = c0; c < cols; c += step) {
      C v[V];
      load_row<T, V>(xr, c, v);
#pragma unroll
      for (int j = 0; j < V; j++) {
        const C e = math_exp(v[j] - l);
        v[j] = (c + j == t ? e - (C)1 : e) * g;
      }
      store_row<T, V>(dr, c, v);
    }
  }
}

/* ------------------------------------------------------------- one-hot -- */

template <typename U>
__global__ void one_hot_kernel(U *dst, const int32_t *tg, int64_t rows, int64_t cols, U one) {
  for (int64_t r = first_index(); r < rows; r += grid_stride()) {
    const int64_t t = tg[r];
    if (t >= 0 && t < cols) dst[r * cols + t] = one;
  }
}

}  // namespace
}  // namespace hl_tc

using namespace hl_tc;

void hl_cuda_sum(hl_dtype t, void *out, const void *x, int64_t outer, int64_t r, int64_t inner, double alpha) {
  if (outer <= 0 || inner <= 0) return;
  with_float_dtype(t, [&](auto tag) { launch_sum<decltype(tag)::value>(out, x, outer, r, inner, alpha); });
}

void hl_cuda_softmax(hl_dtype t, void *y, const void *x, int64_t rows, int64_t cols, bool log) {
  if (rows <= 0 || cols <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    with_row_shape<T>(cols, hl_cuda_aligned16(y) && hl_cuda_aligned16(x), [&](auto wtag, auto vtag) {
      constexpr bool W = decltype(wtag)::value;
      constexpr int V = decltype(vtag)::value;
      softmax_kernel<T, W, V><<<row_grid<W>(rows), kBlock, 0, hl_cuda_stream()>>>((S *)y, (const S *)x, rows, cols, log);
      HL_CUDA_CHECK_LAUNCH();
    });
  });
}

void hl_cuda_softmax_backward(hl_dtype t, void *dx, const void *dy, const void *y, int64_t rows, int64_t cols,
                              bool log) {
  if (rows <= 0 || cols <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    with_row_shape<T>(cols, hl_cuda_aligned16(dx) && hl_cuda_aligned16(dy) && hl_cuda_aligned16(y), [&](auto wtag, auto vtag) {
      constexpr bool W = decltype(wtag)::value;
      constexpr int V = decltype(vtag)::value;
      softmax_backward_kernel<T, W, V><<<row_grid<W>(rows), kBlock, 0, hl_cuda_stream()>>>(
          (S *)dx, (const S *)dy, (const S *)y, rows, cols, log);
      HL_CUDA_CHECK_LAUNCH();
    });
  });
}

void hl_cuda_layer_norm(hl_dtype t, void *y, void *mean, void *rstd, const void *x, const void *w, const void *b,
                        int64_t rows, int64_t cols, double eps) {
  if (rows <= 0 || cols <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    typedef typename elt<T>::C C;
    const bool vec_ok = hl_cuda_aligned16(y) && hl_cuda_aligned16(x) && (!w || hl_cuda_aligned16(w)) && (!b || hl_cuda_aligned16(b));
    with_row_shape<T>(cols, vec_ok, [&](auto wtag, auto vtag) {
      constexpr bool W = decltype(wtag)::value;
      constexpr int V = decltype(vtag)::value;
      layer_norm_kernel<T, W, V><<<row_grid<W>(rows), kBlock, 0, hl_cuda_stream()>>>(
          (S *)y, (C *)mean, (C *)rstd, (const S *)x, (const S *)w, (const S *)b, rows, cols, (C)eps);
      HL_CUDA_CHECK_LAUNCH();
    });
  });
}

void hl_cuda_layer_norm_backward(hl_dtype t, void *dx, void *dw, void *db, const void *dy, const void *x,
                                 const void *w, const void *mean, const void *rstd, int64_t rows, int64_t cols) {
  if (cols <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    typedef typename elt<T>::C C;
    cudaStream_t s = hl_cuda_stream();
    if (dx && rows > 0) {
      const bool vec_ok = hl_cuda_aligned16(dx) && hl_cuda_aligned16(dy) && hl_cuda_aligned16(x) && (!w || hl_cuda_aligned16(w));
      with_row_shape<T>(cols, vec_ok, [&](auto wtag, auto vtag) {
        constexpr bool W = decltype(wtag)::value;
        constexpr int V = decltype(vtag)::value;
        layer_norm_dx_kernel<T, W, V><<<row_grid<W>(rows), kBlock, 0, s>>>(
            (S *)dx, (const S *)dy, (const S *)x, (const S *)w, (const C *)mean, (const C *)rstd, rows, cols);
        HL_CUDA_CHECK_LAUNCH();
      });
    }
    if (!dw && !db) return;
    const int64_t tiles = (cols + 31) / 32;
    const int64_t nchunk = hl_cuda_col_chunks(tiles, rows, (int64_t)hl_cuda_sm_count() * 8);
    C *pw = NULL, *pb = NULL;
    if (nchunk > 1) {
      pw = (C *)workspace(2 * sizeof(C) * (size_t)(nchunk * cols));
      pb = pw + nchunk * cols;
    }
    const dim3 grid(grid_for(tiles, 1), (unsigned)nchunk);
    layer_norm_dwdb_kernel<T><<<grid, kBlock, 0, s>>>((S *)dw, (S *)db, (const S *)dy, (const S *)x, (const C *)mean,
                                                      (const C *)rstd, rows, cols, nchunk, pw, pb);
    HL_CUDA_CHECK_LAUNCH();
    if (nchunk > 1) {
      layer_norm_dwdb_finish_kernel<T><<<grid_for(cols, kBlock), kBlock, 0, s>>>((S *)dw, (S *)db, pw, pb, cols, nchunk);
      HL_CUDA_CHECK_LAUNCH();
    }
  });
}

void hl_cuda_cross_entropy(hl_dtype t, void *loss, void *row_loss, void *lse, const void *x, const int32_t *targets,
                           int64_t rows, int64_t cols, int32_t *bad) {
  if (rows <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    typedef typename elt<T>::C C;
    cudaStream_t s = hl_cuda_stream();
    with_row_shape<T>(cols, hl_cuda_aligned16(x), [&](auto wtag, auto vtag) {
      constexpr bool W = decltype(wtag)::value;
      constexpr int V = decltype(vtag)::value;
      cross_entropy_rows_kernel<T, W, V><<<row_grid<W>(rows), kBlock, 0, s>>>((const S *)x, targets, rows, cols,
                                                                               (C *)row_loss, (C *)lse);
      HL_CUDA_CHECK_LAUNCH();
    });
    cross_entropy_mean_kernel<T><<<1, kBlock, 0, s>>>((const C *)row_loss, targets, rows, cols, (S *)loss, bad);
    HL_CUDA_CHECK_LAUNCH();
  });
}

void hl_cuda_cross_entropy_backward(hl_dtype t, void *dx, const void *x, const int32_t *targets, const void *lse,
                                    const void *dloss, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    typedef typename elt<T>::C C;
    with_row_shape<T>(cols, hl_cuda_aligned16(dx) && hl_cuda_aligned16(x), [&](auto wtag, auto vtag) {
      constexpr bool W = decltype(wtag)::value;
      constexpr int V = decltype(vtag)::value;
      cross_entropy_backward_kernel<T, W, V><<<row_grid<W>(rows), kBlock, 0, hl_cuda_stream()>>>(
          (S *)dx, (const S *)x, targets, (const C *)lse, (const S *)dloss, rows, cols);
      HL_CUDA_CHECK_LAUNCH();
    });
  });
}

void hl_cuda_one_hot(hl_dtype t, void *dst, const int32_t *targets, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  const size_t es = hl_dtype_size(t);
  cudaStream_t s = hl_cuda_stream();
  HL_CUDA_CHECK(cudaMemsetAsync(dst, 0, (size_t)(rows * cols) * es, s));
  const uint64_t one = hl_cuda_fill_bits(t, 1.0);
  const unsigned grid = grid_for(rows, kBlock);
  switch (es) {
    case 1: one_hot_kernel<uint8_t><<<grid, kBlock, 0, s>>>((uint8_t *)dst, targets, rows, cols, (uint8_t)one); break;
    case 2: one_hot_kernel<uint16_t><<<grid, kBlock, 0, s>>>((uint16_t *)dst, targets, rows, cols, (uint16_t)one); break;
    case 4: one_hot_kernel<uint32_t><<<grid, kBlock, 0, s>>>((uint32_t *)dst, targets, rows, cols, (uint32_t)one); break;
    default:
      one_hot_kernel<unsigned long long><<<grid, kBlock, 0, s>>>((unsigned long long *)dst, targets, rows, cols,
                                                                 (unsigned long long)one);
      break;
  }
  HL_CUDA_CHECK_LAUNCH();
}
