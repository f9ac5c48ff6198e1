/* alloc_count.h - the bytes an evaluation allocates, for tests that tell
 * from them which path ran (test_fuse_reach.c, test_attention_reach.c):
 * a fused pass makes no full-size temporaries, op by op makes several. */
#ifndef TEST_ALLOC_COUNT_H
#define TEST_ALLOC_COUNT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/masq.h"

static size_t grown; /* bytes allocated (growth counted) since reset */

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (!ptr || nsize > osize) grown += nsize - (ptr ? osize : 0);
  return realloc(ptr, nsize);
}

/* Bytes [code] allocates after [setup], in a fresh state; 0 on an error. */
static size_t allocated(const char *setup, const char *code) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  masq_state *M = masq_open(&cfg);
  size_t n = 0;
  if (M && masq_eval(M, setup, strlen(setup), "<setup>", 0) == MASQ_OK) {
    grown = 0;
    if (masq_eval(M, code, strlen(code), "<code>", 0) == MASQ_OK) n = grown;
    else printf("%s", masq_last_error(M)->rendered);
  }
  masq_close(M);
  return n;
}

#endif
