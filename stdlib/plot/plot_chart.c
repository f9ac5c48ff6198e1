/* plot_chart.c - the charts: hist (horizontal bars of a histogram) and
 * plot (a line in braille dots), each also as SVG (plot.h). */
#include "plot.h"

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
  mq_pic_vals v = mq_pic_vals_of(S, x);
  double lo = INFINITY, hi = -INFINITY;
  h->masked = h->nan = h->pinf = h->ninf = h->counted = h->max = 0;
  for (int64_t i = 0; i < v.n; i++) {
    if ((i & 0xFFFF) == 0xFFFF) mq_check_interrupt(S);
    if (!mq_pic_valid(&v, i)) {
      h->masked++;
      continue;
    }
    double a = mq_pic_val(&v, i);
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
    if ((i & 0xFFFF) == 0xFFFF) mq_check_interrupt(S);
    if (!mq_pic_valid(&v, i)) continue;
    double a = mq_pic_val(&v, i);
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
  snprintf(out, n, "[%s, %s%c", mq_pic_nums(a, h->edges[k]), mq_pic_nums(b, h->edges[k + 1]),
           k == h->bins - 1 ? ']' : ')');
}

static void hist_text(mq_state *S, mq_buf *o, const hist *h, const mq_pic *p) {
  char lab[80];
  int labw = 0, cntw = mq_pic_ndigits(h->max);
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
    for (; e >= 8; e -= 8) mq_grid_put(g, x++, k, 0x2588, MQ_PIC_MAIN);
    if (e) mq_grid_put(g, x, k, 0x2590 - (uint32_t)e, MQ_PIC_MAIN);
  }
  mq_grid_emit(S, g, o, p->color);
}

static void hist_svg(mq_state *S, mq_buf *o, const hist *h, const mq_tensor *x, const mq_pic *p) {
  char s[32];
  size_t at = o->len;
  hist_header(S, o, h, x);
  mq_pic_svg_begin(S, o, at, p, p->svg_w + MQ_SVG_LEFT + 30, p->svg_h + MQ_SVG_TOP + 50);
  double bw = (double)p->svg_w / h->bins;
  for (int k = 0; k < h->bins && h->max; k++) {
    double bh = (double)p->svg_h * (double)h->counts[k] / (double)h->max;
    mq_svg_rect(S, o, MQ_SVG_LEFT + k * bw, MQ_SVG_TOP + p->svg_h - bh, bw * 0.9, bh, "#2b6ca3");
  }
  mq_pic_svg_frame(S, o, MQ_SVG_LEFT, MQ_SVG_TOP, p->svg_w, p->svg_h);
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + 12, "end", mq_pic_ints(s, h->max));
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + p->svg_h, "end", "0");
  if (h->counted) {
    mq_svg_text(S, o, MQ_SVG_LEFT, MQ_SVG_TOP + p->svg_h + 18, "start",
                mq_pic_nums(s, h->edges[0]));
    mq_svg_text(S, o, MQ_SVG_LEFT + p->svg_w, MQ_SVG_TOP + p->svg_h + 18, "end",
                mq_pic_nums(s, h->edges[h->bins]));
  }
  mq_pic_svg_end(S, o);
}

mq_value mq_pic_hist(mq_state *S, mq_value *args) {
  mq_pic p;
  hist h;
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  h.bins = (int)mq_pic_bounded(S, args[1], "hist", "bins", 1, MAX_BINS);
  mq_pic_init(S, &p, "hist", args[2], mq_none(), 0, args[3], args[4]);
  hist_count(S, &h, x);
  mq_buf *o = &S->out;
  o->len = 0;
  if (p.file) {
    hist_svg(S, o, &h, x, &p);
  } else {
    mq_pic_text_title(S, o, &p);
    hist_header(S, o, &h, x);
    mq_buf_putc(S, o, '\n');
    if (h.counted) hist_text(S, o, &h, &p);
    else mq_buf_puts(S, o, "(no finite valid entries to count)\n");
  }
  mq_pic_finish(S, &p);
  if (!mq_pic_wants_svg(S, &p)) return mq_none();
  if (h.counted) hist_svg(S, o, &h, x, &p);
  return mq_pic_give_svg(S, &p);
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
  mq_pic_vals x, y;
  bool has_x;
  int64_t n, drawn;
  double xlo, xhi, ylo, yhi;
} series;

static bool point_ok(const series *s, int64_t i, double *x, double *y) {
  if (!mq_pic_valid(&s->y, i)) return false;
  *y = mq_pic_val(&s->y, i);
  *x = (double)i;
  if (s->has_x) {
    if (!mq_pic_valid(&s->x, i)) return false;
    *x = mq_pic_val(&s->x, i);
  }
  return isfinite(*x) && isfinite(*y);
}

static void series_range(mq_state *S, series *s) {
  s->xlo = s->ylo = INFINITY;
  s->xhi = s->yhi = -INFINITY;
  s->drawn = 0;
  for (int64_t i = 0; i < s->n; i++) {
    double x, y;
    if ((i & 0xFFFF) == 0xFFFF) mq_check_interrupt(S);
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
    if ((i & 0xFFFF) == 0xFFFF) mq_check_interrupt(S);
    if (ok) {
      px = mq_pic_scale(x, s->xlo, s->xhi, dw);
      py = dh - 1 - mq_pic_scale(y, s->ylo, s->yhi, dh);
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

static void plot_text(mq_state *S, mq_buf *o, const series *s, const mq_pic *p) {
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
  mq_braille b = {g, lw + 2, 0, cc, h, MQ_PIC_MAIN};
  pen pn = {0};
  pn.to = braille_to;
  pn.br = &b;
  series_walk(S, s, 2 * cc, 4 * h, &pn);
  mq_grid_emit(S, g, o, p->color);
}

static void plot_svg(mq_state *S, mq_buf *o, const series *s, const mq_pic *p) {
  char a[32];
  size_t at = o->len;
  plot_header(S, o, s);
  mq_pic_svg_begin(S, o, at, p, p->svg_w + MQ_SVG_LEFT + 30, p->svg_h + MQ_SVG_TOP + 50);
  mq_pic_svg_frame(S, o, MQ_SVG_LEFT, MQ_SVG_TOP, p->svg_w, p->svg_h);
  if (s->drawn) {
    mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + 12, "end", mq_pic_nums(a, s->yhi));
    mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + p->svg_h, "end", mq_pic_nums(a, s->ylo));
    mq_svg_text(S, o, MQ_SVG_LEFT, MQ_SVG_TOP + p->svg_h + 18, "start", mq_pic_nums(a, s->xlo));
    mq_svg_text(S, o, MQ_SVG_LEFT + p->svg_w, MQ_SVG_TOP + p->svg_h + 18, "end",
                mq_pic_nums(a, s->xhi));
  }
  pen pn = {0};
  pn.to = svg_to;
  pn.S = S;
  pn.o = o;
  pn.x0 = MQ_SVG_LEFT;
  pn.y0 = MQ_SVG_TOP;
  series_walk(S, s, p->svg_w + 1, p->svg_h + 1, &pn);
  svg_pen_end(&pn);
  mq_pic_svg_end(S, o);
}

static mq_pic_vals series_vals(mq_state *S, mq_value v, const char *what) {
  mq_tensor *t = mq_arg_tensor(S, v, what);
  if (t->ndim != 1)
    mq_error(S, "plot: %s must be 1-D, not %d-D (shape %s)", what, t->ndim,
             mq_shape_str(S, t->ndim, t->shape));
  return mq_pic_vals_of(S, t);
}

mq_value mq_pic_plot(mq_state *S, mq_value *args) {
  mq_pic p;
  series s;
  s.has_x = args[1].type != MQ_NONE;
  s.y = series_vals(S, args[s.has_x ? 1 : 0], "y");
  if (s.has_x) {
    s.x = series_vals(S, args[0], "x");
    if (s.x.n != s.y.n)
      mq_error(S, "plot: x has %lld points and y %lld", (long long)s.x.n, (long long)s.y.n);
  }
  s.n = s.y.n;
  mq_pic_init(S, &p, "plot", args[2], args[3], 12, args[4], args[5]);
  series_range(S, &s);
  mq_buf *o = &S->out;
  o->len = 0;
  if (p.file) {
    plot_svg(S, o, &s, &p);
  } else {
    mq_pic_text_title(S, o, &p);
    plot_header(S, o, &s);
    mq_buf_putc(S, o, '\n');
    if (s.drawn) plot_text(S, o, &s, &p);
    else mq_buf_puts(S, o, "(no valid finite points to draw)\n");
  }
  mq_pic_finish(S, &p);
  if (!mq_pic_wants_svg(S, &p)) return mq_none();
  if (s.drawn) plot_svg(S, o, &s, &p);
  return mq_pic_give_svg(S, &p);
}
