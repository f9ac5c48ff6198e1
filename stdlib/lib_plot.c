/* lib_plot.c - pictures in the terminal: show_mask, hist, plot, heatmap
 * (docs/PICTURES.md is the user's account). Each draws into a character
 * grid (render.h) and writes it through the state's output hook, in colour
 * when the host says its output is a colour terminal (masq_config.color),
 * as wide as the host's terminal (masq_config.columns, else 80); or, given
 * file=, writes a standalone SVG instead (only where the host enabled
 * MASQ_LIB_IO).
 *
 * Big tensors are drawn by blocks: a picture never has more cells than
 * MQ_PIC_MAX_WIDTH x MQ_PIC_MAX_HEIGHT (or the SVG's own caps), whatever
 * the data's size, and the data is read once, in order. */
#include <math.h>
#include <stdio.h>

#include "../core/checked.h"
#include "../runtime/npy.h"
#include "render.h"
#include "stdlib.h"

#define DEFAULT_WIDTH 80
/* the SVGs' plotting area and its place */
#define SVG_W 600
#define SVG_H 400
#define SVG_LEFT 70
#define SVG_TOP 40

/* xterm 256-colour indices */
enum { C_MAIN = 32, C_DIM = 244, C_MASKED = 240, C_BAD = 196 };

/* --- options shared by the pictures ------------------------------------------------ */

typedef struct pic {
  const char *who;
  int width, height; /* in character cells */
  const char *file;  /* NULL: draw on the terminal */
  bool color;
} pic;

static int64_t bounded(mq_state *S, mq_value v, const char *who, const char *what, int64_t lo,
                       int64_t hi) {
  int64_t n = mq_arg_int(S, v, what);
  if (n < lo || n > hi)
    mq_error(S, "%s: %s must be between %lld and %lld, not %lld", who, what, (long long)lo,
             (long long)hi, (long long)n);
  return n;
}

static void pic_init(mq_state *S, pic *p, const char *who, mq_value width, mq_value height,
                     int dflt_height, mq_value file) {
  p->who = who;
  if (width.type == MQ_NONE) {
    int w = S->cfg.columns ? S->cfg.columns(S->cfg.columns_ud) : 0;
    p->width = w <= 0 ? DEFAULT_WIDTH : w < 20 ? 20 : w > MQ_PIC_MAX_WIDTH ? MQ_PIC_MAX_WIDTH : w;
  } else {
    p->width = (int)bounded(S, width, who, "width", 20, MQ_PIC_MAX_WIDTH);
  }
  p->height = height.type == MQ_NONE ? dflt_height
                                     : (int)bounded(S, height, who, "height", 2, MQ_PIC_MAX_HEIGHT);
  p->file = NULL;
  if (file.type != MQ_NONE) {
    if (!mq_is_obj(file, MQ_O_STRING))
      mq_error(S, "%s: file must be a string, not a %s", who, mq_value_type_name(file));
    const mq_string *s = mq_as_string(file);
    if (memchr(s->chars, '\0', s->len)) mq_error(S, "%s: file contains a NUL byte", who);
    if (!(S->cfg.libs & MASQ_LIB_IO))
      mq_error(S, "%s: file= writes a file, and this host has not enabled file access "
                  "(MASQ_LIB_IO)",
               who);
    p->file = s->chars;
  }
  p->color = S->cfg.color && !p->file;
}

/* The picture in S->out goes to the terminal or the file. */
static mq_value pic_finish(mq_state *S, const pic *p) {
  if (p->file) mq_file_write(S, p->file, p->who, S->out.data, S->out.len);
  else mq_write(S, S->out.data, S->out.len);
  return mq_none();
}

/* --- reading values ---------------------------------------------------------------- */

/* A tensor's entries in order: contiguous data and mask (NULL: all valid). */
typedef struct vals {
  const void *data;
  mq_dtype dt;
  const uint8_t *mask;
  int64_t n;
} vals;

static vals vals_of(mq_state *S, mq_tensor *t) {
  vals v;
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, t));
  v.data = mq_tensor_data(d);
  v.dt = (mq_dtype)d->dtype;
  v.mask = t->mask ? mq_tensor_data(mq_contiguous(S, t->mask)) : NULL;
  v.n = t->numel;
  return v;
}

static double val_at(const vals *v, int64_t i) {
  switch (v->dt) {
  case MQ_DT_BOOL: return ((const uint8_t *)v->data)[i];
  case MQ_DT_I64: return (double)((const int64_t *)v->data)[i];
  case MQ_DT_F32: return ((const float *)v->data)[i];
  default: return ((const double *)v->data)[i];
  }
}

static bool valid_at(const vals *v, int64_t i) { return !v->mask || v->mask[i]; }

/* Where [x] lies between [lo] and [hi] as 0..1, halving first so that
 * hi - lo cannot overflow. */
static double frac(double x, double lo, double hi) {
  double f = (x / 2 - lo / 2) / (hi / 2 - lo / 2);
  return f >= 0 ? (f <= 1 ? f : 1) : 0;
}

/* [x] on 0..n-1 (rounded); the middle when the range is empty. */
static int scale(double x, double lo, double hi, int n) {
  if (!(hi > lo)) return (n - 1) / 2;
  return (int)floor(frac(x, lo, hi) * (n - 1) + 0.5);
}

static int ndigits(int64_t n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    d++;
  }
  return d;
}

/* --- blocks: a tensor as rows x columns, summed over blocks of entries -------------------- */

typedef struct blocks {
  int64_t rows, cols; /* dim 0, and the product of the others */
  int64_t br, bc;     /* rows and columns per block */
  int nr, nc;         /* blocks down and across */
  int64_t *valid;     /* valid entries per block */
  int64_t *finite;    /* of which finite (with sums) */
  double *sum;        /* their sum (with sums) */
} blocks;

static void blocks_fill(mq_state *S, blocks *b, mq_tensor *t, int max_r, int max_c, bool sums) {
  b->rows = t->ndim ? t->shape[0] : 1;
  b->cols = b->rows ? t->numel / b->rows : 0;
  b->br = mq_ceil_div(b->rows, max_r);
  b->bc = mq_ceil_div(b->cols, max_c);
  if (b->br < 1) b->br = 1;
  if (b->bc < 1) b->bc = 1;
  b->nr = (int)mq_ceil_div(b->rows, b->br);
  b->nc = (int)mq_ceil_div(b->cols, b->bc);
  size_t n = mq_ck_zmul(S, (size_t)b->nr, (size_t)b->nc, "picture size");
  b->valid = mq_scratch(S, mq_ck_zmul(S, n, sizeof(int64_t), "picture size"));
  memset(b->valid, 0, n * sizeof(int64_t));
  b->finite = NULL;
  b->sum = NULL;
  if (sums) {
    b->finite = mq_scratch(S, n * sizeof(int64_t));
    b->sum = mq_scratch(S, n * sizeof(double));
    memset(b->finite, 0, n * sizeof(int64_t));
    for (size_t i = 0; i < n; i++) b->sum[i] = 0;
  }
  vals v = vals_of(S, t);
  for (int64_t r = 0; r < b->rows; r++) {
    mq_poll(S);
    size_t base = (size_t)(r / b->br) * (size_t)b->nc;
    int64_t i = r * b->cols;
    for (int j = 0; j < b->nc; j++) {
      int64_t c1 = (int64_t)(j + 1) * b->bc;
      if (c1 > b->cols) c1 = b->cols;
      for (int64_t c = (int64_t)j * b->bc; c < c1; c++, i++) {
        if (!valid_at(&v, i)) continue;
        b->valid[base + (size_t)j]++;
        if (sums) {
          double x = val_at(&v, i);
          if (isfinite(x)) {
            b->finite[base + (size_t)j]++;
            b->sum[base + (size_t)j] += x;
          }
        }
      }
    }
  }
}

/* Entries in block (i, j): the last row and column of blocks may be short. */
static int64_t block_size(const blocks *b, int i, int j) {
  int64_t h = b->rows - (int64_t)i * b->br, w = b->cols - (int64_t)j * b->bc;
  return (h < b->br ? h : b->br) * (w < b->bc ? w : b->bc);
}

/* A block is drawn valid when at least half of its entries are. */
static bool block_on(const blocks *b, int i, int j) {
  return i < b->nr && 2 * b->valid[(size_t)i * (size_t)b->nc + (size_t)j] >= block_size(b, i, j);
}

static int64_t blocks_valid(const blocks *b) {
  int64_t n = 0;
  for (size_t i = 0; i < (size_t)b->nr * (size_t)b->nc; i++) n += b->valid[i];
  return n;
}

/* "(300, 5), 1380 of 1500 valid (92.0%)" */
static void put_extent(mq_state *S, mq_buf *o, const mq_tensor *t, int64_t valid) {
  mq_buf_printf(S, o, "%s, %lld of %lld valid", mq_shape_str(S, t->ndim, t->shape),
                (long long)valid, (long long)t->numel);
  if (t->numel) mq_buf_printf(S, o, " (%.1f%%)", 100.0 * (double)valid / (double)t->numel);
}

static void put_blocking(mq_state *S, mq_buf *o, const blocks *b, const char *rule) {
  if (b->br == 1 && b->bc == 1) return;
  mq_buf_printf(S, o, "; each cell is %lld row%s x %lld column%s, %s", (long long)b->br,
                b->br == 1 ? "" : "s", (long long)b->bc, b->bc == 1 ? "" : "s", rule);
}

/* The first column of each block as a label above it, where there is room. */
static void col_labels(mq_grid *g, int y, int x0, const blocks *b, int cw) {
  int next = x0;
  for (int j = 0; j < b->nc; j++) {
    char s[32];
    int x = x0 + j * cw;
    snprintf(s, sizeof s, "%lld", (long long)((int64_t)j * b->bc));
    if (x < next || x + (int)strlen(s) > g->w) continue;
    mq_grid_text(g, x, y, s, 0);
    next = x + (int)strlen(s) + 1;
  }
}

static void row_label(mq_grid *g, int y, int lw, int64_t row) {
  char s[32];
  snprintf(s, sizeof s, "%*lld", lw, (long long)row);
  mq_grid_text(g, 0, y, s, 0);
}

static void svg_frame(mq_state *S, mq_buf *o, double x, double y, double w, double h) {
  mq_svg_line(S, o, x, y, x + w, y, "#808080");
  mq_svg_line(S, o, x + w, y, x + w, y + h, "#808080");
  mq_svg_line(S, o, x + w, y + h, x, y + h, "#808080");
  mq_svg_line(S, o, x, y + h, x, y, "#808080");
}

/* Opens the title's <text>: what follows is plain words and numbers, which
 * need no escaping, up to "</text>". */
static void svg_title(mq_state *S, mq_buf *o) {
  mq_buf_printf(S, o, "<text x=\"%d\" y=\"20\">", SVG_LEFT);
}

static const char *nums(char buf[32], double v) {
  mq_pic_num(buf, v);
  return buf;
}

static const char *ints(char buf[32], int64_t v) {
  snprintf(buf, 32, "%lld", (long long)v);
  return buf;
}

/* --- show_mask ------------------------------------------------------------------------------ */

static void show_mask_svg(mq_state *S, mq_buf *o, mq_tensor *x) {
  blocks b;
  blocks_fill(S, &b, x, 300, 300, false);
  char s[32];
  double cw = (double)SVG_W / b.nc, ch = (double)SVG_H / b.nr;
  mq_svg_open(S, o, SVG_W + SVG_LEFT + 30, SVG_H + SVG_TOP + 40);
  svg_title(S, o);
  mq_buf_puts(S, o, "mask ");
  put_extent(S, o, x, blocks_valid(&b));
  put_blocking(S, o, &b, "drawn valid when at least half of it is");
  mq_buf_puts(S, o, "</text>\n");
  for (int i = 0; i < b.nr; i++) {
    mq_poll(S);
    for (int j = 0; j < b.nc;) { /* a run of valid blocks is one rectangle */
      if (!block_on(&b, i, j)) {
        j++;
        continue;
      }
      int k = j;
      while (k < b.nc && block_on(&b, i, k)) k++;
      mq_svg_rect(S, o, SVG_LEFT + j * cw, SVG_TOP + i * ch, (k - j) * cw, ch, "#2b6ca3");
      j = k;
    }
  }
  svg_frame(S, o, SVG_LEFT, SVG_TOP, SVG_W, SVG_H);
  double next = 0;
  for (int j = 0; j < b.nc; j++) {
    double xx = SVG_LEFT + (j + 0.5) * cw;
    if (xx < next) continue;
    mq_svg_text(S, o, xx, SVG_TOP - 4, "middle", ints(s, (int64_t)j * b.bc));
    next = xx + 40;
  }
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + 12, "end", "0");
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + SVG_H, "end", ints(s, b.rows - 1));
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + SVG_H / 2, "end", "row");
  mq_svg_close(S, o);
}

static void show_mask_text(mq_state *S, mq_buf *o, mq_tensor *x, const pic *p) {
  int lw = ndigits(x->ndim && x->shape[0] > 1 ? x->shape[0] - 1 : 0);
  int avail = p->width - lw - 3; /* row labels, a space; a space and the sparkline */
  if (avail < 1) avail = 1;
  blocks b;
  blocks_fill(S, &b, x, 2 * p->height, avail, false);
  mq_buf_puts(S, o, "mask ");
  put_extent(S, o, x, blocks_valid(&b));
  put_blocking(S, o, &b, "drawn when at least half of it is valid");
  mq_buf_putc(S, o, '\n');
  int cw = avail / b.nc;
  if (cw > 4) cw = 4;
  int gap = cw >= 3, x0 = lw + 1, lines = (b.nr + 1) / 2;
  mq_grid *g = mq_grid_new(S, x0 + b.nc * cw + 2, lines + 1);
  col_labels(g, 0, x0, &b, cw);
  for (int l = 0; l < lines; l++) {
    int64_t nvalid = 0, nall = 0;
    row_label(g, l + 1, lw, (int64_t)l * 2 * b.br);
    for (int j = 0; j < b.nc; j++) {
      bool top = block_on(&b, 2 * l, j), bottom = block_on(&b, 2 * l + 1, j);
      uint32_t cp = top && bottom ? 0x2588 : top ? 0x2580 : bottom ? 0x2584 : ' ';
      for (int k = 0; k < cw - gap; k++) mq_grid_put(g, x0 + j * cw + k, l + 1, cp, C_MAIN);
      for (int i = 2 * l; i < 2 * l + 2 && i < b.nr; i++) {
        nvalid += b.valid[(size_t)i * (size_t)b.nc + (size_t)j];
        nall += block_size(&b, i, j);
      }
    }
    /* the sparkline: the valid share of the line's rows, in eighths rounded up */
    int eighths = nvalid ? (int)ceil(8.0 * (double)nvalid / (double)nall) : 0;
    mq_grid_put(g, x0 + b.nc * cw + 1, l + 1, eighths ? 0x2580 + (uint32_t)eighths : ' ', C_DIM);
  }
  mq_grid_emit(S, g, o, p->color);
}

static mq_value lib_show_mask(mq_state *S, mq_value *args) {
  pic p;
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  pic_init(S, &p, "show_mask", args[1], args[2], 20, args[3]);
  mq_buf *o = &S->out;
  o->len = 0;
  if (x->numel == 0) {
    if (p.file) mq_error(S, "show_mask: x of shape %s has no entries to draw",
                         mq_shape_str(S, x->ndim, x->shape));
    mq_buf_printf(S, o, "mask %s: no entries\n", mq_shape_str(S, x->ndim, x->shape));
  } else if (p.file) {
    show_mask_svg(S, o, x);
  } else {
    show_mask_text(S, o, x, &p);
  }
  return pic_finish(S, &p);
}

/* --- hist --------------------------------------------------------------------------------------- */

#define MAX_BINS 1000

typedef struct hist {
  int bins;
  int64_t masked, nan, pinf, ninf, counted, max;
  double *edges; /* bins + 1 */
  int64_t *counts;
} hist;

/* Bins like numpy.histogram: equal widths from the least to the greatest
 * finite valid value (+-0.5 when they are equal); each bin holds
 * [edge_i, edge_i+1), the last one [edge, edge] closed. */
static void hist_count(mq_state *S, hist *h, mq_tensor *x) {
  vals v = vals_of(S, x);
  double lo = INFINITY, hi = -INFINITY;
  h->masked = h->nan = h->pinf = h->ninf = h->counted = h->max = 0;
  for (int64_t i = 0; i < v.n; i++) {
    if ((i & 0xFFFF) == 0) mq_poll(S);
    if (!valid_at(&v, i)) {
      h->masked++;
      continue;
    }
    double a = val_at(&v, i);
    if (isnan(a)) h->nan++;
    else if (isinf(a)) *(a > 0 ? &h->pinf : &h->ninf) += 1;
    else {
      h->counted++;
      if (a < lo) lo = a;
      if (a > hi) hi = a;
    }
  }
  h->edges = mq_scratch(S, (size_t)(h->bins + 1) * sizeof(double));
  h->counts = mq_scratch(S, (size_t)h->bins * sizeof(int64_t));
  memset(h->counts, 0, (size_t)h->bins * sizeof(int64_t));
  if (!h->counted) return;
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  /* numpy.linspace's edges; when hi - lo overflows, from the halves */
  double step = (hi - lo) / h->bins;
  bool halves = !isfinite(step);
  if (halves) step = (hi / 2 - lo / 2) / h->bins;
  for (int k = 0; k < h->bins; k++) h->edges[k] = halves ? lo + 2 * (k * step) : lo + k * step;
  h->edges[h->bins] = hi;
  for (int64_t i = 0; i < v.n; i++) {
    if ((i & 0xFFFF) == 0) mq_poll(S);
    if (!valid_at(&v, i)) continue;
    double a = val_at(&v, i);
    if (!isfinite(a)) continue;
    int l = 0, r = h->bins; /* the last edge <= a among edges[0..bins-1] */
    while (r - l > 1) {
      int m = l + (r - l) / 2;
      if (h->edges[m] <= a) l = m;
      else r = m;
    }
    h->counts[l]++;
  }
  for (int k = 0; k < h->bins; k++)
    if (h->counts[k] > h->max) h->max = h->counts[k];
}

/* "hist of 100 valid entries of 120 (20 masked out); not counted: 2 NaN, 1 inf" */
static void hist_header(mq_state *S, mq_buf *o, const hist *h, const mq_tensor *x) {
  mq_buf_printf(S, o, "hist of %lld valid entr%s", (long long)(x->numel - h->masked),
                x->numel - h->masked == 1 ? "y" : "ies");
  if (h->masked) mq_buf_printf(S, o, " (%lld masked out)", (long long)h->masked);
  if (h->nan || h->pinf || h->ninf) {
    const char *sep = "; not counted: ";
    if (h->nan) mq_buf_printf(S, o, "%s%lld NaN", sep, (long long)h->nan), sep = ", ";
    if (h->pinf) mq_buf_printf(S, o, "%s%lld inf", sep, (long long)h->pinf), sep = ", ";
    if (h->ninf) mq_buf_printf(S, o, "%s%lld -inf", sep, (long long)h->ninf);
  }
}

static void hist_label(char *out, size_t n, const hist *h, int k) {
  char a[32], b[32];
  snprintf(out, n, "[%s, %s%c", nums(a, h->edges[k]), nums(b, h->edges[k + 1]),
           k == h->bins - 1 ? ']' : ')');
}

static void hist_text(mq_state *S, mq_buf *o, const hist *h, const pic *p) {
  char lab[80];
  int labw = 0, cntw = ndigits(h->max);
  for (int k = 0; k < h->bins; k++) {
    hist_label(lab, sizeof lab, h, k);
    if ((int)strlen(lab) > labw) labw = (int)strlen(lab);
  }
  int barw = p->width - labw - cntw - 2;
  if (barw < 4) barw = 4;
  mq_grid *g = mq_grid_new(S, labw + cntw + 2 + barw, h->bins);
  for (int k = 0; k < h->bins; k++) {
    char cnt[32];
    hist_label(lab, sizeof lab, h, k);
    mq_grid_text(g, 0, k, lab, 0);
    snprintf(cnt, sizeof cnt, "%*lld", cntw, (long long)h->counts[k]);
    mq_grid_text(g, labw + 1, k, cnt, 0);
    /* in eighths of a cell, rounded; a bin with entries shows at least one */
    int64_t e = (int64_t)floor((double)h->counts[k] * barw * 8 / (double)h->max + 0.5);
    if (e == 0 && h->counts[k]) e = 1;
    int x = labw + cntw + 2;
    for (; e >= 8; e -= 8) mq_grid_put(g, x++, k, 0x2588, C_MAIN);
    if (e) mq_grid_put(g, x, k, 0x2590 - (uint32_t)e, C_MAIN);
  }
  mq_grid_emit(S, g, o, p->color);
}

static void hist_svg(mq_state *S, mq_buf *o, const hist *h, const mq_tensor *x) {
  char s[32];
  mq_svg_open(S, o, SVG_W + SVG_LEFT + 30, SVG_H + SVG_TOP + 50);
  svg_title(S, o);
  hist_header(S, o, h, x);
  mq_buf_puts(S, o, "</text>\n");
  double bw = (double)SVG_W / h->bins;
  for (int k = 0; k < h->bins && h->max; k++) {
    double bh = (double)SVG_H * (double)h->counts[k] / (double)h->max;
    mq_svg_rect(S, o, SVG_LEFT + k * bw, SVG_TOP + SVG_H - bh, bw * 0.9, bh, "#2b6ca3");
  }
  svg_frame(S, o, SVG_LEFT, SVG_TOP, SVG_W, SVG_H);
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + 12, "end", ints(s, h->max));
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + SVG_H, "end", "0");
  if (h->counted) {
    mq_svg_text(S, o, SVG_LEFT, SVG_TOP + SVG_H + 18, "start", nums(s, h->edges[0]));
    mq_svg_text(S, o, SVG_LEFT + SVG_W, SVG_TOP + SVG_H + 18, "end", nums(s, h->edges[h->bins]));
  }
  mq_svg_close(S, o);
}

static mq_value lib_hist(mq_state *S, mq_value *args) {
  pic p;
  hist h;
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  h.bins = (int)bounded(S, args[1], "hist", "bins", 1, MAX_BINS);
  pic_init(S, &p, "hist", args[2], mq_none(), 0, args[3]);
  hist_count(S, &h, x);
  mq_buf *o = &S->out;
  o->len = 0;
  if (p.file) {
    hist_svg(S, o, &h, x);
  } else {
    hist_header(S, o, &h, x);
    mq_buf_putc(S, o, '\n');
    if (h.counted) hist_text(S, o, &h, &p);
    else mq_buf_puts(S, o, "(no finite valid entries to count)\n");
  }
  return pic_finish(S, &p);
}

/* --- plot ---------------------------------------------------------------------------------------- */

/* Where the points go: called with each point to draw in order, [join]
 * when a line leads to it from the one before. */
typedef struct pen {
  void (*to)(struct pen *p, int px, int py, bool join);
  int lx, ly; /* the point before */
  /* the braille pen */
  mq_braille *br;
  /* the SVG pen */
  mq_state *S;
  mq_buf *o;
  double x0, y0;
  size_t start; /* where the open polyline begins in o, or 0 */
  int npoints;
} pen;

typedef struct series {
  vals x, y;
  bool has_x;
  int64_t n, drawn;
  double xlo, xhi, ylo, yhi;
} series;

static bool point_ok(const series *s, int64_t i, double *x, double *y) {
  if (!valid_at(&s->y, i)) return false;
  *y = val_at(&s->y, i);
  *x = (double)i;
  if (s->has_x) {
    if (!valid_at(&s->x, i)) return false;
    *x = val_at(&s->x, i);
  }
  return isfinite(*x) && isfinite(*y);
}

static void series_range(mq_state *S, series *s) {
  s->xlo = s->ylo = INFINITY;
  s->xhi = s->yhi = -INFINITY;
  s->drawn = 0;
  for (int64_t i = 0; i < s->n; i++) {
    double x, y;
    if ((i & 0xFFFF) == 0) mq_poll(S);
    if (!point_ok(s, i, &x, &y)) continue;
    s->drawn++;
    if (x < s->xlo) s->xlo = x;
    if (x > s->xhi) s->xhi = x;
    if (y < s->ylo) s->ylo = y;
    if (y > s->yhi) s->yhi = y;
  }
}

/* Walks the points onto a [dw] x [dh] dot canvas. Consecutive points on
 * the same column of dots become at most four (the first, the lowest, the
 * highest, the last): the picture is the same, and the work is bounded by
 * the canvas, not by the number of points, when x increases. A masked-out
 * or non-finite point ends the line: the next one starts a new one. */
static void series_walk(mq_state *S, const series *s, int dw, int dh, pen *p) {
  bool open = false, join = false;
  int cx = 0, first = 0, lo = 0, hi = 0, last = 0;
  for (int64_t i = 0; i <= s->n; i++) {
    double x, y;
    bool ok = i < s->n && point_ok(s, i, &x, &y);
    int px = 0, py = 0;
    if ((i & 0xFFFF) == 0) mq_poll(S);
    if (ok) {
      px = scale(x, s->xlo, s->xhi, dw);
      py = dh - 1 - scale(y, s->ylo, s->yhi, dh);
      if (open && px == cx) {
        if (py < lo) lo = py;
        if (py > hi) hi = py;
        last = py;
        continue;
      }
    }
    if (open) { /* the column ends: draw it */
      int ys[4] = {first, first < last ? lo : hi, first < last ? hi : lo, last};
      int prev = -1;
      for (int k = 0; k < 4; k++) {
        if (ys[k] == prev) continue;
        p->to(p, cx, ys[k], join || k > 0);
        prev = ys[k];
      }
      join = ok;
    }
    if (!ok) {
      open = join = false;
      continue;
    }
    open = true;
    cx = px;
    first = lo = hi = last = py;
  }
}

static void braille_to(pen *p, int px, int py, bool join) {
  if (join) mq_braille_line(p->br, p->lx, p->ly, px, py);
  else mq_braille_dot(p->br, px, py);
  p->lx = px;
  p->ly = py;
}

/* Ends the open polyline; a line of one point is a dot. */
static void svg_pen_end(pen *p) {
  if (!p->start) return;
  if (p->npoints == 1) {
    p->o->len = p->start;
    mq_buf_printf(p->S, p->o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\" fill=\"#2b6ca3\"/>\n",
                  p->x0 + p->lx, p->y0 + p->ly);
  } else {
    mq_buf_puts(p->S, p->o, "\"/>\n");
  }
  p->start = 0;
}

static void svg_to(pen *p, int px, int py, bool join) {
  if (!join) {
    svg_pen_end(p);
    p->start = p->o->len;
    p->npoints = 0;
    mq_buf_puts(p->S, p->o,
                "<polyline fill=\"none\" stroke=\"#2b6ca3\" stroke-width=\"1.5\" points=\"");
  }
  mq_buf_printf(p->S, p->o, "%s%.1f,%.1f", p->npoints ? " " : "", p->x0 + px, p->y0 + py);
  p->npoints++;
  p->lx = px;
  p->ly = py;
}

static void plot_header(mq_state *S, mq_buf *o, const series *s) {
  mq_buf_printf(S, o, "plot of %lld point%s", (long long)s->n, s->n == 1 ? "" : "s");
  if (s->drawn < s->n)
    mq_buf_printf(S, o, " (%lld masked out or not finite)", (long long)(s->n - s->drawn));
}

static void plot_text(mq_state *S, mq_buf *o, const series *s, const pic *p) {
  char top[32], bottom[32], left[32], right[32];
  mq_pic_num(top, s->yhi);
  mq_pic_num(bottom, s->ylo);
  mq_pic_num(left, s->xlo);
  mq_pic_num(right, s->xhi);
  int lw = (int)(strlen(top) > strlen(bottom) ? strlen(top) : strlen(bottom));
  int cc = p->width - lw - 2, h = p->height;
  if (cc < 4) cc = 4;
  mq_grid *g = mq_grid_new(S, lw + 2 + cc, h + 2);
  mq_grid_text(g, lw - (int)strlen(top), 0, top, 0);
  mq_grid_text(g, lw - (int)strlen(bottom), h - 1, bottom, 0);
  for (int y = 0; y < h; y++) mq_grid_put(g, lw + 1, y, y == 0 || y == h - 1 ? 0x2524 : 0x2502, 0);
  mq_grid_put(g, lw + 1, h, 0x2514, 0);
  for (int x = 0; x < cc; x++) mq_grid_put(g, lw + 2 + x, h, 0x2500, 0);
  mq_grid_text(g, lw + 2, h + 1, left, 0);
  if (s->xhi > s->xlo && (int)(strlen(left) + strlen(right)) < cc)
    mq_grid_text(g, lw + 2 + cc - (int)strlen(right), h + 1, right, 0);
  mq_braille b = {g, lw + 2, 0, cc, h, C_MAIN};
  pen pn = {0};
  pn.to = braille_to;
  pn.br = &b;
  series_walk(S, s, 2 * cc, 4 * h, &pn);
  mq_grid_emit(S, g, o, p->color);
}

static void plot_svg(mq_state *S, mq_buf *o, const series *s) {
  char a[32];
  mq_svg_open(S, o, SVG_W + SVG_LEFT + 30, SVG_H + SVG_TOP + 50);
  svg_title(S, o);
  plot_header(S, o, s);
  mq_buf_puts(S, o, "</text>\n");
  svg_frame(S, o, SVG_LEFT, SVG_TOP, SVG_W, SVG_H);
  if (s->drawn) {
    mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + 12, "end", nums(a, s->yhi));
    mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + SVG_H, "end", nums(a, s->ylo));
    mq_svg_text(S, o, SVG_LEFT, SVG_TOP + SVG_H + 18, "start", nums(a, s->xlo));
    mq_svg_text(S, o, SVG_LEFT + SVG_W, SVG_TOP + SVG_H + 18, "end", nums(a, s->xhi));
  }
  pen pn = {0};
  pn.to = svg_to;
  pn.S = S;
  pn.o = o;
  pn.x0 = SVG_LEFT;
  pn.y0 = SVG_TOP;
  series_walk(S, s, SVG_W + 1, SVG_H + 1, &pn);
  svg_pen_end(&pn);
  mq_svg_close(S, o);
}

static vals series_vals(mq_state *S, mq_value v, const char *what) {
  mq_tensor *t = mq_arg_tensor(S, v, what);
  if (t->ndim != 1)
    mq_error(S, "plot: %s must be 1-D, not %d-D (shape %s)", what, t->ndim,
             mq_shape_str(S, t->ndim, t->shape));
  return vals_of(S, t);
}

static mq_value lib_plot(mq_state *S, mq_value *args) {
  pic p;
  series s;
  s.has_x = args[1].type != MQ_NONE;
  s.y = series_vals(S, args[s.has_x ? 1 : 0], "y");
  if (s.has_x) {
    s.x = series_vals(S, args[0], "x");
    if (s.x.n != s.y.n)
      mq_error(S, "plot: x has %lld points and y %lld", (long long)s.x.n, (long long)s.y.n);
  }
  s.n = s.y.n;
  pic_init(S, &p, "plot", args[2], args[3], 12, args[4]);
  series_range(S, &s);
  mq_buf *o = &S->out;
  o->len = 0;
  if (p.file) {
    plot_svg(S, o, &s);
  } else {
    plot_header(S, o, &s);
    mq_buf_putc(S, o, '\n');
    if (s.drawn) plot_text(S, o, &s, &p);
    else mq_buf_puts(S, o, "(no valid finite points to draw)\n");
  }
  return pic_finish(S, &p);
}

/* --- heatmap ---------------------------------------------------------------------------------------- */

#define RAMP_LEVELS 9
static const char ramp_chars[] = ".:-=+*#%@";
/* dark blue to yellow, a viridis-like ramp in xterm's 256 colours and in RGB */
static const uint8_t ramp_256[RAMP_LEVELS] = {54, 60, 24, 30, 36, 35, 71, 148, 226};
static const char *const ramp_rgb[RAMP_LEVELS] = {"#440154", "#472d7b", "#3b528b",
                                                  "#2c728e", "#21918c", "#28ae80",
                                                  "#5ec962", "#addc30", "#fde725"};

/* What a block shows: its level on the ramp (0..8), or -1 when it has no
 * valid entries, -2 when its valid entries are all NaN or infinite. */
static int heat_level(const blocks *b, size_t k, double lo, double hi) {
  if (!b->valid[k]) return -1;
  if (!b->finite[k]) return -2;
  double m = b->sum[k] / (double)b->finite[k];
  int l = hi > lo ? (int)(frac(m, lo, hi) * RAMP_LEVELS) : RAMP_LEVELS / 2;
  return l < RAMP_LEVELS ? l : RAMP_LEVELS - 1;
}

/* The SVG's colour of a block mean: the ramp's RGB stops interpolated,
 * so the file shows more than the terminal's nine levels. */
static void heat_rgb(char out[8], double f) {
  double t = f * (RAMP_LEVELS - 1);
  int k = (int)t;
  if (k >= RAMP_LEVELS - 1) k = RAMP_LEVELS - 2;
  t -= k;
  unsigned a, b, rgb[3] = {0, 0, 0};
  for (int c = 0; c < 3; c++) {
    sscanf(ramp_rgb[k] + 1 + 2 * c, "%2x", &a);
    sscanf(ramp_rgb[k + 1] + 1 + 2 * c, "%2x", &b);
    rgb[c] = (unsigned)floor(a + (b - (double)a) * t + 0.5);
  }
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* The least and greatest block mean; false when no block has one. */
static bool heat_range(const blocks *b, double *lo, double *hi, bool *bad) {
  *lo = INFINITY;
  *hi = -INFINITY;
  *bad = false;
  for (size_t k = 0; k < (size_t)b->nr * (size_t)b->nc; k++) {
    if (b->valid[k] && !b->finite[k]) *bad = true;
    if (!b->finite[k]) continue;
    double m = b->sum[k] / (double)b->finite[k];
    if (m < *lo) *lo = m;
    if (m > *hi) *hi = m;
  }
  return *lo <= *hi;
}

static void heat_header(mq_state *S, mq_buf *o, mq_tensor *x, const blocks *b) {
  mq_buf_puts(S, o, "heatmap ");
  put_extent(S, o, x, blocks_valid(b));
  put_blocking(S, o, b, "the mean of its valid finite entries");
}

static void heatmap_text(mq_state *S, mq_buf *o, mq_tensor *x, const pic *p) {
  int lw = ndigits(x->shape[0] > 1 ? x->shape[0] - 1 : 0);
  int avail = p->width - lw - 1;
  blocks b;
  blocks_fill(S, &b, x, p->height, avail, true);
  double lo, hi;
  bool bad, any = heat_range(&b, &lo, &hi, &bad);
  heat_header(S, o, x, &b);
  mq_buf_putc(S, o, '\n');
  int cw = avail / b.nc > 1 ? 2 : 1, x0 = lw + 1;
  mq_grid *g = mq_grid_new(S, x0 + b.nc * cw, b.nr + 1);
  col_labels(g, 0, x0, &b, cw);
  for (int i = 0; i < b.nr; i++) {
    row_label(g, i + 1, lw, (int64_t)i * b.br);
    for (int j = 0; j < b.nc; j++) {
      int l = heat_level(&b, (size_t)i * (size_t)b.nc + (size_t)j, lo, hi);
      uint32_t cp = l == -1 ? 0xB7 : l == -2 ? '!' : p->color ? 0x2588 : (uint32_t)ramp_chars[l];
      uint8_t c = l == -1 ? C_MASKED : l == -2 ? C_BAD : ramp_256[l];
      for (int k = 0; k < cw; k++) mq_grid_put(g, x0 + j * cw + k, i + 1, cp, c);
    }
  }
  mq_grid_emit(S, g, o, p->color);
  /* the legend */
  char a[32];
  if (any) {
    mq_buf_printf(S, o, "%s ", nums(a, lo));
    for (int l = 0; l < RAMP_LEVELS; l++) {
      if (p->color) mq_buf_printf(S, o, "\x1b[38;5;%dm\xe2\x96\x88\x1b[0m", ramp_256[l]);
      else mq_buf_putc(S, o, ramp_chars[l]);
    }
    mq_buf_printf(S, o, " %s", nums(a, hi));
  }
  mq_buf_printf(S, o, "%s\xc2\xb7 masked out", any ? "; " : "");
  if (bad) mq_buf_puts(S, o, "; ! only NaN or inf");
  mq_buf_putc(S, o, '\n');
}

static void heatmap_svg(mq_state *S, mq_buf *o, mq_tensor *x) {
  blocks b;
  blocks_fill(S, &b, x, 100, 150, true);
  double lo, hi;
  bool bad, any = heat_range(&b, &lo, &hi, &bad);
  double c = (double)SVG_W / b.nc;
  if ((double)SVG_H / b.nr < c) c = (double)SVG_H / b.nr;
  if (c > 40) c = 40;
  double w = c * b.nc, h = c * b.nr;
  mq_svg_open(S, o, SVG_W + SVG_LEFT + 30, SVG_TOP + (int)ceil(h) + 60);
  svg_title(S, o);
  heat_header(S, o, x, &b);
  mq_buf_puts(S, o, "</text>\n");
  for (int i = 0; i < b.nr; i++) {
    mq_poll(S);
    for (int j = 0; j < b.nc; j++) {
      size_t k = (size_t)i * (size_t)b.nc + (size_t)j;
      int l = heat_level(&b, k, lo, hi);
      double cx = SVG_LEFT + j * c, cy = SVG_TOP + i * c;
      char rgb[8];
      if (l >= 0) heat_rgb(rgb, hi > lo ? frac(b.sum[k] / (double)b.finite[k], lo, hi) : 0.5);
      mq_svg_rect(S, o, cx, cy, c, c, l == -1 ? "#f0f0f0" : l == -2 ? "#ff0000" : rgb);
      if (l == -1) { /* masked out: a light cell, crossed */
        mq_svg_line(S, o, cx, cy, cx + c, cy + c, "#b0b0b0");
        mq_svg_line(S, o, cx + c, cy, cx, cy + c, "#b0b0b0");
      }
    }
  }
  svg_frame(S, o, SVG_LEFT, SVG_TOP, w, h);
  char a[32];
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + 12, "end", "0");
  mq_svg_text(S, o, SVG_LEFT - 6, SVG_TOP + h, "end", ints(a, b.rows - 1));
  mq_svg_text(S, o, SVG_LEFT, SVG_TOP - 4, "start", "0");
  mq_svg_text(S, o, SVG_LEFT + w, SVG_TOP - 4, "end", ints(a, b.cols - 1));
  double ly = SVG_TOP + h + 12;
  if (any) {
    mq_svg_text(S, o, SVG_LEFT, ly + 12, "start", nums(a, lo));
    for (int l = 0; l < RAMP_LEVELS; l++)
      mq_svg_rect(S, o, SVG_LEFT + 60 + l * 16, ly, 16, 16, ramp_rgb[l]);
    mq_svg_text(S, o, SVG_LEFT + 70 + RAMP_LEVELS * 16, ly + 12, "start", nums(a, hi));
  }
  mq_svg_close(S, o);
}

static mq_value lib_heatmap(mq_state *S, mq_value *args) {
  pic p;
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  if (x->ndim != 2)
    mq_error(S, "heatmap: x must be 2-D, not %d-D (shape %s)", x->ndim,
             mq_shape_str(S, x->ndim, x->shape));
  pic_init(S, &p, "heatmap", args[1], args[2], 20, args[3]);
  mq_buf *o = &S->out;
  o->len = 0;
  if (x->numel == 0) {
    if (p.file) mq_error(S, "heatmap: x of shape %s has no entries to draw",
                         mq_shape_str(S, x->ndim, x->shape));
    mq_buf_printf(S, o, "heatmap %s: no entries\n", mq_shape_str(S, x->ndim, x->shape));
  } else if (p.file) {
    heatmap_svg(S, o, x);
  } else {
    heatmap_text(S, o, x, &p);
  }
  return pic_finish(S, &p);
}

const mq_libfn mq_lib_plot[] = {
    {"show_mask(x, width=none, height=none, file=none)", lib_show_mask,
     "draw where x's valid entries are, a row of cells per sample (dim 0)"},
    {"hist(x, bins=20, width=none, file=none)", lib_hist,
     "a histogram of x's valid finite entries as horizontal bars"},
    {"plot(x, y=none, width=none, height=none, file=none)", lib_plot,
     "a line chart of y (against x, or its index) in braille dots"},
    {"heatmap(x, width=none, height=none, file=none)", lib_heatmap,
     "2-D x as a shade per entry; masked-out entries drawn apart"},
    {NULL, NULL, NULL},
};
