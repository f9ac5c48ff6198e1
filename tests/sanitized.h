/* sanitized.h - which sanitizer a test was compiled with, for the tests
 * whose expectations differ there (a checked build aborts on a broken
 * contract; ASan's allocator counts differently). gcc says so with
 * __SANITIZE_*__, clang with __has_feature. */
#ifndef MQ_TEST_SANITIZED_H
#define MQ_TEST_SANITIZED_H

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifndef TEST_ASAN
#define TEST_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifndef TEST_TSAN
#define TEST_TSAN 0
#endif

#endif
