/* test_csv.c - the CSV reader and writer (runtime/io/csv.h) and the quantile
 * of describe (runtime/print/summary.h).
 *
 * - tables whose values and masks are known by hand: line ends (LF, CRLF,
 *   a lone CR, none at the end), quoting, a trailing delimiter, spaces;
 * - every prefix of a tricky file (a truncated file) and 3000 random
 *   inputs from CSV's own alphabet and binary bytes parse or fail with a
 *   runtime error, never anything else (the ASan build checks the memory);
 *   whatever parses, written back by mq_csv_encode and parsed again, gives
 *   the same names, values (bitwise) and mask;
 * - an interrupt stops a parse, between rows and inside a long field;
 * - mq_quantile_sorted against numpy 1.24's np.quantile (method "linear").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/io/csv.h"
#include "../../runtime/print/summary.h"
#include "unit.h"

static const mq_string *na_list[4];

static mq_csv_opts opts(bool header) {
  mq_csv_opts o;
  memset(&o, 0, sizeof o);
  o.who = "test";
  o.file = "t.csv";
  o.delim = ',';
  o.header = header;
  o.tensor = true; /* the (rows, columns) float32 tensor */
  o.dtype = MQ_DT_F32;
  o.na = na_list;
  o.nna = 4;
  return o;
}

typedef struct parse_job {
  const char *text;
  size_t len;
  mq_csv_opts o;
  mq_csv_table t;
} parse_job;

static void run_parse(mq_state *S_, void *ud) {
  parse_job *j = ud;
  uint8_t *buf = mq_scratch(S_, j->len + 1);
  memcpy(buf, j->text, j->len);
  mq_csv_parse(S_, buf, j->len, &j->o, &j->t);
}

static masq_status parse(parse_job *j, const char *text, size_t len, bool header) {
  j->text = text;
  j->len = len;
  j->o = opts(header);
  return mq_protect(S, run_parse, j);
}

/* The table's entries as floats and validity bytes. */
static const float *values(const mq_csv_table *t) { return mq_tensor_data(t->x->mask ? mq_get_data(S, t->x) : t->x); }
static const uint8_t *valid(const mq_csv_table *t) { return mq_tensor_data(t->x->mask); }

static void check_table(const char *text, bool header, int64_t rows, int64_t cols,
                        const float *want, const char *mask, int line) {
  parse_job j;
  masq_status st = parse(&j, text, strlen(text), header);
  if (st != MASQ_OK) {
    failed++;
    printf("FAIL %s:%d: %s\n", __FILE__, line, S->err_message.data);
    return;
  }
  bool ok = j.t.x->shape[0] == rows && j.t.x->shape[1] == cols;
  for (int64_t k = 0; ok && k < rows * cols; k++) {
    ok = valid(&j.t)[k] == (mask[k] == '1');
    if (ok && mask[k] == '1') ok = values(&j.t)[k] == want[k] || (isnan(want[k]) && isnan(values(&j.t)[k]));
  }
  if (ok) passed++;
  else failed++, printf("FAIL %s:%d: table of %s\n", __FILE__, line, text);
}
#define TABLE(text, header, r, c, want, mask) check_table(text, header, r, c, want, mask, __LINE__)

static void test_tables(void) {
  static const float a[] = {1, 2, 3, 4, 5, 6};
  TABLE("a,b\n1,2\n3,4\n5,6\n", true, 3, 2, a, "111111");
  TABLE("a,b\r\n1,2\r\n3,4\r\n5,6", true, 3, 2, a, "111111");     /* CRLF, no final break */
  TABLE("a,b\r1,2\r3,4\r5,6\r", true, 3, 2, a, "111111");           /* lone CRs */
  TABLE("a,b\n\n1,2\n\r\n3,4\n5,6\n\n\n", true, 3, 2, a, "111111"); /* blank lines */
  TABLE("1,2\n3,4\n5,6\n", false, 3, 2, a, "111111");
  TABLE("a,b\n 1 ,\t2\n\"3\",\"4\"\n5, 6 \n", true, 3, 2, a, "111111");
  TABLE("a,b\n1,\n,4\nNA,null\n", true, 3, 2, a, "100100");
  TABLE("a,b\n1,2\n3,", true, 2, 2, a, "1110"); /* a trailing delimiter: one more, empty field */
  TABLE("\xef\xbb\xbf\"a\nb\",\"c\"\"\"\n1,2\n", true, 1, 2, a, "11");
  static const float inf[] = {INFINITY, -INFINITY, NAN};
  TABLE("x,y,z\ninf,-Infinity,nan\n", true, 1, 3, inf, "111");
}

static void expect_fail(const char *text, const char *want, int line) {
  parse_job j;
  masq_status st = parse(&j, text, strlen(text), true);
  if (st == MASQ_ERR_RUNTIME && strstr(S->err_message.data, want)) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s:%d: status %d, %s\n  want: %s\n", __FILE__, line, (int)st,
         st == MASQ_OK ? "(no error)" : S->err_message.data, want);
}
#define FAILS(text, want) expect_fail(text, want, __LINE__)

static void test_errors(void) {
  FAILS("a,b\n1,2\n3\n", "t.csv:3:2: this row has 1 field, but the header has 2");
  FAILS("a,b\n1,2,3\n", "t.csv:2:5: this row has more fields than the header's 2");
  FAILS("a,b\n1,\"2\n\n", "t.csv:2:3: unterminated quoted field");
  FAILS("\"a\nb\",c\n1,\"1\"z\n", "t.csv:3:6: unexpected character after a closing quote");
  FAILS("a\n1e\n", "t.csv:2:1: \"1e\" is not a number");
  FAILS("a\n--1\n", "\"--1\" is not a number");
  FAILS("a\nnan(1)\n", "\"nan(1)\" is not a number");
  FAILS("", "t.csv is empty");
  FAILS("\xef\xbb\xbf\n\r\n", "t.csv is empty");
}

/* --- hostile inputs and the round trip ------------------------------------------- */

typedef struct encode_job {
  mq_csv_table *t;
  char *text;
  size_t len;
} encode_job;

static void run_encode(mq_state *S_, void *ud) {
  encode_job *e = ud;
  e->text = mq_csv_encode(S_, e->t->x, (const mq_string *const *)e->t->names, e->t->ncols, ',',
                          &e->len);
}

static bool same_table(const mq_csv_table *a, const mq_csv_table *b) {
  if (a->x->shape[0] != b->x->shape[0] || a->x->shape[1] != b->x->shape[1]) return false;
  for (int j = 0; j < a->ncols; j++)
    if (a->names[j]->len != b->names[j]->len ||
        memcmp(a->names[j]->chars, b->names[j]->chars, a->names[j]->len) != 0)
      return false;
  int64_t n = a->x->numel;
  if (memcmp(valid(a), valid(b), (size_t)n) != 0) return false;
  for (int64_t k = 0; k < n; k++)
    if (valid(a)[k] && memcmp(&values(a)[k], &values(b)[k], sizeof(float)) != 0 &&
        !(isnan(values(a)[k]) && isnan(values(b)[k])))
      return false;
  return true;
}

/* The same in a table's columns: what parses as a table is written back by
 * mq_csv_encode_columns and must parse to the same kinds, dtypes, masks
 * and values (bitwise), text included. */
static void run_parse_table(mq_state *S_, void *ud) {
  parse_job *j = ud;
  uint8_t *buf = mq_scratch(S_, j->len + 1);
  memcpy(buf, j->text, j->len);
  j->o.tensor = false;
  j->o.dtype = MQ_DT__ALL;
  j->o.comment = '#';
  mq_csv_parse(S_, buf, j->len, &j->o, &j->t);
}

static void run_encode_table(mq_state *S_, void *ud) {
  encode_job *e = ud;
  e->text = mq_csv_encode_columns(S_, e->t->cols, e->t->ncols, e->t->rows, true, ',', &e->len);
}

static bool same_columns(const mq_csv_table *a, const mq_csv_table *b) {
  if (a->ncols != b->ncols || a->rows != b->rows) return false;
  for (int j = 0; j < a->ncols; j++) {
    const mq_csv_column *x = &a->cols[j], *y = &b->cols[j];
    if (x->kind != y->kind || x->name->len != y->name->len ||
        memcmp(x->name->chars, y->name->chars, x->name->len) != 0)
      return false;
    if (x->kind == MQ_CSV_TEXT) {
      for (int i = 0; i < x->text->len; i++) {
        mq_value u = x->text->items[i], v = y->text->items[i];
        if (u.type != v.type) return false;
        if (u.type != MQ_NONE && (mq_as_string(u)->len != mq_as_string(v)->len ||
                                  memcmp(mq_as_string(u)->chars, mq_as_string(v)->chars,
                                         mq_as_string(u)->len) != 0))
          return false;
      }
      continue;
    }
    if (x->x->dtype != y->x->dtype) return false;
    const uint8_t *mx = mq_tensor_data(x->x->mask), *my = mq_tensor_data(y->x->mask);
    size_t es = mq_dtype_size((mq_dtype)x->x->dtype);
    for (int64_t i = 0; i < a->rows; i++) {
      if (mx[i] != my[i]) return false;
      const char *dx = (const char *)mq_tensor_data(x->x) + i * (int64_t)es;
      const char *dy = (const char *)mq_tensor_data(y->x) + i * (int64_t)es;
      bool nan = es == 8 && x->x->dtype == MQ_DT_F64 && isnan(*(const double *)dx) &&
                 isnan(*(const double *)dy);
      if (mx[i] && !nan && memcmp(dx, dy, es) != 0) return false;
    }
  }
  return true;
}

/* One way through the reader and the writer: the tensor or the table. */
typedef struct trip {
  void (*parse)(mq_state *S_, void *ud);
  void (*encode)(mq_state *S_, void *ud);
  bool (*same)(const mq_csv_table *a, const mq_csv_table *b);
} trip;
static const trip as_tensor = {run_parse, run_encode, same_table};
static const trip as_table = {run_parse_table, run_encode_table, same_columns};

/* Parses [text]; an error must be a runtime error. What parses must come
 * back the same through the writer. */
static void hostile(const char *text, size_t len, int *parsed, const trip *tr) {
  size_t mark = mq_pool_mark(S);
  parse_job j = {text, len, opts(true), {0}};
  masq_status st = mq_protect(S, tr->parse, &j);
  if (st != MASQ_OK) {
    if (st == MASQ_ERR_RUNTIME) passed++;
    else failed++, printf("FAIL hostile input: status %d\n", (int)st);
    mq_pool_drain(S, mark);
    return;
  }
  (*parsed)++;
  encode_job e = {&j.t, NULL, 0};
  parse_job k = {NULL, 0, opts(true), {0}};
  if (mq_protect(S, tr->encode, &e) == MASQ_OK) {
    k.text = e.text;
    k.len = e.len;
  }
  if (!k.text || mq_protect(S, tr->parse, &k) != MASQ_OK) {
    failed++;
    printf("FAIL round trip: %s\n", S->err_message.data);
  } else if (!tr->same(&j.t, &k.t)) {
    failed++;
    printf("FAIL round trip changed the table of %.*s\nwritten: %.*s\n", (int)len, text,
           (int)e.len, e.text);
  } else {
    passed++;
  }
  mq_pool_drain(S, mark);
}

static void test_hostile(void) {
  static const char tricky[] =
      "\xef\xbb\xbf\"a,\"\"x\"\"\",b\r\n1.5,\"2\r\n\"\r\n,NA\n\"\"\"\",3\n-0,41728688\n";
  int parsed = 0;
  for (size_t n = 0; n <= sizeof tricky - 1; n++) hostile(tricky, n, &parsed, &as_tensor);
  static const char typed[] =
      "# a comment\nd,t,n,s\n2024-02-29,2024-02-29 18:30,9007199254740993,\" x\"\n"
      ",1969-12-31T23:59:59,-5,\"a,\"\"b\"\"\"\n1970-01-01,,1.5,2024-13-01 # end\n";
  int tparsed = 0;
  for (size_t n = 0; n <= sizeof typed - 1; n++) hostile(typed, n, &tparsed, &as_table);
  static const char alphabet[] = ",,,\"\"\n\r 0123456789.e-+NAnulix\t\xef\xbb\xbf\x80\0-:T#";
  uint64_t r = 18;
  char buf[96];
  for (int round = 0; round < 3000; round++) {
    r = r * 6364136223846793005u + 1442695040888963407u;
    size_t len = (size_t)(r >> 33) % sizeof buf;
    for (size_t k = 0; k < len; k++) {
      r = r * 6364136223846793005u + 1442695040888963407u;
      buf[k] = round % 10 == 9 ? (char)(r >> 56) : alphabet[(r >> 33) % (sizeof alphabet - 1)];
    }
    hostile(buf, len, &parsed, &as_tensor);
    hostile(buf, len, &tparsed, &as_table);
  }
  CHECK(tparsed > 300);
  /* the alphabet makes tables often enough that the round trip is tested */
  CHECK(parsed > 300);
}

/* An interrupt stops a parse: at the next row, and inside a long field. */
static void test_interrupt(void) {
  parse_job j;
  S->interrupted = 1;
  CHECK(parse(&j, "a\n1\n2\n", 6, true) == MASQ_ERR_INTERRUPTED);
  size_t n = 200000;
  char *big = mq_scratch(S, n);
  memset(big, 'x', n);
  big[0] = '"';
  big[n - 1] = '"';
  S->interrupted = 1;
  CHECK(parse(&j, big, n, true) == MASQ_ERR_INTERRUPTED);
  CHECK(parse(&j, big, n, true) == MASQ_OK); /* the flag was taken */
  big[0] = big[n - 1] = 'x'; /* unquoted */
  S->interrupted = 1;
  CHECK(parse(&j, big, n, true) == MASQ_ERR_INTERRUPTED);
  S->interrupted = 0;
}

/* --- quantiles ---------------------------------------------------------------------- */

static void test_quantile(void) {
  /* np.quantile(v, [0, .1, .25, .5, .75, .9, 1]) with numpy 1.24 */
  static const double v[] = {-3.5, 0.1, 0.2, 2.0, 7.25, 100.0};
  static const double q[] = {0, 0.1, 0.25, 0.5, 0.75, 0.9, 1};
  static const double want[] = {-3.5, -1.7, 0.125, 1.1, 5.9375, 53.625, 100.0};
  for (int k = 0; k < 7; k++) CHECK(mq_quantile_sorted(v, 6, q[k]) == want[k]);
  static const double one[] = {4.0};
  CHECK(mq_quantile_sorted(one, 1, 0.25) == 4.0);
  CHECK(mq_quantile_sorted(one, 1, 1.0) == 4.0);
}

static void all_tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  static const char *const na[] = {"", "NA", "NaN", "null"};
  for (int k = 0; k < 4; k++) {
    mq_string *s = mq_string_new(S, na[k], strlen(na[k]));
    mq_retain(mq_objv(s));
    na_list[k] = s;
  }
  test_tables();
  test_errors();
  test_hostile();
  test_interrupt();
  test_quantile();
  for (int k = 0; k < 4; k++) mq_release(S, mq_objv((mq_string *)na_list[k]));
}

int main(void) { return unit_main("test_csv", all_tests); }
