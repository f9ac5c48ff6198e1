/* npy.c - reading and writing NumPy's .npy format (numpy/lib/format.py).
 *
 * Layout: the magic "\x93NUMPY", a major and a minor version byte, the
 * header length (uint16 in version 1, uint32 in versions 2 and 3), then the
 * header: a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final '\n' so the data starts at a multiple of
 * 64 bytes; then the raw data in C order. */
#include "npy.h"
#include "../tensor/internal.h"

#include <math.h>
#include <stdio.h>


/* numpy refuses headers longer than this (_MAX_HEADER_SIZE): a bound on the
 * work a hostile file can ask of the parser. */
#define MAX_HEADER 10000

/* numpy pads every header so that the first axis can later grow to this
 * many digits in place (GROWTH_AXIS_MAX_DIGITS); we copy it byte for byte. */
#define GROWTH_DIGITS 21

static bool host_is_le(void) {
  const uint16_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  return first == 1;
}

/* --- the header dict ----------------------------------------------------------- */

typedef struct header {
  mq_state *S;
  const char *what;          /* the array, for messages */
  const char *begin, *p, *end; /* the dict text and a cursor over it */
  char descr[16];
  bool has_descr, has_fortran, has_shape;
  bool fortran;
  int ndim;
  int64_t shape[MQ_MAX_DIMS];
} header;

static MQ_NORETURN void malformed(header *h, const char *expected) {
  mq_error(h->S, "load: %s has a malformed header: expected %s at byte %d of the dict",
           h->what, expected, (int)(h->p - h->begin));
}

static void skip_ws(header *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static bool eat(header *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes (numpy's keys and descrs never have any);
 * returns its start and sets *len. */
static const char *parse_string(header *h, size_t *len) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) malformed(h, "a quoted string");
  char q = *h->p++;
  const char *s = h->p;
  while (h->p < h->end && *h->p != q && *h->p != '\\') h->p++;
  if (h->p >= h->end || *h->p != q) malformed(h, "a closing quote");
  *len = (size_t)(h->p - s);
  h->p++;
  return s;
}

static bool parse_bool(header *h) {
  skip_ws(h);
  size_t left = (size_t)(h->end - h->p);
  bool v = left >= 4 && memcmp(h->p, "True", 4) == 0;
  if (!v && !(left >= 5 && memcmp(h->p, "False", 5) == 0))
    malformed(h, "True or False for 'fortran_order'");
  h->p += v ? 4 : 5;
  return v;
}

/* A tuple of non-negative ints: (), (3,), (2, 3). Python 2 wrote longs as
 * "3L"; numpy still reads those, so do we. */
static void parse_shape(header *h) {
  if (!eat(h, '(')) malformed(h, "a tuple for 'shape'");
  h->ndim = 0;
  while (!eat(h, ')')) {
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') malformed(h, "a dimension size in 'shape'");
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
      int digit = *h->p++ - '0';
      if (v > (INT64_MAX - digit) / 10)
        mq_error(h->S, "load: %s has a dimension too large for masq", h->what);
      v = v * 10 + digit;
    }
    if (h->p < h->end && *h->p == 'L') h->p++;
    if (h->ndim == MQ_MAX_DIMS)
      mq_error(h->S, "load: %s has more than %d dimensions, the most masq supports", h->what,
               MQ_MAX_DIMS);
    h->shape[h->ndim++] = v;
    if (!eat(h, ',')) {
      if (!eat(h, ')')) malformed(h, "',' or ')' in 'shape'");
      break;
    }
  }
}

static void parse_value(header *h, const char *key, size_t klen) {
  if (klen == 5 && memcmp(key, "descr", 5) == 0) {
    skip_ws(h);
    if (h->p < h->end && *h->p == '[')
      mq_error(h->S,
               "load: %s holds a structured array (a list of fields), which masq does not read",
               h->what);
    size_t n;
    const char *s = parse_string(h, &n);
    if (n >= sizeof h->descr) n = sizeof h->descr - 1; /* too long to be a dtype we know */
    memcpy(h->descr, s, n);
    h->descr[n] = '\0';
    h->has_descr = true;
  } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
    h->fortran = parse_bool(h);
    h->has_fortran = true;
  } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
    parse_shape(h);
    h->has_shape = true;
  } else {
    mq_error(h->S, "load: %s has an unexpected key '%.*s' in its header", h->what, (int)klen, key);
  }
}

/* The dict: keys in any order, a trailing comma allowed, then only padding. */
static void parse_dict(header *h) {
  if (!eat(h, '{')) malformed(h, "'{'");
  while (!eat(h, '}')) {
    size_t klen;
    const char *key = parse_string(h, &klen);
    if (!eat(h, ':')) malformed(h, "':' after a key");
    parse_value(h, key, klen);
    if (!eat(h, ',')) {
      if (!eat(h, '}')) malformed(h, "',' or '}'");
      break;
    }
  }
  skip_ws(h);
  if (h->p != h->end) malformed(h, "only padding after '}'");
  if (!h->has_descr || !h->has_fortran || !h->has_shape)
    mq_error(h->S, "load: %s has a header without '%s'", h->what,
             !h->has_descr ? "descr" : !h->has_fortran ? "fortran_order" : "shape");
}

/* --- dtypes ------------------------------------------------------------------------ */

/* What a descr decodes to: the file's kind and item size, and the masq dtype
 * it loads as (at its size; only uint16 and uint32 widen, to int64). */
typedef struct layout {
  char kind; /* 'f', 'i', 'u', 'b' */
  int size;
  mq_dtype dt;
} layout;

/* Every descr masq reads, by kind and item size. */
static const layout readable[] = {
    {'f', 2, MQ_DT_F16}, {'f', 4, MQ_DT_F32}, {'f', 8, MQ_DT_F64},
    {'i', 1, MQ_DT_I8}, {'i', 2, MQ_DT_I16}, {'i', 4, MQ_DT_I32}, {'i', 8, MQ_DT_I64},
    {'u', 1, MQ_DT_U8}, {'u', 2, MQ_DT_I64}, {'u', 4, MQ_DT_I64}, /* not u8: no int64 for it */
    {'b', 1, MQ_DT_BOOL},
};

static layout check_descr(header *h) {
  const char *d = h->descr;
  char order = '=';
  if (*d == '<' || *d == '>' || *d == '|' || *d == '=') order = *d++;
  const layout *l = NULL;
  if (d[0] && d[1] >= '1' && d[1] <= '8' && d[2] == '\0')
    for (size_t i = 0; i < sizeof readable / sizeof *readable; i++)
      if (readable[i].kind == d[0] && readable[i].size == d[1] - '0') l = &readable[i];
  if (!l)
    mq_error(h->S,
             "load: %s has dtype '%s', which masq does not read (it reads float16/32/64, "
             "int8/16/32/64, uint8/16/32 and bool)",
             h->what, h->descr);
  /* '=' is native order; numpy reads it as the reading machine's, as we do. */
  if (l->size > 1 && (order == '>' || (order == '=' && !host_is_le())))
    mq_error(h->S,
             "load: %s holds big-endian data ('%s'), which masq does not read; in numpy, save "
             "arr.astype(arr.dtype.newbyteorder('<')) instead",
             h->what, h->descr);
  return *l;
}

/* The two's complement value of the low [bits] of [v], without the
 * implementation-defined conversion of a large unsigned to signed. */
static int64_t sext(uint64_t v, int bits) {
  uint64_t sign = (uint64_t)1 << (bits - 1);
  if (!(v & sign)) return (int64_t)(v & (sign - 1));
  return -(int64_t)(~v & (sign - 1)) - 1;
}

/* Decodes n little-endian items of layout [l] at [src] into [t]'s data
 * (uint16 and uint32 widen to int64). */
static void decode(const layout *l, const uint8_t *src, int64_t n, mq_tensor *t) {
  void *dst = mq_tensor_data(t);
  if (host_is_le() && l->kind != 'b' && (size_t)l->size == mq_dtype_size((mq_dtype)t->dtype)) {
    memcpy(dst, src, (size_t)n * (size_t)l->size);
    return;
  }
  float *f32 = dst;
  double *f64 = dst;
  int64_t *i64 = dst;
  int32_t *i32 = dst;
  int16_t *i16 = dst;
  int8_t *i8 = dst;
  uint16_t *h16 = dst;
  uint8_t *b = dst;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *q = src + (size_t)i * (size_t)l->size;
    uint64_t u = l->size == 1   ? q[0]
                 : l->size == 2 ? mq_ld16(q)
                 : l->size == 4 ? mq_ld32(q)
                                : mq_ld64(q);
    switch (l->kind) {
    case 'f':
      if (l->size == 2) h16[i] = (uint16_t)u; /* float16: its bits */
      else if (l->size == 4) { uint32_t w = (uint32_t)u; memcpy(&f32[i], &w, 4); }
      else memcpy(&f64[i], &u, 8);
      break;
    case 'i':
      if (l->size == 1) i8[i] = (int8_t)sext(u, 8);
      else if (l->size == 2) i16[i] = (int16_t)sext(u, 16);
      else if (l->size == 4) i32[i] = (int32_t)sext(u, 32);
      else i64[i] = sext(u, 64);
      break;
    case 'u':
      if (l->size == 1) b[i] = (uint8_t)u;
      else i64[i] = (int64_t)u;
      break;
    default: b[i] = u != 0; /* numpy's bools are 0/1; make sure */
    }
  }
}

/* Checks the preamble, header and size of the .npy image [p, p+n) and
 * returns the offset of its data, with the header in *h and the dtype's
 * layout in *l. */
static size_t read_header(mq_state *S, const uint8_t *p, size_t n, const char *what, header *hp,
                          layout *lp) {
  if (n < 6 ? memcmp(p, MQ_NPY_MAGIC, n) != 0 : memcmp(p, MQ_NPY_MAGIC, 6) != 0)
    mq_error(S, "load: %s is not a .npy file (it does not start with \\x93NUMPY)", what);
  size_t need = n < 8 ? 10 : p[6] == 1 ? 10 : 12;
  if (n < need)
    mq_error(S, "load: %s is truncated: it ends after %zu bytes, inside the .npy preamble", what,
             n);
  if (p[6] < 1 || p[6] > 3)
    mq_error(S, "load: %s has .npy format version %d.%d; masq reads versions 1 to 3", what, p[6],
             p[7]);
  size_t hlen = p[6] == 1 ? mq_ld16(p + 8) : mq_ld32(p + 8);
  if (hlen > MAX_HEADER)
    mq_error(S, "load: %s has a header of %zu bytes; the limit is %d", what, hlen, MAX_HEADER);
  size_t start = need + hlen;
  if (n < start)
    mq_error(S, "load: %s is truncated: its header needs %zu bytes, the file has %zu", what, start,
             n);

  header h; /* filled here, copied out at the end */
  memset(&h, 0, sizeof h);
  h.S = S;
  h.what = what;
  h.begin = h.p = (const char *)p + need;
  h.end = (const char *)p + start;
  parse_dict(&h);
  layout l = check_descr(&h);
  if (h.fortran && h.ndim > 1)
    mq_error(S,
             "load: %s is stored in Fortran order, which masq does not read; in numpy, save "
             "np.ascontiguousarray(arr) instead",
             what);

  /* The size check comes before the allocation: a forged shape must not
   * reserve memory the file could never fill. */
  uint64_t nbytes = (uint64_t)l.size;
  for (int d = 0; d < h.ndim; d++) {
    if (h.shape[d] && nbytes > UINT64_MAX / (uint64_t)h.shape[d])
      mq_error(S, "load: %s has an impossible shape %s", what, mq_shape_str(S, h.ndim, h.shape));
    nbytes *= (uint64_t)h.shape[d];
  }
  if ((uint64_t)(n - start) < nbytes)
    mq_error(S, "load: %s is truncated: header says %llu bytes of data, file has %zu", what,
             (unsigned long long)nbytes, n - start);
  if ((uint64_t)(n - start) > nbytes)
    mq_error(S, "load: %s has %zu bytes after its header; its header says %llu bytes of data",
             what, n - start, (unsigned long long)nbytes);
  *hp = h;
  *lp = l;
  return start;
}

mq_tensor *mq_npy_parse(mq_state *S, const uint8_t *p, size_t n, const char *what) {
  header h;
  layout l;
  size_t start = read_header(S, p, n, what, &h, &l);
  mq_tensor *t = mq_tensor_new(S, l.dt, h.ndim, h.shape);
  decode(&l, p + start, t->numel, t);
  return t;
}

mq_tensor *mq_npy_map(mq_state *S, const char *path, const char *file) {
  /* The holder owns the mapping from the start, so an error below (a bad
   * header, the memory limit) unmaps it when the pool frees the holder. */
  mq_tensor *holder = mq_tensor_alloc(S, MQ_DT_F64, 0, NULL);
  mq_storage *st = mq_calloc(S, sizeof *st);
  st->rc = 1;
  holder->storage = st;
  st->map = mq_file_map(S, path, "load");
  const uint8_t *p = st->map->base;
  size_t n = st->map->len;
  if (n < 6 || memcmp(p, MQ_NPY_MAGIC, 6) != 0)
    mq_error(S, "load: %s is not a .npy file; mmap=true maps .npy files only", file);
  header h;
  layout l;
  size_t start = read_header(S, p, n, file, &h, &l);
  if (l.kind == 'b' || (size_t)l.size != mq_dtype_size(l.dt) || !host_is_le())
    mq_error(S,
             "load: %s holds '%s'; mmap=true maps only arrays masq uses as they are on disk "
             "(not bool, uint16 or uint32: load it without mmap)",
             file, h.descr);
  if (start % (size_t)l.size != 0)
    mq_error(S, "load: %s has its data at byte %zu, not aligned for %s; load it without mmap",
             file, start, mq_dtype_name(l.dt));
  mq_tensor *t = mq_tensor_alloc(S, l.dt, h.ndim, h.shape);
  mq_tensor_set_contiguous(t);
  st->data = (void *)(p + start); /* never written: mq_storage_foreign */
  st->nbytes = n - start;
  t->storage = st;
  holder->storage = NULL;
  return t;
}

/* --- writing ------------------------------------------------------------------------- */

static const char *descr_of(mq_dtype dt) {
  switch (dt) {
  case MQ_DT_BOOL: return "|b1";
  case MQ_DT_I64: return "<i8";
  case MQ_DT_F32: return "<f4";
  case MQ_DT_F64: return "<f8";
  case MQ_DT_I8: return "|i1";
  case MQ_DT_I16: return "<i2";
  case MQ_DT_I32: return "<i4";
  case MQ_DT_U8: return "|u1";
  case MQ_DT_F16: return "<f2";
  case MQ_DT_BF16: case MQ_DT__ALL: break;
  }
  return NULL;
}

void mq_npy_parts(mq_state *S, mq_tensor *t, mq_bytes parts[2]) {
  if (!descr_of((mq_dtype)t->dtype))
    mq_error(S, "save: numpy has no %s dtype, so .npy cannot hold it; save to(x, float32) "
                "(exact: every %s is a float32)",
             mq_dtype_name((mq_dtype)t->dtype), mq_dtype_name((mq_dtype)t->dtype));
  t = mq_contiguous(S, t);
  /* The dict exactly as numpy's _write_array_header prints it: keys sorted,
   * Python's repr of the shape, then room for the first axis to grow. */
  char dict[64 + MQ_MAX_DIMS * 24 + GROWTH_DIGITS];
  int k = sprintf(dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                  descr_of((mq_dtype)t->dtype));
  for (int d = 0; d < t->ndim; d++)
    k += sprintf(dict + k, d ? ", %lld" : "%lld", (long long)t->shape[d]);
  k += sprintf(dict + k, t->ndim == 1 ? ",), }" : "), }");
  if (t->ndim > 0) {
    char first[24];
    int grow = GROWTH_DIGITS - sprintf(first, "%lld", (long long)t->shape[0]);
    for (; grow > 0; grow--) dict[k++] = ' ';
  }
  /* numpy's padding: 64 - (10 + len + 1) % 64 spaces, a full 64 when the
   * header would already end on a boundary; then the '\n'. */
  size_t hlen = (size_t)k + 1, pad = 64 - (10 + hlen) % 64;
  hlen += pad;
  uint8_t *head = mq_scratch(S, 10 + hlen);
  memcpy(head, MQ_NPY_MAGIC "\x01\x00", 8);
  mq_st16(head + 8, (uint16_t)hlen); /* at most a few hundred bytes: version 1 */
  memcpy(head + 10, dict, (size_t)k);
  memset(head + 10 + k, ' ', pad);
  head[10 + hlen - 1] = '\n';
  parts[0] = (mq_bytes){head, 10 + hlen};

  size_t es = mq_dtype_size((mq_dtype)t->dtype), nbytes = (size_t)t->numel * es;
  const uint8_t *src = mq_tensor_data(t);
  if (host_is_le() && t->dtype != MQ_DT_BOOL) { /* as numpy stores it already */
    parts[1] = (mq_bytes){src, nbytes};
    return;
  }
  uint8_t *q = mq_scratch(S, nbytes ? nbytes : 1);
  if (host_is_le()) {
    memcpy(q, src, nbytes);
  } else {
    for (size_t i = 0; i < nbytes; i += es) /* reverse each item's bytes */
      for (size_t j = 0; j < es; j++) q[i + j] = src[i + es - 1 - j];
  }
  if (t->dtype == MQ_DT_BOOL)
    for (size_t i = 0; i < nbytes; i++) q[i] = q[i] != 0;
  parts[1] = (mq_bytes){q, nbytes};
}

uint8_t *mq_npy_encode(mq_state *S, mq_tensor *t, size_t *len) {
  mq_bytes parts[2];
  mq_npy_parts(S, t, parts);
  *len = parts[0].n + parts[1].n;
  uint8_t *out = mq_scratch(S, *len);
  memcpy(out, parts[0].p, parts[0].n);
  if (parts[1].n) memcpy(out + parts[0].n, parts[1].p, parts[1].n);
  return out;
}
