/* test_host.c - the host and scripts talking: globals, masq_call, and host
 * functions (arguments, defaults, results, errors as scripts see them,
 * calling back into masq). */
#include <stdint.h>

#include "check.h"

/* --- globals ------------------------------------------------------------------ */

static void test_globals(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  masq_tensor *t, *g;
  CHECK_OK(M, masq_tensor_scalar(M, 2.5, &t));
  CHECK_OK(M, masq_set_global(M, "w", t));
  CHECK_OK(M, masq_get_global(M, "w", &g));
  CHECK(g == t); /* the same immutable tensor; a new reference */
  CHECK_OK(M, masq_tensor_release(M, g));
  CHECK_OK(M, masq_tensor_release(M, t));

  CHECK_OK(M, masq_set_int(M, "n", 3));
  CHECK_OK(M, masq_set_number(M, "scale", 0.5));
  CHECK(strcmp(run(M, &c, "print(type(n), type(scale), shape(zeros(n)))"),
               "int float [3]\n") == 0);
  double v;
  CHECK_OK(M, masq_get_number(M, "scale", &v));
  CHECK(v == 0.5);
  CHECK_OK(M, eval(M, "flag = n > 2\none = sum(ones(4)) * w\nlst = [1, 2]\ns = \"text\""));
  CHECK_OK(M, masq_get_number(M, "flag", &v));
  CHECK(v == 1);
  CHECK_OK(M, masq_get_number(M, "one", &v));
  CHECK(v == 10);
  CHECK_ERR(M, masq_get_number(M, "s", &v), MASQ_ERR_USAGE, "global 's' is a string");
  CHECK_ERR(M, masq_get_number(M, "nope", &v), MASQ_ERR_USAGE, "no global named 'nope'");
  CHECK_ERR(M, masq_get_number(M, "n", NULL), MASQ_ERR_USAGE, "out is NULL");

  /* Numbers and lists come back as tensors. */
  masq_tensor_desc info;
  CHECK_OK(M, masq_get_global(M, "scale", &g));
  CHECK_OK(M, masq_tensor_info(M, g, &info));
  CHECK(info.dtype == MASQ_FLOAT64 && info.ndim == 0 && *(const double *)info.data == 0.5);
  CHECK_OK(M, masq_tensor_release(M, g));
  CHECK_OK(M, masq_get_global(M, "n", &g));
  CHECK_OK(M, masq_tensor_info(M, g, &info));
  CHECK(info.dtype == MASQ_INT64 && *(const int64_t *)info.data == 3);
  CHECK_OK(M, masq_tensor_release(M, g));
  CHECK_OK(M, masq_get_global(M, "lst", &g));
  CHECK_OK(M, masq_tensor_info(M, g, &info));
  CHECK(info.ndim == 1 && info.shape[0] == 2);
  CHECK_OK(M, masq_tensor_release(M, g));
  CHECK_ERR(M, masq_get_global(M, "s", &g), MASQ_ERR_USAGE, "global 's' is a string");
  CHECK(g == NULL);
  CHECK_ERR(M, masq_get_global(M, "print", &g), MASQ_ERR_USAGE, "function");
  CHECK_OK(M, eval(M, "rag = [ones(2), 1]"));
  CHECK_ERR(M, masq_get_global(M, "rag", &g), MASQ_ERR_USAGE, "does not make a tensor");

  /* NULL binds none, which comes back as NULL. */
  CHECK_OK(M, masq_set_global(M, "w", NULL));
  CHECK(strcmp(run(M, &c, "print(w)"), "none\n") == 0);
  g = (masq_tensor *)&v;
  CHECK_OK(M, masq_get_global(M, "w", &g));
  CHECK(g == NULL);

  /* Strings and lists of strings (copied: the host's buffers may go). */
  char word[] = "masked";
  const char *words[] = {"a", "", "two words"};
  CHECK_OK(M, masq_set_string(M, "label", word));
  CHECK_OK(M, masq_set_strings(M, "names", 3, words));
  CHECK_OK(M, masq_set_strings(M, "none_given", 0, NULL));
  word[0] = 'X';
  CHECK(strcmp(run(M, &c, "print(label + \"!\", len(names), names, none_given)"),
               "masked! 3 [\"a\", \"\", \"two words\"] []\n") == 0);
  CHECK_ERR(M, masq_get_global(M, "label", &g), MASQ_ERR_USAGE, "string");
  CHECK_ERR(M, masq_set_string(M, "s", NULL), MASQ_ERR_USAGE, "s is NULL");
  CHECK_ERR(M, masq_set_strings(M, "l", 2, NULL), MASQ_ERR_USAGE, "strs is NULL");
  CHECK_ERR(M, masq_set_strings(M, "l", -1, words), MASQ_ERR_USAGE, "negative");
  const char *holes[] = {"ok", NULL};
  CHECK_ERR(M, masq_set_strings(M, "l", 2, holes), MASQ_ERR_USAGE, "strs[1] is NULL");
  CHECK_ERR(M, masq_set_string(M, "if", "x"), MASQ_ERR_USAGE, "keyword");
  CHECK(strcmp(run(M, &c, "print(label)"), "masked\n") == 0); /* failed calls changed nothing */
  /* ... and back out, snprintf-style */
  char out[8];
  size_t len = 0;
  CHECK_OK(M, eval(M, "greeting = format(\"hello, {}\", label)"));
  CHECK_OK(M, masq_get_string(M, "greeting", NULL, 0, &len));
  CHECK(len == 13);
  CHECK_OK(M, masq_get_string(M, "greeting", out, sizeof out, &len));
  CHECK(len == 13 && strcmp(out, "hello, ") == 0);
  char whole[14];
  CHECK_OK(M, masq_get_string(M, "greeting", whole, sizeof whole, NULL));
  CHECK(strcmp(whole, "hello, masked") == 0);
  CHECK_ERR(M, masq_get_string(M, "names", out, sizeof out, &len), MASQ_ERR_USAGE, "a list, not a string");
  CHECK_ERR(M, masq_get_string(M, "no_such", out, sizeof out, &len), MASQ_ERR_USAGE, "no global named");
  CHECK_ERR(M, masq_get_string(M, "label", NULL, 4, &len), MASQ_ERR_USAGE, "buf is NULL");

  /* Names a script could not write. */
  CHECK_ERR(M, masq_set_int(M, "2x", 1), MASQ_ERR_USAGE, "not a name a script can use");
  CHECK_ERR(M, masq_set_int(M, "a-b", 1), MASQ_ERR_USAGE, "\"a-b\"");
  CHECK_ERR(M, masq_set_int(M, "while", 1), MASQ_ERR_USAGE, "keyword");
  CHECK_ERR(M, masq_set_int(M, "global", 1), MASQ_ERR_USAGE, "keyword");
  CHECK_ERR(M, masq_set_int(M, "", 1), MASQ_ERR_USAGE, "not a name");
  CHECK_ERR(M, masq_set_int(M, NULL, 1), MASQ_ERR_USAGE, "name is NULL");
  CHECK_ERR(M, masq_get_global(M, "x", NULL), MASQ_ERR_USAGE, "out is NULL");
  masq_close(M);
}

/* Identities: the same object through two globals, sharing inside a list,
 * and none for values that have none. */
static void test_identity(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  uint64_t a = 1, b = 2;
  CHECK_OK(M, eval(M, "l = [\"x\"]\nm = l\nn = [\"x\"]\npair = [l, l]\np0 = pair[0]\np1 = pair[1]\n"
                      "d = {}\nf = print\nk = 3\nz = none"));
  CHECK_OK(M, masq_get_identity(M, "l", &a));
  CHECK_OK(M, masq_get_identity(M, "m", &b));
  CHECK(a != 0 && a == b);
  CHECK_OK(M, masq_get_identity(M, "n", &b));
  CHECK(b != 0 && a != b); /* equal, but another list */
  CHECK_OK(M, masq_get_identity(M, "p0", &a));
  CHECK_OK(M, masq_get_identity(M, "p1", &b));
  CHECK(a == b);
  CHECK_OK(M, masq_get_identity(M, "d", &a));
  CHECK_OK(M, masq_get_identity(M, "f", &b));
  CHECK(a != 0 && b != 0 && a != b);
  CHECK_OK(M, masq_get_identity(M, "k", &a));
  CHECK_OK(M, masq_get_identity(M, "z", &b));
  CHECK(a == 0 && b == 0);
  a = 7;
  CHECK_ERR(M, masq_get_identity(M, "nope", &a), MASQ_ERR_USAGE, "no global named 'nope'");
  CHECK(a == 0);
  CHECK_ERR(M, masq_get_identity(M, "l", NULL), MASQ_ERR_USAGE, "id is NULL");
  CHECK(masq_get_identity(NULL, "l", &a) == MASQ_ERR_USAGE);
  masq_close(M);
}

/* --- masq_call ----------------------------------------------------------------- */

static void test_call(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK_OK(M, eval(M, "fn add(a, b) = a + b\n"
                      "fn nothing(x) { }\n"
                      "fn count(x) = numel(x)\n"
                      "fn name(x) = \"a string\"\n"
                      "fn fails(x) {\n"
                      "  y = x * 2\n"
                      "  return y + [1, 2, 3]\n"
                      "}\n"
                      "fn outer(x) = fails(x)\n"
                      "fn spin(x) { while true { } }\n"
                      "not_fn = 3"));
  float a[2] = {1, 2}, b[2] = {10, 20};
  int64_t shape[1] = {2};
  masq_tensor_desc da = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = a};
  masq_tensor_desc db = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = b};
  masq_tensor *ta, *tb, *r;
  CHECK_OK(M, masq_tensor_wrap(M, &da, &ta));
  CHECK_OK(M, masq_tensor_wrap(M, &db, &tb));
  masq_tensor *args[2] = {ta, tb};
  CHECK_OK(M, masq_call(M, "add", 2, args, &r));
  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, r, &info));
  CHECK(((const float *)info.data)[1] == 22);
  CHECK_OK(M, masq_tensor_release(M, r));
  /* Builtins too. */
  CHECK_OK(M, masq_call(M, "sum", 1, args, &r));
  double v;
  CHECK_OK(M, masq_tensor_item(M, r, &v));
  CHECK(v == 3);
  CHECK_OK(M, masq_tensor_release(M, r));
  /* none comes back as NULL; a number as a 0-d tensor; NULL discards. */
  r = ta;
  CHECK_OK(M, masq_call(M, "nothing", 1, args, &r));
  CHECK(r == NULL);
  CHECK_OK(M, masq_call(M, "count", 1, args, &r));
  CHECK_OK(M, masq_tensor_item(M, r, &v));
  CHECK(v == 2);
  CHECK_OK(M, masq_tensor_release(M, r));
  CHECK_OK(M, masq_call(M, "count", 1, args, NULL));
  CHECK_ERR(M, masq_call(M, "name", 1, args, &r), MASQ_ERR_USAGE,
            "the result of name() is a string");

  /* Errors: from the binder, from inside the function (located, with the
   * calls that led there), and from the host's side. */
  CHECK_ERR(M, masq_call(M, "add", 1, args, &r), MASQ_ERR_RUNTIME, "add() missing argument 'b'");
  CHECK(masq_last_error(M)->line == 0);
  CHECK_ERR(M, masq_call(M, "outer", 1, args, &r), MASQ_ERR_RUNTIME, "cannot be broadcast");
  const masq_error *e = masq_last_error(M);
  CHECK(e->line == 7 && e->column == 10 && strcmp(e->chunkname, "<test>") == 0);
  CHECK(strstr(e->rendered, "<test>:7:10: error:") == e->rendered);
  CHECK(strstr(e->rendered, "in fails(), called from here") != NULL);
  CHECK(r == NULL);
  CHECK_ERR(M, masq_call(M, "missing", 0, NULL, &r), MASQ_ERR_USAGE, "no function named 'missing'");
  CHECK_ERR(M, masq_call(M, "not_fn", 0, NULL, &r), MASQ_ERR_USAGE, "'not_fn' is an int");
  CHECK_ERR(M, masq_call(M, NULL, 0, NULL, &r), MASQ_ERR_USAGE, "fname is NULL");
  CHECK_ERR(M, masq_call(M, "add", -1, args, &r), MASQ_ERR_USAGE, "argc is -1");
  CHECK_ERR(M, masq_call(M, "add", 256, args, &r), MASQ_ERR_USAGE, "0 to 255");
  CHECK_ERR(M, masq_call(M, "add", 2, NULL, &r), MASQ_ERR_USAGE, "argv is NULL");
  masq_tensor *bad[2] = {ta, NULL};
  CHECK_ERR(M, masq_call(M, "add", 2, bad, &r), MASQ_ERR_USAGE, "argv[1] is NULL");
  bad[1] = (masq_tensor *)b;
  CHECK_ERR(M, masq_call(M, "add", 2, bad, &r), MASQ_ERR_USAGE, "argv[1] is not a tensor handle");
  /* The state still works. */
  CHECK_OK(M, masq_call(M, "add", 2, args, NULL));
  CHECK_OK(M, masq_tensor_release(M, ta));
  CHECK_OK(M, masq_tensor_release(M, tb));
  masq_close(M);
}

/* --- host functions ------------------------------------------------------------ */

/* Records what a host function received. */
typedef struct seen {
  int calls, argc;
  int null_args;
  masq_dtype dtypes[8];
  int ndims[8];
  double values[8];
} seen;

static masq_status record(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                          masq_tensor **result) {
  seen *s = ud;
  s->calls++;
  s->argc = argc;
  s->null_args = 0;
  for (int i = 0; i < argc && i < 8; i++) {
    masq_tensor_desc d;
    if (!argv[i]) {
      s->null_args++;
      s->ndims[i] = -1;
      continue;
    }
    masq_status st = masq_tensor_info(M, argv[i], &d);
    if (st != MASQ_OK) return st;
    s->dtypes[i] = d.dtype;
    s->ndims[i] = d.ndim;
    s->values[i] = -1;
    if (d.ndim == 0) masq_tensor_item(M, argv[i], &s->values[i]);
  }
  return masq_tensor_scalar(M, argc, result);
}

static void test_host_arguments(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  seen s = {0};
  CHECK_OK(M, masq_register(M, "nargs", record, &s, "counts its arguments"));
  CHECK(strcmp(run(M, &c, "print(nargs())"), "0.0\n") == 0 ||
        strcmp(run(M, &c, "print(nargs())"), "0\n") == 0 || s.argc == 0);
  CHECK(s.argc == 0);
  CHECK_OK(M, eval(M, "r = nargs(1, 2.5, true, none, [1, 2], ones(2, 3))"));
  CHECK(s.argc == 6 && s.null_args == 1);
  CHECK(s.dtypes[0] == MASQ_INT64 && s.ndims[0] == 0 && s.values[0] == 1);
  CHECK(s.dtypes[1] == MASQ_FLOAT64 && s.values[1] == 2.5); /* full precision */
  CHECK(s.dtypes[2] == MASQ_BOOL && s.values[2] == 1);
  CHECK(s.ndims[3] == -1);
  CHECK(s.dtypes[4] == MASQ_INT64 && s.ndims[4] == 1);
  CHECK(s.dtypes[5] == MASQ_FLOAT32 && s.ndims[5] == 2);
  double v;
  CHECK_OK(M, masq_get_number(M, "r", &v));
  CHECK(v == 6);
  /* A number arrives weak: the host handing it back does not widen. */
  CHECK_OK(M, eval(M, "fn echo_back(x) = x\n"));
  CHECK_ERR(M, eval(M, "nargs(\"text\")"), MASQ_ERR_RUNTIME,
            "nargs(): argument 1 is a string, not a tensor or a number");
  CHECK_ERR(M, eval(M, "nargs(x=1)"), MASQ_ERR_RUNTIME, "no parameter named 'x'");

  /* A signature: arity, keywords and defaults are checked before the call. */
  CHECK_OK(M, masq_register(M, "clip(x, lo=0, hi=none, *rest)", record, &s, NULL));
  CHECK_OK(M, eval(M, "clip(ones(3), hi=2)"));
  CHECK(s.argc == 3 && s.ndims[0] == 1 && s.dtypes[1] == MASQ_INT64 && s.values[1] == 0);
  CHECK(s.dtypes[2] == MASQ_INT64 && s.values[2] == 2);
  CHECK_OK(M, eval(M, "clip(ones(3))"));
  CHECK(s.argc == 3 && s.null_args == 1 && s.ndims[2] == -1);
  CHECK_OK(M, eval(M, "clip(1, 2, 3, 4, 5)")); /* rest expanded in place */
  CHECK(s.argc == 5 && s.values[4] == 5);
  int before = s.calls;
  CHECK_ERR(M, eval(M, "clip()"), MASQ_ERR_RUNTIME, "clip() missing argument 'x'");
  CHECK_ERR(M, eval(M, "clip(1, lo=1, lo=2)"), MASQ_ERR_SYNTAX, "repeated");
  CHECK(s.calls == before);
  CHECK(strcmp(masq_doc(M, "clip"), "clip(x, lo=0, hi=none, *rest)") == 0);
  CHECK(strcmp(masq_doc(M, "nargs"), "nargs(*args) -- counts its arguments") == 0);
  masq_close(M);
}

/* Counts the arguments after the first that are the very tensor the first
 * one is (in *ud). */
static masq_status count_same(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                              masq_tensor **result) {
  int *same = ud;
  *same = 0;
  for (int i = 1; i < argc; i++) *same += argv[0] && argv[i] == argv[0];
  return MASQ_OK;
}

/* A list passed many times in one call is made a tensor once: the host gets
 * that one tensor each time, as for a tensor passed many times. 200
 * occurrences of a list of 250 000 floats (1 MB as a tensor) took 200 MB
 * before, past the 64 MB limit; now 1 MB. Both through plain parameters and
 * a *rest parameter; distinct lists stay distinct tensors. */
static void test_host_shared_arguments(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = 64 << 20;
  masq_state *M = masq_open(&cfg);
  int same = -1;
  CHECK_OK(M, masq_register(M, "same", count_same, &same, NULL));
  CHECK_OK(M, masq_register(M, "same2(x, y, *rest)", count_same, &same, NULL));
  CHECK_OK(M, eval(M, "b = [float(i) for i in range(250000)]\nc = [float(i) for i in range(250000)]"));
  char src[2000] = "same(b";
  for (int i = 1; i < 200; i++) strcat(src, ", b");
  strcat(src, ")");
  CHECK_OK(M, eval(M, src));
  CHECK(same == 199);
  memmove(src + 5, src + 4, strlen(src + 4) + 1); /* same2(b, b, ...): x, y and 198 in rest */
  src[4] = '2';
  CHECK_OK(M, eval(M, src));
  CHECK(same == 199);
  CHECK_OK(M, eval(M, "same(b, c, b, [1, 2], b)"));
  CHECK(same == 2);
  CHECK_OK(M, eval(M, "same(1, 1, 1)")); /* numbers have no identity: a tensor each */
  CHECK(same == 0);
  masq_close(M);
}

static masq_status fail_with_message(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                     masq_tensor **result) {
  return masq_errorf(M, "checkpoint %d of %s is corrupt", 7, "model.bin");
}

static masq_status fail_silently(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                 masq_tensor **result) {
  return MASQ_ERR_RUNTIME;
}

static masq_status fail_memory(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                               masq_tensor **result) {
  masq_tensor_scalar(M, 1, result); /* set, and then failing: masq releases it */
  return MASQ_ERR_MEMORY;
}

static masq_status return_borrowed(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                   masq_tensor **result) {
  *result = argv[0]; /* wrong: a borrowed argument returned as new */
  return MASQ_OK;
}

static masq_status return_garbage(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                  masq_tensor **result) {
  static int junk;
  *result = (masq_tensor *)&junk;
  return MASQ_OK;
}

static masq_status identity(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                            masq_tensor **result) {
  masq_status st = masq_tensor_retain(M, argv[0]); /* right */
  if (st == MASQ_OK) *result = argv[0];
  return st;
}

/* Keeps its argument past the call (in *ud); the test releases it later. */
static masq_status keep(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                        masq_tensor **result) {
  masq_tensor **kept = ud;
  masq_status st = masq_tensor_retain(M, argv[0]);
  if (st == MASQ_OK) *kept = argv[0];
  return st; /* *result NULL: returns none */
}

static int errors_reported;
static void count_error(void *ud, const char *rendered) { errors_reported++; }

/* A state whose error hook counts the errors it is told about. */
static masq_state *open_counting_errors(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.error = count_error;
  errors_reported = 0;
  return masq_open(&cfg);
}

static void test_host_errors(void) {
  masq_state *M = open_counting_errors();
  CHECK_OK(M, masq_register(M, "load_checkpoint(path)", fail_with_message, NULL, NULL));
  CHECK_OK(M, masq_register(M, "silent", fail_silently, NULL, NULL));
  CHECK_OK(M, masq_register(M, "hungry", fail_memory, NULL, NULL));
  CHECK_OK(M, masq_register(M, "borrowed(x)", return_borrowed, NULL, NULL));
  CHECK_OK(M, masq_register(M, "garbage", return_garbage, NULL, NULL));
  CHECK_OK(M, masq_register(M, "identity(x)", identity, NULL, NULL));
  masq_tensor *kept = NULL;
  CHECK_OK(M, masq_register(M, "keep(x)", keep, &kept, NULL));

  const char *src = "w = 1\nfn f(p) = load_checkpoint(p)\nw = f(3)";
  CHECK_ERR(M, masq_eval(M, src, strlen(src), "model.masq", 0), MASQ_ERR_RUNTIME,
            "checkpoint 7 of model.bin is corrupt");
  const masq_error *e = masq_last_error(M);
  CHECK(e->line == 2 && e->column == 11 && e->end_column == 29);
  CHECK(strstr(e->rendered, "model.masq:2:11: error: checkpoint 7 of model.bin is corrupt\n"
                            "    fn f(p) = load_checkpoint(p)\n"
                            "              ^^^^^^^^^^^^^^^^^^\n") == e->rendered);
  CHECK(strstr(e->rendered, "model.masq:3:5: note: in f(), called from here") != NULL);
  CHECK(errors_reported == 1);
  CHECK_ERR(M, eval(M, "silent()"), MASQ_ERR_RUNTIME, "silent() failed (status 1) without a message");
  CHECK_ERR(M, eval(M, "hungry()"), MASQ_ERR_MEMORY, "hungry() failed (status 4)");
  CHECK_ERR(M, eval(M, "borrowed(ones(2))"), MASQ_ERR_USAGE,
            "borrowed() returned a pointer that is not a tensor handle it holds");
  CHECK_ERR(M, eval(M, "garbage()"), MASQ_ERR_USAGE, "garbage() returned a pointer");
  CHECK(errors_reported == 5);
  CHECK(masq_errorf(M, "outside a host function") == MASQ_ERR_RUNTIME);

  /* Returning a retained argument, and keeping one past the call. */
  double v;
  CHECK_OK(M, eval(M, "a = identity(ones(3))\nsame = sum(a) == 3"));
  CHECK_OK(M, masq_get_number(M, "same", &v));
  CHECK(v == 1);
  CHECK_OK(M, eval(M, "keep(ones(5) * 2)"));
  CHECK(kept != NULL);
  masq_tensor *s;
  CHECK_OK(M, masq_call(M, "sum", 1, &kept, &s));
  CHECK_OK(M, masq_tensor_item(M, s, &v));
  CHECK(v == 10);
  CHECK_OK(M, masq_tensor_release(M, s));
  CHECK_OK(M, masq_tensor_release(M, kept));
  CHECK(errors_reported == 5);
  masq_close(M);
}

/* Calls back into masq from inside a host function. */
static masq_status callback(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                            masq_tensor **result) {
  /* A failure the host handles itself stays quiet. */
  if (masq_eval(M, "1 +", 3, "<inner>", 0) != MASQ_ERR_SYNTAX) return masq_errorf(M, "no");
  /* Deep recursion moves the VM's stack under the caller's feet. */
  if (!argv[0]) return masq_call(M, "broken", 0, NULL, result);
  return masq_call(M, "deep", 1, argv, result);
}

static masq_status registrar(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                             masq_tensor **result) {
  /* Registering from inside a call moves the builtins table. */
  char name[32];
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "late%d(x)", i);
    masq_status st = masq_register(M, name, identity, NULL, "registered late");
    if (st != MASQ_OK) return st;
  }
  return masq_tensor_scalar(M, 40, result);
}

static void test_reentrancy(void) {
  masq_state *M = open_counting_errors();
  CHECK_OK(M, masq_register(M, "callback(x)", callback, NULL, NULL));
  CHECK_OK(M, masq_register(M, "registrar", registrar, NULL, NULL));
  CHECK_OK(M, eval(M, "fn deep(n) {\n  if n == 0 { return 0 }\n  return deep(n - 1) + 1\n}\n"
                      "fn broken() = 1 + undefined_name\n"));
  double v;
  CHECK_OK(M, eval(M, "a = 1\nb = 2\nfn g(k) = [a, b, callback(k), b, a]\n"
                      "r = g(2000)\nok = r[0] == 1 and r[1] == 2 and r[2] == 2000 and "
                      "r[3] == 2 and r[4] == 1"));
  CHECK_OK(M, masq_get_number(M, "ok", &v));
  CHECK(v == 1);
  CHECK(errors_reported == 0); /* the inner syntax error was the host's business */
  /* An inner failure the host passes on surfaces with its message. */
  CHECK_ERR(M, eval(M, "x = 1\ncallback(none)"), MASQ_ERR_RUNTIME,
            "undefined variable 'undefined_name'");
  CHECK(masq_last_error(M)->line == 2);
  CHECK(errors_reported == 1);
  CHECK_OK(M, eval(M, "n = registrar()\nm = late39(7) + n"));
  CHECK_OK(M, masq_get_number(M, "m", &v));
  CHECK(v == 47);
  CHECK(strcmp(masq_doc(M, "late3"), "late3(x) -- registered late") == 0);
  masq_close(M);
}

static masq_status constant(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                            masq_tensor **result) {
  return masq_tensor_scalar(M, *(double *)ud, result);
}

static void test_register(void) {
  masq_state *M = masq_open(NULL);
  double one = 1, two = 2;
  double v;
  CHECK_OK(M, masq_register(M, "k", constant, &one, "first"));
  CHECK_OK(M, masq_register(M, "k", constant, &two, "second")); /* replaces */
  CHECK_OK(M, eval(M, "v = k()"));
  CHECK_OK(M, masq_get_number(M, "v", &v));
  CHECK(v == 2);
  CHECK(strcmp(masq_doc(M, "k"), "k(*args) -- second") == 0);
  CHECK_OK(M, masq_register(M, "abs(x)", constant, &one, "shadows the builtin"));
  CHECK_OK(M, eval(M, "v = abs(-5)"));
  CHECK_OK(M, masq_get_number(M, "v", &v));
  CHECK(v == 1);
  /* Every malformed form, with the reason the host is told. */
  static const char *const bad[][2] = {
      {"", "the function's name is not a name"},
      {"1f", "the function's name is not a name"},
      {"f (x)", "the function's name is not a name"},
      {"f-g", "the function's name is not a name"},
      {"if(x)", "the function's name is not a name"},
      {"f(", "no ')' after the parameters"},
      {"f(x", "no ')' after the parameters"},
      {"f(x=1", "no ')' after the parameters"},
      {"f(x,)", "parameter 2 has no name"},
      {"f(,)", "parameter 1 has no name"},
      {"f( )", "parameter 1 has no name"},
      {"f(*)", "parameter 1 has no name"},
      {"f(=1)", "parameter 1 has no name"},
      {"f(x y)", "expected ',' or ')' after parameter 'x'"},
      {"f(x=1 )", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(if)", "'if' is not a name a script can use"},
      {"f(1x)", "'1x' is not a name a script can use"},
      {"f(x-y)", "'x-y' is not a name a script can use"},
      {"f(x, x)", "parameter 'x' is named twice"},
      {"f(x, *x)", "parameter 'x' is named twice"},
      {"f(*a, *b)", "more than one *rest parameter"},
      {"f(*a, b, *c)", "more than one *rest parameter"},
      {"f(**kw)", "host functions take no **names parameter"},
      {"f(x, **kw)", "host functions take no **names parameter"},
      {"f(*a=1)", "*a cannot have a default"},
      {"f(a=1, b)", "parameter 'b' has no default but follows one that has"},
      {"f(a, b=none, c, *d)", "parameter 'c' has no default but follows one that has"},
      {"f(x=)", "parameter 'x' has '=' but no default"},
      {"f(x=foo)", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=0x10)", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=inf)", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=\"s\")", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=1.5.2)", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=--1)", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=None)", "the default of 'x' is not none, true, false or a decimal number"},
      {"f(x=0.10000000000000000000000000000001)", "the default of 'x' is longer than 31"},
      {"f(x=99999999999999999999)", "the default of 'x' is out of range"},
      {"f(x=-9223372036854775809)", "the default of 'x' is out of range"},
      {"f(x=1e999)", "the default of 'x' is out of range"},
      {"f(a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q)", "more than 16 parameters"},
      {"f(x) y", "text after the closing ')'"},
      {"f(x)(y)", "text after the closing ')'"},
      {"f())", "text after the closing ')'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char want[160];
    snprintf(want, sizeof want, "masq_register: bad signature \"%s\": %s", bad[i][0], bad[i][1]);
    CHECK_ERR(M, masq_register(M, bad[i][0], constant, &one, NULL), MASQ_ERR_USAGE, want);
  }
  /* A rejected signature binds nothing. */
  CHECK_ERR(M, eval(M, "f(1)"), MASQ_ERR_RUNTIME, "undefined variable 'f'");
  /* Keyword-only parameters after *rest may be required; spaces may stand
   * around every piece of punctuation. */
  CHECK_OK(M, masq_register(M, "kw( a=1, *r,b, c = none)", constant, &two, NULL));
  CHECK_ERR(M, eval(M, "kw(1, 2)"), MASQ_ERR_RUNTIME, "kw() missing argument 'b'");
  CHECK_OK(M, eval(M, "v = kw(b=3)"));
  CHECK_ERR(M, masq_register(M, NULL, constant, &one, NULL), MASQ_ERR_USAGE, "signature is NULL");
  CHECK_ERR(M, masq_register(M, "f", NULL, &one, NULL), MASQ_ERR_USAGE, "fn is NULL");
  CHECK_OK(M, masq_register(M, "g(a,b=-1.5e3,c=true,  d = none,*e)", constant, &two, NULL));
  CHECK_OK(M, eval(M, "v = g(1)"));
  CHECK_OK(M, masq_register(M, "h()", constant, &two, NULL));
  CHECK_ERR(M, eval(M, "h(1)"), MASQ_ERR_RUNTIME, "h() takes 0 arguments but 1 were given");
  masq_close(M);
}

int main(void) {
  test_globals();
  test_identity();
  test_call();
  test_host_arguments();
  test_host_shared_arguments();
  test_host_errors();
  test_reentrancy();
  test_register();
  return report("test_host");
}
