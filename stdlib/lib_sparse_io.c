/* lib_sparse_io.c - sparse tensors in scipy.sparse's .npz format
 * (scipy.sparse.save_npz / load_npz): members data, format, shape, and
 * indices + indptr (csr, csc: the same arrays as masq stores) or row + col
 * (coo). Everything read is validated
 * by the constructors, so a hostile file gets the same located errors as
 * hostile constructor arguments. */
#include <stdio.h>

#include "../runtime/io/npy.h"
#include "../runtime/sparse/sparse.h"
#include "stdlib.h"

/* [needle] (3 bytes) occurs in [h, h+n). */
static bool has3(const char *h, size_t n, const char *needle) {
  for (size_t i = 0; i + 3 <= n; i++)
    if (memcmp(h + i, needle, 3) == 0) return true;
  return false;
}

/* The path quoted, for messages. */
static const char *quoted(mq_state *S, const char *path) {
  size_t n = strlen(path);
  char *q = mq_scratch(S, n + 3);
  q[0] = '\'';
  memcpy(q + 1, path, n);
  q[n + 1] = '\'';
  q[n + 2] = '\0';
  return q;
}

static const char *path_arg(mq_state *S, mq_value v, const char *fn) {
  if (!mq_is_obj(v, MQ_O_STRING))
    mq_error(S, "%s: path must be a string, not %s", fn, mq_value_a_type_name(v));
  const mq_string *s = mq_as_string(v);
  if (memchr(s->chars, '\0', s->len)) mq_error(S, "%s: path contains a NUL byte", fn);
  return s->chars;
}

/* The .npy image numpy writes for np.array(b"csr"): a 0-d '|S3' array. */
static uint8_t *format_npy(mq_state *S, const char *fmt, size_t *len) {
  char hdr[128];
  int h = snprintf(hdr, sizeof hdr, "{'descr': '|S%zu', 'fortran_order': False, 'shape': (), }",
                   strlen(fmt));
  size_t total = 10 + (size_t)h + 1, pad = (64 - total % 64) % 64, hl = (size_t)h + pad + 1;
  uint8_t *p = mq_scratch(S, 10 + hl + strlen(fmt));
  memcpy(p, MQ_NPY_MAGIC "\x01\x00", 8);
  mq_st16(p + 8, (uint16_t)hl);
  memcpy(p + 10, hdr, (size_t)h);
  memset(p + 10 + h, ' ', pad);
  p[10 + hl - 1] = '\n';
  memcpy(p + 10 + hl, fmt, strlen(fmt));
  *len = 10 + hl + strlen(fmt);
  return p;
}

static void member(mq_state *S, mq_zip_member *m, const char *name, mq_tensor *t) {
  m->name = name;
  m->name_len = strlen(name);
  m->data = mq_npy_encode(S, t, &m->size);
}

static mq_value lib_save_npz(mq_state *S, mq_value *args) {
  const char *path = path_arg(S, args[0], "save_npz");
  mq_tensor *t = mq_arg_tensor_any(S, args[1], "x");
  if (!t->sparse)
    mq_error(S, "save_npz: x must be a sparse tensor (to_sparse_csr(x) or to_sparse(x)); "
                "save() writes strided ones");
  if (t->mask)
    mq_error(S, "save_npz: scipy.sparse has no masks; save get_data(x), or values(x) and "
                "the structure separately");
  if (t->ndim != 2)
    mq_error(S, "save_npz: scipy.sparse holds 2-D matrices, x has shape %s",
             mq_shape_str(S, t->ndim, t->shape));
  const mq_sparse *sp = t->sparse;
  mq_zip_member m[5];
  bool csr = t->layout == MQ_LAYOUT_CSR, csc = t->layout == MQ_LAYOUT_CSC;
  if (csr || csc) {
    member(S, &m[0], "indices.npy", sp->indices);
    member(S, &m[1], "indptr.npy", sp->crow);
  } else {
    int64_t nnz = sp->nnz;
    mq_tensor *ix = sp->indices;
    member(S, &m[0], "row.npy", mq_tensor_view(S, ix, 1, &nnz, (int64_t[]){1}, ix->offset));
    member(S, &m[1], "col.npy", mq_tensor_view(S, ix, 1, &nnz, (int64_t[]){1}, ix->offset + nnz));
  }
  m[2].name = "format.npy";
  m[2].name_len = 10;
  m[2].data = format_npy(S, csr ? "csr" : csc ? "csc" : "coo", &m[2].size);
  int64_t two = 2;
  mq_tensor *shape = mq_tensor_new(S, MQ_DT_I64, 1, &two);
  memcpy(mq_tensor_data(shape), t->shape, 2 * sizeof(int64_t));
  member(S, &m[3], "shape.npy", shape);
  member(S, &m[4], "data.npy", sp->values);
  size_t len;
  const char *file = quoted(S, path);
  bool deflate = mq_arg_bool(S, args[2], "compressed");
  uint8_t *bytes = mq_zip_write(S, m, 5, deflate, "save_npz", file, &len);
  mq_file_write(S, path, "save_npz", bytes, len);
  return mq_none();
}

/* The member [name] of the archive, or NULL. */
static const mq_zip_member *find(const mq_zip_member *m, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (m[i].name_len == strlen(name) && memcmp(m[i].name, name, m[i].name_len) == 0) return &m[i];
  return NULL;
}

static mq_tensor *array(mq_state *S, const mq_zip_member *m, int n, const char *name,
                        const char *file) {
  const mq_zip_member *e = find(m, n, name);
  if (!e) mq_error(S, "load_npz: %s has no member '%s'; is it a scipy.sparse file?", file, name);
  char what[128];
  snprintf(what, sizeof what, "%s member '%s'", file, name);
  /* scipy writes int32 indices (and int8..int32 data as asked): the
   * sparse layouts hold int64, so the narrow ints widen here */
  mq_tensor *t = mq_npy_parse(S, e->data, e->size, what);
  mq_dtype dt = (mq_dtype)t->dtype;
  return mq_dtype_is_narrow(dt) && mq_dtype_compute(dt) == MQ_DT_I64 ? mq_astype(S, t, MQ_DT_I64) : t;
}

/* scipy's format string: a 0-d bytes ('|Sn') or str ('<Un') array. */
static void read_format(mq_state *S, const mq_zip_member *e, const char *file, char *out) {
  const uint8_t *p = e->data;
  size_t n = e->size, hl, at;
  if (n < 12 || memcmp(p, MQ_NPY_MAGIC, 6) != 0) goto bad;
  hl = p[6] == 1 ? mq_ld16(p + 8) : mq_ld32(p + 8);
  at = (p[6] == 1 ? 10 : 12) + hl;
  if (at > n) goto bad;
  const char *h = (const char *)p + (p[6] == 1 ? 10 : 12);
  bool wide = has3(h, hl, "'<U");
  if (!wide && !has3(h, hl, "'|S")) goto bad;
  size_t k = 0, step = wide ? 4 : 1;
  for (size_t i = at; i < n && k < 3; i += step) out[k++] = (char)p[i];
  out[k] = '\0';
  return;
bad:
  mq_error(S, "load_npz: %s member 'format.npy' is not a format string", file);
}

static mq_value lib_load_npz(mq_state *S, mq_value *args) {
  const char *path = path_arg(S, args[0], "load_npz");
  const char *file = quoted(S, path);
  size_t len;
  uint8_t *bytes = mq_file_read(S, path, "load_npz", &len);
  mq_zip_member *m;
  int n = mq_zip_read(S, bytes, len, file, &m);
  const mq_zip_member *fe = find(m, n, "format.npy");
  if (!fe) mq_error(S, "load_npz: %s has no member 'format.npy'; is it a scipy.sparse file?", file);
  char fmt[4];
  read_format(S, fe, file, fmt);
  mq_tensor *shape = array(S, m, n, "shape.npy", file), *data = array(S, m, n, "data.npy", file);
  if (shape->ndim != 1 || shape->numel != 2 || shape->dtype != MQ_DT_I64)
    mq_error(S, "load_npz: %s: shape must hold 2 ints", file);
  const int64_t *size = mq_tensor_data(shape);
  if (strcmp(fmt, "csr") == 0)
    return mq_objv(mq_sparse_csr(S, array(S, m, n, "indptr.npy", file),
                                 array(S, m, n, "indices.npy", file), data, size, -1, "load_npz"));
  if (strcmp(fmt, "csc") == 0)
    return mq_objv(mq_sparse_csc(S, array(S, m, n, "indptr.npy", file),
                                 array(S, m, n, "indices.npy", file), data, size, -1, "load_npz"));
  if (strcmp(fmt, "coo") != 0)
    mq_error(S, "load_npz: %s holds a '%s' matrix; csr, csc and coo are supported", file, fmt);
  mq_tensor *row = array(S, m, n, "row.npy", file), *col = array(S, m, n, "col.npy", file);
  if (row->ndim != 1 || col->ndim != 1 || row->numel != col->numel || row->dtype != MQ_DT_I64 ||
      col->dtype != MQ_DT_I64)
    mq_error(S, "load_npz: %s: row and col must be int arrays of one length", file);
  int64_t ishape[2] = {2, row->numel};
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 2, ishape);
  size_t nb = (size_t)row->numel * sizeof(int64_t);
  if (nb) {
    memcpy(mq_tensor_data(ix), mq_tensor_data(row), nb);
    memcpy((char *)mq_tensor_data(ix) + nb, mq_tensor_data(col), nb);
  }
  return mq_objv(mq_sparse_coo(S, ix, data, 2, size, -1, "load_npz"));
}

const mq_libfn mq_lib_sparse_io[] = {
    {"save_npz(path, x, compressed=true)", lib_save_npz,
     "write a 2-D sparse tensor as scipy.sparse.save_npz does (csr, csc or coo)"},
    {"load_npz(path)", lib_load_npz,
     "a sparse tensor from a scipy.sparse .npz file (csr, csc, coo); checked like "
     "sparse_csr/sparse_csc/sparse_coo"},
    {NULL, NULL, NULL},
};
