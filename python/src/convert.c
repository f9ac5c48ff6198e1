/* convert.c - tensors across the boundary: numpy arrays (plain and
 * numpy.ma) and Python numbers in; numpy arrays and Python scalars out.
 * (Strings, lists and globals by name: lists.c.)
 *
 * In: a buffer whose dtype and layout masq can read (masq's dtypes, native
 * byte order; aligned, non-negative strides; bools whose bytes are 0 or 1)
 * is wrapped in place with masq_tensor_wrap, holding the Py_buffer until
 * masq lets go of it; anything else is copied by numpy first (misaligned
 * buffers, byte-swapped or negative strides, odd bool bytes, other dtypes).
 * numpy.ma's mask is True where an entry is INVALID, masq's where it is
 * valid: the mask is turned into a new bool array (the one copy a masked
 * array costs).
 * Out: a pm_tensor holds the handle and exports the data through the buffer
 * protocol, read-only (masq tensors are immutable and may be shared), and
 * numpy.asarray views it without a copy; the mask comes out turned again. */
#include "pymasq.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

/* --- pm_tensor: a handle exported as a buffer --------------------------------- */

static void tensor_dealloc(pm_tensor *self) {
  pm_state *st = self->st;
  if (self->t) st->exports--;
  if (self->t && st->M) {
    if (st->depth > 0) {
      /* Another call is running on the State (maybe on another thread):
       * the handle goes back when it is idle. */
      pm_dropped *d = PyMem_RawMalloc(sizeof *d);
      if (d) {
        d->t = self->t;
        d->next = st->dropped;
        st->dropped = d;
      } /* else: masq_close gives it back */
    } else {
      masq_tensor_release(st->M, self->t);
      pm_drain(st);
    }
  }
  if (st->closed && st->exports == 0 && st->depth == 0) pm_close_now(st); /* the last view of a closed State */
  Py_DECREF(st);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The buffer format of each dtype numpy has (bfloat16 has none). */
static const char *dtype_format(masq_dtype d) {
  switch (d) {
  case MASQ_BOOL: return "?";
  case MASQ_INT64: return LONG_MAX == INT64_MAX ? "l" : "q"; /* numpy's own int64 is "l" on LP64 */
  case MASQ_FLOAT32: return "f";
  case MASQ_INT8: return "b";
  case MASQ_INT16: return "h";
  case MASQ_INT32: return "i";
  case MASQ_UINT8: return "B";
  case MASQ_FLOAT16: return "e";
  default: return "d";
  }
}

static Py_ssize_t dtype_size(masq_dtype d) {
  static const Py_ssize_t size[] = {1, 8, 4, 8, 1, 2, 4, 1, 2, 2}; /* masq.h's order */
  return (unsigned)d <= MASQ_BFLOAT16 ? size[d] : 8;
}

static int tensor_getbuffer(pm_tensor *self, Py_buffer *view, int flags) {
  static char empty[8]; /* a valid address for a buffer without elements; never written */
  if (flags & PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError, "masq tensors are read-only (copy the array to change it)");
    return -1;
  }
  masq_dtype dt = self->mask ? MASQ_BOOL : self->d.dtype;
  const void *p = self->mask ? (const void *)self->d.valid : self->d.data;
  view->buf = p ? (void *)p : empty;
  view->obj = (PyObject *)self;
  Py_INCREF(self);
  view->itemsize = dtype_size(dt);
  view->len = view->itemsize;
  for (int i = 0; i < self->d.ndim; i++) view->len *= self->shape[i];
  view->readonly = 1;
  view->ndim = self->d.ndim;
  view->format = (flags & PyBUF_FORMAT) ? (char *)dtype_format(dt) : NULL;
  view->shape = self->shape;
  view->strides = self->strides;
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs tensor_buffer = {(getbufferproc)tensor_getbuffer, NULL};

PyTypeObject pm_tensor_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "masq._Tensor",
    .tp_basicsize = sizeof(pm_tensor),
    .tp_dealloc = (destructor)tensor_dealloc,
    .tp_as_buffer = &tensor_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a masq tensor handle exported through the buffer protocol (internal)",
};

/* A new pm_tensor over [t] (retained) exporting its data or its mask. */
static PyObject *tensor_export(pm_state *st, masq_tensor *t, int mask) {
  pm_tensor *h = PyObject_New(pm_tensor, &pm_tensor_type);
  if (!h) return NULL;
  h->st = st;
  Py_INCREF(st);
  h->t = NULL;
  h->mask = mask;
  if (masq_tensor_retain(st->M, t) != MASQ_OK || masq_tensor_info(st->M, t, &h->d) != MASQ_OK) {
    Py_DECREF(h);
    return pm_raise(st, masq_last_error(st->M)->status);
  }
  h->t = t;
  st->exports++;
  const int64_t *es = mask ? h->d.valid_strides : h->d.strides;
  Py_ssize_t size = dtype_size(mask ? MASQ_BOOL : h->d.dtype);
  Py_ssize_t c = size;
  for (int i = h->d.ndim - 1; i >= 0; i--) {
    h->shape[i] = (Py_ssize_t)h->d.shape[i];
    h->strides[i] = es ? (Py_ssize_t)es[i] * size : c;
    c *= h->shape[i];
  }
  return (PyObject *)h;
}

/* --- masq -> Python ------------------------------------------------------------ */

static PyObject *scalar(pm_state *st, masq_tensor *t, masq_dtype dt) {
  if (dt == MASQ_FLOAT64 || dt == MASQ_FLOAT32 || dt == MASQ_FLOAT16) {
    double v;
    if (masq_tensor_item(st->M, t, &v) != MASQ_OK) return pm_raise(st, masq_last_error(st->M)->status);
    if (dt == MASQ_FLOAT64) return PyFloat_FromDouble(v);
    if (dt == MASQ_FLOAT16) return PyObject_CallFunction(pm_np.float16, "d", v);
    return PyObject_CallFunction(pm_np.float32, "d", v);
  }
  int64_t i;
  if (masq_tensor_item_int(st->M, t, &i) != MASQ_OK) return pm_raise(st, masq_last_error(st->M)->status);
  return dt == MASQ_BOOL ? PyBool_FromLong(i != 0) : PyLong_FromLongLong(i);
}

PyObject *pm_from_tensor(pm_state *st, masq_tensor *t) {
  if (!t) Py_RETURN_NONE;
  masq_tensor_desc d;
  if (masq_tensor_info(st->M, t, &d) != MASQ_OK) return pm_raise(st, masq_last_error(st->M)->status);
  if (d.dtype == MASQ_BFLOAT16) /* numpy has no bfloat16 */
    return PyErr_Format(PyExc_TypeError,
                        "masq: numpy has no bfloat16; convert the tensor first, e.g. to(x, float32) "
                        "(exact)");
  if (d.ndim == 0) {
    if (d.valid && !d.valid[0]) return Py_NewRef(pm_np.masked);
    return scalar(st, t, d.dtype);
  }
  PyObject *h = tensor_export(st, t, 0);
  if (!h) return NULL;
  PyObject *data = PyObject_CallOneArg(pm_np.asarray, h);
  Py_DECREF(h);
  if (!data || !d.valid) return data;
  PyObject *mh = tensor_export(st, t, 1), *valid = NULL, *invalid = NULL, *r = NULL;
  if (mh) valid = PyObject_CallOneArg(pm_np.asarray, mh);
  if (valid) invalid = PyObject_CallOneArg(pm_np.logical_not, valid); /* the polarity turn */
  if (invalid) {
    PyObject *args = PyTuple_Pack(1, data), *kw = Py_BuildValue("{s:O}", "mask", invalid);
    if (args && kw) r = PyObject_Call(pm_np.MaskedArray, args, kw);
    Py_XDECREF(args);
    Py_XDECREF(kw);
  }
  Py_XDECREF(mh);
  Py_XDECREF(valid);
  Py_XDECREF(invalid);
  Py_DECREF(data);
  return r;
}

/* --- Python -> masq ------------------------------------------------------------ */

static const char *dtype_name(masq_dtype d) {
  static const char *const name[] = {"bool", "int64", "float32", "float64", "int8",
                                     "int16", "int32", "uint8", "float16", "bfloat16"};
  return (unsigned)d <= MASQ_BFLOAT16 ? name[d] : "float64";
}

/* masq's dtype for a buffer format, or -1. [convert] gets the numpy dtype
 * name to convert to when masq has no such dtype but one holds it exactly. */
static int format_dtype(const char *f, Py_ssize_t itemsize, const char **convert) {
  *convert = NULL;
  if (!f) f = "B";
  if (*f == '>' || *f == '!') { /* big-endian: numpy converts it to the native dtype */
    int dt = format_dtype(f + 1, itemsize, convert);
    if (dt >= 0) *convert = dtype_name((masq_dtype)dt);
    return -1;
  }
  if (*f == '@' || *f == '=' || *f == '<') f++; /* native order on the machines masq runs on */
  if (f[0] && f[1]) return -1;
  switch (*f) {
  case '?': return MASQ_BOOL;
  case 'f': return MASQ_FLOAT32;
  case 'd': return MASQ_FLOAT64;
  case 'l': case 'q': case 'i':
    if (itemsize == 8) return MASQ_INT64;
    if (itemsize == 4) return MASQ_INT32;
    *convert = "int64";
    return -1;
  case 'b': return MASQ_INT8;
  case 'B': return MASQ_UINT8;
  case 'h': return itemsize == 2 ? MASQ_INT16 : -1;
  case 'H': case 'I': /* uint16 and uint32: masq has no such dtype; int64 holds them */
    *convert = "int64";
    return -1;
  case 'L':
    if (itemsize == 4) *convert = "int64";
    return -1;
  case 'e': return MASQ_FLOAT16;
  default: return -1;
  }
}

/* Fills desc's shape and element strides from [v]; 0 if masq can read the
 * layout in place (aligned, strides whole non-negative elements). */
static int layout(const Py_buffer *v, int64_t *shape, int64_t *strides) {
  if (v->ndim > MASQ_MAX_DIMS) return -1;
  if ((uintptr_t)v->buf % (uintptr_t)v->itemsize) return -1;
  for (int i = 0; i < v->ndim; i++) {
    shape[i] = v->shape[i];
    Py_ssize_t s = v->strides ? v->strides[i] : 0;
    if (!v->strides) { /* C-contiguous */
      s = v->itemsize;
      for (int j = i + 1; j < v->ndim; j++) s *= v->shape[j];
    }
    if (s < 0 || s % v->itemsize) return -1;
    strides[i] = s / v->itemsize;
  }
  return 0;
}

static void wrap_release(void *ud) {
  pm_wrap *w = ud; /* maybe without the GIL, on the thread running masq: only move it */
  pm_state *st = w->st;
  if (w->prev) w->prev->next = w->next;
  else st->live = w->next;
  if (w->next) w->next->prev = w->prev;
  w->prev = NULL;
  w->next = st->released;
  st->released = w;
}

/* 1 if every byte of a bool buffer is 0 or 1, 0 if not (numpy reads any
 * nonzero byte as True: np.frombuffer, arr.view(bool)), -1 if Ctrl-C
 * stopped the scan. Each distinct byte is read once: a dimension of stride
 * 0 (a broadcast) counts as one. [strides] in bytes, non-negative. */
static int bools_clean(const uint8_t *p, int ndim, const int64_t *shape, const int64_t *strides) {
  for (int i = 0; i < ndim; i++)
    if (shape[i] == 0) return 1;
  int64_t n = 1, step = 0, idx[MASQ_MAX_DIMS] = {0}, off = 0;
  if (ndim > 0 && strides[ndim - 1] != 0) {
    n = shape[ndim - 1];
    step = strides[ndim - 1];
  }
  for (Py_ssize_t rows = 1;; rows++) {
    uint8_t any = 0;
    const uint8_t *q = p + off;
    if (step == 1)
      for (int64_t j = 0; j < n; j++) any |= q[j];
    else
      for (int64_t j = 0; j < n; j++) any |= q[j * step];
    if (any & 0xFE) return 0;
    int d = ndim - 2; /* the next row: an odometer over the outer dimensions */
    for (; d >= 0; d--) {
      if (strides[d] == 0) continue;
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= idx[d] * strides[d];
      idx[d] = 0;
    }
    if (d < 0) return 1;
    if (pm_poll_signals(rows) < 0) return -1;
  }
}

/* Wraps [data] (and [valid], a bool array of the same shape, or NULL) in
 * place. The objects must already have masq's dtypes and layout and, for
 * bools, bytes 0 and 1 (checked, but for a [valid] the module made:
 * [valid_clean]); returns 1 if they do not, so the caller converts and
 * tries again. */
static int wrap(pm_state *st, PyObject *data, PyObject *valid, int valid_clean, PyObject *masked,
                PyObject *name, masq_tensor **out) {
  pm_wrap *w = PyMem_RawCalloc(1, sizeof *w);
  if (!w) {
    PyErr_NoMemory();
    return -1;
  }
  w->st = st;
  int64_t shape[MASQ_MAX_DIMS], strides[MASQ_MAX_DIMS], vstrides[MASQ_MAX_DIMS];
  const char *conv;
  masq_tensor_desc d = {0};
  int rc = 1, clean;
  if (PyObject_GetBuffer(data, &w->views[0], PyBUF_RECORDS_RO) < 0) goto fail;
  w->nviews = 1;
  Py_buffer *v = &w->views[0];
  if (v->ndim > MASQ_MAX_DIMS) {
    PyErr_Format(PyExc_TypeError, "masq: an array of %d dimensions (masq tensors have at most %d)",
                 v->ndim, MASQ_MAX_DIMS);
    goto fail;
  }
  int dt = format_dtype(v->format, v->itemsize, &conv);
  if (dt < 0 || layout(v, shape, strides)) goto done;
  if (dt == MASQ_BOOL && (clean = bools_clean(v->buf, v->ndim, shape, strides)) <= 0) {
    if (clean < 0) goto fail;
    goto done;
  }
  d.dtype = (masq_dtype)dt;
  d.ndim = v->ndim;
  d.shape = shape;
  d.strides = strides;
  d.data = v->buf;
  d.flags = v->readonly ? MASQ_TENSOR_READONLY : 0;
  if (valid) {
    if (PyObject_GetBuffer(valid, &w->views[1], PyBUF_RECORDS_RO) < 0) goto fail;
    w->nviews = 2;
    Py_buffer *m = &w->views[1];
    int64_t mshape[MASQ_MAX_DIMS];
    if (format_dtype(m->format, m->itemsize, &conv) != MASQ_BOOL || m->ndim != v->ndim ||
        layout(m, mshape, vstrides))
      goto done;
    if (memcmp(mshape, shape, sizeof(int64_t) * (size_t)v->ndim)) {
      PyErr_SetString(PyExc_ValueError, "masq: the validity mask must have the data's shape");
      goto fail;
    }
    if (!valid_clean && (clean = bools_clean(m->buf, m->ndim, mshape, vstrides)) <= 0) {
      if (clean < 0) goto fail;
      goto done;
    }
    d.valid = m->buf;
    d.valid_strides = vstrides;
  }
  d.release = wrap_release;
  d.release_ud = w;
  if (masq_tensor_wrap(st->M, &d, out) != MASQ_OK) {
    pm_raise(st, masq_last_error(st->M)->status);
    goto fail;
  }
  w->masked = Py_XNewRef(masked);
  w->name = masked ? Py_XNewRef(name) : NULL;
  w->next = st->live; /* masq's now, until wrap_release; listed for the collector */
  if (w->next) w->next->prev = w;
  st->live = w;
  return 0;
fail:
  rc = -1;
done:
  for (int i = 0; i < w->nviews; i++) PyBuffer_Release(&w->views[i]);
  PyMem_RawFree(w);
  return rc;
}

/* numpy.asarray(o), nested lists checked first (lists.c). */
static PyObject *pm_asarray(PyObject *o) {
  if ((PyList_Check(o) || PyTuple_Check(o)) && pm_check_nesting(o) < 0) return NULL;
  return PyObject_CallOneArg(pm_np.asarray, o);
}

/* A new bool array of 0s and 1s from the bool array [a], whatever its bytes
 * (its bytes != 0, read as uint8 so that numpy cannot pass an odd byte on). */
static PyObject *clean_bools(PyObject *a) {
  PyObject *u8 = PyObject_CallMethod(a, "view", "s", "uint8"), *r = NULL;
  if (!u8) return NULL;
  PyObject *zero = PyLong_FromLong(0);
  if (zero) r = PyObject_CallFunctionObjArgs(pm_np.not_equal, u8, zero, NULL);
  Py_XDECREF(zero);
  Py_DECREF(u8);
  return r;
}

/* [o] as an array masq reads in place: its dtype (or the one that holds it
 * exactly), native byte order, aligned, C order, bools 0 and 1. A copy
 * unless [o] already is one. NULL with TypeError for a dtype masq lacks. */
static PyObject *as_masq_array(PyObject *o) {
  PyObject *a = pm_asarray(o);
  if (!a) return NULL;
  Py_buffer v;
  const char *conv = NULL;
  int dt = -1;
  if (PyObject_GetBuffer(a, &v, PyBUF_RECORDS_RO) == 0) {
    dt = format_dtype(v.format, v.itemsize, &conv);
    PyBuffer_Release(&v);
  } else {
    PyErr_Clear();
  }
  PyObject *r = NULL;
  if (dt < 0 && !conv) {
    PyObject *dtype = PyObject_GetAttrString(a, "dtype");
    PyErr_Format(PyExc_TypeError, "masq has no dtype for numpy dtype %R (it stores bool, int8, int16, "
                 "int32, int64, uint8, float16, float32 and float64)",
                 dtype ? dtype : Py_None);
    Py_XDECREF(dtype);
  } else if (dt == MASQ_BOOL) {
    r = clean_bools(a);
  } else { /* numpy.require copies only what is not so already */
    PyObject *args = PyTuple_Pack(1, a), *kw = Py_BuildValue(
        "{s:s,s:s}", "dtype", conv ? conv : dtype_name((masq_dtype)dt), "requirements", "CA");
    if (args && kw) r = PyObject_Call(pm_np.require, args, kw);
    Py_XDECREF(args);
    Py_XDECREF(kw);
  }
  Py_DECREF(a);
  return r;
}

/* Wraps [data] with [valid]; copies them first (as_masq_array) if masq
 * cannot read them as they are. [masked], [name]: see pm_wrap (for a wrap
 * in place only: a copy is a snapshot of data and mask alike). */
static int wrap_or_convert(pm_state *st, PyObject *data, PyObject *valid, int valid_clean,
                           PyObject *masked, PyObject *name, masq_tensor **out) {
  int rc = wrap(st, data, valid, valid_clean, masked, name, out);
  if (rc <= 0) return rc;
  PyObject *d2 = as_masq_array(data), *v2 = NULL;
  if (!d2) return -1;
  if (valid) {
    PyObject *m = PyObject_CallOneArg(pm_np.asarray, valid);
    v2 = m ? clean_bools(m) : NULL;
    Py_XDECREF(m);
    if (!v2) {
      Py_DECREF(d2);
      return -1;
    }
  }
  rc = wrap(st, d2, v2, 1, NULL, NULL, out); /* a copy is a snapshot, its mask too */
  Py_DECREF(d2);
  Py_XDECREF(v2);
  if (rc > 0) PyErr_SetString(PyExc_TypeError, "masq cannot read this array's layout");
  return rc ? -1 : 0;
}

/* (data, valid): valid is True where the entry is valid, masq's polarity,
 * and broadcast to the data's shape. */
static int from_pair(pm_state *st, PyObject *data, PyObject *valid, masq_tensor **out) {
  int rc = -1, clean = 0;
  PyObject *a = pm_asarray(data), *m = NULL, *b = NULL, *shape = NULL;
  if (a) m = pm_asarray(valid);
  if (m) {
    PyObject *dt = PyObject_GetAttrString(m, "dtype");
    PyObject *kind = dt ? PyObject_GetAttrString(dt, "kind") : NULL;
    if (kind && PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, "b") != 0) {
      PyObject *z = PyLong_FromLong(0); /* valid != 0: any nonzero number is valid */
      PyObject *t = z ? PyObject_CallFunctionObjArgs(pm_np.not_equal, m, z, NULL) : NULL;
      Py_XDECREF(z);
      Py_SETREF(m, t);
      clean = 1;
    } else if (!kind) {
      Py_CLEAR(m);
    }
    Py_XDECREF(kind);
    Py_XDECREF(dt);
  }
  if (m) shape = PyObject_GetAttrString(a, "shape");
  if (shape) b = PyObject_CallFunctionObjArgs(pm_np.broadcast_to, m, shape, NULL);
  if (b) rc = wrap_or_convert(st, a, b, clean, NULL, NULL, out);
  Py_XDECREF(a);
  Py_XDECREF(m);
  Py_XDECREF(b);
  Py_XDECREF(shape);
  return rc;
}

/* A numpy.ma array: its data wrapped, its mask turned into a new bool array
 * that pm_sync_masks turns again before each call if the array is bound to
 * global [name] (not for a call's arguments, converted at each call, or a
 * registered function's result). */
static int from_masked(pm_state *st, PyObject *o, PyObject *name, masq_tensor **out) {
  int rc = -1;
  PyObject *data = PyObject_CallOneArg(pm_np.getdata, o), *mask = NULL, *valid = NULL;
  if (data) mask = PyObject_CallOneArg(pm_np.getmask, o);
  /* the polarity turn; logical_not makes 0s and 1s whatever the mask's bytes */
  if (mask && mask != pm_np.nomask) valid = PyObject_CallOneArg(pm_np.logical_not, mask);
  if (mask && (mask == pm_np.nomask || valid))
    rc = wrap_or_convert(st, data, valid, 1, name ? o : NULL, name, out);
  Py_XDECREF(data);
  Py_XDECREF(mask);
  Py_XDECREF(valid);
  return rc;
}

/* 1 if [o] is a pandas object (its type's module is pandas'), 0 if not,
 * -1 with the exception set. */
static int is_pandas(PyObject *o) {
  PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__module__");
  if (!mod) {
    PyErr_Clear();
    return 0;
  }
  const char *m = PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
  int r = m && strncmp(m, "pandas", 6) == 0 && (m[6] == '.' || m[6] == 0);
  if (!m) PyErr_Clear();
  Py_DECREF(mod);
  return r;
}

/* A pandas Series or DataFrame: masq/_pandas.py's to_pair gives (data,
 * valid), NaN and pd.NA not valid, a copy (the frame is read when bound). */
static int from_pandas(pm_state *st, PyObject *o, masq_tensor **out) {
  PyObject *mod = PyImport_ImportModule("masq._pandas"), *pair = NULL;
  if (mod) pair = PyObject_CallMethod(mod, "to_pair", "O", o);
  Py_XDECREF(mod);
  if (!pair) return -1;
  int rc = -1;
  if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2)
    PyErr_SetString(PyExc_TypeError, "masq._pandas.to_pair must give (data, valid)");
  else if (PyTuple_GET_ITEM(pair, 1) == Py_None)
    rc = wrap_or_convert(st, PyTuple_GET_ITEM(pair, 0), NULL, 0, NULL, NULL, out);
  else
    rc = from_pair(st, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), out);
  Py_DECREF(pair);
  return rc;
}

static int new_scalar(pm_state *st, masq_dtype dt, const void *p, masq_tensor **out) {
  masq_tensor_desc d = {.dtype = dt, .ndim = 0, .data = p};
  if (masq_tensor_new(st->M, &d, out) != MASQ_OK) {
    pm_raise(st, masq_last_error(st->M)->status);
    return -1;
  }
  return 0;
}

int pm_to_tensor(pm_state *st, PyObject *o, masq_tensor **out) { return pm_to_global_tensor(st, o, NULL, out); }

int pm_to_global_tensor(pm_state *st, PyObject *o, PyObject *name, masq_tensor **out) {
  *out = NULL;
  if (o == Py_None) return 0;
  if (PyBool_Check(o)) {
    uint8_t b = o == Py_True;
    return new_scalar(st, MASQ_BOOL, &b, out);
  }
  if (PyLong_Check(o)) {
    int64_t i = PyLong_AsLongLong(o);
    if (i == -1 && PyErr_Occurred()) return -1;
    return new_scalar(st, MASQ_INT64, &i, out);
  }
  if (PyFloat_Check(o)) {
    if (masq_tensor_scalar(st->M, PyFloat_AS_DOUBLE(o), out) != MASQ_OK) {
      pm_raise(st, masq_last_error(st->M)->status);
      return -1;
    }
    return 0;
  }
  if (PyObject_TypeCheck(o, &pm_tensor_type) && ((pm_tensor *)o)->st == st && !((pm_tensor *)o)->mask) {
    masq_tensor *t = ((pm_tensor *)o)->t;
    if (masq_tensor_retain(st->M, t) != MASQ_OK) return pm_raise(st, MASQ_ERR_USAGE), -1;
    *out = t;
    return 0;
  }
  int r = PyObject_IsInstance(o, pm_np.MaskedArray);
  if (r < 0) return -1;
  if (r) return from_masked(st, o, name, out);
  if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 2)
    return from_pair(st, PyTuple_GET_ITEM(o, 0), PyTuple_GET_ITEM(o, 1), out);
  if (PyUnicode_Check(o) || PyBytes_Check(o)) {
    PyErr_SetString(PyExc_TypeError, "masq: a string cannot be passed as a tensor (set it as a global instead)");
    return -1;
  }
  if (PyObject_CheckBuffer(o)) return wrap_or_convert(st, o, NULL, 0, NULL, NULL, out);
  int pd = is_pandas(o);
  if (pd) return pd < 0 ? -1 : from_pandas(st, o, out);
  PyObject *a = as_masq_array(o); /* lists and other sequences of numbers */
  if (!a) return -1;
  int rc = wrap_or_convert(st, a, NULL, 0, NULL, NULL, out);
  Py_DECREF(a);
  return rc;
}

/* --- numpy.ma masks edited after the bind ------------------------------------- */

/* Turns [w]'s numpy.ma mask into its valid array again, in place (masq reads
 * that memory when it runs, as it reads the data). 1 if the array had no
 * mask at the bind and has one now (the wrap cannot take it), 0 if done,
 * -1 with the exception set. */
static int sync_one(pm_wrap *w) {
  PyObject *mask = PyObject_CallOneArg(pm_np.getmask, w->masked), *r = NULL;
  if (!mask) return -1;
  int rc = 0;
  if (w->nviews < 2) {
    rc = mask != pm_np.nomask;
  } else if (mask == pm_np.nomask) {
    r = PyObject_CallMethod(w->views[1].obj, "fill", "O", Py_True);
    rc = r ? 0 : -1;
  } else {
    PyObject *args = PyTuple_Pack(1, mask), *kw = Py_BuildValue("{s:O}", "out", w->views[1].obj);
    if (args && kw) r = PyObject_Call(pm_np.logical_not, args, kw);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    if (!r && PyErr_ExceptionMatches(PyExc_ValueError)) { /* reshaped in place since: its mask no longer fits */
      PyErr_Clear();
      Py_CLEAR(w->masked);
    } else if (!r) {
      rc = -1;
    }
  }
  Py_XDECREF(r);
  Py_DECREF(mask);
  return rc;
}

/* 1 if global [name] still holds the tensor wrapped by [data] without a mask. */
static int still_bound(pm_state *st, PyObject *name, const void *data) {
  const char *n = PyUnicode_AsUTF8(name);
  masq_tensor *t = NULL;
  masq_tensor_desc d;
  int same = n && masq_get_global(st->M, n, &t) == MASQ_OK && t &&
             masq_tensor_info(st->M, t, &d) == MASQ_OK && d.data == data && !d.valid;
  if (t) masq_tensor_release(st->M, t);
  PyErr_Clear();
  return same;
}

int pm_sync_masks(pm_state *st) {
  PyObject *rebind = NULL; /* (name, array, data) of the globals to bind again */
  int rc = 0;
  for (pm_wrap *w = st->live; w && rc == 0; w = w->next) {
    if (!w->masked) continue;
    int r = sync_one(w);
    if (r < 0) {
      rc = -1;
    } else if (r > 0) {
      if (w->name) {
        PyObject *item = Py_BuildValue("(OOn)", w->name, w->masked, (Py_ssize_t)(uintptr_t)w->views[0].buf);
        if (!rebind) rebind = PyList_New(0);
        if (!item || !rebind || PyList_Append(rebind, item) < 0) rc = -1;
        Py_XDECREF(item);
      }
      Py_CLEAR(w->masked); /* done with it either way: bound again below, or the global moved on */
    }
  }
  /* after the walk: binding again lets masq release wraps (they move lists) */
  for (Py_ssize_t i = 0; rebind && rc == 0 && i < PyList_GET_SIZE(rebind); i++) {
    PyObject *item = PyList_GET_ITEM(rebind, i), *name = PyTuple_GET_ITEM(item, 0);
    const void *data = (const void *)(uintptr_t)PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 2));
    if (still_bound(st, name, data)) rc = pm_set_global(st, PyUnicode_AsUTF8(name), PyTuple_GET_ITEM(item, 1));
  }
  Py_XDECREF(rebind);
  return rc;
}

/* --- errors ----------------------------------------------------------------------- */

PyObject *pm_raise(pm_state *st, masq_status s) { return pm_raise_cause(st, s, NULL); }

PyObject *pm_raise_cause(pm_state *st, masq_status s, PyObject *cause) {
  const masq_error *e = masq_last_error(st->M);
  const char *text = e->rendered && e->rendered[0] ? e->rendered : e->message ? e->message : "masq error";
  size_t n = strlen(text);
  while (n && text[n - 1] == '\n') n--;
  PyObject *msg = PyUnicode_DecodeUTF8(text, (Py_ssize_t)n, "replace");
  if (!msg) {
    Py_XDECREF(cause);
    return NULL;
  }
  PyObject *type = s == MASQ_ERR_MEMORY ? PyExc_MemoryError
                   : s == MASQ_ERR_INTERRUPTED ? PyExc_KeyboardInterrupt
                                               : pm_error;
  PyObject *exc = PyObject_CallOneArg(type, msg);
  Py_DECREF(msg);
  if (!exc) {
    Py_XDECREF(cause);
    return NULL;
  }
  if (type == pm_error) {
    PyObject *m = PyUnicode_DecodeUTF8(e->message ? e->message : "", (Py_ssize_t)strlen(e->message ? e->message : ""), "replace");
    PyObject *f = e->chunkname ? PyUnicode_DecodeUTF8(e->chunkname, (Py_ssize_t)strlen(e->chunkname), "replace") : Py_NewRef(Py_None);
    PyObject *st_ = PyLong_FromLong(s), *line = PyLong_FromLong(e->line), *col = PyLong_FromLong(e->column);
    if (m && f && st_ && line && col) {
      PyObject_SetAttrString(exc, "message", m);
      PyObject_SetAttrString(exc, "chunkname", f);
      PyObject_SetAttrString(exc, "status", st_);
      PyObject_SetAttrString(exc, "line", line);
      PyObject_SetAttrString(exc, "column", col);
    }
    Py_XDECREF(m);
    Py_XDECREF(f);
    Py_XDECREF(st_);
    Py_XDECREF(line);
    Py_XDECREF(col);
  }
  if (cause) PyException_SetCause(exc, cause); /* steals cause */
  if (!PyErr_Occurred()) PyErr_SetObject(type, exc); /* else setting an attribute failed: that one */
  Py_DECREF(exc);
  return NULL;
}
