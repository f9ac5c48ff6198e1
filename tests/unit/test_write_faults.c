/* test_write_faults.c - every writer fails safely at every point.
 *
 * Every builtin that writes a file (save to .npy and .npz, savez,
 * save_npz, save_csv, and show_mask, hist, plot and heatmap with file=)
 * goes through mq_file_write (runtime/io/file_write.c), whose system calls
 * (creating the new file, setting its mode, each piece written, fsync,
 * close, rename) the state's fault injection (core/state.h, io_fault)
 * can fail one at a time. For each writer, over an old file and over no
 * file, the test counts the calls of a clean run, then fails each one in
 * turn (a failed write writes half its piece first, as a full disk does)
 * and checks:
 *   - the builtin fails with a runtime error located in the script, that
 *     names the file;
 *   - the old file is there byte for byte (or, with none, no file is);
 *   - no temporary file is left in the directory;
 *   - the state still works, and a clean run then writes the file.
 * The .npy case writes 2.4 MB (float32), so its bytes go out in three pieces of
 * 1 MiB and the failures land before, between and after them. Last, an
 * interrupt between two pieces stops a write the same way. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/state.h"
#include "../../runtime/io/npy.h"

static int passed, failed;

#define CHECK(c, ...)                                                          \
  do {                                                                         \
    if (c) passed++;                                                           \
    else {                                                                     \
      failed++;                                                                \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);                      \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

typedef struct writer {
  const char *file;   /* the target, in the test's directory */
  const char *script; /* %s: the target's path */
} writer;

static const writer writers[] = {
    {"big.npy", "save(\"%s\", arange(600000.0))"},
    {"t.npz", "save(\"%s\", masked(arange(10.0), arange(10) > 3), compress=true)"},
    {"u.npz", "savez(\"%s\", [[\"a\", ones(3)], [\"b\", arange(4)]])"},
    {"s.npz", "save_npz(\"%s\", to_sparse_csr(eye(4)))"},
    {"t.csv", "save_csv(\"%s\", reshape(arange(12.0), [3, 4]), [\"a\", \"b\", \"c\", \"d\"])"},
    {"m.svg", "show_mask(arange(20) > 5, file=\"%s\")"},
    {"h.svg", "hist(arange(100.0), file=\"%s\")"},
    {"p.svg", "plot(arange(10.0), file=\"%s\")"},
    {"hm.svg", "heatmap(reshape(arange(12.0), [3, 4]), file=\"%s\")"},
};

static const char old_bytes[] = "the old file: it must survive every failed write\n";
static char dir[64];

/* The directory's entries other than . and .., and whether [only] (a
 * name, or NULL) is the one there is. */
static int entries(const char *only, bool *is_only) {
  DIR *d = opendir(dir);
  int n = 0;
  *is_only = true;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    n++;
    if (!only || strcmp(e->d_name, only) != 0) *is_only = false;
  }
  closedir(d);
  return n;
}

/* Whether the file at [path] holds exactly [len] bytes [want]. */
static bool holds(const char *path, const char *want, size_t len) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char buf[sizeof old_bytes + 1];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return n == len && memcmp(buf, want, len) == 0;
}

static void put_old(const char *path) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(old_bytes, 1, sizeof old_bytes - 1, f);
    fclose(f);
  }
}

/* [tmpl] with its "%s" replaced by [path] (the templates are not formats:
 * -Wformat-nonliteral). */
static void fill(char *out, size_t size, const char *tmpl, const char *path) {
  const char *at = strstr(tmpl, "%s");
  snprintf(out, size, "%.*s%s%s", (int)(at - tmpl), tmpl, path, at + 2);
}

static masq_status run(mq_state *S, const char *script) {
  return masq_eval(S, script, strlen(script), "<faults>", 0);
}

/* One writer, over an old file ([old]) or none, failing at every call. */
static void each_failure(mq_state *S, const writer *w, bool old, int err) {
  char path[128], script[512];
  snprintf(path, sizeof path, "%s/%s", dir, w->file);
  fill(script, sizeof script, w->script, path);
  unlink(path);
  if (old) put_old(path);
  S->io_fault.at = LONG_MAX; /* counts, never fails */
  S->io_fault.count = 0;
  masq_status st = run(S, script);
  long calls = S->io_fault.count;
  CHECK(st == MASQ_OK && calls >= 4, "%s: a clean run: status %d, %ld calls: %s", w->file, (int)st,
        calls, masq_last_error(S)->message);
  for (long k = 1; k <= calls; k++) {
    unlink(path);
    if (old) put_old(path);
    S->io_fault.at = k;
    S->io_fault.count = 0;
    S->io_fault.err = err;
    st = run(S, script);
    const masq_error *e = masq_last_error(S);
    CHECK(st == MASQ_ERR_RUNTIME && e->line == 1 && e->message && strstr(e->message, path) &&
              strstr(e->message, strerror(err)),
          "%s, call %ld of %ld: status %d: %s", w->file, k, calls, (int)st, e->message);
    bool only;
    int n = entries(old ? w->file : NULL, &only);
    CHECK(n == (old ? 1 : 0) && only, "%s, call %ld: %d entries left in the directory", w->file,
          k, n);
    CHECK(old ? holds(path, old_bytes, sizeof old_bytes - 1) : access(path, F_OK) != 0,
          "%s, call %ld: the old file changed", w->file, k);
    CHECK(run(S, "y = sum(ones(3)) + 1") == MASQ_OK, "%s, call %ld: the state is broken",
          w->file, k);
  }
  S->io_fault.at = 0;
  S->io_fault.err = 0;
  CHECK(run(S, script) == MASQ_OK, "%s: then a clean run: %s", w->file, masq_last_error(S)->message);
  bool only;
  CHECK(entries(w->file, &only) == 1 && only && !holds(path, old_bytes, sizeof old_bytes - 1),
        "%s: the clean run did not replace the file", w->file);
  unlink(path);
}

/* Ctrl-C during a long write (an interrupt asked for before it starts is
 * seen after the first piece): MASQ_ERR_INTERRUPTED, the old file intact,
 * no temporary. */
typedef struct write_job {
  const char *path;
  const char *data;
  size_t n;
} write_job;

static void write_it(mq_state *S, void *ud) {
  const write_job *j = ud;
  mq_file_write(S, j->path, "save", j->data, j->n);
}

static void interrupted_write(mq_state *S) {
  char path[128];
  snprintf(path, sizeof path, "%s/int.npy", dir);
  put_old(path);
  size_t n = (size_t)3 << 20;
  char *data = calloc(1, n);
  write_job j = {path, data, n};
  S->interrupted = 1;
  masq_status st = mq_protect(S, write_it, &j);
  CHECK(st == MASQ_ERR_INTERRUPTED, "an interrupted write: status %d", (int)st);
  bool only;
  CHECK(entries("int.npy", &only) == 1 && only && holds(path, old_bytes, sizeof old_bytes - 1),
        "an interrupted write changed the directory");
  CHECK(mq_protect(S, write_it, &j) == MASQ_OK, "then a write");
  free(data);
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/masq_faults_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  mq_state *S = masq_open(&cfg);
  if (!S) return 1;
  for (size_t i = 0; i < sizeof writers / sizeof *writers; i++) {
    each_failure(S, &writers[i], true, ENOSPC);
    each_failure(S, &writers[i], false, EIO);
  }
  each_failure(S, &writers[0], true, EFBIG);
  each_failure(S, &writers[0], true, EDQUOT);
  interrupted_write(S);
  masq_close(S);
  CHECK(rmdir(dir) == 0, "the directory is not empty");
  printf("test_write_faults: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
