// stop_check.hpp — an interrupt check for tests (fastbench::InterruptScope): counts its
// calls, notes a call from any thread but the one that installed it, and asks to stop from
// a given call on. StopScope installs it and waits out the first poll delay, so the kernel's
// first interrupt_requested() runs the check at once: no test depends on how long work takes.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "interrupt.hpp"

namespace {

struct StopCheck {
  int stop_from = 1;  // the call from which the check asks to stop; 0: never
  std::atomic<int> calls{0};
  std::atomic<bool> foreign_thread{false};
  std::thread::id owner = std::this_thread::get_id();

  static bool check(void* context) {
    auto* self = static_cast<StopCheck*>(context);
    if (std::this_thread::get_id() != self->owner) self->foreign_thread = true;
    const int call = ++self->calls;
    return self->stop_from > 0 && call >= self->stop_from;
  }
};

// Sleeps past the delay before a scope's first check.
inline void wait_first_poll() {
  std::this_thread::sleep_for(std::chrono::nanoseconds(fastbench::kInterruptPollNs) +
                              std::chrono::milliseconds(2));
}

class StopScope {
 public:
  explicit StopScope(StopCheck& check) : scope_(&StopCheck::check, &check) { wait_first_poll(); }

 private:
  fastbench::InterruptScope scope_;
};

}  // namespace
