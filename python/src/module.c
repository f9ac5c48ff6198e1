/* module.c - the masq Python module: masq.State, masq.eval, masq.Error.
 *
 * Every method enters the State (pm_enter: one thread at a time; a host
 * function may call back in on its own thread), converts its arguments with
 * the GIL, runs masq with the GIL released, and leaves (pm_leave), which
 * gives back what Python and masq dropped meanwhile. The hooks masq calls
 * while it runs (print, the interrupt poll, host functions) take the GIL
 * only for as long as they need Python (callbacks.c); what they raise is
 * raised when the run ends (run). */
#include "pymasq.h"

#include <stddef.h>
#include <string.h>

pm_numpy pm_np;
PyObject *pm_error;
static PyObject *pm_exit_error;
/* The main thread's id: only there does Python run signal handlers, so only
 * there does the interrupt hook look at them. Set once at import. */
static unsigned long pm_main_thread;

/* --- entering and leaving a State ---------------------------------------------- */

int pm_enter(pm_state *st) {
  unsigned long me = PyThread_get_thread_ident();
  if (!st->M || st->closed) {
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
      Py_XDECREF(w->masked);
      Py_XDECREF(w->name);
      PyMem_RawFree(w);
      w = next;
    }
  }
}

/* --- running masq ------------------------------------------------------------------ */

/* Runs masq_eval or masq_call without the GIL. */
typedef struct run_args {
  const char *src, *name, *fname;
  size_t len;
  int argc;
  masq_tensor **argv, *result;
} run_args;

/* How a run ended, for the caller: 0, or -1 with the exception set. A
 * pending exception comes first, whatever the status: it stopped the script,
 * or the script ended before masq polled again (then its result is dropped).
 * The script's exit(code) is masq.Exit. [st]'s exceptions are consumed. */
static int outcome(pm_state *st, masq_status s) {
  PyObject *pending = st->pending, *cause = st->cause, *msg = st->cause_msg;
  st->pending = st->cause = st->cause_msg = NULL;
  int rc = -1;
  if (pending) {
    pm_restore(pending);
  } else if (s == MASQ_OK) {
    rc = 0;
  } else if (s == MASQ_EXIT) {
    PyObject *e = PyObject_CallFunction(pm_exit_error, "s", "the script called exit()");
    if (e) {
      PyObject *code = PyLong_FromLong(masq_last_error(st->M)->exit_code);
      if (code) PyObject_SetAttrString(e, "code", code);
      Py_XDECREF(code);
      PyErr_SetObject(pm_exit_error, e);
      Py_DECREF(e);
    }
  } else {
    /* a host function's exception is the cause of the error only if it is
     * that error (not one a try caught earlier in the run) */
    const char *m = masq_last_error(st->M)->message;
    if (cause && !(s == MASQ_ERR_RUNTIME && m && strcmp(m, PyBytes_AS_STRING(msg)) == 0)) Py_CLEAR(cause);
    pm_raise_cause(st, s, cause);
    cause = NULL;
  }
  Py_XDECREF(cause);
  Py_XDECREF(msg);
  return rc;
}

/* Runs masq_eval or masq_call without the GIL; 0, or -1 with the exception
 * set (outcome). A host function may run the State again: the inner run
 * keeps its own exceptions, and the outer run's are put back after it. */
static int run(pm_state *st, run_args *a) {
  int was = st->compute, stop = st->stop;
  PyObject *pending = st->pending, *cause = st->cause, *msg = st->cause_msg;
  st->pending = st->cause = st->cause_msg = NULL;
  st->compute = 1;
  st->stop = 0;
  masq_status s;
  Py_BEGIN_ALLOW_THREADS
  if (a->fname)
    s = masq_call(st->M, a->fname, a->argc, a->argv, &a->result);
  else
    s = masq_eval(st->M, a->src, a->len, a->name, MASQ_EVAL_RESULT);
  Py_END_ALLOW_THREADS
  st->compute = was;
  st->stop = stop;
  int rc = outcome(st, s);
  st->pending = pending;
  st->cause = cause;
  st->cause_msg = msg;
  return rc;
}

/* --- masq.State ---------------------------------------------------------------------- */

static int state_init(pm_state *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"memory_limit", "io", "picture", NULL};
  PyObject *limit = Py_None, *picture = Py_None;
  int io = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$pO:State", kwlist, &limit, &io, &picture)) return -1;
  if (self->M) {
    PyErr_SetString(PyExc_RuntimeError, "masq.State: already initialised");
    return -1;
  }
  if (picture != Py_None && !PyCallable_Check(picture)) {
    PyErr_SetString(PyExc_TypeError,
                    "masq.State: picture must be callable (it gets each picture's text and SVG)");
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
  Py_CLEAR(self->on_picture);
  if (picture != Py_None) self->on_picture = Py_NewRef(picture);
  pm_hooks(self, &cfg);
  self->M = masq_open(&cfg);
  if (!self->M) {
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

/* Every Python object the State holds. The buffers masq wraps are walked
 * only while no call runs: masq may let go of one meanwhile, on the thread
 * running it, without the GIL (leaving them out only makes the collector
 * think them held from outside, which is safe). */
static int visit_wraps(pm_wrap *w, visitproc visit, void *arg) {
  for (; w; w = w->next) {
    for (int i = 0; i < w->nviews; i++) Py_VISIT(w->views[i].obj);
    Py_VISIT(w->masked);
  }
  return 0;
}

static int state_traverse(pm_state *self, visitproc visit, void *arg) {
  for (pm_func *f = self->funcs; f; f = f->next) Py_VISIT(f->fn);
  Py_VISIT(self->on_picture);
  Py_VISIT(self->pending);
  Py_VISIT(self->cause);
  Py_VISIT(self->cause_msg);
  if (self->depth > 0) return 0;
  int rc = visit_wraps(self->live, visit, arg);
  return rc ? rc : visit_wraps(self->released, visit, arg);
}

/* Closes masq first (it gives back the buffers it wraps, and no host
 * function runs after), then drops the rest; the collector calls this to
 * break State -> function (or buffer) -> State cycles. A State that is
 * running is held by its caller, so the collector never clears one. */
static int state_clear(pm_state *self) {
  if (self->depth > 0) return 0;
  if (self->M) {
    masq_close(self->M);
    self->M = NULL;
  }
  pm_drain(self);
  while (self->funcs) {
    pm_func *f = self->funcs;
    self->funcs = f->next;
    Py_DECREF(f->fn);
    PyMem_Free(f);
  }
  Py_CLEAR(self->on_picture);
  Py_CLEAR(self->pending);
  Py_CLEAR(self->cause);
  Py_CLEAR(self->cause_msg);
  return 0;
}

void pm_close_now(pm_state *st) { state_clear(st); }

/* close(): the State takes no more calls, and gives back its memory, its
 * registered functions and the numpy buffers it wraps: at once, or, while
 * arrays it returned are alive (they view its memory), when the last one
 * goes. Closing a closed State does nothing. */
static PyObject *state_close(pm_state *self, PyObject *unused) {
  if (self->depth > 0) {
    PyErr_SetString(PyExc_RuntimeError, "masq.State.close: the state is running (close it after the call)");
    return NULL;
  }
  self->closed = 1;
  if (self->exports == 0) state_clear(self);
  Py_RETURN_NONE;
}

static PyObject *state_enter(pm_state *self, PyObject *unused) {
  if (!self->M || self->closed) {
    PyErr_SetString(PyExc_ValueError, "masq.State: this state is closed");
    return NULL;
  }
  Py_INCREF(self);
  return (PyObject *)self;
}

static PyObject *state_exit(pm_state *self, PyObject *args) {
  PyObject *r = state_close(self, NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE; /* an exception in the with block goes on */
}

static PyObject *state_get_closed(pm_state *self, void *unused) { return PyBool_FromLong(!self->M || self->closed); }

static PyGetSetDef state_getset[] = {
    {"closed", (getter)state_get_closed, NULL, "True after close()", NULL}, {NULL, NULL, NULL, NULL, NULL}};

static void state_dealloc(pm_state *self) {
  PyObject_GC_UnTrack(self);
  if (self->weaklist) PyObject_ClearWeakRefs((PyObject *)self);
  state_clear(self);
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
  if (pm_sync_masks(self) < 0) {
    pm_leave(self);
    return NULL;
  }
  masq_status s = masq_set_global(self->M, "_", NULL);
  run_args a = {.src = src, .len = (size_t)len, .name = name};
  if (s != MASQ_OK)
    pm_raise(self, s);
  else if (run(self, &a) == 0)
    r = pm_get_global(self, "_", 0);
  pm_leave(self);
  return r;
}

/* 1 if [s] is a masq name (letters, digits, _; [dots]: and dots between
 * them, a module's function). */
static int is_name(const char *s, int dots) {
  if (!s || *s == 0 || (*s >= '0' && *s <= '9')) return 0;
  for (const char *p = s; *p; p++) {
    int letter = *p == '_' || ((*p | 32) >= 'a' && (*p | 32) <= 'z') || (*p >= '0' && *p <= '9');
    if (!letter && !(dots && *p == '.' && p > s && p[-1] != '.' && p[1] && p[1] != '.')) return 0;
  }
  return 1;
}

/* s.call(fname, *args, **kw) with keywords, or a str among the arguments:
 * masq_call passes positional tensors only, so the arguments are bound to
 * globals __py_c<depth>_* (what s["x"] = value binds: strings too) and a
 * one-line script calls the function, as a script would. The globals are
 * none again after, whatever happened. */
static PyObject *call_by_script(pm_state *st, const char *fname, PyObject *args, PyObject *kw) {
  if (!is_name(fname, 1))
    return PyErr_Format(PyExc_ValueError, "State.call: %R is not a masq function name", PyTuple_GET_ITEM(args, 0));
  Py_ssize_t n = PyTuple_GET_SIZE(args), nkw = kw ? PyDict_GET_SIZE(kw) : 0;
  char res[48];
  snprintf(res, sizeof res, "__py_c%d_r", st->depth);
  PyObject *src = PyUnicode_FromFormat("%s = %s(", res, fname), *names = PyList_New(0), *r = NULL;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  int ok = src && names;
  for (Py_ssize_t i = 0; ok && i < n - 1 + nkw; i++) {
    const char *kname = NULL;
    if (i < n - 1) {
      value = PyTuple_GET_ITEM(args, i + 1);
    } else {
      PyDict_Next(kw, &pos, &key, &value);
      kname = PyUnicode_AsUTF8(key);
      if (!is_name(kname, 0)) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "State.call: %R is not a masq parameter name", key);
        ok = 0;
        break;
      }
    }
    /* True, False and None are written as literals: keepdim=true wants a
     * bool, not the 0-d bool tensor a global would hold */
    const char *lit = value == Py_True ? "true" : value == Py_False ? "false" : value == Py_None ? "none" : NULL;
    PyObject *g = lit ? PyUnicode_FromString(lit) : PyUnicode_FromFormat("__py_c%d_%zd", st->depth, i);
    PyObject *part = g ? PyUnicode_FromFormat("%s%s%s%U", i ? ", " : "", kname ? kname : "", kname ? "=" : "", g) : NULL;
    ok = part && (lit || (PyList_Append(names, g) == 0 && pm_set_global(st, PyUnicode_AsUTF8(g), value) == 0));
    if (ok) PyUnicode_Append(&src, part);
    ok = ok && src;
    Py_XDECREF(g);
    Py_XDECREF(part);
  }
  if (ok) PyUnicode_AppendAndDel(&src, PyUnicode_FromString(")"));
  Py_ssize_t len;
  const char *text = ok && src ? PyUnicode_AsUTF8AndSize(src, &len) : NULL;
  if (text) {
    run_args a = {.src = text, .len = (size_t)len, .name = "<call>"};
    if (run(st, &a) == 0) r = pm_get_global(st, res, 0);
  }
  /* none again, keeping the exception (if any) that is on its way */
  PyObject *exc = pm_fetch();
  masq_set_global(st->M, res, NULL);
  for (Py_ssize_t i = 0; names && i < PyList_GET_SIZE(names); i++)
    masq_set_global(st->M, PyUnicode_AsUTF8(PyList_GET_ITEM(names, i)), NULL);
  if (exc) pm_restore(exc);
  Py_XDECREF(src);
  Py_XDECREF(names);
  return r;
}

static PyObject *state_call(pm_state *self, PyObject *args, PyObject *kw) {
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
  int by_script = kw && PyDict_GET_SIZE(kw) > 0;
  for (Py_ssize_t i = 1; i < n && !by_script; i++) by_script = PyUnicode_Check(PyTuple_GET_ITEM(args, i));
  if (by_script) {
    PyObject *r = pm_sync_masks(self) < 0 ? NULL : call_by_script(self, fname, args, kw);
    pm_leave(self);
    return r;
  }
  masq_tensor *argv[256];
  int argc = 0;
  PyObject *r = NULL;
  for (; argc < n - 1; argc++) {
    /* an object passed again (s.call("f", rows, rows)) is converted once:
     * masq gets one tensor twice, as callbacks.c's host functions get one
     * array twice */
    PyObject *o = PyTuple_GET_ITEM(args, argc + 1);
    int j = 0;
    while (j < argc && !(argv[j] && PyTuple_GET_ITEM(args, j + 1) == o)) j++;
    if (j < argc) {
      argv[argc] = argv[j];
      if (masq_tensor_retain(self->M, argv[j]) != MASQ_OK) {
        pm_raise(self, masq_last_error(self->M)->status);
        goto out;
      }
    } else if (pm_to_tensor(self, o, &argv[argc]) < 0) {
      goto out;
    }
  }
  run_args a = {.fname = fname, .argc = argc, .argv = argv};
  if (pm_sync_masks(self) == 0 && run(self, &a) == 0) r = pm_from_tensor(self, a.result);
  masq_tensor_release(self->M, a.result);
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
  pm_func *f = PyMem_Malloc(sizeof *f);
  if (!f) {
    PyErr_NoMemory();
  } else {
    f->st = self;
    f->fn = Py_NewRef(fn);
    masq_status s = masq_register(self->M, sig, pm_host_function(), f, doc);
    if (s == MASQ_OK) { /* kept for the State's life: a script may hold the old binding */
      f->next = self->funcs;
      self->funcs = f;
    } else {
      Py_DECREF(f->fn);
      PyMem_Free(f);
      pm_raise(self, s);
    }
  }
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
  PyObject *r = pm_sync_masks(self) < 0 ? NULL : pm_get_global(self, name, 1);
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

static PyObject *state_trim(pm_state *self, PyObject *unused) {
  if (pm_enter(self) < 0) return NULL;
  size_t freed;
  Py_BEGIN_ALLOW_THREADS
  freed = masq_trim(self->M);
  Py_END_ALLOW_THREADS
  pm_leave(self);
  return PyLong_FromSize_t(freed);
}

typedef struct finding {
  const char *name;
  int found;
} finding;

static void find_global(void *ud, const char *name, const char *summary) {
  finding *f = ud;
  if (strcmp(f->name, name) == 0) f->found = strncmp(summary, "none", 4) != 0;
}

/* name in s: a global a script or Python defined (not a builtin) that holds
 * a value other than none (del s[name] binds none); not the module's own
 * __py_ globals, which hold none between its calls. */
static int state_contains(pm_state *self, PyObject *key) {
  finding f = {PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL, 0};
  if (!f.name) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "masq.State: global names are str");
    return -1;
  }
  if (strncmp(f.name, "__py_", 5) == 0) return 0;
  if (pm_enter(self) < 0) return -1;
  masq_globals(self->M, find_global, &f);
  pm_leave(self);
  return f.found;
}

static PyObject *state_interrupt(pm_state *self, PyObject *unused) {
  if (self->M) masq_interrupt(self->M); /* any thread, busy or not: masq allows it */
  Py_RETURN_NONE;
}

static PyMappingMethods state_mapping = {NULL, (binaryfunc)state_getitem,
                                         (objobjargproc)state_setitem};
static PySequenceMethods state_sequence = {.sq_contains = (objobjproc)state_contains};

/* The docstrings start with the signature in CPython's text-signature form
 * ("name($self, ...)\n--\n\n"), so help() and inspect.signature show it. */
static PyMethodDef state_methods[] = {
    {"eval", (PyCFunction)(void (*)(void))state_eval, METH_VARARGS | METH_KEYWORDS,
     "eval($self, /, source, name='<python>')\n--\n\n"
     "Run masq source in this State and return the value of its last expression\n"
     "statement that is not none (None if there is none).\n\n"
     "Globals, functions and registered Python functions persist across calls. A\n"
     "tensor comes back as a read-only numpy array (a masked one as numpy.ma), a\n"
     "0-d tensor as a Python number, a string as str, a list as a list. name is\n"
     "the file name diagnostics show. Raises masq.Error (with .message, .line,\n"
     "...), MemoryError past memory_limit, KeyboardInterrupt on Ctrl-C; a failed\n"
     "call leaves the globals as they were."},
    {"call", (PyCFunction)(void (*)(void))state_call, METH_VARARGS | METH_KEYWORDS,
     "call($self, name, /, *args, **kwargs)\n--\n\n"
     "Call the masq function bound to global name (a builtin, one a script\n"
     "defined, or a registered Python function) and return its value.\n\n"
     "Arguments convert as s['x'] = value does. Keyword arguments are the\n"
     "function's named parameters (s.call('std', a, dim=0, correction=1)); with\n"
     "them, or a str argument, the call runs as a one-line script."},
    {"register", (PyCFunction)(void (*)(void))state_register, METH_VARARGS | METH_KEYWORDS,
     "register($self, /, signature, fn, doc=None)\n--\n\n"
     "Make the Python callable fn a masq function.\n\n"
     "signature is a bare name (every argument passed) or the builtins' notation\n"
     "with defaults, 'clip(x, lo=0, hi=none)', which masq checks first. Tensors\n"
     "arrive as read-only numpy arrays; what fn returns converts as s['x'] = value.\n"
     "An exception fn raises is a masq error at the call (its __cause__ if\n"
     "uncaught)."},
    {"doc", (PyCFunction)state_doc, METH_O,
     "doc($self, name, /)\n--\n\nThe signature and help of a builtin or registered function, as :help\n"
     "shows it, or None."},
    {"complete", (PyCFunction)state_complete, METH_O,
     "complete($self, prefix, /)\n--\n\nThe names of builtins and globals that start with prefix."},
    {"trim", (PyCFunction)state_trim, METH_NOARGS,
     "trim($self, /)\n--\n\n"
     "Give back the memory the State keeps for reuse: the buffers it caches\n"
     "after a computation (up to 512 MB), and malloc's free memory. Values the\n"
     "State holds stay. Returns the bytes masq gave back. Call it after a big\n"
     "temporary in a long-lived State (a dask worker, a notebook)."},
    {"interrupt", (PyCFunction)state_interrupt, METH_NOARGS,
     "interrupt($self, /)\n--\n\nStop what the State is running, from any thread: the call raises\n"
     "KeyboardInterrupt."},
    {"close", (PyCFunction)state_close, METH_NOARGS,
     "close($self, /)\n--\n\n"
     "End the State: later calls raise ValueError. Its memory, registered\n"
     "functions and wrapped numpy buffers go now, or when the last array it\n"
     "returned goes (they view its memory). Closing twice does nothing."},
    {"__enter__", (PyCFunction)state_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\nwith masq.State() as s: ... closes s at the end."},
    {"__exit__", (PyCFunction)state_exit, METH_VARARGS,
     "__exit__($self, *exc_info, /)\n--\n\nClose the State; an exception in the with block goes on."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject pm_state_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "masq.State",
    .tp_basicsize = sizeof(pm_state),
    .tp_dealloc = (destructor)state_dealloc,
    .tp_as_mapping = &state_mapping,
    .tp_as_sequence = &state_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "State(memory_limit=None, *, io=False, picture=None)\n--\n\n"
              "A masq interpreter. Globals, functions and registered Python functions\n"
              "persist across calls, as in the REPL.\n\n"
              "memory_limit caps the bytes it holds (numpy buffers it wraps do not count).\n"
              "io=True opens load, save and import (the file system); without it a\n"
              "script cannot touch files. picture=fn gets each picture as fn(text, svg).\n\n"
              "s['x'] = value binds global x (numpy arrays wrapped without a copy; a\n"
              "numpy.ma mask edited later is seen by the next call; pandas columns\n"
              "with NaN or pd.NA masked); s['x'] reads it ('x' in s says whether it is\n"
              "defined); del s['x'] binds none. See docs/PYTHON.md.",
    .tp_traverse = (traverseproc)state_traverse,
    .tp_clear = (inquiry)state_clear,
    .tp_weaklistoffset = offsetof(pm_state, weaklist),
    .tp_methods = state_methods,
    .tp_getset = state_getset,
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
     "eval(source, /, **values)\n--\n\n"
     "Run source in a new State with values bound as its globals and return\n"
     "its value, as State().eval(source) would. The State is closed after."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef pm_module = {PyModuleDef_HEAD_INIT, "masq._masq",
                                       "masq, the masked tensor language, inside Python (docs/PYTHON.md)",
                                       -1, module_methods, NULL, NULL, NULL, NULL};

static int lookup(PyObject *mod, const char *name, PyObject **out) {
  *out = PyObject_GetAttrString(mod, name);
  return *out ? 0 : -1;
}

PyMODINIT_FUNC PyInit__masq(void) {
  PyObject *np = PyImport_ImportModule("numpy"), *ma = NULL, *thr = NULL, *m = NULL;
  if (!np) return NULL;
  ma = PyImport_ImportModule("numpy.ma");
  thr = PyImport_ImportModule("threading");
  if (!ma || !thr) goto fail;
  if (lookup(np, "asarray", &pm_np.asarray) || lookup(np, "require", &pm_np.require) ||
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
