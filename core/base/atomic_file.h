/* atomic_file.h — a file written under PATH.tmp and renamed over PATH only
 * once complete and flushed to disk: a reader (or a crash) sees the old
 * file or the whole new one, never a part. Every file halflab writes for
 * itself goes through this: CSV tables, weight files, checkpoints, batch
 * files, a resumed run's rewritten log.
 *
 * The stream writes through write(2) itself (not glibc's internal path), so
 * the errno of the first failed write is kept and reported, not a later
 * generic one, and the fault-injection suite (tests/faults) sees every
 * write. */
#ifndef HL_ATOMIC_FILE_H
#define HL_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  FILE *f;          /* write here (binary) */
  char path[4096];
  char tmp[4104];   /* path + ".tmp" */
  char folder[4096];
  int fd;
  int first_errno;  /* of the first failed write or close; 0: none */
  /* after a failure: the call ("open", "write", "fsync", "close" or
   * "rename"), the file it was on (tmp, path or folder); errno says why */
  const char *call;
  const char *failed_file;
  int unfinished_slot; /* its entry among the files removed at exit, -1: none */
} hl_atomic_file;

/* Removes every PATH.tmp this process opened and has not committed or
 * discarded yet. Runs at exit (registered by the first hl_atomic_open), so
 * a process that stops on a fatal error leaves no .tmp behind; a signal
 * handler that ends the process calls it too. Async-signal-safe. */
void hl_atomic_remove_unfinished(void);

/* Creates PATH.tmp. false (errno set, call "open") when it cannot; PATH is
 * untouched. */
bool hl_atomic_open(hl_atomic_file *a, const char *path);
/* Flushes PATH.tmp to disk, closes it and renames it over PATH, then syncs
 * the folder so that the rename itself survives a crash. false on any error,
 * the stream's earlier write errors included, with errno the error of the
 * call that failed first and call / failed_file naming it: PATH.tmp is
 * removed and PATH untouched, except when only the folder's sync failed
 * (failed_file is the folder): PATH then holds the new file, whole. */
bool hl_atomic_commit(hl_atomic_file *a);
/* Gives up: closes and removes PATH.tmp; PATH is untouched. */
void hl_atomic_discard(hl_atomic_file *a);
/* "CALL of FILE failed: strerror(err)" for a failed open or commit. */
const char *hl_atomic_describe(const hl_atomic_file *a, int err, char *buf, size_t len);

/* fsync of the folder holding path (durability of a rename in it); false
 * with errno on failure. */
bool hl_sync_folder_of(const char *path);
/* write(2) until all of len is written (EINTR retried); false with errno on
 * failure (a short write that makes no progress counts as ENOSPC). */
bool hl_write_all(int fd, const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
