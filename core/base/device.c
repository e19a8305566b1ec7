/* device.c — the backend registry (from kernels/meson.build's list),
 * discovery and device description. */
#include "core/base/device.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The registry: one entry per line of HL_BACKEND_LIST (kernels/meson.build),
 * the table where this build has the backend, else NULL. */
typedef struct {
  const hl_backend *backend;
  const char *name, *label, *also, *why_absent;
} registered_backend;

#define BUILT_1(table) (table)
#define BUILT_0(table) NULL
#define REGISTER(KIND, name, label, built, also, why_absent) \
  [HL_DEVICE_##KIND] = {BUILT_##built(&hl_backend_##name), #name, label, also, why_absent},
static const registered_backend backends_[HL_DEVICE_KINDS] = {HL_BACKEND_LIST(REGISTER)};
#undef REGISTER

static bool known(hl_device_kind kind) { return (unsigned)kind < HL_DEVICE_KINDS; }

const hl_backend *hl_backend_for(hl_device_kind kind) { return known(kind) ? backends_[kind].backend : NULL; }

const char *hl_device_kind_name(hl_device_kind kind) { return known(kind) ? backends_[kind].name : "unknown"; }

const char *hl_device_kind_label(hl_device_kind kind) { return known(kind) ? backends_[kind].label : "unknown"; }

bool hl_device_available(hl_device_kind kind, char *why, size_t len) {
  const hl_backend *b = hl_backend_for(kind);
  if (!b) {
    if (why && len)
      snprintf(why, len, "this build has no %s backend (%s)", hl_device_kind_label(kind),
               known(kind) ? backends_[kind].why_absent : "no such device");
    return false;
  }
  return b->available(why, len);
}

/* auto: the first accelerator (a kind after the host's) that is usable,
 * else the CPU with the first accelerator's reason in err */
static hl_device_kind resolve_auto(char *err, size_t len) {
  for (int k = 1; k < HL_DEVICE_KINDS; k++) {
    char why[256];
    if (hl_device_available((hl_device_kind)k, why, sizeof why)) {
      if (len) err[0] = '\0';
      return (hl_device_kind)k;
    }
    if (k == 1 && len) snprintf(err, len, "%s", why);
  }
  return HL_DEVICE_CPU;
}

bool hl_device_resolve(const char *request, hl_device_kind *out, bool *unusable, char *err, size_t len) {
  *unusable = false;
  if (len) err[0] = '\0';
  if (!request || !strcmp(request, "auto")) {
    *out = resolve_auto(err, len);
    return true;
  }
  for (int k = 0; k < HL_DEVICE_KINDS; k++) {
    const registered_backend *r = &backends_[k];
    if (strcmp(request, r->name) && !(r->also[0] && !strcmp(request, r->also))) continue;
    char why[256];
    if (k != HL_DEVICE_CPU && !hl_device_available((hl_device_kind)k, why, sizeof why)) {
      *unusable = true;
      snprintf(err, len, "--device %s: %s", r->name, why);
      return false;
    }
    *out = (hl_device_kind)k;
    return true;
  }
  /* "auto, cpu or cuda" */
  char names[256] = "auto";
  for (int k = 0; k < HL_DEVICE_KINDS; k++) {
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%s", k == HL_DEVICE_KINDS - 1 ? " or " : ", ", backends_[k].name);
  }
  snprintf(err, len, "--device: unknown device '%s' (expected %s)", request, names);
  return false;
}

static hl_device_facts facts_[HL_DEVICE_KINDS];
static bool have_facts_[HL_DEVICE_KINDS];

const hl_device_facts *hl_device_facts_get(hl_device_kind kind) {
  const hl_backend *b = hl_backend_for(kind);
  if (!have_facts_[kind]) {
    if (b) b->facts(&facts_[kind]);
    else snprintf(facts_[kind].name, sizeof facts_[kind].name, "unavailable");
    have_facts_[kind] = true;
  } else if (b) {
    b->mem_info(&facts_[kind].free_mem, &facts_[kind].total_mem); /* free memory is read afresh */
  }
  return &facts_[kind];
}

/* Lower-case words of the device name joined by '-', without vendor marks
 * ("(R)", "(TM)"), filler ("CPU", "Processor") and the clock after '@'. */
static void slugify(const char *name, char *out, size_t len) {
  static const char *filler[] = {"r", "tm", "cpu", "processor", NULL};
  size_t k = 0;
  out[0] = '\0';
  for (const char *p = name; *p;) {
    char word[64];
    size_t w = 0;
    while (*p && *p != '@' && !isalnum((unsigned char)*p)) p++;
    if (*p == '@') break; /* "@ 2.10GHz": the clock, whose "2" would stay */
    while (*p && isalnum((unsigned char)*p) && w + 1 < sizeof word) word[w++] = (char)tolower((unsigned char)*p++);
    word[w] = '\0';
    if (!w) break;
    bool skip = strstr(word, "ghz") != NULL;
    for (int i = 0; filler[i] && !skip; i++) skip = !strcmp(word, filler[i]);
    if (skip || k + w + 2 > len) continue;
    if (k) out[k++] = '-';
    memcpy(out + k, word, w + 1);
    k += w;
  }
}

/* A CPU name without a digit ("AMD EPYC", what a VM shows for Zen 4 and
 * Zen 5 alike) gains cpuid's family and model, so that two generations do
 * not write into one results folder. */
void hl_device_slug_of(hl_device_kind kind, const char *name, const char *model_id, char *out, size_t len) {
  char s[80], id[48] = "";
  slugify(name, s, sizeof s);
  if (model_id && model_id[0] && !strpbrk(s, "0123456789")) slugify(model_id, id, sizeof id);
  if (kind == HL_DEVICE_CPU) snprintf(out, len, "cpu-%s%s%s", s[0] ? s : "unknown", id[0] ? "-" : "", id);
  else snprintf(out, len, "%s", s[0] ? s : "gpu");
}

const char *hl_device_slug(hl_device_kind kind) {
  static char slug[HL_DEVICE_KINDS][128];
  if (!slug[kind][0]) {
    const hl_device_facts *f = hl_device_facts_get(kind);
    hl_device_slug_of(kind, f->name, f->model_id, slug[kind], sizeof slug[kind]);
  }
  return slug[kind];
}

const char *hl_device_describe(hl_device_kind kind) {
  static char line[HL_DEVICE_KINDS][384];
  if (!line[kind][0]) {
    const hl_device_facts *f = hl_device_facts_get(kind);
    if (kind == HL_DEVICE_CPU)
      snprintf(line[kind], sizeof line[kind], "cpu: %s%s%s%s, %d logical cores, %d OpenMP threads, %.1f GiB",
               f->name, f->model_id[0] ? " (" : "", f->model_id, f->model_id[0] ? ")" : "", f->sm_count,
               f->threads, (double)f->total_mem / (1u << 30));
    else
      snprintf(line[kind], sizeof line[kind], "%s: %s, sm_%d%d, %d SMs, %.1f GiB", hl_device_kind_name(kind), f->name,
               f->cc_major, f->cc_minor, f->sm_count, (double)f->total_mem / (1u << 30));
  }
  return line[kind];
}
