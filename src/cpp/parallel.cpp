// parallel.cpp — see parallel.hpp. Linux affinity is read with sched_getaffinity so that a
// process confined by taskset or a container quota's cpuset gets its own count. Parallel
// calls run on a pool of workers kept for the process, each woken through its own mailbox.
#include "parallel.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "interrupt.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#define FASTBENCH_HAVE_ATFORK 1
#endif
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

int max_threads() { return kMaxThreadsPerCpu * hardware_threads(); }

int resolve_threads(int threads, const char* who) {
  if (threads < 0) {
    throw std::invalid_argument(std::string("[") + who + "] threads is " +
                                std::to_string(threads) + ", expected >= 0 (0 = all cores)");
  }
  // Up to kMaxThreadsPerCpu no CPU count is needed (there is at least one CPU).
  if (threads > kMaxThreadsPerCpu && threads > max_threads()) {
    throw std::invalid_argument(std::string("[") + who + "] threads is " +
                                std::to_string(threads) + ", expected at most " +
                                std::to_string(max_threads()) + " (" +
                                std::to_string(kMaxThreadsPerCpu) + " per CPU this process " +
                                "may run on; 0 = all cores)");
  }
  return threads == 0 ? hardware_threads() : threads;
}

namespace {

using Job = std::function<void(int tid, int nthreads)>;

thread_local bool t_in_job = false;

// Runs fn on fresh threads: for a call made from inside a pool job (nested parallelism),
// where waiting on the pool would deadlock.
void run_on_new_threads(int nthreads, const Job& fn) {
  std::exception_ptr first;
  std::mutex mu;
  detail::InterruptState* interrupt = detail::current_interrupt();
  auto guarded = [&](int tid) {
    try {
      if (tid == 0) {
        fn(tid, nthreads);
      } else {
        const detail::InterruptHelper helper(interrupt);
        fn(tid, nthreads);
      }
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

// Spins until `done()` holds or kSpinTime has passed (then returns false), yielding the time
// slice every kYieldEvery pauses. The limit is a time: a pause takes 1-10 ns on AMD cores and
// 10-40 ns on Intel ones, and 20000 pauses spun 0.2-0.7 ms there. The yields matter when the
// thread waited on shares this CPU (a VM's scheduler now and then puts a woken worker on its
// waker's vCPU): without them a waiter spun through the other's time slice, and whole
// 0.1 s runs of 2-thread calls took 10x their time (57 against 600 µs per call, 257×511×129
// bf16 on a 2-vCPU Sapphire Rapids-class VM).
template <class Done>
bool spin_until(const Done& done) {
  constexpr std::chrono::microseconds kSpinTime{200};
  constexpr int kYieldEvery = 128;
  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_pause();
    if (i % kYieldEvery == 0) {
      if (std::chrono::steady_clock::now() - t0 > kSpinTime) return done();
      std::this_thread::yield();
    }
  }
}

// Workers that live for the process: a parallel call costs a wake-up instead of a thread
// start, and workers spin briefly (spin_until, 200 µs) before sleeping, so calls in quick
// succession find them awake. In a VM, waking an idle vCPU for each fresh
// thread was measured to halve a 2-thread GEMM's speed. Each worker waits on its own mailbox,
// so a call wakes only the workers it uses: with one condition variable for all, every call
// woke every worker, and after one call of 1000 threads a 2-thread 1024² GEMM took 484 ms
// instead of 18 ms for the rest of the process.
class Pool {
 public:
  // The pool of this process. In a forked child the parent's pool is forgotten (its workers
  // were not copied, and a call would wait on them forever) and a new one starts here.
  static Pool& instance() {
    Pool* pool = g_pool.load(std::memory_order_acquire);
    if (pool != nullptr) return *pool;
#if defined(FASTBENCH_HAVE_ATFORK)
    static const int registered = pthread_atfork(nullptr, nullptr, &forget_in_child);
    (void)registered;  // only fails for lack of memory: a child would then wait, as before
#endif
    auto fresh = std::make_unique<Pool>();
    if (g_pool.compare_exchange_strong(pool, fresh.get(), std::memory_order_acq_rel)) {
      return *fresh.release();  // never destroyed: workers may outlive static teardown
    }
    return *pool;  // another thread's pool won
  }

  static detail::PoolStats stats() {
    const Pool* pool = g_pool.load(std::memory_order_acquire);
    if (pool == nullptr) return {};
    return {pool->nworkers_.load(std::memory_order_acquire),
            pool->wakeups_.load(std::memory_order_relaxed)};
  }

  void run(int nthreads, const Job& fn) {
    const std::lock_guard<std::mutex> serial(run_mu_);  // one parallel region at a time
    grow(nthreads - 1);
    // Nobody reads the job fields now: every worker of the last call finished with them
    // before it counted itself out of pending_, which the last call waited for.
    job_ = &fn;
    job_threads_ = nthreads;
    job_interrupt_ = detail::current_interrupt();
    first_ = nullptr;
    pending_.store(nthreads - 1, std::memory_order_relaxed);
    ++serial_;
    for (int tid = 1; tid < nthreads; ++tid) {
      workers_[static_cast<std::size_t>(tid - 1)]->post(serial_);
    }
    call(fn, 0, nthreads);
    // Wait for the workers, polling the caller's interrupt scope: its check runs on this
    // thread only, and the workers stop at their next block once it has asked them to.
    spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
    while (pending_.load(std::memory_order_acquire) != 0) {
      interrupt_requested();
      std::unique_lock<std::mutex> lock(mu_);
      cv_done_.wait_for(lock, std::chrono::nanoseconds(kInterruptPollNs), [&] {
        return pending_.load(std::memory_order_acquire) == 0;
      });
    }
    std::exception_ptr first;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      first = first_;
    }
    job_ = nullptr;
    if (first) std::rethrow_exception(first);
  }

 private:
  // One worker's mailbox: the serial number of the last job posted to it.
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<std::uint64_t> posted{0};

    void post(std::uint64_t serial) {
      {
        // Under the lock, so a worker between its check and its wait cannot miss it.
        const std::lock_guard<std::mutex> lock(mu);
        posted.store(serial, std::memory_order_release);
      }
      cv.notify_one();
    }
  };

  static void forget_in_child() {
    // Only this thread exists in the child. The parent's pool is kept reachable (a leak
    // checker would report it otherwise) and never touched again: its locks may be held by
    // threads that are not here.
    Pool* old = g_pool.exchange(nullptr, std::memory_order_acq_rel);
    if (old != nullptr) {
      old->forgotten_next_ = g_forgotten;
      g_forgotten = old;
    }
  }

  void call(const Job& fn, int tid, int n) {
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
      workers_.push_back(std::make_unique<Mailbox>());
      Mailbox* box = workers_.back().get();
      try {
        std::thread([this, tid, box] { work(tid, *box); }).detach();
      } catch (...) {
        workers_.pop_back();
        throw;  // could not start a thread (std::system_error)
      }
      nworkers_.fetch_add(1, std::memory_order_release);
    }
  }

  void work(int tid, Mailbox& box) {
    std::uint64_t seen = 0;
    for (;;) {
      const auto posted = [&] { return box.posted.load(std::memory_order_acquire) != seen; };
      if (!spin_until(posted)) {
        std::unique_lock<std::mutex> lock(box.mu);
        box.cv.wait(lock, posted);
      }
      seen = box.posted.load(std::memory_order_acquire);
      wakeups_.fetch_add(1, std::memory_order_relaxed);
      {
        const detail::InterruptHelper helper(job_interrupt_);
        call(*job_, tid, job_threads_);
      }
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        const std::lock_guard<std::mutex> lock(mu_);
        cv_done_.notify_all();
      }
    }
  }

  static std::atomic<Pool*> g_pool;
  static Pool* g_forgotten;  // pools left behind by forks, newest first

  std::mutex run_mu_;
  std::mutex mu_;  // first_, and cv_done_'s waits
  std::condition_variable cv_done_;
  std::vector<std::unique_ptr<Mailbox>> workers_;  // worker tid - 1; grown under run_mu_
  std::uint64_t serial_ = 0;
  // The current job: written by run() before it posts, read by the workers it posted to.
  const Job* job_ = nullptr;
  int job_threads_ = 0;
  detail::InterruptState* job_interrupt_ = nullptr;
  std::exception_ptr first_;
  std::atomic<int> pending_{0};
  std::atomic<int> nworkers_{0};
  std::atomic<std::uint64_t> wakeups_{0};
  Pool* forgotten_next_ = nullptr;
};

std::atomic<Pool*> Pool::g_pool{nullptr};
Pool* Pool::g_forgotten = nullptr;

}  // namespace

void run_parallel(int nthreads, const std::function<void(int tid, int nthreads)>& fn) {
  if (nthreads <= 1) {
    fn(0, 1);
    return;
  }
  if (nthreads > kMaxThreadsPerCpu && nthreads > max_threads()) {
    throw std::invalid_argument("[run_parallel] nthreads is " + std::to_string(nthreads) +
                                ", expected at most " + std::to_string(max_threads()));
  }
  if (t_in_job) {
    run_on_new_threads(nthreads, fn);
    return;
  }
  Pool::instance().run(nthreads, fn);
}

namespace detail {
PoolStats pool_stats() { return Pool::stats(); }
}  // namespace detail

}  // namespace fastbench
