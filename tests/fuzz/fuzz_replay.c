/* fuzz_replay.c — a fuzz target without libFuzzer: runs it once on each
 * file of the folders (or files) given, in name order. The unit suite
 * replays the inputs kept in tests/fuzz/corpus/TARGET/ (each once made a
 * reader crash) in the ordinary builds, the sanitized one included. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f || fstat(fileno(f), &st) != 0) {
    fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
    return 1;
  }
  uint8_t *data = malloc((size_t)st.st_size + 1);
  if (!data || fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
    fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
    return 1;
  }
  fclose(f);
  printf("fuzz_replay: %s (%lld bytes)\n", path, (long long)st.st_size);
  fflush(stdout);
  LLVMFuzzerTestOneInput(data, (size_t)st.st_size);
  free(data);
  return 0;
}

int main(int argc, char **argv) {
  int replayed = 0;
  for (int i = 1; i < argc; i++) {
    struct dirent **names;
    const int n = scandir(argv[i], &names, NULL, alphasort);
    if (n < 0) { /* a file */
      if (replay_file(argv[i])) return 1;
      replayed++;
      continue;
    }
    for (int k = 0; k < n; k++) {
      char path[4200];
      struct stat st;
      snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
      if (names[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        if (replay_file(path)) return 1;
        replayed++;
      }
      free(names[k]);
    }
    free(names);
  }
  printf("fuzz_replay: %d inputs replayed, none crashed\n", replayed);
  return replayed > 0 ? 0 : 1;
}
