/* api_int.h - what the files behind include/masq.h share: the protected
 * boundary every entry point goes through, and the registry of the
 * references the host holds.
 *
 * Why a registry: a handle is a bare mq_tensor pointer, and C hosts get
 * pointers wrong (a double release, a stale pointer, a borrowed argument
 * returned as new). Every reference the host holds is counted here, so each
 * masq_ function can check a handle in O(1) and answer MASQ_ERR_USAGE instead
 * of corrupting the heap, and masq_close() can give back what the host
 * forgot (running wrapped buffers' release callbacks exactly once). */
#ifndef MQ_API_INT_H
#define MQ_API_INT_H

#include "../core/state.h"

/* One tensor the host holds [refs] references to; each is also one
 * reference in the tensor's own count. */
typedef struct mq_handle {
  mq_tensor *t;
  uint32_t refs;
} mq_handle;

/* Embedding state, allocated the first time a handle or host function
 * appears; NULL for states that only evaluate source text. */
typedef struct mq_host {
  mq_handle *handles; /* open addressing, linear probing; cap a power of 2 */
  size_t nhandles, cap;
  /* The message of masq_errorf(), read when a host function fails. Fixed
   * size: formatting it must not allocate (the failure may be "out of
   * memory"). */
  char error[1024];
  bool error_set;
} mq_host;

/* --- the boundary (api.c) ---------------------------------------------------- */

/* Re-entry. A config hook (core/state.h, in_hook) is handed masq's own
 * buffers and runs in the middle of an operation, so it may not call back
 * into masq: such a call is refused with MASQ_ERR_USAGE (true here), its
 * message a static text, so that not even the error buffers the hook may
 * be reading change. Host functions may call back (anything but
 * masq_close). */
MQ_INTERNAL bool mq_api_refused(mq_state *S);
/* What the outermost call returns once done: [st], or MASQ_ERR_USAGE if a
 * hook tried masq_close meanwhile (the state stays open). */
MQ_INTERNAL masq_status mq_api_finish(mq_state *S, masq_status st);

/* Runs fn(S, ud) the way every public function does: clears the last error,
 * catches what fn raises (recorded, without a source location, for
 * masq_last_error) and frees fn's temporaries. Validation inside fn raises
 * MASQ_ERR_USAGE with mq_throw(). */
MQ_INTERNAL masq_status mq_api_run(mq_state *S, mq_pfunc fn, void *ud);
MQ_INTERNAL void mq_api_clear_error(mq_state *S);
/* The usual shape of a public function: clears *out (may be NULL), refuses
 * a NULL state (there is nowhere to put a message), then mq_api_run. */
static inline masq_status mq_api_entry(mq_state *S, mq_pfunc fn, void *ud, masq_tensor **out) {
  if (out) *out = NULL;
  if (!S) return MASQ_ERR_USAGE;
  if (mq_api_refused(S)) return MASQ_ERR_USAGE;
  return mq_api_run(S, fn, ud);
}
/* Raises MASQ_ERR_USAGE "[fn]: [what] is NULL" when [p] is NULL. */
MQ_INTERNAL void mq_api_need(mq_state *S, const void *p, const char *fn, const char *what);
/* Records a failure of code that ran in the VM: locates it in the innermost
 * frame (or at the span the error named), adds the traceback of the frames
 * above [nframes], unwinds the VM to [stack_len]/[nframes] and drains the
 * pool to [mark]. [src] is the source to show when nothing better is
 * known (may be NULL). Returns [st]. */
MQ_INTERNAL masq_status mq_api_fail_run(mq_state *S, masq_status st, const struct mq_source *src,
                                        int stack_len, int nframes, size_t mark);
/* Before running code at the top level, forget an interrupt requested while
 * nothing ran; inside a running program (a host function calling back) a
 * pending request must reach the code it was meant for. */
static inline void mq_api_reset_interrupt(mq_state *S) {
  if (S->nframes == 0) S->interrupted = 0;
}

/* --- handles (handles.c) ------------------------------------------------------ */

/* The embedding state, created on first use (may raise MASQ_ERR_MEMORY). */
MQ_INTERNAL mq_host *mq_host_get(mq_state *S);
/* Makes room for [n] more handles, so that the next [n] mq_handle_add()
 * calls cannot fail. */
MQ_INTERNAL void mq_handle_reserve(mq_state *S, size_t n);
/* Gives the host one reference to [t] (and takes one in t's count). */
MQ_INTERNAL void mq_handle_add(mq_state *S, mq_tensor *t);
/* Does the host hold a reference to [t]? Never dereferences [t]. */
MQ_INTERNAL bool mq_handle_held(const mq_state *S, const void *t);
/* Takes one of the host's references back; [release]: also drop the one it
 * stood for in t's count (false hands that reference to the caller).
 * Returns false if the host held none. */
MQ_INTERNAL bool mq_handle_drop(mq_state *S, mq_tensor *t, bool release);
/* Hands [t] (may be NULL) to the host as a new reference in *out. */
MQ_INTERNAL void mq_handle_give(mq_state *S, masq_tensor **out, mq_tensor *t);
/* Raises MASQ_ERR_USAGE unless [t] is a handle the host holds; [what]
 * names it ("argv[1]"), [fn] the API function. */
MQ_INTERNAL void mq_handle_check(mq_state *S, const void *t, const char *fn, const char *what);
/* masq_close: releases every reference the host still holds, then frees
 * the embedding state. */
MQ_INTERNAL void mq_host_free(mq_state *S);

/* The calls up the VM makes (core/state.h's hooks, set by masq_open). */
struct mq_builtin;
/* Runs host function [b] with its bound [args], the way def->fn would;
 * frees one when its builtin entry goes (api_host.c). */
MQ_INTERNAL mq_value mq_host_call(mq_state *S, const struct mq_builtin *b, mq_value *args);
MQ_INTERNAL void mq_hostfn_free(mq_state *S, struct mq_hostfn *h);
/* Runs the file at [path] (relative to the directory of [from]) once per
 * state: the `import` statement (api.c, next to eval). */
MQ_INTERNAL void mq_vm_import(mq_state *S, const char *path, const struct mq_source *from);

#endif
