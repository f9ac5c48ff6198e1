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
#include <ctype.h>

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

/* Whether [s] ends in [ext], letter case aside. */
static bool ends_with(const mq_string *s, const char *ext) {
  size_t n = strlen(ext);
  if (s->len < n) return false;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)s->chars[s->len - n + i]) != ext[i]) return false;
  return true;
}

/* The file= argument, checked; NULL for none. The pictures write SVG
 * only: another name would be a file its extension lies about. */
static const char *arg_file(mq_state *S, const char *who, mq_value file) {
  if (file.type == MQ_NONE) return NULL;
  if (!mq_is_obj(file, MQ_O_STRING))
    mq_error(S, "%s: file must be a string, not %s", who, mq_value_a_type_name(file));
  const mq_string *s = mq_as_string(file);
  if (memchr(s->chars, '\0', s->len)) mq_error(S, "%s: file contains a NUL byte", who);
  if (!ends_with(s, ".svg"))
    mq_error(S,
             "%s: cannot write \"%s\": pictures are written as SVG only, to a file named "
             "*.svg (a PNG or PDF: rsvg-convert -o out.png name.svg)",
             who, s->chars);
  if (!(S->cfg.libs & MASQ_LIB_IO))
    mq_error(S,
             "%s: file= writes a file, and this host has not enabled file access "
             "(MASQ_LIB_IO)",
             who);
  return s->chars;
}

void mq_pic_init(mq_state *S, mq_pic *p, const char *who, mq_value width, mq_value height,
                 int dflt_height, mq_value file, mq_value title) {
  p->who = who;
  p->title = NULL;
  if (title.type != MQ_NONE) {
    if (!mq_is_obj(title, MQ_O_STRING))
      mq_error(S, "%s: title must be a string, not %s", who, mq_value_a_type_name(title));
    p->title = mq_as_string(title);
  }
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

void mq_pic_text_title(mq_state *S, mq_buf *o, const mq_pic *p) {
  if (!p->title) return;
  mq_text_put(S, o, p->title->chars, p->title->len, false); /* control bytes as ? */
  mq_buf_putc(S, o, '\n');
}

/* The SVG's text is 12 units high, the title 14 and bold; a character is
 * taken as 7 units wide (9 in the title), more than a sans-serif letter's
 * average, so that lines fit. */
#define SVG_CHAR_W 7
#define SVG_TITLE_CHAR_W 9
#define SVG_LINE_H 16

/* Writes [n] bytes of [text] as <text> lines from [y] down, at most
 * [cols] characters long, broken at spaces (a word longer than a line is a
 * line of its own); returns how many. [out] NULL: only counts them. */
static int svg_lines(mq_state *S, mq_buf *out, const char *text, size_t n, int cols, int y,
                     const char *attrs) {
  int lines = 0;
  size_t i = 0;
  while (i < n) {
    while (i < n && text[i] == ' ') i++;
    if (i == n) break;
    size_t end = i, last = i; /* the line is text[i, last) */
    int width = 0;
    while (end < n) {
      size_t w = end;
      while (w < n && text[w] != ' ') w++;
      int ww = mq_text_put(S, NULL, text + end, w - end, true);
      if (last > i && width + 1 + ww > cols) break;
      width += (last > i) + ww;
      last = w;
      end = w;
      while (end < n && text[end] == ' ') end++;
    }
    if (out) {
      mq_buf_printf(S, out, "<text x=\"10\" y=\"%d\"%s>", y + lines * SVG_LINE_H, attrs);
      mq_text_put(S, out, text + i, last - i, true);
      mq_buf_puts(S, out, "</text>\n");
    }
    lines++;
    i = last;
  }
  return lines;
}

void mq_pic_svg_begin(mq_state *S, mq_buf *o, size_t at, const mq_pic *p, int w, int h) {
  size_t n = o->len - at;
  char *header = mq_scratch(S, n + 1);
  memcpy(header, o->data + at, n);
  o->len = at;
  int cols = (w - 20) / SVG_CHAR_W, tcols = (w - 20) / SVG_TITLE_CHAR_W;
  const char *bold = " font-weight=\"bold\" font-size=\"14\"";
  int tl = p->title ? svg_lines(S, NULL, p->title->chars, p->title->len, tcols, 0, bold) : 0;
  int hl = svg_lines(S, NULL, header, n, cols, 0, "");
  int dy = (tl + hl - 1) * SVG_LINE_H; /* one line was always there */
  mq_svg_open(S, o, w, h + dy);
  if (p->title) svg_lines(S, o, p->title->chars, p->title->len, tcols, 20, bold);
  svg_lines(S, o, header, n, cols, 20 + tl * SVG_LINE_H, "");
  mq_buf_printf(S, o, "<g transform=\"translate(0 %d)\">\n", dy);
}

void mq_pic_svg_end(mq_state *S, mq_buf *o) {
  mq_buf_puts(S, o, "</g>\n");
  mq_svg_close(S, o);
}

const mq_libfn mq_lib_plot[] = {
    {"show_mask(x, width=none, height=none, file=none, labels=none, title=none)", mq_pic_show_mask,
     "draw where x's valid entries are: a row per sample (dim 0), blocks for big x (a block "
     "partly valid is a shade); labels names the columns; file= writes an SVG (docs/PICTURES.md)"},
    {"hist(x, bins=20, width=none, file=none, title=none)", mq_pic_hist,
     "horizontal bars of a histogram of x's valid finite entries (numpy's bins), NaN and inf "
     "counted apart; file= writes an SVG"},
    {"plot(x, y=none, width=none, height=none, file=none, title=none)", mq_pic_plot,
     "plot(y) or plot(x, y): a line chart in braille dots; masked-out points leave gaps; "
     "file= writes an SVG"},
    {"heatmap(x, width=none, height=none, file=none, labels=none, title=none)", mq_pic_heatmap,
     "2-D x as a shade per entry, masked-out entries as a dot; file= writes an SVG"},
    {NULL, NULL, NULL},
};
