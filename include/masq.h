/* masq.h - the one public header of libmasq, the masq interpreter.
 *
 * masq is a small language for masked tensor expressions. A host opens an
 * interpreter with masq_open(), evaluates source text with masq_eval(), reads
 * diagnostics with masq_last_error(), and closes it with masq_close().
 *
 * Rules that hold for every function here:
 *  - Nothing aborts, exits or longjmps into host code. Every failure is a
 *    masq_status; the message and its source location stay readable through
 *    masq_last_error() until the next call on the same state.
 *  - There is no global mutable state. Each masq_state is independent; use one
 *    state per thread (a state is not safe to use from two threads at once).
 *  - Strings passed in are borrowed for the duration of the call.
 */
#ifndef MASQ_H
#define MASQ_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define MASQ_API __attribute__((visibility("default")))
#else
#define MASQ_API
#endif

#define MASQ_VERSION_MAJOR 0
#define MASQ_VERSION_MINOR 1
#define MASQ_VERSION_PATCH 0
#define MASQ_VERSION_STRING "0.1.0"

/* An interpreter. Opaque; everything it owns is freed by masq_close(). */
typedef struct mq_state masq_state;

/* What a call returned. The numeric values are also the CLI's exit codes for
 * runtime (1) and syntax (3) errors. */
typedef enum masq_status {
  MASQ_OK = 0,
  MASQ_ERR_RUNTIME = 1,     /* shape or mask mismatch, bad argument, ...      */
  MASQ_ERR_USAGE = 2,       /* the host called the API wrongly                 */
  MASQ_ERR_SYNTAX = 3,      /* the source did not lex or parse                 */
  MASQ_ERR_MEMORY = 4,      /* an allocation failed or the memory limit was hit */
  MASQ_ERR_INTERRUPTED = 5, /* the interrupt hook asked the program to stop    */
  MASQ_INCOMPLETE = 6       /* masq_eval with MASQ_EVAL_PARTIAL: the source ends
                               inside an open bracket or string; read more     */
} masq_status;

/* Allocator hook, shaped like Lua's: [ptr] NULL allocates, [nsize] 0 frees,
 * [osize] is always the exact size of the block being resized or freed.
 * Returning NULL on a non-zero [nsize] is an allocation failure, which masq
 * turns into MASQ_ERR_MEMORY. */
typedef void *(*masq_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* Everything a host can choose when opening an interpreter. Fill it with
 * masq_config_init() and then change the fields you care about. */
typedef struct masq_config {
  masq_alloc_fn alloc;  /* NULL: the C library's realloc and free            */
  void *alloc_ud;       /* passed to [alloc]                                 */
  size_t memory_limit;  /* bytes the state may hold at once; 0: no limit     */
  /* Polled between instructions and inside long kernels; a non-zero return
   * stops the running program with MASQ_ERR_INTERRUPTED. NULL: never. */
  int (*interrupt)(void *ud);
  void *interrupt_ud;
  /* Where print() and echoed REPL values go. NULL: standard output. */
  void (*write)(void *ud, const char *text, size_t len);
  void *write_ud;
  /* Where rendered error messages go as they happen. NULL: nowhere (the host
   * reads them with masq_last_error()). */
  void (*error)(void *ud, const char *rendered);
  void *error_ud;
  /* Colour masked-out entries and errors with ANSI escapes (REPL on a tty). */
  int color;
  /* Which library groups to open (MASQ_LIB_* bits). The default leaves out
   * MASQ_LIB_IO, so a script from an untrusted user cannot touch the file
   * system (no load, save or import) unless the host turns it on. */
  unsigned libs;
} masq_config;

/* Library groups for masq_config.libs. */
#define MASQ_LIB_CORE 1u    /* tensors, masks, math, shapes, the language: always open */
#define MASQ_LIB_IO 2u      /* load, save (.npy/.npz) and import: the file system */
#define MASQ_LIB_DEFAULT MASQ_LIB_CORE
#define MASQ_LIB_ALL (MASQ_LIB_CORE | MASQ_LIB_IO)

/* Fills [cfg] with the defaults described on each field (libs is
 * MASQ_LIB_DEFAULT, everything else zero/NULL). */
MASQ_API void masq_config_init(masq_config *cfg);

/* Opens a new interpreter with the builtin library loaded. [cfg] may be NULL
 * for the defaults; it is copied. Returns NULL only if the first allocation
 * fails. */
MASQ_API masq_state *masq_open(const masq_config *cfg);

/* Frees [M] and everything it owns. [M] may be NULL. */
MASQ_API void masq_close(masq_state *M);

/* Flags for masq_eval. */
enum {
  MASQ_EVAL_ECHO = 1,   /* print the value of each expression statement (REPL) */
  MASQ_EVAL_PARTIAL = 2 /* return MASQ_INCOMPLETE instead of a syntax error when
                           the source ends inside a bracket or string (REPL) */
};

/* Compiles and runs [len] bytes of [source]. [chunkname] names the source in
 * diagnostics ("script.masq", "<expr>", "<stdin>"). Globals persist across
 * calls on the same state. On error the state is still usable. */
MASQ_API masq_status masq_eval(masq_state *M, const char *source, size_t len,
                               const char *chunkname, int flags);

/* Reads the file at [path] and runs it as a script; a first line starting
 * with "#!" is skipped. */
MASQ_API masq_status masq_eval_file(masq_state *M, const char *path);

/* The last error on [M]: [message] is the bare text ("unexpected ')'"),
 * [rendered] the full diagnostic with file:line:col, source line and carets,
 * as the CLI prints it. Line and column are 1-based; 0 when there is no
 * location. Valid until the next call on [M]. */
typedef struct masq_error {
  masq_status status;
  const char *message;
  const char *rendered;
  const char *chunkname;
  int line, column, end_column;
} masq_error;
MASQ_API const masq_error *masq_last_error(const masq_state *M);

/* Asks the running program to stop at the next safe point, as if the
 * interrupt hook had returned non-zero. The only function that may be called
 * from a signal handler or from another thread. */
MASQ_API void masq_interrupt(masq_state *M);

/* Names of the builtins and globals that start with [prefix], for completion.
 * Calls [fn] once per name. */
MASQ_API void masq_complete(masq_state *M, const char *prefix,
                            void (*fn)(void *ud, const char *name), void *ud);

/* The one-line documentation of builtin [name] ("softmax(x, dim): ..."), or
 * NULL if there is no such builtin. Borrowed; valid while [M] is open. */
MASQ_API const char *masq_doc(masq_state *M, const char *name);

/* Calls [fn] once for every user-defined global with its name and a one-line
 * summary of its value ("float32 tensor (2, 3), masked"). */
MASQ_API void masq_globals(masq_state *M,
                           void (*fn)(void *ud, const char *name, const char *summary),
                           void *ud);

/* Prints the bytecode of [source] with its source lines, like `luac -l`. */
MASQ_API masq_status masq_disassemble(masq_state *M, const char *source, size_t len,
                                      const char *chunkname);

#ifdef __cplusplus
}
#endif
#endif
