/* iter.c - setting up row walks over same-shaped tensors, and running a
 * kernel over one on threads (see iter.h). */
#include "iter.h"

#include "cpu.h"
#include "half.h"
#include "parallel.h"

#if MQ_CPU_X86
#include <immintrin.h>
#endif

void mq_iter_init(mq_iter *it, int nops, mq_tensor *const *ts) {
  const mq_tensor *t0 = ts[0];
  int64_t shape[MQ_MAX_DIMS], st[MQ_ITER_MAXOPS][MQ_MAX_DIMS];
  int nd = 0;
  MQ_ASSERT(nops >= 1 && nops <= MQ_ITER_MAXOPS);
  for (int k = 0; k < nops; k++) /* strided, and broadcast to one shape first */
    MQ_ASSERT(!ts[k]->sparse && mq_tensor_same_shape(ts[k], t0));
  it->nops = nops;
  /* Drop size-1 dims (their strides are irrelevant), then merge dim d into
   * the previous one when that is exactly one step of d for every operand. */
  for (int d = 0; d < t0->ndim; d++) {
    if (t0->shape[d] == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < nops && merge; k++)
        merge = st[k][nd - 1] == ts[k]->strides[d] * t0->shape[d];
      if (merge) {
        shape[nd - 1] *= t0->shape[d];
        for (int k = 0; k < nops; k++) st[k][nd - 1] = ts[k]->strides[d];
        continue;
      }
    }
    shape[nd] = t0->shape[d];
    for (int k = 0; k < nops; k++) st[k][nd] = ts[k]->strides[d];
    nd++;
  }
  if (nd == 0) { /* a single element */
    shape[0] = 1;
    for (int k = 0; k < nops; k++) st[k][0] = 1;
    nd = 1;
  }
  it->nd = nd;
  it->n = shape[nd - 1];
  it->rows = t0->numel == 0 ? 0 : t0->numel / it->n;
  for (int k = 0; k < nops; k++) {
    size_t es = mq_dtype_size((mq_dtype)ts[k]->dtype);
    it->es[k] = (int64_t)es;
    it->is[k] = st[k][nd - 1];
    it->p[k] = (char *)mq_tensor_data(ts[k]);
    for (int d = 0; d < nd - 1; d++) it->bst[k][d] = st[k][d] * (int64_t)es;
  }
  for (int d = 0; d < nd - 1; d++) {
    it->shape[d] = shape[d];
    it->idx[d] = 0;
  }
}

void mq_iter_part(const mq_iter *it, int64_t lo, int64_t hi, mq_iter *part) {
  MQ_ASSERT(0 <= lo && lo <= hi && hi <= (it->rows == 1 ? it->n : it->rows));
  *part = *it;
  if (it->rows == 1) {
    part->n = hi - lo;
    for (int k = 0; k < it->nops; k++) part->p[k] += lo * it->is[k] * it->es[k];
    return;
  }
  part->rows = hi - lo;
  int64_t rest = lo;
  for (int d = it->nd - 2; d >= 0; d--) {
    part->idx[d] = rest % it->shape[d];
    rest /= it->shape[d];
    for (int k = 0; k < it->nops; k++) part->p[k] += part->idx[d] * it->bst[k][d];
  }
}

/* --- positions ---------------------------------------------------------------- */

const uint8_t *mq_mask_bytes_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape) {
  if (!t->mask) return NULL;
  return mq_tensor_data(mq_contiguous(S, mq_expand(S, t->mask, nd, shape)));
}

int64_t *mq_iter_offsets(mq_state *S, int nd, const int64_t *shape, const int64_t *strides) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  int64_t *o = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *o);
  int64_t idx[MQ_MAX_DIMS] = {0}, off = 0;
  for (int64_t k = 0; k < n; k++) {
    o[k] = off;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
  return o;
}

/* --- running a kernel ------------------------------------------------------- */

typedef struct ewise_job {
  mq_ewise_fn k;
  const mq_iter *it;
  const double *prm;
  const uint8_t *half; /* mq_ewise_run_half's operand kinds, or NULL */
  int cpu;
  bool masked; /* the walk's last operand is the result's mask (mq_ewise_run_masked) */
  bool pack;   /* and mixed segments run packed (mq_ewise_run_masked) */
} ewise_job;

/* Float32 values per operand in a block of mq_ewise_run_half: four
 * operands' blocks take 4 KiB, in L1 with the kernel's tables (longer
 * blocks measured no faster, and slower on some alignments). */
#define HALF_BLOCK 256

/* Operand [k] of [it] from element [i0]: its address. */
static char *at(const mq_iter *it, int k, int64_t i0) { return it->p[k] + i0 * it->is[k] * it->es[k]; }

/* The rows of [it] by blocks of HALF_BLOCK: each half operand widened
 * into a block of float32 (a broadcast one once), the kernel run on the
 * blocks, a half output narrowed back; every other operand as it is. */
static void half_rows(mq_state *S, const ewise_job *J, mq_iter *it) {
  /* a line apart beyond the block: the operands' blocks do not share
   * their addresses' low 12 bits, which would stall a load on an
   * unrelated store (4K aliasing) */
  float buf[MQ_ITER_MAXOPS][HALF_BLOCK + 16];
  const uint8_t *h = J->half;
  ROWS_BEGIN(S, it)
  for (int64_t i0 = 0; i0 < it->n; i0 += HALF_BLOCK) {
    int64_t len = it->n - i0 < HALF_BLOCK ? it->n - i0 : HALF_BLOCK;
    mq_iter b = {.nops = it->nops, .nd = 1, .n = len, .rows = 1};
    for (int k = 0; k < it->nops; k++) {
      char *p = at(it, k, i0);
      int64_t is = it->is[k];
      b.p[k] = p, b.is[k] = is, b.es[k] = it->es[k];
      if (!h[k]) continue;
      b.p[k] = (char *)buf[k], b.es[k] = sizeof(float), b.is[k] = is != 0;
      if (k == 0) continue; /* the output: narrowed after the kernel */
      const uint16_t *x = (const uint16_t *)(const void *)p;
      if (is == 1) mq_half_widen(J->cpu, h[k] == MQ_HALF_BF16, buf[k], x, len);
      else
        for (int64_t i = 0; i < (is ? len : 1); i++)
          buf[k][i] = h[k] == MQ_HALF_BF16 ? mq_bf16_to_f32(x[i * is]) : mq_f16_to_f32(x[i * is]);
    }
    J->k(NULL, &b, J->prm);
    if (h[0]) {
      uint16_t *o = (uint16_t *)(void *)at(it, 0, i0);
      int64_t os = it->is[0];
      if (os == 1) mq_half_narrow(J->cpu, h[0] == MQ_HALF_BF16, o, buf[0], len);
      else
        for (int64_t i = 0; i < len; i++)
          o[i * os] = h[0] == MQ_HALF_BF16 ? mq_f32_to_bf16(buf[0][i]) : mq_f32_to_f16(buf[0][i]);
    }
  }
  ROWS_END
}

/* --- skipping masked-out entries --------------------------------------------- */

enum { CH_MASKED, CH_VALID, CH_MIXED };

/* What the [c] mask bytes m[i * ms] hold: only zeros, only nonzeros, or
 * both. Contiguous bytes are tested 8 at a time: a word is all zeros when
 * it is 0, all nonzero when each byte has its low bit (a bool is 0 or 1;
 * any other byte is only ever called mixed, which is still right). */
static int chunk_class(const uint8_t *m, int64_t ms, int64_t c) {
  const uint64_t lows = 0x0101010101010101ull;
  uint64_t any = 0, all = lows;
  int64_t i = 0;
  if (ms == 1)
    for (; i + 8 <= c; i += 8) {
      uint64_t w;
      memcpy(&w, m + i, sizeof w);
      any |= w;
      all &= w;
    }
  for (; i < c; i++) {
    uint8_t b = m[i * ms];
    any |= b;
    all &= b & 1 ? lows : 0;
  }
  return !any ? CH_MASKED : (all & lows) == lows ? CH_VALID : CH_MIXED;
}

void mq_mask_segments(const uint8_t *m, int64_t ms, int64_t n, mq_seg_fn fn, void *ctx) {
  if (n <= 0) return;
  if (ms == 0) { /* the row is valid or masked out as a whole */
    fn(ctx, 0, n, m[0] ? n : -1);
    return;
  }
  int64_t start = 0, fix = -1;
  int cur = -1; /* the open segment: 0 masked out, 1 to compute */
  for (int64_t b = 0; b < n;) {
    int64_t c = n - b < MQ_SEG_CHUNK ? n - b : MQ_SEG_CHUNK;
    int cls = chunk_class(m + b * ms, ms, c);
    int kind = cls != CH_MASKED;
    if (cur >= 0 && (kind != cur || (kind && b - start >= MQ_SEG_MAX))) {
      fn(ctx, start, b, cur ? (fix < 0 ? b : fix) : -1);
      start = b, fix = -1;
    }
    cur = kind;
    if (cls == CH_MIXED && fix < 0) fix = b;
    b += c;
  }
  fn(ctx, start, n, cur ? (fix < 0 ? n : fix) : -1);
}

/* (typed loops that vectorize: a select per element, no branch) */
#define ZERO_MASKED(T)                                                         \
  {                                                                            \
    T *p = (T *)(void *)o;                                                     \
    if (!m)                                                                    \
      for (int64_t i = 0; i < n; i++) p[i * os] = 0;                           \
    else if (os == 1 && ms == 1)                                               \
      for (int64_t i = 0; i < n; i++) p[i] = m[i] ? p[i] : 0;                  \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) p[i * os] = m[i * ms] ? p[i * os] : 0;   \
  }                                                                            \
  break;

#if MQ_CPU_X86
MQ_TGT_AVX512 static void stream_zero512(char *p, size_t lines) {
  __m512i z = _mm512_setzero_si512();
  for (size_t i = 0; i < lines; i++) _mm512_stream_si512((void *)(p + 64 * i), z);
}
static void stream_zero128(char *p, size_t lines) {
  __m128i z = _mm_setzero_si128();
  for (size_t i = 0; i < 4 * lines; i++) _mm_stream_si128((__m128i *)(void *)(p + 16 * i), z);
}
#endif

/* [n] zero bytes at [o]. A masked-out run is never read back soon (the
 * next op skips it too), so its whole cache lines are written past the
 * cache: a store that does not first read the line in halves the traffic,
 * and in measurements made zeroing padding ~4x cheaper than memset (which
 * streams only far larger blocks). Those stores are ordered by
 * mq_zero_fence, once per piece of work, not here: a fence per row waits
 * for each row's zeros to reach memory. */
static void zero_bytes(char *o, size_t n) {
#if MQ_CPU_X86
  if (n >= 1024) {
    size_t head = (size_t)(-(uintptr_t)o & 63), lines = (n - head) / 64;
    memset(o, 0, head);
    if (mq_cpu_best() == MQ_CPU_AVX512) stream_zero512(o + head, lines);
    else stream_zero128(o + head, lines);
    memset(o + head + 64 * lines, 0, n - head - 64 * lines);
    return;
  }
#endif
  memset(o, 0, n);
}

void mq_zero_fence(void) {
#if MQ_CPU_X86
  _mm_sfence();
#endif
}

/* (static: clang makes no clones of a function other files call) */
MQ_WIDE static void zero_masked(char *o, int64_t os, int64_t es, const uint8_t *m, int64_t ms,
                                int64_t n) {
  switch (es) {
  case 1: ZERO_MASKED(uint8_t)
  case 2: ZERO_MASKED(uint16_t)
  case 4: ZERO_MASKED(uint32_t)
  default: MQ_ASSERT(es == 8); ZERO_MASKED(uint64_t)
  }
}

void mq_zero_masked(char *o, int64_t os, int64_t es, const uint8_t *m, int64_t ms, int64_t n) {
  if (!m && os == 1) zero_bytes(o, (size_t)(n * es));
  else zero_masked(o, os, es, m, ms, n);
}

/* --- packing the valid entries ---------------------------------------------------
 * A costly kernel (exp, gelu, ...) on a segment where valid and masked-out
 * entries alternate (time-major padding, a random mask) runs on the valid
 * entries packed together: each operand's valid entries gathered into a
 * buffer in L1, the kernel run on them, its results put back with zeros
 * between. Its work then follows the valid count; each entry moves
 * twice, which AVX-512's compress and expand make cheap (the other paths
 * move them in C: the same bytes, slower). */
#define PACK_BLOCK 512
#define PACK_SLACK 16 /* a buffer's entries past the packed ones, read or written whole */

#if MQ_CPU_X86
MQ_TGT_AVX512 static int64_t pack32_avx512(uint32_t *d, const uint32_t *s, const uint8_t *m, int64_t n) {
  int64_t i = 0, j = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i mb = _mm_loadu_si128((const __m128i *)(const void *)(m + i));
    __mmask16 k = _mm_test_epi8_mask(mb, mb);
    _mm512_storeu_si512((void *)(d + j), _mm512_maskz_compress_epi32(k, _mm512_loadu_si512((const void *)(s + i))));
    j += __builtin_popcount(k);
  }
  for (; i < n; i++) d[j] = s[i], j += m[i] != 0;
  return j;
}
MQ_TGT_AVX512 static void unpack32_avx512(uint32_t *o, const uint32_t *s, const uint8_t *m, int64_t n) {
  int64_t i = 0, j = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i mb = _mm_loadu_si128((const __m128i *)(const void *)(m + i));
    __mmask16 k = _mm_test_epi8_mask(mb, mb);
    _mm512_storeu_si512((void *)(o + i), _mm512_maskz_expand_epi32(k, _mm512_loadu_si512((const void *)(s + j))));
    j += __builtin_popcount(k);
  }
  for (; i < n; i++) o[i] = m[i] ? s[j] : 0, j += m[i] != 0;
}
#endif

#define PACK_LOOP(T)                                                           \
  {                                                                            \
    T *d = (T *)(void *)dst;                                                   \
    const T *x = (const T *)(const void *)src;                                 \
    for (int64_t i = 0; i < n; i++) d[j] = x[i * ss], j += m[i] != 0;          \
  }                                                                            \
  break;
#define UNPACK_LOOP(T)                                                         \
  {                                                                            \
    T *p = (T *)(void *)o;                                                     \
    const T *x = (const T *)(const void *)src;                                 \
    for (int64_t i = 0; i < n; i++) p[i * os] = m[i] ? x[j] : 0, j += m[i] != 0; \
  }                                                                            \
  break;

/* The entries of [src] (stride ss, es bytes each) where the mask bytes
 * [m] are nonzero into [dst], in order; their count. */
static int64_t pack(int cpu, char *dst, const char *src, int64_t ss, int64_t es, const uint8_t *m,
                    int64_t n) {
  int64_t j = 0;
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512 && es == 4 && ss == 1)
    return pack32_avx512((uint32_t *)(void *)dst, (const uint32_t *)(const void *)src, m, n);
#endif
  switch (es) {
  case 1: PACK_LOOP(uint8_t)
  case 2: PACK_LOOP(uint16_t)
  case 4: PACK_LOOP(uint32_t)
  default: PACK_LOOP(uint64_t)
  }
  return j;
}

/* The packed entries [src] back to [o] (stride os), where the mask bytes
 * [m] are nonzero; zero bits between. */
static void unpack(int cpu, char *o, int64_t os, int64_t es, const char *src, const uint8_t *m,
                   int64_t n) {
  int64_t j = 0;
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512 && es == 4 && os == 1) {
    unpack32_avx512((uint32_t *)(void *)o, (const uint32_t *)(const void *)src, m, n);
    return;
  }
#endif
  switch (es) {
  case 1: UNPACK_LOOP(uint8_t)
  case 2: UNPACK_LOOP(uint16_t)
  case 4: UNPACK_LOOP(uint32_t)
  default: UNPACK_LOOP(uint64_t)
  }
}

/* How many of the [n] mask bytes [m] are nonzero: 8 at a time, each
 * nonzero byte folded onto its low bit. */
static int64_t count_valid(const uint8_t *m, int64_t n) {
  int64_t cnt = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, m + i, sizeof w);
    w |= w >> 4;
    w |= w >> 2;
    w |= w >> 1;
    cnt += __builtin_popcountll(w & 0x0101010101010101ull);
  }
  for (; i < n; i++) cnt += m[i] != 0;
  return cnt;
}

/* One row of a masked walk, for mq_mask_segments. */
typedef struct mrow {
  const ewise_job *J;
  const mq_iter *it;
} mrow;

/* The kernel over [sub] (a row of the walk's operands but the mask). */
static void run_sub(const ewise_job *J, mq_iter *sub) {
  if (J->half) half_rows(NULL, J, sub);
  else J->k(NULL, sub, J->prm);
}

/* Entries [a, b) of the row, packed (above), PACK_BLOCK at a time. */
static void packed_run(const mrow *R, int64_t a, int64_t b) {
  const mq_iter *it = R->it;
  int mk = it->nops - 1;
  _Alignas(64) char buf[MQ_ITER_MAXOPS - 1][(PACK_BLOCK + PACK_SLACK) * 8];
  uint8_t mbuf[PACK_BLOCK];
  for (int64_t c0 = a; c0 < b; c0 += PACK_BLOCK) {
    int64_t n = b - c0 < PACK_BLOCK ? b - c0 : PACK_BLOCK, cnt = -1;
    const uint8_t *m = (const uint8_t *)at(it, mk, c0);
    if (it->is[mk] != 1) {
      for (int64_t i = 0; i < n; i++) mbuf[i] = m[i * it->is[mk]];
      m = mbuf;
    }
    mq_iter sub = {.nops = mk, .nd = 1, .rows = 1};
    for (int k = 0; k < mk; k++) {
      sub.es[k] = it->es[k];
      sub.is[k] = it->is[k] != 0;
      sub.p[k] = k == 0 || !it->is[k] ? (k ? at(it, k, c0) : buf[0]) : buf[k];
      if (k > 0 && it->is[k]) cnt = pack(R->J->cpu, buf[k], at(it, k, c0), it->is[k], it->es[k], m, n);
    }
    if (cnt < 0) cnt = count_valid(m, n); /* no operand to pack: each a single value */
    sub.n = cnt;
    if (cnt) run_sub(R->J, &sub);
    memset(buf[0] + cnt * it->es[0], 0, (size_t)(PACK_SLACK * it->es[0])); /* read by unpack, unused */
    unpack(R->J->cpu, at(it, 0, c0), it->is[0], it->es[0], buf[0], m, n);
  }
}

/* Packing pays for a costly kernel where at most this share of a mixed
 * part is valid (numerator over 8). */
#define PACK_MAX_VALID 6

static void masked_segment(void *ctx, int64_t a, int64_t b, int64_t fix) {
  const mrow *R = ctx;
  const mq_iter *it = R->it;
  int mk = it->nops - 1;
  if (fix < 0) {
    mq_zero_masked(at(it, 0, a), it->is[0], it->es[0], NULL, 0, b - a);
    return;
  }
  if (fix < b && R->J->pack && it->is[mk] == 1) { /* the valid entries of the mixed part packed */
    int64_t cnt = count_valid((const uint8_t *)at(it, mk, fix), b - fix);
    if (cnt * 8 <= (b - fix) * PACK_MAX_VALID) {
      packed_run(R, fix, b);
      b = fix;
      if (a == b) return;
    }
  }
  mq_iter sub = {.nops = mk, .nd = 1, .n = b - a, .rows = 1};
  for (int k = 0; k < mk; k++) {
    sub.p[k] = at(it, k, a);
    sub.is[k] = it->is[k];
    sub.es[k] = it->es[k];
  }
  run_sub(R->J, &sub);
  if (fix < b)
    mq_zero_masked(at(it, 0, fix), it->is[0], it->es[0], (const uint8_t *)at(it, mk, fix), it->is[mk],
                   b - fix);
}

/* Rows whose mask is one byte each (a [B, L, 1] mask over [B, L, D]):
 * consecutive rows of one validity whose operands continue each other in
 * memory run as one, so short rows cost no call each. */
static void masked_whole_rows(mq_state *S, const ewise_job *J, mq_iter *it) {
  int mk = it->nops - 1;
  mq_iter run = {.nops = mk, .nd = 1, .n = 0, .rows = 1};
  bool valid = false;
  for (int k = 0; k < mk; k++) run.is[k] = it->is[k], run.es[k] = it->es[k];
  ROWS_BEGIN(S, it)
  bool v = *(const uint8_t *)it->p[mk] != 0, joins = run.n > 0 && v == valid;
  for (int k = 0; k < mk && joins; k++) joins = it->p[k] == at(&run, k, run.n);
  if (run.n > 0 && !joins) {
    if (valid) run_sub(J, &run);
    else mq_zero_masked(run.p[0], run.is[0], run.es[0], NULL, 0, run.n);
    run.n = 0;
  }
  if (run.n == 0) {
    for (int k = 0; k < mk; k++) run.p[k] = it->p[k];
    valid = v;
  }
  run.n += it->n;
  ROWS_END
  if (run.n > 0) {
    if (valid) run_sub(J, &run);
    else mq_zero_masked(run.p[0], run.is[0], run.es[0], NULL, 0, run.n);
  }
}

/* A segment of rows [a, b) of a walk whose rows lie end to end (each
 * operand's next row starts where its last ended) and whose mask has one
 * byte a row, the rows' bytes consecutive: as masked_segment, row by row. */
static void row_segment(void *ctx, int64_t a, int64_t b, int64_t fix) {
  const mrow *R = ctx;
  const mq_iter *it = R->it;
  int mk = it->nops - 1;
  int64_t n = it->n;
  if (fix < 0) {
    mq_zero_masked(at(it, 0, a * n), it->is[0], it->es[0], NULL, 0, (b - a) * n);
    return;
  }
  mq_iter sub = {.nops = mk, .nd = 1, .n = (b - a) * n, .rows = 1};
  for (int k = 0; k < mk; k++) {
    sub.p[k] = at(it, k, a * n);
    sub.is[k] = it->is[k];
    sub.es[k] = it->es[k];
  }
  run_sub(R->J, &sub);
  const uint8_t *m = (const uint8_t *)it->p[mk];
  for (int64_t r = fix; r < b; r++)
    if (!m[r]) mq_zero_masked(at(it, 0, r * n), it->is[0], it->es[0], NULL, 0, n);
}

/* Whether [it]'s rows lie end to end for every operand but the mask, and
 * the mask has one byte a row, consecutive (a contiguous [B, L, 1] mask
 * over [B, L, D] data): then its rows are cut like entries. */
static bool rows_like_entries(const mq_iter *it) {
  int mk = it->nops - 1;
  if (it->nd != 2 || it->is[mk] != 0 || it->bst[mk][0] != 1) return false;
  for (int k = 0; k < mk; k++)
    if (it->bst[k][0] != it->n * it->is[k] * it->es[k]) return false;
  return true;
}

static void masked_rows(mq_state *S, const ewise_job *J, mq_iter *it) {
  mrow R = {J, it};
  int mk = it->nops - 1;
  if (rows_like_entries(it)) {
    mq_mask_segments((const uint8_t *)it->p[mk], 1, it->rows, row_segment, &R);
  } else if (it->is[mk] == 0 && it->rows > 1) {
    masked_whole_rows(S, J, it);
  } else {
    ROWS_BEGIN(S, it)
    mq_mask_segments((const uint8_t *)it->p[mk], it->is[mk], it->n, masked_segment, &R);
    ROWS_END
  }
  mq_zero_fence();
}

/* --- running a kernel, on threads ------------------------------------------- */

/* The walk [it] (or a part of it) on this thread. */
static void run_rows(mq_state *S, const ewise_job *J, mq_iter *it) {
  if (J->masked) masked_rows(S, J, it);
  else if (J->half) half_rows(S, J, it);
  else J->k(S, it, J->prm);
}

static void ewise_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ewise_job *J = ctx;
  mq_iter part;
  mq_iter_part(J->it, lo, hi, &part);
  run_rows(NULL, J, &part);
}

static void ewise_run(mq_state *S, const ewise_job *J) {
  mq_iter *it = (mq_iter *)J->it;
  int nt = mq_parallel_threads_for(S, it->rows * it->n);
  if (nt <= 1 && it->rows == 1 && it->n > MQ_POLL_ELEMS) {
    /* one long row (a contiguous tensor is one): the kernel polls between
     * rows only, so cut it, polling between the pieces (mq_parallel_for
     * runs them all here) */
    mq_parallel_for(S, 1, it->n, MQ_POLL_ELEMS, ewise_range, (void *)J);
    return;
  }
  if (nt <= 1) {
    run_rows(S, J, it);
    return;
  }
  if (it->rows == 1)
    mq_parallel_for(S, nt, it->n, MQ_PAR_GRAIN, ewise_range, (void *)J);
  else
    mq_parallel_for(S, nt, it->rows, it->n >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / it->n, ewise_range,
                    (void *)J);
}

void mq_ewise_run(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm) {
  ewise_job J = {k, it, prm, NULL, 0, false, false};
  ewise_run(S, &J);
}

void mq_ewise_run_half(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm,
                       const uint8_t *half) {
  ewise_job J = {k, it, prm, half, S->cpu, false, false};
  ewise_run(S, &J);
}

void mq_ewise_run_masked(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm,
                         const uint8_t *half, bool pack) {
  MQ_ASSERT(it->nops >= 2 && it->es[it->nops - 1] == 1);
  ewise_job J = {k, it, prm, half, S->cpu, true, pack};
  ewise_run(S, &J);
}
