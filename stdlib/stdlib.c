/* stdlib.c - the library's tables and their binding at open. */
#include "stdlib.h"

#include "../vm/globals.h"

/* The library's tables, one per family (lib_*.c). */
extern const mq_libfn mq_lib_core[];
extern const mq_libfn mq_lib_lang[];
extern const mq_libfn mq_lib_dict[];
extern const mq_libfn mq_lib_create[];
extern const mq_libfn mq_lib_shape[];
extern const mq_libfn mq_lib_shape_more[];
extern const mq_libfn mq_lib_habits[];
extern const mq_libfn mq_lib_math[];
extern const mq_libfn mq_lib_index[];
extern const mq_constant mq_lib_constants[];
extern const mq_libfn mq_lib_io[];
extern const mq_libfn mq_lib_csv[];
extern const mq_libfn mq_lib_summary[];
extern const mq_libfn mq_lib_autograd[];
extern const mq_libfn mq_lib_sparse[];
extern const mq_libfn mq_lib_sparse_io[];
extern const mq_libfn mq_lib_sparse_ops[];
extern const mq_libfn mq_lib_plot[];
extern const mq_libfn mq_lib_nn[];
extern const mq_libfn mq_lib_cpu[];
extern const mq_libfn mq_lib_text[];
extern const mq_libfn mq_lib_table[];

/* Every table of builtins with the library group (MASQ_LIB_*) it belongs
 * to; a group the host did not enable is not bound at all. */
static const struct {
  const mq_libfn *fns;
  unsigned group;
} tables[] = {
    {mq_lib_core, MASQ_LIB_CORE},
    {mq_lib_lang, MASQ_LIB_CORE},
    {mq_lib_dict, MASQ_LIB_CORE},
    {mq_lib_create, MASQ_LIB_CORE},
    {mq_lib_shape, MASQ_LIB_CORE},
    {mq_lib_shape_more, MASQ_LIB_CORE},
    {mq_lib_habits, MASQ_LIB_CORE},
    {mq_lib_math, MASQ_LIB_CORE},
    {mq_lib_index, MASQ_LIB_CORE},
    {mq_lib_autograd, MASQ_LIB_CORE},
    {mq_lib_sparse, MASQ_LIB_CORE},
    {mq_lib_sparse_ops, MASQ_LIB_CORE},
    {mq_lib_summary, MASQ_LIB_CORE},
    {mq_lib_plot, MASQ_LIB_CORE},
    {mq_lib_nn, MASQ_LIB_CORE},
    {mq_lib_cpu, MASQ_LIB_CORE},
    {mq_lib_text, MASQ_LIB_CORE}, /* after the tensor builtins it overloads */
    {mq_lib_table, MASQ_LIB_CORE},
    {mq_lib_io, MASQ_LIB_IO},
    {mq_lib_csv, MASQ_LIB_IO},
    {mq_lib_sparse_io, MASQ_LIB_IO},
};

void mq_stdlib_open(mq_state *S) {
  const mq_libfn *open[sizeof tables / sizeof *tables];
  int n = 0;
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
    if (S->cfg.libs & tables[t].group) open[n++] = tables[t].fns;
  mq_builtin_open(S, open, n);
  if (S->cfg.libs & MASQ_LIB_CORE) {
    int nconst = 0;
    while (mq_lib_constants[nconst].name) nconst++;
    mq_globals_reserve(S, nconst);
    for (const mq_constant *c = mq_lib_constants; c->name; c++) {
      int slot = mq_global_slot_borrowed(S, c->name);
      mq_global_bind_lib(S, slot, mq_float(c->value));
    }
    mq_habits_open(S);
  }
}
