/* update.h - torch's in-place spellings as updates of a variable (update.c).
 *
 * Tensors stay values: x.add_(y) is x = add(x, y) and x[i] = v is x = x
 * with v at i. What makes them torch's in-place ops is the fit of the new
 * value to the old one: it keeps x's shape and dtype (torch refuses a
 * result it cannot write into x), and a leaf that requires grad is only
 * updated where autograd is off. Whether the new value is written into
 * x's storage is the VM's decision (vm/vm.c, dying_operand): only when
 * nothing but x's variable holds that storage, so nobody else sees it. */
#ifndef MQ_UPDATE_H
#define MQ_UPDATE_H

#include "../tensor/tensor.h"

/* How an update's result may differ from x (CALL_UPDATE's flags byte). */
enum {
  MQ_UPD_CAST = 1,      /* any dtype converts to x's, as torch's copy_, fill_, zero_ do */
  MQ_UPD_SRC = 2,       /* x.copy_(src): the value is src's data under x's mask */
  MQ_UPD_LEAF_OK = 4,   /* x.requires_grad_(): a leaf that requires grad may take it */
  MQ_UPD_AUG = 8,       /* x[items] op= v (STORE_INDEX): v is x[items] op v, computed */
  MQ_UPD_FILL = 16,     /* x.fill_(v): v a number or a 0-d tensor, as torch wants */
  MQ_UPD_ZERO = 32,     /* x.zero_(): named so in messages (its callee is zeros_like) */
  MQ_UPD_OP = 64        /* x op= v (UPDATE_BINARY): the name is the operator, "+" for +=,
                           or NULL for a list's or dict's element (xs[i] op= v) */
};

/* The value x takes after the in-place op [name] (without its "_")
 * computed [r] from it: r broadcast to x's shape and converted to x's
 * dtype, or an error where torch refuses the in-place op: a result
 * shape x cannot hold, a result dtype torch does not cast to x's
 * (a float into an int, a number into bool) unless [flags] has
 * MQ_UPD_CAST, x a leaf requiring grad while autograd records. Inside
 * no_grad a leaf stays a leaf that requires grad, keeping its .grad. */
MQ_INTERNAL mq_tensor *mq_update_fit(mq_state *S, mq_tensor *x, mq_tensor *r, int flags,
                                     const char *name);

/* Whether the number [f] ([is_int]: an int, else a float) converts to [to]
 * without overflow, by torch's check of a number written into a tensor
 * (c10::checked_convert): an integer type takes the values it holds (an
 * unsigned one also the negatives of those, which wrap), a float type every
 * finite value up to its largest, and infinities and NaN; an int takes no
 * NaN; bool takes anything. */
MQ_INTERNAL bool mq_number_fits(mq_dtype to, double f, bool is_int);
/* The error torch gives where mq_number_fits is false, from builtin [who]. */
MQ_INTERNAL void mq_check_number_fits(mq_state *S, mq_dtype to, double f, bool is_int,
                                      const char *who);

/* x[items] = v, as a new value: x with v (broadcast to the indexed shape,
 * converted to x's dtype) at the indexed entries, which take v's validity
 * (a plain v makes them valid). With an index tensor among [items], a
 * tensor v must already have x's dtype (torch's index_put). With
 * MQ_UPD_AUG in [flags] (x[items] op= v, v the computed x[items] op v), v's
 * dtype must be one torch's in-place op casts to x's instead. [spare] is x
 * when the VM knows it dying: then, if x's storage may take the result
 * (mq_reusable, plain x and v, no autograd), the entries are written
 * there. Otherwise the result is a scatter into a copy, whose gradient
 * flows to v at the indexed entries and to x everywhere else. */
MQ_INTERNAL mq_tensor *mq_index_put(mq_state *S, mq_tensor *x, const mq_index_item *items, int n,
                                    mq_tensor *v, int flags, mq_tensor *spare);

#endif
