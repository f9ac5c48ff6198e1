/* histfile.c - see histfile.h.
 *
 * Not readline's history_truncate_file: before readline 8.0 it rewrites
 * the file in place (a full disk half way loses the history), and 8.x,
 * which writes a new file and renames it, takes a short write for success
 * and renames the cut file over the whole one. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* O_CLOEXEC, mkstemp */
#endif

#include "histfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Waits for the write lock on the whole of [fd]; false if it cannot be had. */
static bool lock(int fd) {
  struct flock l;
  memset(&l, 0, sizeof l);
  l.l_type = F_WRLCK;
  l.l_whence = SEEK_SET;
  int r;
  while ((r = fcntl(fd, F_SETLKW, &l)) != 0 && errno == EINTR) continue;
  return r == 0;
}

/* Whether [fd] is still the file [path] names (a trim in another session
 * may have renamed a new file over it while this one waited for the lock). */
static bool still_named(int fd, const char *path) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Writes all [len] bytes of [p]; false on any failure. */
static bool write_all(int fd, const char *p, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    len -= (size_t)w;
  }
  return true;
}

void hist_append(const char *path, const char *text, size_t len) {
  for (int tries = 0; tries < 3; tries++) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;
    if (!lock(fd)) {
      close(fd);
      return;
    }
    if (!still_named(fd, path)) { /* replaced under us: append to the new file */
      close(fd);
      continue;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    if (!write_all(fd, text, len) && end >= 0) {
      int ignored = ftruncate(fd, end); /* no sessions append while we hold the lock */
      (void)ignored;
    }
    close(fd); /* and the lock with it */
    return;
  }
}

/* The whole of [fd] (a regular file) in a malloc'd buffer, its length in
 * *len; NULL on failure. */
static char *read_whole(int fd, size_t *len) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) return NULL;
  size_t cap = (size_t)st.st_size, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) return NULL;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  *len = n;
  return buf;
}

/* Writes [len] bytes of [p] to a new private file beside [path] and
 * renames it over [path] once they are on the disk; on any failure the new
 * file is removed and [path] is untouched. */
static void replace_with(const char *path, const char *p, size_t len) {
  size_t n = strlen(path);
  char *tmp = malloc(n + sizeof ".masq-XXXXXX");
  if (!tmp) return;
  memcpy(tmp, path, n);
  memcpy(tmp + n, ".masq-XXXXXX", sizeof ".masq-XXXXXX");
  int fd = mkstemp(tmp); /* 0600, as the history file */
  if (fd >= 0) {
    /* fsync first: after a crash the name must hold the old history or
     * the whole new one */
    bool ok = write_all(fd, p, len) && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
  }
  free(tmp);
}

void hist_trim(const char *path, int max) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  size_t len = 0;
  char *buf = lock(fd) && still_named(fd, path) ? read_whole(fd, &len) : NULL;
  if (buf) {
    /* the start of the last [max] lines (the last may lack its newline) */
    size_t start = len;
    int lines = 0;
    if (start > 0 && buf[start - 1] == '\n') start--;
    while (start > 0 && lines < max) {
      if (buf[start - 1] == '\n' && ++lines == max) break;
      start--;
    }
    if (lines == max) replace_with(path, buf + start, len - start);
    free(buf);
  }
  close(fd); /* the lock goes with it, after the rename */
}
