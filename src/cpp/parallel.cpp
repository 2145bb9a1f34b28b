// parallel.cpp — see parallel.hpp. Linux affinity is read with sched_getaffinity so that a
// process confined by taskset or a container quota's cpuset gets its own count. Parallel
// calls run on a pool of workers kept for the process.
#include "parallel.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
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

namespace {

// Runs fn on fresh threads: for a call made from inside a pool job (nested parallelism),
// where waiting on the pool would deadlock.
void run_on_new_threads(int nthreads, const std::function<void(int tid, int nthreads)>& fn) {
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
    throw;  // could not start a thread (std::system_error)
  }
  guarded(0);
  for (std::thread& w : workers) w.join();
  if (first) std::rethrow_exception(first);
}

thread_local bool t_in_job = false;

// Workers that live for the process: a parallel call costs a wake-up instead of a thread
// start, and workers spin briefly (kSpin polls, tens of microseconds) before sleeping, so
// calls in quick succession find them awake. In a VM, waking an idle vCPU for each fresh
// thread was measured to halve a 2-thread GEMM's speed.
class Pool {
 public:
  static Pool& instance() {
    static Pool* pool = new Pool();  // never destroyed: workers may outlive static teardown
    return *pool;
  }

  void run(int nthreads, const std::function<void(int tid, int nthreads)>& fn) {
    const std::lock_guard<std::mutex> serial(run_mu_);  // one parallel region at a time
    grow(nthreads - 1);
    {
      const std::lock_guard<std::mutex> lock(mu_);
      job_ = &fn;
      job_threads_ = nthreads;
      first_ = nullptr;
      pending_.store(nthreads - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_work_.notify_all();
    call(fn, 0, nthreads);
    for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
      if (i < kSpin) {
        cpu_pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      cv_done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    std::exception_ptr first;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      first = first_;
      job_ = nullptr;
    }
    if (first) std::rethrow_exception(first);
  }

 private:
  static constexpr int kSpin = 20000;

  void call(const std::function<void(int, int)>& fn, int tid, int n) {
    t_in_job = true;
    try {
      fn(tid, n);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu_);
      if (!first_) first_ = std::current_exception();
    }
    t_in_job = false;
  }

  void grow(int workers) {
    while (static_cast<int>(workers_.size()) < workers) {
      const int tid = static_cast<int>(workers_.size()) + 1;
      // The generation now, before run() announces its job: read later, in the new thread,
      // it could already include that job, which the worker would then wait past forever.
      const std::uint64_t seen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, tid, seen] { work(tid, seen); });
      workers_.back().detach();
    }
  }

  void work(int tid, std::uint64_t seen) {
    for (;;) {
      for (int i = 0; generation_.load(std::memory_order_acquire) == seen; ++i) {
        if (i < kSpin) {
          cpu_pause();
          continue;
        }
        std::unique_lock<std::mutex> lock(mu_);
        cv_work_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      seen = generation_.load(std::memory_order_acquire);
      const std::function<void(int, int)>* job = nullptr;
      int n = 0;
      {
        const std::lock_guard<std::mutex> lock(mu_);
        job = job_;
        n = job_threads_;
      }
      if (job == nullptr || tid >= n) continue;  // not needed this time
      call(*job, tid, n);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        const std::lock_guard<std::mutex> lock(mu_);
        cv_done_.notify_all();
      }
    }
  }

  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_work_;
  std::condition_variable cv_done_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  int job_threads_ = 0;
  std::exception_ptr first_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> pending_{0};
};

}  // namespace

void run_parallel(int nthreads, const std::function<void(int tid, int nthreads)>& fn) {
  if (nthreads <= 1) {
    fn(0, 1);
    return;
  }
  if (t_in_job) {
    run_on_new_threads(nthreads, fn);
    return;
  }
  Pool::instance().run(nthreads, fn);
}

}  // namespace fastbench
