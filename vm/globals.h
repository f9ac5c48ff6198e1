/* globals.h - global variable slots, found by name at compile time and by
 * index at run time. */
#ifndef MQ_GLOBALS_H
#define MQ_GLOBALS_H

#include "state.h"

/* The slot of global [name], created (undefined) if new. */
MQ_INTERNAL int mq_global_slot(mq_state *S, const char *name);
/* The slot of [name], or -1. */
MQ_INTERNAL int mq_global_find(const mq_state *S, const char *name);
/* Stores [v] (retained) in slot [slot], releasing what was there. */
MQ_INTERNAL void mq_global_set(mq_state *S, int slot, mq_value v);
MQ_INTERNAL void mq_globals_free(mq_state *S);

#endif
