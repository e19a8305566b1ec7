/* ops_cast.c — dtype conversion, device copies, contiguous copies. */
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "core/engine/ops_internal.h"

/* ------------------------------------------------------------ to dtype -- */

static bool to_dtype_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_to_dtype(g, n->in_meta[0].dtype);
  return gin[0] != NULL;
}

hl_tensor *hl_to_dtype(hl_tensor *x, hl_dtype dtype) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_TO_DTYPE, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if ((unsigned)dtype >= HL_TENSOR_DTYPES) {
    hl_fail("to: unknown dtype %d", (int)dtype);
    return hl_op_abort(&c);
  }
  if (x->dtype == dtype) return hl_op_end(&c, hl_retain(x));
  char why[256];
  if (!hl_op_supported(c.op, c.device, dtype, why, sizeof why)) {
    hl_fail("%s", why);
    return hl_op_abort(&c);
  }
  hl_tensor *out = hl_op_output(&c, x->ndim, x->shape, dtype);
  if (!out) return hl_op_abort(&c);
  int64_t size4[HL_MAX_DIMS];
  hl_size4(x->ndim, x->shape, size4);
  hl_kview d = hl_kview_of(out, out->ndim, out->shape), s = hl_kview_of(x, x->ndim, x->shape);
  c.k->copy(&d, &s, size4);
  /* only float -> float carries a gradient */
  if (hl_dtype_is_float(x->dtype) && hl_dtype_is_float(dtype)) {
    hl_node *node;
    if (!hl_record(&c, out, to_dtype_backward, &node)) return hl_op_abort_output(&c, out);
  }
  return hl_op_end(&c, out);
}

hl_tensor *hl_to_f32(hl_tensor *x) { return hl_to_dtype(x, HL_F32); }

/* ----------------------------------------------------------- to device -- */

static bool to_device_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_to_device(g, n->in_meta[0].device);
  return gin[0] != NULL;
}

/* Through the host: the bytes the view spans come over, the CPU copy
 * kernel packs them, and the packed bytes go to the target. No tensor
 * kernels are needed on either device, so this works on every backend. */
hl_tensor *hl_to_device(hl_tensor *x, hl_device_kind device) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_TO_DEVICE, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if ((unsigned)device >= HL_DEVICE_KINDS) {
    hl_fail("to_device: unknown device kind %d", (int)device);
    return hl_op_abort(&c);
  }
  if (x->device == device) return hl_op_end(&c, hl_retain(x));
  char why[256];
  if (!hl_device_available(device, why, sizeof why)) {
    hl_fail("to_device: %s is not usable: %s", hl_device_kind_name(device), why);
    return hl_op_abort(&c);
  }
  hl_tensor *out = hl_tensor_new("to_device", x->ndim, x->shape, x->dtype, device);
  if (!out) return hl_op_abort(&c);
  const size_t es = hl_dtype_size(x->dtype), bytes = hl_tensor_nbytes(x);
  int64_t lo, hi;
  hl_tensor_span(x, &lo, &hi);
  const char *span = (const char *)x->storage->data + lo * (int64_t)es;
  void *staged = NULL, *packed = NULL;
  if (x->device != HL_DEVICE_CPU) {
    staged = malloc((size_t)(hi - lo) * es + 1);
    if (!staged) goto oom;
    hl_backend_for(x->device)->copy_to_host(staged, span, (size_t)(hi - lo) * es);
    span = staged;
  }
  packed = device == HL_DEVICE_CPU ? hl_tensor_data(out) : malloc(bytes + 1);
  if (!packed) goto oom;
  {
    int64_t size4[HL_MAX_DIMS];
    hl_size4(x->ndim, x->shape, size4);
    hl_kview s = hl_kview_of(x, x->ndim, x->shape), d = hl_kview_of(out, out->ndim, out->shape);
    s.data = (void *)span;
    d.data = packed;
    hl_backend_cpu.tensor->copy(&d, &s, size4);
  }
  if (device != HL_DEVICE_CPU) hl_backend_for(device)->copy_from_host(hl_tensor_data(out), packed, bytes);
  if (packed != hl_tensor_data(out)) free(packed);
  free(staged);
  hl_node *node;
  if (!hl_record(&c, out, to_device_backward, &node)) return hl_op_abort_output(&c, out);
  return hl_op_end(&c, out);
oom:
  free(staged);
  hl_release(out);
  hl_fail("to_device: out of host memory staging %s", hl_desc(x));
  return hl_op_abort(&c);
}

/* ---------------------------------------------------------- contiguous -- */

static bool identity_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  (void)n;
  gin[0] = hl_retain(g);
  return true;
}

hl_tensor *hl_contiguous(hl_tensor *x) {
  if (x && hl_is_contiguous(x)) return hl_retain(x);
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_CONTIGUOUS, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  hl_tensor *out = hl_op_output(&c, x->ndim, x->shape, x->dtype);
  if (!out) return hl_op_abort(&c);
  int64_t size4[HL_MAX_DIMS];
  hl_size4(x->ndim, x->shape, size4);
  hl_kview d = hl_kview_of(out, out->ndim, out->shape), s = hl_kview_of(x, x->ndim, x->shape);
  c.k->copy(&d, &s, size4);
  hl_node *node;
  if (!hl_record(&c, out, identity_backward, &node)) return hl_op_abort_output(&c, out);
  return hl_op_end(&c, out);
}
