/* file_write.c - mq_file_write: every file masq writes (save, savez,
 * save_npz, save_csv, the pictures' SVG) is replaced, never rewritten.
 *
 * The bytes go to a new file beside the target, which is renamed over the
 * target only once all of them are written and flushed to the disk. Until
 * that rename the old file is untouched: a full disk, a file size limit,
 * an I/O error or an interrupt half way leaves it as it was, byte for
 * byte, and the new file is removed. A tensor that maps the old file
 * (load(mmap=true), in this state or another) keeps the old inode and its
 * pages: nothing is ever truncated under a mapping.
 *
 * The rule of file.c holds here too: no mq_error while a descriptor is
 * open. Everything that can raise (the scratch for the names) comes first;
 * from the open on, failures are collected as an errno, the descriptor is
 * closed and the new file unlinked, and only then is the error raised. */
#include "npy.h"

#include "../../core/checked.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Bytes one write() is asked for: a large file goes out in pieces, between
 * which an interrupt is noticed. */
#define WRITE_CHUNK ((size_t)1 << 20)
/* Links followed from the path to the file it names (Linux's MAXSYMLINKS). */
#define MAX_LINKS 40
/* Bytes of the target's name kept in the new file's name. */
#define NAME_KEEP 64

/* Whether the writer's next system call is the one the state's fault
 * injection makes fail (core/state.h, io_fault: the tests of every
 * failure point); errno is then its error. */
static bool fault(mq_state *S) {
  if (S->io_fault.at <= 0 || ++S->io_fault.count != S->io_fault.at) return false;
  errno = S->io_fault.err ? S->io_fault.err : ENOSPC;
  return true;
}

/* [path] up to its last '/' ("." without one), in scratch. */
static char *dir_of(mq_state *S, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) path = ".";
  size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
  char *d = mq_scratch(S, n + 1);
  memcpy(d, path, n);
  d[n] = '\0';
  return d;
}

/* The file a write to [path] replaces: [path], or where its chain of
 * symbolic links ends, so a link stays a link and its target gets the new
 * contents (a dangling link's target is created). Scratch. */
static const char *resolve_links(mq_state *S, const char *path, const char *who) {
  const char *cur = path;
  for (int hops = 0;; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    if (hops == MAX_LINKS)
      mq_error(S, "%s: cannot write '%s': too many levels of symbolic links", who, path);
    char *to = mq_scratch(S, PATH_MAX);
    ssize_t n = readlink(cur, to, PATH_MAX);
    if (n < 0 || n >= PATH_MAX)
      mq_error(S, "%s: cannot write '%s': cannot read the symbolic link '%s'", who, path, cur);
    to[n] = '\0';
    if (to[0] != '/' && strchr(cur, '/')) { /* relative to the link's own directory */
      const char *dir = dir_of(S, cur);
      char *joined = mq_scratch(S, strlen(dir) + (size_t)n + 2);
      snprintf(joined, strlen(dir) + (size_t)n + 2, "%s/%s", dir, to);
      to = joined;
    }
    cur = to;
  }
}

/* A name for the new file in [dir], unlikely to be anyone else's: the
 * target's name, the process, a count kept on the state and the clock
 * (O_EXCL makes sure; a clash only draws again). */
static char *temp_name(mq_state *S, const char *dir, const char *target) {
  const char *slash = strrchr(target, '/');
  const char *base = slash ? slash + 1 : target;
  size_t blen = strlen(base) < NAME_KEEP ? strlen(base) : NAME_KEEP, cap = strlen(dir) + blen + 64;
  char *t = mq_scratch(S, cap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(t, cap, "%s/.%.*s.masq-%lx-%lx-%lx", dir, (int)blen, base, (unsigned long)getpid(),
           S->io_seq++, (unsigned long)ts.tv_nsec);
  return t;
}

/* Writes [n] bytes to [fd]; 0, or the errno of the failure. An interrupt
 * asked for between two pieces stops it (EINTR), to be raised once the
 * file is closed. */
static int write_all(mq_state *S, int fd, const char *p, size_t n) {
  for (size_t done = 0; done < n;) {
    if (done > 0 && mq_interrupt_pending(S)) return EINTR;
    size_t len = n - done < WRITE_CHUNK ? n - done : WRITE_CHUNK;
    if (fault(S)) { /* what a full disk does: part of the piece, then the error */
      int err = errno;
      ssize_t ignored = write(fd, p + done, len / 2);
      (void)ignored;
      return err;
    }
    ssize_t w = write(fd, p + done, len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return EIO; /* a regular file that takes nothing: never loop on it */
    done += (size_t)w;
  }
  return 0;
}

/* The new file at [tmp], opened on [*fd], made to look like the old one
 * ([old], if [had_old]) and given the [n] parts, flushed and closed; then
 * renamed over [target]. 0, or the errno of the step that failed; *fd is
 * -1 once closed. */
static int replace(mq_state *S, int *fd, const char *tmp, const char *target, bool had_old,
                   const struct stat *old, const mq_bytes *parts, int n) {
  if (had_old) {
    /* the old owner (only root may give a file away; anyone else's new
     * file is theirs, as with any editor that saves by renaming), then
     * the old mode exactly, umask or not (after fchown, which may clear
     * the set-id bits) */
    struct stat mine;
    if (fstat(*fd, &mine) == 0 && (mine.st_uid != old->st_uid || mine.st_gid != old->st_gid)) {
      int ignored = fchown(*fd, old->st_uid, old->st_gid);
      (void)ignored;
    }
    if (fault(S) || fchmod(*fd, old->st_mode & 07777) != 0) return errno;
  }
  int err = 0;
  for (int i = 0; i < n && !err; i++) err = write_all(S, *fd, parts[i].p, parts[i].n);
  if (err) return err;
  /* fsync before the rename: some filesystems (NFS, quotas, thin
   * provisioning) report a failed write only here, and that must stop the
   * rename; and after a crash the name must hold the old file or the
   * whole new one, never a new one whose pages were not written yet. (The
   * directory is not synced: after a crash the rename may be undone,
   * which leaves the complete old file.) */
  if (fault(S) || fsync(*fd) != 0) return errno;
  err = fault(S) ? errno : 0;
  if (close(*fd) != 0 && !err) err = errno; /* the descriptor is gone either way */
  *fd = -1;
  if (err) return err;
  if (fault(S) || rename(tmp, target) != 0) return errno;
  return 0;
}

void mq_file_write(mq_state *S, const char *path, const char *who, const void *p, size_t n) {
  mq_bytes all = {p, n};
  mq_file_write_parts(S, path, who, &all, 1);
}

void mq_file_write_parts(mq_state *S, const char *path, const char *who, const mq_bytes *parts,
                         int nparts) {
  size_t n = 0;
  for (int i = 0; i < nparts; i++) n = mq_ck_zadd(S, n, parts[i].n, "a file");
  const char *target = resolve_links(S, path, who);
  struct stat old;
  bool had_old = stat(target, &old) == 0;
  /* Writing into a FIFO would block, into a device would not be a file. */
  if (had_old && !S_ISREG(old.st_mode)) mq_error(S, "%s: '%s' is not a regular file", who, path);
  /* A file its owner made read-only stays so: the rename could replace it
   * (only the directory's permission counts there), but writing in place
   * could not, and that is what the user asked to protect. */
  if (had_old && faccessat(AT_FDCWD, target, W_OK, AT_EACCESS) != 0)
    mq_error(S, "%s: cannot open '%s' for writing: %s", who, path, strerror(errno));
  /* Past the file size limit (ulimit -f) the kernel would send SIGXFSZ,
   * which ends the process unless the host ignores it: refused first. */
  struct rlimit lim;
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && n > lim.rlim_cur)
    mq_error(S,
             "%s: cannot write '%s': its %zu bytes are over the process's file size limit of "
             "%llu bytes (ulimit -f)",
             who, path, n, (unsigned long long)lim.rlim_cur);
  const char *dir = dir_of(S, target);
  char *tmp = NULL;
  int fd = -1, err = 0;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    tmp = temp_name(S, dir, target);
    fd = fault(S) ? -1
                  : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, had_old ? old.st_mode & 0777 : 0666);
    err = fd < 0 ? errno : 0;
    if (err != EEXIST) break;
  }
  if (fd < 0) {
    if (had_old && (err == EACCES || err == EPERM || err == EROFS))
      mq_error(S,
               "%s: cannot replace '%s': its directory '%s' does not let masq create the new file "
               "it writes before renaming it over the old one (%s); the old file is unchanged",
               who, path, dir, strerror(err));
    mq_error(S, "%s: cannot open '%s' for writing: %s", who, path, strerror(err));
  }
  err = replace(S, &fd, tmp, target, had_old, &old, parts, nparts);
  if (!err) return;
  if (fd >= 0) close(fd);
  unlink(tmp);
  if (err == EINTR && mq_interrupt_pending(S)) mq_check_interrupt(S);
  mq_error(S, "%s: cannot write '%s': %s%s", who, path, strerror(err),
           had_old ? "; the old file is unchanged" : "");
}
