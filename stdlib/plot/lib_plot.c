/* lib_plot.c - pictures in the terminal: show_mask, hist, plot, heatmap
 * (docs/PICTURES.md is the user's account). Each draws into a character
 * grid (render.h) and writes it through the state's output hook, in colour
 * when the host says its output is a colour terminal (masq_config.color),
 * as wide as the host's terminal (masq_config.columns, else 80); or, given
 * file=, writes a standalone SVG instead (only where the host enabled
 * MASQ_LIB_IO). This file holds what they share and the table;
 * plot_blocks.c draws show_mask and heatmap, plot_chart.c hist and plot.
 *
 * Big tensors are drawn by blocks: a picture never has more cells than
 * MQ_PIC_MAX_WIDTH x MQ_PIC_MAX_HEIGHT (or the SVG's own caps), whatever
 * the data's size, and the data is read once, in order. */
#include "../../runtime/io/npy.h"
#include "plot.h"

#define DEFAULT_WIDTH 80

/* --- options shared by the pictures ------------------------------------------------ */

int64_t mq_pic_bounded(mq_state *S, mq_value v, const char *who, const char *what, int64_t lo,
                       int64_t hi) {
  int64_t n = mq_arg_int(S, v, what);
  if (n < lo || n > hi)
    mq_error(S, "%s: %s must be between %lld and %lld, not %lld", who, what, (long long)lo,
             (long long)hi, (long long)n);
  return n;
}

/* The file= argument, checked; NULL for none. */
static const char *arg_file(mq_state *S, const char *who, mq_value file) {
  if (file.type == MQ_NONE) return NULL;
  if (!mq_is_obj(file, MQ_O_STRING))
    mq_error(S, "%s: file must be a string, not %s", who, mq_value_a_type_name(file));
  const mq_string *s = mq_as_string(file);
  if (memchr(s->chars, '\0', s->len)) mq_error(S, "%s: file contains a NUL byte", who);
  if (!(S->cfg.libs & MASQ_LIB_IO))
    mq_error(S,
             "%s: file= writes a file, and this host has not enabled file access "
             "(MASQ_LIB_IO)",
             who);
  return s->chars;
}

void mq_pic_init(mq_state *S, mq_pic *p, const char *who, mq_value width, mq_value height,
                 int dflt_height, mq_value file) {
  p->who = who;
  p->file = arg_file(S, who, file);
  p->svg_w = MQ_SVG_W;
  p->svg_h = MQ_SVG_H;
  p->width = DEFAULT_WIDTH;
  p->height = dflt_height;
  if (p->file) { /* the sizes are the SVG's, in its units */
    if (width.type != MQ_NONE)
      p->svg_w = (int)mq_pic_bounded(S, width, who, "width", MQ_SVG_MIN, MQ_SVG_MAX);
    if (height.type != MQ_NONE)
      p->svg_h = (int)mq_pic_bounded(S, height, who, "height", MQ_SVG_MIN, MQ_SVG_MAX);
  } else {
    if (width.type == MQ_NONE) {
      int w = 0;
      if (S->cfg.columns) {
        mq_hook_enter(S);
        w = S->cfg.columns(S->cfg.columns_ud);
        mq_hook_leave(S);
      }
      p->width = w <= 0 ? DEFAULT_WIDTH : w < 20 ? 20 : w > MQ_PIC_MAX_WIDTH ? MQ_PIC_MAX_WIDTH : w;
    } else {
      p->width = (int)mq_pic_bounded(S, width, who, "width", 20, MQ_PIC_MAX_WIDTH);
    }
    if (height.type != MQ_NONE)
      p->height = (int)mq_pic_bounded(S, height, who, "height", 2, MQ_PIC_MAX_HEIGHT);
  }
  p->color = S->cfg.color && !p->file;
  p->labels = NULL;
}

mq_value mq_pic_finish(mq_state *S, mq_pic *p) {
  if (p->file) {
    mq_file_write(S, p->file, p->who, S->out.data, S->out.len);
  } else if (mq_pic_wants_svg(S, p)) {
    char *t = mq_scratch(S, S->out.len + 1);
    memcpy(t, S->out.data, S->out.len);
    p->text = t;
    p->text_len = S->out.len;
    S->out.len = 0;
  } else {
    mq_write(S, S->out.data, S->out.len);
  }
  return mq_none();
}

bool mq_pic_wants_svg(mq_state *S, const mq_pic *p) { return !p->file && S->cfg.picture; }

mq_value mq_pic_give_svg(mq_state *S, const mq_pic *p) {
  mq_hook_enter(S); /* the svg is S->out, which a call back into masq would reuse */
  S->cfg.picture(S->cfg.picture_ud, p->text, p->text_len, S->out.len ? S->out.data : "",
                 S->out.len);
  mq_hook_leave(S);
  return mq_none();
}

/* --- reading values ---------------------------------------------------------------- */

mq_pic_vals mq_pic_vals_of(mq_state *S, mq_tensor *t) {
  mq_pic_vals v;
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, t));
  if (mq_dtype_is_narrow((mq_dtype)d->dtype)) d = mq_astype(S, d, mq_dtype_compute((mq_dtype)d->dtype));
  v.data = mq_tensor_data(d);
  v.dt = (mq_dtype)d->dtype;
  v.mask = t->mask ? mq_tensor_data(mq_contiguous(S, t->mask)) : NULL;
  v.n = t->numel;
  return v;
}

/* --- SVG pieces ------------------------------------------------------------------- */

void mq_pic_svg_frame(mq_state *S, mq_buf *o, double x, double y, double w, double h) {
  mq_svg_line(S, o, x, y, x + w, y, "#808080");
  mq_svg_line(S, o, x + w, y, x + w, y + h, "#808080");
  mq_svg_line(S, o, x + w, y + h, x, y + h, "#808080");
  mq_svg_line(S, o, x, y + h, x, y, "#808080");
}

void mq_pic_svg_title(mq_state *S, mq_buf *o) {
  mq_buf_printf(S, o, "<text x=\"%d\" y=\"20\">", MQ_SVG_LEFT);
}

const mq_libfn mq_lib_plot[] = {
    {"show_mask(x, width=none, height=none, file=none, labels=none)", mq_pic_show_mask,
     "draw where x's valid entries are: a row per sample (dim 0), blocks for big x; "
     "labels names the columns; file= writes an SVG (docs/PICTURES.md)"},
    {"hist(x, bins=20, width=none, file=none)", mq_pic_hist,
     "horizontal bars of a histogram of x's valid finite entries (numpy's bins), NaN and inf "
     "counted apart; file= writes an SVG"},
    {"plot(x, y=none, width=none, height=none, file=none)", mq_pic_plot,
     "plot(y) or plot(x, y): a line chart in braille dots; masked-out points leave gaps; "
     "file= writes an SVG"},
    {"heatmap(x, width=none, height=none, file=none, labels=none)", mq_pic_heatmap,
     "2-D x as a shade per entry, masked-out entries as a dot; file= writes an SVG"},
    {NULL, NULL, NULL},
};
