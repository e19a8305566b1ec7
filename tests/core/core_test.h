/* core_test.h — what the AMP-core tests share: f64 leaves, finite
 * differences (first order, and Hessian-vector products for second
 * order), memory-leak checks. */
#ifndef HL_CORE_TEST_H
#define HL_CORE_TEST_H

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/engine/ops.h"
#include "core/engine/tensor.h"
#include "tests/support/hltest.h"


/* An f64 leaf requiring grad, normal(0, 1) from (seed, stream), plus an
 * offset (to keep log/sqrt inputs positive). */
hl_tensor *leaf64(hl_shape s, uint64_t stream, double offset);

/* A scalar function of n tensors (the test's composition of ops). */
typedef hl_tensor *(*scalar_fn)(hl_tensor **in, int n, void *ctx);

/* d f / d in[i] by autograd against central differences, for every element
 * of every input that requires grad. */
void check_grad(const char *what, scalar_fn f, hl_tensor **in, int n, void *ctx);
/* Second order: for a random direction V, the gradient of
 * h(x) = sum_i <df/dx_i, V_i> by double backward (create_graph) against
 * central differences of h (h itself through first-order autograd). */
void check_hvp(const char *what, scalar_fn f, hl_tensor **in, int n, void *ctx);

/* sum(t * R) with a fixed pseudo-random R of t's shape: a scalar that
 * weighs every output element differently. */
hl_tensor *weighted_sum(hl_tensor *t);


#endif
