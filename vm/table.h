/* table.h - tables: named columns of one length, each a 1-D masked tensor
 * (numbers; ISO dates as int64 days, datetimes as int64 seconds since
 * 1970-01-01) or a text column (strings, none where missing).
 *
 * What load_csv returns (docs/IO.md). A table is a value kind of its own
 * rather than a dict: it indexes by rows as well as by names (t[0:5],
 * t[t["co2"] > 300]), its len is its rows, it prints as an aligned table,
 * and a missing name is an error that lists the names and suggests the
 * closest. Columns are stored as given (tensors are values); a text
 * column is copied in and out, so no list the table holds is seen by a
 * script, and a table holds no cycle (it is not a container of the cycle
 * collector). t["name"] = column adds or replaces a column in place, as
 * d[key] = v does a dict's entry. */
#ifndef MQ_TABLE_H
#define MQ_TABLE_H

#include "../runtime/io/csv.h"

typedef struct mq_table {
  mq_obj hdr;
  int ncols, cap;
  int64_t nrows;
  mq_string **names; /* retained */
  mq_value *cols;    /* a 1-D tensor of nrows entries, or a list of them (text) */
  uint8_t *kinds;    /* mq_csv_kind */
  bool labelled;     /* column 0 (text) names the rows: printed in place of their numbers */
} mq_table;

static inline mq_table *mq_as_table(mq_value v) { return (mq_table *)v.as.o; }

/* A new empty table (no columns, no rows), owned by the pool. */
MQ_INTERNAL mq_table *mq_table_new(mq_state *S);
/* Adds column [name] (or replaces the one of that name): a 1-D tensor, a
 * list of numbers (made a tensor), or a list of strings and none (copied;
 * kind MQ_CSV_TEXT); of the table's row count unless it is the only one.
 * [who] prefixes errors. */
MQ_INTERNAL void mq_table_set(mq_state *S, mq_table *t, const mq_string *name, mq_value col,
                              mq_csv_kind kind, const char *who);
/* Adds column [name], which the table does not have: a 1-D tensor, or a
 * list of strings and none (kind MQ_CSV_TEXT) that no script holds (it is
 * kept, not copied: tables share their text lists and never change one).
 * For columns taken from another table, or made by the library. */
MQ_INTERNAL void mq_table_add(mq_state *S, mq_table *t, const mq_string *name, mq_value col,
                              mq_csv_kind kind);
/* The index of column [name]; an error naming the columns there are and
 * the closest to [name] if there is none. */
MQ_INTERNAL int mq_table_find(mq_state *S, const mq_table *t, mq_value name, const char *who);
/* The index of the column named by [len] bytes at [s], or -1. */
MQ_INTERNAL int mq_table_find_name(const mq_table *t, const char *s, size_t len);
/* Column [j] as a value: its tensor, or a new list of its text. */
MQ_INTERNAL mq_value mq_table_column(mq_state *S, const mq_table *t, int j);
/* A new table of the rows at [idx] (a plain int64 1-D tensor of valid
 * positions), in that order. */
MQ_INTERNAL mq_table *mq_table_take(mq_state *S, const mq_table *t, mq_tensor *idx);
/* t[key]: a column by name, a table of the columns of a list of names, or
 * the rows of a slice [start, start + len*step), a bool row mask (masked
 * rows are dropped) or an int64 tensor of positions. */
MQ_INTERNAL mq_value mq_table_index(mq_state *S, const mq_table *t, mq_value key);
MQ_INTERNAL mq_table *mq_table_slice(mq_state *S, const mq_table *t, int64_t start,
                                     int64_t step, int64_t len);
/* The numeric, date and datetime columns side by side: a (rows, columns)
 * masked tensor of their promoted dtype; [names] (may be NULL) gets their
 * names and *n their count. Text columns are left out. */
MQ_INTERNAL mq_tensor *mq_table_to_tensor(mq_state *S, const mq_table *t, mq_string ***names,
                                          int *n);
/* Which cells of [t] hold a value, text columns included: a (rows,
 * columns) float32 tensor of zeros masked where a cell is missing, for
 * show_mask; *names gets a new list of the column names. */
MQ_INTERNAL mq_tensor *mq_table_validity(mq_state *S, const mq_table *t, mq_list **names);
/* "[rows x columns] name, name, ..." on one line: a table at a glance. */
MQ_INTERNAL void mq_table_shape(mq_state *S, mq_buf *b, const mq_table *t);
/* Sets the hooks of the table kind (free, print). */
MQ_INTERNAL void mq_table_init_kind(mq_state *S);

#endif
