/* dispatch.c — the common prologue and epilogue of every op, and its
 * --profile span. */
#include "core/engine/dispatch.h"

#include <stdio.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/base/device.h"
#include "core/engine/ops.h"

static _Thread_local bool in_backward_;
static _Thread_local const char *note_;

void hl_dispatch_set_backward(bool on) { in_backward_ = on; }
void hl_dispatch_set_note(const char *note) { note_ = note; }

static void release_casts(hl_op_call *c) {
  for (int i = 0; i < c->n; i++)
    if (c->owned[i]) {
      hl_release(c->in[i]);
      c->owned[i] = false;
    }
}

/* The op's bytes for the profile: its inputs as it computed on them and
 * its output; an output sharing an input's storage moved nothing. */
static uint64_t op_bytes(const hl_op_call *c, const hl_tensor *out) {
  uint64_t bytes = 0;
  for (int i = 0; i < c->n; i++) {
    if (!c->in[i]) continue;
    if (out && out->storage == c->in[i]->storage) return 0;
    bytes += hl_tensor_nbytes(c->in[i]);
  }
  return out ? bytes + hl_tensor_nbytes(out) : bytes;
}

/* A failed op still took its time: it is counted, without bytes. */
static void end_span(hl_op_call *c, uint64_t bytes) {
  if (!c->profiled) return;
  c->profiled = false;
  hl_op_span_end(&c->span, c->op->name, bytes);
}

hl_tensor *hl_op_abort(hl_op_call *c) {
  release_casts(c);
  end_span(c, 0);
  return NULL;
}

hl_tensor *hl_op_abort_output(hl_op_call *c, hl_tensor *out) {
  hl_release(out);
  return hl_op_abort(c);
}

/* Replace input i by its cast to `to` (a differentiable `to` op). */
static bool cast_input(hl_op_call *c, int i, hl_dtype to, bool by_autocast) {
  hl_tensor *r = by_autocast ? hl_autocast_cast(c->in[i], to) : hl_to_dtype(c->in[i], to);
  if (!r) return false;
  if (c->owned[i]) hl_release(c->in[i]);
  c->in[i] = r;
  c->owned[i] = true;
  return true;
}

static bool op_begin(hl_op_call *c, hl_op_id id, hl_tensor *const *inputs, const uint8_t *roles, int n);

/* The profile's span starts before the checks and autocast's casts: the
 * casts are ops of their own, nested in this one. */
bool hl_op_begin(hl_op_call *c, hl_op_id id, hl_tensor *const *inputs, const uint8_t *roles, int n) {
  hl_op_span span = {0};
  const bool profiled = hl_op_span_begin(&span);
  c->profiled = false; /* op_begin's own refusals (hl_op_abort) must not end the span */
  const bool ok = op_begin(c, id, inputs, roles, n);
  c->profiled = profiled;
  c->span = span;
  if (!ok) end_span(c, 0); /* a refusal inside op_begin has released its casts already */
  return ok;
}

static bool op_begin(hl_op_call *c, hl_op_id id, hl_tensor *const *inputs, const uint8_t *roles, int n) {
  memset(c, 0, offsetof(hl_op_call, in));
  c->op = hl_op_get(id);
  c->n = n;
  const char *name = c->op->name;
  if (n > HL_NODE_MAX_INPUTS) return hl_fail_bool("%s: more than %d inputs", name, HL_NODE_MAX_INPUTS);
  int first = -1;
  for (int i = 0; i < n; i++) {
    c->in[i] = inputs[i];
    c->owned[i] = false;
    if (!inputs[i]) {
      if (roles[i] & HL_ARG_OPTIONAL) continue;
      /* keep the message of the failure that produced the NULL */
      if (!hl_has_error()) hl_fail("%s: input %d is NULL", name, i);
      return false;
    }
    c->given[i] = inputs[i]->dtype;
    if (first < 0) first = i;
    if (inputs[i]->device != inputs[first]->device)
      return hl_fail_bool("%s: inputs on different devices: %s on %s and %s on %s (move one with hl_to_device)", name,
                          hl_desc(inputs[first]), hl_device_kind_name(inputs[first]->device), hl_desc(inputs[i]),
                          hl_device_kind_name(inputs[i]->device));
    if ((roles[i] & HL_ARG_INDEX) && inputs[i]->dtype != HL_I32)
      return hl_fail_bool("%s: input %d must be i32 indices, not %s", name, i, hl_desc(inputs[i]));
  }
  if (first < 0) return hl_fail_bool("%s: no inputs", name);
  c->device = inputs[first]->device;
  c->backend = hl_backend_for(c->device);

  /* autocast: the innermost region for the inputs' device decides */
  c->applied = HL_POLICY_NONE;
  if (c->op->policy != HL_POLICY_NONE && hl_autocast_enabled(c->device)) {
    hl_dtype target = hl_autocast_dtype(c->device);
    if (c->op->policy == HL_POLICY_FP32) target = HL_F32;
    if (c->op->policy == HL_POLICY_PROMOTE) {
      bool any = false;
      for (int i = 0; i < n; i++)
        if (c->in[i] && (roles[i] & HL_ARG_DATA) && hl_dtype_is_float(c->in[i]->dtype)) {
          target = any ? hl_promote(target, c->in[i]->dtype) : c->in[i]->dtype;
          any = true;
        }
    }
    c->applied = c->op->policy;
    c->autocast_dtype = target;
    for (int i = 0; i < n; i++) {
      hl_tensor *t = c->in[i];
      if (!t || !(roles[i] & HL_ARG_DATA) || !hl_dtype_is_float(t->dtype) || t->dtype == HL_F64) continue;
      if (t->dtype != target && !cast_input(c, i, target, true)) return hl_op_abort(c), false;
    }
  }

  /* the DATA inputs must now agree, or be promoted where the op promotes */
  int ref = -1;
  for (int i = 0; i < n; i++) {
    if (!c->in[i] || !(roles[i] & HL_ARG_DATA)) continue;
    if (ref < 0) {
      ref = i;
      c->dtype = c->in[i]->dtype;
      continue;
    }
    hl_dtype t = c->in[i]->dtype;
    if (t == c->dtype) continue;
    if (c->op->promotes && hl_dtype_is_float(t) && hl_dtype_is_float(c->dtype)) {
      c->dtype = hl_promote(c->dtype, t);
      continue;
    }
    hl_fail("%s: dtype mismatch: %s and %s (cast one of them, or run inside an autocast region)", name,
            hl_desc(c->in[ref]), hl_desc(c->in[i]));
    return hl_op_abort(c), false;
  }
  if (ref < 0) c->dtype = HL_DTYPE_NONE; /* no DATA input (one_hot): the op checks its own output dtype */
  if (c->op->promotes)
    for (int i = 0; i < n; i++)
      if (c->in[i] && (roles[i] & HL_ARG_DATA) && c->in[i]->dtype != c->dtype && !cast_input(c, i, c->dtype, false))
        return hl_op_abort(c), false;

  char why[256];
  if (!hl_op_supported(c->op, c->device, c->dtype, why, sizeof why)) {
    hl_fail("%s", why);
    return hl_op_abort(c), false;
  }
  c->k = c->op->no_kernels ? NULL : c->backend->tensor;
  return true;
}

hl_tensor *hl_op_end(hl_op_call *c, hl_tensor *out) {
  if (out && hl_op_tracing()) {
    char ins[256];
    size_t k = 0;
    ins[0] = '\0';
    for (int i = 0; i < c->n && k < sizeof ins - 40; i++) {
      if (!c->in[i]) continue;
      /* the shape of the input as given, with the dtype it came in */
      const char *d = hl_desc(c->in[i]);
      const char *bracket = strchr(d, '[');
      k += (size_t)snprintf(ins + k, sizeof ins - k, "%s%s%s", k ? " " : "", hl_dtype_name(c->given[i]),
                            bracket ? bracket : "");
    }
    char note[96] = "";
    if (c->applied != HL_POLICY_NONE)
      snprintf(note, sizeof note, "  autocast %s %s: %s", hl_device_kind_name(c->device),
               hl_dtype_name(hl_autocast_dtype(c->device)), hl_policy_name(c->applied));
    else if (note_)
      snprintf(note, sizeof note, "  (%s)", note_);
    hl_op_trace_line("%-12s in %s -> %s%s%s", c->op->name, ins, hl_desc(out), note, in_backward_ ? "  (backward)" : "");
  }
  const uint64_t bytes = c->profiled ? op_bytes(c, out) : 0;
  release_casts(c);
  end_span(c, bytes);
  return out;
}
