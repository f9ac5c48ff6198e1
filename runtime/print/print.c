/* print.c - the printed forms of tensors.
 *
 * Masked tensors print exactly as torch.masked 1.13's MaskedTensor.__repr__
 * (verified against torch 1.13's output): "%8.4f" floats, `--` for masked-out
 * entries, one bracket per line with two spaces of indent per level. Where
 * torch crashes or is ragged we deliberately differ:
 *   - empty tensors print ("[]" rows) instead of raising;
 *   - above 1000 elements, every dim longer than 6 shows its first and last
 *     3 entries around a `...` entry (a `...` line between sub-blocks);
 *   - columns are aligned: every entry (number, bool or `--`) is
 *     right-justified to one width, the widest shown valid entry of the
 *     whole tensor, raised to 8 if any entry is masked out. (torch pads
 *     only `--` to 8 and leaves the rest ragged: `[1,       --, 333]`,
 *     `12345.5000` one column off; we print `[       1,       --,
 *          333]`.)
 *   - a row longer than the line width (set_printoptions(linewidth=), 80)
 *     wraps as a plain tensor's does; torch prints it on one line.
 * Plain tensors print as torch's tensor(...) (torch/_tensor_str.py), with
 * dtypes spelled without "torch.". Both follow the state's print options
 * (set_printoptions; defaults as torch's: precision 4, linewidth 80,
 * threshold 1000, edgeitems 3); masked floats print "%8.4f" by default
 * and, with another precision p, in fields of p + 4. */
#include "print.h"

#include <math.h>
#include <stdio.h>

#include "../tensor/internal.h"


/* A row of a tensor printed in full (set_printoptions(threshold=...)) may
 * be millions of entries long: it polls for interrupts as kernels do. */
#define POLL_MASK ((int64_t)MQ_POLL_ELEMS - 1)

static const char dim_on[] = "\x1b[2m", dim_off[] = "\x1b[0m";

/* Element [off] (in elements from the view's start) of [t]. */
static double get_f(const mq_tensor *t, int64_t off) {
  const void *p = mq_tensor_data(t);
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL: return ((const uint8_t *)p)[off];
  case MQ_DT_I64: return (double)((const int64_t *)p)[off];
  case MQ_DT_F32: return ((const float *)p)[off];
  case MQ_DT_F64: return ((const double *)p)[off];
  default: /* a storage dtype: mq_tensor_format converts them first; read one right anyway */
    return mq_elem_f64((mq_dtype)t->dtype, (const char *)p + (size_t)off * mq_dtype_size((mq_dtype)t->dtype));
  }
}
static int64_t get_i(const mq_tensor *t, int64_t off) {
  if (t->dtype == MQ_DT_I64) return ((const int64_t *)mq_tensor_data(t))[off];
  return (int64_t)get_f(t, off);
}

static void spaces(mq_state *S, mq_buf *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) mq_buf_putc(S, b, ' ');
}

static void rjust(mq_state *S, mq_buf *b, const char *s, int w) {
  spaces(S, b, w - (int64_t)strlen(s));
  mq_buf_puts(S, b, s);
}

/* The entries of a row [width] wide each, as many to a line as fit in
 * [linewidth] after the row's [indent] (torch's rule, at least one). */
static int64_t per_line(int64_t linewidth, int64_t indent, int width) {
  int64_t n = (linewidth - indent) / (width + 2);
  return n < 1 ? 1 : n;
}

/* What goes before entry [count] (from 0) of a row wrapped every [per]
 * entries: nothing, ", ", or ",\n" and the indent under the first entry. */
static void row_sep(mq_state *S, mq_buf *b, int64_t count, int64_t per, int64_t indent) {
  if ((count & POLL_MASK) == POLL_MASK) mq_check_interrupt(S);
  if (count == 0) return;
  if (count % per == 0) {
    mq_buf_puts(S, b, ",\n");
    spaces(S, b, indent + 1);
  } else {
    mq_buf_puts(S, b, ", ");
  }
}

/* Next shown index after i along a dim of n entries, showing [edge]
 * entries at each end when summarizing (edge 0: everything); -1 marks the
 * `...` slot, n the end. */
static int64_t next_index(int64_t i, int64_t n, int64_t edge) {
  if (edge > 0 && n > 2 * edge) {
    if (i == edge - 1) return -1;
    if (i == -1) return n - edge;
  }
  return i + 1;
}

/* The edge count a tensor of [numel] elements prints with: 0 (all of it)
 * up to the threshold. */
static int64_t edge_for(const mq_state *S, int64_t numel) {
  return numel > S->print.threshold ? S->print.edgeitems : 0;
}

/* --- masked tensors --------------------------------------------------------- */

/* E(x) of torch's repr: "%8.4f" for floats (NaN always "nan", as Python),
 * plain decimal for ints, True/False for bools; another precision p gives
 * "%{p+4}.{p}f" (or "%.{p}e" with sci_mode on). */
static void masked_elem(const mq_printopts *po, const mq_tensor *t, int64_t off, char *out,
                        size_t cap) {
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL: snprintf(out, cap, "%s", get_f(t, off) != 0 ? "True" : "False"); break;
  case MQ_DT_I64: snprintf(out, cap, "%lld", (long long)get_i(t, off)); break;
  default: {
    double v = get_f(t, off);
    int w = po->precision + 4;
    if (isnan(v)) snprintf(out, cap, "%*s", w, "nan");
    else if (po->sci_mode == 1) snprintf(out, cap, "%*.*e", w, po->precision, v);
    else snprintf(out, cap, "%*.*f", w, po->precision, v);
  }
  }
}

static void masked_dashes(mq_state *S, mq_buf *b, int w, bool color) {
  spaces(S, b, w - 2);
  if (color) mq_buf_puts(S, b, dim_on);
  mq_buf_puts(S, b, "--");
  if (color) mq_buf_puts(S, b, dim_off);
}

/* The one width of every entry of a masked tensor: the widest shown valid
 * entry, at least 8 when an entry is masked out (torch pads `--` to 8), so
 * that columns line up whatever the magnitudes, signs and masks of the rows. */
static void masked_width_rec(const mq_printopts *po, const mq_tensor *t, const mq_tensor *m,
                             int dim, int64_t off, int64_t moff, int64_t edge, int *w) {
  const uint8_t *mv = mq_tensor_data(m);
  int64_t n = t->shape[dim];
  for (int64_t i = 0; i < n; i = next_index(i, n, edge)) {
    if (i < 0) continue;
    int64_t o = off + i * t->strides[dim], mo = moff + i * m->strides[dim];
    if (dim < t->ndim - 1) {
      masked_width_rec(po, t, m, dim + 1, o, mo, edge, w);
    } else if (!mv[mo]) {
      if (*w < 8) *w = 8;
    } else {
      char e[64];
      masked_elem(po, t, o, e, sizeof e);
      int len = (int)strlen(e);
      if (len > *w) *w = len;
    }
  }
}

/* One row, wrapped as torch wraps a plain tensor's: as many entries per
 * line as fit in the line width after the row's indent [ind]; the next
 * lines start under the first entry. */
static void masked_row(mq_state *S, mq_buf *b, const mq_tensor *t, const mq_tensor *m,
                       int64_t off, int64_t moff, int64_t edge, bool color, int w, int64_t ind) {
  int d = t->ndim - 1;
  int64_t n = t->shape[d], st = t->strides[d], mst = m->strides[d], count = 0;
  int64_t per = per_line(S->print.linewidth, ind, w);
  const uint8_t *mv = mq_tensor_data(m);
  char e[64];
  mq_buf_putc(S, b, '[');
  for (int64_t i = 0; i < n; i = next_index(i, n, edge), count++) {
    row_sep(S, b, count, per, ind);
    if (i < 0) {
      rjust(S, b, "...", w);
    } else if (!mv[moff + i * mst]) {
      masked_dashes(S, b, w, color);
    } else {
      masked_elem(&S->print, t, off + i * st, e, sizeof e);
      rjust(S, b, e, w); /* our alignment rule; torch leaves wide entries ragged */
    }
  }
  mq_buf_putc(S, b, ']');
}

/* Sub-tensor at [dim]; every line it writes starts with 2 * (dim + 1) spaces
 * (torch's repeated "indent every line by two"). */
static void masked_rec(mq_state *S, mq_buf *b, const mq_tensor *t, const mq_tensor *m, int dim,
                       int64_t off, int64_t moff, int64_t edge, bool color, int w) {
  int64_t ind = 2 * (dim + 1);
  spaces(S, b, ind);
  if (dim == t->ndim - 1) {
    masked_row(S, b, t, m, off, moff, edge, color, w, ind);
    return;
  }
  mq_buf_puts(S, b, "[\n");
  int64_t n = t->shape[dim];
  if (n == 0) spaces(S, b, ind); /* torch: the empty line is indented too */
  for (int64_t i = 0; i < n; i = next_index(i, n, edge)) {
    if (i != 0) mq_buf_puts(S, b, ",\n");
    if (i < 0) {
      spaces(S, b, ind + 2);
      mq_buf_puts(S, b, "...");
    } else {
      masked_rec(S, b, t, m, dim + 1, off + i * t->strides[dim], moff + i * m->strides[dim],
                 edge, color, w);
    }
  }
  mq_buf_putc(S, b, '\n');
  spaces(S, b, ind);
  mq_buf_putc(S, b, ']');
}

/* Whether the dtype [dt] is named after the values (float32, int64 and
 * bool, the defaults, are not). */
static bool shows_dtype(mq_dtype dt) { return dt == MQ_DT_F64 || mq_dtype_is_narrow(dt); }

static void format_masked(mq_state *S, mq_buf *b, const mq_tensor *t, mq_dtype dt, bool color) {
  const mq_tensor *m = t->mask;
  if (t->ndim == 0) {
    bool valid = *(const uint8_t *)mq_tensor_data(m) != 0;
    char e[64];
    mq_buf_puts(S, b, "MaskedTensor(");
    if (valid) {
      masked_elem(&S->print, t, 0, e, sizeof e);
      mq_buf_puts(S, b, e);
    } else {
      masked_dashes(S, b, 2, color);
    }
    mq_buf_puts(S, b, valid ? ", True" : ", False");
    if (shows_dtype(dt)) mq_buf_printf(S, b, ", dtype=%s", mq_dtype_name(dt));
    mq_buf_putc(S, b, ')');
    return;
  }
  int64_t edge = edge_for(S, t->numel);
  int w = 0;
  if (t->numel > 0) masked_width_rec(&S->print, t, m, 0, 0, 0, edge, &w);
  mq_buf_puts(S, b, "MaskedTensor(\n");
  masked_rec(S, b, t, m, 0, 0, 0, edge, color, w);
  /* torch.masked never shows the dtype; float64 looks like float32 there.
   * The defaults (float32, int64, bool) stay unmarked, as in tensor(...). */
  if (shows_dtype(dt)) mq_buf_printf(S, b, ",\n  dtype=%s", mq_dtype_name(dt));
  mq_buf_puts(S, b, "\n)");
}

/* --- plain tensors ---------------------------------------------------------- */

/* torch's _Formatter: one width for every element; floats in int mode
 * ("1."), fixed "%.4f" or scientific "%.4e", chosen from the shown values. */
typedef struct plain_fmt {
  mq_dtype dt;
  bool int_mode, sci_mode;
  int width, precision, linewidth;
  /* float statistics over nonzero finite values */
  bool any;
  double minabs, maxabs;
} plain_fmt;

typedef void (*visit_fn)(plain_fmt *f, const mq_tensor *t, int64_t off);

static void visit_shown(const mq_tensor *t, int dim, int64_t off, int64_t edge, visit_fn fn,
                        plain_fmt *f) {
  if (dim == t->ndim) {
    fn(f, t, off);
    return;
  }
  int64_t n = t->shape[dim];
  for (int64_t i = 0; i < n; i = next_index(i, n, edge))
    if (i >= 0) visit_shown(t, dim + 1, off + i * t->strides[dim], edge, fn, f);
}

static void stats_visit(plain_fmt *f, const mq_tensor *t, int64_t off) {
  double v = get_f(t, off);
  if (!isfinite(v) || v == 0) return;
  double a = fabs(v);
  if (!f->any || a < f->minabs) f->minabs = a;
  if (!f->any || a > f->maxabs) f->maxabs = a;
  f->any = true;
  if (v != ceil(v)) f->int_mode = false;
}

/* The text of one float under the formatter's mode, unpadded. */
static void plain_float(const plain_fmt *f, double v, char *out, size_t cap) {
  if (isnan(v)) snprintf(out, cap, "nan");
  else if (f->sci_mode) snprintf(out, cap, "%.*e", f->precision, v);
  else if (f->int_mode) snprintf(out, cap, isinf(v) ? "%.0f" : "%.0f.", v);
  else snprintf(out, cap, "%.*f", f->precision, v);
}

static void plain_elem(const plain_fmt *f, const mq_tensor *t, int64_t off, char *out, size_t cap) {
  switch (f->dt) {
  case MQ_DT_BOOL: snprintf(out, cap, "%s", get_f(t, off) != 0 ? "True" : "False"); break;
  case MQ_DT_I64: snprintf(out, cap, "%lld", (long long)get_i(t, off)); break;
  default: plain_float(f, get_f(t, off), out, cap); break;
  }
}

static void width_visit(plain_fmt *f, const mq_tensor *t, int64_t off) {
  char e[64];
  if (mq_dtype_is_float(f->dt)) {
    /* torch measures nonzero finite values only (nan, inf, 0 never widen) */
    double v = get_f(t, off);
    if (!isfinite(v) || v == 0) return;
  }
  plain_elem(f, t, off, e, sizeof e);
  int len = (int)strlen(e);
  if (len > f->width) f->width = len;
}

static void plain_fmt_init(plain_fmt *f, const mq_printopts *po, const mq_tensor *t, int64_t edge) {
  memset(f, 0, sizeof *f);
  f->dt = (mq_dtype)t->dtype;
  f->int_mode = true;
  f->width = 1;
  f->precision = po->precision;
  f->linewidth = po->linewidth;
  if (mq_dtype_is_float(f->dt)) {
    visit_shown(t, 0, 0, edge, stats_visit, f);
    if (f->any) {
      double ratio = f->maxabs / f->minabs;
      if (f->int_mode) f->sci_mode = ratio > 1000. || f->maxabs > 1.e8;
      else f->sci_mode = ratio > 1000. || f->maxabs > 1.e8 || f->minabs < 1.e-4;
      visit_shown(t, 0, 0, edge, width_visit, f);
    }
    /* as torch: the option overrides the mode after the width was measured
     * in the mode the values chose */
    if (po->sci_mode >= 0) f->sci_mode = po->sci_mode == 1;
    return;
  }
  visit_shown(t, 0, 0, edge, width_visit, f);
}

static void plain_vector(mq_state *S, mq_buf *b, const mq_tensor *t, int64_t off, int indent,
                         int64_t edge, const plain_fmt *f) {
  int d = t->ndim - 1;
  int64_t n = t->shape[d], per = per_line(f->linewidth, indent, f->width), count = 0;
  char e[64];
  mq_buf_putc(S, b, '[');
  for (int64_t i = 0; i < n; i = next_index(i, n, edge), count++) {
    row_sep(S, b, count, per, indent);
    if (i < 0) {
      mq_buf_puts(S, b, " ...");
    } else {
      plain_elem(f, t, off + i * t->strides[d], e, sizeof e);
      rjust(S, b, e, f->width);
    }
  }
  mq_buf_putc(S, b, ']');
}

static void plain_rec(mq_state *S, mq_buf *b, const mq_tensor *t, int dim, int64_t off,
                      int indent, int64_t edge, const plain_fmt *f) {
  int rem = t->ndim - dim;
  if (rem == 1) {
    plain_vector(S, b, t, off, indent, edge, f);
    return;
  }
  int64_t n = t->shape[dim];
  mq_buf_putc(S, b, '[');
  for (int64_t i = 0; i < n; i = next_index(i, n, edge)) {
    if (i != 0) {
      mq_buf_putc(S, b, ',');
      for (int k = 0; k < rem - 1; k++) mq_buf_putc(S, b, '\n');
      spaces(S, b, indent + 1);
    }
    if (i < 0) mq_buf_puts(S, b, "...");
    else plain_rec(S, b, t, dim + 1, off + i * t->strides[dim], indent + 1, edge, f);
  }
  mq_buf_putc(S, b, ']');
}

void mq_tensor_format_body(mq_state *S, mq_buf *b, const mq_tensor *t, int indent) {
  if (t->numel == 0) {
    mq_buf_puts(S, b, "[]");
    return;
  }
  int64_t edge = edge_for(S, t->numel);
  plain_fmt f;
  plain_fmt_init(&f, &S->print, t, edge);
  if (t->ndim == 0) {
    char e[64];
    plain_elem(&f, t, 0, e, sizeof e);
    rjust(S, b, e, f.width);
  } else {
    plain_rec(S, b, t, 0, 0, indent, edge, &f);
  }
}

void mq_format_suffixes(mq_state *S, mq_buf *b, size_t start, int indent, bool force_newline,
                        int nsuf, const char *const *suffixes) {
  /* torch's _add_suffixes, including its line-length arithmetic */
  const char *s = b->data + start;
  const char *nl = strrchr(s, '\n');
  int64_t len = (int64_t)(b->len - start);
  int64_t last_line_len = len - (nl ? (int64_t)(nl - s) : -1) + 1;
  for (int i = 0; i < nsuf; i++) {
    int64_t sl = (int64_t)strlen(suffixes[i]);
    if (force_newline || last_line_len + sl + 2 > S->print.linewidth) {
      mq_buf_puts(S, b, ",\n");
      spaces(S, b, indent);
      last_line_len = indent + sl;
      force_newline = false;
    } else {
      mq_buf_puts(S, b, ", ");
      last_line_len += sl + 2;
    }
    mq_buf_puts(S, b, suffixes[i]);
  }
  mq_buf_putc(S, b, ')');
}

static void format_plain(mq_state *S, mq_buf *b, const mq_tensor *t, mq_dtype dt) {
  static const char prefix[] = "tensor(";
  const int indent = (int)sizeof prefix - 1;
  size_t start = b->len;
  char suffixes[2][64];
  const char *sfx[2] = {suffixes[0], suffixes[1]};
  int nsuf = 0;
  mq_buf_puts(S, b, prefix);
  mq_tensor_format_body(S, b, t, indent);
  if (t->numel == 0) {
    if (t->ndim != 1) {
      const char *shape = mq_shape_str(S, t->ndim, t->shape);
      snprintf(suffixes[nsuf++], sizeof suffixes[0], "size=%s", shape);
    }
    if (dt != MQ_DT_F32)
      snprintf(suffixes[nsuf++], sizeof suffixes[0], "dtype=%s", mq_dtype_name(dt));
  } else if (shows_dtype(dt)) {
    snprintf(suffixes[nsuf++], sizeof suffixes[0], "dtype=%s", mq_dtype_name(dt));
  }
  mq_format_suffixes(S, b, start, indent, false, nsuf, sfx);
}

/* --- entry points ----------------------------------------------------------- */

void mq_tensor_format(mq_state *S, mq_buf *b, const mq_tensor *t, bool color) {
  mq_dtype dt = (mq_dtype)t->dtype;
  /* a storage dtype prints its values as its compute dtype does (exactly:
   * torch prints half types through float32 too) */
  if (mq_dtype_is_narrow(dt)) t = mq_astype(S, (mq_tensor *)t, mq_dtype_compute(dt));
  if (t->mask) format_masked(S, b, t, dt, color);
  else format_plain(S, b, t, dt);
}

void mq_tensor_summary(mq_state *S, mq_buf *b, const mq_tensor *t) {
  mq_buf_printf(S, b, "%s tensor %s%s", mq_dtype_name((mq_dtype)t->dtype),
                mq_shape_str(S, t->ndim, t->shape), t->mask ? ", masked" : "");
}
