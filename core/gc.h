/* gc.h - the cycle collector: frees containers that only keep each other
 * alive (rules at the top of gc.c).
 *
 * Containers are the objects that hold references to other objects: lists,
 * dicts,
 * closures (captures and defaults) and functions (constants). Each is
 * allocated with an mq_gchead in front of it that links it into one of the
 * state's two generations; tensors, strings and builtins hold no container
 * and carry no head. */
#ifndef MQ_GC_H
#define MQ_GC_H

#include "state.h"

static inline bool mq_gc_is_container(uint8_t otype) {
  return otype == MQ_O_LIST || otype == MQ_O_DICT || otype == MQ_O_CLOSURE ||
         otype == MQ_O_FUNCTION || otype == MQ_O_ENUMERATE || otype == MQ_O_ZIP;
}

/* Links the two generation lists to themselves (an empty collector). */
MQ_INTERNAL void mq_gc_init(mq_state *S);
/* A zeroed container object of [size] bytes (the head not counted), tracked
 * in the young generation. May run a collection first. */
MQ_INTERNAL void *mq_gc_alloc(mq_state *S, size_t size);
/* Gives back the memory of a container whose references are released. */
MQ_INTERNAL void mq_gc_dealloc(mq_state *S, void *o, size_t size);
/* Frees a container whose count reached zero (mq_obj_free). What dies with
 * it is chained through the dying objects' own heads and freed in a loop,
 * so a 300 000-deep list or a million chained closures use no C stack. */
MQ_INTERNAL void mq_gc_free(mq_state *S, mq_obj *o);

/* Collects the young generation (full: both) and returns how many
 * containers it freed. Never fails and never allocates; does nothing while
 * a collection or a chain of frees is under way. */
MQ_INTERNAL size_t mq_gc_collect(mq_state *S, bool full);
/* The end of a top-level operation (masq_eval, masq_call): collects what
 * the operation left behind, and the old generation when it has grown. */
MQ_INTERNAL void mq_gc_step(mq_state *S);

#endif
