/* csv.h - comma-separated tables <-> masked float tensors (csv.c).
 *
 * Like npy.h, everything works on bytes in memory: load_csv reads the file
 * whole (mq_file_read) and parses the bytes, save_csv builds the text in
 * scratch and writes it in one go, so an error never strands a FILE* and
 * every buffer dies with the pool. The user's account is docs/IO.md. */
#ifndef MQ_CSV_H
#define MQ_CSV_H

#include "../tensor/tensor.h"

/* One column asked for by columns=: by name (name != NULL) or by index
 * (negative counts from the end). */
typedef struct mq_csv_col {
  const char *name;
  size_t name_len;
  int64_t index;
} mq_csv_col;

typedef struct mq_csv_opts {
  const char *who;  /* prefixes messages: "load_csv" */
  const char *file; /* names the file in messages */
  char delim;
  bool header;
  mq_dtype dtype;                /* float32 or float64 */
  const mq_string *const *na;    /* cells that mean "missing" (masked out) */
  int nna;
  const mq_csv_col *cols;        /* NULL: every column */
  int ncols;
} mq_csv_opts;

typedef struct mq_csv_table {
  mq_tensor *x;       /* (rows, columns), masked: valid where the cell was a number */
  mq_string **names;  /* the selected columns' header names; NULL without a header */
  int ncols;
} mq_csv_table;

/* Parses [n] bytes of CSV (RFC 4180 quoting, CRLF or LF, an optional UTF-8
 * BOM; blank lines skipped). [p] is written: quoted fields are unescaped in
 * place. Every error names file:line:column. */
MQ_INTERNAL void mq_csv_parse(mq_state *S, uint8_t *p, size_t n, const mq_csv_opts *o,
                              mq_csv_table *out);

/* The text of [x] (1-D: one column; 2-D: rows x columns) as CSV: masked-out
 * cells empty, floats in the shortest form that reads back to the same
 * value, a header line of [names] if given (n of them, one per column).
 * Returns scratch memory and its length in *len. */
MQ_INTERNAL char *mq_csv_encode(mq_state *S, mq_tensor *x, const mq_string *const *names, int n,
                                char delim, size_t *len);

#endif
