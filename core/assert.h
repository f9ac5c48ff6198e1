/* assert.h - contracts that execute: MQ_ASSERT(expr) states an invariant
 * the code relies on and that no input can break, only a bug in masq.
 *
 * In the checked builds (-DMQ_CHECKS: the ASan, TSan and fuzz trees of the
 * Makefile) a broken contract prints "masq: contract broken at FILE:LINE:
 * EXPR" and aborts, so that a sanitizer run, a fuzzer or a test stops at
 * the bug rather than computing on. In release builds it compiles to
 * nothing, but the expression is still type-checked (sizeof does not
 * evaluate it), so a contract cannot rot.
 *
 * User input is never checked with MQ_ASSERT: a bad argument, shape or
 * file is mq_error's (a located message, a state that still works). Only
 * what the code itself guarantees is (docs/HACKING.md, "Contracts"). */
#ifndef MQ_ASSERT_H
#define MQ_ASSERT_H

#include "common.h"

#ifdef MQ_CHECKS
#define MQ_ASSERT(e) ((e) ? (void)0 : mq_assert_fail(__FILE__, __LINE__, #e))
#else
#define MQ_ASSERT(e) ((void)sizeof(!(e)))
#endif

/* A helper that only contracts call: unused in release builds. */
#if defined(__GNUC__) || defined(__clang__)
#define MQ_CHECK_ONLY __attribute__((unused))
#else
#define MQ_CHECK_ONLY
#endif

/* Reports the broken contract on stderr and aborts (checked builds only). */
MQ_INTERNAL MQ_NORETURN void mq_assert_fail(const char *file, int line, const char *expr);
/* Whether the library was built with its contracts on (tests/unit/test_contracts.c). */
MQ_INTERNAL bool mq_checks_enabled(void);

#endif
