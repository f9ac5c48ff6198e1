/* test_files.c - load, save, import and masq_eval_file refuse what is not a
 * regular file (a FIFO would block, /dev/zero never ends, a directory is
 * not data) and paths with a NUL byte, with a clear error and a state that
 * still works; and .npy headers that are wrong each way, each with its
 * own message. */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char dir[64], fifo[96], subdir[96], script[512];

/* Runs [before] PATH [after]. */
static masq_status eval_path(masq_state *M, const char *before, const char *path,
                             const char *after) {
  snprintf(script, sizeof script, "%s%s%s", before, path, after);
  return eval(M, script);
}

static void test_not_regular(masq_state *M) {
  CHECK_ERR(M, eval_path(M, "load(\"", "/dev/zero", "\")"), MASQ_ERR_RUNTIME,
            "load: '/dev/zero' is not a regular file");
  CHECK_ERR(M, eval_path(M, "load(\"", fifo, "\")"), MASQ_ERR_RUNTIME, "is not a regular file");
  CHECK_ERR(M, eval_path(M, "load(\"", subdir, "\")"), MASQ_ERR_RUNTIME, "is not a regular file");
  CHECK_ERR(M, eval_path(M, "save(\"", subdir, "\", ones(2))"), MASQ_ERR_RUNTIME,
            "save: '");
  CHECK(strstr(masq_last_error(M)->message, "is not a regular file") != NULL);
  CHECK_ERR(M, eval_path(M, "save(\"", fifo, "\", ones(2))"), MASQ_ERR_RUNTIME, "is not a regular file");
  CHECK_ERR(M, eval_path(M, "import \"", fifo, "\""), MASQ_ERR_RUNTIME, "not a regular file");
  CHECK_ERR(M, eval_path(M, "import \"", subdir, "\""), MASQ_ERR_RUNTIME, "not a regular file");
  CHECK_ERR(M, masq_eval_file(M, subdir), MASQ_ERR_USAGE, "not a regular file");
  CHECK_ERR(M, masq_eval_file(M, fifo), MASQ_ERR_USAGE, "not a regular file");
}

static void test_nul_in_path(masq_state *M) {
  static const char src[] = "save(\"x.npy\\0.txt\", ones(2))";
  CHECK_ERR(M, masq_eval(M, src, sizeof src - 1, "<test>", 0), MASQ_ERR_RUNTIME,
            "save: path contains a NUL byte");
  CHECK_ERR(M, eval(M, "load(\"/dev/zero\\0.npy\")"), MASQ_ERR_RUNTIME,
            "load: path contains a NUL byte");
  CHECK(access("x.npy", F_OK) != 0);
}

/* Writes [n] bytes at [bytes] to [name] in the test's directory; the path
 * goes to [path]. */
static void write_file(char *path, size_t size, const char *name, const void *bytes, size_t n) {
  snprintf(path, size, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(bytes, 1, n, f) == n);
  if (f) fclose(f);
}

/* Writes a version 1.0 .npy of [dict] with the data at [align] mod 64
 * (numpy's 0 unless [align] says otherwise) and [ndata] bytes from [data]. */
static void write_npy(char *path, size_t size, const char *name, const char *dict, size_t align,
                      const void *data, size_t ndata) {
  size_t dl = strlen(dict), hl = (10 + dl + 1 + 63) / 64 * 64 - 10 + align;
  unsigned char *file = malloc(10 + hl + ndata);
  CHECK(file != NULL);
  if (!file) return;
  memcpy(file, "\x93NUMPY\x01\x00", 8);
  file[8] = (unsigned char)(hl & 0xff);
  file[9] = (unsigned char)(hl >> 8);
  memset(file + 10, ' ', hl);
  memcpy(file + 10, dict, dl);
  file[10 + hl - 1] = '\n';
  memcpy(file + 10 + hl, data, ndata);
  write_file(path, size, name, file, 10 + hl + ndata);
  free(file);
}

/* A version 1.0 .npy file whose header dict is [dict] and whose data is
 * [ndata] (at most 64) zero bytes, loaded: the status, with the message in M. */
static masq_status load_npy(masq_state *M, const char *dict, size_t ndata) {
  static const unsigned char zeros[64];
  char path[128];
  write_npy(path, sizeof path, "h.npy", dict, 0, zeros, ndata);
  return eval_path(M, "x = load(\"", path, "\")");
}

/* Each way a .npy header can be wrong has its own message. */
static void test_bad_npy(masq_state *M) {
  static const struct {
    const char *dict, *message;
  } bad[] = {
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }",
       "has a malformed header: expected True or False for 'fortran_order' at byte 34 of the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }",
       "has an unexpected key 'extra' in its header"},
      {"{'fortran_order': False, 'shape': (2,), }", "has a header without 'descr'"},
      {"{'descr': '<f4', 'shape': (2,), }", "has a header without 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, }", "has a header without 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,) x",
       "has a malformed header: expected ',' or '}' at byte"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
       "has more than 8 dimensions, the most masq supports"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
       "has a dimension too large for masq"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_ERR(M, load_npy(M, bad[i].dict, 8), MASQ_ERR_RUNTIME, bad[i].message);
  CHECK_ERR(M, load_npy(M, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", 8),
            MASQ_ERR_RUNTIME, "holds big-endian data ('>f8'), which masq does not read");

  char path[128];
  write_file(path, sizeof path, "a.npy", "abcd", 4);
  CHECK_ERR(M, eval_path(M, "x = load(\"", path, "\")"), MASQ_ERR_RUNTIME,
            "is not a .npy or .npz file (it starts with neither \\x93NUMPY nor PK)");
  write_file(path, sizeof path, "b.npy", "\x93NUMPY\x01", 7);
  CHECK_ERR(M, eval_path(M, "x = load(\"", path, "\")"), MASQ_ERR_RUNTIME,
            "is truncated: it ends after 7 bytes, inside the .npy preamble");
  write_file(path, sizeof path, "c.npy", "\x93NUMPY\x04\x00\x00\x00\x00\x00", 12);
  CHECK_ERR(M, eval_path(M, "x = load(\"", path, "\")"), MASQ_ERR_RUNTIME,
            "has .npy format version 4.0; masq reads versions 1 to 3");
  write_file(path, sizeof path, "d.npy", "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  CHECK_ERR(M, eval_path(M, "x = load(\"", path, "\")"), MASQ_ERR_RUNTIME,
            "has a header of 2147483647 bytes; the limit is");
}

/* load(path, mmap=true) maps the file instead of reading it: a 16 MiB
 * array sums under a 4 MiB memory limit that a plain load exceeds; the
 * mapping is read-only to the host too, a save over the mapped file leaves
 * the tensor its values (tests/api/test_replace.c has more), saving the
 * mapped tensor needs no copy of it, and what can't
 * be used as it is on disk
 * (misaligned data, a dtype masq converts) is an error that says so. */
static void test_mmap(void) {
  enum { N = 4 << 20 };
  float *data = malloc(N * sizeof *data);
  CHECK(data != NULL);
  if (!data) return;
  for (int i = 0; i < N; i++) data[i] = 0.5f;
  char path[128], src[512];
  write_npy(path, sizeof path, "big.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4194304,), }",
            0, data, N * sizeof *data);
  free(data);
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  cfg.memory_limit = 4 << 20;
  masq_state *M = masq_open(&cfg);
  snprintf(src, sizeof src, "x = load(\"%s\", mmap=true)\n"
           "if sum(x) != 2097152 or amax(x) != 0.5 { error(\"wrong sum\") }", path);
  CHECK_OK(M, eval(M, src));
  masq_tensor *x = NULL;
  masq_tensor_desc d;
  CHECK_OK(M, masq_get_global(M, "x", &x));
  CHECK_OK(M, masq_tensor_info(M, x, &d));
  CHECK(d.flags == MASQ_TENSOR_READONLY && d.ndim == 1 && d.shape[0] == N);
  masq_tensor_release(M, x);
  snprintf(src, sizeof src, "y = load(\"%s\")", path);
  CHECK_ERR(M, eval(M, src), MASQ_ERR_MEMORY, "");
  /* save replaces the file with a new one: x keeps the old pages */
  snprintf(src, sizeof src, "save(\"%s\", ones(2))\n"
           "if sum(x) != 2097152 or shape(x) != [4194304] { error(\"x changed\") }", path);
  CHECK_OK(M, eval(M, src));
  /* and saving the 16 MiB it maps takes no copy of them: the data goes
   * from the mapping to the new file (it used to be encoded in memory) */
  char copy[128];
  snprintf(copy, sizeof copy, "%s/copy.npy", dir);
  snprintf(src, sizeof src, "save(\"%s\", x)\nc = load(\"%s\", mmap=true)\n"
           "if sum(c) != 2097152 or amin(c) != 0.5 or shape(c) != [4194304] { error(\"bad copy\") }",
           copy, copy);
  CHECK_OK(M, eval(M, src));
  CHECK_OK(M, eval(M, "x = none\nc = none"));
  unlink(copy);
  unlink(path);

  static const double f8[2] = {1.5, 2.5};
  write_npy(path, sizeof path, "odd.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
            4, f8, sizeof f8);
  snprintf(src, sizeof src, "x = load(\"%s\", mmap=true)", path);
  CHECK_ERR(M, eval(M, src), MASQ_ERR_RUNTIME, "has its data at byte 132, not aligned for float64");
  snprintf(src, sizeof src, "x = load(\"%s\")", path); /* a copy can be aligned */
  CHECK_OK(M, eval(M, src));
  masq_close(M);
}

/* A mapped file far larger than the memory limit reduces within it: 512
 * MiB of float32 zeros (a sparse file) under a limit of 320 KB, which
 * holds the state itself and little more. Whole-tensor sums, means and
 * extrema, a fused sum(x * 2 + 1) and sums along rows keep at most
 * MQ_RED_BATCH partials of 4096 entries each at a time; they used to hold
 * one (and a count) per 4096 entries: 512 KB here, and the limit was hit
 * (runtime/kernels/reduce_tree.c). any and all read the numbers as they are (they
 * used to make a bool copy: 128 MB). */
static void test_mmap_scratch(void) {
  char path[128], src[1024];
  static const char dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (134217728,), }";
  write_npy(path, sizeof path, "huge.npy", dict, 0, "", 0);
  CHECK(truncate(path, 128 + ((off_t)134217728 << 2)) == 0);
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  cfg.memory_limit = 320 << 10;
  masq_state *M = masq_open(&cfg);
  snprintf(src, sizeof src,
           "x = load(\"%s\", mmap=true)\n"
           "if sum(x) != 0 or mean(x) != 0 or amax(x) != 0 or amin(x) != 0 { error(\"wrong\") }\n"
           "if sum(x * 2 + 1) != 134217728 { error(\"wrong fused sum\") }\n"
           "if any(x) or all(x) { error(\"wrong any/all\") }\n"
           "if amax(sum(reshape(x, [4, -1]), 1)) != 0 { error(\"wrong rows\") }",
           path);
  CHECK_OK(M, eval(M, src));
  masq_close(M);
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/masq_files_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  snprintf(fifo, sizeof fifo, "%s/pipe.npy", dir);
  snprintf(subdir, sizeof subdir, "%s/dir.npy", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK(mkdir(subdir, 0700) == 0);

  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  masq_state *M = masq_open(&cfg);
  test_not_regular(M);
  test_nul_in_path(M);
  test_bad_npy(M);
  CHECK_OK(M, eval(M, "x = sum(ones(10))"));
  masq_close(M);
  test_mmap();
  test_mmap_scratch();

  unlink(fifo);
  rmdir(subdir);
  static const char *const written[] = {"h.npy", "a.npy", "b.npy", "c.npy", "d.npy", "odd.npy"};
  for (size_t i = 0; i < sizeof written / sizeof *written; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, written[i]);
    unlink(path);
  }
  CHECK(rmdir(dir) == 0); /* nothing else was left behind */
  printf("test_files: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
