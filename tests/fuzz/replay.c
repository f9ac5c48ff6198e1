/* replay.c - the harnesses without libFuzzer: runs LLVMFuzzerTestOneInput
 * once on each file named on the command line (built with ASan and UBSan,
 * so a bad input ends in a sanitizer report and a non-zero status). Used by
 * make test to replay tests/crashes/<harness>/ and to debug one input. */
#include "fuzz.h"

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      perror(argv[i]);
      return 2;
    }
    size_t cap = 4096, len = 0, n;
    uint8_t *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
      len += n;
      if (len == cap) {
        uint8_t *bigger = realloc(buf, cap *= 2);
        if (!bigger) free(buf);
        buf = bigger;
      }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
      fprintf(stderr, "%s: cannot read\n", argv[i]);
      return 2;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
  }
  return 0;
}
