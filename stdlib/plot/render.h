/* render.h - the drawing surfaces of the pictures (lib_plot.c): a grid of
 * character cells with a colour each, written out as UTF-8 text with or
 * without ANSI colour; a braille dot canvas drawn into such a grid; and an
 * SVG document built in a text buffer. Nothing here knows tensors: lib_plot.c
 * turns them into counts and points, this file only draws.
 *
 * Every size is capped by the caller (MQ_PIC_MAX_*), so a grid is at most a
 * few hundred kilobytes whatever a script asks for; the memory is scratch
 * (the pool's), so an error part way leaks nothing. */
#ifndef MQ_RENDER_H
#define MQ_RENDER_H

#include "../../core/state.h"

/* The largest picture in character cells (width=, height=). */
#define MQ_PIC_MAX_WIDTH 1000
#define MQ_PIC_MAX_HEIGHT 200
/* The most lines a grid may have: a histogram has a line per bin. */
#define MQ_PIC_MAX_LINES 1024

/* A character grid: one code point and one colour per cell. Colour 0 is the
 * terminal's default; 1..255 are the xterm 256-colour indices. */
typedef struct mq_grid {
  int w, h;
  uint32_t *cp;
  uint8_t *color;
} mq_grid;

MQ_INTERNAL mq_grid *mq_grid_new(mq_state *S, int w, int h);
/* Sets one cell; cells outside the grid are ignored. */
MQ_INTERNAL void mq_grid_put(mq_grid *g, int x, int y, uint32_t cp, uint8_t color);
/* ASCII text from (x, y) on, cut at the grid's edge. */
MQ_INTERNAL void mq_grid_text(mq_grid *g, int x, int y, const char *s, uint8_t color);
/* Appends the grid to [out] as UTF-8 lines, trailing blanks cut; with
 * [color], each run of a colour is wrapped in an SGR 38;5;N escape. */
MQ_INTERNAL void mq_grid_emit(mq_state *S, const mq_grid *g, mq_buf *out, bool color);
/* Appends code point [cp] as UTF-8. */
MQ_INTERNAL void mq_utf8_put(mq_state *S, mq_buf *out, uint32_t cp);

/* Braille dots over a w x h block of a grid from cell (x0, y0): 2 dots
 * across and 4 down per cell (U+2800 + the dot bits). */
typedef struct mq_braille {
  mq_grid *g;
  int x0, y0, w, h;
  uint8_t color;
} mq_braille;

/* Sets dot (px, py), 0 <= px < 2w, 0 <= py < 4h; others are ignored. */
MQ_INTERNAL void mq_braille_dot(mq_braille *b, int px, int py);
/* A straight line of dots (Bresenham), both ends included. */
MQ_INTERNAL void mq_braille_line(mq_braille *b, int x0, int y0, int x1, int y1);

/* A number as a short label: "%.4g", with "-0" as "0". */
MQ_INTERNAL void mq_pic_num(char out[32], double v);

/* --- SVG ------------------------------------------------------------------ */

/* The XML declaration, the <svg> element of [w] x [h] user units and a
 * white background. */
MQ_INTERNAL void mq_svg_open(mq_state *S, mq_buf *b, int w, int h);
MQ_INTERNAL void mq_svg_close(mq_state *S, mq_buf *b);
/* A filled rectangle; [fill] is a colour like "#1f77b4". */
MQ_INTERNAL void mq_svg_rect(mq_state *S, mq_buf *b, double x, double y, double w, double h,
                             const char *fill);
MQ_INTERNAL void mq_svg_line(mq_state *S, mq_buf *b, double x1, double y1, double x2, double y2,
                             const char *stroke);
/* Appends [n] bytes of a script's text: a control character or a byte
 * that is not valid UTF-8 as '?' (so a name from a file cannot send
 * escapes to the terminal or make the XML invalid), and with [xml], < > &
 * and " escaped. Returns how many characters it wrote; with [out] NULL,
 * only counts them. */
MQ_INTERNAL int mq_text_put(mq_state *S, mq_buf *out, const char *text, size_t n, bool xml);
/* [n] bytes of text from (x, y), turned 45 degrees clockwise (column names
 * under a picture). */
MQ_INTERNAL void mq_svg_text_turned(mq_state *S, mq_buf *b, double x, double y, const char *text,
                                    size_t n);
/* Text at (x, y) (its baseline), [anchor] "start", "middle" or "end"; the
 * text is cleaned and escaped as by mq_text_put. */
MQ_INTERNAL void mq_svg_text(mq_state *S, mq_buf *b, double x, double y, const char *anchor,
                             const char *text);

#endif
