/* state.h - the interpreter state: memory accounting, the error boundary,
 * and the pool that owns a running operation's temporaries.
 *
 * Error model (Lua's): any function may call mq_error(); it longjmps to the
 * nearest mq_protect() on this state, which returns the status. (Each run
 * of the VM is such a boundary too, without draining: it catches the
 * runtime errors a script's try block asks for and passes the rest on,
 * vm/vm.h.) Nothing leaks
 * on the way, because everything a C function allocates while it runs is
 * owned by the state's pool (mq_pool_*), and the protect boundary drains the
 * pool back to the mark it took. Rule for runtime code:
 *
 *   - mq_tensor_new() and friends return tensors owned by the pool: never
 *     release them yourself; they die when the current operation ends unless
 *     somebody retained them (the VM retains the values it keeps).
 *   - Scratch memory from mq_scratch() is owned by the pool the same way.
 *   - Memory you want to outlive the operation (chunks, globals, ...) comes
 *     from mq_alloc()/mq_free(), and you must make sure an error can't strand
 *     it (allocate it last, or hang it off something reachable first).
 */
#ifndef MQ_STATE_H
#define MQ_STATE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "common.h"
#include "value.h"

/* One entry of the temporaries pool. */
typedef struct mq_pool_item {
  void *ptr;
  size_t size; /* bytes for raw scratch; 0 for an object */
} mq_pool_item;

/* A growable byte buffer for building text (messages, printed tensors). */
typedef struct mq_buf {
  char *data;
  size_t len, cap;
} mq_buf;

/* A source location: 1-based line and byte columns; end_col is exclusive and
 * on the same line as col (multi-line spans are cut at the end of line). */
typedef struct mq_span {
  int line, col, end_col;
} mq_span;

typedef struct mq_jmp {
  struct mq_jmp *prev;
  jmp_buf buf;
  volatile masq_status status;
} mq_jmp;

/* A global variable slot. Builtins occupy the first slots; user globals
 * follow. Slots never move, so compiled code refers to them by index. */
typedef struct mq_global {
  char *name;
  mq_value value;
  bool defined;
  bool borrowed; /* [name] is not ours: the library's, outliving the globals */
  bool builtin; /* a name the library (or a host function) bound: [lib] holds its value */
  mq_value lib; /* that value (retained), which `del name` restores after a shadowing assignment */
  int logged;   /* 1 + its newest entry in the undo log, 0 if none (vm/globals.h) */
} mq_global;

/* What a global slot held before the running eval first assigned it. */
typedef struct mq_undo {
  int slot, prev_logged;
  mq_value old; /* owned by the log */
  bool defined;
} mq_undo;

struct mq_source; /* core/diag.h */
struct mq_hostfn; /* api/api_int.h */

/* Print options, as torch's set_printoptions: digits after the point,
 * the element count above which dims are summarized, the entries shown at
 * each end of a summarized dim, the line width of plain tensors, and
 * scientific notation (-1: chosen from the values, 0: never, 1: always). */
typedef struct mq_printopts {
  int precision;
  int64_t threshold;
  int edgeitems, linewidth, sci_mode;
} mq_printopts;
#define MQ_PRINTOPTS_DEFAULT ((mq_printopts){4, 1000, 3, 80, -1})

/* Freed tensor buffers a state keeps for reuse (mq_alloc_big), at most
 * this many, and at most MQ_BIGCACHE_BYTES together. A training step's
 * backward frees and makes again dozens of distinct sizes (issue 30: with
 * 16 slots a padded encoder step took 6 400 fresh pages, a fifth of its
 * time in page faults; with 64, none). */
#define MQ_BIGCACHE 64
#define MQ_BIGCACHE_BYTES ((size_t)512 << 20)
struct mq_builtin;

struct mq_state {
  masq_config cfg;
  size_t mem_used, mem_peak;

  mq_jmp *errjmp;   /* innermost protected call */
  mq_pool_item *pool;
  size_t pool_len, pool_cap;

  /* Last error, as masq_last_error() reports it. */
  masq_error err;
  mq_buf err_message, err_rendered;
  mq_buf out; /* reused for printing values: a failed print leaks nothing */
  char *err_chunk;
  bool err_has_span; /* err_span was set by mq_error_at */
  bool pending_span;
  mq_span err_span;
  /* The source err_span is in when it is not the one being compiled or run
   * (an error raised again by raise(e)); NULL otherwise. Borrowed: the
   * error value that raised it holds a reference. */
  const struct mq_source *err_src;

  /* Globals: slots plus an open-addressing name index. */
  mq_global *globals;
  int nglobals, globals_cap;
  int *gindex; /* slot+1 per bucket, 0 = empty */
  int gindex_cap;
  /* The undo log of the evals running (vm/globals.h): entries from
   * undo_base - 1 on belong to the innermost; undo_base 0: none running. */
  mq_undo *undo;
  int undo_len, undo_cap, undo_base;

  struct mq_builtin *builtins; /* vm/builtin.h: bound at open by stdlib/ and api/ */
  int nbuiltins;
  int nlibbuiltins;    /* the first ones: the library's, parsed into builtin_block */
  void *builtin_block; /* their parameters, objects and strings */
  size_t builtin_block_size;

  /* The VM's value stack and call frames (vm/vm.c). */
  mq_value *stack;
  int stack_len, stack_cap;
  struct mq_vmframe *frames;
  int nframes, frames_cap;
  /* The try blocks running, innermost last (vm/vm.h). */
  struct mq_handler *handlers;
  int nhandlers, handlers_cap;

  /* Sources kept alive for diagnostics of functions defined in them. */
  struct mq_source *sources;
  mq_list *imports; /* paths already imported (strings) */

  /* Random generator (xoshiro256**), seeded by seed(n). */
  uint64_t rng[4];
  /* The secret key of the dicts' hash (core/dict.c), drawn at open from the
   * system's random source; not the generator above, which a script seeds. */
  uint64_t hash_key[2];

  int exit_code; /* exit(code) of the script, with MASQ_EXIT */
  /* set by masq_interrupt(), maybe from another thread or a signal handler:
   * an atomic (lock-free, so a handler may store it), not a volatile */
  atomic_int interrupted;
  unsigned poll_counter;
  /* While > 0, polls report no interrupt (the flag stays set for the next
   * poll after): an op writing its result into a dying operand's storage
   * (runtime/tensor/tensor.h, mq_reusable) must not stop half-way, or the
   * variable that still holds the operand would see half a result.
   * mq_protect puts it back when an error crosses it. */
  int defer_interrupts;
  /* Host code running inside a call on this state: host functions (which
   * may call back into masq) and the config's hooks (which may not: a hook
   * is handed masq's own buffers, which a nested call would reuse). An
   * interrupt raised in a run nested in a host function stays pending for
   * the runs outside it (the host function may swallow the nested
   * failure); api/ refuses calls from hooks and masq_close from either,
   * which it records in close_refused. */
  int host_depth, in_hook;
  bool close_refused;
  /* The dying first argument the VM hands to the builtin it calls
   * (vm/vm.c, dying_operand): set by mq_builtin_call before every call,
   * taken (read and cleared) only by the builtins that opt in, first
   * thing (mq_take_spare). */
  mq_tensor *spare;
  /* How many results went into a dying operand's storage (runtime/tensor/tensor.h,
   * mq_reuse): what the tests read to see that reuse happens. */
  long reused;
  bool no_grad; /* autograd recording off (set_grad_enabled, runtime/autograd/autograd.h) */
  unsigned warned; /* the warnings a state gives once, by bit (stdlib.h, mq_warn_once) */
  int nthreads;  /* threads a large kernel may use, 0: not counted yet (runtime/tensor/parallel.h) */
  int cpu;       /* the CPU path of the kernels that have several (runtime/tensor/cpu.h) */
  mq_printopts print; /* how tensors print (set_printoptions, runtime/print/print.c) */
  struct mq_workers *workers; /* their pool, NULL until a kernel first splits */
  /* The file writer (runtime/io/file_write.c): a count that names its new
   * files apart, and fault injection for its tests only: when at > 0, its
   * at-th system call (counted in count) fails with err (ENOSPC if 0). */
  unsigned long io_seq;
  struct {
    long at, count;
    int err;
  } io_fault;

  /* Large tensor buffers freed lately, kept for the next tensor of the
   * same byte size (mq_alloc_big): a fresh block of tens of MB costs a page
   * fault per 4 KB the first time it is written, often more than the
   * kernel that fills it. */
  struct {
    void *p;
    size_t n;
  } bigcache[MQ_BIGCACHE];
  /* A kernel's working buffer kept for its next call (mq_kept): the
   * GEMM's packing buffers, written every call, would otherwise fault
   * their pages in anew each time. */
  struct {
    void *p;
    size_t n;
  } kept;

  /* The cycle collector (core/gc.c): containers made since the last
   * collection (young) and those that survived one (old), as lists with a
   * sentinel head each; the old count at the last full collection; the
   * chain of containers waiting to be freed, and what is under way. */
  struct {
    mq_gchead young, old;
    size_t nyoung, nold, old_at_full;
    mq_gchead *dying;
    bool collecting, freeing;
  } gc;

  /* How each object kind is freed, printed, tested and traversed (set at
   * open by the layer that defines it: core/value.h). */
  mq_kind kinds[MQ_O_NKINDS];
  /* Calls up into the layers above, set at open by api/ (the only layer
   * that sees them all): running and freeing a host function (masq_register)
   * for the VM's builtin calls (vm/builtin.c); the library's sparse form
   * of a builtin called with a sparse first (or second) argument, false when it has
   * none (stdlib/lib_sparse.c, for vm/builtin.c); and running a file for
   * the VM's IMPORT (vm/vm.c). */
  struct {
    mq_value (*host_call)(mq_state *S, const struct mq_builtin *b, mq_value *args);
    bool (*sparse_call)(mq_state *S, const struct mq_builtin *b, mq_value *args, mq_value *out);
    void (*host_free)(mq_state *S, struct mq_hostfn *h);
    void (*import)(mq_state *S, const char *path, const struct mq_source *from);
  } hooks;

  /* Handles the host holds and the masq_errorf() message (api/api_int.h);
   * NULL until the host first uses a tensor handle or a host function. */
  struct mq_host *host;
};

/* --- memory ------------------------------------------------------------ */

/* Resizes a block through the host allocator, counting bytes against the
 * memory limit. Throws MASQ_ERR_MEMORY on failure (never returns NULL when
 * nsize > 0). */
MQ_INTERNAL void *mq_realloc(mq_state *S, void *p, size_t osize, size_t nsize);
MQ_INTERNAL void *mq_alloc(mq_state *S, size_t n);     /* uninitialized */
MQ_INTERNAL void *mq_calloc(mq_state *S, size_t n);    /* zeroed */
MQ_INTERNAL void mq_free(mq_state *S, void *p, size_t n);
MQ_INTERNAL char *mq_strdup(mq_state *S, const char *s);
/* Tensor buffers: blocks of at least MQ_BIG_BYTES go through the state's
 * cache of recently freed ones (an exact size match is reused); the cache
 * is emptied when the memory limit would be exceeded, and at close. From
 * 128 KiB: glibc's malloc hands out such blocks by mmap, or trims them off
 * the heap when freed, so each one is fresh pages, faulted in again. */
#define MQ_BIG_BYTES ((size_t)1 << 17)
MQ_INTERNAL void *mq_alloc_big(mq_state *S, size_t n);
MQ_INTERNAL void mq_free_big(mq_state *S, void *p, size_t n);
MQ_INTERNAL void mq_bigcache_flush(mq_state *S);
/* A buffer of at least [n] bytes that the state keeps across calls (freed
 * by mq_bigcache_flush: at close, and when memory runs short), for one
 * kernel at a time: valid until the next mq_kept or allocation that may
 * flush, so a kernel takes it after its last allocation. Raises when out
 * of memory. */
MQ_INTERNAL void *mq_kept(mq_state *S, size_t n);
MQ_INTERNAL void mq_strfree(mq_state *S, char *s);

/* Grows *arr (of *cap elements of size esize) to hold at least need. */
#define MQ_GROW(S, arr, cap, need)                                              \
  do {                                                                         \
    if ((need) > (cap)) {                                                      \
      size_t nc_ = (cap) ? (size_t)(cap) * 2 : 8;                              \
      while (nc_ < (size_t)(need)) nc_ *= 2;                                   \
      /* an int capacity stops at INT32_MAX instead of wrapping */             \
      if (sizeof(cap) < sizeof(size_t) && nc_ > (size_t)INT32_MAX)              \
        nc_ = (size_t)INT32_MAX;                                               \
      (arr) = mq_realloc((S), (arr), (size_t)(cap) * sizeof *(arr),            \
                         nc_ * sizeof *(arr));                                 \
      (cap) = nc_;                                                             \
    }                                                                          \
  } while (0)

/* --- the pool of temporaries -------------------------------------------- */

/* Scratch memory that lives until the current operation ends. */
MQ_INTERNAL void *mq_scratch(mq_state *S, size_t n);
/* Hands object [o] to the pool: the pool holds one reference to it. */
MQ_INTERNAL void mq_pool_own(mq_state *S, mq_obj *o);
static inline size_t mq_pool_mark(const mq_state *S) { return S->pool_len; }
/* Releases everything the pool took since [mark]. */
MQ_INTERNAL void mq_pool_drain(mq_state *S, size_t mark);

/* --- errors ------------------------------------------------------------- */

/* Raises a runtime error with a printf-style message. */
MQ_INTERNAL MQ_NORETURN void mq_error(mq_state *S, const char *fmt, ...) MQ_PRINTF(2, 3);
/* Raises an error of a given status. */
MQ_INTERNAL MQ_NORETURN void mq_throw(mq_state *S, masq_status st, const char *fmt, ...)
    MQ_PRINTF(3, 4);
MQ_INTERNAL MQ_NORETURN void mq_vthrow(mq_state *S, masq_status st, const char *fmt,
                                       va_list ap) MQ_PRINTF(3, 0);
/* Raises a runtime error located at [span] of the source being compiled or
 * run (instead of the span of the current instruction). */
MQ_INTERNAL MQ_NORETURN void mq_error_at(mq_state *S, mq_span span, const char *fmt, ...)
    MQ_PRINTF(3, 4);

/* Raises a runtime error with [message] (not a format) located at [span]
 * of [src] (borrowed: the caller keeps it alive until the error is
 * reported). */
MQ_INTERNAL MQ_NORETURN void mq_raise_at(mq_state *S, const struct mq_source *src, mq_span span,
                                         const char *message);
/* Passes the error just caught by a bare boundary on to the next one out,
 * its message and location untouched. */
MQ_INTERNAL MQ_NORETURN void mq_rethrow(mq_state *S, masq_status st);

/* Runs fn(S, ud) with an error boundary; returns MASQ_OK or the status it
 * failed with (message in S->err_message). Drains the pool to the mark taken
 * on entry when it fails. */
typedef void (*mq_pfunc)(mq_state *S, void *ud);
MQ_INTERNAL masq_status mq_protect(mq_state *S, mq_pfunc fn, void *ud);

/* Polls the interrupt hook and flag; throws MASQ_ERR_INTERRUPTED if set.
 * Cheap enough to call from kernel row loops. */
MQ_INTERNAL void mq_check_interrupt(mq_state *S);
/* The same poll without the throw: true if an interrupt is due (the next
 * mq_check_interrupt raises it). For loops that must stop cleanly first. */
MQ_INTERNAL bool mq_interrupt_pending(mq_state *S);
/* For work that goes by steps (loop rounds, calls, parsed tokens, compiled
 * nodes): a poll is due on the flag every time, on the host's hook every
 * 1024 steps. mq_poll checks when due; mq_poll_due lets a caller save its
 * place first. */
static inline bool mq_poll_due(mq_state *S) {
  return S->interrupted || (++S->poll_counter & 1023) == 0;
}
static inline void mq_poll(mq_state *S) {
  if (mq_poll_due(S)) mq_check_interrupt(S);
}

/* Around every call of a config hook (interrupt, write, write_err,
 * picture, columns, error, a wrapped buffer's release). */
static inline void mq_hook_enter(mq_state *S) { S->in_hook++; }
static inline void mq_hook_leave(mq_state *S) { S->in_hook--; }

/* --- text buffers ------------------------------------------------------- */

MQ_INTERNAL void mq_buf_putn(mq_state *S, mq_buf *b, const char *s, size_t n);
MQ_INTERNAL void mq_buf_puts(mq_state *S, mq_buf *b, const char *s);
MQ_INTERNAL void mq_buf_putc(mq_state *S, mq_buf *b, char c);
MQ_INTERNAL void mq_buf_printf(mq_state *S, mq_buf *b, const char *fmt, ...) MQ_PRINTF(3, 4);
MQ_INTERNAL void mq_buf_free(mq_state *S, mq_buf *b);
/* Writes text to the host's output hook (print). */
MQ_INTERNAL void mq_write(mq_state *S, const char *s, size_t n);
/* Writes text to the host's error output hook (eprint). */
MQ_INTERNAL void mq_write_err(mq_state *S, const char *s, size_t n);

/* --- random numbers ----------------------------------------------------- */

MQ_INTERNAL void mq_rng_seed(mq_state *S, uint64_t seed);
MQ_INTERNAL uint64_t mq_rng_next(mq_state *S);
MQ_INTERNAL double mq_rng_uniform(mq_state *S);  /* [0, 1) */
MQ_INTERNAL double mq_rng_normal(mq_state *S);   /* N(0, 1) */

#endif
