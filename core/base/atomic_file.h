/* atomic_file.h — a file written under PATH.tmp and renamed over PATH only
 * once complete and flushed to disk: a reader (or a crash) sees the old
 * file or the whole new one, never a part. Every file halflab writes for
 * itself goes through this: CSV tables, weight files, checkpoints, batch
 * files, a resumed run's rewritten log. */
#ifndef HL_ATOMIC_FILE_H
#define HL_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  FILE *f;          /* write here (binary) */
  char path[4096];
  char tmp[4104];   /* path + ".tmp" */
  const char *call; /* after a failure: "open", "write", "fsync", "close" or "rename"; errno says why */
} hl_atomic_file;

/* Creates PATH.tmp. false (errno set, call "open") when it cannot; PATH is
 * untouched. */
bool hl_atomic_open(hl_atomic_file *a, const char *path);
/* Flushes PATH.tmp to disk, closes it and renames it over PATH (then syncs
 * the folder, so the rename itself survives a crash). false on any error,
 * earlier write errors of the stream included (errno set, call named,
 * PATH.tmp removed, PATH untouched). */
bool hl_atomic_commit(hl_atomic_file *a);
/* Gives up: closes and removes PATH.tmp; PATH is untouched. */
void hl_atomic_discard(hl_atomic_file *a);

#ifdef __cplusplus
}
#endif

#endif
