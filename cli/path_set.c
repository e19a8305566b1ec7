/* path_set.c — the files of one run checked against each other (path_set.h). */
#include "cli/path_set.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void hl_path_set_init(hl_path_set *s) { memset(s, 0, sizeof *s); }

void hl_path_set_free(hl_path_set *s) {
  free(s->entries);
  memset(s, 0, sizeof *s);
}

/* Appends the components of `rest` to out, leaving out empty ones and ".". */
static void append_components(char *out, size_t len, const char *rest) {
  char copy[4200];
  snprintf(copy, sizeof copy, "%s", rest);
  char *save = NULL;
  for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, ".")) continue;
    const size_t n = strlen(out);
    snprintf(out + n, len - n, "%s%s", n && out[n - 1] == '/' ? "" : "/", c);
  }
}

/* The path with every link resolved as far as it exists: realpath of the
 * longest existing prefix, then the rest as given (a file or folders still
 * to be made). */
static void canonical_of(const char *path, char *out, size_t len) {
  char abs[4200], cwd[PATH_MAX];
  if (path[0] == '/' || !getcwd(cwd, sizeof cwd)) snprintf(abs, sizeof abs, "%s", path);
  else snprintf(abs, sizeof abs, "%s/%s", cwd, path);
  char head[4200], resolved[PATH_MAX];
  snprintf(head, sizeof head, "%s", abs);
  size_t cut = strlen(head);
  for (;;) {
    head[cut] = '\0';
    if (realpath(cut ? head : "/", resolved)) {
      snprintf(out, len, "%s", resolved);
      append_components(out, len, abs + cut);
      return;
    }
    while (cut > 0 && head[cut - 1] == '/') cut--;
    while (cut > 0 && head[cut - 1] != '/') cut--;
    if (cut == 0) break;
  }
  out[0] = '\0';
  append_components(out, len, abs);
}

static void add(hl_path_set *s, const char *option, const char *note, const char *path, bool output) {
  if (!path || s->failed) return;
  if (s->n == s->cap) {
    const int cap = s->cap ? 2 * s->cap : 16;
    hl_path_entry *e = realloc(s->entries, (size_t)cap * sizeof *e);
    if (!e) {
      s->failed = true;
      return;
    }
    s->entries = e;
    s->cap = cap;
  }
  hl_path_entry *e = &s->entries[s->n++];
  memset(e, 0, sizeof *e);
  snprintf(e->option, sizeof e->option, "%s", option);
  snprintf(e->note, sizeof e->note, "%s", note ? note : "");
  snprintf(e->given, sizeof e->given, "%s", path);
  canonical_of(path, e->canonical, sizeof e->canonical);
  struct stat st;
  if (stat(path, &st) == 0) {
    e->exists = true;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
  }
  e->output = output;
}

void hl_path_set_input(hl_path_set *s, const char *option, const char *path) { add(s, option, NULL, path, false); }

void hl_path_set_output(hl_path_set *s, const char *option, const char *note, const char *path) {
  add(s, option, note, path, true);
}

void hl_path_set_allow(hl_path_set *s, const char *input, const char *output) {
  if (s->n_allowed == (int)(sizeof s->allowed / sizeof s->allowed[0])) return;
  snprintf(s->allowed[s->n_allowed][0], sizeof s->allowed[0][0], "%s", input);
  snprintf(s->allowed[s->n_allowed][1], sizeof s->allowed[0][1], "%s", output);
  s->n_allowed++;
}

static bool allowed(const hl_path_set *s, const hl_path_entry *a, const hl_path_entry *b) {
  for (int i = 0; i < s->n_allowed; i++)
    for (int k = 0; k < 2; k++) {
      const hl_path_entry *in = k ? b : a, *out = k ? a : b;
      if (!in->output && out->output && !strcmp(in->option, s->allowed[i][0]) && !strcmp(out->option, s->allowed[i][1]))
        return true;
    }
  return false;
}

static bool same_file(const hl_path_entry *a, const hl_path_entry *b) {
  if (a->exists && b->exists) return a->dev == b->dev && a->ino == b->ino;
  return !strcmp(a->canonical, b->canonical);
}

static void describe(const hl_path_entry *e, char *out, size_t len) {
  if (e->note[0]) snprintf(out, len, "%s's %s (%.4000s)", e->option, e->note, e->given);
  else snprintf(out, len, "%s %.4000s", e->option, e->given);
}

bool hl_path_set_check(const hl_path_set *s, char *err, size_t len) {
  if (s->failed) {
    snprintf(err, len, "out of host memory checking the output paths");
    return false;
  }
  for (int i = 0; i < s->n; i++)
    for (int j = 0; j < i; j++) {
      const hl_path_entry *a = &s->entries[i], *b = &s->entries[j];
      if (!a->output && !b->output) continue; /* two inputs: nothing is overwritten */
      if (!strcmp(a->option, b->option) || allowed(s, a, b) || !same_file(a, b)) continue;
      if (a->note[0] && !b->note[0]) { /* the path the user gave first, then the file it meets */
        const hl_path_entry *t = a;
        a = b, b = t;
      }
      char da[4200], db[4200];
      describe(a, da, sizeof da);
      describe(b, db, sizeof db);
      snprintf(err, len, "%.4200s is the same file as %.4200s: give each its own path (an output may not replace %s)", da,
               db, a->output && b->output ? "another output" : "an input");
      return false;
    }
  return true;
}
