/* test_mask_skip.c - elementwise work skips masked-out entries
 * (runtime/tensor/iter.h): mq_mask_segments cuts a row into segments that
 * cover it in order, a masked-out segment holds no valid entry, a computed
 * one is all valid before its fix index (and, with entries to zero after
 * it, at most MQ_SEG_MAX long, so they are still in cache), and
 * padding (a valid prefix per row) is computed only up to the chunk that
 * ends its valid run; mq_ewise_run_masked runs its kernel on no more than
 * that (a counting kernel says so: the op's values cannot tell, which is
 * tests/lang/masked_ewise_skip's part) and leaves zero bits wherever the
 * mask is false, for contiguous, broadcast (stride 0) and strided masks,
 * and, packing the valid entries of mixed chunks together for a costly
 * kernel, on the valid ones only, on every CPU path. */
#include <stdio.h>
#include <string.h>

#include "../../runtime/tensor/iter.h"
#include "../../runtime/tensor/shape.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

static uint64_t rng = 4242;
static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}

/* --- segments ------------------------------------------------------------------ */

typedef struct seen {
  const uint8_t *m;
  int64_t ms, end, computed;
  bool ok;
} seen;

static void on_segment(void *ctx, int64_t a, int64_t b, int64_t fix) {
  seen *V = ctx;
  V->ok &= a == V->end && a < b; /* in order, no gaps, none empty */
  V->end = b;
  if (fix < 0) {
    for (int64_t i = a; i < b; i++) V->ok &= V->m[i * V->ms] == 0;
    return;
  }
  V->computed += b - a;
  V->ok &= a <= fix && fix <= b && (b - a <= MQ_SEG_MAX || fix == b);
  for (int64_t i = a; i < fix; i++) V->ok &= V->m[i * V->ms] != 0;
  bool any = false;
  for (int64_t i = a; i < b; i++) any |= V->m[i * V->ms] != 0;
  V->ok &= any;
}

/* Segments of mask [m] (stride ms, n entries): true when they are right;
 * *computed: the entries in computed segments. */
static bool segments_ok(const uint8_t *m, int64_t ms, int64_t n, int64_t *computed) {
  seen V = {m, ms, 0, 0, true};
  mq_mask_segments(m, ms, n, on_segment, &V);
  *computed = V.computed;
  return V.ok && V.end == (n > 0 ? n : 0);
}

static void test_segments(void) {
  static uint8_t m[3 * 9000];
  const int64_t lens[] = {0, 1, 7, 8, 63, 64, 65, 127, 4095, 4096, 4097, 8191, 9000};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
    for (int64_t n = 0; n <= 9000; n += n < 200 ? 1 : 997) {
      /* padding: a valid prefix of lens[k], computed up to its chunk's end */
      int64_t len = lens[k] < n ? lens[k] : n, computed;
      for (int64_t i = 0; i < n; i++) m[i] = i < len;
      CHECK(segments_ok(m, 1, n, &computed));
      int64_t want = (len + MQ_SEG_CHUNK - 1) / MQ_SEG_CHUNK * MQ_SEG_CHUNK;
      CHECK(computed == (want < n ? want : n));
      /* a valid suffix, and the same read with stride 3 */
      for (int64_t i = 0; i < n; i++) m[3 * i] = i >= n - len;
      CHECK(segments_ok(m, 3, n, &computed));
      CHECK(computed <= len + MQ_SEG_CHUNK);
    }
  for (int rep = 0; rep < 200; rep++) { /* random runs, random bytes, any nonzero */
    int64_t n = (int64_t)(next() % 9000), computed;
    for (int64_t i = 0; i < n;) {
      int64_t run = 1 + (int64_t)(next() % (rep % 2 ? 300 : 3));
      uint8_t v = next() % 2 ? (uint8_t)(1 + next() % 255) : 0;
      for (; run-- > 0 && i < n; i++) m[i] = v;
    }
    CHECK(segments_ok(m, 1, n, &computed));
  }
  int64_t computed;
  uint8_t one = 1, zero = 0;
  CHECK(segments_ok(&one, 0, 5000, &computed) && computed == 5000);
  CHECK(segments_ok(&zero, 0, 5000, &computed) && computed == 0);
}

/* --- the masked walk ----------------------------------------------------------- */

static int64_t counted; /* entries the counting kernel saw (one thread) */

/* out = a + 1, counting entries: a float32 kernel */
static void count_f32(mq_state *St, mq_iter *it, const double *prm) {
  (void)prm;
  ROWS_BEGIN(St, it)
  float *o = (float *)it->p[0];
  const float *a = (const float *)it->p[1];
  for (int64_t i = 0; i < it->n; i++) o[i * it->is[0]] = a[i * it->is[1]] + 1;
  counted += it->n;
  ROWS_END
}

static mq_tensor *filled(mq_dtype dt, int nd, const int64_t *shape, uint8_t byte) {
  mq_tensor *t = mq_tensor_new(S, dt, nd, shape);
  memset(mq_tensor_data(t), byte, (size_t)t->numel * mq_dtype_size(dt));
  return t;
}

/* out[i] is a[i] + 1 (1.5 + 1) where valid and +0 where not */
static bool result_ok(mq_tensor *out, mq_tensor *mask) {
  mq_tensor *m = mq_contiguous(S, mask);
  const float *o = mq_tensor_data(out);
  const uint8_t *mb = mq_tensor_data(m);
  uint32_t bits;
  for (int64_t i = 0; i < out->numel; i++) {
    memcpy(&bits, &o[i], sizeof bits);
    if (mb[i] ? o[i] != 2.5f : bits != 0) return false;
  }
  return true;
}

static void run_masked_pack(mq_tensor *out, mq_tensor *a, mq_tensor *mask, bool pack) {
  mq_tensor *ts[3] = {out, a, mask};
  mq_iter it;
  mq_iter_init(&it, 3, ts);
  counted = 0;
  mq_ewise_run_masked(S, count_f32, &it, NULL, NULL, pack);
}
static void run_masked(mq_tensor *out, mq_tensor *a, mq_tensor *mask) {
  run_masked_pack(out, a, mask, false);
}

static void test_walk(mq_state *St) {
  (void)St;
  const int64_t B = 37, L = 4097;
  int64_t shape[2] = {B, L}, valid = 0;
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, 2, shape);
  uint8_t *mb = mq_tensor_data(mask);
  for (int64_t r = 0; r < B; r++) {
    int64_t len = r == 0 ? 0 : r == 1 ? 1 : r == 2 ? L : (int64_t)(next() % (uint64_t)(L + 1));
    valid += len;
    for (int64_t i = 0; i < L; i++) mb[r * L + i] = i < len;
  }
  mq_tensor *a = filled(MQ_DT_F32, 2, shape, 0);
  float *ad = mq_tensor_data(a);
  for (int64_t i = 0; i < a->numel; i++) ad[i] = 1.5f;
  mq_tensor *out = filled(MQ_DT_F32, 2, shape, 0xff); /* NaN bits before */
  run_masked(out, a, mask);
  CHECK(result_ok(out, mask));
  CHECK(counted >= valid && counted <= valid + B * MQ_SEG_CHUNK);
  /* time-major: the transposed mask and data (strided reads, rows of B) */
  mq_tensor *mt = mq_transpose(S, mask, 0, 1), *at = mq_transpose(S, a, 0, 1);
  int64_t tshape[2] = {L, B};
  mq_tensor *outt = filled(MQ_DT_F32, 2, tshape, 0xff);
  run_masked(outt, at, mt);
  CHECK(result_ok(outt, mt));
  CHECK(counted >= valid);
  /* a [B, L, 1] mask broadcast over D = 5: whole rows of D skipped */
  int64_t s3[3] = {B, L, 5}, m3s[3] = {B, L, 1};
  mq_tensor *m3 = mq_expand(S, mq_reshape(S, mask, 3, m3s), 3, s3);
  mq_tensor *a3 = filled(MQ_DT_F32, 3, s3, 0);
  float *a3d = mq_tensor_data(a3);
  for (int64_t i = 0; i < a3->numel; i++) a3d[i] = 1.5f;
  mq_tensor *out3 = filled(MQ_DT_F32, 3, s3, 0xff);
  run_masked(out3, a3, m3);
  CHECK(result_ok(out3, m3));
  /* (rows of D cut like entries: in chunks of 64 rows) */
  CHECK(counted >= valid * 5 && counted <= (valid + B * MQ_SEG_CHUNK) * 5);
  /* packed: a random mask (every chunk mixed) computes exactly its valid
   * entries, on every CPU path, time-major too */
  mq_tensor *mr = mq_tensor_new(S, MQ_DT_BOOL, 2, shape);
  uint8_t *mrb = mq_tensor_data(mr);
  int64_t rvalid = 0;
  for (int64_t i = 0; i < mr->numel; i++) rvalid += mrb[i] = next() % 2;
  int cpu0 = S->cpu;
  for (int cpu = 0; cpu <= cpu0; cpu++) {
    S->cpu = cpu;
    mq_tensor *outp = filled(MQ_DT_F32, 2, shape, 0xff);
    run_masked_pack(outp, a, mr, true);
    CHECK(result_ok(outp, mr));
    CHECK(counted == rvalid);
    mq_tensor *outq = filled(MQ_DT_F32, 2, tshape, 0xff), *mrt = mq_transpose(S, mr, 0, 1);
    run_masked_pack(outq, at, mq_contiguous(S, mrt), true);
    CHECK(result_ok(outq, mrt));
    /* rows of 37: the few more than 3/4 valid run whole */
    CHECK(counted >= rvalid && counted < rvalid + rvalid / 8);
    /* a strided mask is not packed */
    run_masked_pack(outq, at, mrt, true);
    CHECK(result_ok(outq, mrt));
    CHECK(counted >= rvalid);
  }
  S->cpu = cpu0;
  /* zero bits of every element size where masked out */
  for (int64_t es = 1; es <= 8; es *= 2) {
    uint8_t buf[64 * 8], mm[64];
    memset(buf, 0xff, sizeof buf);
    for (int i = 0; i < 64; i++) mm[i] = i % 3 == 0;
    mq_zero_masked((char *)buf, 1, es, mm, 1, 64);
    bool ok = true;
    for (int i = 0; i < 64; i++)
      for (int64_t b = 0; b < es; b++) ok &= buf[i * es + b] == (mm[i] ? 0xff : 0);
    CHECK(ok);
  }
  /* a long masked-out run (streamed past the cache), at every offset */
  static uint8_t big[70000];
  for (int off = 0; off < 80; off += 7) {
    memset(big, 0xff, sizeof big);
    mq_zero_masked((char *)big + off, 1, 1, NULL, 0, 60000);
    bool ok = big[off - (off > 0)] == (off > 0 ? 0xff : 0) && big[off + 60000] == 0xff;
    for (int i = off; i < off + 60000; i++) ok &= big[i] == 0;
    CHECK(ok);
  }
}

static void tests(mq_state *St, void *ud) {
  (void)ud;
  test_segments();
  test_walk(St);
}

int main(void) { return unit_main("test_mask_skip", tests); }
