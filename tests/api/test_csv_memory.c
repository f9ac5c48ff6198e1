/* test_csv_memory.c - load_csv needs memory in proportion to its file:
 * the file's bytes, the table it returns (5 bytes a float32 cell with its
 * mask), a string a header name, and 14 bytes a column while it reads.
 * It used to grow its table 64 rows at a time, so one row of 10^6 columns
 * asked for 576 MB, and kept every doubling until the end (a column of
 * 10^6 rows took about 26 MB for a 2 MB file).
 *
 * - one row of 10^6 columns (a 2 MB file) loads under a 24 MB limit;
 * - a column of 10^6 rows (2 MB) loads under 12 MB;
 * - with 10^6 header names too (a string each: 9 MB of file), 40 MB fail
 *   cleanly (MASQ_ERR_MEMORY), and the state then loads two columns of
 *   the file: columns= makes strings of the names it selects only. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "check.h"

static char dir[64];

/* Writes a CSV of [rows] x [cols] cells "1" (a header "c0,c1,..." first if
 * [header]) to [name] in the test's directory; its path into [path]. */
static void write_csv(char *path, size_t size, const char *name, long rows, long cols, int header) {
  snprintf(path, size, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  for (long c = 0; header && c < cols; c++) fprintf(f, "%sc%ld", c ? "," : "", c);
  if (header) fputc('\n', f);
  for (long r = 0; r < rows; r++)
    for (long c = 0; c < cols; c++) fputs(c + 1 < cols ? "1," : "1\n", f);
  CHECK(fclose(f) == 0);
}

static masq_state *open_capped(size_t limit) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  cfg.memory_limit = limit;
  return masq_open(&cfg);
}

/* load_csv(path + args) in [M]: the table's dim [dim] must be [extent]
 * long and its cells sum to [total]. */
static masq_status load_check(masq_state *M, const char *path, const char *args, int dim,
                              long extent, long total) {
  char src[512];
  snprintf(src, sizeof src,
           "t = load_csv(\"%s\", tensor=true%s)\n"
           "if shape(t[0])[%d] != %ld or sum(t[0]) != %ld { error(\"wrong table\") }",
           path, args, dim, extent, total);
  return eval(M, src);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/masq_csvmem_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  char wide[128], tall[128], named[128], src[512];

  write_csv(wide, sizeof wide, "wide.csv", 1, 1000000, 0);
  masq_state *M = open_capped(24u << 20);
  CHECK_OK(M, load_check(M, wide, ", header=false", 1, 1000000, 1000000));
  CHECK_OK(M, load_check(M, wide, ", header=false, usecols=[0, -1]", 1, 2, 2));
  masq_close(M);

  write_csv(tall, sizeof tall, "tall.csv", 1000000, 1, 0);
  M = open_capped(12u << 20);
  CHECK_OK(M, load_check(M, tall, ", header=false", 0, 1000000, 1000000));
  masq_close(M);

  write_csv(named, sizeof named, "named.csv", 1, 1000000, 1);
  M = open_capped(40u << 20);
  snprintf(src, sizeof src, "t = load_csv(\"%s\", tensor=true)", named);
  CHECK_ERR(M, eval(M, src), MASQ_ERR_MEMORY, "memory limit of 41943040 bytes exceeded");
  snprintf(src, sizeof src,
           "t = load_csv(\"%s\", tensor=true, usecols=[\"c7\", -1])\n"
           "if shape(t[0])[1] != 2 or t[1] != [\"c7\", \"c999999\"] { error(\"wrong columns\") }",
           named);
  CHECK_OK(M, eval(M, src));
  masq_close(M);

  unlink(wide);
  unlink(tall);
  unlink(named);
  CHECK(rmdir(dir) == 0);
  printf("test_csv_memory: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
