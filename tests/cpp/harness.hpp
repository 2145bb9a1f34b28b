// harness.hpp — the native tests' own tiny harness (no framework): CHECK records
// file:line and a message and never aborts, so a sanitizer report or a later failure still
// shows every earlier one; each test executable is a table of Test and run_all(). The last
// line printed is "N passed, N failed", which CI looks for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ---- harness ------------------------------------------------------------------------------

struct Harness {
  const char* test = "";  // the test now running
  int failures_in_test = 0;
};

Harness& harness() {
  static Harness h;
  return h;
}

template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  os.precision(12);
  (os << ... << args);
  return os.str();
}

void record_failure(const char* file, int line, const std::string& message) {
  Harness& h = harness();
  ++h.failures_in_test;
  std::printf("FAIL %s:%d: %s: %s\n", file, line, h.test, message.c_str());
  std::fflush(stdout);  // a sanitizer abort later must not swallow it
}

[[maybe_unused]] void skip(const std::string& reason) {
  std::printf("skip: %s: %s\n", harness().test, reason.c_str());
  std::fflush(stdout);
}

// Records the condition's text and a message when `cond` is false; never aborts.
#define CHECK(cond, ...)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      record_failure(__FILE__, __LINE__, str("CHECK(" #cond ") ", __VA_ARGS__)); \
    }                                                                           \
  } while (0)

// Passes when `expr` throws E (or a subclass) whose message starts with `prefix` (the house
// style: "[function] ..."); any other outcome is a failure.
#define CHECK_THROWS(E, expr, prefix) \
  check_throws<E>(__FILE__, __LINE__, #expr, prefix, [&] { (void)(expr); })

// Ends the test as skipped (counted as passed) when `cond` is false.
#define SKIP_UNLESS(cond, reason) \
  do {                            \
    if (!(cond)) {                \
      skip(reason);               \
      return;                     \
    }                             \
  } while (0)

template <class E, class F>
void check_throws(const char* file, int line, const char* text, const std::string& prefix,
                  F&& f) {
  try {
    f();
  } catch (const E& e) {
    const std::string what = e.what();
    if (what.rfind(prefix, 0) != 0) {
      record_failure(file, line, str(text, ": message '", what, "' does not start with '",
                                     prefix, "'"));
    }
    return;
  } catch (const std::exception& e) {
    record_failure(file, line, str(text, ": threw the wrong type: ", e.what()));
    return;
  } catch (...) {
    record_failure(file, line, str(text, ": threw a non-std exception"));
    return;
  }
  record_failure(file, line, str(text, ": did not throw"));
}

struct Test {
  const char* name;
  void (*fn)();
};

template <std::size_t N>
int run_all(const Test (&tests)[N]) {
  Harness& h = harness();
  int passed = 0;
  int failed = 0;
  for (const Test& t : tests) {
    h.test = t.name;
    h.failures_in_test = 0;
    try {
      t.fn();
    } catch (const std::exception& e) {
      record_failure(__FILE__, __LINE__, str("uncaught exception: ", e.what()));
    } catch (...) {
      record_failure(__FILE__, __LINE__, "uncaught non-std exception");
    }
    (h.failures_in_test == 0 ? passed : failed) += 1;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

// Deterministic values in [-1, 1) (xorshift), so failures reproduce.
template <class T>
std::vector<T> random_values(std::size_t count, std::uint64_t seed) {
  std::vector<T> v(count);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (T& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<T>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return v;
}

}  // namespace
