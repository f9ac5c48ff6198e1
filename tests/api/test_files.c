/* test_files.c - load, save, import and masq_eval_file refuse what is not a
 * regular file (a FIFO would block, /dev/zero never ends, a directory is
 * not data) and paths with a NUL byte, with a clear error and a state that
 * still works. */
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
  CHECK_OK(M, eval(M, "x = sum(ones(10))"));
  masq_close(M);

  unlink(fifo);
  rmdir(subdir);
  rmdir(dir);
  printf("test_files: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
