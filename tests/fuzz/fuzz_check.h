// FUZZ_CHECK(cond): an invariant of a fuzz target. Unlike assert() it stays on in Release and
// RelWithDebInfo builds; a failure prints the condition and aborts, which libFuzzer and the
// replay driver report as a crash with the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
