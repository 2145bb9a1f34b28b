// perf_math.cpp — see perf_math.hpp. No syscalls, no platform #ifs.
#include "perf_math.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fastbench {

namespace {
constexpr std::size_t kHeaderWords = 3;  // nr, time_enabled, time_running
}  // namespace

GroupRead parse_group_read(const std::uint64_t* words, std::size_t n_words,
                           long long expected_nr) {
  if (words == nullptr || n_words < kHeaderWords) {
    throw std::invalid_argument("[parse_group_read] short buffer: " + std::to_string(n_words) +
                                " words, expected at least " + std::to_string(kHeaderWords) +
                                " (nr, time_enabled, time_running)");
  }
  const std::uint64_t nr = words[0];
  const std::size_t room = (n_words - kHeaderWords) / 2;
  if (nr > room) {
    throw std::invalid_argument("[parse_group_read] short buffer: nr is " + std::to_string(nr) +
                                " but " + std::to_string(n_words) + " words hold at most " +
                                std::to_string(room) + " {value, id} entries");
  }
  const std::size_t need = kHeaderWords + 2 * static_cast<std::size_t>(nr);
  if (n_words != need) {
    throw std::invalid_argument("[parse_group_read] nr mismatch: nr is " + std::to_string(nr) +
                                ", which needs " + std::to_string(need) + " words, got " +
                                std::to_string(n_words));
  }
  if (expected_nr >= 0 && nr != static_cast<std::uint64_t>(expected_nr)) {
    throw std::invalid_argument("[parse_group_read] nr mismatch: nr is " + std::to_string(nr) +
                                ", expected " + std::to_string(expected_nr));
  }
  GroupRead r;
  r.time_enabled_ns = words[1];
  r.time_running_ns = words[2];
  r.values.reserve(static_cast<std::size_t>(nr));
  for (std::size_t i = 0; i < nr; ++i) {
    r.values.push_back(CounterValue{words[kHeaderWords + 2 * i + 1], words[kHeaderWords + 2 * i]});
  }
  return r;
}

GroupRead parse_group_read(const std::vector<std::uint64_t>& words, long long expected_nr) {
  return parse_group_read(words.data(), words.size(), expected_nr);
}

GroupRead group_read_delta(const GroupRead& before, const GroupRead& after) {
  if (before.values.size() != after.values.size()) {
    throw std::invalid_argument("[group_read_delta] counter count changed from " +
                                std::to_string(before.values.size()) + " to " +
                                std::to_string(after.values.size()));
  }
  if (after.time_enabled_ns < before.time_enabled_ns ||
      after.time_running_ns < before.time_running_ns) {
    throw std::invalid_argument(
        "[group_read_delta] times decreased: enabled " + std::to_string(before.time_enabled_ns) +
        " -> " + std::to_string(after.time_enabled_ns) + ", running " +
        std::to_string(before.time_running_ns) + " -> " + std::to_string(after.time_running_ns));
  }
  GroupRead d;
  d.time_enabled_ns = after.time_enabled_ns - before.time_enabled_ns;
  d.time_running_ns = after.time_running_ns - before.time_running_ns;
  d.values.reserve(after.values.size());
  for (const CounterValue& a : after.values) {
    const CounterValue* b = nullptr;
    for (const CounterValue& c : before.values) {
      if (c.id == a.id) {
        b = &c;
        break;
      }
    }
    if (b == nullptr) {
      throw std::invalid_argument("[group_read_delta] id " + std::to_string(a.id) +
                                  " is missing from the earlier reading");
    }
    if (a.value < b->value) {
      throw std::invalid_argument("[group_read_delta] counter id " + std::to_string(a.id) +
                                  " decreased from " + std::to_string(b->value) + " to " +
                                  std::to_string(a.value) + "; counters never decrease");
    }
    d.values.push_back(CounterValue{a.id, a.value - b->value});
  }
  return d;
}

ScaledCount scale_count(std::uint64_t raw, std::uint64_t time_enabled_ns,
                        std::uint64_t time_running_ns) noexcept {
  ScaledCount s;
  if (time_running_ns == 0) {
    s.counted = false;
    s.value = std::numeric_limits<double>::quiet_NaN();
    s.running_fraction = 0.0;
    s.scaled = false;
    return s;
  }
  s.counted = true;
  if (time_running_ns >= time_enabled_ns) {
    s.value = static_cast<double>(raw);
    s.running_fraction = 1.0;
    s.scaled = false;
    return s;
  }
  const double enabled = static_cast<double>(time_enabled_ns);
  const double running = static_cast<double>(time_running_ns);
  s.value = static_cast<double>(raw) * (enabled / running);
  s.running_fraction = running / enabled;
  s.scaled = true;
  return s;
}

Subtracted subtract_overhead(double value, double overhead) {
  if (!std::isfinite(value) || !std::isfinite(overhead) || overhead < 0.0) {
    throw std::invalid_argument("[subtract_overhead] expected a finite value and a finite "
                                "overhead >= 0, got value " + std::to_string(value) +
                                ", overhead " + std::to_string(overhead));
  }
  Subtracted s;
  const double d = value - overhead;
  s.clamped = d < 0.0;
  s.value = s.clamped ? 0.0 : d;
  return s;
}

double per_call(double total, std::uint64_t calls) {
  if (calls == 0) throw std::invalid_argument("[per_call] calls is 0, expected >= 1");
  if (!std::isfinite(total)) {
    throw std::invalid_argument("[per_call] total is " + std::to_string(total) +
                                ", expected a finite number");
  }
  return total / static_cast<double>(calls);
}

}  // namespace fastbench
