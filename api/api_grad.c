/* api_grad.c - autograd from C (include/masq.h), on runtime/autograd/autograd.h
 * directly rather than through the requires_grad/backward/grad builtins,
 * so a host function registered under one of those names cannot change
 * what these do. */
#include "../runtime/autograd/autograd.h"
#include "api_int.h"

typedef struct grad_job {
  const char *fn;
  masq_tensor *t;
  masq_tensor **out;
} grad_job;

static void leaf_protected(mq_state *S, void *ud) {
  grad_job *job = ud;
  mq_api_need(S, job->out, job->fn, "out");
  mq_handle_check(S, job->t, job->fn, "t");
  mq_handle_give(S, job->out, mq_ag_leaf(S, job->t, true, "masq_requires_grad"));
}

static void backward_protected(mq_state *S, void *ud) {
  grad_job *job = ud;
  mq_handle_check(S, job->t, job->fn, "loss");
  mq_backward(S, job->t, false);
}

static void grad_protected(mq_state *S, void *ud) {
  grad_job *job = ud;
  mq_api_need(S, job->out, job->fn, "out");
  mq_handle_check(S, job->t, job->fn, "t");
  mq_handle_give(S, job->out, job->t->grad);
}

masq_status masq_requires_grad(masq_state *M, masq_tensor *t, masq_tensor **out) {
  grad_job job = {"masq_requires_grad", t, out};
  return mq_api_entry(M, leaf_protected, &job, out);
}

masq_status masq_backward(masq_state *M, masq_tensor *loss) {
  grad_job job = {"masq_backward", loss, NULL};
  return mq_api_entry(M, backward_protected, &job, NULL);
}

masq_status masq_grad(masq_state *M, masq_tensor *t, masq_tensor **out) {
  grad_job job = {"masq_grad", t, out};
  return mq_api_entry(M, grad_protected, &job, out);
}
