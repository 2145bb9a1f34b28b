// parallel.hpp — runs one function on several threads and waits for all of them: the only
// threading the kernels use, on a pool of workers kept for the process (a call from inside
// a parallel region starts fresh threads instead). No Python here.
#pragma once

#include <cstdint>
#include <functional>
#include <thread>

namespace fastbench {

// Logical CPUs this process may run on (sched_getaffinity on Linux, else
// std::thread::hardware_concurrency), at least 1.
int hardware_threads();

// The most threads one call may use: kMaxThreadsPerCpu x hardware_threads(). Beyond one
// per CPU, threads only take turns; a few per CPU stay allowed for tests of load sharing and
// for a process confined to fewer CPUs than a job was written for, and the cap bounds the
// pool, which keeps a worker for every thread a call has used (a call with 1000 threads once
// left 999 workers for the life of the process).
inline constexpr int kMaxThreadsPerCpu = 8;
int max_threads();

// `threads` as a kernel parameter: 0 means hardware_threads(); negative or above
// max_threads() throws std::invalid_argument naming `who`. Returns at least 1.
int resolve_threads(int threads, const char* who);

// Calls fn(tid, nthreads) for tid in [0, nthreads) on nthreads threads (tid 0 on the caller)
// and waits for all. The first exception thrown by any call is rethrown after all have
// finished. Calls from several threads at once run one after another. Only the pool workers
// a call uses (tids 1 to nthreads - 1) are woken. The caller's InterruptScope covers the
// workers too (they see its flag), and the caller polls it while it waits for them. In a
// child forked after the pool started (whose workers do not exist there), a fresh pool is
// started on first use (pthread_atfork). Throws std::invalid_argument when nthreads is above
// max_threads().
void run_parallel(int nthreads, const std::function<void(int tid, int nthreads)>& fn);

namespace detail {
// The pool's state, for tests: workers alive, and how many times a worker has been woken
// for a job since the pool started (each call of n threads adds n - 1).
struct PoolStats {
  int workers = 0;
  std::uint64_t wakeups = 0;
};
PoolStats pool_stats();
}  // namespace detail

// The pause instruction of a spin loop (nothing where there is none): it tells the core the
// loop waits, which saves power and the other hyper-thread's issue slots.
inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One step of a wait on another thread of the same parallel region: a pause for the first
// steps (tens of microseconds), then a yield of the time slice, so that with more threads
// than cores a waiter hands its core to the thread it waits on.
inline void spin_wait_step(int* step) {
  constexpr int kPauses = 2000;
  if (*step < kPauses) {
    ++*step;
    cpu_pause();
  } else {
    std::this_thread::yield();
  }
}

}  // namespace fastbench
