/* file.c - whole-file reads and writes for load and save.
 *
 * The one rule: no mq_error may unwind past an open FILE*. Reading runs
 * under its own error boundary (the scratch allocations can hit the memory
 * limit), closes the file, and only then passes an error on. Writing is
 * file_write.c's. */
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *mq_file_open_regular(const char *path, bool *irregular) {
  *irregular = false;
  /* O_NONBLOCK: opening a FIFO with no writer must not hang before fstat
   * can refuse it; reads of a regular file ignore the flag. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  bool stated = fstat(fd, &st) == 0;
  if (!stated || !S_ISREG(st.st_mode)) {
    int err = stated ? 0 : errno;
    *irregular = stated;
    close(fd);
    errno = err;
    return NULL;
  }
  FILE *fp = fdopen(fd, "rb");
  if (!fp) close(fd);
  return fp;
}

typedef struct read_job {
  FILE *fp;
  const char *path, *who;
  uint8_t *data;
  size_t len;
} read_job;

static void read_all(mq_state *S, void *ud) {
  read_job *j = ud;
  /* One read of the exact size for a regular file (the +1 lets fread see
   * the end); doubling from 64 KiB for pipes and devices that can't seek. */
  size_t cap = (size_t)1 << 16;
  if (fseek(j->fp, 0, SEEK_END) == 0) {
    long end = ftell(j->fp);
    if (end >= 0 && (unsigned long)end < SIZE_MAX / 2) cap = (size_t)end + 1;
    rewind(j->fp);
  }
  clearerr(j->fp);
  uint8_t *buf = mq_scratch(S, cap);
  size_t len = 0;
  for (;;) {
    len += fread(buf + len, 1, cap - len, j->fp);
    if (len < cap) break; /* end of file or error */
    if (cap > SIZE_MAX / 4) mq_error(S, "%s: '%s' is too large", j->who, j->path);
    uint8_t *bigger = mq_scratch(S, cap * 2); /* the old block goes with the pool */
    memcpy(bigger, buf, len);
    buf = bigger;
    cap *= 2;
  }
  if (ferror(j->fp)) mq_error(S, "%s: cannot read '%s': %s", j->who, j->path, strerror(errno));
  buf[len] = '\0';
  j->data = buf;
  j->len = len;
}

uint8_t *mq_file_read(mq_state *S, const char *path, const char *who, size_t *len) {
  bool irregular;
  read_job j = {mq_file_open_regular(path, &irregular), path, who, NULL, 0};
  if (irregular) mq_error(S, "%s: '%s' is not a regular file", who, path);
  if (!j.fp) mq_error(S, "%s: cannot open '%s': %s", who, path, strerror(errno));
  masq_status st = mq_protect(S, read_all, &j);
  fclose(j.fp);
  if (st != MASQ_OK) mq_throw(S, st, "%s", S->err_message.data);
  *len = j.len;
  return j.data;
}

mq_mapping *mq_file_map(mq_state *S, const char *path, const char *who) {
  /* The record first: past the memory limit nothing is mapped yet. */
  mq_mapping *m = mq_calloc(S, sizeof *m);
  bool irregular;
  FILE *fp = mq_file_open_regular(path, &irregular);
  if (irregular || !fp) {
    int err = errno;
    mq_free(S, m, sizeof *m);
    if (irregular) mq_error(S, "%s: '%s' is not a regular file", who, path);
    mq_error(S, "%s: cannot open '%s': %s", who, path, strerror(err));
  }
  struct stat st;
  int err = 0;
  if (fstat(fileno(fp), &st) != 0) err = errno;
  else if (st.st_size <= 0) err = -1;
  else if ((uint64_t)st.st_size > SIZE_MAX) err = EFBIG;
  void *base = MAP_FAILED;
  if (!err) {
    base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fileno(fp), 0);
    if (base == MAP_FAILED) err = errno;
  }
  fclose(fp); /* the mapping outlives the descriptor */
  if (err) {
    mq_free(S, m, sizeof *m);
    if (err < 0) mq_error(S, "%s: '%s' is empty", who, path);
    mq_error(S, "%s: cannot map '%s': %s", who, path, strerror(err));
  }
  m->base = base;
  m->len = (size_t)st.st_size;
  return m;
}
