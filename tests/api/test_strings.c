/* test_strings.c - strings with NUL bytes between the host and scripts:
 * masq_set_lstring(s) in, output, masq_get_string, global summaries; and
 * keyword arguments no parameter takes, which a host signature cannot ask
 * for (**names). */
#include "check.h"

static void summary_of(void *ud, const char *name, const char *summary) {
  if (strcmp(name, "s") == 0) snprintf(ud, 64, "%s", summary);
}

static void test_nul(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK_OK(M, eval(M, "s = \"a\\0b\\nc\"\nprint(s, end=\"\")"));
  CHECK(c.len == 5 && memcmp(c.text, "a\0b\nc", 5) == 0);

  char buf[8];
  size_t len = 0;
  CHECK_OK(M, masq_get_string(M, "s", buf, sizeof buf, &len));
  CHECK(len == 5 && memcmp(buf, "a\0b\nc", 6) == 0);
  CHECK_OK(M, masq_get_string(M, "s", buf, 3, &len));
  CHECK(len == 5 && memcmp(buf, "a\0", 3) == 0);

  /* One line, every byte visible. */
  char summary[64] = "";
  masq_globals(M, summary_of, summary);
  CHECK(strcmp(summary, "string \"a\\0b\\nc\"") == 0);

  CHECK_ERR(M, eval(M, "div(1, 2, rounding_mode=\"floor\\0\")"), MASQ_ERR_RUNTIME,
            "got \"floor\\0\"");
  CHECK_ERR(M, eval(M, "set_printoptions(profile=\"full\\0\")"), MASQ_ERR_RUNTIME,
            "profile must be");
  masq_close(M);

  /* Paths and array names are C strings: a NUL byte in one is an error. */
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs |= MASQ_LIB_IO;
  M = masq_open(&cfg);
  CHECK_OK(M, eval(M, "s = \"a\\0b\""));
  CHECK_ERR(M, eval(M, "load(s)"), MASQ_ERR_RUNTIME, "load: path contains a NUL byte");
  CHECK_ERR(M, eval(M, "savez(\"x.npz\", [[s, zeros(1)]])"), MASQ_ERR_RUNTIME,
            "savez: each name contains a NUL byte");
  /* A path longer than the import's buffer is an error, not cut short to
   * name another file. */
  static char src[5000];
  int n = snprintf(src, sizeof src, "import \"");
  while (n < 4200) n += snprintf(src + n, sizeof src - (size_t)n, "d/");
  snprintf(src + n, sizeof src - (size_t)n, "m.masq\"");
  CHECK_ERR(M, eval(M, src), MASQ_ERR_RUNTIME, "the path is longer than 4095 bytes");
  masq_close(M);
}

/* Strings with NUL bytes from the host: masq_set_lstring(s) keep every
 * byte, scripts see them, masq_get_string gives them back. */
static void test_nul_in(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  char buf[16];
  size_t len = 0;
  CHECK_OK(M, masq_set_lstring(M, "s", "a\0b\0", 4));
  CHECK(strcmp(run(M, &c, "print(len(s), s == \"a\\0b\\0\", [s])"),
               "4 true [\"a\\0b\\0\"]\n") == 0);
  CHECK_OK(M, masq_get_string(M, "s", buf, sizeof buf, &len));
  CHECK(len == 4 && memcmp(buf, "a\0b\0", 5) == 0);
  /* A script's string comes back byte for byte and goes in again. */
  CHECK_OK(M, eval(M, "t = \"\\0x\\0\\0y\""));
  CHECK_OK(M, masq_get_string(M, "t", buf, sizeof buf, &len));
  CHECK(len == 5);
  CHECK_OK(M, masq_set_lstring(M, "u", buf, len));
  CHECK(strcmp(run(M, &c, "print(u == t)"), "true\n") == 0);
  /* The empty string; NULL is fine with no bytes, not with some. */
  CHECK_OK(M, masq_set_lstring(M, "e", NULL, 0));
  CHECK(strcmp(run(M, &c, "print(len(e))"), "0\n") == 0);
  CHECK_ERR(M, masq_set_lstring(M, "e", NULL, 2), MASQ_ERR_USAGE, "masq_set_lstring: s is NULL");
  CHECK_ERR(M, masq_set_string(M, "e", NULL), MASQ_ERR_USAGE, "masq_set_string: s is NULL");
  CHECK_ERR(M, masq_set_lstring(M, "e", "x", (size_t)-1), MASQ_ERR_RUNTIME,
            "size overflow in a string");

  /* Lists: each its own length; NULL lens means NUL-terminated. */
  const char *strs[] = {"x\0y", "", NULL, "plain"};
  size_t lens[] = {3, 0, 0, 2};
  CHECK_OK(M, masq_set_lstrings(M, "l", 4, strs, lens));
  CHECK(strcmp(run(M, &c, "print(l)"), "[\"x\\0y\", \"\", \"\", \"pl\"]\n") == 0);
  CHECK_OK(M, masq_set_lstrings(M, "l", 2, (const char *[]){"ab", "c"}, NULL));
  CHECK(strcmp(run(M, &c, "print(l)"), "[\"ab\", \"c\"]\n") == 0);
  CHECK_ERR(M, masq_set_lstrings(M, "l", 3, strs + 1, NULL), MASQ_ERR_USAGE,
            "masq_set_lstrings: strs[1] is NULL");
  CHECK_ERR(M, masq_set_lstrings(M, "l", 1, strs, (size_t[]){(size_t)-1}), MASQ_ERR_RUNTIME,
            "size overflow in a string");
  CHECK_ERR(M, masq_set_lstrings(M, "l", -1, strs, lens), MASQ_ERR_USAGE,
            "masq_set_lstrings: n must not be negative, got -1");
  masq_close(M);
}

static double one = 1;

static masq_status constant(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                            masq_tensor **out) {
  (void)argc, (void)argv;
  return masq_tensor_scalar(M, *(double *)ud, out);
}

static void test_names(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK(strcmp(run(M, &c, "print(format(\"{a}-{b}-{}\", 3, b=2, a=1))"), "1-2-3\n") == 0);
  CHECK_ERR(M, eval(M, "format(\"{}\", 1, fmt=\"x\")"), MASQ_ERR_RUNTIME,
            "got two values for 'fmt'");
  /* Other builtins still reject a keyword they do not know. */
  CHECK_ERR(M, eval(M, "len([1], y=2)"), MASQ_ERR_RUNTIME, "len() has no parameter named 'y'");
  CHECK_ERR(M, masq_register(M, "f(**kw)", constant, &one, NULL), MASQ_ERR_USAGE,
            "bad signature");
  masq_close(M);
}

int main(void) {
  test_nul();
  test_nul_in();
  test_names();
  return report("test_strings");
}
