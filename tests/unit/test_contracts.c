/* test_contracts.c - the contracts (MQ_ASSERT, core/assert.h) run in the
 * checked builds and are compiled away in release ones.
 *
 * The same source is built into build/unit (release) and build/asan/unit
 * (ASan, which the Makefile builds with -DMQ_CHECKS). A child process
 * breaks a contract the way a wrong new view would: it records, through
 * mq_ag_moved, an op that drops elements (the diagonal of a matrix) as a
 * rearrangement. Under a sanitizer the child must die of SIGABRT after
 * naming the file, line and expression; without one it must run on.
 * Which one this is comes from the compiler (the sanitizer's own macros),
 * not from MQ_CHECKS, so a checked tree built without its contracts, or a
 * release tree built with them, fails here. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/autograd/autograd.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

#include "../sanitized.h"
#define SANITIZED (TEST_ASAN || TEST_TSAN)

/* The diagonal of a square matrix: n of its n * n elements. */
static mq_tensor *diagonal(mq_state *St, mq_tensor *t, const void *arg) {
  (void)arg;
  int64_t n = t->shape[0], stride = t->strides[0] + t->strides[1];
  return mq_tensor_view(St, t, 1, &n, &stride, t->offset);
}

static void break_contract(mq_state *St, void *ud) {
  (void)ud;
  int64_t shape[2] = {3, 3};
  mq_tensor *x = mq_ag_leaf(St, mq_tensor_full(St, MQ_DT_F64, 2, shape, 1.0), true, "x");
  mq_tensor *d = diagonal(St, mq_get_data(St, x), NULL);
  mq_ag_moved(St, d, x, diagonal, NULL); /* not a rearrangement: 3 of 9 elements */
}

/* Runs break_contract in a child; its stderr into [err]. The wait status. */
static int run_child(char *err, size_t cap) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 2);
    mq_state *C = masq_open(NULL);
    masq_status st = mq_protect(C, break_contract, NULL);
    masq_close(C);
    _exit(st == MASQ_OK ? 0 : 3);
  }
  close(fd[1]);
  size_t len = 0;
  ssize_t r;
  while (len + 1 < cap && (r = read(fd[0], err + len, cap - 1 - len)) > 0) len += (size_t)r;
  err[len] = '\0';
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

static void tests(mq_state *St, void *ud) {
  (void)St, (void)ud;
  CHECK(mq_checks_enabled() == SANITIZED);
  char err[4096];
  int status = run_child(err, sizeof err);
  if (SANITIZED) {
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    CHECK(strstr(err, "masq: contract broken at runtime/tensor/tape.c:") != NULL);
    CHECK(strstr(err, "out->numel == t->numel") != NULL);
  } else {
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(strstr(err, "contract broken") == NULL);
  }
  if (failed) printf("child's stderr:\n%s\n", err);
}

int main(void) { return unit_main("contracts", tests); }
