/* lib_cpu.c - which CPU path the kernels that have several take
 * (runtime/tensor/cpu.h): the same bits on every path, so these only matter for
 * speed, and for tests that compare the paths. */
#include "../runtime/tensor/cpu.h"
#include "stdlib.h"

static mq_value lib_set_cpu_path(mq_state *S, mq_value *args) {
  if (!mq_is_obj(args[0], MQ_O_STRING))
    mq_error(S, "set_cpu_path: path must be a string, not %s", mq_value_a_type_name(args[0]));
  const mq_string *name = mq_as_string(args[0]);
  int cpu = mq_cpu_parse(name->chars, name->len);
  if (cpu < 0)
    mq_error(S, "set_cpu_path: unknown CPU path %s (portable, avx2 or avx512)", mq_string_quoted(S, name));
  int best = mq_cpu_state_best();
  if (cpu > best)
    mq_error(S, "set_cpu_path: this CPU cannot run the %s path (its fastest is %s)", mq_cpu_name(cpu),
             mq_cpu_name(best));
  S->cpu = cpu;
  return mq_none();
}

static mq_value lib_get_cpu_path(mq_state *S, mq_value *args) {
  const char *name = mq_cpu_name(S->cpu);
  return mq_objv(mq_string_new(S, name, strlen(name)));
}

static mq_value lib_cpu_paths(mq_state *S, mq_value *args) {
  int best = mq_cpu_state_best();
  mq_list *l = mq_list_new(S, best + 1);
  for (int c = 0; c <= best; c++) {
    const char *name = mq_cpu_name(c);
    mq_list_push(S, l, mq_objv(mq_string_new(S, name, strlen(name))));
  }
  return mq_objv(l);
}

const mq_libfn mq_lib_cpu[] = {
    {"set_cpu_path(path)", lib_set_cpu_path,
     "the CPU path of the streaming float32 reductions, var/std and float32 softmax: "
     "\"portable\", \"avx2\" or "
     "\"avx512\" (one this CPU runs; results are the same bits on every path); starts at $MASQ_CPU "
     "or the fastest", MQ_BK_NONE, 0},
    {"get_cpu_path()", lib_get_cpu_path, "the CPU path kernels take (set_cpu_path)", MQ_BK_NONE, 0},
    {"cpu_paths()", lib_cpu_paths, "the CPU paths this CPU runs, portable first (set_cpu_path)",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
