// parallel.cpp — see parallel.hpp. Linux affinity is read with sched_getaffinity so that a
// process confined by taskset or a container quota's cpuset gets its own count.
#include "parallel.hpp"

#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace fastbench {

int hardware_threads() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

int resolve_threads(int threads, const char* who) {
  if (threads < 0) {
    throw std::invalid_argument(std::string("[") + who + "] threads is " +
                                std::to_string(threads) + ", expected >= 0 (0 = all cores)");
  }
  return threads == 0 ? hardware_threads() : threads;
}

void run_parallel(int nthreads, const std::function<void(int tid, int nthreads)>& fn) {
  if (nthreads <= 1) {
    fn(0, 1);
    return;
  }
  std::exception_ptr first;
  std::mutex mu;
  auto guarded = [&](int tid) {
    try {
      fn(tid, nthreads);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu);
      if (!first) first = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(nthreads - 1));
  try {
    for (int t = 1; t < nthreads; ++t) workers.emplace_back(guarded, t);
  } catch (...) {
    for (std::thread& w : workers) w.join();
    throw;  // could not start a thread (std::system_error): nothing ran on the caller yet
  }
  guarded(0);
  for (std::thread& w : workers) w.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace fastbench
