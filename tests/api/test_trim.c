/* test_trim.c - masq_trim gives back the tensor buffers a state caches
 * after they are freed: a long-lived state's memory falls back to what its
 * values need, and the state works after. */
#include "check.h"

static void test_trim_gives_back_the_cache(void) {
  counting c = {0, 0};
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  cfg.alloc_ud = &c;
  masq_state *M = masq_open(&cfg);
  CHECK(M != NULL);
  CHECK_OK(M, eval(M, "keep = ones(10)"));
  size_t base = c.bytes;
  CHECK_OK(M, eval(M, "big = zeros(4000000) + 1\ns = sum(big)\nbig = none"));
  CHECK(c.bytes > base + 16000000); /* two 16 MB buffers freed into the cache */
  size_t given = masq_trim(M);
  CHECK(given >= 32000000);
  CHECK(c.bytes < base + 1000000);
  CHECK_OK(M, eval(M, "sum(keep) + s")); /* what the state holds stays */
  CHECK(masq_trim(NULL) == 0);
  masq_close(M);
  CHECK(c.live == 0 && c.bytes == 0);
}

int main(void) {
  test_trim_gives_back_the_cache();
  return report("trim");
}
