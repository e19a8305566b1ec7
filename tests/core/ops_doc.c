/* ops_doc.c — docs/ops.md from the op registry: `ops_doc --write FILE`
 * (the ops-doc build target) writes it, `ops_doc --check FILE` (the unit
 * test ops-doc) fails when the file differs from what the registry says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/registry.h"

static char *generate(size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  hl_ops_write_markdown(f);
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "--write") && strcmp(argv[1], "--check"))) {
    fprintf(stderr, "usage: %s --write|--check docs/ops.md\n", argv[0]);
    return 2;
  }
  size_t len = 0;
  char *text = generate(&len);
  if (!text) return perror("open_memstream"), 1;
  if (!strcmp(argv[1], "--write")) {
    FILE *f = fopen(argv[2], "w");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) return perror(argv[2]), 1;
    printf("wrote %s (%zu bytes)\n", argv[2], len);
    free(text);
    return 0;
  }
  FILE *f = fopen(argv[2], "r");
  char *have = malloc(len + 2);
  size_t got = f && have ? fread(have, 1, len + 1, f) : 0;
  if (f) fclose(f);
  int same = have && got == len && memcmp(have, text, len) == 0;
  if (!same)
    fprintf(stderr, "%s is out of date with core/engine/registry.c: regenerate it with `ninja -C <build> ops-doc`\n", argv[2]);
  free(have);
  free(text);
  return same ? 0 : 1;
}
