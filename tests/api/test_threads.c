/* test_threads.c - the thread model: states are independent, one per
 * thread, with no global state between them; masq_interrupt() may come
 * from another thread. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

enum { THREADS = 4, ROUNDS = 200 };

static masq_status plus_id(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                           masq_tensor **result) {
  return masq_tensor_scalar(M, *(const double *)ud, result);
}

typedef struct worker {
  double id;
  int ok, rounds;
} worker;

/* Each thread: its own state, host function, wrapped buffer and calls. */
static void *work(void *arg) {
  worker *w = arg;
  masq_state *M = masq_open(NULL);
  float buf[64];
  for (int i = 0; i < 64; i++) buf[i] = (float)w->id;
  int64_t shape[1] = {64};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = buf};
  masq_tensor *t, *r;
  w->ok = M && masq_register(M, "host_id", plus_id, &w->id, NULL) == MASQ_OK &&
          eval(M, "fn f(x) = sum(softmax(x, 0) * host_id()) + mean(x)") ==
              MASQ_OK &&
          masq_tensor_wrap(M, &d, &t) == MASQ_OK;
  for (int k = 0; w->ok && k < ROUNDS; k++) {
    double v = 0;
    w->ok = masq_call(M, "f", 1, &t, &r) == MASQ_OK && masq_tensor_item(M, r, &v) == MASQ_OK &&
            v > 2 * w->id - 1e-3 && v < 2 * w->id + 1e-3 &&
            masq_tensor_release(M, r) == MASQ_OK;
    w->rounds = k + 1;
  }
  masq_close(M);
  return NULL;
}

static void test_independent_states(void) {
  pthread_t th[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){i + 1, 0, 0};
    CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
  }
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    CHECK(w[i].ok && w[i].rounds == ROUNDS);
  }
}

static void *interrupter(void *arg) {
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);
  masq_interrupt(arg);
  return NULL;
}

static void test_interrupt_from_another_thread(void) {
  masq_state *M = masq_open(NULL);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, interrupter, M) == 0);
  CHECK_ERR(M, eval(M, "i = 0\nwhile true { i = i + 1 }"), MASQ_ERR_INTERRUPTED, "interrupted");
  pthread_join(th, NULL);
  CHECK_OK(M, eval(M, "j = i"));
  masq_close(M);
}

int main(void) {
  test_independent_states();
  test_interrupt_from_another_thread();
  return report("test_threads");
}
