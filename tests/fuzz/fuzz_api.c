/* fuzz_api - a sequence of C API calls driven by the input bytes, as a
 * careless or hostile host might make them: wrap and copy host buffers of
 * any dtype, shape and strides (and some that are invalid), read them back,
 * bind and read globals and strings, call builtins, script functions and
 * host functions (which call back into masq, fail, or return odd values),
 * require grad and backpropagate, interrupt, and release handles in any
 * order, including ones already given back.
 *
 * Checks: every status is a documented one and the one the call's contract
 * allows (a valid wrap succeeds or runs out of memory, an invalid one is
 * MASQ_ERR_USAGE, ...); every tensor masq describes can be read whole
 * within its memory (ASan checks the reads); every wrapped buffer's release
 * callback runs exactly once by masq_close(); the host allocator gets every
 * block back with its exact size; and the state still computes 1 + 1.
 *
 * The first byte may ask the allocator to fail one chosen allocation, so
 * the out-of-memory paths run too (FUZZ_ALLOC_FAILURES=0 in the
 * environment turns that off, to tell those bugs from the others). */
#include <stdalign.h>
#include <stddef.h>

#include "fuzz.h"

#define NHANDLES 16
#define NDEAD 8
#define MAX_DEPTH 3 /* host functions calling masq calling host functions */


/* The host allocator: a header before each block records its size, so a
 * wrong osize is caught; one allocation (the fail_at-th) can be refused. */
typedef struct alloc_stats {
  size_t live_bytes, count, fail_at;
} alloc_stats;

typedef union block_header {
  size_t size;
  max_align_t align;
} block_header;

static void *checking_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  alloc_stats *a = ud;
  block_header *h = ptr ? (block_header *)ptr - 1 : NULL;
  if (h && h->size != osize) {
    fprintf(stderr, "fuzz: allocator hook given osize %zu for a block of %zu bytes\n", osize,
            h->size);
    abort();
  }
  if (nsize == 0) {
    if (h) a->live_bytes -= h->size;
    free(h);
    return NULL;
  }
  if (++a->count == a->fail_at) return NULL;
  if (nsize > SIZE_MAX - sizeof *h) return NULL;
  block_header *nh = realloc(h, sizeof *nh + nsize);
  if (!nh) return NULL;
  a->live_bytes += nsize - (h ? osize : 0);
  nh->size = nsize;
  return nh + 1;
}

typedef struct fuzz_ctx fuzz_ctx;

/* What a registered host function does, chosen when it is registered. */
typedef struct hostfn {
  fuzz_ctx *c;
  unsigned behaviour;
} hostfn;

struct fuzz_ctx {
  masq_state *M;
  fuzz_input in;
  fuzz_budget budget;
  alloc_stats alloc;
  masq_tensor *live[NHANDLES]; /* references the harness holds */
  int nlive;
  masq_tensor *dead[NDEAD]; /* pointers the harness gave back */
  int ndead;
  int unreleased; /* wrapped buffers whose release callback has not run */
  int depth;
  hostfn fns[6];
};

/* A host buffer handed to masq_tensor_wrap, freed by its release callback. */
typedef struct host_buffer {
  fuzz_ctx *c;
  void *data, *valid;
} host_buffer;

static void free_buffer(host_buffer *b) {
  free(b->data);
  free(b->valid);
  free(b);
}

static void release_buffer(void *ud) {
  host_buffer *b = ud;
  b->c->unreleased--;
  free_buffer(b);
}

static void check(fuzz_ctx *c, masq_status st, const char *what) {
  fuzz_check_status(c->M, st, what, 0);
}

/* Aborts unless [st] is one of the statuses [what] may return: MASQ_OK,
 * MASQ_ERR_MEMORY and MASQ_ERR_INTERRUPTED (a pending masq_interrupt()),
 * which are always possible, MASQ_EXIT (masq code may call exit()), and
 * those in [allowed] (bits). */
static void expect(fuzz_ctx *c, masq_status st, unsigned allowed, const char *what) {
  check(c, st, what);
  if (st == MASQ_OK || st == MASQ_ERR_MEMORY || st == MASQ_ERR_INTERRUPTED || st == MASQ_EXIT ||
      (allowed & 1u << st))
    return;
  fprintf(stderr, "fuzz: %s returned status %d, which it may not\n", what, (int)st);
  fuzz_fail("unexpected status", c->M);
}
#define ALLOW(st) (1u << (st))

static int held(const fuzz_ctx *c, const masq_tensor *t) {
  for (int i = 0; i < c->nlive; i++)
    if (c->live[i] == t) return 1;
  return 0;
}

static void forget_dead(fuzz_ctx *c, const masq_tensor *t) {
  for (int i = 0; i < c->ndead; i++)
    if (c->dead[i] == t) c->dead[i--] = c->dead[--c->ndead];
}

static void release_slot(fuzz_ctx *c, int i) {
  masq_tensor *t = c->live[i];
  c->live[i] = c->live[--c->nlive];
  expect(c, masq_tensor_release(c->M, t), 0, "masq_tensor_release");
  if (!held(c, t) && c->ndead < NDEAD) c->dead[c->ndead++] = t;
}

/* Keeps [t], a new reference (or NULL), making room by releasing one. */
static void keep(fuzz_ctx *c, masq_tensor *t) {
  if (!t) return;
  forget_dead(c, t);
  if (c->nlive == NHANDLES) release_slot(c, (int)(fuzz_byte(&c->in) % NHANDLES));
  c->live[c->nlive++] = t;
}

static masq_tensor *pick(fuzz_ctx *c) {
  return c->nlive ? c->live[fuzz_byte(&c->in) % (unsigned)c->nlive] : NULL;
}

static size_t item_size(masq_dtype d) {
  static const size_t sizes[] = {1, 8, 4, 8, 1, 2, 4, 1, 2, 2}; /* masq.h's order */
  return (unsigned)d <= MASQ_BFLOAT16 ? sizes[d] : 1;
}

/* Reads every element of [t] and its mask through the layout
 * masq_tensor_info() reports, so ASan sees a pointer outside the memory. */
static void read_all(fuzz_ctx *c, const masq_tensor *t) {
  masq_tensor_desc d;
  expect(c, masq_tensor_info(c->M, t, &d), 0, "masq_tensor_info");
  if ((unsigned)d.dtype > MASQ_BFLOAT16 || d.ndim < 0 || d.ndim > MASQ_MAX_DIMS)
    fuzz_fail("masq_tensor_info gave a bad dtype or ndim", c->M);
  int64_t n = 1;
  for (int i = 0; i < d.ndim; i++) {
    if (d.shape[i] < 0 || d.strides[i] < 0) fuzz_fail("a negative size or stride", c->M);
    if (d.shape[i] > 1000000) return; /* too many to visit: trust it */
    n *= d.shape[i];
    if (n > 1000000) return;
  }
  if (n > 0 && !d.data) fuzz_fail("masq_tensor_info gave no data for elements", c->M);
  volatile uint8_t sink = 0;
  int64_t idx[MASQ_MAX_DIMS] = {0};
  for (int64_t k = 0; k < n; k++) {
    int64_t off = 0, voff = 0;
    for (int i = 0; i < d.ndim; i++) {
      off += idx[i] * d.strides[i];
      if (d.valid) voff += idx[i] * d.valid_strides[i];
    }
    const uint8_t *e = (const uint8_t *)d.data + off * (int64_t)item_size(d.dtype);
    for (size_t b = 0; b < item_size(d.dtype); b++) sink ^= e[b];
    if (d.valid) sink ^= d.valid[voff];
    for (int i = d.ndim - 1; i >= 0 && ++idx[i] == d.shape[i]; i--) idx[i] = 0;
  }
  (void)sink;
}

/* --- making tensors from host memory --------------------------------------- */

typedef struct layout {
  masq_tensor_desc d;
  int64_t shape[MASQ_MAX_DIMS + 1], strides[MASQ_MAX_DIMS + 1], vstrides[MASQ_MAX_DIMS + 1];
  int valid_desc;                         /* dtype, ndim and sizes documented ones */
  int bad_strides, bad_vstrides;          /* a negative data or mask stride */
  size_t elems_extent, valid_extent;      /* elements the buffers must hold */
} layout;

/* Elements a buffer needs for [shape] with [strides] (NULL: contiguous),
 * or SIZE_MAX if that is too many to allocate. */
static size_t extent(int ndim, const int64_t *shape, const int64_t *strides) {
  size_t last = 0, count = 1;
  for (int i = 0; i < ndim; i++)
    if (shape[i] <= 0) return 0;
  for (int i = 0; i < ndim; i++) {
    count *= (size_t)shape[i];
    if (strides) {
      if (strides[i] < 0) return 0;
      if (strides[i] > (1 << 20)) return SIZE_MAX;
      last += (size_t)(shape[i] - 1) * (size_t)strides[i];
    }
  }
  return strides ? last + 1 : count;
}

/* A stride from the input: small, negative (invalid), or huge (valid only
 * where a size is 0, since the harness can't allocate what it reaches). */
static int64_t draw_stride(fuzz_input *in, int *bad) {
  unsigned s = fuzz_byte(in);
  if (s == 255) *bad = 1;
  return s == 255 ? -1 : s == 254 ? INT64_MAX / 2 : (int64_t)(s % 4);
}

/* The elements [strides] reach for [l]'s shape; huge strides where there
 * are elements are made small, so the buffer the harness allocates is
 * what the description claims. */
static size_t fit_strides(layout *l, int64_t *strides) {
  int ndim = l->d.ndim < MASQ_MAX_DIMS ? l->d.ndim : MASQ_MAX_DIMS;
  size_t n = extent(ndim, l->shape, strides);
  if (n != SIZE_MAX) return n;
  for (int i = 0; i < ndim; i++)
    if (strides[i] > (1 << 20)) strides[i] = 1;
  return extent(ndim, l->shape, strides);
}

/* A tensor with no element addresses nothing, but kernels still scale its
 * strides by its sizes and element size: masq refuses strides whose
 * product with a size (a size 0 counting as 1) passes INT64_MAX / 16, as
 * it does for tensors with elements. */
static int too_far_for_nothing(const layout *l, const int64_t *st) {
  for (int i = 0; i < l->d.ndim; i++)
    if (st[i] > INT64_MAX / 16 / (l->shape[i] > 0 ? l->shape[i] : 1)) return 1;
  return 0;
}

static void draw_layout(fuzz_ctx *c, layout *l) {
  fuzz_input *in = &c->in;
  memset(l, 0, sizeof *l);
  unsigned kind = fuzz_byte(in);
  l->d.dtype = (masq_dtype)(kind % 11); /* 10 is no dtype */
  l->d.ndim = (int)(fuzz_byte(in) % 10);    /* 9 is too many */
  l->valid_desc = (unsigned)l->d.dtype <= MASQ_BFLOAT16 && l->d.ndim <= MASQ_MAX_DIMS;
  for (int i = 0; i < l->d.ndim; i++) {
    unsigned s = fuzz_byte(in);
    l->shape[i] = s == 255 ? -1 : (int64_t)(s % 5);
    if (l->shape[i] < 0) l->valid_desc = 0;
  }
  l->d.shape = l->d.ndim ? l->shape : NULL;
  if (kind & 8) {
    for (int i = 0; i < l->d.ndim; i++) l->strides[i] = draw_stride(in, &l->bad_strides);
    l->d.strides = l->strides;
  }
  if (kind & 16) {
    l->d.valid = (const uint8_t *)1; /* a placeholder until allocated */
    if (kind & 32) {
      for (int i = 0; i < l->d.ndim; i++) l->vstrides[i] = draw_stride(in, &l->bad_vstrides);
      l->d.valid_strides = l->vstrides;
    }
  }
  l->d.flags = kind & 64 ? MASQ_TENSOR_READONLY : 0;
  if (!l->valid_desc) return;
  if (extent(l->d.ndim, l->shape, NULL) == 0) { /* see too_far_for_nothing */
    if (l->d.strides && too_far_for_nothing(l, l->strides)) l->bad_strides = 1;
    if (l->d.valid_strides && too_far_for_nothing(l, l->vstrides)) l->bad_vstrides = 1;
  }
  l->elems_extent = l->d.strides ? fit_strides(l, l->strides) : fit_strides(l, NULL);
  if (l->d.valid)
    l->valid_extent = l->d.valid_strides ? fit_strides(l, l->vstrides) : fit_strides(l, NULL);
}

/* Allocates and fills the buffers [l] describes (bool data and masks hold
 * 0 or 1 only: other bytes are undefined by the API); [misalign] moves the
 * data pointer off the dtype's alignment. */
static host_buffer *fill_buffers(fuzz_ctx *c, layout *l, int misalign) {
  host_buffer *b = calloc(1, sizeof *b);
  if (!b) abort();
  b->c = c;
  size_t isz = item_size(l->d.dtype);
  size_t nbytes = l->elems_extent * isz + 16;
  b->data = malloc(nbytes);
  if (!b->data) abort();
  for (size_t i = 0; i < nbytes; i++) {
    unsigned v = fuzz_byte(&c->in);
    ((uint8_t *)b->data)[i] = (uint8_t)(l->d.dtype == MASQ_BOOL ? v & 1 : v);
  }
  l->d.data = (const uint8_t *)b->data + (misalign ? 1 : 0);
  if (l->d.valid) {
    size_t vbytes = l->valid_extent + 1;
    b->valid = malloc(vbytes);
    if (!b->valid) abort();
    for (size_t i = 0; i < vbytes; i++) ((uint8_t *)b->valid)[i] = (uint8_t)(fuzz_byte(&c->in) & 1);
    l->d.valid = b->valid;
  }
  return b;
}

/* Prints [l] for the report of a failed check. */
static void print_layout(const layout *l) {
  fprintf(stderr, "fuzz: dtype %d, ndim %d, data %p, valid %p, shape", (int)l->d.dtype,
          l->d.ndim, l->d.data, (const void *)l->d.valid);
  for (int i = 0; i < l->d.ndim; i++) fprintf(stderr, " %lld", (long long)l->shape[i]);
  for (int s = 0; s < 2; s++) {
    const int64_t *st = s ? l->d.valid_strides : l->d.strides;
    fprintf(stderr, s ? ", valid strides" : ", strides");
    if (!st) fprintf(stderr, " contiguous");
    for (int i = 0; st && i < l->d.ndim; i++) fprintf(stderr, " %lld", (long long)st[i]);
  }
  fprintf(stderr, "\n");
}

/* Wraps (or copies, [copy]) host buffers of a drawn layout. The contract:
 * an invalid description, a misaligned data pointer to elements, or a NULL
 * one to elements for a wrap is MASQ_ERR_USAGE; anything else works. */
static void op_wrap(fuzz_ctx *c, int copy) {
  layout l;
  draw_layout(c, &l);
  unsigned pointer = fuzz_byte(&c->in);
  int misalign = pointer == 0 && item_size(l.d.dtype) > 1, null_data = pointer == 1;
  host_buffer *b = fill_buffers(c, &l, misalign);
  if (null_data) l.d.data = NULL;
  int has_elems = l.valid_desc && extent(l.d.ndim, l.shape, NULL) > 0;
  /* A NULL buffer for masq_tensor_new means zeros: its strides don't matter. */
  int must_fail = !l.valid_desc || (l.bad_strides && !(copy && null_data)) || l.bad_vstrides ||
                  (has_elems && (misalign || (null_data && !copy)));
  /* A misaligned pointer to no elements may go either way. */
  unsigned allowed = must_fail || misalign ? ALLOW(MASQ_ERR_USAGE) : 0;
  masq_tensor *t = NULL;
  masq_status st;
  if (copy) {
    st = masq_tensor_new(c->M, &l.d, &t);
  } else {
    l.d.release = release_buffer;
    l.d.release_ud = b;
    c->unreleased++;
    st = masq_tensor_wrap(c->M, &l.d, &t);
  }
  const char *what = copy ? "masq_tensor_new" : "masq_tensor_wrap";
  if ((st != MASQ_OK && !(allowed & ALLOW(st))) || (must_fail && st == MASQ_OK))
    print_layout(&l);
  expect(c, st, allowed, what);
  if (must_fail && st == MASQ_OK) fuzz_fail("an invalid tensor description was accepted", c->M);
  if ((st == MASQ_OK) != (t != NULL)) fuzz_fail("*out does not match the status", c->M);
  if (copy) {
    free_buffer(b); /* masq only read it during the call */
  } else if (st != MASQ_OK) {
    release_buffer(b); /* a failed wrap leaves the buffer with the host */
  }
  if (t) {
    read_all(c, t);
    keep(c, t);
  }
}

/* --- host functions ---------------------------------------------------------- */

static const char *const snippets[] = {
    "g0 = ones(3) * 2",
    "g1 = masked(arange(6.0).reshape(2, 3), [[true, false, true], [false, true, true]])",
    "fn f(a, b=2) = a * b",
    "g2 = f(g0)",
    "g0 = hf1(g1)",
    "g1 = hf3(1, 2, 3)",
    "while true { }",
    "g0 = [1, 2, 3]",
    "g1 = \"text\"",
    "g2 = none",
    "g0 = hf0(g1, hf2(g0))",
    "g2 = sum(g0) + hf4(b=false)",
    "fn f(x) { return hf5(x, x) }",
    "g1 = f(g2)",
    "g0 = requires_grad(ones(2, 2))\ng1 = sum(g0 * g0)",
    "g2 = [g0, g1, \"s\", [none]]",
};
#define NSNIPPETS (int)(sizeof snippets / sizeof *snippets)

static void eval_text(fuzz_ctx *c, const char *src, size_t len) {
  c->budget.polls = 0;
  masq_status st = masq_eval(c->M, src, len, "api.masq", fuzz_byte(&c->in) & 1 ? MASQ_EVAL_ECHO : 0);
  fuzz_check_status(c->M, st, "masq_eval", 1);
}

static masq_status host_function(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                 masq_tensor **result) {
  hostfn *h = ud;
  fuzz_ctx *c = h->c;
  if (M != c->M) fuzz_fail("a host function got another state", c->M);
  if (argc < 0 || argc > 255 || (argc && !argv) || !result || *result)
    fuzz_fail("a host function got bad arguments", c->M);
  for (int i = 0; i < argc; i++)
    if (argv[i]) read_all(c, argv[i]);
  switch (h->behaviour) {
  case 0:
    if (argc && argv[0]) {
      expect(c, masq_tensor_retain(M, argv[0]), 0, "masq_tensor_retain");
      *result = argv[0];
    }
    return MASQ_OK;
  case 1: return masq_errorf(M, "host function %d of %d arguments says no", (int)h->behaviour, argc);
  case 2: return masq_tensor_scalar(M, argc, result);
  case 3: return MASQ_ERR_MEMORY;
  case 4: return MASQ_ERR_INTERRUPTED;
  case 5: return (masq_status)42; /* not a status: a runtime error */
  case 6:
    if (argc && argv[0]) { /* keep an argument past the call */
      expect(c, masq_tensor_retain(M, argv[0]), 0, "masq_tensor_retain");
      keep(c, argv[0]);
    }
    return MASQ_OK;
  default:
    if (c->depth < MAX_DEPTH) { /* call back into masq */
      c->depth++;
      const char *src = snippets[fuzz_byte(&c->in) % NSNIPPETS];
      check(c, masq_eval(M, src, strlen(src), "nested.masq", 0), "nested masq_eval");
      c->depth--;
    }
    return masq_tensor_scalar(M, 1, result);
  }
}

static const char *const signatures[] = {
    "hf0", "hf1(x)", "hf2(x, y=1)", "hf3(x, *rest)", "hf4(a=none, b=true)", "hf5(p, q=-2.5)",
    /* invalid ones */
    "1bad", "hf(x", "if", "hf(x, x)", "hf(*a, *b)", "hf(x y)", "hf(x=[1])", "",
    /* replacing builtins */
    "sum(x)", "print",
};
#define NSIGNATURES (int)(sizeof signatures / sizeof *signatures)
#define NVALID_SIGNATURES 6

static void op_register(fuzz_ctx *c) {
  int k = (int)(fuzz_byte(&c->in) % NSIGNATURES);
  hostfn *h = &c->fns[k % 6];
  h->behaviour = fuzz_byte(&c->in) % 8;
  masq_status st = masq_register(c->M, signatures[k], host_function, h, k & 1 ? "doc" : NULL);
  unsigned allowed = k < NVALID_SIGNATURES || k >= NSIGNATURES - 2 ? 0 : ALLOW(MASQ_ERR_USAGE);
  expect(c, st, allowed, "masq_register");
  if (allowed && st == MASQ_OK) fuzz_fail("an invalid signature was accepted", c->M);
}

/* --- the other operations -------------------------------------------------- */

static const char *const names[] = {"g0", "g1", "g2", "f", "hf1", "sum", "none_such",
                                    "if", "", "a b", "fuzz_probe_", "pi"};
#define NNAMES (int)(sizeof names / sizeof *names)
#define NVALID_NAMES 7 /* the rest are not identifiers or are keywords, or builtins */

static const char *name(fuzz_ctx *c) { return names[fuzz_byte(&c->in) % NNAMES]; }

static void op_call(fuzz_ctx *c) {
  static const char *const fns[] = {"f", "hf0", "hf1", "hf2", "hf3", "hf4", "hf5",
                                    "sum", "softmax", "matmul", "g0", "nosuch", "print"};
  const char *fname = fns[fuzz_byte(&c->in) % (sizeof fns / sizeof *fns)];
  int argc = (int)(fuzz_byte(&c->in) % 4);
  masq_tensor *argv[3];
  for (int i = 0; i < argc; i++)
    if (!(argv[i] = pick(c))) argc = i;
  masq_tensor *result = NULL, **out = fuzz_byte(&c->in) & 1 ? &result : NULL;
  c->budget.polls = 0;
  masq_status st = masq_call(c->M, fname, argc, argv, out);
  check(c, st, "masq_call");
  if (st != MASQ_OK && result) fuzz_fail("masq_call failed but gave a result", c->M);
  if (result) read_all(c, result);
  keep(c, result);
}

static void op_strings(fuzz_ctx *c) {
  static const char *const strs[] = {"", "a", "text with \"quotes\"", "%s%n%d", "\xff\xfe"};
  const char *list[3];
  int n = (int)(fuzz_byte(&c->in) % 4);
  for (int i = 0; i < n; i++) list[i] = strs[fuzz_byte(&c->in) % 5];
  /* A length one past strlen takes the terminating NUL in: a string that
   * holds a NUL byte. */
  size_t lens[3];
  for (int i = 0; i < n; i++) lens[i] = strlen(list[i]) + (fuzz_byte(&c->in) & 1);
  switch (fuzz_byte(&c->in) % 4) {
  case 0: check(c, masq_set_strings(c->M, name(c), n, list), "masq_set_strings"); break;
  case 1: check(c, masq_set_string(c->M, name(c), n ? list[0] : NULL), "masq_set_string"); break;
  case 2: check(c, masq_set_lstrings(c->M, name(c), n, list, lens), "masq_set_lstrings"); break;
  default:
    check(c, masq_set_lstring(c->M, name(c), n ? list[0] : NULL, n ? lens[0] : 0),
          "masq_set_lstring");
  }
}

static void op_get_string(fuzz_ctx *c) {
  char buf[8];
  size_t size = fuzz_byte(&c->in) % 9, len = 12345;
  masq_status st = masq_get_string(c->M, name(c), size ? buf : NULL, size, &len);
  check(c, st, "masq_get_string");
  if (st == MASQ_OK && size) {
    size_t cut = len < size - 1 ? len : size - 1;
    if (buf[cut] != '\0' || strlen(buf) > cut) fuzz_fail("masq_get_string: bad NUL", c->M);
  }
}

static void op_tensor(fuzz_ctx *c, unsigned what) {
  masq_tensor *t = pick(c), *out = NULL;
  masq_status st;
  double v;
  switch (what) {
  case 0:
    if (!t) return;
    read_all(c, t);
    return;
  case 1:
    if (!t) return;
    expect(c, st = masq_tensor_contiguous(c->M, t, &out), 0, "masq_tensor_contiguous");
    if (out) read_all(c, out);
    keep(c, out);
    return;
  case 2:
    if (t) expect(c, masq_tensor_item(c->M, t, &v), ALLOW(MASQ_ERR_RUNTIME), "masq_tensor_item");
    return;
  case 3:
    if (!t) return;
    expect(c, masq_tensor_retain(c->M, t), 0, "masq_tensor_retain");
    keep(c, t);
    return;
  case 4:
    if (c->nlive) release_slot(c, (int)(fuzz_byte(&c->in) % (unsigned)c->nlive));
    return;
  case 5: /* a pointer the harness holds no reference to any more */
    if (!c->ndead) return;
    t = c->dead[fuzz_byte(&c->in) % (unsigned)c->ndead];
    if (held(c, t)) return;
    st = masq_tensor_release(c->M, t);
    check(c, st, "masq_tensor_release of a released handle");
    if (st != MASQ_ERR_USAGE) fuzz_fail("releasing a released handle was not a usage error", c->M);
    return;
  case 6:
    expect(c, masq_tensor_scalar(c->M, (double)(int8_t)fuzz_byte(&c->in) / 4, &out), 0,
           "masq_tensor_scalar");
    keep(c, out);
    return;
  case 7:
    if (!t) return;
    check(c, masq_requires_grad(c->M, t, &out), "masq_requires_grad");
    keep(c, out);
    return;
  case 8:
    if (!t) return;
    c->budget.polls = 0;
    check(c, masq_backward(c->M, t), "masq_backward");
    return;
  default:
    if (!t) return;
    check(c, masq_grad(c->M, t, &out), "masq_grad");
    if (out) read_all(c, out);
    keep(c, out);
    return;
  }
}

static void op_globals(fuzz_ctx *c, unsigned what) {
  masq_tensor *out = NULL;
  double v;
  switch (what) {
  case 0: {
    const char *gname = name(c);
    check(c, masq_set_global(c->M, gname, fuzz_byte(&c->in) & 1 ? pick(c) : NULL), "masq_set_global");
    return;
  }
  case 1:
    check(c, masq_get_global(c->M, name(c), &out), "masq_get_global");
    if (out) read_all(c, out);
    keep(c, out);
    return;
  case 2: {
    const char *gname = name(c);
    check(c, masq_set_number(c->M, gname, (double)(int8_t)fuzz_byte(&c->in) / 3), "masq_set_number");
    return;
  }
  case 3: { /* small, huge and extreme ints */
    const char *gname = name(c);
    uint64_t bits = (uint64_t)(int64_t)(int8_t)fuzz_byte(&c->in);
    bits <<= fuzz_byte(&c->in) % 64;
    check(c, masq_set_int(c->M, gname, (int64_t)bits), "masq_set_int");
    return;
  }
  case 4: { /* a number, and which object the global holds (the same name: no input used) */
    const char *gname = name(c);
    uint64_t id = 1;
    check(c, masq_get_number(c->M, gname, &v), "masq_get_number");
    masq_status st = masq_get_identity(c->M, gname, &id);
    check(c, st, "masq_get_identity");
    if (st != MASQ_OK && id != 0) fuzz_fail("masq_get_identity failed with an identity", c->M);
    return;
  }
  case 5: op_strings(c); return;
  default: op_get_string(c); return;
  }
}

static void count_name(void *ud, const char *n) {
  if (!n || !*n) fuzz_fail("masq_complete gave an empty name", NULL);
  ++*(int *)ud;
}

static void count_global(void *ud, const char *n, const char *summary) {
  if (!n || !summary) fuzz_fail("masq_globals gave a NULL string", NULL);
  ++*(int *)ud;
}

static void op_misc(fuzz_ctx *c, unsigned what) {
  int n = 0;
  switch (what) {
  case 0: { /* source from the input itself */
    size_t len = fuzz_byte(&c->in) % 64;
    if (len > c->in.n) len = c->in.n;
    const char *src = (const char *)c->in.p;
    c->in.p += len;
    c->in.n -= len;
    eval_text(c, src, len);
    return;
  }
  case 1: {
    const char *src = snippets[fuzz_byte(&c->in) % NSNIPPETS];
    eval_text(c, src, strlen(src));
    return;
  }
  case 2: {
    masq_interrupt(c->M);
    const char *src = snippets[fuzz_byte(&c->in) % NSNIPPETS];
    eval_text(c, src, strlen(src));
    return;
  }
  case 3: {
    const char *src = snippets[fuzz_byte(&c->in) % NSNIPPETS];
    check(c, masq_disassemble(c->M, src, strlen(src), NULL), "masq_disassemble");
    return;
  }
  case 4: masq_complete(c->M, fuzz_byte(&c->in) & 1 ? "" : "s", count_name, &n); return;
  case 5: masq_globals(c->M, count_global, &n); return;
  default: (void)masq_doc(c->M, name(c)); return;
  }
}

static void run_ops(fuzz_ctx *c) {
  while (c->in.n) {
    unsigned op = fuzz_byte(&c->in);
    c->budget.polls = 0;
    switch (op % 6) {
    case 0: op_wrap(c, op & 8); break;
    case 1: op_register(c); break;
    case 2: op_call(c); break;
    case 3: op_tensor(c, (op >> 3) % 10); break;
    case 4: op_globals(c, (op >> 3) % 7); break;
    default: op_misc(c, (op >> 3) % 7); break;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_ctx c;
  memset(&c, 0, sizeof c);
  c.in = (fuzz_input){data, size};
  for (int i = 0; i < 6; i++) c.fns[i].c = &c;
  static int alloc_failures = -1;
  if (alloc_failures < 0) {
    const char *e = getenv("FUZZ_ALLOC_FAILURES");
    alloc_failures = !(e && strcmp(e, "0") == 0);
  }
  unsigned first = fuzz_byte(&c.in);
  if (first & 128) {
    unsigned k = fuzz_byte(&c.in);
    k |= fuzz_byte(&c.in) << 8;
    if (alloc_failures) c.alloc.fail_at = k;
  }

  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = checking_alloc;
  cfg.alloc_ud = &c.alloc;
  cfg.memory_limit = FUZZ_MEMORY_LIMIT;
  cfg.interrupt = fuzz_interrupt_hook;
  cfg.interrupt_ud = &c.budget;
  cfg.write = fuzz_discard;
  c.budget.limit = FUZZ_POLL_BUDGET;
  setenv("MASQ_NUM_THREADS", "1", 0);
  c.M = masq_open(&cfg);
  if (!c.M) {
    if (!c.alloc.fail_at) fuzz_fail("masq_open failed", NULL);
    if (c.alloc.live_bytes) fuzz_fail("a failed masq_open kept memory", NULL);
    return 0;
  }
  run_ops(&c);
  /* One failed allocation may hit the probe itself; the second try must work. */
  if (!fuzz_state_works(c.M, &c.budget) && !fuzz_state_works(c.M, &c.budget))
    fuzz_fail("the state is out of memory at the end", c.M);
  while (c.nlive && (c.nlive & 1)) release_slot(&c, 0); /* some left to masq_close */
  masq_close(c.M);
  if (c.unreleased) fuzz_fail("a wrapped buffer's release callback never ran", NULL);
  if (c.alloc.live_bytes) fuzz_fail("masq_close left memory allocated", NULL);
  return 0;
}
