// interrupt.hpp — stopping long native work early (Ctrl-C), with no Python here. The thread
// that starts the work installs a check (InterruptScope); kernels call interrupt_requested()
// between blocks of work. On the installing thread that runs the check, at most every few
// milliseconds; on the other threads of its parallel regions (run_parallel passes the scope
// on) it reads the flag the check raised. Kernels then leave their loops cleanly (no thread
// is abandoned mid-block) and their driver throws Interrupted.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>

namespace fastbench {

// Thrown by a kernel stopped by its InterruptScope's check, "[gemm] interrupted"; whatever
// the kernel was writing is left partly written.
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True when the work should stop. Runs only on the thread that installed it, between blocks
// of work; must not throw.
using InterruptCheck = bool (*)(void* context);

// Checks are spaced at least this far apart: each may cost a lock the host holds (an
// interpreter's), and a 10 ms spacing keeps an uncontended microsecond check below 1e-4 of
// the work while leaving most of a 0.2 s reaction time to the blocks between polls.
inline constexpr std::int64_t kInterruptPollNs = 10'000'000;
// A check that had to wait for its lock is spaced out to 50 times its own duration, up to
// this: a busy host then costs the work at most a few percent, still within 0.2 s.
inline constexpr std::int64_t kInterruptMaxPollNs = 100'000'000;

namespace detail {
struct InterruptState {
  InterruptCheck check = nullptr;
  void* context = nullptr;
  std::atomic<bool> stop{false};  // raised by the owner's check, read by every thread
  std::int64_t next_poll_ns = 0;  // owner only
};
}  // namespace detail

// Installs `check` for the work this thread starts until the scope ends. Scopes nest: the
// innermost rules, and the outer one is back in force when it ends. The first check runs
// after kInterruptPollNs of work, so short calls never pay for one.
class InterruptScope {
 public:
  InterruptScope(InterruptCheck check, void* context);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // True once the check asked to stop.
  bool interrupted() const { return state_.stop.load(std::memory_order_relaxed); }

 private:
  detail::InterruptState state_;
  detail::InterruptState* outer_;
  bool outer_owner_;
};

// True once the work running on this thread should stop; false when no scope is installed.
// Cheap enough for every block of a kernel: a thread-local read, and on the owning thread a
// clock read, with the check itself only every kInterruptPollNs or more.
bool interrupt_requested();

// Throws Interrupted ("[who] interrupted") when the work on this thread was asked to stop (by
// an earlier interrupt_requested() here or on another thread of the work); runs no check, so
// work that finished is not thrown away for a check that came due at its end.
void throw_if_interrupted(const char* who);

namespace detail {
// The scope of the work on this thread (null when none) and whether this thread installed it.
InterruptState* current_interrupt();

// Makes this thread a helper of `state`'s work (a worker of a parallel region started under
// it) for its lifetime: interrupt_requested() reads the flag, never runs the check.
class InterruptHelper {
 public:
  explicit InterruptHelper(InterruptState* state);
  ~InterruptHelper();
  InterruptHelper(const InterruptHelper&) = delete;
  InterruptHelper& operator=(const InterruptHelper&) = delete;

 private:
  InterruptState* outer_;
  bool outer_owner_;
};
}  // namespace detail

}  // namespace fastbench
