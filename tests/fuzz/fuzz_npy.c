/* fuzz_npy - bytes -> load() as a .npy or .npz file (the contents decide,
 * as in np.load; the dictionary holds both magics), then print what came
 * back, save it again and load that; a zip also as scipy.sparse's .npz
 * (load_npz: csr, csc, coo, the constructors' checks; to_dense, save_npz
 * and load_npz again); then the same bytes as a CSV table
 * (load_csv with tensor=true, its summary, save_csv and load_csv again;
 * then as a table with comment="#": print, summary, describe, show_mask,
 * sort and group by its first column, save_csv and load_csv again;
 * tests/csv seeds).
 * The bytes go to an in-memory file (memfd) that the script names as /proc/self/fd/N, so load() runs exactly
 * as for a file on disk. The state has the io library, a memory limit and
 * an interrupt budget, and must still work afterwards. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static int input_fd = -1, output_fd = -1;

static int new_memfd(const char *name) {
  int fd = memfd_create(name, 0);
  if (fd < 0) {
    perror("fuzz_npy: memfd_create");
    abort();
  }
  return fd;
}

static void put_bytes(int fd, const uint8_t *data, size_t size) {
  if (ftruncate(fd, 0) != 0) abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    if (n <= 0) abort();
    done += (size_t)n;
  }
}

static masq_status run(masq_state *M, fuzz_budget *budget, const char *src) {
  budget->polls = 0;
  masq_status st = masq_eval(M, src, strlen(src), "fuzz_npy.masq", 0);
  fuzz_check_status(M, st, src, 1);
  return st;
}

/* One state serves STATE_REUSE inputs in a row: opening one costs more
 * than loading a small file (the builtin table is bound anew), and what a
 * load leaves behind meets the next one. */
#define STATE_REUSE 200
static masq_state *state;
static fuzz_budget budget;
static unsigned runs;

static void open_state(void) {
  state = fuzz_open(&budget, MASQ_LIB_ALL);
  char src[256];
  snprintf(src, sizeof src, "p = \"/proc/self/fd/%d\"\nq = \"/proc/self/fd/%d\"", input_fd,
           output_fd);
  if (run(state, &budget, src) != MASQ_OK) fuzz_fail("cannot set the paths", state);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (input_fd < 0) {
    input_fd = new_memfd("fuzz_npy_in");
    output_fd = new_memfd("fuzz_npy_out");
  }
  put_bytes(input_fd, data, size);
  if (state && ++runs % STATE_REUSE == 0) {
    masq_close(state);
    state = NULL;
  }
  if (!state) open_state();
  masq_state *M = state;
  if (run(M, &budget, "x = load(p)") == MASQ_OK) {
    run(M, &budget, "print(x)");
    if (run(M, &budget, "save(q, x)") == MASQ_OK)
      run(M, &budget, "y = load(q)\nprint(y)");
    run(M, &budget, "x = none\ny = none");
  }
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    run(M, &budget, "print(load(p, \"data\"))");
    if (run(M, &budget, "s = load_npz(p)") == MASQ_OK) {
      run(M, &budget, "print(s)\nprint(sum(s, 0))\nprint(to_dense(s))");
      if (run(M, &budget, "save_npz(q, s)") == MASQ_OK) run(M, &budget, "print(load_npz(q))");
      run(M, &budget, "s = none");
    }
  }
  if (run(M, &budget, "t = load_csv(p, tensor=true)") == MASQ_OK) {
    run(M, &budget, "print(t[0])\nprint(summary(t[0]))");
    if (run(M, &budget, "save_csv(q, t[0], header=t[1])") == MASQ_OK)
      run(M, &budget, "print(load_csv(q, tensor=true)[0])");
    run(M, &budget, "t = none");
  }
  /* as a table: typed columns, comments, printing, the table's ops */
  if (run(M, &budget, "t = load_csv(p, comment=\"#\")") == MASQ_OK) {
    run(M, &budget, "print(t)\nprint(summary(t))\nprint(describe(t))\nshow_mask(t)");
    run(M, &budget, "c = t.columns[0]\nprint(sort(t, c, descending=true)[0:3])\n"
                    "print(group(t, c, count))");
    if (run(M, &budget, "save_csv(q, t)") == MASQ_OK) run(M, &budget, "print(load_csv(q))");
    run(M, &budget, "t = none\nc = none");
  }
  if (!fuzz_state_works(M, &budget)) {
    masq_close(state);
    open_state();
    if (!fuzz_state_works(state, &budget)) fuzz_fail("a fresh state is out of memory", state);
  }
  return 0;
}
