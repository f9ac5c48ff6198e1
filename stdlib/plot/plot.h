/* plot.h - what the pictures share (lib_plot.c: the options, the reading
 * of tensors and the table; plot_blocks.c: show_mask and heatmap;
 * plot_chart.c: hist and plot). docs/PICTURES.md is the user's account. */
#ifndef MQ_PLOT_H
#define MQ_PLOT_H

#include <math.h>
#include <stdio.h>

#include "render.h"
#include "../../vm/builtin.h"

/* the SVGs' plotting area (its default size: width= and height= set it
 * in an SVG, mq_pic_init) and its place */
#define MQ_SVG_W 600
#define MQ_SVG_H 400
#define MQ_SVG_MIN 100
#define MQ_SVG_MAX 4000
#define MQ_SVG_LEFT 70
#define MQ_SVG_TOP 40

/* xterm 256-colour indices */
enum { MQ_PIC_MAIN = 32, MQ_PIC_DIM = 244, MQ_PIC_MASKED = 240, MQ_PIC_BAD = 196 };

/* A picture's options. */
typedef struct mq_pic {
  const char *text; /* the text kept for masq_config.picture (mq_pic_finish) */
  size_t text_len;
  const char *who;
  int width, height; /* in character cells */
  int svg_w, svg_h; /* an SVG's plotting area, in its units */
  const char *file; /* NULL: draw on the terminal */
  bool color;
  const mq_list *labels; /* show_mask's and heatmap's column names, or NULL */
  const mq_string *title; /* title=, or NULL */
} mq_pic;

/* An int argument in lo..hi, or an error naming it. */
MQ_INTERNAL int64_t mq_pic_bounded(mq_state *S, mq_value v, const char *who, const char *what,
                                   int64_t lo, int64_t hi);
/* The options from the arguments width= (none: the host's columns hook,
 * else 80), height= (none: [dflt_height]) and file=. With file=, width=
 * and height= are the SVG's plotting area in its units instead
 * (MQ_SVG_MIN to MQ_SVG_MAX; none: MQ_SVG_W x MQ_SVG_H). */
MQ_INTERNAL void mq_pic_init(mq_state *S, mq_pic *p, const char *who, mq_value width,
                             mq_value height, int dflt_height, mq_value file, mq_value title);
/* The title= line above a picture on the terminal, if there is one. */
MQ_INTERNAL void mq_pic_text_title(mq_state *S, mq_buf *o, const mq_pic *p);
/* The picture in S->out goes to the terminal or the file; returns none. */
MQ_INTERNAL mq_value mq_pic_finish(mq_state *S, mq_pic *p);
/* Whether the host takes pictures as text and SVG together
 * (masq_config.picture, no file=): then mq_pic_finish keeps the text
 * aside, the caller draws the SVG into S->out, emptied, and
 * mq_pic_give_svg hands both over. */
MQ_INTERNAL bool mq_pic_wants_svg(mq_state *S, const mq_pic *p);
MQ_INTERNAL mq_value mq_pic_give_svg(mq_state *S, const mq_pic *p);

/* A tensor's entries in order: contiguous data and mask (NULL: all valid). */
typedef struct mq_pic_vals {
  const void *data;
  mq_dtype dt;
  const uint8_t *mask;
  int64_t n;
} mq_pic_vals;

MQ_INTERNAL mq_pic_vals mq_pic_vals_of(mq_state *S, mq_tensor *t);

static inline double mq_pic_val(const mq_pic_vals *v, int64_t i) {
  switch (v->dt) {
  case MQ_DT_BOOL: return ((const uint8_t *)v->data)[i];
  case MQ_DT_I64: return (double)((const int64_t *)v->data)[i];
  case MQ_DT_F32: return ((const float *)v->data)[i];
  default: return ((const double *)v->data)[i];
  }
}

static inline bool mq_pic_valid(const mq_pic_vals *v, int64_t i) { return !v->mask || v->mask[i]; }

/* Where [x] lies between [lo] and [hi] as 0..1, halving first so that
 * hi - lo cannot overflow. */
static inline double mq_pic_frac(double x, double lo, double hi) {
  double f = (x / 2 - lo / 2) / (hi / 2 - lo / 2);
  return f >= 0 ? (f <= 1 ? f : 1) : 0;
}

/* [x] on 0..n-1 (rounded); the middle when the range is empty. */
static inline int mq_pic_scale(double x, double lo, double hi, int n) {
  if (!(hi > lo)) return (n - 1) / 2;
  return (int)floor(mq_pic_frac(x, lo, hi) * (n - 1) + 0.5);
}

static inline int mq_pic_ndigits(int64_t n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    d++;
  }
  return d;
}

static inline const char *mq_pic_nums(char buf[32], double v) {
  mq_pic_num(buf, v);
  return buf;
}

static inline const char *mq_pic_ints(char buf[32], int64_t v) {
  snprintf(buf, 32, "%lld", (long long)v);
  return buf;
}

/* The frame of the SVG's plotting area. */
MQ_INTERNAL void mq_pic_svg_frame(mq_state *S, mq_buf *o, double x, double y, double w, double h);
/* An SVG picture's frame. Begin: the caller has written the picture's
 * header (plain words and numbers) into [o] from [at]; it is taken out and
 * the document opened, [w] x [h] units for the drawing, above it the
 * title= (bold) and the header, each wrapped to the width at spaces, the
 * drawing moved down by the lines they take (so it keeps its coordinates).
 * End: closes what begin opened. */
MQ_INTERNAL void mq_pic_svg_begin(mq_state *S, mq_buf *o, size_t at, const mq_pic *p, int w, int h);
MQ_INTERNAL void mq_pic_svg_end(mq_state *S, mq_buf *o);

/* The builtins (lib_plot.c's table binds them). */
MQ_INTERNAL mq_value mq_pic_show_mask(mq_state *S, mq_value *args);
MQ_INTERNAL mq_value mq_pic_heatmap(mq_state *S, mq_value *args);
MQ_INTERNAL mq_value mq_pic_hist(mq_state *S, mq_value *args);
MQ_INTERNAL mq_value mq_pic_plot(mq_state *S, mq_value *args);

#endif
