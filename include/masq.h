/* masq.h - the one public header of libmasq, the masq interpreter.
 *
 * masq is a small language for masked tensor expressions. A host opens an
 * interpreter with masq_open(), evaluates source text with masq_eval(), reads
 * diagnostics with masq_last_error(), and closes it with masq_close().
 *
 * Rules that hold for every function here:
 *  - Nothing aborts, exits or longjmps into host code. Every failure is a
 *    masq_status; the message and its source location stay readable through
 *    masq_last_error() until the next call on the same state. A NULL state,
 *    handle or out-pointer is MASQ_ERR_USAGE with a message, never a crash
 *    (with a NULL state there is nowhere to put the message).
 *  - There is no global mutable state. Each masq_state is independent; use one
 *    state per thread (a state is not safe to use from two threads at once).
 *    Objects of one state (tensor handles) must never be given to another.
 *    The one exception is masq_interrupt(), callable from any thread or from
 *    a signal handler.
 *  - Strings passed in are borrowed for the duration of the call.
 *  - Tensor handles (masq_tensor *) are refcounted. Arguments are borrowed;
 *    every masq_tensor * a function hands back through an out-parameter is a
 *    new reference that the host gives back with masq_tensor_release().
 *  - Masks: the validity pointer of a tensor holds 1 where the element is
 *    VALID (use it) and 0 where it is masked out. That is torch.masked's
 *    polarity and the OPPOSITE of numpy.ma, whose mask is True where the
 *    element is invalid: pass ~ma.getmaskarray(a), not the numpy mask.
 *
 * The embedding guide, with a complete example: docs/EMBEDDING.md.
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
  MASQ_INCOMPLETE = 6,      /* masq_eval with MASQ_EVAL_PARTIAL: the source ends
                               inside an open bracket or block, or with an `if`
                               block an `else` may follow; read a line more.
                               A string ends on its line: one left open before
                               a newline is a syntax error at once              */
  MASQ_EXIT = 7             /* the script called exit(code): not an error. The
                               run stopped there (no try catches it), its
                               globals are kept, and masq_last_error()->exit_code
                               holds the code; the process is never exited   */
} masq_status;

/* Allocator hook, shaped like Lua's: [ptr] NULL allocates, [nsize] 0 frees,
 * [osize] is always the exact size of the block being resized or freed.
 * Returning NULL on a non-zero [nsize] is an allocation failure, which masq
 * turns into MASQ_ERR_MEMORY. */
typedef void *(*masq_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);

/* Everything a host can choose when opening an interpreter. Fill it with
 * masq_config_init() and then change the fields you care about.
 *
 * The hooks below (and a wrapped buffer's release) run in the middle of an
 * operation on the state and are handed masq's own buffers: they must not
 * call back into masq, except masq_interrupt() and masq_last_error(). A
 * call from one returns MASQ_ERR_USAGE and does nothing; masq_close() from
 * one is refused and the call that is running fails with MASQ_ERR_USAGE.
 * The allocator must not call masq at all. (Host functions may call back:
 * see masq_cfunction.) */
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
  /* Where eprint() writes (a script's diagnostics: usage, warnings). NULL:
   * standard error. */
  void (*write_err)(void *ud, const char *text, size_t len);
  void *write_err_ud;
  /* The width in characters of the terminal the output goes to, for the
   * pictures (show_mask, hist, plot, heatmap), asked at each picture so a
   * resized window counts. NULL, or a return <= 0: 80. The library never
   * asks the terminal itself. */
  int (*columns)(void *ud);
  void *columns_ud;
  /* For hosts that can show images (a notebook): each picture drawn
   * without file= comes here, as its text (what write would have got) and
   * as a standalone SVG document, instead of going to write; a frontend
   * shows whichever it can. svg_len is 0 when there is nothing to draw
   * (the text says why). Both are valid only during the call. NULL:
   * pictures are text through write. */
  void (*picture)(void *ud, const char *text, size_t text_len, const char *svg,
                  size_t svg_len);
  void *picture_ud;
} masq_config;

/* Library groups for masq_config.libs. */
#define MASQ_LIB_CORE 1u    /* tensors, masks, math, shapes, the language: always open */
#define MASQ_LIB_IO 2u      /* load, save, load_csv, save_csv and import: the file system */
#define MASQ_LIB_DEFAULT MASQ_LIB_CORE
#define MASQ_LIB_ALL (MASQ_LIB_CORE | MASQ_LIB_IO)

/* Fills [cfg] with the defaults described on each field (libs is
 * MASQ_LIB_DEFAULT, everything else zero/NULL). */
MASQ_API void masq_config_init(masq_config *cfg);

/* Opens a new interpreter with the builtin library loaded. [cfg] may be NULL
 * for the defaults; it is copied. Returns NULL only if the first allocation
 * fails. */
MASQ_API masq_state *masq_open(const masq_config *cfg);

/* Frees [M] and everything it owns, including the tensor handles the host
 * still holds (so wrapped buffers' release callbacks run now); every handle
 * of [M] is invalid afterwards. [M] may be NULL. From inside a call on [M]
 * (a host function or a hook) it is refused: the state stays open and the
 * call that is running fails with MASQ_ERR_USAGE. */
MASQ_API void masq_close(masq_state *M);

/* Gives back the memory [M] keeps for reuse while it stays open: the tensor
 * buffers it caches after they are freed (up to 512 MB, reused by the next
 * computation of the same sizes), the cycles nothing holds (outside a call
 * only), and, with glibc's malloc, the free memory malloc keeps (malloc_trim),
 * so a long-lived state's resident size falls back after a big temporary.
 * Values the state still holds stay. Returns the bytes masq gave back to the
 * allocator (0 for a NULL [M]). Costs the next computation of those sizes
 * fresh pages. */
MASQ_API size_t masq_trim(masq_state *M);

/* Flags for masq_eval. */
enum {
  MASQ_EVAL_ECHO = 1,   /* print the value of each expression statement (REPL) */
  MASQ_EVAL_PARTIAL = 2, /* return MASQ_INCOMPLETE instead of running or of a
                            syntax error when more lines may complete the source
                            (see MASQ_INCOMPLETE; a REPL) */
  MASQ_EVAL_RESULT = 4  /* keep the value of each top-level expression statement
                           that is not none in the global `_`, as ECHO does,
                           without printing it: a host reads the script's
                           result with masq_get_global(M, "_", ...) (set `_`
                           to none first to tell "no value" apart) */
};

/* Compiles and runs [len] bytes of [source] (NULL only if [len] is 0).
 * [chunkname] names the source in diagnostics ("script.masq", "<expr>",
 * "<stdin>"; NULL: "<string>"). Globals persist across calls on the same
 * state. An eval is atomic for globals: if it fails (any error, the memory
 * limit included), every global it assigned or defined, functions too, is
 * back to what it was before it started (new ones undefined again) and the
 * values only they held are freed, so a script that filled the memory
 * limit through a global leaves the state as usable as before. Objects
 * changed in place (append to an existing list) stay changed. masq_call is
 * atomic the same way; an eval nested in a host function commits into the
 * eval that called it. */
MASQ_API masq_status masq_eval(masq_state *M, const char *source, size_t len,
                               const char *chunkname, int flags);

/* Reads the file at [path] and runs it as a script; a first line starting
 * with "#!" is skipped. */
MASQ_API masq_status masq_eval_file(masq_state *M, const char *path);

/* The last error on [M]: [message] is the bare text ("unexpected ')'"),
 * [rendered] the full diagnostic with file:line:col, source line and carets,
 * as the CLI prints it. Line and column are 1-based; 0 when there is no
 * location. Valid until the next call on [M]. [M] NULL gives an error that
 * says so. */
typedef struct masq_error {
  masq_status status;
  const char *message;
  const char *rendered;
  const char *chunkname;
  int line, column, end_column;
  int exit_code; /* with MASQ_EXIT: the code the script passed to exit() (0 to 255) */
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

/* The same for completing a method call `x.NAME` (which means NAME(x)):
 * only the builtins and host functions whose first parameter takes a tensor
 * (named x, a, y or data in their signature, the builtins' convention). */
MASQ_API void masq_complete_methods(masq_state *M, const char *prefix,
                                    void (*fn)(void *ud, const char *name), void *ud);

/* The signature and one-line documentation of builtin or host function
 * [name] ("softmax(x, dim) -- ..."), or the syntax of keyword [name]
 * ("while cond { ... }: ..."), or NULL if there is none. Borrowed; valid
 * while [M] is open. */
MASQ_API const char *masq_doc(masq_state *M, const char *name);

/* Calls [fn] once for every user-defined global with its name and a one-line
 * summary of its value ("float32 tensor (2, 3), masked"): a global the
 * script or host bound, one named like a builtin (`mean = 5`) included. */
MASQ_API void masq_globals(masq_state *M,
                           void (*fn)(void *ud, const char *name, const char *summary),
                           void *ud);

/* Prints the bytecode of [source] with its source lines, like `luac -l`. */
MASQ_API masq_status masq_disassemble(masq_state *M, const char *source, size_t len,
                                      const char *chunkname);

/* The version of the library actually linked ("0.1.0"), to compare with
 * MASQ_VERSION_STRING of the header the host was compiled against. */
MASQ_API const char *masq_version(void);

/* --- tensors across the boundary -----------------------------------------------
 *
 * A masq_tensor is a refcounted handle to an immutable masked tensor: a
 * dtype, a shape, strided data and an optional validity mask. masq never
 * writes to the memory of any tensor, so a script cannot change a buffer the
 * host wrapped; operations make new tensors (some of them views that share
 * the memory, e.g. x[0] or a transpose). Handles belong to the state that
 * made them. */
typedef struct mq_tensor masq_tensor;

/* Element types. The values are fixed (they are part of the ABI). */
typedef enum masq_dtype {
  MASQ_BOOL = 0,    /* uint8_t: 0 is false, any other byte true (see
                       masq_tensor_wrap for bytes other than 0 and 1) */
  MASQ_INT64 = 1,   /* int64_t */
  MASQ_FLOAT32 = 2, /* float */
  MASQ_FLOAT64 = 3, /* double */
  /* storage dtypes (docs/LANGUAGE.md, "dtypes"): stored at their size,
   * computed in int64 or float32 */
  MASQ_INT8 = 4,    /* int8_t */
  MASQ_INT16 = 5,   /* int16_t */
  MASQ_INT32 = 6,   /* int32_t */
  MASQ_UINT8 = 7,   /* uint8_t */
  MASQ_FLOAT16 = 8, /* IEEE binary16, as uint16_t bits */
  MASQ_BFLOAT16 = 9 /* bfloat16 (the top half of a float), as uint16_t bits */
} masq_dtype;

/* Tensors have at most this many dimensions. */
#define MASQ_MAX_DIMS 8

/* Flags of masq_tensor_desc. */
#define MASQ_TENSOR_READONLY 1u /* the host's promise that the wrapped memory is
                                   never written while masq uses it (an mmapped
                                   file, a numpy array with writeable=False).
                                   masq writes no tensor memory either way; it
                                   keeps the flag and reports it on every view of
                                   the buffer, so a binding that hands masq's
                                   tensors on can mark them read-only too. */
#define MASQ_TENSOR_HOST 2u     /* reported by masq_tensor_info() only: the data
                                   lives in a buffer the host wrapped (the tensor
                                   is that buffer or a view of it) */

/* Describes a tensor's memory, in both directions: the host fills one in for
 * masq_tensor_wrap() and masq_tensor_new(), and masq_tensor_info() fills one
 * in to show a handle's memory. Strides count elements, not bytes (DLPack's
 * convention; numpy's byte strides divided by the item size). */
typedef struct masq_tensor_desc {
  masq_dtype dtype;
  int ndim;                     /* 0 (a scalar) to MASQ_MAX_DIMS */
  const int64_t *shape;         /* ndim sizes, each >= 0; may be NULL if ndim is 0 */
  const int64_t *strides;       /* ndim strides >= 0 in elements (0 repeats an
                                   element: broadcasting); NULL: C-contiguous */
  const void *data;             /* element 0; aligned for the dtype. May be NULL
                                   only when the tensor has no elements (and for
                                   masq_tensor_new, which then fills zeros) */
  const uint8_t *valid;         /* validity mask of the same shape, nonzero =
                                   valid (NOT numpy.ma's polarity); NULL: all
                                   valid, a plain tensor */
  const int64_t *valid_strides; /* strides of [valid] in elements (bytes);
                                   NULL: C-contiguous */
  unsigned flags;               /* MASQ_TENSOR_* */
  /* masq_tensor_wrap only: called exactly once with [release_ud] when masq no
   * longer uses [data] or [valid] (the last handle and the last view inside
   * the state are gone, or masq_close() runs). NULL: the host keeps the memory
   * alive for as long as the state may use it. It must not call into masq. */
  void (*release)(void *ud);
  void *release_ud;
} masq_tensor_desc;

/* Makes a tensor that uses the host's memory in place, without copying: the
 * data at [desc]->data (and the mask at [desc]->valid, if any) with the given
 * shape and strides. Scripts see the memory as it is when they run, so the
 * host may change the buffer between two calls into masq; tensors computed
 * earlier (a sparse tensor built from it, a result, an autograd graph) keep
 * what they read and are not affected unless they are views of it.
 * Another host thread may even write the buffer during a call: masq reads
 * positions, lengths and counts from one copy it makes first, so no index
 * or mask the host changes can make masq read or write outside its memory
 * or fail otherwise than with an error; but the values computed from memory
 * that changed during the call are unspecified (any mix of old and new).
 * Bool bytes (MASQ_BOOL data, and [valid]) other than 0 and 1 mean true:
 * when the buffer has any at the wrap, masq uses its own 0/1 copy of it
 * instead (so it does not see the host's later changes, masq_tensor_info
 * shows masq's memory there, and [release] runs at once if nothing of the
 * host's is still used). Bytes other than 0 and 1 written after the wrap
 * are never unsafe, but what they count as is unspecified: write 0 and 1.
 * The memory is not counted against memory_limit. On success *out is a new
 * reference and masq owns the obligation to call [release]; on failure *out
 * is NULL and [release] is never called: the buffer is still the host's.
 * Errors: MASQ_ERR_USAGE for an unknown dtype, more than MASQ_MAX_DIMS
 * dimensions, a negative size or stride, a misaligned or NULL data pointer. */
MASQ_API masq_status masq_tensor_wrap(masq_state *M, const masq_tensor_desc *desc,
                                      masq_tensor **out);

/* Makes a tensor that owns a contiguous copy of what [desc] describes (data
 * NULL: zeros; bool bytes other than 0 as 1). [release] is ignored: the
 * host's buffer is only read during the call. *out is a new reference.
 * Errors as masq_tensor_wrap(), plus MASQ_ERR_MEMORY past the memory limit. */
MASQ_API masq_status masq_tensor_new(masq_state *M, const masq_tensor_desc *desc,
                                     masq_tensor **out);

/* A 0-d tensor holding [value] as float64 that behaves like a number written
 * in a script: in arithmetic it does not widen the other operand's dtype
 * (float32 tensor * it stays float32). *out is a new reference. */
MASQ_API masq_status masq_tensor_scalar(masq_state *M, double value, masq_tensor **out);

/* Describes [t]'s memory in *out: dtype, ndim, shape, strides, the address of
 * element 0, the mask (valid NULL for a plain tensor; its strides may be 0
 * where one mask entry covers a broadcast dimension) and flags
 * (MASQ_TENSOR_HOST if the data is wrapped host memory, READONLY as the host
 * passed it, and READONLY alone for a file a script mapped with
 * load(path, mmap=true): writing there would fault). The pointers are borrowed: valid while the host holds [t].
 * Data may be strided and the mask broadcast; ask masq_tensor_contiguous()
 * for a dense layout. release and release_ud are set to NULL. */
MASQ_API masq_status masq_tensor_info(masq_state *M, const masq_tensor *t,
                                      masq_tensor_desc *out);

/* A handle to [t] laid out C-contiguously, data and mask alike (a mask,
 * if any, as a dense byte array of the same shape): [t] itself, retained,
 * when it already is; otherwise a copy. *out is a new reference. */
MASQ_API masq_status masq_tensor_contiguous(masq_state *M, masq_tensor *t, masq_tensor **out);

/* The single element of a one-element tensor, as a double. Errors
 * (MASQ_ERR_RUNTIME) if [t] has another number of elements or the element
 * is masked out. */
MASQ_API masq_status masq_tensor_item(masq_state *M, const masq_tensor *t, double *out);
/* The same for an int64 or bool tensor, exactly (a double holds ints only up
 * to 2^53); a float tensor is MASQ_ERR_USAGE. */
MASQ_API masq_status masq_tensor_item_int(masq_state *M, const masq_tensor *t, int64_t *out);

/* Takes one more reference to [t], which the host must hold already (as a
 * new reference or as an argument of a running host function). */
MASQ_API masq_status masq_tensor_retain(masq_state *M, masq_tensor *t);

/* Gives back one reference. When no handle, global or value inside masq
 * uses the tensor any more, it is freed (and a wrapped buffer's release
 * callback runs). [t] NULL does nothing. masq counts the host's references,
 * so a pointer the host holds none to (released twice, never returned by
 * masq) is MASQ_ERR_USAGE rather than a double free. masq_close() releases
 * the handles the host still holds, so after it they are all invalid. */
MASQ_API masq_status masq_tensor_release(masq_state *M, masq_tensor *t);

/* --- globals ----------------------------------------------------------------------- */

/* Binds global [name] (a masq identifier) to tensor [t] (borrowed: the
 * global takes its own reference; NULL binds `none`). Scripts evaluated
 * later see it as a variable. */
MASQ_API masq_status masq_set_global(masq_state *M, const char *name, masq_tensor *t);

/* The value of global [name] as a tensor in *out (a new reference). A
 * number or bool becomes a 0-d tensor (int64, float64 or bool) and a list of
 * numbers a tensor; `none` gives *out = NULL and MASQ_OK. An undefined
 * global, or one holding a function, string or other list, is
 * MASQ_ERR_USAGE, and so is a list of more numbers than memory holds (one
 * that shares its sublists may stand for 10^12 of them): that is known
 * before the list is walked. The conversion polls the interrupt hook; an
 * interruption is MASQ_ERR_INTERRUPTED. */
MASQ_API masq_status masq_get_global(masq_state *M, const char *name, masq_tensor **out);

/* Binds global [name] to a float number (as if the script said `name = 2.5`). */
MASQ_API masq_status masq_set_number(masq_state *M, const char *name, double value);

/* Binds global [name] to an int (`name = 3`), the type sizes and dims need. */
MASQ_API masq_status masq_set_int(masq_state *M, const char *name, int64_t value);

/* Binds global [name] to a string (copied), as if the script said
 * `name = "..."`. */
MASQ_API masq_status masq_set_string(masq_state *M, const char *name, const char *s);

/* As masq_set_string, for [len] bytes at [s], which may hold NUL bytes
 * (NULL only if [len] is 0): what masq_get_string gives back. */
MASQ_API masq_status masq_set_lstring(masq_state *M, const char *name, const char *s,
                                      size_t len);

/* Binds global [name] to a list of [n] strings (copied), e.g. a program's
 * arguments: the masq command sets `args` this way for a script. */
MASQ_API masq_status masq_set_strings(masq_state *M, const char *name, int n,
                                      const char *const *strs);

/* As masq_set_strings, with strs[i] of lens[i] bytes, which may hold NUL
 * bytes (strs[i] NULL only if lens[i] is 0); [lens] NULL: NUL-terminated. */
MASQ_API masq_status masq_set_lstrings(masq_state *M, const char *name, int n,
                                       const char *const *strs, const size_t *lens);

/* Copies the string global [name] into [buf] of [size] bytes, like
 * snprintf: NUL-terminated, cut to size - 1 bytes, and *len (if not NULL)
 * set to the string's whole length, so a host can call again with a
 * buffer of *len + 1 bytes (size 0: only the length; buf may be NULL). A
 * script's string may hold NUL bytes ("a\0b"): all *len bytes are copied,
 * so use *len, not strlen. A global that is not a string is MASQ_ERR_USAGE. */
MASQ_API masq_status masq_get_string(masq_state *M, const char *name, char *buf, size_t size,
                                     size_t *len);

/* The value of global [name] as a double: a number or bool, or a tensor
 * with one valid element. Anything else is an error. */
MASQ_API masq_status masq_get_number(masq_state *M, const char *name, double *out);
/* The value of global [name] as an exact int64: an int or bool, or an int64
 * or bool tensor with one valid element. A float is MASQ_ERR_USAGE. */
MASQ_API masq_status masq_get_int(masq_state *M, const char *name, int64_t *out);

/* An identity for the value of global [name]: *id is the same for two
 * globals bound to the same object (a list, dict, string, function or
 * tensor) and different for two different objects while both live; 0 for
 * none, a number or a bool, which have no identity. For hosts that convert
 * nested lists (which may share sublists, or hold themselves) to their own
 * values: each list converted once, as many times as it occurs. An
 * undefined global is MASQ_ERR_USAGE. */
MASQ_API masq_status masq_get_identity(masq_state *M, const char *name, uint64_t *id);

/* --- calling masq from C ---------------------------------------------------------- */

/* Calls the function bound to global [fname] (defined by a script, a
 * builtin, or a host function) with [argc] tensors at [argv] as its
 * positional arguments (borrowed; at most 255). On success *result is the
 * returned value as a tensor (a new reference), converted as in
 * masq_get_global(), or NULL when the function returned `none`; [result]
 * may be NULL to discard it. Errors inside the function are reported as
 * masq_eval() reports them, with file:line:col, carets and the calls that
 * led there. */
MASQ_API masq_status masq_call(masq_state *M, const char *fname, int argc,
                               masq_tensor *const *argv, masq_tensor **result);

/* --- host functions ---------------------------------------------------------------- */

/* A C function callable from scripts. [argv] holds [argc] borrowed tensors
 * (retain one to keep it past the call); a number passed by the script
 * arrives as a 0-d tensor (int64, float64 or bool) that behaves as in
 * masq_tensor_scalar(), a list of numbers as a tensor, and `none` (e.g. an
 * omitted parameter whose default is none) as NULL. To return a value, store
 * a new reference in *result (a fresh tensor, or an argument after
 * masq_tensor_retain()); leaving it NULL returns `none`. To fail, return an
 * error status, best `return masq_errorf(M, "...")`: the script stops with
 * that message, located at the call with carets like any masq error.
 * MASQ_ERR_MEMORY and MASQ_ERR_INTERRUPTED keep their meaning; other
 * statuses become runtime errors. The function may call any masq_ function
 * on [M] (masq_eval, masq_call, ...) except masq_close() (refused: the
 * script stops with MASQ_ERR_USAGE at the call); it must return normally
 * (no longjmp or C++ exception through masq). An interrupt that stops a
 * call back into masq stops the script around it too, even if the
 * function returns success. */
typedef masq_status (*masq_cfunction)(masq_state *M, void *ud, int argc,
                                      masq_tensor *const *argv, masq_tensor **result);

/* Makes [fn] callable from scripts. [signature] is either a bare name
 * ("clip"), and the function receives every positional argument the script
 * passes, or a name with parameters in the builtins' notation,
 * "clip(x, lo=0, hi=none)", and masq checks the call against it first
 * (arity, keywords, defaults: none, true, false or a number; one *rest
 * parameter collects extra positional arguments, and those after it are
 * keyword-only; before it, a parameter without a default cannot follow one
 * with a default), so [fn] receives exactly
 * one argument per parameter, rest expanded in place. [ud] is passed to every
 * call. [doc] (may be NULL) is what masq_doc() and the REPL's :help show.
 * A malformed signature is MASQ_ERR_USAGE with a message that says what
 * is wrong. Registering a name again replaces the earlier binding,
 * builtins included. */
MASQ_API masq_status masq_register(masq_state *M, const char *signature, masq_cfunction fn,
                                   void *ud, const char *doc);

/* Formats an error message printf-style for the host function that is
 * running and returns MASQ_ERR_RUNTIME, so a host function can say
 * `return masq_errorf(M, "lengths must be int64, got %s", name);`. */
MASQ_API masq_status masq_errorf(masq_state *M, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* --- autograd ------------------------------------------------------------------------- *
 *
 * As in scripts (docs/LANGUAGE.md): tensors are values, so requiring grad
 * makes a new leaf rather than changing a tensor in place; computations on
 * leaves record a graph; backward adds gradients into the leaves. Gradients
 * are masked tensors: a masked-out gradient means none flowed there. */

/* *out = a new leaf that shares [t]'s data and mask (for a wrapped buffer:
 * still the host's memory, no copy) and requires grad; [t] must be float.
 * Hand the leaf to scripts (masq_set_global, masq_call) and read its
 * gradient after a backward pass. *out is a new reference. */
MASQ_API masq_status masq_requires_grad(masq_state *M, masq_tensor *t, masq_tensor **out);

/* Backpropagates from [loss] (one element, computed from leaves that
 * require grad), adding the gradient into every leaf reached, and frees
 * loss's graph: run the forward computation again for another pass. */
MASQ_API masq_status masq_backward(masq_state *M, masq_tensor *loss);

/* *out = the gradient accumulated in leaf [t] (a new reference; masq's
 * memory, never the host's buffer, in t's dtype and shape), or NULL if no
 * backward pass has reached [t] yet. */
MASQ_API masq_status masq_grad(masq_state *M, masq_tensor *t, masq_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
