/* test_limits.c - a state survives everything: bad scripts, the memory
 * limit, interrupts (from the hook, from masq_interrupt, inside masq_call),
 * a NULL state; the sandbox keeps files closed; and the host allocator gets
 * back every byte. */
#include <stdint.h>

#include "check.h"

static double number(masq_state *M, const char *name) {
  double v = -12345;
  if (masq_get_number(M, name, &v) != MASQ_OK)
    fprintf(stderr, "number(%s): %s", name, masq_last_error(M)->rendered);
  return v;
}

static void test_bad_scripts(void) {
  masq_state *M = masq_open(NULL);
  CHECK_ERR(M, eval(M, "x = (1 +"), MASQ_ERR_SYNTAX, "");
  CHECK(masq_last_error(M)->line == 1 && masq_last_error(M)->rendered[0] != '\0');
  CHECK_ERR(M, eval(M, "x = ones(2) + ones(3)"), MASQ_ERR_RUNTIME, "cannot be broadcast");
  CHECK_ERR(M, masq_eval_file(M, "/nonexistent/model.masq"), MASQ_ERR_USAGE, "cannot open");
  CHECK_ERR(M, masq_eval(M, NULL, 5, NULL, 0), MASQ_ERR_USAGE, "source is NULL");
  CHECK_OK(M, masq_eval(M, NULL, 0, NULL, 0)); /* nothing to run */
  CHECK_ERR(M, masq_eval_file(M, NULL), MASQ_ERR_USAGE, "path is NULL");
  CHECK_ERR(M, masq_disassemble(M, NULL, 1, "x"), MASQ_ERR_USAGE, "source is NULL");
  CHECK(masq_doc(M, NULL) == NULL);
  masq_complete(M, NULL, NULL, NULL);
  masq_globals(M, NULL, NULL);
  CHECK_OK(M, eval(M, "x = 40 + 2"));
  CHECK(number(M, "x") == 42);
  CHECK(masq_last_error(M)->status == MASQ_OK);
  masq_close(M);
}

static void test_memory_limit(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = 1 << 20;
  masq_state *M = masq_open(&cfg);
  CHECK(M != NULL);
  CHECK_OK(M, eval(M, "small = ones(100)"));
  /* 4 MB of float32 does not fit in 1 MB. */
  CHECK_ERR(M, eval(M, "big = ones(1000, 1000)"), MASQ_ERR_MEMORY, "memory limit");
  CHECK_ERR(M, eval(M, "fn grow(x) = grow([x, x])\ngrow(ones(64))"), MASQ_ERR_MEMORY, "");
  /* The same state runs the next script, with what it had. */
  CHECK_OK(M, eval(M, "s = sum(small * 2)"));
  CHECK(number(M, "s") == 200);
  /* The host's own requests count too... */
  int64_t shape[2] = {1000, 1000};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 2, .shape = shape};
  masq_tensor *t;
  CHECK_ERR(M, masq_tensor_new(M, &d, &t), MASQ_ERR_MEMORY, "memory limit");
  CHECK(t == NULL);
  /* ... but wrapped host memory is the host's, not counted. */
  float *buf = calloc(1000 * 1000, sizeof *buf);
  d.data = buf;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "host", t));
  CHECK_OK(M, eval(M, "n = numel(host)\nm = amax(host[0])"));
  CHECK(number(M, "n") == 1e6 && number(M, "m") == 0);
  CHECK_ERR(M, eval(M, "doubled = host * 2"), MASQ_ERR_MEMORY, "memory limit");
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK_OK(M, eval(M, "host = none\ns = sum(small)"));
  CHECK(number(M, "s") == 100);
  masq_close(M);
  free(buf);
}

static int interrupt_when(void *ud) { return *(int *)ud; }

/* A state whose interrupt hook is hook(ud). */
static masq_state *open_with_hook(int (*hook)(void *), void *ud) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.interrupt = hook;
  cfg.interrupt_ud = ud;
  return masq_open(&cfg);
}

static masq_status stop_me(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                           masq_tensor **result) {
  masq_interrupt(M); /* as another thread or a signal handler would */
  return MASQ_OK;
}

static void test_interrupts(void) {
  int stop = 0;
  masq_state *M = open_with_hook(interrupt_when, &stop);
  CHECK_OK(M, masq_register(M, "stop_me", stop_me, NULL, NULL));
  CHECK_OK(M, eval(M, "fn spin(x) { i = 0\n while true { i = i + 1 } }\nfn id(x) = x"));
  stop = 1;
  CHECK_ERR(M, eval(M, "i = 0\nwhile true { i = i + 1 }"), MASQ_ERR_INTERRUPTED, "interrupted");
  stop = 0;
  CHECK_ERR(M, eval(M, "i"), MASQ_ERR_RUNTIME, "undefined variable 'i'"); /* undone */
  /* Recursion without any loop reaches the hook too. */
  stop = 1;
  CHECK_ERR(M, eval(M, "fn fan(n) {\n if n == 0 { return 1 }\n return fan(n - 1) + fan(n - 1)\n}\n"
                       "fan(60)"), MASQ_ERR_INTERRUPTED, "interrupted");
  stop = 0;
  /* Inside masq_call, then the same state calls again. */
  masq_tensor *s, *r;
  CHECK_OK(M, masq_tensor_scalar(M, 3, &s));
  stop = 1;
  CHECK_ERR(M, masq_call(M, "spin", 1, &s, &r), MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK(masq_last_error(M)->line == 2 || !fprintf(stderr, "%s", masq_last_error(M)->rendered));
  stop = 0;
  CHECK_OK(M, masq_call(M, "id", 1, &s, &r));
  CHECK(r == s);
  CHECK_OK(M, masq_tensor_release(M, r));
  CHECK_OK(M, masq_tensor_release(M, s));
  /* masq_interrupt() while a script runs (from a host function here). */
  CHECK_ERR(M, eval(M, "k = 0\nstop_me()\nk = 1"), MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK_ERR(M, eval(M, "k"), MASQ_ERR_RUNTIME, "undefined variable 'k'"); /* undone */
  /* A request made while nothing runs is dropped by the next call. */
  masq_interrupt(M);
  CHECK_OK(M, eval(M, "k = 2"));
  masq_close(M);
}

/* The hook says stop on its [left]-th call from now (0: never). */
static int interrupt_after(void *ud) {
  int *left = ud;
  return *left > 0 && --*left == 0;
}

/* An interrupt while a kernel runs on worker threads (runtime/tensor/parallel.c):
 * the calling thread polls between chunks, nobody claims more, the error
 * comes out as usual, and the state and its workers go on working. */
static void test_interrupt_threaded_kernels(void) {
  int left = 0;
  masq_state *M = open_with_hook(interrupt_after, &left);
  CHECK_OK(M, eval(M, "set_num_threads(2)\nx = masked(rand(4000000), rand(4000000) < 0.5)\n"
                      "y = masked(rand(2000, 2000), rand(2000, 2000) < 0.5)"));
  const char *kernels[] = {"r = exp(x) * 2 + 1", "r = sum(x)", "r = amax(y, 0)", "r = sum(y, 1)",
                           "r = double(x)", "r = softmax(y, 1)", "r = y + get_data(y[0])",
                           "r = y[0:200] @ y[:, 0:200]"};
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++) {
    /* A threaded kernel polls at least twice: before the calling thread's
     * first claim (even when a worker takes every chunk) and when the round
     * ends. The second poll interrupts, wherever it falls. */
    left = 2;
    CHECK_ERR(M, eval(M, kernels[i]), MASQ_ERR_INTERRUPTED, "interrupted");
    left = 0;
    CHECK_OK(M, eval(M, kernels[i]));
  }
  CHECK_OK(M, eval(M, "a = sum(y, 0)\nset_num_threads(1)\nb = sum(y, 0)\n"
                      "same = bool((get_data(a) == get_data(b)).all())"));
  CHECK(number(M, "same") == 1);
  masq_close(M);
}

/* The hook counts its calls and says stop on the [left]-th (0: never). */
typedef struct counted {
  int calls, left;
} counted;
static int interrupt_counted(void *ud) {
  counted *c = ud;
  c->calls++;
  return c->left > 0 && --c->left == 0;
}

/* Attention's forward and backward over one 2-d matrix of thousands of
 * rows: the products poll between their tiles (runtime/kernels/gemm.c). An
 * interrupt at every poll of a forward and backward, wherever it falls,
 * ends in the error and leaves a state that computes the same gradient
 * afterwards. */
static void test_interrupt_attention_backward(void) {
  counted c = {0, 0};
  masq_state *M = open_with_hook(interrupt_counted, &c);
  /* one thread: the number of polls is then the same every time */
  CHECK_OK(M, eval(M, "set_num_threads(1)\nseed(3)\nq = requires_grad(rand(1024, 16))\nk = rand(1024, 16)\n"
                      "v = rand(1024, 16)\nm = reshape(arange(1024), 1, 1024) < 900\n"
                      "f = fn() = grad(sum(softmax(as_masked(q @ transpose(k, 0, 1) / 4, m), -1) @ v), q)\n"
                      "g0 = f()"));
  c.calls = 0;
  CHECK_OK(M, eval(M, "g1 = f()"));
  int polls = c.calls;
  CHECK(polls >= 4); /* several polls in a forward and backward of this size */
  for (int k = 1; k <= polls; k++) {
    c.left = k;
    CHECK_ERR(M, eval(M, "g1 = f()"), MASQ_ERR_INTERRUPTED, "interrupted");
  }
  c.left = 0;
  CHECK_OK(M, eval(M, "g1 = f()\nsame = bool((get_data(g0) == get_data(g1)).all())"));
  CHECK(number(M, "same") == 1);
  masq_close(M);
}

static void test_null_state(void) {
  masq_tensor *t = (masq_tensor *)&t;
  masq_tensor_desc d = {0};
  double v;
  masq_close(NULL);
  masq_config_init(NULL);
  masq_interrupt(NULL);
  CHECK(masq_last_error(NULL)->status == MASQ_ERR_USAGE);
  CHECK(masq_eval(NULL, "1", 1, "x", 0) == MASQ_ERR_USAGE);
  CHECK(masq_eval_file(NULL, "x") == MASQ_ERR_USAGE);
  CHECK(masq_disassemble(NULL, "1", 1, "x") == MASQ_ERR_USAGE);
  CHECK(masq_doc(NULL, "sum") == NULL);
  masq_complete(NULL, "", NULL, NULL);
  masq_globals(NULL, NULL, NULL);
  CHECK(masq_tensor_wrap(NULL, &d, &t) == MASQ_ERR_USAGE && t == NULL);
  CHECK(masq_tensor_new(NULL, &d, &t) == MASQ_ERR_USAGE);
  CHECK(masq_tensor_scalar(NULL, 1, &t) == MASQ_ERR_USAGE);
  CHECK(masq_tensor_info(NULL, t, &d) == MASQ_ERR_USAGE);
  CHECK(masq_tensor_contiguous(NULL, t, &t) == MASQ_ERR_USAGE && t == NULL);
  CHECK(masq_tensor_item(NULL, t, &v) == MASQ_ERR_USAGE);
  CHECK(masq_tensor_retain(NULL, t) == MASQ_ERR_USAGE);
  CHECK(masq_tensor_release(NULL, t) == MASQ_ERR_USAGE);
  CHECK(masq_set_global(NULL, "x", NULL) == MASQ_ERR_USAGE);
  CHECK(masq_get_global(NULL, "x", &t) == MASQ_ERR_USAGE);
  CHECK(masq_set_number(NULL, "x", 1) == MASQ_ERR_USAGE);
  CHECK(masq_set_int(NULL, "x", 1) == MASQ_ERR_USAGE);
  CHECK(masq_get_number(NULL, "x", &v) == MASQ_ERR_USAGE);
  CHECK(masq_call(NULL, "f", 0, NULL, &t) == MASQ_ERR_USAGE);
  CHECK(masq_register(NULL, "f", NULL, NULL, NULL) == MASQ_ERR_USAGE);
  CHECK(masq_errorf(NULL, "x") == MASQ_ERR_RUNTIME);
  CHECK(masq_requires_grad(NULL, t, &t) == MASQ_ERR_USAGE);
  CHECK(masq_backward(NULL, t) == MASQ_ERR_USAGE);
  CHECK(masq_grad(NULL, t, &t) == MASQ_ERR_USAGE);
  CHECK(strcmp(masq_version(), MASQ_VERSION_STRING) == 0);
}

static void test_sandbox(void) {
  FILE *f = fopen("/tmp/masq_api_sandbox.masq", "w");
  if (f) {
    fputs("imported = 1\n", f);
    fclose(f);
  }
  masq_state *M = masq_open(NULL); /* the default: no file access */
  CHECK_ERR(M, eval(M, "import \"/tmp/masq_api_sandbox.masq\""), MASQ_ERR_RUNTIME,
            "MASQ_LIB_IO");
  masq_close(M);
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  M = masq_open(&cfg);
  CHECK_OK(M, eval(M, "import \"/tmp/masq_api_sandbox.masq\""));
  CHECK(number(M, "imported") == 1);
  masq_close(M);
  remove("/tmp/masq_api_sandbox.masq");
}

static masq_status twice(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                         masq_tensor **result) {
  masq_tensor *two;
  masq_status st = masq_tensor_scalar(M, 2, &two);
  if (st != MASQ_OK) return st;
  masq_tensor *args[2] = {argv[0], two};
  st = masq_call(M, "mul", 2, args, result);
  masq_tensor_release(M, two);
  return st;
}

/* A whole session through a counting allocator, handles left unreleased
 * on purpose: masq_close gives every byte back and calls every release
 * callback once. */
static void test_allocator_balance(void) {
  counting cnt = {0, 0};
  int released = 0;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  cfg.alloc_ud = &cnt;
  masq_state *M = masq_open(&cfg);
  float buf[6] = {1, 2, 3, 4, 5, 6};
  uint8_t valid[6] = {1, 1, 0, 1, 0, 1};
  int64_t shape[2] = {2, 3};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 2, .shape = shape, .data = buf,
                        .valid = valid, .release = count_release, .release_ud = &released};
  masq_tensor *t, *r, *leaked;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_register(M, "twice(x)", twice, NULL, "x * 2"));
  CHECK_OK(M, eval(M, "fn mul(a, b) = a * b\nfn f(x) = softmax(twice(x), 1)"));
  CHECK_OK(M, masq_call(M, "f", 1, &t, &r));
  CHECK_OK(M, masq_tensor_release(M, r));
  CHECK_OK(M, masq_call(M, "f", 1, &t, &leaked)); /* never released */
  CHECK_ERR(M, eval(M, "f(ones(2) + ones(3))"), MASQ_ERR_RUNTIME, "");
  CHECK_ERR(M, eval(M, "x = [1,"), MASQ_ERR_SYNTAX, "");
  CHECK_OK(M, masq_set_global(M, "g", t));
  masq_close(M); /* t is still held too */
  CHECK(released == 1);
  CHECK(cnt.live == 0);
  CHECK(cnt.bytes == 0);
}

int main(void) {
  test_bad_scripts();
  test_memory_limit();
  test_interrupts();
  test_interrupt_threaded_kernels();
  test_interrupt_attention_backward();
  test_null_state();
  test_sandbox();
  test_allocator_balance();
  return report("test_limits");
}
