/* einsum.c - Einstein summation as sums, permutes, reshapes and matmuls
 * (see shape_more.h).
 *
 * Labels are numbered A-Z 0..25, a-z 26..51 (ASCII order, which the
 * implicit output follows), and the dims "..." stands for 52 + j, j
 * counted from the right, so ellipses of different lengths line up as
 * broadcasting does. Operands are combined left to right: labels only one
 * side has and nobody needs later are summed out first (mq_reduce: masked
 * terms skipped), then the pair is one batched matmul whose batch is the
 * labels both sides keep, whose contraction is the labels both have and
 * nobody needs later. A matmul's masked entry is "no valid pair", a sum's
 * "no valid entry": together, an output entry is valid when some product
 * term has all its factors valid, and it sums those terms. */
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "../tensor/shape.h"
#include "shape_more.h"

#define NLET 52
#define NLAB (NLET + MQ_MAX_DIMS)

typedef struct labels {
  int n;
  uint8_t id[MQ_MAX_DIMS * 2]; /* an intermediate may briefly hold more: checked */
} labels;

typedef struct spec {
  const char *s;
  size_t len;
  int nops;
  labels in[MQ_MAX_DIMS * 4];
  int ell_at[MQ_MAX_DIMS * 4]; /* where "..." starts among the labels, -1: none */
  labels out;
  bool explicit_out;
  int out_ell; /* where "..." is in the output, -1: none */
} spec;

#define MAX_OPS (MQ_MAX_DIMS * 4)

static MQ_NORETURN void bad(mq_state *S, const spec *P, size_t at, const char *what) {
  mq_error(S, "einsum: %s at character %zu of the spec \"%.*s\"", what, at + 1,
           (int)(P->len > 200 ? 200 : P->len), P->s);
}

static int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

static char id_char(int id) { return id < 26 ? (char)('A' + id) : (char)('a' + id - 26); }

/* One term (an operand's or the output's labels) from [*i] to a ',' or
 * '-' or the end; spaces are skipped. */
static void parse_term(mq_state *S, spec *P, size_t *i, labels *l, int *ell, bool output) {
  l->n = 0;
  *ell = -1;
  while (*i < P->len && P->s[*i] != ',' && P->s[*i] != '-') {
    char c = P->s[*i];
    if (c == ' ') {
      (*i)++;
      continue;
    }
    if (c == '.') {
      if (*i + 2 >= P->len || P->s[*i + 1] != '.' || P->s[*i + 2] != '.')
        bad(S, P, *i, "'.' is not part of an ellipsis '...'");
      if (*ell >= 0) bad(S, P, *i, "a second '...' in one term");
      *ell = l->n;
      *i += 3;
      continue;
    }
    int id = letter_id(c);
    if (id < 0) {
      char what[64];
      snprintf(what, sizeof what, "'%c' is not a label (labels are a-z and A-Z)", c);
      bad(S, P, *i, (unsigned char)c < 32 || (unsigned char)c > 126
                        ? "a character that is not a label (labels are a-z and A-Z)" : what);
    }
    if (output)
      for (int k = 0; k < l->n; k++)
        if (l->id[k] == id) {
          char what[64];
          snprintf(what, sizeof what, "label '%c' appears twice in the output", c);
          bad(S, P, *i, what);
        }
    if (l->n == MQ_MAX_DIMS) bad(S, P, *i, "more labels than a tensor has dims (8)");
    l->id[l->n++] = (uint8_t)id;
    (*i)++;
  }
}

static void parse(mq_state *S, spec *P, int nops) {
  size_t i = 0;
  P->nops = 0;
  for (;;) {
    if (P->nops == MAX_OPS) bad(S, P, i, "too many operands");
    parse_term(S, P, &i, &P->in[P->nops], &P->ell_at[P->nops], false);
    P->nops++;
    if (i < P->len && P->s[i] == ',') {
      i++;
      continue;
    }
    break;
  }
  P->explicit_out = false;
  P->out_ell = -1;
  if (i < P->len) { /* a '-' */
    if (i + 1 >= P->len || P->s[i + 1] != '>') bad(S, P, i, "'-' is not part of '->'");
    i += 2;
    P->explicit_out = true;
    parse_term(S, P, &i, &P->out, &P->out_ell, true);
    if (i < P->len)
      bad(S, P, i, P->s[i] == ',' ? "',' after '->' (the output is one term)" : "a second '->'");
  }
  if (P->nops != nops)
    mq_error(S, "einsum: the spec \"%.*s\" has %d operand%s but %d tensor%s given",
             (int)(P->len > 200 ? 200 : P->len), P->s, P->nops, P->nops == 1 ? "" : "s", nops,
             nops == 1 ? " was" : "s were");
}

/* Sums [t] over the labels [drop] says, removing them from [l]. */
static mq_tensor *sum_out(mq_state *S, mq_tensor *t, labels *l, const bool *drop) {
  int dims[MQ_MAX_DIMS], nd = 0, k = 0;
  for (int d = 0; d < l->n; d++) {
    if (drop[l->id[d]]) dims[nd++] = d;
    else l->id[k++] = l->id[d];
  }
  if (nd == 0) return t;
  l->n = k;
  return mq_reduce(S, MQ_RED_SUM, t, nd, dims, false);
}

/* [t] (labels [l]) with its dims in the order of [order] ([n] labels that
 * are exactly l's), reshaped to [ngroups] dims of the sizes of the groups
 * of consecutive labels [counts] gives; ngroups 0: no reshape. */
static mq_tensor *arrange(mq_state *S, mq_tensor *t, const labels *l, const uint8_t *order, int n,
                          const int *counts, int ngroups) {
  int64_t perm[MQ_MAX_DIMS];
  bool same = true;
  for (int k = 0; k < n; k++) {
    for (int d = 0; d < l->n; d++)
      if (l->id[d] == order[k]) perm[k] = d;
    same &= perm[k] == k;
  }
  if (!same) t = mq_permute(S, t, n, perm);
  if (!ngroups) return t;
  int64_t shape[3];
  for (int g = 0, at = 0; g < ngroups; g++) {
    shape[g] = 1;
    for (int k = 0; k < counts[g]; k++) shape[g] *= t->shape[at++]; /* within t's numel */
  }
  return mq_reshape(S, t, ngroups, shape);
}

/* The pair [a] (labels la) and [b] (lb) contracted: [need] marks the
 * labels the output or a later operand has. */
static mq_tensor *pair(mq_state *S, mq_tensor *a, labels *la, mq_tensor *b, labels *lb,
                       const bool *need, labels *lo) {
  bool ina[NLAB] = {0}, inb[NLAB] = {0}, drop[NLAB];
  for (int d = 0; d < la->n; d++) ina[la->id[d]] = true;
  for (int d = 0; d < lb->n; d++) inb[lb->id[d]] = true;
  for (int i = 0; i < NLAB; i++) drop[i] = ina[i] && !inb[i] && !need[i];
  a = sum_out(S, a, la, drop);
  for (int i = 0; i < NLAB; i++) drop[i] = inb[i] && !ina[i] && !need[i];
  b = sum_out(S, b, lb, drop);
  /* batch (both, needed), left (a only), contracted (both, not needed), right (b only) */
  uint8_t bat[MQ_MAX_DIMS], lef[MQ_MAX_DIMS], con[MQ_MAX_DIMS], rig[MQ_MAX_DIMS];
  int nb = 0, nl = 0, nc = 0, nr = 0;
  for (int d = 0; d < la->n; d++) {
    int id = la->id[d];
    if (!inb[id]) lef[nl++] = (uint8_t)id;
    else if (need[id]) bat[nb++] = (uint8_t)id;
    else con[nc++] = (uint8_t)id;
  }
  for (int d = 0; d < lb->n; d++)
    if (!ina[lb->id[d]]) rig[nr++] = lb->id[d];
  if (nb + nl + nr > MQ_MAX_DIMS)
    mq_error(S, "einsum: an intermediate result would have %d dims, more than tensors have (%d); "
                "reorder the operands", nb + nl + nr, MQ_MAX_DIMS);
  uint8_t oa[MQ_MAX_DIMS], ob[MQ_MAX_DIMS];
  memcpy(oa, bat, (size_t)nb), memcpy(oa + nb, lef, (size_t)nl), memcpy(oa + nb + nl, con, (size_t)nc);
  memcpy(ob, bat, (size_t)nb), memcpy(ob + nb, con, (size_t)nc), memcpy(ob + nb + nc, rig, (size_t)nr);
  int ca[3] = {nb, nl, nc}, cb[3] = {nb, nc, nr};
  mq_tensor *A = arrange(S, a, la, oa, la->n, ca, 3), *B = arrange(S, b, lb, ob, lb->n, cb, 3);
  /* two bools: "some term is true" (matmul has no bool product; a count
   * of true terms cannot overflow int64); torch 1.13 refuses a bool
   * product that sums (docs/DIFFERENCES.md) */
  bool logical = A->dtype == MQ_DT_BOOL && B->dtype == MQ_DT_BOOL;
  if (logical) A = mq_astype(S, A, MQ_DT_I64), B = mq_astype(S, B, MQ_DT_I64);
  mq_tensor *P = mq_matmul(S, A, B);
  if (logical) P = mq_astype(S, P, MQ_DT_BOOL);
  int64_t shape[MQ_MAX_DIMS];
  lo->n = 0;
  for (int k = 0; k < nb + nl; k++) {
    int id = oa[k], d = 0;
    while (la->id[d] != id) d++;
    shape[lo->n] = a->shape[d];
    lo->id[lo->n++] = (uint8_t)id;
  }
  for (int k = 0; k < nr; k++) {
    int id = rig[k], d = 0;
    while (lb->id[d] != id) d++;
    shape[lo->n] = b->shape[d];
    lo->id[lo->n++] = (uint8_t)id;
  }
  return mq_reshape(S, P, lo->n, shape);
}

/* The operands' labels with "..." expanded; checks each operand's ndim. */
static void expand_ellipses(mq_state *S, spec *P, mq_tensor *const *ops, int *nell) {
  *nell = 0;
  for (int k = 0; k < P->nops; k++) {
    labels *l = &P->in[k];
    int nd = ops[k]->ndim;
    if (P->ell_at[k] < 0 ? nd != l->n : nd < l->n)
      mq_error(S, "einsum: operand %d has %d dims but its term in \"%.*s\" names %d%s", k, nd,
               (int)(P->len > 200 ? 200 : P->len), P->s, l->n,
               P->ell_at[k] < 0 ? "" : " and '...' the rest");
    if (P->ell_at[k] < 0) continue;
    int e = nd - l->n, at = P->ell_at[k];
    memmove(l->id + at + e, l->id + at, (size_t)(l->n - at));
    for (int j = 0; j < e; j++) l->id[at + j] = (uint8_t)(NLET + (e - 1 - j));
    l->n = nd;
    if (e > *nell) *nell = e;
  }
}

/* [t] (operand [k], labels [l]) with each label its term repeats taken
 * along the diagonal ("ii->i"): the entries off it are dropped (masked
 * out, or 0 for a plain [t]) and the second dim summed away, so a diagonal
 * entry keeps its value and validity. */
static mq_tensor *diagonals(mq_state *S, mq_tensor *t, labels *l, int k) {
  for (int i = 1; i < l->n; i++)
    for (int j = 0; j < i; j++) {
      if (l->id[i] != l->id[j]) continue;
      int64_t n = t->shape[j];
      if (t->shape[i] != n)
        mq_error(S, "einsum: label '%c' is repeated in operand %d over dims of sizes %lld and "
                    "%lld (a diagonal needs equal sizes)", id_char(l->id[i]), k,
                 (long long)n, (long long)t->shape[i]);
      int64_t shape[MQ_MAX_DIMS];
      for (int d = 0; d < t->ndim; d++) shape[d] = d == i || d == j ? n : 1;
      mq_tensor *eye = mq_tensor_full(S, MQ_DT_BOOL, t->ndim, shape, 0);
      uint8_t *e = mq_tensor_data(eye);
      int64_t sti = 1, stj = 1; /* strides of dims i and j in the contiguous eye */
      for (int d = t->ndim - 1; d > i; d--) sti *= shape[d];
      for (int d = t->ndim - 1; d > j; d--) stj *= shape[d];
      for (int64_t q = 0; q < n; q++) e[q * sti + q * stj] = 1;
      mq_tensor *off = mq_tensor_scalar(S, (mq_dtype)t->dtype, 0);
      if (t->mask) off = mq_masked(S, off, mq_tensor_scalar(S, MQ_DT_BOOL, 0));
      int dim = i;
      mq_dtype dt = (mq_dtype)t->dtype;
      t = mq_reduce(S, MQ_RED_SUM, mq_where(S, eye, t, off), 1, &dim, false);
      if (dt == MQ_DT_BOOL) t = mq_astype(S, t, dt); /* one term: a bool diagonal stays bool */
      memmove(l->id + i, l->id + i + 1, (size_t)(l->n - i - 1));
      l->n--;
      i = 0; /* look again from the start: the dims moved */
      break;
    }
  return t;
}

mq_tensor *mq_einsum(mq_state *S, const char *s, size_t len, int n, mq_tensor *const *ops) {
  if (n < 1) mq_error(S, "einsum: give at least one operand after the spec");
  spec *P = mq_scratch(S, sizeof *P);
  P->s = s, P->len = len;
  parse(S, P, n);
  int nell;
  expand_ellipses(S, P, ops, &nell);
  /* how often each label is written: the implicit output has those used once */
  int count[NLAB] = {0};
  for (int k = 0; k < n; k++)
    for (int d = 0; d < P->in[k].n; d++) count[P->in[k].id[d]]++;
  mq_tensor **t = mq_scratch(S, (size_t)n * sizeof *t);
  for (int k = 0; k < n; k++) t[k] = diagonals(S, ops[k], &P->in[k], k);

  /* sizes: each label's, size-1 dims broadcast to it */
  int64_t size[NLAB];
  for (int i = 0; i < NLAB; i++) size[i] = -1;
  for (int k = 0; k < n; k++)
    for (int d = 0; d < P->in[k].n; d++) {
      int id = P->in[k].id[d];
      int64_t z = t[k]->shape[d];
      if (size[id] < 0 || size[id] == 1) size[id] = z;
      else if (z != 1 && z != size[id]) {
        if (id < NLET)
          mq_error(S, "einsum: label '%c' has size %lld in operand %d but %lld before", id_char(id),
                   (long long)z, k, (long long)size[id]);
        mq_error(S, "einsum: the dims of '...' do not broadcast (operand %d has shape %s)", k,
                 mq_shape_str(S, ops[k]->ndim, ops[k]->shape));
      }
    }

  /* the output labels */
  labels out = {0};
  if (P->explicit_out) {
    for (int k = 0; k <= P->out.n; k++) {
      if (k == P->out_ell)
        for (int e = nell - 1; e >= 0; e--) out.id[out.n++] = (uint8_t)(NLET + e);
      if (k == P->out.n) break;
      int id = P->out.id[k];
      if (!count[id])
        mq_error(S, "einsum: output label '%c' is in no operand of \"%.*s\"", id_char(id),
                 (int)(P->len > 200 ? 200 : P->len), P->s);
      out.id[out.n++] = (uint8_t)id;
    }
  } else {
    for (int e = nell - 1; e >= 0; e--) out.id[out.n++] = (uint8_t)(NLET + e);
    for (int id = 0; id < NLET; id++)
      if (count[id] == 1) {
        if (out.n == MQ_MAX_DIMS)
          mq_error(S, "einsum: the output would have more than %d dims", MQ_MAX_DIMS);
        out.id[out.n++] = (uint8_t)id;
      }
  }
  if (out.n > MQ_MAX_DIMS) mq_error(S, "einsum: the output would have more than %d dims", MQ_MAX_DIMS);

  /* operands broadcast to the labels' sizes */
  for (int k = 0; k < n; k++) {
    int64_t shape[MQ_MAX_DIMS];
    for (int d = 0; d < P->in[k].n; d++) shape[d] = size[P->in[k].id[d]];
    t[k] = mq_expand(S, t[k], P->in[k].n, shape);
  }
  bool need[NLAB] = {0};
  for (int k = 0; k < out.n; k++) need[out.id[k]] = true;

  mq_tensor *cur = t[0];
  labels cl = P->in[0];
  for (int k = 1; k < n; k++) {
    bool later[NLAB];
    memcpy(later, need, sizeof later);
    for (int j = k + 1; j < n; j++)
      for (int d = 0; d < P->in[j].n; d++) later[P->in[j].id[d]] = true;
    labels lb = P->in[k], lo;
    cur = pair(S, cur, &cl, t[k], &lb, later, &lo);
    cl = lo;
  }
  bool drop[NLAB];
  for (int i = 0; i < NLAB; i++) drop[i] = !need[i];
  cur = sum_out(S, cur, &cl, drop);
  return arrange(S, cur, &cl, out.id, out.n, NULL, 0);
}
