/* module.c - the masq Python module: masq.State, masq.eval, masq.Error.
 *
 * Every method enters the State (pm_enter: one thread at a time; a host
 * function may call back in on its own thread), converts its arguments with
 * the GIL, runs masq with the GIL released, and leaves (pm_leave), which
 * gives back what Python and masq dropped meanwhile. The hooks masq calls
 * while it runs (print, the interrupt poll, host functions) take the GIL
 * only for as long as they need Python. */
#include "pymasq.h"

#include <string.h>
#include <time.h>

pm_numpy pm_np;
PyObject *pm_error;
static PyObject *pm_exit_error;
/* The main thread's id: only there does Python run signal handlers, so only
 * there does the interrupt hook look at them. Set once at import. */
static unsigned long pm_main_thread;

/* --- entering and leaving a State ---------------------------------------------- */

int pm_enter(pm_state *st) {
  unsigned long me = PyThread_get_thread_ident();
  if (!st->M) {
    PyErr_SetString(PyExc_ValueError, "masq.State: this state is closed");
    return -1;
  }
  if (st->depth > 0 && !(st->owner == me && st->in_host > 0)) {
    PyErr_SetString(PyExc_RuntimeError,
                    "masq.State is in use by another thread (or by a call that is running): "
                    "use one State per thread");
    return -1;
  }
  if (st->depth++ == 0) {
    Py_CLEAR(st->exc); /* from a host function whose error a try caught */
    st->owner = me;
    st->on_main = me == pm_main_thread;
  }
  return 0;
}

void pm_leave(pm_state *st) {
  if (--st->depth == 0) pm_drain(st);
}

/* Gives back the handles Python dropped and the buffers masq let go of
 * while the State was busy. Called with the GIL, when the State is idle.
 * Releasing a buffer may run Python code, which may let another thread
 * start a call on the State: so the lists are detached before they are
 * walked, and handles go back to masq only while the State is still idle. */
void pm_drain(pm_state *st) {
  while (st->depth == 0 && (st->dropped || st->released)) {
    pm_dropped *d = st->dropped;
    st->dropped = NULL;
    while (d) { /* no Python code runs here */
      pm_dropped *next = d->next;
      if (st->M) masq_tensor_release(st->M, d->t);
      PyMem_RawFree(d);
      d = next;
    }
    pm_wrap *w = st->released;
    st->released = NULL;
    while (w) {
      pm_wrap *next = w->next;
      for (int i = 0; i < w->nviews; i++) PyBuffer_Release(&w->views[i]);
      PyMem_RawFree(w);
      w = next;
    }
  }
}

/* Keeps the exception being raised (GIL held) for pm_raise to raise or
 * chain once masq has returned. */
void pm_keep_exception(pm_state *st) {
#if PY_VERSION_HEX >= 0x030C0000
  Py_XSETREF(st->exc, PyErr_GetRaisedException());
#else
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  if (v && tb) PyException_SetTraceback(v, tb);
  Py_XDECREF(t);
  Py_XDECREF(tb);
  Py_XSETREF(st->exc, v);
#endif
}

/* --- hooks masq calls while it runs (without the GIL) ------------------------------ */

static void write_to(const char *stream, const char *s, size_t n) {
  PyGILState_STATE g = PyGILState_Ensure();
  if (!PyErr_Occurred()) { /* masq runs without a Python exception pending; never clobber one */
    PyObject *f = PySys_GetObject(stream); /* borrowed */
    PyObject *text = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
    if (f && f != Py_None && text) {
      PyObject *r = PyObject_CallMethod(f, "write", "O", text);
      Py_XDECREF(r);
    }
    Py_XDECREF(text);
    PyErr_Clear(); /* a failing sys.stdout loses the text, as print() to a closed pipe */
  }
  PyGILState_Release(g);
}

static void hook_write(void *ud, const char *s, size_t n) { write_to("stdout", s, n); }

/* A picture for State(picture=fn): fn(text, svg), svg "" when there is
 * nothing to draw. If fn raises, the script stops and the exception is
 * raised once masq has returned, as for a registered function. */
static void hook_picture(void *ud, const char *text, size_t tn, const char *svg, size_t sn) {
  pm_state *st = ud;
  PyGILState_STATE g = PyGILState_Ensure();
  if (!st->stop && st->on_picture) {
    PyObject *r = PyObject_CallFunction(st->on_picture, "s#s#", text, (Py_ssize_t)tn, svg ? svg : "",
                                        (Py_ssize_t)sn);
    if (!r) {
      pm_keep_exception(st);
      st->stop = 1;
    }
    Py_XDECREF(r);
  }
  PyGILState_Release(g);
}
static void hook_write_err(void *ud, const char *s, size_t n) { write_to("stderr", s, n); }

/* Polled by masq in loops and long kernels. Signals only reach Python on the
 * main thread, and checking them needs the GIL, so the hook looks at most
 * every 20 ms (by a coarse clock, a few ns a poll) and only there. A Python
 * signal handler that raises (SIGINT's raises KeyboardInterrupt) stops the
 * script; the exception is raised once masq has returned. */
static int hook_interrupt(void *ud) {
  pm_state *st = ud;
  if (st->stop) return 1;
  if (!st->on_main || !st->compute) return 0;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
  if (ms - st->last_poll_ms < 20) return 0;
  st->last_poll_ms = ms;
  PyGILState_STATE g = PyGILState_Ensure();
  if (PyErr_CheckSignals() < 0) {
    pm_keep_exception(st);
    st->stop = 1;
  }
  PyGILState_Release(g);
  return st->stop;
}

/* --- running masq ------------------------------------------------------------------ */

/* Runs masq_eval or masq_call without the GIL. */
typedef struct run_args {
  const char *src, *name, *fname;
  size_t len;
  int argc;
  masq_tensor **argv, *result;
} run_args;

static masq_status run(pm_state *st, run_args *a) {
  int was = st->compute, stop = st->stop;
  masq_status s;
  st->compute = 1;
  st->stop = 0;
  Py_BEGIN_ALLOW_THREADS
  if (a->fname)
    s = masq_call(st->M, a->fname, a->argc, a->argv, &a->result);
  else
    s = masq_eval(st->M, a->src, a->len, a->name, MASQ_EVAL_RESULT);
  Py_END_ALLOW_THREADS
  st->compute = was;
  st->stop = stop;
  return s;
}

/* The exception for a failed run: the script's exit(code) is masq.Exit. */
static PyObject *run_failed(pm_state *st, masq_status s) {
  if (s == MASQ_EXIT) {
    Py_CLEAR(st->exc);
    PyObject *e = PyObject_CallFunction(pm_exit_error, "s", "the script called exit()");
    if (e) {
      PyObject *code = PyLong_FromLong(masq_last_error(st->M)->exit_code);
      if (code) PyObject_SetAttrString(e, "code", code);
      Py_XDECREF(code);
      PyErr_SetObject(pm_exit_error, e);
      Py_DECREF(e);
    }
    return NULL;
  }
  return pm_raise(st, s);
}

/* --- host functions: Python callables as masq builtins ------------------------------ */

typedef struct pm_func {
  pm_state *st; /* borrowed: the State owns the capsule that owns this */
  PyObject *fn;
} pm_func;

static masq_status host_call(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                             masq_tensor **result) {
  pm_func *f = ud;
  pm_state *st = f->st;
  masq_status s = MASQ_OK;
  PyGILState_STATE g = PyGILState_Ensure();
  int was = st->compute;
  st->compute = 0;
  st->in_host++;
  PyObject *args = PyTuple_New(argc), *r = NULL;
  for (int i = 0; args && i < argc; i++) {
    PyObject *a = pm_from_tensor(st, argv[i]);
    if (!a) {
      Py_CLEAR(args);
      break;
    }
    PyTuple_SET_ITEM(args, i, a);
  }
  if (args) r = PyObject_Call(f->fn, args, NULL);
  Py_XDECREF(args);
  if (r && pm_to_tensor(st, r, result) < 0) *result = NULL;
  if (PyErr_Occurred()) {
    if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
      pm_keep_exception(st);
      s = MASQ_ERR_INTERRUPTED;
    } else if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
      PyErr_Clear();
      s = MASQ_ERR_MEMORY;
    } else {
      pm_keep_exception(st); /* becomes the masq.Error's __cause__ */
      PyObject *text = st->exc ? PyObject_Str(st->exc) : NULL;
      const char *u = text ? PyUnicode_AsUTF8(text) : NULL;
      PyErr_Clear();
      s = masq_errorf(M, "%s: %s", st->exc ? Py_TYPE(st->exc)->tp_name : "error", u ? u : "?");
      Py_XDECREF(text);
    }
  }
  Py_XDECREF(r);
  st->in_host--;
  st->compute = was;
  PyGILState_Release(g);
  return s;
}

static void func_free(PyObject *cap) {
  pm_func *f = PyCapsule_GetPointer(cap, "masq.func");
  if (!f) return;
  Py_DECREF(f->fn);
  PyMem_Free(f);
}

/* --- masq.State ---------------------------------------------------------------------- */

static int state_init(pm_state *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"memory_limit", "io", "picture", NULL};
  PyObject *limit = Py_None, *picture = Py_None;
  int io = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$pO:State", kwlist, &limit, &io, &picture)) return -1;
  if (picture != Py_None && !PyCallable_Check(picture)) {
    PyErr_SetString(PyExc_TypeError,
                    "masq.State: picture must be callable (it gets each picture's text and SVG)");
    return -1;
  }
  if (self->M) {
    PyErr_SetString(PyExc_RuntimeError, "masq.State: already initialised");
    return -1;
  }
  masq_config cfg;
  masq_config_init(&cfg);
  if (limit != Py_None) {
    unsigned long long n = PyLong_AsUnsignedLongLong(limit);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    if (n == 0) {
      PyErr_SetString(PyExc_ValueError, "masq.State: memory_limit must be positive (None: no limit)");
      return -1;
    }
    cfg.memory_limit = (size_t)n;
  }
  cfg.libs = io ? MASQ_LIB_ALL : MASQ_LIB_DEFAULT;
  cfg.interrupt = hook_interrupt;
  cfg.interrupt_ud = self;
  cfg.write = hook_write;
  cfg.write_err = hook_write_err;
  if (picture != Py_None) {
    cfg.picture = hook_picture;
    cfg.picture_ud = self;
    Py_INCREF(picture);
    Py_XSETREF(self->on_picture, picture);
  }
  self->funcs = PyList_New(0);
  if (!self->funcs) return -1;
  self->M = masq_open(&cfg);
  if (!self->M) {
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

static int state_traverse(pm_state *self, visitproc visit, void *arg) {
  Py_VISIT(self->funcs);
  Py_VISIT(self->exc);
  Py_VISIT(self->on_picture);
  return 0;
}

/* Closes masq (so the host functions it holds go unused) before dropping
 * them; the GC calls this to break State -> function -> State cycles. */
static int state_clear(pm_state *self) {
  if (self->M && self->depth == 0) {
    masq_close(self->M);
    self->M = NULL;
    pm_drain(self);
    Py_CLEAR(self->funcs);
    Py_CLEAR(self->on_picture);
  }
  Py_CLEAR(self->exc);
  return 0;
}

static void state_dealloc(pm_state *self) {
  PyObject_GC_UnTrack(self);
  state_clear(self);
  Py_XDECREF(self->funcs);
  Py_XDECREF(self->on_picture);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *state_eval(pm_state *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"source", "name", NULL};
  const char *src, *name = "<python>";
  Py_ssize_t len;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|s:eval", kwlist, &src, &len, &name)) return NULL;
  if (pm_enter(self) < 0) return NULL;
  PyObject *r = NULL;
  /* `_` holds the value of the last expression statement (MASQ_EVAL_RESULT);
   * none first, so a script that ends otherwise returns None. */
  masq_status s = masq_set_global(self->M, "_", NULL);
  run_args a = {.src = src, .len = (size_t)len, .name = name};
  if (s == MASQ_OK) s = run(self, &a);
  if (s != MASQ_OK)
    run_failed(self, s);
  else
    r = pm_get_global(self, "_", 0);
  pm_leave(self);
  return r;
}

static PyObject *state_call(pm_state *self, PyObject *args) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    PyErr_SetString(PyExc_TypeError, "State.call(name, *args): name must be a str");
    return NULL;
  }
  if (n - 1 > 255) {
    PyErr_SetString(PyExc_TypeError, "State.call: at most 255 arguments");
    return NULL;
  }
  const char *fname = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
  if (!fname || pm_enter(self) < 0) return NULL;
  masq_tensor *argv[256];
  int argc = 0;
  PyObject *r = NULL;
  for (; argc < n - 1; argc++)
    if (pm_to_tensor(self, PyTuple_GET_ITEM(args, argc + 1), &argv[argc]) < 0) goto out;
  run_args a = {.fname = fname, .argc = argc, .argv = argv};
  masq_status s = run(self, &a);
  if (s != MASQ_OK) {
    run_failed(self, s);
  } else {
    r = pm_from_tensor(self, a.result);
    masq_tensor_release(self->M, a.result);
  }
out:
  for (int i = 0; i < argc; i++) masq_tensor_release(self->M, argv[i]);
  pm_leave(self);
  return r;
}

static PyObject *state_register(pm_state *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"signature", "fn", "doc", NULL};
  const char *sig, *doc = NULL;
  PyObject *fn;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|z:register", kwlist, &sig, &fn, &doc)) return NULL;
  if (!PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "State.register: fn must be callable");
    return NULL;
  }
  if (pm_enter(self) < 0) return NULL;
  PyObject *cap = NULL;
  pm_func *f = PyMem_Malloc(sizeof *f);
  if (!f) {
    PyErr_NoMemory();
    goto out;
  }
  f->st = self;
  f->fn = Py_NewRef(fn);
  cap = PyCapsule_New(f, "masq.func", func_free);
  if (!cap) {
    Py_DECREF(fn);
    PyMem_Free(f);
    goto out;
  }
  /* Kept for the State's life: a script may hold the old binding after a
   * name is registered again. */
  if (PyList_Append(self->funcs, cap) < 0) goto out;
  masq_status s = masq_register(self->M, sig, host_call, f, doc);
  if (s != MASQ_OK) pm_raise(self, s);
out:
  Py_XDECREF(cap);
  pm_leave(self);
  if (PyErr_Occurred()) return NULL;
  Py_RETURN_NONE;
}

static PyObject *state_getitem(pm_state *self, PyObject *key) {
  const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
  if (!name) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "masq.State: global names are str");
    return NULL;
  }
  if (pm_enter(self) < 0) return NULL;
  PyObject *r = pm_get_global(self, name, 1);
  pm_leave(self);
  return r;
}

static int state_setitem(pm_state *self, PyObject *key, PyObject *v) {
  const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
  if (!name) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "masq.State: global names are str");
    return -1;
  }
  if (pm_enter(self) < 0) return -1;
  int rc = pm_set_global(self, name, v ? v : Py_None); /* del s["x"]: x = none */
  pm_leave(self);
  return rc;
}

static PyObject *state_doc(pm_state *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  if (!name || pm_enter(self) < 0) return NULL;
  const char *d = masq_doc(self->M, name);
  PyObject *r = d ? PyUnicode_DecodeUTF8(d, (Py_ssize_t)strlen(d), "replace") : Py_NewRef(Py_None);
  pm_leave(self);
  return r;
}

static void add_name(void *ud, const char *name) {
  PyObject *list = ud, *s = PyUnicode_FromString(name);
  if (s) PyList_Append(list, s);
  Py_XDECREF(s);
}

static PyObject *state_complete(pm_state *self, PyObject *arg) {
  const char *prefix = PyUnicode_AsUTF8(arg);
  if (!prefix || pm_enter(self) < 0) return NULL;
  PyObject *r = PyList_New(0);
  if (r) masq_complete(self->M, prefix, add_name, r);
  pm_leave(self);
  if (r && PyErr_Occurred()) Py_CLEAR(r);
  return r;
}

static PyObject *state_interrupt(pm_state *self, PyObject *unused) {
  if (self->M) masq_interrupt(self->M); /* any thread, busy or not: masq allows it */
  Py_RETURN_NONE;
}

static PyMappingMethods state_mapping = {NULL, (binaryfunc)state_getitem,
                                         (objobjargproc)state_setitem};

static PyMethodDef state_methods[] = {
    {"eval", (PyCFunction)(void (*)(void))state_eval, METH_VARARGS | METH_KEYWORDS,
     "eval(source, name='<python>'): run masq source; the value of its last expression statement, or None"},
    {"call", (PyCFunction)state_call, METH_VARARGS,
     "call(name, *args): call the masq function bound to global name"},
    {"register", (PyCFunction)(void (*)(void))state_register, METH_VARARGS | METH_KEYWORDS,
     "register(signature, fn, doc=None): make Python callable fn a masq builtin"},
    {"doc", (PyCFunction)state_doc, METH_O, "doc(name): signature and help of a builtin, or None"},
    {"complete", (PyCFunction)state_complete, METH_O, "complete(prefix): names that start with prefix"},
    {"interrupt", (PyCFunction)state_interrupt, METH_NOARGS,
     "interrupt(): stop what the state is running (from any thread)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject pm_state_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "masq.State",
    .tp_basicsize = sizeof(pm_state),
    .tp_dealloc = (destructor)state_dealloc,
    .tp_as_mapping = &state_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "State(memory_limit=None, io=False, picture=None): a masq interpreter; globals persist across calls.\n"
              "io=True opens load, save and import (the file system); memory_limit caps its bytes.",
    .tp_traverse = (traverseproc)state_traverse,
    .tp_clear = (inquiry)state_clear,
    .tp_methods = state_methods,
    .tp_init = (initproc)state_init,
    .tp_new = PyType_GenericNew,
};

/* masq.eval(source, **values): a fresh State for one expression. */
static PyObject *module_eval(PyObject *mod, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args) != 1) {
    PyErr_SetString(PyExc_TypeError, "masq.eval(source, **values) takes one positional argument");
    return NULL;
  }
  PyObject *st = PyObject_CallNoArgs((PyObject *)&pm_state_type), *r = NULL;
  if (!st) return NULL;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kw && PyDict_Next(kw, &pos, &key, &value))
    if (state_setitem((pm_state *)st, key, value) < 0) goto out;
  r = PyObject_CallMethod(st, "eval", "O", PyTuple_GET_ITEM(args, 0));
out:
  Py_DECREF(st);
  return r;
}

static PyMethodDef module_methods[] = {
    {"eval", (PyCFunction)(void (*)(void))module_eval, METH_VARARGS | METH_KEYWORDS,
     "eval(source, **values): run source in a new State with the given globals; its value"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef pm_module = {PyModuleDef_HEAD_INIT, "masq",
                                       "masq, the masked tensor language, inside Python (docs/PYTHON.md)",
                                       -1, module_methods, NULL, NULL, NULL, NULL};

static int lookup(PyObject *mod, const char *name, PyObject **out) {
  *out = PyObject_GetAttrString(mod, name);
  return *out ? 0 : -1;
}

PyMODINIT_FUNC PyInit_masq(void) {
  PyObject *np = PyImport_ImportModule("numpy"), *ma = NULL, *thr = NULL, *m = NULL;
  if (!np) return NULL;
  ma = PyImport_ImportModule("numpy.ma");
  thr = PyImport_ImportModule("threading");
  if (!ma || !thr) goto fail;
  if (lookup(np, "asarray", &pm_np.asarray) || lookup(np, "ascontiguousarray", &pm_np.ascontiguousarray) ||
      lookup(np, "logical_not", &pm_np.logical_not) || lookup(np, "broadcast_to", &pm_np.broadcast_to) ||
      lookup(np, "not_equal", &pm_np.not_equal) || lookup(np, "float32", &pm_np.float32) ||
      lookup(np, "float16", &pm_np.float16) ||
      lookup(ma, "MaskedArray", &pm_np.MaskedArray) || lookup(ma, "getdata", &pm_np.getdata) ||
      lookup(ma, "getmask", &pm_np.getmask) || lookup(ma, "nomask", &pm_np.nomask) ||
      lookup(ma, "masked", &pm_np.masked))
    goto fail;
  PyObject *main = PyObject_CallMethod(thr, "main_thread", NULL);
  PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
  Py_XDECREF(main);
  if (!ident) goto fail;
  pm_main_thread = PyLong_AsUnsignedLong(ident);
  Py_DECREF(ident);
  if (PyType_Ready(&pm_state_type) < 0 || PyType_Ready(&pm_tensor_type) < 0) goto fail;
  m = PyModule_Create(&pm_module);
  if (!m) goto fail;
  pm_error = PyErr_NewExceptionWithDoc(
      "masq.Error", "a masq error; str() is the rendered diagnostic (file:line:col, source line, carets)",
      NULL, NULL);
  pm_exit_error = PyErr_NewExceptionWithDoc("masq.Exit", "the script called exit(code); .code holds it",
                                            pm_error, NULL);
  if (!pm_error || !pm_exit_error || PyModule_AddObjectRef(m, "Error", pm_error) < 0 ||
      PyModule_AddObjectRef(m, "Exit", pm_exit_error) < 0 ||
      PyModule_AddObjectRef(m, "State", (PyObject *)&pm_state_type) < 0 ||
      PyModule_AddStringConstant(m, "__version__", masq_version()) < 0)
    goto fail;
  Py_DECREF(np);
  Py_DECREF(ma);
  Py_DECREF(thr);
  return m;
fail:
  Py_XDECREF(m);
  Py_XDECREF(np);
  Py_XDECREF(ma);
  Py_XDECREF(thr);
  return NULL;
}
