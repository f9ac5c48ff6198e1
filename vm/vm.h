/* vm.h - the bytecode interpreter. */
#ifndef MQ_VM_H
#define MQ_VM_H

#include "chunk.h"

/* One activation: the function, where it is, and where its stack starts. */
typedef struct mq_vmframe {
  mq_closure *cl;    /* the running function; NULL for top-level code */
  mq_function *f;
  const uint8_t *ip; /* just past the instruction running (saved before
                        anything that may raise) or, in a caller, the call */
  int base;          /* stack index of local slot 0 */
} mq_vmframe;

/* A try block running: what to go back to when an error is caught. Or a
 * no_grad block running (grad_block): it catches nothing, but whatever
 * ends it (its end, break, continue, return, an error going through it)
 * puts back the autograd flag it saved. */
typedef struct mq_handler {
  int nframes;     /* frames when it began: the try is in frame nframes - 1 */
  int stack_len;   /* values on the stack then */
  int catch_pc;    /* where its catch block starts in that frame's code */
  bool no_grad;    /* autograd recording then (set_grad_enabled) */
  bool grad_block; /* a no_grad block, not a try */
} mq_handler;

/* Calls deeper than this raise "stack overflow" (the VM does not recurse on
 * the C stack, so this only bounds memory). */
#define MQ_MAX_CALL_DEPTH 10000

/* Runs of the VM inside one another (an import, or a host function that
 * calls masq_call) take C stack: more than this raise "stack overflow". */
#define MQ_MAX_NESTED_RUNS 16

/* Runs top-level function [f]. With [echo] (MQ_ECHO_* bits) expression
 * statements bind their value to `_`, and print it with MQ_ECHO_PRINT. A runtime error inside a try block of
 * this run is caught here: the stack, frames and pool go back to where the
 * try began and its catch block runs. Other errors (and memory errors and
 * interrupts, which no try catches) propagate (mq_throw) with the frame
 * stack left in place so the caller can locate them; the caller then calls
 * mq_vm_unwind(). Returns the function's result (retained). */
/* What the value of a top-level expression statement becomes (the ECHO
 * op): MQ_ECHO_PRINT prints it, MQ_ECHO_KEEP only keeps it in the global `_`
 * (masq_eval's MASQ_EVAL_RESULT, for hosts that want the value, not its text). */
enum { MQ_ECHO_PRINT = 1, MQ_ECHO_KEEP = 2 };
MQ_INTERNAL mq_value mq_vm_run(mq_state *S, mq_function *f, int echo);

/* The span of the instruction that was running in frame [level] (the
 * innermost frame is S->nframes - 1). */
MQ_INTERNAL bool mq_vm_error_span(mq_state *S, int level, const mq_source **src, mq_span *span);

/* Releases the values and frames above the given depths after an error. */
MQ_INTERNAL void mq_vm_unwind(mq_state *S, int stack_len, int nframes);

#endif
