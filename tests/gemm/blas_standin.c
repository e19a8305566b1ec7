/* blas_standin.c — a BLAS with cblas_sgemm and cblas_dgemm and nothing of
 * OpenBLAS's self-description, so that tests see halflab describe a BLAS
 * whose kernel set cannot be determined. Plain loops, row-major only (what
 * halflab calls). */
#include <cblas.h>

#define STANDIN_GEMM(NAME, T)                                                                             \
  void NAME(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta, const enum CBLAS_TRANSPOSE tb,   \
            const blasint m, const blasint n, const blasint k, const T alpha, const T *a, const blasint lda, \
            const T *b, const blasint ldb, const T beta, T *c, const blasint ldc) {                       \
    (void)order;                                                                                          \
    for (blasint i = 0; i < m; i++)                                                                       \
      for (blasint j = 0; j < n; j++) {                                                                   \
        T s = 0;                                                                                          \
        for (blasint p = 0; p < k; p++)                                                                   \
          s += (ta == CblasNoTrans ? a[i * lda + p] : a[p * lda + i]) *                                   \
               (tb == CblasNoTrans ? b[p * ldb + j] : b[j * ldb + p]);                                    \
        c[i * ldc + j] = alpha * s + (beta != 0 ? beta * c[i * ldc + j] : 0);                              \
      }                                                                                                   \
  }

STANDIN_GEMM(cblas_sgemm, float)
STANDIN_GEMM(cblas_dgemm, double)
