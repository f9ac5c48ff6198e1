/* autograd.c - leaves and the backward engine (gradients accumulated per
 * tensor, graphs freed). Recording is tape.c's; the derivatives are
 * backward.c's. */
#include "autograd.h"

#include <math.h>

#include "../tensor/internal.h"
#include "../tensor/layout.h"
#include "../tensor/parallel.h"
#include "../tensor/shape.h"

/* --- gradient tensors ------------------------------------------------------ */

/* During backward every gradient is a tensor of its tensor's shape, with a
 * contiguous mask or none: float64, or float32 for a float32 tensor where
 * the derivatives have float32 kernels, contiguous or one value broadcast
 * (backward.h). It is converted to the tensor's dtype (and made
 * contiguous) only when it leaves the engine. */

mq_tensor *mq_ag_gnew(mq_state *S, int ndim, const int64_t *shape) {
  return mq_tensor_new(S, MQ_DT_F64, ndim, shape);
}

const uint8_t *mq_ag_maskp(mq_state *S, mq_tensor *t) {
  if (!t->mask) return NULL;
  return mq_tensor_data(mq_contiguous(S, t->mask));
}

uint8_t *mq_ag_new_mask(mq_state *S, mq_tensor *g) {
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, g->ndim, g->shape);
  if (g->mask) mq_obj_release(S, &g->mask->hdr);
  g->mask = NULL;
  mq_tensor_set_mask(S, g, m);
  return mq_tensor_data(m);
}

/* [g] contiguous, in [dt] (float32 or float64), its mask kept. */
static mq_tensor *grad_as(mq_state *S, mq_tensor *g, mq_dtype dt) {
  if (g->dtype == dt && mq_tensor_is_contiguous(g)) return g;
  mq_tensor *out = mq_tensor_new(S, dt, g->ndim, g->shape);
  mq_kernel_convert(S, out, g);
  if (g->mask) mq_tensor_set_mask(S, out, mq_contiguous(S, g->mask));
  return out;
}

/* o = a + b where either is valid (one side alone where only it is; the
 * mask in m), in T. */
#define DEF_ADD_GRADS(NAME, T)                                                 \
  static void NAME(T *o, uint8_t *m, const T *x, const T *y, const uint8_t *ma, \
                   const uint8_t *mb, int64_t n) {                             \
    if (!m) {                                                                  \
      for (int64_t i = 0; i < n; i++) o[i] = x[i] + y[i];                      \
      return;                                                                  \
    }                                                                          \
    for (int64_t i = 0; i < n; i++) {                                          \
      bool va = !ma || ma[i], vb = !mb || mb[i];                               \
      T u = x[i], v = y[i];                                                    \
      o[i] = (va ? u : (T)0) + (vb ? v : (T)0);                                \
      m[i] = va || vb;                                                         \
    }                                                                          \
  }
DEF_ADD_GRADS(add_grads_f32, float)
DEF_ADD_GRADS(add_grads_f64, double)

/* Entries [lo, hi) of an accumulation (each on its own: the threads share
 * them out), or of a mask and (x NULL: m = ma & mb, or the one there is). */
typedef struct add_job {
  void *o;
  uint8_t *m;
  const void *x, *y;
  const uint8_t *ma, *mb;
  bool f32;
} add_job;

static void add_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const add_job *J = ctx;
  uint8_t *m = J->m ? J->m + lo : NULL;
  const uint8_t *ma = J->ma ? J->ma + lo : NULL, *mb = J->mb ? J->mb + lo : NULL;
  if (!J->x) { /* mask bytes are 0 or 1: & without branches */
    if (ma && mb)
      for (int64_t i = 0; i < hi - lo; i++) m[i] = ma[i] & mb[i];
    else
      memcpy(m, ma ? ma : mb, (size_t)(hi - lo));
  } else if (J->f32) {
    add_grads_f32((float *)J->o + lo, m, (const float *)J->x + lo, (const float *)J->y + lo, ma, mb,
                  hi - lo);
  } else {
    add_grads_f64((double *)J->o + lo, m, (const double *)J->x + lo, (const double *)J->y + lo, ma,
                  mb, hi - lo);
  }
}

static void add_run(mq_state *S, int64_t n, add_job *J) {
  mq_parallel_for(S, mq_parallel_threads_for(S, n), n, MQ_PAR_GRAIN, add_range, J);
}

/* Two float32 gradients add in float32 (each sum rounded once, as float32
 * addition is); any other pair in float64. */
mq_tensor *mq_ag_accumulate(mq_state *S, mq_tensor *a, mq_tensor *b) {
  MQ_ASSERT(mq_tensor_same_shape(a, b) && a->layout == b->layout); /* two gradients of one tensor */
  if (a->sparse) return mq_ag_sparse_accumulate(S, a, b);
  mq_dtype dt = a->dtype == MQ_DT_F32 && b->dtype == MQ_DT_F32 ? MQ_DT_F32 : MQ_DT_F64;
  a = grad_as(S, a, dt), b = grad_as(S, b, dt);
  mq_tensor *out = mq_tensor_new(S, dt, a->ndim, a->shape);
  const uint8_t *ma = mq_ag_maskp(S, a), *mb = mq_ag_maskp(S, b);
  uint8_t *m = ma || mb ? mq_ag_new_mask(S, out) : NULL;
  add_job J = {mq_tensor_data(out), m, mq_tensor_data(a), mq_tensor_data(b), ma, mb, dt == MQ_DT_F32};
  add_run(S, out->numel, &J);
  return out;
}

/* A stored gradient (t's dtype) back in the engine's form. */
static mq_tensor *grad_f64(mq_state *S, mq_tensor *t) {
  if (t->sparse) return mq_ag_sparse_f64(S, t);
  mq_tensor *out = mq_ag_gnew(S, t->ndim, t->shape);
  mq_kernel_convert(S, out, t);
  if (t->mask) mq_tensor_set_mask(S, out, mq_contiguous(S, t->mask));
  return out;
}

/* [g] as a gradient of [t]: t's dtype, and within t's mask. A masked t
 * always gets a masked gradient. */
static mq_tensor *finalize(mq_state *S, mq_tensor *g, mq_tensor *t) {
  if (t->sparse) return mq_ag_sparse_finalize(S, g, t);
  const uint8_t *gm = mq_ag_maskp(S, g), *tm = mq_ag_maskp(S, t);
  mq_tensor *out;
  if (g->dtype == t->dtype && mq_tensor_is_contiguous(g)) { /* already t's: shared */
    out = mq_tensor_view(S, g, g->ndim, g->shape, g->strides, g->offset);
    if (gm && (!tm || gm == tm)) { /* within t's mask already */
      mq_tensor_set_mask(S, out, mq_contiguous(S, g->mask));
      return out;
    }
  } else {
    out = mq_tensor_new(S, (mq_dtype)t->dtype, t->ndim, t->shape);
    mq_kernel_convert(S, out, g);
  }
  if (gm || tm) {
    add_job J = {NULL, mq_ag_new_mask(S, out), NULL, NULL, gm, tm, false};
    add_run(S, out->numel, &J);
  }
  return out;
}

/* --- leaves ---------------------------------------------------------------- */

static void check_dtype(mq_state *S, mq_tensor *t, const char *who) {
  if (!mq_dtype_is_float((mq_dtype)t->dtype))
    mq_error(S, "%s: only float tensors can require gradients, got %s (write 1.0, not 1, or "
                "pass dtype=\"float32\")",
             who, mq_dtype_name((mq_dtype)t->dtype));
}

mq_tensor *mq_ag_leaf(mq_state *S, mq_tensor *t, bool flag, const char *who) {
  if (t->sparse) {
    if (flag) check_dtype(S, t, who);
    return mq_ag_sparse_leaf(S, t, flag);
  }
  /* a number (a weak float64 holding its full value) becomes float32, as tensor(2.5) does */
  if (t->weak && t->ndim == 0 && t->dtype == MQ_DT_F64) t = mq_astype(S, t, MQ_DT_F32);
  if (flag) check_dtype(S, t, who);
  mq_tensor *v = mq_ag_detached(S, t);
  v->requires_grad = flag;
  return v;
}

/* --- the engine ------------------------------------------------------------ */

typedef struct graph {
  mq_tensor **ts;   /* slot -> tensor */
  mq_tensor **grads;
  int n, cap;
  int *order;       /* slots, inputs before the results made from them */
  int norder;
  int *map;         /* open addressing: slot + 1 per bucket, 0 empty */
  int mapcap;
} graph;

static size_t hash_ptr(const void *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= (uintptr_t)0xed5ad4bbu;
  x ^= x >> 11;
  return (size_t)x;
}

static int find(const graph *G, const mq_tensor *t) {
  size_t mask = (size_t)G->mapcap - 1;
  for (size_t h = hash_ptr(t) & mask;; h = (h + 1) & mask) {
    int s = G->map[h];
    if (!s) return -1;
    if (G->ts[s - 1] == t) return s - 1;
  }
}

static void map_put(graph *G, int slot) {
  size_t mask = (size_t)G->mapcap - 1;
  size_t h = hash_ptr(G->ts[slot]) & mask;
  while (G->map[h]) h = (h + 1) & mask;
  G->map[h] = slot + 1;
}

/* Scratch arrays (pool-owned): an error anywhere frees them. */
static int add(mq_state *S, graph *G, mq_tensor *t) {
  if (G->n == G->cap) {
    int cap = G->cap ? G->cap * 2 : 16;
    mq_tensor **ts = mq_scratch(S, (size_t)cap * sizeof *ts);
    if (G->n) memcpy(ts, G->ts, (size_t)G->n * sizeof *ts);
    G->ts = ts;
    G->cap = cap;
    G->mapcap = cap * 2;
    G->map = mq_scratch(S, (size_t)G->mapcap * sizeof *G->map);
    memset(G->map, 0, (size_t)G->mapcap * sizeof *G->map);
    for (int i = 0; i < G->n; i++) map_put(G, i);
  }
  G->ts[G->n] = t;
  map_put(G, G->n);
  return G->n++;
}

static MQ_NORETURN void freed_error(mq_state *S) {
  mq_error(S, "the graph of this result was freed by an earlier backward; pass retain=true to "
              "keep it");
}

/* Every tensor requiring grad that [y] was computed from, in an order
 * where inputs come before the results made from them. Iterative, so deep
 * graphs (long recorded loops) cannot overflow the C stack. */
static void collect(mq_state *S, graph *G, mq_tensor *y) {
  typedef struct {
    mq_tensor *t;
    int next;
  } frame;
  int cap = 64, top = 0;
  frame *st = mq_scratch(S, (size_t)cap * sizeof *st);
  if (y->node && y->node->freed) freed_error(S);
  add(S, G, y);
  st[top++] = (frame){y, 0};
  int *order = NULL, ocap = 0;
  while (top) {
    frame *f = &st[top - 1];
    mq_gradnode *n = f->t->node;
    if (n && f->next < n->nin) {
      mq_tensor *u = n->in[f->next++];
      if (!u || !u->requires_grad || find(G, u) >= 0) continue;
      if (u->node && u->node->freed) freed_error(S);
      add(S, G, u);
      if (top == cap) {
        frame *bigger = mq_scratch(S, (size_t)cap * 2 * sizeof *st);
        memcpy(bigger, st, (size_t)cap * sizeof *st);
        st = bigger;
        cap *= 2;
      }
      st[top++] = (frame){u, 0};
      continue;
    }
    if (G->norder == ocap) {
      int nc = ocap ? ocap * 2 : 16;
      int *o = mq_scratch(S, (size_t)nc * sizeof *o);
      if (G->norder) memcpy(o, order, (size_t)G->norder * sizeof *o);
      order = o;
      ocap = nc;
    }
    order[G->norder++] = find(G, f->t);
    top--;
  }
  MQ_ASSERT(G->norder == G->n); /* each tensor of the graph ordered once */
  G->order = order;
  G->grads = mq_scratch(S, (size_t)G->n * sizeof *G->grads);
  memset(G->grads, 0, (size_t)G->n * sizeof *G->grads);
}

/* Whether [g] has the form of a gradient of [u] (autograd.h, backward.h):
 * u's shape and layout, float64 or float32 (sparse: float64 values), a
 * contiguous mask or none. What every derivative promises its inputs. */
MQ_CHECK_ONLY static bool is_gradient_of(const mq_tensor *g, const mq_tensor *u) {
  if (!mq_tensor_same_shape(g, u) || g->layout != u->layout) return false;
  if (u->sparse) return g->dtype == MQ_DT_F64 && g->sparse->nnz == u->sparse->nnz;
  return (g->dtype == MQ_DT_F64 || g->dtype == MQ_DT_F32) &&
         (!g->mask || mq_tensor_is_contiguous(g->mask));
}

/* Gradients flow from [y] down to every tensor of the graph. */
static void propagate(mq_state *S, graph *G, mq_tensor *y) {
  /* a float32 result's gradients are float32 where the derivatives have
   * float32 kernels (backward.h) */
  mq_dtype sd = y->dtype == MQ_DT_F32 && !y->sparse ? MQ_DT_F32 : MQ_DT_F64;
  mq_tensor *seed = mq_tensor_full(S, sd, y->ndim, y->shape, 1.0);
  if (y->mask) mq_tensor_set_mask(S, seed, mq_contiguous(S, y->mask));
  G->grads[find(G, y)] = seed; /* a masked-out y: every gradient masked out */
  mq_tensor *gin[64];
  for (int k = G->norder - 1; k >= 0; k--) {
    int s = G->order[k];
    mq_tensor *t = G->ts[s], *g = G->grads[s];
    mq_gradnode *n = t->node;
    if (!g || !n) continue;
    if (t->sparse) {
      g = mq_ag_sparse_within(S, g, t);
    } else if (t->mask && !g->mask) { /* a masked tensor's gradient is masked */
      g = mq_tensor_view(S, g, g->ndim, g->shape, g->strides, g->offset);
      mq_tensor_set_mask(S, g, mq_contiguous(S, t->mask));
    }
    mq_tensor **gi = n->nin <= 64 ? gin : mq_scratch(S, (size_t)n->nin * sizeof *gi);
    for (int i = 0; i < n->nin; i++) gi[i] = NULL;
    mq_ag_node_backward(S, t, g, gi);
    for (int i = 0; i < n->nin; i++) {
      mq_tensor *u = n->in[i];
      if (!gi[i] || !u || !u->requires_grad) continue;
      MQ_ASSERT(is_gradient_of(gi[i], u));
      int su = find(G, u);
      MQ_ASSERT(su >= 0); /* collect() added every input requiring grad */
      G->grads[su] = G->grads[su] ? mq_ag_accumulate(S, G->grads[su], gi[i]) : gi[i];
    }
  }
}

/* Releases what every node of the graph holds; the nodes stay, marked
 * freed, so that a later backward through them can say what happened.
 * References are moved out first and released after, so no tensor of the
 * graph dies while the graph is being walked. */
static void free_graph(mq_state *S, graph *G) {
  int nrefs = 0;
  for (int s = 0; s < G->n; s++) {
    mq_gradnode *n = G->ts[s]->node;
    if (n && !n->freed) nrefs += n->ntot;
  }
  mq_tensor **refs = mq_scratch(S, (size_t)(nrefs ? nrefs : 1) * sizeof *refs);
  int k = 0;
  for (int s = 0; s < G->n; s++) {
    mq_gradnode *n = G->ts[s]->node;
    if (!n || n->freed) continue;
    for (int i = 0; i < n->ntot; i++)
      if (n->in[i]) refs[k++] = n->in[i];
    mq_free(S, n->in, (size_t)n->ntot * sizeof *n->in);
    if (n->args) mq_free(S, n->args, n->args_size); /* may point at released tensors */
    n->in = NULL;
    n->args = NULL;
    n->nin = n->ntot = 0;
    n->freed = true;
  }
  for (int i = 0; i < k; i++) mq_obj_release(S, &refs[i]->hdr);
}

typedef struct job {
  mq_tensor *y;
  bool retain;
  int n;
  mq_tensor *const *inputs;
  mq_tensor **out; /* NULL: backward() into the leaves' .grad */
} job;

static void run(mq_state *S, void *ud) {
  job *J = ud;
  mq_tensor *y = J->y;
  const char *who = J->out ? "grad" : "backward";
  if (y->numel != 1)
    mq_error(S, "%s needs a 0-d result; got shape %s (sum it first)", who,
             mq_shape_str(S, y->ndim, y->shape));
  if (!y->requires_grad)
    mq_error(S, "%s: the result does not require grad: nothing it was computed from has "
                "requires_grad=true",
             who);
  graph G;
  memset(&G, 0, sizeof G);
  collect(S, &G, y);
  int *slots = NULL;
  if (J->out) { /* check the inputs before any work */
    slots = mq_scratch(S, (size_t)(J->n ? J->n : 1) * sizeof *slots);
    for (int i = 0; i < J->n; i++) {
      slots[i] = find(&G, J->inputs[i]);
      if (!J->inputs[i]->requires_grad) {
        if (J->n == 1) mq_error(S, "grad: the input does not require grad (make it a leaf with "
                                   "requires_grad(x))");
        mq_error(S, "grad: input %d does not require grad (make it a leaf with requires_grad(x))",
                 i + 1);
      }
      if (slots[i] < 0) {
        if (J->n == 1) mq_error(S, "grad: the result does not depend on the input");
        mq_error(S, "grad: the result does not depend on input %d", i + 1);
      }
    }
  }
  propagate(S, &G, y);
  if (J->out) {
    for (int i = 0; i < J->n; i++) {
      mq_tensor *x = J->inputs[i], *g = G.grads[slots[i]];
      if (!g && x->sparse) g = mq_ag_sparse_none(S, x);
      if (!g) { /* nothing flowed: no gradient at all */
        g = mq_tensor_full(S, MQ_DT_F64, x->ndim, x->shape, 0.0);
        if (x->mask) memset(mq_ag_new_mask(S, g), 0, (size_t)g->numel);
      }
      J->out[i] = finalize(S, g, x);
    }
  } else {
    for (int s = 0; s < G.n; s++) {
      mq_tensor *x = G.ts[s], *g = G.grads[s];
      if (x->node || !g) continue;
      if (x->grad) g = mq_ag_accumulate(S, grad_f64(S, x->grad), g);
      g = finalize(S, g, x);
      g->hdr.rc++;
      if (x->grad) mq_obj_release(S, &x->grad->hdr);
      x->grad = g;
    }
  }
  if (!J->retain) free_graph(S, &G);
}

/* Runs [J] with recording off, and puts the mode back even on an error. */
static void run_job(mq_state *S, job *J) {
  bool saved = S->no_grad;
  S->no_grad = true;
  masq_status st = mq_protect(S, run, J);
  S->no_grad = saved;
  if (st != MASQ_OK)
    mq_throw(S, st, "%s", S->err_message.data ? S->err_message.data : "backward failed");
}

void mq_backward(mq_state *S, mq_tensor *y, bool retain) {
  job J = {y, retain, 0, NULL, NULL};
  run_job(S, &J);
}

void mq_grad(mq_state *S, mq_tensor *y, mq_tensor *const *inputs, int n, bool retain,
             mq_tensor **out) {
  job J = {y, retain, n, inputs, out};
  run_job(S, &J);
}
