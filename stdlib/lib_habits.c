/* lib_habits.c - what a torch user types without thinking: the dtype
 * constants (dtype=float64), x.requires_grad as a bool, and the warnings
 * torch gives where masq would otherwise stay silent. */
#include "../core/diag.h"
#include "../runtime/sparse/sparse.h"
#include "../vm/globals.h"
#include "../vm/vm.h"
#include "stdlib.h"

void mq_warn_once(mq_state *S, unsigned bit, const char *message) {
  if (S->warned & bit) return;
  S->warned |= bit;
  const mq_source *src = NULL;
  mq_span span;
  S->out.len = 0;
  if (S->nframes > 0 && mq_vm_error_span(S, S->nframes - 1, &src, &span) && src) {
    mq_diag_render(S, &S->out, src, span, "warning", message, false);
  } else {
    mq_buf_puts(S, &S->out, "warning: ");
    mq_buf_puts(S, &S->out, message);
    mq_buf_putc(S, &S->out, '\n');
  }
  mq_write_err(S, S->out.data, S->out.len);
}

void mq_habits_open(mq_state *S) {
  mq_globals_reserve(S, MQ_DT__ALL);
  for (int d = 0; d < MQ_DT__ALL; d++) {
    const char *name = mq_dtype_name((mq_dtype)d);
    int slot = mq_global_find(S, name);
    if (slot >= 0 && S->globals[slot].builtin) continue; /* bool(x): also a dtype (builtin.c) */
    slot = mq_global_slot_borrowed(S, name);
    mq_global_bind_lib(S, slot, mq_objv(mq_string_new(S, name, strlen(name))));
  }
}

/* x.requires_grad (parser/ast.c, mq_attr_callee): the flag, not the call
 * requires_grad(x) that sets it. */
static mq_value lib_requires_grad_of(mq_state *S, mq_value *args) {
  return mq_bool(mq_arg_tensor_any(S, args[0], "x")->requires_grad);
}

/* x.grad (parser/ast.c, mq_attr_callee): x's accumulated gradient or none,
 * whatever a global named grad holds (x.grad was the call grad(x)). */
static mq_value lib_grad_of(mq_state *S, mq_value *args) {
  if (!mq_is_tensor(args[0]) && !mq_is_sparse(args[0]))
    mq_error(S, "%s has no .grad (only tensors do)", mq_value_a_type_name(args[0]));
  const mq_tensor *x = mq_as_tensor_any(args[0]);
  return x->grad ? mq_objv(x->grad) : mq_none();
}

const mq_libfn mq_lib_habits[] = {
    {"requires_grad_of(x)", lib_requires_grad_of,
     "true if x requires grad: what x.requires_grad gives (requires_grad(x) sets it)", MQ_BK_NONE, 0},
    {"grad_of(x)", lib_grad_of,
     "x's accumulated gradient, or none: what x.grad gives, even if a global named grad "
     "holds something else", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
