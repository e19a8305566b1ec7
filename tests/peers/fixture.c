/* fixture.c — see fixture.h. */
#include "tests/peers/fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

char *fixture_file(const char *name) {
  const char *dir = getenv("PARITY_FIXTURE");
  if (!dir || !*dir) fail_msg("PARITY_FIXTURE is not set (tests/peers/meson.build sets it)");
  return hl_path(dir, name);
}

void fixture_value(const char *key, char *out, size_t len) {
  char *text = hl_read_file(fixture_file("source.txt"), NULL);
  if (!text) fail_msg("%s: cannot read", fixture_file("source.txt"));
  const size_t k = strlen(key);
  for (const char *line = text; *line; line += strcspn(line, "\n"), line += *line == '\n') {
    if (strncmp(line, key, k) != 0 || strncmp(line + k, ": ", 2) != 0) continue;
    snprintf(out, len, "%.*s", (int)strcspn(line + k + 2, "\n"), line + k + 2);
    free(text);
    return;
  }
  free(text);
  fail_msg("%s has no '%s: ' line", fixture_file("source.txt"), key);
}

void record_free(run_record *r) {
  for (int s = 0; s < RECORD_MAX_STEPS; s++) wfile_free(r->gradients[s]);
  memset(r, 0, sizeof *r);
}

/* A per-step tensor of the record ("loss", "grad_norm", "scale") into out. */
static bool per_step(const wfile *w, const char *name, double *out, int *steps, char *why, size_t len) {
  const wtensor *t = wfile_find(w, name);
  if (!t || t->ndim != 1 || t->numel < 1 || t->numel > RECORD_MAX_STEPS || (*steps && t->numel != *steps)) {
    snprintf(why, len, "no '%s' of one value per step (1 to %d steps)", name, RECORD_MAX_STEPS);
    return false;
  }
  *steps = (int)t->numel;
  for (int s = 0; s < *steps; s++) out[s] = t->values[s];
  return true;
}

bool record_read(const char *path, run_record *r, char *why, size_t len) {
  memset(r, 0, sizeof *r);
  char reason[512];
  wfile *w = wfile_read(path, reason, sizeof reason);
  if (!w) {
    snprintf(why, len, "%s", reason);
    return false;
  }
  bool ok = per_step(w, "loss", r->loss, &r->steps, reason, sizeof reason) &&
            per_step(w, "grad_norm", r->grad_norm, &r->steps, reason, sizeof reason) &&
            per_step(w, "scale", r->scale, &r->steps, reason, sizeof reason);
  int in_steps = 3; /* the per-step tensors; every other one belongs to a step */
  for (int s = 0; ok && s < r->steps; s++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "step%d/", s + 1);
    r->gradients[s] = wfile_subset(w, prefix);
    if (!r->gradients[s] || r->gradients[s]->n == 0) {
      snprintf(reason, sizeof reason, "no gradients of step %d", s + 1);
      ok = false;
    } else {
      in_steps += r->gradients[s]->n;
    }
  }
  if (ok && in_steps != w->n) {
    snprintf(reason, sizeof reason, "%d tensors belong to no step", w->n - in_steps);
    ok = false;
  }
  if (!ok) {
    snprintf(why, len, "%s: %s", path, reason);
    record_free(r);
  }
  wfile_free(w);
  return ok;
}

static double rel(double got, double want) { return fabs(got - want) / fabs(want); }

bool record_within(const char *label, const run_record *got, const run_record *want, const parity_bounds *b) {
  if (got->steps != want->steps) {
    print_message("%s: %d steps against %d\n", label, got->steps, want->steps);
    return false;
  }
  bool ok = true;
  for (int s = 0; s < want->steps; s++) {
    const double loss_bound = s == 0 ? b->first_loss : b->loss;
    const double loss = rel(got->loss[s], want->loss[s]), norm = rel(got->grad_norm[s], want->grad_norm[s]);
    char worst[256];
    const double grads = wfile_worst_diff(got->gradients[s], want->gradients[s], worst, sizeof worst);
    const double l2 = wfile_relative_l2(got->gradients[s], want->gradients[s]);
    const double l2_bound = s == 0 ? b->first_gradients_l2 : 0;
    const bool same_scale = got->scale[s] == want->scale[s];
    const bool step_ok = loss <= loss_bound && (b->grad_norm == 0 || norm <= b->grad_norm) && grads <= b->gradients &&
                         (l2_bound == 0 || l2 <= l2_bound) && same_scale;
    char norm_bound[40] = "not bounded", l2_text[40] = "not bounded";
    if (b->grad_norm > 0) snprintf(norm_bound, sizeof norm_bound, "bound %.3g", b->grad_norm);
    if (l2_bound > 0) snprintf(l2_text, sizeof l2_text, "bound %.3g", l2_bound);
    print_message("%s step %d: loss %.9g / %.9g, relative %.3g (bound %.3g); gradient norm relative %.3g (%s); "
                  "scale %g / %g; %d gradients: worst max|diff| / max|g| %.3g at %s (bound %.3g), all together "
                  "||diff|| / ||g|| %.3g (%s)%s\n",
                  label, s + 1, got->loss[s], want->loss[s], loss, loss_bound, norm, norm_bound, got->scale[s],
                  want->scale[s], got->gradients[s]->n, grads, worst, b->gradients, l2, l2_text,
                  step_ok ? "" : "  <-- OUT OF BOUNDS");
    ok &= step_ok;
  }
  return ok;
}
