/* test_replace.c - what a host sees of masq's file writes: a new file
 * renamed over the old one (runtime/io/file_write.c).
 *
 * - Two states in one process: A maps f.npy (load(mmap=true)), B saves
 *   over it, and A still reads its old values (the old code truncated the
 *   file A maps: SIGBUS). The same with a state saving over its own map.
 * - A symbolic link stays a link and its target gets the new contents
 *   (relative links, chains, a dangling link whose target is created); the
 *   old file's mode is kept; a new file gets 0666 less the umask.
 * - What masq refuses, with the old file unchanged: a read-only file, a
 *   file in a directory it cannot create files in (run as an unprivileged
 *   user: as root in a child that gives its rights up), a file over the
 *   process's file size limit (ulimit -f: without the check the kernel
 *   sends SIGXFSZ, which ends the process).
 * - A real full disk: a 64 KiB tmpfs, mounted in a child's own mount
 *   namespace when the test may (root; skipped otherwise). Every writer
 *   over a file it cannot hold fails with "No space left on device", the
 *   old file stays byte for byte and no temporary is left; with room,
 *   the same save goes through.
 * Nothing is left in the test's directories. */
#define _GNU_SOURCE /* unshare, CLONE_NEWNS */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char dir[64], script[1024];

/* Runs [before] PATH [after]. */
static masq_status run_path(masq_state *M, const char *before, const char *path, const char *after) {
  snprintf(script, sizeof script, "%s%s%s", before, path, after);
  return eval(M, script);
}

static masq_state *open_io(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  return masq_open(&cfg);
}

static void path_in(char *out, size_t size, const char *d, const char *name) {
  snprintf(out, size, "%s/%s", d, name);
}

static bool put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fputs(text, f) >= 0;
  return fclose(f) == 0 && ok;
}

static bool holds(const char *path, const char *text) {
  char buf[256];
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return n == strlen(text) && memcmp(buf, text, n) == 0;
}

/* The number of entries of directory [d] whose names contain ".masq-"
 * (the writer's temporaries). */
static int temporaries(const char *d) {
  DIR *dp = opendir(d);
  int n = 0;
  if (!dp) return -1;
  for (struct dirent *e; (e = readdir(dp));)
    if (strstr(e->d_name, ".masq-")) n++;
  closedir(dp);
  return n;
}

static void test_two_states(void) {
  char f[128];
  path_in(f, sizeof f, dir, "f.npy");
  masq_state *A = open_io(), *B = open_io();
  CHECK_OK(A, run_path(A, "save(\"", f, "\", arange(100000.0))"));
  CHECK_OK(A, run_path(A, "x = load(\"", f, "\", mmap=true)"));
  CHECK_OK(B, run_path(B, "save(\"", f, "\", ones(2))"));
  /* A's tensor still reads the old file's pages, all of them */
  CHECK_OK(A, eval(A, "if sum(x) != 4999950000.0 or x[99999] != 99999 { error(\"x changed\") }"));
  CHECK_OK(A, run_path(A, "if shape(load(\"", f, "\"))[0] != 2 { error(\"not replaced\") }"));
  /* B maps the new file; A saves over it twice, from the data B maps */
  CHECK_OK(B, run_path(B, "y = load(\"", f, "\", mmap=true)"));
  CHECK_OK(A, run_path(A, "save(\"", f, "\", x[:10] * 2)"));
  CHECK_OK(B, run_path(B, "save(\"", f, "\", y + 5)"));
  CHECK_OK(B, run_path(B, "if shape(y)[0] != 2 or amin(y) != 1 or amax(y) != 1 { error(\"y changed\") }\n"
                          "z = load(\"", f, "\")\nif shape(z)[0] != 2 or amin(z) != 6 { error(\"lost\") }"));
  masq_close(A);
  masq_close(B);
  CHECK(temporaries(dir) == 0);
  unlink(f);
}

static void test_links_and_modes(masq_state *M) {
  char sub[128], target[160], link[160], chain[160], dangling[160], made[160];
  path_in(sub, sizeof sub, dir, "sub");
  CHECK(mkdir(sub, 0755) == 0);
  path_in(target, sizeof target, sub, "t.npy");
  path_in(link, sizeof link, sub, "link.npy");
  path_in(chain, sizeof chain, dir, "chain.npy");
  path_in(dangling, sizeof dangling, sub, "dangling.npy");
  path_in(made, sizeof made, sub, "made.npy");
  CHECK(put(target, "old"));
  CHECK(chmod(target, 0640) == 0);
  CHECK(symlink("t.npy", link) == 0);      /* relative to sub/ */
  CHECK(symlink("sub/link.npy", chain) == 0); /* a link to a link */
  CHECK(symlink("made.npy", dangling) == 0);
  CHECK_OK(M, run_path(M, "save(\"", chain, "\", arange(3.0))"));
  struct stat st;
  CHECK(lstat(chain, &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(stat(target, &st) == 0 && (st.st_mode & 07777) == 0640);
  CHECK_OK(M, run_path(M, "if str(load(\"", target, "\")) != \"tensor([0., 1., 2.])\" { error(\"no\") }"));
  CHECK_OK(M, run_path(M, "save_csv(\"", dangling, "\", ones(2))"));
  CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(holds(made, "1\n1\n"));
  mode_t old = umask(027);
  unlink(made);
  CHECK_OK(M, run_path(M, "save(\"", made, "\", ones(2))"));
  CHECK(stat(made, &st) == 0 && (st.st_mode & 07777) == 0640);
  umask(old);
  CHECK(temporaries(sub) == 0 && temporaries(dir) == 0);
  unlink(chain), unlink(link), unlink(dangling), unlink(made), unlink(target);
  CHECK(rmdir(sub) == 0);
}

/* As an unprivileged user (root gives its rights up in a child): a
 * read-only file, and a directory where no file can be created. */
static int refusals(void) {
  masq_state *M = open_io();
  char ro[128], locked[128], inside[160], fresh[160];
  path_in(ro, sizeof ro, dir, "ro.npy");
  path_in(locked, sizeof locked, dir, "locked");
  path_in(inside, sizeof inside, locked, "w.npy");
  path_in(fresh, sizeof fresh, locked, "new.npy");
  CHECK(put(ro, "read-only"));
  CHECK(chmod(ro, 0444) == 0);
  CHECK_ERR(M, run_path(M, "save(\"", ro, "\", ones(2))"), MASQ_ERR_RUNTIME,
            "for writing: Permission denied");
  CHECK(holds(ro, "read-only"));
  CHECK(mkdir(locked, 0755) == 0 && put(inside, "in a locked directory"));
  CHECK(chmod(locked, 0555) == 0);
  CHECK_ERR(M, run_path(M, "save(\"", inside, "\", ones(2))"), MASQ_ERR_RUNTIME,
            "does not let masq create the new file it writes before renaming it over the old one "
            "(Permission denied); the old file is unchanged");
  CHECK(holds(inside, "in a locked directory"));
  CHECK_ERR(M, run_path(M, "save(\"", fresh, "\", ones(2))"), MASQ_ERR_RUNTIME,
            "cannot open '");
  CHECK(temporaries(locked) == 0 && temporaries(dir) == 0);
  CHECK_OK(M, eval(M, "x = sum(ones(3))"));
  masq_close(M);
  chmod(locked, 0755);
  unlink(inside), rmdir(locked), unlink(ro);
  return failed;
}

/* ulimit -f: refused before a byte is written, so no SIGXFSZ. */
static int size_limit(void) {
  masq_state *M = open_io();
  char f[128];
  path_in(f, sizeof f, dir, "limit.npy");
  CHECK(put(f, "under the limit"));
  struct rlimit lim;
  getrlimit(RLIMIT_FSIZE, &lim);
  lim.rlim_cur = 4096;
  CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  CHECK_OK(M, run_path(M, "save(\"", f, "\", ones(100))"));
  CHECK_ERR(M, run_path(M, "save(\"", f, "\", ones(10000))"), MASQ_ERR_RUNTIME,
            "are over the process's file size limit of 4096 bytes (ulimit -f)");
  CHECK_OK(M, run_path(M, "if shape(load(\"", f, "\"))[0] != 100 { error(\"changed\") }"));
  CHECK(temporaries(dir) == 0);
  masq_close(M);
  unlink(f);
  return failed;
}

/* A full disk: a 64 KiB tmpfs in this child's own mount namespace (gone
 * with the child). 77: the test may not mount here. */
static int full_disk(void) {
  char mnt[128];
  path_in(mnt, sizeof mnt, dir, "mnt");
  if (mkdir(mnt, 0700) != 0) return 1;
  if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0)
    return 77;
  /* 48 KiB taken: the old files' 4 KiB blocks and 12 KiB are left, less
   * than any writer below needs */
  char filler[160];
  path_in(filler, sizeof filler, mnt, "filler");
  FILE *fp = fopen(filler, "wb");
  static const char block[4096];
  for (int i = 0; fp && i < 12; i++) fwrite(block, 1, sizeof block, fp);
  if (!fp || fclose(fp) != 0) return 1;
  masq_state *M = open_io();
  static const struct {
    const char *name, *before, *after;
  } big[] = {
      {"a.npy", "save(\"", "\", ones(20000))"},
      {"a.npz", "save(\"", "\", ones(20000))"},
      {"b.npz", "savez(\"", "\", [[\"x\", ones(20000)]])"},
      {"s.npz", "save_npz(\"", "\", to_sparse(ones(100, 100)), compressed=false)"},
      {"a.csv", "save_csv(\"", "\", rand(2000, 8))"},
      {"m.svg", "show_mask(rand(300, 300) > 0.5, file=\"", "\")"},
      {"h.svg", "hist(rand(100000), bins=1000, file=\"", "\")"},
      {"p.svg", "plot(rand(100000), file=\"", "\")"},
      {"hm.svg", "heatmap(rand(300, 300), file=\"", "\")"},
  };
  for (size_t i = 0; i < sizeof big / sizeof *big; i++) {
    char f[192], src[512];
    path_in(f, sizeof f, mnt, big[i].name);
    CHECK(put(f, "the old contents"));
    snprintf(src, sizeof src, "%s%s%s", big[i].before, f, big[i].after);
    CHECK_ERR(M, eval(M, src), MASQ_ERR_RUNTIME, "No space left on device; the old file is unchanged");
    CHECK(holds(f, "the old contents"));
    CHECK(temporaries(mnt) == 0);
    unlink(f);
  }
  /* with room, a save goes through */
  unlink(filler);
  char f[192];
  path_in(f, sizeof f, mnt, "fits.npy");
  CHECK(put(f, "old"));
  CHECK_OK(M, run_path(M, "save(\"", f, "\", ones(2000))"));
  CHECK_OK(M, run_path(M, "if sum(load(\"", f, "\")) != 2000 { error(\"bad\") }"));
  CHECK(temporaries(mnt) == 0);
  masq_close(M);
  unlink(f);
  umount(mnt);
  return failed;
}

/* Runs [fn] in a child (as nobody if [drop] and we are root); its
 * failures count here. 77 from the child: skipped, with [why]. */
static void in_child(int (*fn)(void), bool drop, const char *why) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    if (drop && geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    failed = 0;
    _exit(fn() ? 1 : 0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    printf("test_replace: skipped: %s\n", why);
    return;
  }
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (WIFSIGNALED(status)) fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/masq_replace_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  chmod(dir, 0777); /* for the unprivileged child */
  test_two_states();
  masq_state *M = open_io();
  test_links_and_modes(M);
  masq_close(M);
  in_child(refusals, true, "");
  in_child(size_limit, false, "");
  in_child(full_disk, false, "no tmpfs (the test mounts one only as root, in its own namespace)");
  char mnt[128];
  path_in(mnt, sizeof mnt, dir, "mnt");
  rmdir(mnt);
  CHECK(rmdir(dir) == 0); /* nothing else was left behind */
  printf("test_replace: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
