/* output_guard.h — what the programs check about their paths before any
 * work, and the advisory locks that keep two runs out of the same files.
 *
 * Probes. A path is proven writable by creating and removing a probe file
 * (DIR/.halflab-probe-PID-N) in the folder that would hold it: access()
 * asks the permission bits, which root passes even where nothing can be
 * created (/proc, a read-only mount). Nothing else is made or changed.
 *
 * Locks. An output name NAME in folder DIR is locked through DIR/.NAME.lock:
 * an fcntl(F_SETLK) write lock on the whole file, which holds the holder's
 * PID as text. The kernel drops an fcntl lock when its process ends, however
 * it ends, so a lock file that kill -9 leaves behind holds nothing and never
 * blocks a later run. A lock is released (and its file removed) by
 * hl_out_lock_release, at exit, and on SIGINT, SIGTERM, SIGHUP and SIGPIPE
 * where the program has no handler of its own (the process then ends by
 * that signal, as it would have; an ignored signal, nohup's SIGHUP, stays
 * ignored). Taking the file's inode after the lock is granted
 * and comparing it with the path's makes removal race-free: a process that
 * locked a file its holder just removed sees that and starts again.
 *
 * fcntl locks belong to the process: within one process a second take of
 * the same name is refused here, since the kernel would grant it; and the
 * holder must never open and close its lock file otherwise, since closing
 * any descriptor of the file drops the process's lock.
 *
 * Every function fills err (one line, no program name, no option name: the
 * caller says which option) when it fails. */
#ifndef HL_OUTPUT_GUARD_H
#define HL_OUTPUT_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Proves that files can be made in DIR. When DIR does not exist yet, its
 * nearest existing ancestor must be a folder that files can be made in;
 * then with `create` DIR is made (with its missing parents, which are
 * removed again if a later one fails) and probed itself, and without it
 * nothing is made: the caller creates DIR once every other check passed. */
bool hl_out_probe_dir(const char *dir, bool create, char *err, size_t len);

/* Proves that PATH can be written as halflab writes files (PATH.tmp, then
 * renamed over PATH) without creating or truncating it: its folder must
 * exist and pass the probe, and PATH and PATH.tmp must each be absent or a
 * regular file. */
bool hl_out_probe_file(const char *path, char *err, size_t len);

typedef struct hl_out_lock hl_out_lock;

/* Takes the lock of DIR/NAME without waiting. NULL when another process
 * holds it ("DIR/NAME is being written by PID n"), errno EWOULDBLOCK; or
 * when the lock file cannot be made (errno of the failing call). */
hl_out_lock *hl_out_lock_take(const char *dir, const char *name, char *err, size_t len);

/* The same, waiting for the holder to release it: for a short update of a
 * file that several runs share (train_summary.csv). A wait that has to
 * wait says so on stderr, once ("PROG: waiting for DIR/NAME, held by PID n
 * (at most 60 s)"), and is bounded: NULL after hl_out_lock_wait_seconds()
 * with errno ETIMEDOUT ("waited 60 s for DIR/NAME, held by PID n, and gave
 * up"), or at once with errno EINTR once hl_out_lock_wait_stop was called. */
hl_out_lock *hl_out_lock_wait(const char *dir, const char *name, char *err, size_t len);

/* How long hl_out_lock_wait waits: HL_OUT_LOCK_WAIT_SECONDS, or
 * $HALFLAB_LOCK_WAIT_SECONDS (empty: not set), read as strictly as an
 * option (cli.h): above 0, at most 1e6. false with why when it is set to
 * anything else; hl_cli_init refuses that (exit 2) before any file is made,
 * so a wait never meets it. */
#define HL_OUT_LOCK_WAIT_SECONDS 60.0
bool hl_out_lock_wait_seconds(double *seconds, char *why, size_t len);

/* Ends the wait under way and every later one (EINTR): for a program's own
 * handler of SIGINT / SIGTERM / SIGHUP / SIGPIPE, which then finishes its
 * files as a stopped run. Async-signal-safe. */
void hl_out_lock_wait_stop(int sig);

/* Installs that clean-up on the ending signals now rather than at the
 * first lock, for the files a program writes before it takes one (the
 * half-written PATH.tmp of core/base/atomic_file.h goes too): hl_cli_init
 * calls it. */
void hl_out_guard_install(void);

/* Removes the lock file and releases the lock (NULL: nothing). */
void hl_out_lock_release(hl_out_lock *l);
/* The lock file of NAME in DIR (DIR/.NAME.lock) in buf; NULL when too long:
 * for the checks that no output of a run is one of its lock files. */
const char *hl_out_lock_path(const char *dir, const char *name, char *buf, size_t len);

/* Whether PATH is a regular file (symbolic links followed), checked before
 * it is opened: a FIFO would block the open, a device or a folder is not
 * data. false with "cannot read 'PATH': ..." or "'PATH' is a FIFO, not a
 * regular file" (device, folder, socket). */
bool hl_input_regular_file(const char *path, char *err, size_t len);

#ifdef __cplusplus
}
#endif

#endif
