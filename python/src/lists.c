/* lists.c - globals by name (strings, lists of strings, numbers, tensors)
 * and nested lists both ways.
 *
 * Out: a masq list that is not one tensor becomes a Python list of its
 * items, read through masq's own len() and indexing (the C API passes
 * tensors only). Lists may share sublists (l = [l, l], sixty times over, is
 * 61 lists and 2^60 occurrences) or hold themselves, and any object may
 * occur many times (a numeric row, a masked tensor, a long string appended
 * 1000 times): within one conversion each masq object is converted once,
 * found again by its identity (masq_get_identity), so Python gets the same
 * sharing and the work and memory go by distinct objects; the loop polls
 * Python's signal handlers (Ctrl-C).
 * In: numpy converts nested Python lists, but walks every occurrence of a
 * shared sublist to find the shape; pm_check_nesting walks each once first
 * and refuses what no tensor can be. */
#include "pymasq.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* --- Python lists in ----------------------------------------------------------- */

/* Numbers past this many a nested list would hold are refused: no machine
 * holds them, and numpy would take years to find out. */
#define PM_MAX_LEAVES ((int64_t)1 << 40)
#define PM_IN_PROGRESS (-1)

typedef struct nesting {
  PyObject *memo; /* id of a list or tuple that holds sequences -> depth + 16 * leaves */
  Py_ssize_t steps;
} nesting;

static int is_seq(PyObject *o) { return PyList_Check(o) || PyTuple_Check(o); }

static int64_t add_leaves(int64_t a, int64_t b) {
  return a > PM_MAX_LEAVES - b ? PM_MAX_LEAVES : a + b;
}

/* The depth of [o] (a list or tuple; the numbers in it are depth 0) in
 * *depth, the numbers it holds counting repeats in *leaves. Stops going
 * down past MASQ_MAX_DIMS, so the recursion is bounded. -1 with an
 * exception for a list that holds itself or Ctrl-C. */
static int walk(nesting *n, PyObject *o, int level, int *depth, int64_t *leaves) {
  PyObject *key = NULL;
  *depth = 1;
  *leaves = 0;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++) { /* a signal handler may change o */
    if (pm_poll_signals(++n->steps) < 0) goto fail;
    PyObject *item = PySequence_Fast_GET_ITEM(o, i);
    if (!is_seq(item)) {
      *leaves = add_leaves(*leaves, 1);
      continue;
    }
    if (!key) { /* o holds sequences: remember it, and find it again if it holds itself */
      if (!n->memo && !(n->memo = PyDict_New())) goto fail;
      if (!(key = PyLong_FromVoidPtr(o))) goto fail;
      PyObject *mark = PyLong_FromLong(PM_IN_PROGRESS);
      if (!mark || PyDict_SetItem(n->memo, key, mark) < 0) {
        Py_XDECREF(mark);
        goto fail;
      }
      Py_DECREF(mark);
    }
    int d = 0;
    int64_t m = 0;
    Py_INCREF(item);
    PyObject *ikey = PyLong_FromVoidPtr(item);
    PyObject *seen = ikey ? PyDict_GetItemWithError(n->memo, ikey) : NULL; /* borrowed */
    Py_XDECREF(ikey);
    int rc = 0;
    if (seen) {
      long long v = PyLong_AsLongLong(seen);
      if (v == PM_IN_PROGRESS) {
        PyErr_SetString(PyExc_TypeError, "masq: a list that holds itself has no tensor form");
        rc = -1;
      }
      d = (int)(v & 15);
      m = (int64_t)(v >> 4);
    } else if (PyErr_Occurred() || level >= MASQ_MAX_DIMS) {
      rc = PyErr_Occurred() ? -1 : 0;
      d = MASQ_MAX_DIMS + 1; /* deep enough: not walked further */
    } else {
      rc = walk(n, item, level + 1, &d, &m);
    }
    Py_DECREF(item);
    if (rc < 0) goto fail;
    if (d + 1 > *depth) *depth = d + 1;
    *leaves = add_leaves(*leaves, m);
  }
  if (key) {
    PyObject *v = PyLong_FromLongLong((long long)*depth + 16 * (long long)*leaves);
    int rc = v ? PyDict_SetItem(n->memo, key, v) : -1;
    Py_XDECREF(v);
    Py_DECREF(key);
    return rc;
  }
  return 0;
fail:
  Py_XDECREF(key);
  return -1;
}

int pm_check_nesting(PyObject *o) {
  nesting n = {NULL, 0};
  int depth;
  int64_t leaves;
  int rc = walk(&n, o, 1, &depth, &leaves);
  Py_XDECREF(n.memo);
  if (rc < 0) return -1;
  if (depth > MASQ_MAX_DIMS) {
    PyErr_Format(PyExc_TypeError, "masq: a list nested deeper than %d levels has no tensor form "
                 "(masq tensors have at most %d dimensions)", MASQ_MAX_DIMS, MASQ_MAX_DIMS);
    return -1;
  }
  if (leaves >= PM_MAX_LEAVES) {
    PyErr_SetString(PyExc_MemoryError, "masq: a nested list of more than 2^40 numbers (counting each "
                    "occurrence of a shared sublist) has no tensor form");
    return -1;
  }
  return 0;
}

/* --- globals in ------------------------------------------------------------------- */

/* A list or tuple whose items are all str, as UTF-8 pointers and lengths. */
static int string_list(pm_state *st, const char *name, PyObject *o) {
  PyObject *items = PySequence_Tuple(o); /* holds the strings while signal handlers may run */
  if (!items) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(items);
  int rc = -1;
  const char **s = NULL;
  size_t *lens = NULL;
  if (n > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError, "masq: too many strings");
    goto out;
  }
  s = PyMem_Calloc((size_t)n + 1, sizeof *s);
  lens = PyMem_Calloc((size_t)n + 1, sizeof *lens);
  if (!s || !lens) {
    PyErr_NoMemory();
    goto out;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_ssize_t len;
    PyObject *item = PyTuple_GET_ITEM(items, i);
    if (!PyUnicode_Check(item)) {
      PyErr_SetString(PyExc_TypeError, "masq: a list of strings changed while it was read");
      goto out;
    }
    if (pm_poll_signals(i + 1) < 0 || !(s[i] = PyUnicode_AsUTF8AndSize(item, &len))) goto out;
    lens[i] = (size_t)len;
  }
  if (masq_set_lstrings(st->M, name, (int)n, s, lens) != MASQ_OK)
    pm_raise(st, masq_last_error(st->M)->status);
  else
    rc = 0;
out:
  PyMem_Free(s);
  PyMem_Free(lens);
  Py_DECREF(items);
  return rc;
}

static int all_strings(PyObject *o) {
  if (!PyList_Check(o) && !PyTuple_Check(o)) return 0;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  for (Py_ssize_t i = 0; i < n; i++)
    if (!PyUnicode_Check(PySequence_Fast_GET_ITEM(o, i))) return 0;
  return n > 0;
}

int pm_set_global(pm_state *st, const char *name, PyObject *o) {
  masq_status s;
  if (PyUnicode_Check(o)) {
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(o, &len);
    if (!u) return -1;
    s = masq_set_lstring(st->M, name, u, (size_t)len);
  } else if (all_strings(o)) {
    return string_list(st, name, o);
  } else if (PyLong_Check(o) && !PyBool_Check(o)) {
    int64_t i = PyLong_AsLongLong(o);
    if (i == -1 && PyErr_Occurred()) return -1;
    s = masq_set_int(st->M, name, i);
  } else if (PyFloat_Check(o)) {
    s = masq_set_number(st->M, name, PyFloat_AS_DOUBLE(o));
  } else {
    masq_tensor *t;
    PyObject *pyname = PyUnicode_FromString(name);
    int rc = pyname ? pm_to_global_tensor(st, o, pyname, &t) : -1;
    Py_XDECREF(pyname);
    if (rc < 0) return -1;
    s = masq_set_global(st->M, name, t);
    masq_tensor_release(st->M, t);
  }
  if (s != MASQ_OK) {
    pm_raise(st, s);
    return -1;
  }
  return 0;
}

/* --- globals and masq lists out -------------------------------------------------------- */

/* Distinct lists nested deeper than this are not converted (the recursion
 * is bounded; a list found again by its identity does not count). */
#define PM_LIST_DEPTH 100

/* One conversion out: the Python object made for each masq object met so
 * far inside a list (a list, a tensor, a list of numbers made an array, a
 * long string), keyed by its identity as a Python int; created with the
 * first list. Each of those objects stays alive in the value being
 * converted (nothing else runs on the State meanwhile), so no identity is
 * reused during the conversion. */
typedef struct reading {
  PyObject *memo;
} reading;

/* Strings shorter than this are made again at each occurrence: one costs
 * less than the memo's entry for it (a dict slot and an int, about 100
 * bytes), and Python never promises that equal strings are one object. */
#define PM_MEMO_MIN_CHARS 64

/* Whether to remember [o], made for a masq object: not a number (a 0-d
 * tensor's), nor a short string. */
static int worth_remembering(PyObject *o) {
  if (PyLong_Check(o) || PyFloat_Check(o)) return 0;
  return !PyUnicode_Check(o) || PyUnicode_GET_LENGTH(o) >= PM_MEMO_MIN_CHARS;
}

static int remember(reading *rd, PyObject *key, PyObject *o) {
  if (!rd->memo && !(rd->memo = PyDict_New())) return -1;
  return PyDict_SetItem(rd->memo, key, o);
}

static PyObject *get_value(pm_state *st, reading *rd, const char *name, int missing_is_keyerror,
                           int depth);

/* Runs one statement of the module's own on the State (an assignment to a
 * __py_ global, so `_` is left alone), without the GIL: a long conversion
 * lets other threads run (the State is busy, so none of them uses it). */
static int run_stmt(pm_state *st, const char *src) {
  masq_status s;
  Py_BEGIN_ALLOW_THREADS
  s = masq_eval(st->M, src, strlen(src), "<masq module>", 0);
  Py_END_ALLOW_THREADS
  if (s != MASQ_OK) {
    pm_raise(st, s);
    return -1;
  }
  return 0;
}

/* The items of a list that is not a tensor (strings, tensors of different
 * shapes, nested lists) into [list], read one by one through masq's own
 * len() and indexing into the globals __py_n<depth> and __py_item<depth>.
 * [too_big] (or NULL) is why the list was too big to be one tensor for
 * memory: its items are read only if they are lists, which may each fit;
 * numbers one by one would take Python several times the memory refused
 * (a float32 becomes a 32-byte float and its pointer), outside the limit. */
static int fill_list(pm_state *st, reading *rd, const char *name, int depth, PyObject *list,
                     int64_t n, PyObject *too_big) {
  char src[160], item[32];
  snprintf(item, sizeof item, "__py_item%d", depth);
  for (int64_t i = 0; i < n; i++) {
    if (pm_poll_signals((Py_ssize_t)i + 1) < 0) return -1;
    snprintf(src, sizeof src, "%s = %s[%lld]", item, name, (long long)i);
    if (run_stmt(st, src) < 0) return -1;
    uint64_t id = 1;
    if (i == 0 && too_big && masq_get_identity(st->M, item, &id) == MASQ_OK && id == 0) {
      /* the first item is a number (what made the list look numeric) */
      if (depth == 0)
        PyErr_Format(PyExc_MemoryError, "masq: global '%s' is a list of numbers too large for an "
                     "array (%U)", name, too_big);
      else
        PyErr_Format(PyExc_MemoryError, "masq: a list item is a list of numbers too large for an "
                     "array (%U)", too_big);
      return -1;
    }
    PyObject *v = get_value(st, rd, item, 0, depth + 1);
    if (!v) return -1;
    PyList_SET_ITEM(list, (Py_ssize_t)i, v);
  }
  return 0;
}

/* A new Python list for the masq list global [name] ([key]: its identity),
 * remembered before its items are read (so a list inside itself finds
 * it). [too_big]: fill_list's. */
static PyObject *list_value(pm_state *st, reading *rd, const char *name, PyObject *key, int depth,
                            PyObject *too_big) {
  if (depth >= PM_LIST_DEPTH)
    return PyErr_Format(PyExc_TypeError, "masq: lists nested deeper than %d have no Python form",
                        PM_LIST_DEPTH);
  char src[160], count[32];
  snprintf(count, sizeof count, "__py_n%d", depth);
  snprintf(src, sizeof src, "%s = len(%s)", count, name);
  int64_t n = 0;
  if (run_stmt(st, src) == 0 && masq_get_int(st->M, count, &n) != MASQ_OK)
    pm_raise(st, masq_last_error(st->M)->status);
  masq_set_global(st->M, count, NULL);
  PyObject *list = PyErr_Occurred() ? NULL : PyList_New((Py_ssize_t)n);
  /* (a list has an identity: no key only if asking for it failed) */
  if (list && ((key && remember(rd, key, list) < 0) ||
               fill_list(st, rd, name, depth, list, n, too_big) < 0))
    Py_CLEAR(list);
  snprintf(count, sizeof count, "__py_item%d", depth);
  masq_set_global(st->M, count, NULL);
  return list;
}

/* masq_get_global without the GIL, the interrupt hook looking at Python's
 * signals as during a run (module.c): a list becomes a tensor by a walk
 * that may be long. Ctrl-C there is MASQ_ERR_INTERRUPTED with the
 * KeyboardInterrupt set. */
static masq_status get_tensor(pm_state *st, const char *name, masq_tensor **t) {
  int was = st->compute, stop = st->stop;
  PyObject *pending = st->pending;
  st->pending = NULL;
  st->compute = 1;
  st->stop = 0;
  masq_status s;
  Py_BEGIN_ALLOW_THREADS
  s = masq_get_global(st->M, name, t);
  Py_END_ALLOW_THREADS
  st->compute = was;
  st->stop = stop;
  PyObject *raised = st->pending;
  st->pending = pending;
  if (!raised) return s;
  if (*t) masq_tensor_release(st->M, *t); /* done just before the handler raised */
  *t = NULL;
  pm_restore(raised);
  return MASQ_ERR_INTERRUPTED;
}

/* Why a list is not one tensor, if the reason is memory (masq's limit or
 * the allocator, which refuse the tensor before its list is walked): the
 * reason's text, else NULL. masq_get_global reports both as MASQ_ERR_USAGE
 * (include/masq.h), so the message tells them apart. */
static PyObject *memory_reason(const char *message) {
  const char *why = strstr(message, "memory limit of");
  if (!why) why = strstr(message, "out of memory");
  return why ? PyUnicode_DecodeUTF8(why, (Py_ssize_t)strlen(why), "replace") : NULL;
}

/* The value of global [name] made anew ([key]: its identity, NULL for a
 * number or none): a tensor as an array or a Python number, a string, or a
 * list that is not one tensor as a Python list. */
static PyObject *convert(pm_state *st, reading *rd, const char *name, PyObject *key,
                         int missing_is_keyerror, int depth) {
  masq_tensor *t = NULL;
  masq_status s = get_tensor(st, name, &t);
  if (s == MASQ_OK) {
    PyObject *r = pm_from_tensor(st, t);
    masq_tensor_release(st->M, t);
    return r;
  }
  /* Ctrl-C during the conversion: not a reason to read the list item by item */
  if (s == MASQ_ERR_INTERRUPTED) return PyErr_Occurred() ? NULL : pm_raise(st, s);
  if (s != MASQ_ERR_USAGE) return pm_raise(st, s); /* MASQ_ERR_MEMORY: a number's 0-d tensor */
  const masq_error *e = masq_last_error(st->M);
  if (strstr(e->message, "there is no global named")) {
    if (missing_is_keyerror) return PyErr_SetString(PyExc_KeyError, name), NULL;
    return pm_raise(st, s);
  }
  if (strstr(e->message, "is a list")) {
    PyObject *too_big = memory_reason(e->message);
    if (!too_big && PyErr_Occurred()) return NULL;
    PyObject *r = list_value(st, rd, name, key, depth, too_big);
    Py_XDECREF(too_big);
    return r;
  }
  size_t len = 0;
  if (masq_get_string(st->M, name, NULL, 0, &len) == MASQ_OK) {
    char *buf = PyMem_Malloc(len + 1);
    if (!buf) return PyErr_NoMemory();
    PyObject *r = NULL;
    if (masq_get_string(st->M, name, buf, len + 1, &len) == MASQ_OK)
      r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "surrogateescape");
    else
      pm_raise(st, masq_last_error(st->M)->status);
    PyMem_Free(buf);
    return r;
  }
  masq_get_global(st->M, name, &t); /* the first error again, for the message */
  if (depth > 0)
    PyErr_Format(PyExc_TypeError, "masq: a list item has no Python form (%s)", masq_last_error(st->M)->message);
  else if (strstr(masq_last_error(st->M)->message, "is a table"))
    PyErr_Format(PyExc_TypeError, "masq: global '%s' is a table, which has no Python form of its "
                 "own: masq.table_to_pandas(s, name) makes it a DataFrame", name);
  else
    PyErr_Format(PyExc_TypeError, "masq: global '%s' has no Python form (%s)", name,
                 masq_last_error(st->M)->message);
  return NULL;
}

/* The Python value of global [name]: the one made before in this
 * conversion for the same masq object, or a new one (remembered when it is
 * inside a list: a value met once needs no memo). */
static PyObject *get_value(pm_state *st, reading *rd, const char *name, int missing_is_keyerror,
                           int depth) {
  uint64_t id = 0;
  if (masq_get_identity(st->M, name, &id) != MASQ_OK) id = 0; /* no such global: convert says so */
  PyObject *key = id ? PyLong_FromUnsignedLongLong(id) : NULL, *r = NULL; /* 0: none or a number */
  if (id && !key) return NULL;
  if (key && rd->memo) r = Py_XNewRef(PyDict_GetItemWithError(rd->memo, key));
  if (!r && !PyErr_Occurred()) {
    r = convert(st, rd, name, key, missing_is_keyerror, depth);
    if (r && key && rd->memo && worth_remembering(r) && remember(rd, key, r) < 0) Py_CLEAR(r);
  }
  Py_XDECREF(key);
  return r;
}

PyObject *pm_get_global(pm_state *st, const char *name, int missing_is_keyerror) {
  reading rd = {NULL};
  PyObject *r = get_value(st, &rd, name, missing_is_keyerror, 0);
  Py_XDECREF(rd.memo);
  return r;
}
