/* callbacks.c - the Python code masq calls while a script runs: print and
 * eprint (sys.stdout, sys.stderr), pictures (State(picture=fn)), the
 * interrupt poll (Python's signal handlers) and registered host functions.
 *
 * masq runs without the GIL; each hook takes it only for as long as it
 * needs Python. What a callback raises is never dropped (docs/PYTHON.md,
 * "Exceptions in callbacks"):
 *  - an ordinary exception in a host function becomes a masq error at the
 *    call, which a script's try may catch (pm_state.cause keeps it for the
 *    masq.Error's __cause__);
 *  - anything else is pending (pm_state.pending): MemoryError, the
 *    BaseExceptions that are not errors (KeyboardInterrupt, SystemExit,
 *    GeneratorExit, ...), and whatever a hook raises (a hook cannot fail a
 *    masq statement). The script stops at masq's next poll, which no try
 *    catches, and the run raises the exception itself, even if the script
 *    ended before that poll (module.c, run). */
#include "pymasq.h"

#include <string.h>
#include <time.h>

/* --- exceptions ------------------------------------------------------------------ */

PyObject *pm_fetch(void) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  if (v && tb) PyException_SetTraceback(v, tb);
  Py_XDECREF(t);
  Py_XDECREF(tb);
  return v;
#endif
}

PyObject *pm_restore(PyObject *exc) {
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(exc);
#else
  PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
  return NULL;
}

int pm_poll_signals(Py_ssize_t i) {
  return (i & 255) == 0 ? PyErr_CheckSignals() : 0;
}

/* Keeps [exc] (stolen) to raise when the run ends, and stops the script at
 * masq's next poll. The first one wins: what follows it is its consequence. */
static void keep_pending(pm_state *st, PyObject *exc) {
  if (!exc) exc = PyObject_CallNoArgs(PyExc_SystemError); /* never: an exception was set */
  if (!st->pending) st->pending = exc;
  else Py_XDECREF(exc);
  st->stop = 1;
}

/* --- hooks ------------------------------------------------------------------------- */

/* print() and eprint(): sys.stdout or sys.stderr as it is at the call (so
 * contextlib.redirect_stdout and notebooks see them; None drops the text,
 * as Python's print does). */
static void write_to(pm_state *st, const char *stream, const char *s, size_t n) {
  PyGILState_STATE g = PyGILState_Ensure();
  if (!st->stop && !PyErr_Occurred()) {
    PyObject *f = Py_XNewRef(PySys_GetObject(stream)); /* borrowed from sys, which write may change */
    if (f && f != Py_None) {
      PyObject *text = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
      PyObject *r = text ? PyObject_CallMethod(f, "write", "(O)", text) : NULL;
      if (!r) keep_pending(st, pm_fetch()); /* a full disk, a closed pipe, Ctrl-C in write */
      Py_XDECREF(r);
      Py_XDECREF(text);
    }
    Py_XDECREF(f);
  }
  PyGILState_Release(g);
}

static void hook_write(void *ud, const char *s, size_t n) { write_to(ud, "stdout", s, n); }
static void hook_write_err(void *ud, const char *s, size_t n) { write_to(ud, "stderr", s, n); }

/* A picture for State(picture=fn): fn(text, svg), svg "" when there is
 * nothing to draw. */
static void hook_picture(void *ud, const char *text, size_t tn, const char *svg, size_t sn) {
  pm_state *st = ud;
  PyGILState_STATE g = PyGILState_Ensure();
  if (!st->stop && st->on_picture && !PyErr_Occurred()) {
    /* a script's strings (labels) may hold any bytes: never a decoding error */
    PyObject *t = PyUnicode_DecodeUTF8(text, (Py_ssize_t)tn, "replace");
    PyObject *v = t ? PyUnicode_DecodeUTF8(svg ? svg : "", svg ? (Py_ssize_t)sn : 0, "replace") : NULL;
    PyObject *r = v ? PyObject_CallFunctionObjArgs(st->on_picture, t, v, NULL) : NULL;
    if (!r) keep_pending(st, pm_fetch());
    Py_XDECREF(r);
    Py_XDECREF(t);
    Py_XDECREF(v);
  }
  PyGILState_Release(g);
}

/* Polled by masq in loops and long kernels. Signals only reach Python on the
 * main thread, and checking them needs the GIL, so the hook looks at most
 * every 20 ms (by a coarse clock, a few ns a poll) and only there. A Python
 * signal handler that raises (SIGINT's raises KeyboardInterrupt) stops the
 * script like any pending exception. */
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
  if (PyErr_CheckSignals() < 0) keep_pending(st, pm_fetch());
  PyGILState_Release(g);
  return st->stop;
}

void pm_hooks(pm_state *st, masq_config *cfg) {
  cfg->interrupt = hook_interrupt;
  cfg->interrupt_ud = st;
  cfg->write = hook_write;
  cfg->write_ud = st;
  cfg->write_err = hook_write_err;
  cfg->write_err_ud = st;
  if (st->on_picture) {
    cfg->picture = hook_picture;
    cfg->picture_ud = st;
  }
}

/* --- host functions: Python callables as masq builtins ------------------------------ */

/* masq's copy of a host error message is at most this long (masq_errorf
 * formats into a fixed buffer): cut to it here, so that the message masq
 * reports is the one kept in pm_state.cause_msg. */
#define PM_MESSAGE_MAX 1000

/* "Type: text" of [exc] as UTF-8 bytes, cut to PM_MESSAGE_MAX at a character
 * boundary and at the first NUL. NULL if formatting raised something that
 * is not an error (then kept pending); an error there leaves the text out. */
static PyObject *error_text(pm_state *st, PyObject *exc) {
  PyObject *str = PyObject_Str(exc), *msg = NULL, *utf8 = NULL;
  if (!str) {
    PyObject *e = pm_fetch();
    if (e && !PyErr_GivenExceptionMatches(e, PyExc_Exception)) {
      keep_pending(st, e);
      return NULL;
    }
    Py_XDECREF(e);
  }
  msg = str ? PyUnicode_FromFormat("%s: %U", Py_TYPE(exc)->tp_name, str)
            : PyUnicode_FromString(Py_TYPE(exc)->tp_name);
  if (msg) utf8 = PyUnicode_AsEncodedString(msg, "utf-8", "backslashreplace");
  Py_XDECREF(str);
  Py_XDECREF(msg);
  if (!utf8) { /* out of memory: the type's name will do */
    PyErr_Clear();
    utf8 = PyBytes_FromString(Py_TYPE(exc)->tp_name);
    if (!utf8) {
      keep_pending(st, pm_fetch());
      return NULL;
    }
  }
  const char *b = PyBytes_AS_STRING(utf8);
  size_t n = strlen(b); /* the bytes object ends in a NUL */
  if (n > PM_MESSAGE_MAX) {
    n = PM_MESSAGE_MAX;
    while (n > 0 && ((unsigned char)b[n] & 0xC0) == 0x80) n--; /* not inside a character */
  }
  if (n == (size_t)PyBytes_GET_SIZE(utf8)) return utf8;
  PyObject *cut = PyBytes_FromStringAndSize(b, (Py_ssize_t)n);
  Py_DECREF(utf8);
  if (!cut) keep_pending(st, pm_fetch());
  return cut;
}

/* The status for the exception a host function raised (taken from Python). */
static masq_status host_failed(pm_state *st, masq_state *M) {
  PyObject *exc = pm_fetch();
  if (!exc || !PyErr_GivenExceptionMatches(exc, PyExc_Exception)) { /* KeyboardInterrupt, SystemExit, ... */
    keep_pending(st, exc);
    return MASQ_ERR_INTERRUPTED; /* ends the run: no try catches it */
  }
  if (PyErr_GivenExceptionMatches(exc, PyExc_MemoryError)) {
    keep_pending(st, exc);
    return MASQ_ERR_MEMORY; /* not caught either; the host's own message comes out */
  }
  PyObject *msg = error_text(st, exc);
  if (!msg) {
    Py_DECREF(exc);
    return MASQ_ERR_INTERRUPTED;
  }
  Py_XSETREF(st->cause, exc);
  Py_XSETREF(st->cause_msg, msg);
  return masq_errorf(M, "%s", PyBytes_AS_STRING(msg));
}

static masq_status host_call(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                             masq_tensor **result) {
  pm_func *f = ud;
  pm_state *st = f->st;
  PyGILState_STATE g = PyGILState_Ensure();
  if (st->stop) { /* an exception is pending: the script is stopping */
    PyGILState_Release(g);
    return MASQ_ERR_INTERRUPTED;
  }
  masq_status s = MASQ_OK;
  int was = st->compute;
  st->compute = 0;
  st->in_host++;
  PyObject *args = PyTuple_New(argc), *r = NULL;
  for (int i = 0; args && i < argc; i++) {
    /* One tensor passed again (f(t, t), or a list masq made one tensor of,
     * api_host.c) is one array: converted once, a masked one's mask turned
     * once. At most 255 arguments and a few parameters: the scan is cheap. */
    int j = 0;
    while (j < i && !(argv[i] && argv[j] == argv[i])) j++;
    PyObject *a = j < i ? Py_NewRef(PyTuple_GET_ITEM(args, j)) : pm_from_tensor(st, argv[i]);
    if (!a) {
      Py_CLEAR(args);
      break;
    }
    PyTuple_SET_ITEM(args, i, a);
  }
  if (args) r = PyObject_Call(f->fn, args, NULL);
  Py_XDECREF(args);
  if (r && pm_to_tensor(st, r, result) < 0) *result = NULL;
  Py_XDECREF(r);
  if (PyErr_Occurred()) s = host_failed(st, M);
  st->in_host--;
  st->compute = was;
  PyGILState_Release(g);
  return s;
}

masq_cfunction pm_host_function(void) { return host_call; }
