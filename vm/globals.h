/* globals.h - global variable slots, found by name at compile time and by
 * index at run time. */
#ifndef MQ_GLOBALS_H
#define MQ_GLOBALS_H

#include "../core/state.h"

/* The slot of global [name], created (undefined) if new. */
MQ_INTERNAL int mq_global_slot(mq_state *S, const char *name);
/* As mq_global_slot, but a new slot keeps [name] itself, which must
 * outlive the globals (a builtin's name in the library's block). */
MQ_INTERNAL int mq_global_slot_borrowed(mq_state *S, const char *name);
/* Makes room for [n] more slots, so that creating them allocates nothing. */
MQ_INTERNAL void mq_globals_reserve(mq_state *S, int n);
/* The slot of [name], or -1. */
MQ_INTERNAL int mq_global_find(const mq_state *S, const char *name);
/* Stores [v] (retained) in slot [slot], releasing what was there. */
MQ_INTERNAL void mq_global_set(mq_state *S, int slot, mq_value v);
/* Stores the library's value [v] of a name in [slot] (a builtin, a
 * constant, a dtype's name, a host function), which `del` restores. */
MQ_INTERNAL void mq_global_bind_lib(mq_state *S, int slot, mq_value v);
/* Whether [g] is the user's: defined, and not (or no longer) the
 * library's value (what :vars lists). */
MQ_INTERNAL bool mq_global_is_user(const mq_global *g);
/* del name: a variable is unbound; one that shadows a library name gives
 * the library's value back. An error for an undefined name or a library
 * name that holds its own value. */
MQ_INTERNAL void mq_global_del(mq_state *S, int slot);
MQ_INTERNAL void mq_globals_free(mq_state *S);

/* Evals are transactions on the globals: between begin and commit every
 * first store into a slot logs what the slot held (the log grows before
 * the store, so a failed growth changes nothing), and a rollback puts the
 * logged values back in reverse order and releases the new ones (end with
 * [commit] false). Only bindings are restored; a list or tensor changed in
 * place stays changed. The modules imported belong to the transaction
 * too: a rolled-back eval forgets the imports it made, so importing them
 * again runs them again and defines what the rollback undid. Nested evals
 * (from a host function) nest: begin returns what the outer eval had,
 * which commit and rollback take back. */
typedef struct mq_txn {
  int outer_base;  /* the outer eval's undo base (0: none) */
  int imports_len; /* S->imports' length at begin */
} mq_txn;
MQ_INTERNAL mq_txn mq_globals_begin(mq_state *S);
MQ_INTERNAL void mq_globals_end(mq_state *S, mq_txn txn, bool commit);

#endif
