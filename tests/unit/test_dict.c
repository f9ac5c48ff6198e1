/* test_dict.c - core/dict.c against a plain model: random insertions,
 * replacements, lookups and removals (which leave holes, squeezed out now
 * and then) over a small key space, checking after each step the live
 * entries in insertion order, the count, and that every key is found at
 * its entry. That the hash is keyed per state (no two states agree on it)
 * is checked here too; that colliding keys stay fast is
 * tests/api/test_deadlines.c. */
#include <string.h>

#include "../../core/dict.h"

#include "unit.h"

#define NKEYS 300

static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned next_rand(void) { /* xorshift64: the same cases every run */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng >> 32);
}

/* The model: keys 0..NKEYS-1 (ints, or strings "k<i>" for odd ones), the
 * order they went in, their values. */
typedef struct model {
  int order[NKEYS], n;
  int64_t val[NKEYS];
} model;

static mq_value key_of(int k) {
  if (k % 2 == 0) return mq_int(k);
  char buf[16];
  int n = snprintf(buf, sizeof buf, "k%d", k);
  return mq_objv(mq_string_new(S, buf, (size_t)n));
}

/* The dict holds exactly the model: the same keys in the same order with
 * the same values, each found where it is. */
static bool agrees(const mq_dict *d, const model *m) {
  if (d->len != m->n || d->used < d->len) return false;
  int j = 0;
  for (int e = 0; e < d->used; e++) {
    if (!mq_dentry_live(&d->entries[e])) continue;
    if (j >= m->n) return false;
    int k = m->order[j++];
    mq_value want = key_of(k);
    const mq_dentry *en = &d->entries[e];
    if (en->key.type != want.type || en->val.type != MQ_INT || en->val.as.i != m->val[k]) return false;
    if (mq_dict_find(S, d, want) != e) return false;
  }
  return j == m->n;
}

static void test_random(void) {
  mq_dict *d = mq_dict_new(S, 0);
  mq_retain(mq_objv(d)); /* ours: the drains below empty the pool */
  model m = {{0}, 0, {0}};
  int bad = 0;
  for (int step = 0; step < 40000; step++) {
    int k = (int)(next_rand() % NKEYS), at = -1;
    for (int i = 0; i < m.n; i++)
      if (m.order[i] == k) at = i;
    unsigned what = next_rand() % 8;
    if (what < 4) { /* set: new keys go at the end, old ones keep their place */
      m.val[k] = step;
      if (at < 0) m.order[m.n++] = k;
      mq_dict_set(S, d, key_of(k), mq_int(step));
    } else if (what < 7) { /* remove, if present */
      int e = mq_dict_find(S, d, key_of(k));
      bad += (e >= 0) != (at >= 0);
      if (e >= 0) mq_dict_remove(S, d, e);
      if (at >= 0) memmove(&m.order[at], &m.order[at + 1], (size_t)(m.n - at - 1) * sizeof *m.order), m.n--;
    } else if (next_rand() % 16 == 0) {
      mq_dict_compact(d);
      bad += d->used != d->len;
    }
    if (step % 97 == 0 || m.n < 3) bad += !agrees(d, &m);
    if (step % 1024 == 0) mq_pool_drain(S, 0); /* the keys made on the way */
  }
  CHECK(bad == 0);
  CHECK(agrees(d, &m));
  /* holes never outnumber the live entries by much */
  CHECK(d->used - d->len <= d->len + 8);
  mq_release(S, mq_objv(d));
}

/* true is the key 1 and false the key 0, as in Python. */
static void test_bools(void) {
  mq_dict *d = mq_dict_new(S, 0);
  mq_dict_set(S, d, mq_int(1), mq_int(10));
  mq_dict_set(S, d, mq_bool(true), mq_int(11));
  CHECK(d->len == 1 && mq_dict_find(S, d, mq_bool(true)) == 0);
  CHECK(d->entries[0].val.as.i == 11);
  CHECK(mq_dict_find(S, d, mq_bool(false)) == -1);
}

/* Two states hash the same key differently: the key is drawn per state. */
static void test_keyed(void) {
  mq_state *T = masq_open(NULL);
  CHECK(T != NULL);
  if (!T) return;
  CHECK(memcmp(S->hash_key, T->hash_key, sizeof S->hash_key) != 0);
  masq_close(T);
}

static void tests(mq_state *st, void *ud) {
  (void)st, (void)ud;
  test_random();
  test_bools();
  test_keyed();
}

int main(void) { return unit_main("test_dict", tests); }
