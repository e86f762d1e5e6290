/*
 * The checks of the probe's C unit tests: a failed CHECK prints where and
 * why and counts, so one run reports every failure, not just the first.
 */
#ifndef RTVB_TESTS_CHECK_H
#define RTVB_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                          \
    do {                                                          \
        if (!(cond)) {                                            \
            failures++;                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);  \
            fprintf(stderr, __VA_ARGS__);                         \
            fputc('\n', stderr);                                  \
        }                                                         \
    } while (0)

/* main's ending: the verdict of test `name` as an exit status. */
static inline int check_verdict(const char *name)
{
    if (failures) {
        fprintf(stderr, "%s: %d failure(s)\n", name, failures);
        return 1;
    }
    printf("%s: all passed\n", name);
    return 0;
}

#endif
