/* lib_io.c - load, save and savez: NumPy .npy and .npz files. The group
 * MASQ_LIB_IO: bound only when the host enables file access.
 *
 * The formats live in runtime/io/npy.h; this file decides how masq values map
 * onto them (docs/IO.md is the user's account of the same rules):
 *   - a plain tensor is one .npy array;
 *   - a masked tensor X is two arrays in an .npz: its data under X's name
 *     and its mask under X's name + "_mask", or `data` and `mask` for the
 *     one tensor of save(). On disk the mask follows numpy.ma (True = masked
 *     OUT), the inverse of masq's, so np.ma.MaskedArray(f["data"], f["mask"])
 *     is the same masked array in Python. */
#include <stdarg.h>
#include <stdio.h>

#include "../runtime/io/npy.h"
#include "stdlib.h"

/* printf into scratch memory: names for messages. */
static const char *scratchf(mq_state *S, const char *fmt, ...) MQ_PRINTF(2, 3);
static const char *scratchf(mq_state *S, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = mq_scratch(S, (size_t)(n > 0 ? n : 0) + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
  va_end(ap);
  return s;
}

static const char *arg_string(mq_state *S, mq_value v, const char *fn, const char *what) {
  if (!mq_is_obj(v, MQ_O_STRING))
    mq_error(S, "%s: %s must be a string, not %s", fn, what, mq_value_a_type_name(v));
  const mq_string *s = mq_as_string(v);
  /* The C library would stop at the NUL and open another file. */
  if (memchr(s->chars, '\0', s->len)) mq_error(S, "%s: %s contains a NUL byte", fn, what);
  return s->chars;
}

/* The path's extension, compared the way file managers do: ".NPZ" counts. */
static bool has_ext(const char *path, const char *ext) {
  size_t n = strlen(path), e = strlen(ext);
  if (n <= e) return false;
  for (size_t i = 0; i < e; i++)
    if ((path[n - e + i] | 0x20) != ext[i]) return false;
  return true;
}

/* numpy.ma's mask <-> masq's mask: the same flip both ways (True = masked
 * out there, True = valid here). An integer mask from disk counts nonzero
 * as True, as numpy.ma does when handed one. */
static mq_tensor *flip_mask(mq_state *S, mq_tensor *m) {
  /* a uint8 or int32 mask array (numpy writes them as stored) is read as
   * int64 below: it was read 8 bytes an entry past its end (audit finding) */
  m = mq_contiguous(S, mq_tensor_computable(S, m));
  mq_tensor *out = mq_tensor_new(S, MQ_DT_BOOL, m->ndim, m->shape);
  uint8_t *o = mq_tensor_data(out);
  if (m->dtype == MQ_DT_BOOL) {
    const uint8_t *src = mq_tensor_data(m);
    for (int64_t i = 0; i < m->numel; i++) o[i] = !src[i];
  } else {
    const int64_t *src = mq_tensor_data(m);
    for (int64_t i = 0; i < m->numel; i++) o[i] = src[i] == 0;
  }
  return out;
}

/* --- load ------------------------------------------------------------------------------ */

/* An array of an .npz: its name (the member's less ".npy"). [is_mask] is
 * set on a mask array once it has been attached to its data array. */
typedef struct entry {
  const char *name;
  mq_tensor *t;
  bool is_mask;
} entry;

static int find_entry(const entry *e, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(e[i].name, name) == 0) return i;
  return -1;
}

/* The index of [e]'s mask array: "X_mask" for X, or "mask" for "data". */
static int find_mask(mq_state *S, const entry *all, int n, const entry *e) {
  int k = find_entry(all, n, scratchf(S, "%s_mask", e->name));
  if (k < 0 && strcmp(e->name, "data") == 0) k = find_entry(all, n, "mask");
  return k;
}

/* data (plain) + a numpy.ma mask array -> a masked tensor. The mask may
 * broadcast: numpy.ma stores a 0-d False ("nomask") when nothing is masked. */
static mq_tensor *attach_mask(mq_state *S, const char *file, const entry *data, const entry *mask) {
  mq_tensor *d = data->t, *m = mask->t;
  if (mq_dtype_is_float((mq_dtype)m->dtype))
    mq_error(S, "load: %s: mask array '%s' has dtype %s; a mask must be bool (or integer)", file,
             mask->name, mq_dtype_name((mq_dtype)m->dtype));
  bool fits = m->ndim <= d->ndim;
  for (int i = 1; fits && i <= m->ndim; i++)
    fits = m->shape[m->ndim - i] == 1 || m->shape[m->ndim - i] == d->shape[d->ndim - i];
  if (!fits)
    mq_error(S, "load: %s: mask array '%s' of shape %s does not fit data array '%s' of shape %s",
             file, mask->name, mq_shape_str(S, m->ndim, m->shape), data->name,
             mq_shape_str(S, d->ndim, d->shape));
  return mq_masked(S, d, flip_mask(S, m));
}

/* Every array of the archive, each data array with a mask array turned
 * into a masked tensor; returns the count. */
static int read_entries(mq_state *S, const uint8_t *bytes, size_t len, const char *file,
                        entry **out) {
  mq_zip_member *m;
  int n = mq_zip_read(S, bytes, len, file, &m);
  entry *e = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *e);
  for (int i = 0; i < n; i++) {
    int nl = (int)m[i].name_len;
    if (nl < 4 || memcmp(m[i].name + nl - 4, ".npy", 4) != 0)
      mq_error(S, "load: %s: member '%.*s' is not an .npy array", file, nl, m[i].name);
    e[i].name = scratchf(S, "%.*s", nl - 4, m[i].name);
    const char *what = scratchf(S, "%s member '%.*s'", file, nl, m[i].name);
    e[i].t = mq_npy_parse(S, m[i].data, m[i].size, what);
    e[i].is_mask = false;
  }
  for (int i = 0; i < n; i++) {
    if (e[i].is_mask) continue;
    int k = find_mask(S, e, n, &e[i]);
    if (k < 0 || k == i || e[k].is_mask) continue;
    e[i].t = attach_mask(S, file, &e[i], &e[k]);
    e[k].is_mask = true;
  }
  *out = e;
  return n;
}

static mq_value load_npz(mq_state *S, const uint8_t *bytes, size_t len, const char *file,
                         mq_value name) {
  entry *e;
  int n = read_entries(S, bytes, len, file, &e);
  if (name.type != MQ_NONE) {
    const char *want = arg_string(S, name, "load", "name");
    int k = find_entry(e, n, want);
    if (k >= 0) return mq_objv(e[k].t);
    mq_buf *b = &S->out; /* the message lists what is there */
    b->len = 0;
    for (int i = 0; i < n; i++) mq_buf_printf(S, b, "%s'%s'", i ? ", " : "", e[i].name);
    mq_error(S, "load: %s has no array named '%s' (it has %s)", file, want,
             n ? b->data : "no arrays at all");
  }
  int left = 0, last = -1;
  for (int i = 0; i < n; i++)
    if (!e[i].is_mask) left++, last = i;
  /* What save() writes comes back as the tensor it saved. */
  if (left == 1 && strcmp(e[last].name, "data") == 0) return mq_objv(e[last].t);
  mq_list *l = mq_list_new(S, left);
  for (int i = 0; i < n; i++) {
    if (e[i].is_mask) continue;
    mq_list *pair = mq_list_new(S, 2);
    mq_list_push(S, pair, mq_objv(mq_string_new(S, e[i].name, strlen(e[i].name))));
    mq_list_push(S, pair, mq_objv(e[i].t));
    mq_list_push(S, l, mq_objv(pair));
  }
  return mq_objv(l);
}

static mq_value lib_load(mq_state *S, mq_value *args) {
  const char *path = arg_string(S, args[0], "load", "path");
  const char *file = scratchf(S, "'%s'", path);
  if (mq_arg_bool(S, args[2], "mmap")) {
    if (args[1].type != MQ_NONE)
      mq_error(S, "load: name applies to .npz archives; mmap=true maps one .npy file");
    return mq_objv(mq_npy_map(S, path, file));
  }
  size_t len;
  const uint8_t *bytes = mq_file_read(S, path, "load", &len);
  /* The contents decide, not the name, as in np.load. "PK\5\6" starts an
   * archive with no members. */
  if (len >= 4 && (memcmp(bytes, MQ_ZIP_MAGIC, 4) == 0 || memcmp(bytes, "PK\5\6", 4) == 0))
    return load_npz(S, bytes, len, file, args[1]);
  if (len == 0) mq_error(S, "load: %s is empty", file);
  if (memcmp(bytes, MQ_NPY_MAGIC, len < 6 ? len : 6) != 0)
    mq_error(S, "load: %s is not a .npy or .npz file (it starts with neither \\x93NUMPY nor PK)",
             file);
  if (args[1].type != MQ_NONE)
    mq_error(S,
             "load: %s is a .npy file, which holds one unnamed array; name applies to .npz files",
             file);
  return mq_objv(mq_npy_parse(S, bytes, len, file));
}

/* --- save -------------------------------------------------------------------------------- */

/* An archive being built by [fn] ("save", "savez") for [path]. */
typedef struct members {
  const char *fn, *path, *file; /* file: the path quoted, for messages */
  mq_zip_member *m;
  int n;
} members;

static members new_members(mq_state *S, const char *fn, const char *path, int cap) {
  members ms = {fn, path, scratchf(S, "'%s'", path),
                mq_scratch(S, (size_t)(cap ? cap : 1) * sizeof(mq_zip_member)), 0};
  return ms;
}

static void add_member(mq_state *S, members *ms, const char *name, mq_tensor *t) {
  const char *member = scratchf(S, "%s.npy", name);
  for (int i = 0; i < ms->n; i++)
    if (strcmp(ms->m[i].name, member) == 0)
      mq_error(S, "%s: %s would hold two arrays named '%s'", ms->fn, ms->file, name);
  mq_zip_member *m = &ms->m[ms->n++];
  m->name = member;
  m->name_len = strlen(member);
  m->data = mq_npy_encode(S, t, &m->size);
}

/* One tensor under [name]: a masked one as two arrays. */
static void add_tensor(mq_state *S, members *ms, const char *name, const char *mask_name,
                       mq_tensor *t) {
  add_member(S, ms, name, mq_get_data(S, t));
  if (t->mask) add_member(S, ms, mask_name, flip_mask(S, t->mask));
}

static void write_npz(mq_state *S, const members *ms, mq_value compress) {
  size_t len;
  bool deflate = mq_arg_bool(S, compress, "compress");
  uint8_t *bytes = mq_zip_write(S, ms->m, ms->n, deflate, ms->fn, ms->file, &len);
  mq_file_write(S, ms->path, ms->fn, bytes, len);
}

static mq_value lib_save(mq_state *S, mq_value *args) {
  const char *path = arg_string(S, args[0], "save", "path");
  const char *file = scratchf(S, "'%s'", path);
  mq_tensor *t = mq_arg_tensor_stored(S, args[1], "x"); /* saved at its size */
  if (has_ext(path, ".npz")) {
    members ms = new_members(S, "save", path, 2);
    add_tensor(S, &ms, "data", "mask", t);
    write_npz(S, &ms, args[2]);
  } else if (has_ext(path, ".npy")) {
    if (t->mask)
      mq_error(S,
               "save: %s: a .npy file cannot hold a masked tensor's mask; save to a .npz path "
               "to keep it, or save to_tensor(x, fill)",
               file);
    if (mq_arg_bool(S, args[2], "compress"))
      mq_error(S, "save: %s: compress applies to .npz archives, not .npy files", file);
    mq_bytes parts[2]; /* the data as it is in memory: no copy of a large or mapped tensor */
    mq_npy_parts(S, t, parts);
    mq_file_write_parts(S, path, "save", parts, 2);
  } else {
    mq_error(S, "save: cannot tell the format of %s: the path must end in .npy or .npz", file);
  }
  return mq_none();
}

static mq_value lib_savez(mq_state *S, mq_value *args) {
  const char *path = arg_string(S, args[0], "savez", "path");
  const char *file = scratchf(S, "'%s'", path);
  if (!has_ext(path, ".npz"))
    mq_error(S, "savez: %s: savez writes .npz archives; the path must end in .npz", file);
  const char *shape_hint = "arrays must be a list of [name, tensor] pairs";
  if (!mq_is_obj(args[1], MQ_O_LIST))
    mq_error(S, "savez: %s, not %s", shape_hint, mq_value_a_type_name(args[1]));
  mq_list *l = mq_as_list(args[1]);
  members ms = new_members(S, "savez", path, 2 * l->len);
  for (int i = 0; i < l->len; i++) {
    mq_value item = l->items[i];
    if (!mq_is_obj(item, MQ_O_LIST) || mq_as_list(item)->len != 2)
      mq_error(S, "savez: %s; item %d is not one", shape_hint, i);
    mq_list *pair = mq_as_list(item);
    const char *name = arg_string(S, pair->items[0], "savez", "each name");
    if (!*name) mq_error(S, "savez: item %d has an empty name", i);
    add_tensor(S, &ms, name, scratchf(S, "%s_mask", name),
               mq_arg_tensor_stored(S, pair->items[1], "tensor"));
  }
  write_npz(S, &ms, args[2]);
  return mq_none();
}

const mq_libfn mq_lib_io[] = {
    {"load(path, name=none, mmap=false)", lib_load,
     "a tensor from a NumPy .npy file or .npz archive (data + mask arrays give a masked "
     "tensor); mmap=true maps a .npy read-only instead of reading it; see docs/IO.md",
     MQ_BK_NONE, 0},
    {"save(path, x, compress=false)", lib_save,
     "write x to a .npy file, or to a .npz archive (a masked x as data + mask, numpy.ma's "
     "polarity)", MQ_BK_NONE, 0},
    {"savez(path, arrays, compress=false)", lib_savez,
     "write [name, tensor] pairs to a .npz archive (a masked one as name + name_mask)", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
