/* pymasq.h - the masq Python module's shared declarations.
 *
 * The module is a host of include/masq.h like any other (docs/PYTHON.md):
 * a pm_state wraps one masq_state; pm_tensor is a Python object that holds
 * one masq_tensor handle and exports its data (or its validity mask) through
 * the buffer protocol, so numpy arrays of masq results share masq's memory.
 *
 * Threads and the GIL: masq runs with the GIL released. A State is busy
 * (depth > 0) while a call into masq runs; another thread that tries to use
 * it gets RuntimeError, and Python objects that die meanwhile (a pm_tensor
 * dropped on another thread, a wrapped numpy buffer masq lets go of) are
 * put on lists that the State empties when it is idle again, with the GIL.
 *
 * Exceptions from the Python code masq calls back (host functions, the
 * picture callback, sys.stdout, signal handlers) are kept on the State for
 * the run that is going on (module.c, run) and raised when masq returns.
 *
 * The garbage collector sees every Python object a State holds: the host
 * functions, the picture callback, kept exceptions and the buffers masq
 * wraps (state_traverse), so a State in a reference cycle is freed.
 */
#ifndef PYMASQ_H
#define PYMASQ_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <masq.h>

/* A wrapped Python buffer (numpy data, and the mask made for it): released
 * by masq's callback, which only links it into pm_state.released (it may run
 * without the GIL); the State gives the buffers back when it is idle. */
typedef struct pm_wrap {
  struct pm_wrap *next, *prev; /* pm_state.live (prev unused on pm_state.released) */
  struct pm_state *st;
  Py_buffer views[2]; /* data, then the validity mask (if any) */
  int nviews;
  /* The wrap of a numpy.ma array bound to a global, its data in place: the
   * array, whose mask is turned again into views[1] (the module's own bool
   * array) before each call (pm_sync_masks), so an edit of the mask is seen
   * as one of the data is; and the global's name (a str), bound again if
   * the array had no mask at the bind and has one now. NULL otherwise. */
  PyObject *masked, *name;
} pm_wrap;

/* A tensor handle dropped by Python while its State was busy. */
typedef struct pm_dropped {
  struct pm_dropped *next;
  masq_tensor *t;
} pm_dropped;

/* A registered host function: the State owns the list. */
typedef struct pm_func {
  struct pm_func *next;
  struct pm_state *st;
  PyObject *fn;
} pm_func;

typedef struct pm_state {
  PyObject_HEAD
  masq_state *M;
  int depth;             /* calls into masq running (> 1: a host function calls back) */
  unsigned long owner;   /* the thread running them */
  int in_host;           /* Python host functions running on the owner thread */
  int compute;           /* 1 while a run (module.c) has the GIL released: the interrupt
                            hook may take it (0 in the module's own short statements, lists.c) */
  int on_main;           /* the owner is the main thread (signals are checked) */
  int stop;              /* a callback raised (pending): the interrupt hook stops masq */
  long long last_poll_ms;
  /* Of the run going on (module.c, run; a nested run keeps its own):
   * [pending] is an exception a callback raised that must reach the caller
   * as itself (it stops the script); [cause] the last ordinary exception a
   * host function raised, which masq reported as an error with the message
   * [cause_msg] (a str): the __cause__ of the masq.Error if that error is
   * the one that ends the run. */
  PyObject *pending, *cause, *cause_msg;
  pm_wrap *live;         /* buffers masq holds (see pm_wrap) */
  pm_wrap *released;     /* see pm_wrap */
  pm_dropped *dropped;   /* see pm_dropped */
  pm_func *funcs;        /* registered host functions, kept for the State's life */
  PyObject *on_picture;  /* State(picture=fn): fn(text, svg) for each picture, or NULL */
  PyObject *weaklist;
  int closed;            /* close() was called: no call enters; masq closes when exports is 0 */
  Py_ssize_t exports;    /* pm_tensors alive: numpy arrays that view masq's memory */
} pm_state;

typedef struct pm_tensor {
  PyObject_HEAD
  pm_state *st;          /* strong reference: the handle lives in st->M */
  masq_tensor *t;
  int mask;              /* export the validity mask instead of the data */
  masq_tensor_desc d;
  Py_ssize_t shape[MASQ_MAX_DIMS], strides[MASQ_MAX_DIMS];
} pm_tensor;

/* numpy's functions, looked up once when the module is imported and never
 * changed after (module.c). */
typedef struct pm_numpy {
  PyObject *asarray, *require, *logical_not, *broadcast_to, *not_equal, *float32, *float16;
  PyObject *MaskedArray, *getdata, *getmask, *nomask, *masked;
} pm_numpy;
extern pm_numpy pm_np;
extern PyTypeObject pm_tensor_type;
extern PyObject *pm_error;

/* module.c */
int pm_enter(pm_state *st);
void pm_leave(pm_state *st);
void pm_drain(pm_state *st);
/* Closes masq now that nothing views its memory (close() was called and
 * the last exported array went), giving back what the State held. */
void pm_close_now(pm_state *st);

/* callbacks.c: the hooks masq calls while it runs, and host functions. */
void pm_hooks(pm_state *st, masq_config *cfg);
masq_cfunction pm_host_function(void);
/* The exception being raised, taken (GIL held): a new reference, or NULL. */
PyObject *pm_fetch(void);
/* Raises [exc] (stolen) again, with its traceback. Returns NULL. */
PyObject *pm_restore(PyObject *exc);
/* Every so many steps of a long loop with the GIL held: Python's signal
 * handlers (Ctrl-C). -1 with the exception set if one raised. */
int pm_poll_signals(Py_ssize_t i);

/* convert.c: Python -> masq. *out is a new reference (NULL for None).
 * Return 0, or -1 with a Python exception set. */
int pm_to_tensor(pm_state *st, PyObject *o, masq_tensor **out);
/* The same for global [name] (a str: a numpy.ma array without a mask is
 * bound again by that name if it gets one, pm_sync_masks). */
int pm_to_global_tensor(pm_state *st, PyObject *o, PyObject *name, masq_tensor **out);
/* Turns the masks of the numpy.ma arrays masq holds again, before a call
 * (the State entered, masq not running): 0, or -1 with the exception set. */
int pm_sync_masks(pm_state *st);
/* masq -> Python: [t] is borrowed (NULL: None). A new reference or NULL. */
PyObject *pm_from_tensor(pm_state *st, masq_tensor *t);

/* lists.c */
/* Binds global [name] to [o] (strings and lists of strings too). */
int pm_set_global(pm_state *st, const char *name, PyObject *o);
/* The value of global [name] (a KeyError if there is none, if asked). */
PyObject *pm_get_global(pm_state *st, const char *name, int missing_is_keyerror);
/* 0 if the nested lists and tuples [o] may make a tensor as far as their
 * depth and size go; -1 with TypeError or MemoryError if not. */
int pm_check_nesting(PyObject *o);
/* The exception for status [s] (the State's last error). Returns NULL. */
PyObject *pm_raise(pm_state *st, masq_status s);
/* The same, with [cause] (stolen; may be NULL) as the masq.Error's __cause__. */
PyObject *pm_raise_cause(pm_state *st, masq_status s, PyObject *cause);

#endif
