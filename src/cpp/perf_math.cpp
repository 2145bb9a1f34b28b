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

void parse_group_read_into(const std::uint64_t* words, std::size_t n_words, long long expected_nr,
                           GroupRead& out) {
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
  out.time_enabled_ns = words[1];
  out.time_running_ns = words[2];
  out.values.resize(static_cast<std::size_t>(nr));
  for (std::size_t i = 0; i < nr; ++i) {
    out.values[i] = CounterValue{words[kHeaderWords + 2 * i + 1], words[kHeaderWords + 2 * i]};
  }
}

GroupRead parse_group_read(const std::uint64_t* words, std::size_t n_words,
                           long long expected_nr) {
  GroupRead r;
  parse_group_read_into(words, n_words, expected_nr, r);
  return r;
}

GroupRead parse_group_read(const std::vector<std::uint64_t>& words, long long expected_nr) {
  return parse_group_read(words.data(), words.size(), expected_nr);
}

GroupRead group_read_delta(const GroupRead& before, const GroupRead& after) {
  GroupRead d;
  group_read_delta_into(before, after, d);
  return d;
}

void group_read_delta_into(const GroupRead& before, const GroupRead& after, GroupRead& d) {
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
  d.time_enabled_ns = after.time_enabled_ns - before.time_enabled_ns;
  d.time_running_ns = after.time_running_ns - before.time_running_ns;
  d.values.resize(after.values.size());
  for (std::size_t i = 0; i < after.values.size(); ++i) {
    const CounterValue& a = after.values[i];
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
    d.values[i] = CounterValue{a.id, a.value - b->value};
  }
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

std::uint64_t sign_extend_pmc(std::uint64_t pmc, unsigned width) noexcept {
  if (width == 0 || width >= 64) return pmc;
  // (v ^ sign) - sign in unsigned arithmetic: the header's "pmc <<= 64 - width; pmc >>= 64 -
  // width" without shifting a negative signed number.
  const std::uint64_t v = pmc & ((std::uint64_t{1} << width) - 1);
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  return (v ^ sign) - sign;
}

std::uint64_t mmap_time_delta_ns(const MmapPageSnapshot& page, std::uint64_t cycles) noexcept {
  if (page.time_shift >= 64) return page.time_offset;
  std::uint64_t cyc = cycles;
  if (page.cap_user_time_short) {
    cyc = page.time_cycles + ((cyc - page.time_cycles) & page.time_mask);
  }
  const unsigned shift = page.time_shift;
  const std::uint64_t mult = page.time_mult;
  const std::uint64_t quot = cyc >> shift;
  const std::uint64_t rem = cyc & ((std::uint64_t{1} << shift) - 1);
  return page.time_offset + quot * mult + ((rem * mult) >> shift);
}

UserRead user_space_count(const MmapPageSnapshot& page, std::uint64_t pmc,
                          std::uint64_t cycles) noexcept {
  UserRead r;
  if (!page.cap_user_rdpmc) {
    r.status = UserReadStatus::no_user_rdpmc;
  } else if (page.index == 0) {
    r.status = UserReadStatus::not_on_counter;
  } else if (page.pmc_width == 0 || page.pmc_width > 64) {
    r.status = UserReadStatus::bad_pmc_width;
  } else if (!page.cap_user_time) {
    r.status = UserReadStatus::no_user_time;
  } else if (page.time_shift >= 64) {
    r.status = UserReadStatus::bad_time_shift;
  } else {
    r.status = UserReadStatus::ok;
    r.value = static_cast<std::uint64_t>(page.offset) + sign_extend_pmc(pmc, page.pmc_width);
    const std::uint64_t delta = mmap_time_delta_ns(page, cycles);
    r.time_enabled_ns = page.time_enabled_ns + delta;
    r.time_running_ns = page.time_running_ns + delta;
  }
  return r;
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
