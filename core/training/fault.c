/* fault.c — step sets and gradient poisoning (core/training/fault.h). */
#include "core/training/fault.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "core/base/error.h"
#include "formats/half.h"

/* one number of a step list: digits only, >= 1 */
static bool parse_step(const char *begin, const char *end, int64_t *out) {
  if (begin == end) return false;
  int64_t v = 0;
  for (const char *p = begin; p < end; p++) {
    if (!isdigit((unsigned char)*p)) return false;
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (*p - '0');
  }
  if (v < 1) return false;
  *out = v;
  return true;
}

static void insert_range(hl_step_set *s, int64_t lo, int64_t hi) {
  /* merge with every overlapping or adjacent range, keep sorted */
  int i = 0;
  while (i < s->n && s->hi[i] < lo - 1) i++;
  int j = i;
  while (j < s->n && s->lo[j] <= hi + 1) {
    if (s->lo[j] < lo) lo = s->lo[j];
    if (s->hi[j] > hi) hi = s->hi[j];
    j++;
  }
  int removed = j - i;
  if (removed == 0) {
    memmove(&s->lo[i + 1], &s->lo[i], (size_t)(s->n - i) * sizeof s->lo[0]);
    memmove(&s->hi[i + 1], &s->hi[i], (size_t)(s->n - i) * sizeof s->hi[0]);
    s->n++;
  } else if (removed > 1) {
    memmove(&s->lo[i + 1], &s->lo[j], (size_t)(s->n - j) * sizeof s->lo[0]);
    memmove(&s->hi[i + 1], &s->hi[j], (size_t)(s->n - j) * sizeof s->hi[0]);
    s->n -= removed - 1;
  }
  s->lo[i] = lo;
  s->hi[i] = hi;
}

bool hl_step_set_parse(const char *text, hl_step_set *out) {
  if (!out) return hl_fail_bool("step list: output is NULL");
  out->n = 0;
  if (!text) return hl_fail_bool("step list: text is NULL");
  if (!*text || !strcmp(text, "none")) return true;
  hl_step_set s = {0};
  const char *p = text;
  while (true) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    const char *dash = memchr(p, '-', (size_t)(end - p));
    int64_t lo, hi;
    bool ok = dash ? parse_step(p, dash, &lo) && parse_step(dash + 1, end, &hi) && lo <= hi
                   : parse_step(p, end, &lo) && (hi = lo, true);
    if (!ok)
      return hl_fail_bool("step list \"%s\": bad item \"%.*s\" (steps are integers >= 1, ranges lo-hi with lo <= hi, "
                          "separated by commas, e.g. 3,7,10-12)", text, (int)(end - p), p);
    if (s.n == HL_STEP_SET_MAX) return hl_fail_bool("step list \"%s\": more than %d separate ranges", text, HL_STEP_SET_MAX);
    insert_range(&s, lo, hi);
    if (!*end) break;
    p = end + 1;
  }
  *out = s;
  return true;
}

bool hl_step_set_has(const hl_step_set *s, int64_t step) {
  for (int i = 0; s && i < s->n; i++)
    if (step >= s->lo[i] && step <= s->hi[i]) return true;
  return false;
}

int64_t hl_step_set_count(const hl_step_set *s) {
  int64_t c = 0;
  for (int i = 0; s && i < s->n; i++) c += s->hi[i] - s->lo[i] + 1;
  return c;
}

const char *hl_step_set_format(const hl_step_set *s, char *buf, size_t len) {
  if (!len) return buf;
  buf[0] = 0;
  size_t used = 0;
  for (int i = 0; s && i < s->n && used < len; i++) {
    int w = s->lo[i] == s->hi[i] ? snprintf(buf + used, len - used, "%s%lld", i ? "," : "", (long long)s->lo[i])
                                 : snprintf(buf + used, len - used, "%s%lld-%lld", i ? "," : "", (long long)s->lo[i],
                                            (long long)s->hi[i]);
    if (w < 0) break;
    used += (size_t)w;
  }
  if (s && s->n == 0) snprintf(buf, len, "none");
  return buf;
}

bool hl_fault_kind_parse(const char *text, hl_fault_kind *out) {
  if (text && !strcmp(text, "inf")) *out = HL_FAULT_INF;
  else if (text && !strcmp(text, "-inf")) *out = HL_FAULT_NEG_INF;
  else if (text && !strcmp(text, "nan")) *out = HL_FAULT_NAN;
  else return hl_fail_bool("fault kind \"%s\": expected inf, -inf or nan", text ? text : "(null)");
  return true;
}

const char *hl_fault_kind_name(hl_fault_kind k) {
  return k == HL_FAULT_INF ? "inf" : k == HL_FAULT_NEG_INF ? "-inf" : "nan";
}

bool hl_fault_poison(hl_tensor *t, int64_t index, hl_fault_kind kind) {
  const char *what = "fault_poison";
  if (!t) return hl_has_error() ? false : hl_fail_bool("%s: tensor is NULL", what);
  if (!hl_dtype_is_float(t->dtype)) return hl_fail_bool("%s: %s is not a float tensor", what, hl_desc(t));
  const int64_t n = hl_numel(t);
  if (index < 0) index += n;
  if (index < 0 || index >= n)
    return hl_fail_bool("%s: element %lld is outside %s", what, (long long)index, hl_desc(t));
  /* the element's offset through the view's strides */
  int64_t offset = 0, rest = index;
  for (int d = t->ndim - 1; d >= 0; d--) {
    offset += (rest % t->shape[d]) * t->stride[d];
    rest /= t->shape[d];
  }
  const float value = kind == HL_FAULT_NAN ? NAN : kind == HL_FAULT_NEG_INF ? -INFINITY : INFINITY;
  unsigned char bytes[8];
  size_t size = hl_dtype_size(t->dtype);
  switch (t->dtype) {
    case HL_F64: {
      double d = value;
      memcpy(bytes, &d, 8);
      break;
    }
    case HL_F32: memcpy(bytes, &value, 4); break;
    case HL_F16: {
      hl_f16 h = hl_f32_to_f16(value);
      memcpy(bytes, &h, 2);
      break;
    }
    default: {
      hl_bf16 b = hl_f32_to_bf16(value);
      memcpy(bytes, &b, 2);
      break;
    }
  }
  char *dst = (char *)hl_tensor_data(t) + offset * (int64_t)size;
  hl_backend_for(t->device)->copy_from_host(dst, bytes, size);
  hl_tensor_mark_modified(t);
  return true;
}
