/* path_set.h — the files one run reads and writes, checked against each
 * other before anything is written, so that no output overwrites an input
 * or another output (docs/files.md).
 *
 * Each path is registered with the option that names it ("--checkpoint",
 * or "--out" with a note such as "train_summary.csv") and whether the run
 * reads or writes it. Two paths are the same file when, after resolving
 * links, they name the same place: the same device and inode for files
 * that exist (so a hard link or a symlink matches its target), else the
 * same canonical path (realpath of the longest existing folder above it,
 * then the rest as given). Every output is compared with every input and
 * every other output; paths of the same option are not compared with each
 * other (an option's own variants, such as FILE and FILE.tmp, differ by
 * construction).
 *
 *   hl_path_set s;
 *   hl_path_set_init(&s);
 *   hl_path_set_input(&s, "--text", text);
 *   hl_path_set_output(&s, "--checkpoint", NULL, ckpt);
 *   hl_path_set_allow(&s, "--resume", "--checkpoint");   // read whole first
 *   if (!hl_path_set_check(&s, err, sizeof err)) hl_usage_error("%s", err);
 *   hl_path_set_free(&s);
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
  char option[40];   /* "--checkpoint" */
  char note[96];     /* what the path is of the option's files ("" : the path as given) */
  char given[4200];  /* the path as given (for the message) */
  char canonical[4200];
  dev_t dev;
  ino_t ino;
  bool exists, output;
} hl_path_entry;

typedef struct hl_path_set {
  hl_path_entry *entries;
  int n, cap;
  char allowed[4][2][40]; /* option pairs that may name the same file */
  int n_allowed;
  bool failed; /* out of memory */
} hl_path_set;

void hl_path_set_init(hl_path_set *s);
void hl_path_set_free(hl_path_set *s);
/* NULL path: nothing registered. */
void hl_path_set_input(hl_path_set *s, const char *option, const char *path);
/* note: what the file is to the option ("train_summary.csv"), or NULL. */
void hl_path_set_output(hl_path_set *s, const char *option, const char *note, const char *path);
/* An output of `output` may be the input of `input` (a file read whole
 * before it is replaced, as --resume's checkpoint by --checkpoint). */
void hl_path_set_allow(hl_path_set *s, const char *input, const char *output);
/* false with one line in err naming both options and the file when two
 * registered paths are the same file (the first such pair, in the order
 * registered). */
bool hl_path_set_check(const hl_path_set *s, char *err, size_t len);
