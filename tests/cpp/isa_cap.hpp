// isa_cap.hpp — caps every kernel's ISA for one scope (fastbench::detail::set_isa_cap) and
// restores the previous cap when the scope ends, a throwing test body included.
#pragma once

#include "isa.hpp"

namespace {

class IsaCap {
 public:
  explicit IsaCap(fastbench::Isa cap) : before_(fastbench::detail::isa_cap()) {
    fastbench::detail::set_isa_cap(cap);
  }
  ~IsaCap() { fastbench::detail::set_isa_cap(before_); }
  IsaCap(const IsaCap&) = delete;
  IsaCap& operator=(const IsaCap&) = delete;

 private:
  fastbench::Isa before_;
};

}  // namespace
