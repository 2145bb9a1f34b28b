// perf_math.hpp — the arithmetic of perf_event counting, away from the syscalls so that CI can
// test it without a PMU (the reason nanobench keeps unit_perf_counter_math.cpp apart).
// Platform-free: no syscalls, no <linux/...> headers. Everything here works on plain words.
//  * Group read layout, for read_format = GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING:
//      { u64 nr; u64 time_enabled; u64 time_running; { u64 value; u64 id; } cnt[nr]; }
//  * Multiplexing: when the kernel time-shares more counters than the PMU has, an event runs
//    only part of the time it is enabled; the estimate is value * enabled / running. An event
//    that never ran (running == 0) is "not counted", never a silent zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fastbench {

struct CounterValue {
  std::uint64_t id = 0;     // the kernel's event id (PERF_EVENT_IOC_ID)
  std::uint64_t value = 0;  // raw count
};

struct GroupRead {
  std::uint64_t time_enabled_ns = 0;
  std::uint64_t time_running_ns = 0;
  std::vector<CounterValue> values;  // in the group's order (leader first)
};

// Parses one group read of `n_words` u64 words. Throws std::invalid_argument
// ("[parse_group_read] ...") when the buffer is shorter than its header or than nr entries
// need, when it holds more words than nr implies, or when expected_nr >= 0 and nr differs.
GroupRead parse_group_read(const std::uint64_t* words, std::size_t n_words,
                           long long expected_nr = -1);
GroupRead parse_group_read(const std::vector<std::uint64_t>& words, long long expected_nr = -1);

// after - before, per id (the result keeps `after`'s order), and the enabled/running deltas.
// Counters and times never decrease: a decrease, an id missing from `before` or a different
// number of counters throws std::invalid_argument ("[group_read_delta] ...").
GroupRead group_read_delta(const GroupRead& before, const GroupRead& after);

struct ScaledCount {
  bool counted = false;           // false when the event never ran (running == 0)
  double value = 0.0;             // raw * enabled / running; NaN when !counted
  double running_fraction = 0.0;  // running / enabled (1 when not multiplexed, 0 when !counted)
  bool scaled = false;            // true when running < enabled (an estimate, not a count)
};

// Multiplex scaling. running > enabled (not expected from the kernel) is treated as unscaled.
ScaledCount scale_count(std::uint64_t raw, std::uint64_t time_enabled_ns,
                        std::uint64_t time_running_ns) noexcept;

struct Subtracted {
  double value = 0.0;    // max(value - overhead, 0)
  bool clamped = false;  // true when the overhead exceeded the value
};

// Removes a calibrated overhead. Throws std::invalid_argument ("[subtract_overhead] ...") for
// a non-finite or negative argument.
Subtracted subtract_overhead(double value, double overhead);

// total / calls. Throws std::invalid_argument ("[per_call] ...") for calls == 0 or a
// non-finite total.
double per_call(double total, std::uint64_t calls);

}  // namespace fastbench
