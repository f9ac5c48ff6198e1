/* gc.c - the cycle collector, by trial deletion (as CPython's).
 *
 * Reference counting frees everything except containers that keep each
 * other alive: l = [1]; append(l, l). The collector's rules:
 *
 *   - Every container (list, closure, function) is linked, through the
 *     mq_gchead in front of it, into one of two generations: young (made
 *     since the last collection) or old (survived one). Freeing a container
 *     unlinks it in O(1).
 *   - A collection never enumerates roots. For each container in the set it
 *     collects, refs starts as the reference count minus the references
 *     from other containers of the set; refs > 0 means something outside
 *     the set (the VM stack, a global, the pool, a host handle, an old
 *     container, a C function's counted reference) holds it. Everything
 *     reachable from such a container survives; the rest is garbage.
 *   - Garbage is freed in two steps so that counts drop safely: each garbage
 *     container is held (rc + 1) and its contents are released (other
 *     objects die normally by their counts), then the holds are released and
 *     the emptied containers die.
 *   - Nothing here recurses or allocates: the worklist of the reachability
 *     pass is the generation list itself (a container found reachable moves
 *     to its end), so a collection cannot fail, at any depth or memory
 *     limit.
 *   - When: a young collection when MQ_GC_YOUNG containers were made since
 *     the last one, and at the end of each masq_eval and masq_call; after it
 *     a full collection when the old generation grew by a quarter (at least
 *     MQ_GC_YOUNG) since the last full one; a full collection before an
 *     allocation fails for the memory limit or the allocator; and a full one
 *     at masq_close, which so frees every cycle left.
 *   - Tensors, strings and builtins are not tracked: they reference no
 *     container (an autograd node references tensors only).
 *   - It lives in core, below the VM whose closures and functions it
 *     collects, because lists (core) are containers too and every layer
 *     makes them: what a container holds, how to empty it and how to free
 *     it come from its kind's hooks (S->kinds, core/value.h), so the
 *     collector calls no layer above it.
 */
#include "gc.h"

enum { MQ_GC_YOUNG = 1000 };

/* refs of a container between collections, and during one when it is not a
 * plain count: */
enum {
  IN_YOUNG = -1,
  IN_OLD = -2,
  TENTATIVELY_UNREACHABLE = -3, /* moved out of the set; may come back */
  GARBAGE = -4                  /* being cleared and freed */
};

/* vm/chunk.c asserts the same of the containers it defines. */
_Static_assert(sizeof(mq_gchead) % _Alignof(mq_list) == 0,
               "a container right after its head is aligned");

static mq_gchead *head_of(mq_obj *o) { return (mq_gchead *)o - 1; }
static mq_obj *obj_of(mq_gchead *h) { return (mq_obj *)(h + 1); }

static void list_init(mq_gchead *l) { l->prev = l->next = l; }
static bool list_empty(const mq_gchead *l) { return l->next == l; }

static void unlink_head(mq_gchead *h) {
  h->prev->next = h->next;
  h->next->prev = h->prev;
}

static void append(mq_gchead *l, mq_gchead *h) {
  h->prev = l->prev;
  h->next = l;
  l->prev->next = h;
  l->prev = h;
}

/* Moves every entry of [from] to the end of [to]. */
static void splice(mq_gchead *to, mq_gchead *from) {
  if (list_empty(from)) return;
  from->next->prev = to->prev;
  to->prev->next = from->next;
  from->prev->next = to;
  to->prev = from->prev;
  list_init(from);
}

void mq_gc_init(mq_state *S) {
  list_init(&S->gc.young);
  list_init(&S->gc.old);
}

/* --- what a container references ------------------------------------------- */

static void traverse(mq_state *S, mq_obj *o, mq_visit fn) {
  S->kinds[o->type].traverse(S, o, fn);
}

/* --- allocation and freeing ------------------------------------------------- */

void *mq_gc_alloc(mq_state *S, size_t size) {
  if (S->gc.nyoung >= MQ_GC_YOUNG) mq_gc_step(S);
  if (size > SIZE_MAX - sizeof(mq_gchead))
    mq_throw(S, MASQ_ERR_MEMORY, "an object of %zu bytes is too large", size);
  mq_gchead *h = mq_calloc(S, sizeof *h + size);
  h->refs = IN_YOUNG;
  append(&S->gc.young, h);
  S->gc.nyoung++;
  return h + 1;
}

void mq_gc_dealloc(mq_state *S, void *o, size_t size) {
  mq_free(S, head_of(o), sizeof(mq_gchead) + size);
}

static void untrack(mq_state *S, mq_gchead *h) {
  unlink_head(h);
  if (h->refs == IN_YOUNG) S->gc.nyoung--;
  else if (h->refs == IN_OLD) S->gc.nold--;
}

static void free_container(mq_state *S, mq_obj *o) { S->kinds[o->type].free(S, o); }

void mq_gc_free(mq_state *S, mq_obj *o) {
  mq_gchead *h = head_of(o);
  untrack(S, h);
  h->next = S->gc.dying;
  S->gc.dying = h;
  if (S->gc.freeing) return; /* the loop below, further up the C stack, frees it */
  S->gc.freeing = true;
  while (S->gc.dying) {
    h = S->gc.dying;
    S->gc.dying = h->next;
    free_container(S, obj_of(h));
  }
  S->gc.freeing = false;
}

/* --- collection ----------------------------------------------------------------- */

static bool is_container(mq_value v) {
  return v.type == MQ_OBJ && mq_gc_is_container(v.as.o->type);
}

static void subtract_ref(mq_state *S, mq_value v) {
  if (!is_container(v)) return;
  mq_gchead *child = head_of(v.as.o);
  /* a kind's traverse visits only references its count holds: one more
   * would make a live container look unreachable */
  MQ_ASSERT(child->refs != 0);
  if (child->refs > 0) child->refs--;
}

/* [v] is referenced by a container known to be reachable. */
static void mark_reachable(mq_state *S, mq_value v) {
  if (!is_container(v)) return;
  mq_gchead *child = head_of(v.as.o);
  if (child->refs == TENTATIVELY_UNREACHABLE) {
    unlink_head(child);
    append(&S->gc.young, child); /* scanned when the pass gets there */
    child->refs = 1;
  } else if (child->refs == 0) {
    child->refs = 1; /* still ahead in the pass */
  }
}

size_t mq_gc_collect(mq_state *S, bool full) {
  if (S->gc.collecting || S->gc.freeing || !S->gc.young.next) return 0;
  S->gc.collecting = true;
  mq_gchead *set = &S->gc.young, *h, *next;
  if (full) {
    splice(set, &S->gc.old);
    S->gc.nold = 0;
  }
  for (h = set->next; h != set; h = h->next) h->refs = obj_of(h)->rc;
  for (h = set->next; h != set; h = h->next) traverse(S, obj_of(h), subtract_ref);

  mq_gchead unreachable;
  list_init(&unreachable);
  for (h = set->next; h != set; h = next) {
    if (h->refs > 0) {
      traverse(S, obj_of(h), mark_reachable);
      next = h->next; /* after the traversal: it may have appended to the set */
    } else {
      next = h->next;
      unlink_head(h);
      append(&unreachable, h);
      h->refs = TENTATIVELY_UNREACHABLE;
    }
  }

  size_t survivors = 0;
  for (h = set->next; h != set; h = h->next, survivors++) h->refs = IN_OLD;
  splice(&S->gc.old, set);
  S->gc.nold += survivors;
  S->gc.nyoung = 0;
  if (full) S->gc.old_at_full = S->gc.nold;

  size_t ngarbage = 0;
  for (h = unreachable.next; h != &unreachable; h = h->next, ngarbage++) {
    h->refs = GARBAGE;
    obj_of(h)->rc++;
  }
  for (h = unreachable.next; h != &unreachable; h = h->next)
    S->kinds[obj_of(h)->type].clear(S, obj_of(h));
  /* Emptied, each dies when its hold goes (a function may live on briefly,
   * until the garbage closures still pointing at it are freed). */
  while (!list_empty(&unreachable)) {
    h = unreachable.next;
    unlink_head(h);
    append(&S->gc.old, h);
    h->refs = IN_OLD;
    S->gc.nold++;
    mq_obj_release(S, obj_of(h));
  }
  S->gc.collecting = false;
  return ngarbage;
}

void mq_gc_step(mq_state *S) {
  if (S->gc.nyoung) mq_gc_collect(S, false);
  size_t growth = S->gc.old_at_full / 4 > MQ_GC_YOUNG ? S->gc.old_at_full / 4 : MQ_GC_YOUNG;
  if (S->gc.nold > S->gc.old_at_full + growth) mq_gc_collect(S, true);
}
