/* render.c - character grids, braille dots and SVG text (render.h). */
#include "render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../core/checked.h"

mq_grid *mq_grid_new(mq_state *S, int w, int h) {
  if (w < 1 || h < 1 || w > MQ_PIC_MAX_WIDTH || h > MQ_PIC_MAX_LINES)
    mq_error(S, "picture of %d x %d cells is out of range", w, h);
  size_t n = mq_ck_zmul(S, (size_t)w, (size_t)h, "picture size");
  mq_grid *g = mq_scratch(S, sizeof *g);
  g->w = w;
  g->h = h;
  g->cp = mq_scratch(S, mq_ck_zmul(S, n, sizeof *g->cp, "picture size"));
  g->color = mq_scratch(S, n);
  for (size_t i = 0; i < n; i++) g->cp[i] = ' ';
  memset(g->color, 0, n);
  return g;
}

void mq_grid_put(mq_grid *g, int x, int y, uint32_t cp, uint8_t color) {
  if (x < 0 || y < 0 || x >= g->w || y >= g->h) return;
  g->cp[(size_t)y * (size_t)g->w + (size_t)x] = cp;
  g->color[(size_t)y * (size_t)g->w + (size_t)x] = color;
}

void mq_grid_text(mq_grid *g, int x, int y, const char *s, uint8_t color) {
  for (; *s; s++, x++) mq_grid_put(g, x, y, (unsigned char)*s, color);
}

void mq_utf8_put(mq_state *S, mq_buf *out, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else {
    /* the pictures use only the Basic Multilingual Plane */
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  }
  mq_buf_putn(S, out, u, n);
}

void mq_grid_emit(mq_state *S, const mq_grid *g, mq_buf *out, bool color) {
  for (int y = 0; y < g->h; y++) {
    const uint32_t *row = g->cp + (size_t)y * (size_t)g->w;
    const uint8_t *col = g->color + (size_t)y * (size_t)g->w;
    int end = g->w;
    while (end > 0 && row[end - 1] == ' ') end--;
    int cur = 0;
    for (int x = 0; x < end; x++) {
      if (color && row[x] != ' ' && col[x] != cur) {
        if (col[x]) mq_buf_printf(S, out, "\x1b[38;5;%dm", col[x]);
        else mq_buf_puts(S, out, "\x1b[0m");
        cur = col[x];
      }
      mq_utf8_put(S, out, row[x]);
    }
    if (cur) mq_buf_puts(S, out, "\x1b[0m");
    mq_buf_putc(S, out, '\n');
  }
}

/* The bit of each dot of a braille cell, by row (0..3) and column (0..1):
 * dots 1-2-3-7 down the left, 4-5-6-8 down the right (Unicode's order). */
static const uint8_t braille_bit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

void mq_braille_dot(mq_braille *b, int px, int py) {
  if (px < 0 || py < 0 || px >= 2 * b->w || py >= 4 * b->h) return;
  int x = b->x0 + px / 2, y = b->y0 + py / 4;
  if (x >= b->g->w || y >= b->g->h) return;
  size_t i = (size_t)y * (size_t)b->g->w + (size_t)x;
  uint32_t cp = b->g->cp[i];
  if (cp < 0x2800 || cp > 0x28FF) cp = 0x2800;
  b->g->cp[i] = cp | braille_bit[py % 4][px % 2];
  b->g->color[i] = b->color;
}

void mq_braille_line(mq_braille *b, int x0, int y0, int x1, int y1) {
  int dx = abs(x1 - x0), dy = -abs(y1 - y0);
  int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
  for (;;) {
    mq_braille_dot(b, x0, y0);
    if (x0 == x1 && y0 == y1) break;
    int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

void mq_pic_num(char out[32], double v) {
  if (v == 0) v = 0; /* -0 prints as 0 */
  snprintf(out, 32, "%.4g", v);
}

/* --- SVG ------------------------------------------------------------------ */

void mq_svg_open(mq_state *S, mq_buf *b, int w, int h) {
  mq_buf_printf(S, b,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                w, h, w, h, w, h);
}

void mq_svg_close(mq_state *S, mq_buf *b) { mq_buf_puts(S, b, "</svg>\n"); }

void mq_svg_rect(mq_state *S, mq_buf *b, double x, double y, double w, double h, const char *fill) {
  mq_buf_printf(S, b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
                x, y, w, h, fill);
}

void mq_svg_line(mq_state *S, mq_buf *b, double x1, double y1, double x2, double y2,
                 const char *stroke) {
  mq_buf_printf(S, b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\"/>\n", x1,
                y1, x2, y2, stroke);
}

/* The length of the UTF-8 sequence at [s] (of [n] bytes) if it is valid
 * and prints (no C0 or C1 control character, no DEL), else 0. */
static size_t printable_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return c >= 0x20 && c != 0x7f;
  size_t len = c >= 0xC2 && c <= 0xDF   ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
  if (!len || n < len) return 0;
  unsigned lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : c == 0xC2 ? 0xA0 : 0x80; /* C2 80..9F: C1 */
  unsigned hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < len; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return len;
}

int mq_text_put(mq_state *S, mq_buf *out, const char *text, size_t n, bool xml) {
  const unsigned char *s = (const unsigned char *)text;
  int width = 0;
  for (size_t i = 0; i < n; width++) {
    size_t len = printable_len(s + i, n - i);
    if (!len) {
      if (out) mq_buf_putc(S, out, '?');
      i++;
      continue;
    }
    if (!out) {
      i += len;
      continue;
    }
    const char *esc = !xml          ? NULL
                      : s[i] == '<' ? "&lt;"
                      : s[i] == '>' ? "&gt;"
                      : s[i] == '&' ? "&amp;"
                      : s[i] == '"' ? "&quot;"
                                    : NULL;
    if (esc) mq_buf_puts(S, out, esc);
    else mq_buf_putn(S, out, text + i, len);
    i += len;
  }
  return width;
}

void mq_svg_text(mq_state *S, mq_buf *b, double x, double y, const char *anchor, const char *text) {
  mq_buf_printf(S, b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\">", x, y, anchor);
  mq_text_put(S, b, text, strlen(text), true);
  mq_buf_puts(S, b, "</text>\n");
}

void mq_svg_text_turned(mq_state *S, mq_buf *b, double x, double y, const char *text, size_t n) {
  mq_buf_printf(S, b, "<text x=\"%.2f\" y=\"%.2f\" transform=\"rotate(45 %.2f %.2f)\">", x, y, x,
                y);
  mq_text_put(S, b, text, n, true);
  mq_buf_puts(S, b, "</text>\n");
}
