// perf_math.hpp — the arithmetic of perf_event counting, away from the syscalls so that CI can
// test it without a PMU (the reason nanobench keeps unit_perf_counter_math.cpp apart).
// Platform-free: no syscalls, no <linux/...> headers. Everything here works on plain words.
//  * Group read layout, for read_format = GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING:
//      { u64 nr; u64 time_enabled; u64 time_running; { u64 value; u64 id; } cnt[nr]; }
//  * Multiplexing: when the kernel time-shares more counters than the PMU has, an event runs
//    only part of the time it is enabled; the estimate is value * enabled / running. An event
//    that never ran (running == 0) is "not counted", never a silent zero.
//  * User-space reads (rdpmc): the count and times from a snapshot of the event's mmap page
//    and the counter value, as include/uapi/linux/perf_event.h describes beside
//    struct perf_event_mmap_page; the seqlock loop and the instructions live in perf_counters.
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
// The same into `out`, reusing its storage (no allocation once it has held nr values).
void parse_group_read_into(const std::uint64_t* words, std::size_t n_words, long long expected_nr,
                           GroupRead& out);

// after - before, per id (the result keeps `after`'s order), and the enabled/running deltas.
// Counters and times never decrease: a decrease, an id missing from `before` or a different
// number of counters throws std::invalid_argument ("[group_read_delta] ...").
GroupRead group_read_delta(const GroupRead& before, const GroupRead& after);
// The same into `out` (which must not be `before` or `after`), reusing its storage.
void group_read_delta_into(const GroupRead& before, const GroupRead& after, GroupRead& out);

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

// ---- user-space reads --------------------------------------------------------------------

// The fields of struct perf_event_mmap_page that a self-monitoring read needs, as copied
// inside the page's seqlock loop. Times are as of the page's last update by the kernel.
struct MmapPageSnapshot {
  bool cap_user_rdpmc = false;       // the kernel lets this thread execute rdpmc for the event
  bool cap_user_time = false;        // time_shift, time_mult and time_offset are valid
  bool cap_user_time_short = false;  // time_cycles and time_mask are valid (a narrow clock)
  std::uint32_t index = 0;           // hardware counter + 1; 0: on no hardware counter now
  std::int64_t offset = 0;           // add the sign-extended counter value to get the count
  std::uint16_t pmc_width = 0;       // bits the hardware counter holds (48 on most x86)
  std::uint64_t time_enabled_ns = 0;
  std::uint64_t time_running_ns = 0;
  std::uint16_t time_shift = 0;
  std::uint32_t time_mult = 0;
  std::uint64_t time_offset = 0;
  std::uint64_t time_cycles = 0;
  std::uint64_t time_mask = 0;
};

enum class UserReadStatus {
  ok,
  no_user_rdpmc,   // cap_user_rdpmc is 0: the kernel does not allow rdpmc for this event
  not_on_counter,  // index is 0: a software event, or stopped, or multiplexed out right now
  bad_pmc_width,   // pmc_width outside 1..64: nothing to sign-extend with
  no_user_time,    // cap_user_time is 0: the page's times cannot be brought up to date
  bad_time_shift,  // time_shift >= 64
};

struct UserRead {
  UserReadStatus status = UserReadStatus::not_on_counter;
  std::uint64_t value = 0;            // offset + the sign-extended counter; 0 unless ok
  std::uint64_t time_enabled_ns = 0;  // the page's times plus the time since its update
  std::uint64_t time_running_ns = 0;
};

// The low `width` bits of `pmc` as a two's-complement number, widened to 64 bits (returned
// modulo 2^64, so that adding it to a count is plain unsigned arithmetic). Bits above
// `width` are ignored. width must be 1..64 (anything else returns pmc unchanged).
std::uint64_t sign_extend_pmc(std::uint64_t pmc, unsigned width) noexcept;

// Nanoseconds since the page's last update, from the TSC value `cycles` read in the same
// seqlock loop: time_offset + cycles * time_mult >> time_shift, in the header's quot/rem form
// (exact while time_shift <= 32, which the kernel's cyc2ns conversion keeps), after the
// cap_user_time_short correction when that bit is set. Modulo 2^64, as time_offset is a
// negative number stored unsigned. Requires time_shift < 64.
std::uint64_t mmap_time_delta_ns(const MmapPageSnapshot& page, std::uint64_t cycles) noexcept;

// The count and times of one event from its page snapshot, the value rdpmc(index - 1)
// returned (`pmc`) and the TSC (`cycles`), read in the same seqlock loop. Usable only when
// cap_user_rdpmc is set and index is not 0 (the event is on a hardware counter, so it has
// been both enabled and running since the page's last update and the delta is added to both
// times); cap_user_time is required too, so the times are current and not as of the update.
// Checks in this order: cap_user_rdpmc, index, pmc_width, cap_user_time, time_shift.
UserRead user_space_count(const MmapPageSnapshot& page, std::uint64_t pmc,
                          std::uint64_t cycles) noexcept;

// total / calls. Throws std::invalid_argument ("[per_call] ...") for calls == 0 or a
// non-finite total.
double per_call(double total, std::uint64_t calls);

}  // namespace fastbench
