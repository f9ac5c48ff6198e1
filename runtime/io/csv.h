/* csv.h - comma-separated tables <-> masked float tensors (csv.c).
 *
 * Like npy.h, everything works on bytes in memory: load_csv reads the file
 * whole (mq_file_read) and parses the bytes, save_csv builds the text in
 * scratch and writes it in one go, so an error never strands a FILE* and
 * every buffer dies with the pool. The user's account is docs/IO.md. */
#ifndef MQ_CSV_H
#define MQ_CSV_H

#include "../tensor/tensor.h"

/* One column asked for by usecols=: by name (name != NULL) or by index
 * (negative counts from the end). */
typedef struct mq_csv_col {
  const char *name;
  size_t name_len;
  int64_t index;
} mq_csv_col;

/* What a column of a table holds: numbers (int64 or float), ISO dates as
 * int64 days since 1970-01-01, ISO datetimes as int64 seconds since
 * 1970-01-01T00:00:00, or text (a list of strings, none where missing). */
typedef enum mq_csv_kind { MQ_CSV_NUM, MQ_CSV_DATE, MQ_CSV_DATETIME, MQ_CSV_TEXT } mq_csv_kind;

typedef struct mq_csv_opts {
  const char *who;  /* prefixes messages: "load_csv" */
  const char *file; /* names the file in messages */
  char delim;
  char comment;     /* 0: none; else the rest of a line from it is ignored */
  bool header;
  bool tensor;      /* the old result: one (rows, columns) float tensor */
  mq_dtype dtype;   /* MQ_DT__ALL: inferred per column; else every column is numbers of it */
  const mq_string *const *na;    /* cells that mean "missing" (masked out) */
  int nna;
  const mq_csv_col *cols;        /* NULL: every column */
  int ncols;
  int64_t skip_first;            /* skiprows=n: the first n lines */
  const uint8_t *skip_line;      /* skiprows=[...]: skip_line[k] skips line k (0-based) */
  int64_t nskip_line;
} mq_csv_opts;

/* One column of a table: a 1-D masked tensor (x) or, for text, a list of
 * strings with none where the cell was missing (text). */
typedef struct mq_csv_column {
  mq_string *name; /* NULL without a header */
  uint8_t kind;    /* mq_csv_kind */
  mq_tensor *x;
  mq_list *text;
} mq_csv_column;

typedef struct mq_csv_table {
  mq_tensor *x;       /* opts.tensor: (rows, columns), masked where a cell was missing */
  mq_string **names;  /* the selected columns' header names; NULL without a header */
  int ncols;
  int64_t rows;
  mq_csv_column *cols; /* !opts.tensor: ncols of them */
} mq_csv_table;

/* Parses [n] bytes of CSV (RFC 4180 quoting, CRLF or LF, an optional UTF-8
 * BOM; blank and comment lines skipped). [p] is not written. Every error
 * names file:line:column. */
MQ_INTERNAL void mq_csv_parse(mq_state *S, const uint8_t *p, size_t n, const mq_csv_opts *o,
                              mq_csv_table *out);

/* Days since 1970-01-01 of a proleptic Gregorian date. */
MQ_INTERNAL int64_t mq_days_from_civil(int64_t y, int m, int d);
/* A date column's entry (days) or a datetime's (seconds, [datetime]) as
 * its calendar parts; the time is 0 for a date. */
typedef struct mq_when {
  int64_t days, year;
  int month, day, hour, minute, second;
} mq_when;
MQ_INTERNAL mq_when mq_when_of(int64_t v, bool datetime);
/* A date or datetime cell as text ("1990-01-01", "1990-01-01 12:30:00")
 * into [out] (at least 40 bytes); returns its length. */
MQ_INTERNAL int mq_csv_format_when(char *out, size_t cap, int64_t v, bool datetime);
/* A float as the shortest text that reads back as it (in float32's
 * precision when [f32]). */
MQ_INTERNAL int mq_csv_shortest(char *t, size_t cap, double v, bool f32);

/* The text of the columns [cols] (each of [rows] entries) as CSV, a header
 * line of their names first if [header]: numbers as save_csv writes them,
 * dates and datetimes in ISO form, text quoted where a reader would split
 * it, missing cells empty. Returns scratch memory and its length. */
MQ_INTERNAL char *mq_csv_encode_columns(mq_state *S, const mq_csv_column *cols, int ncols,
                                        int64_t rows, bool header, char delim, size_t *len);

/* The text of [x] (1-D: one column; 2-D: rows x columns) as CSV: masked-out
 * cells empty, floats in the shortest form that reads back to the same
 * value, a header line of [names] if given (n of them, one per column).
 * Returns scratch memory and its length in *len. */
MQ_INTERNAL char *mq_csv_encode(mq_state *S, mq_tensor *x, const mq_string *const *names, int n,
                                char delim, size_t *len);

#endif
