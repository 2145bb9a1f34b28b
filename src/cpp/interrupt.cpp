// interrupt.cpp — see interrupt.hpp. The scope lives on the installing thread's stack; a
// thread-local pointer finds it, and run_parallel hands it to its workers as helpers.
#include "interrupt.hpp"

#include <algorithm>
#include <chrono>
#include <string>

namespace fastbench {
namespace {

thread_local detail::InterruptState* t_state = nullptr;
thread_local bool t_owner = false;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

InterruptScope::InterruptScope(InterruptCheck check, void* context)
    : outer_(t_state), outer_owner_(t_owner) {
  state_.check = check;
  state_.context = context;
  state_.next_poll_ns = now_ns() + kInterruptPollNs;
  t_state = &state_;
  t_owner = true;
}

InterruptScope::~InterruptScope() {
  t_state = outer_;
  t_owner = outer_owner_;
}

bool interrupt_requested() {
  detail::InterruptState* s = t_state;
  if (s == nullptr) return false;
  if (s->stop.load(std::memory_order_relaxed)) return true;
  if (!t_owner || s->check == nullptr) return false;
  const std::int64_t before = now_ns();
  if (before < s->next_poll_ns) return false;
  const bool stop = s->check(s->context);
  const std::int64_t after = now_ns();
  s->next_poll_ns = after + std::clamp<std::int64_t>(50 * (after - before), kInterruptPollNs,
                                                     kInterruptMaxPollNs);
  if (stop) s->stop.store(true, std::memory_order_relaxed);
  return stop;
}

void throw_if_interrupted(const char* who) {
  const detail::InterruptState* s = t_state;
  if (s != nullptr && s->stop.load(std::memory_order_relaxed)) {
    throw Interrupted(std::string("[") + who + "] interrupted");
  }
}

namespace detail {

InterruptState* current_interrupt() { return t_state; }

InterruptHelper::InterruptHelper(InterruptState* state) : outer_(t_state), outer_owner_(t_owner) {
  t_state = state;
  t_owner = false;
}

InterruptHelper::~InterruptHelper() {
  t_state = outer_;
  t_owner = outer_owner_;
}

}  // namespace detail

}  // namespace fastbench
