/* cblas.h — the part of the CBLAS interface halflab calls (cblas_sgemm and
 * cblas_dgemm, through kernels/gemm_reference.h), for a build without a
 * BLAS's headers: -Dnumerics-only=true puts this folder on the include path
 * in place of OpenBLAS's. Nothing links the BLAS (kernels/cpu/blas.c opens
 * it at the first GEMM), so declarations are all the kernels need; the
 * numerics probes call no GEMM. The values and types are the CBLAS
 * standard's, as OpenBLAS's LP64 build (32-bit integers) declares them. */
#ifndef HL_CBLAS_DECLARATIONS_H
#define HL_CBLAS_DECLARATIONS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int blasint;
typedef enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_ORDER;
typedef enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 } CBLAS_TRANSPOSE;

void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE trans_a, const enum CBLAS_TRANSPOSE trans_b,
                 const blasint m, const blasint n, const blasint k, const float alpha, const float *a,
                 const blasint lda, const float *b, const blasint ldb, const float beta, float *c, const blasint ldc);
void cblas_dgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE trans_a, const enum CBLAS_TRANSPOSE trans_b,
                 const blasint m, const blasint n, const blasint k, const double alpha, const double *a,
                 const blasint lda, const double *b, const blasint ldb, const double beta, double *c,
                 const blasint ldc);

#ifdef __cplusplus
}
#endif

#endif
