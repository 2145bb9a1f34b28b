// test_perf.cpp — native tests of the perf_event layer: perf_math on synthetic inputs with
// known answers (runs anywhere), event-name resolution, availability probes and the errno
// test hook, and CounterGroup on software events (task-clock, page-faults), which work in
// VMs without a PMU. Same harness as test_core.cpp: CHECK never aborts; tests that need
// Linux perf_event skip with a printed reason. The summary line ends the output.
// The rdpmc read itself needs a hardware PMU that allows user-space rdpmc: its arithmetic is
// tested here on synthetic page snapshots, the path choice and the page mappings on software
// events, and a real rdpmc read only where a hardware event opens (skipped in VMs without).
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "clock.hpp"
#include "perf_counters.hpp"
#include "perf_math.hpp"

#include "harness.hpp"

namespace fb = fastbench;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- perf_math ----------------------------------------------------------------------------

void test_parse_group_read() {
  const std::vector<std::uint64_t> w = {2, 1000, 500, 11, 7, 22, 8};
  const fb::GroupRead r = fb::parse_group_read(w, 2);
  CHECK(r.time_enabled_ns == 1000, r.time_enabled_ns);
  CHECK(r.time_running_ns == 500, r.time_running_ns);
  CHECK(r.values.size() == 2, r.values.size());
  CHECK(r.values[0].id == 7 && r.values[0].value == 11, r.values[0].id);
  CHECK(r.values[1].id == 8 && r.values[1].value == 22, r.values[1].id);
  const fb::GroupRead empty = fb::parse_group_read(std::vector<std::uint64_t>{0, 5, 5});
  CHECK(empty.values.empty(), empty.values.size());
}

void test_parse_group_read_rejects_bad_buffers() {
  CHECK_THROWS(std::invalid_argument, fb::parse_group_read(std::vector<std::uint64_t>{1, 2}),
               "[parse_group_read] short buffer");
  CHECK_THROWS(std::invalid_argument,
               fb::parse_group_read(std::vector<std::uint64_t>{2, 1, 1, 5, 6}),
               "[parse_group_read] short buffer");
  CHECK_THROWS(std::invalid_argument,
               fb::parse_group_read(std::vector<std::uint64_t>{1, 1, 1, 5, 6, 7, 8}),
               "[parse_group_read] nr mismatch");
  CHECK_THROWS(std::invalid_argument,
               fb::parse_group_read(std::vector<std::uint64_t>{1, 1, 1, 5, 6}, 2),
               "[parse_group_read] nr mismatch");
  // A huge nr must not overflow the size computation.
  CHECK_THROWS(std::invalid_argument,
               fb::parse_group_read(std::vector<std::uint64_t>{~0ULL, 1, 1, 5, 6}),
               "[parse_group_read] short buffer");
  CHECK_THROWS(std::invalid_argument, fb::parse_group_read(nullptr, 0),
               "[parse_group_read] short buffer");
}

void test_group_read_delta() {
  const fb::GroupRead a = fb::parse_group_read(std::vector<std::uint64_t>{2, 100, 50, 10, 7, 20, 8});
  // Same ids, different order: matched by id, not by position.
  const fb::GroupRead b =
      fb::parse_group_read(std::vector<std::uint64_t>{2, 300, 150, 25, 8, 13, 7});
  const fb::GroupRead d = fb::group_read_delta(a, b);
  CHECK(d.time_enabled_ns == 200 && d.time_running_ns == 100, d.time_enabled_ns);
  CHECK(d.values.size() == 2, d.values.size());
  CHECK(d.values[0].id == 8 && d.values[0].value == 5, d.values[0].value);
  CHECK(d.values[1].id == 7 && d.values[1].value == 3, d.values[1].value);
  CHECK_THROWS(std::invalid_argument, fb::group_read_delta(b, a), "[group_read_delta]");
  fb::GroupRead c = b;
  c.values[0].value = 1;  // counter 8 went backwards while times advanced
  c.time_enabled_ns = 400;
  c.time_running_ns = 400;
  CHECK_THROWS(std::invalid_argument, fb::group_read_delta(a, c), "[group_read_delta] counter");
  fb::GroupRead e = b;
  e.values[0].id = 99;
  CHECK_THROWS(std::invalid_argument, fb::group_read_delta(a, e), "[group_read_delta] id 99");
  fb::GroupRead f = b;
  f.values.pop_back();
  CHECK_THROWS(std::invalid_argument, fb::group_read_delta(a, f), "[group_read_delta]");
}

void test_into_variants_reuse_storage() {
  // A buffer that held a larger reading comes back holding exactly the new one.
  fb::GroupRead out = fb::parse_group_read(std::vector<std::uint64_t>{3, 9, 9, 1, 1, 2, 2, 3, 3});
  const std::vector<std::uint64_t> w = {2, 300, 150, 25, 8, 13, 7};
  fb::parse_group_read_into(w.data(), w.size(), 2, out);
  CHECK(out.values.size() == 2 && out.time_enabled_ns == 300 && out.time_running_ns == 150,
        out.values.size());
  CHECK(out.values[0].id == 8 && out.values[0].value == 25 && out.values[1].id == 7 &&
            out.values[1].value == 13,
        out.values[0].id);
  const fb::GroupRead a = fb::parse_group_read(std::vector<std::uint64_t>{2, 100, 50, 10, 7, 20, 8});
  fb::GroupRead d = a;  // stale contents, overwritten
  d.values.push_back(fb::CounterValue{5, 5});
  fb::group_read_delta_into(a, out, d);
  const fb::GroupRead expected = fb::group_read_delta(a, out);
  CHECK(d.values.size() == expected.values.size() &&
            d.time_enabled_ns == expected.time_enabled_ns &&
            d.values[0].value == 5 && d.values[1].value == 3,
        d.values.size());
  CHECK_THROWS(std::invalid_argument, fb::parse_group_read_into(w.data(), 2, -1, out),
               "[parse_group_read] short buffer");
}

void test_scale_count() {
  const fb::ScaledCount full = fb::scale_count(1000, 200, 200);
  CHECK(full.counted && !full.scaled && full.value == 1000.0, full.value);
  CHECK(full.running_fraction == 1.0, full.running_fraction);
  const fb::ScaledCount half = fb::scale_count(1000, 200, 100);
  CHECK(half.counted && half.scaled, half.scaled);
  CHECK(half.value == 2000.0, half.value);
  CHECK(half.running_fraction == 0.5, half.running_fraction);
  const fb::ScaledCount none = fb::scale_count(0, 200, 0);
  CHECK(!none.counted && std::isnan(none.value), none.value);
  CHECK(none.running_fraction == 0.0 && !none.scaled, none.running_fraction);
  const fb::ScaledCount never = fb::scale_count(0, 0, 0);
  CHECK(!never.counted, never.value);
  const fb::ScaledCount over = fb::scale_count(5, 100, 120);  // running > enabled: unscaled
  CHECK(over.counted && !over.scaled && over.value == 5.0, over.value);
}

void test_overhead_and_per_call() {
  const fb::Subtracted s = fb::subtract_overhead(100.0, 30.0);
  CHECK(s.value == 70.0 && !s.clamped, s.value);
  const fb::Subtracted c = fb::subtract_overhead(10.0, 30.0);
  CHECK(c.value == 0.0 && c.clamped, c.value);
  const fb::Subtracted z = fb::subtract_overhead(30.0, 30.0);
  CHECK(z.value == 0.0 && !z.clamped, z.value);
  CHECK_THROWS(std::invalid_argument, fb::subtract_overhead(1.0, -1.0), "[subtract_overhead]");
  CHECK_THROWS(std::invalid_argument, fb::subtract_overhead(std::nan(""), 0.0),
               "[subtract_overhead]");
  CHECK(fb::per_call(1000.0, 8) == 125.0, fb::per_call(1000.0, 8));
  CHECK_THROWS(std::invalid_argument, fb::per_call(1.0, 0), "[per_call]");
}

// ---- user-space reads (rdpmc) on synthetic page snapshots -------------------------------

constexpr std::uint64_t kMask48 = (std::uint64_t{1} << 48) - 1;

// A page as the kernel leaves it for an event on a 48-bit counter that user space may read.
fb::MmapPageSnapshot rdpmc_page(std::int64_t offset) {
  fb::MmapPageSnapshot p;
  p.cap_user_rdpmc = true;
  p.cap_user_time = true;
  p.index = 3;  // rdpmc(2)
  p.offset = offset;
  p.pmc_width = 48;
  p.time_enabled_ns = 7000;
  p.time_running_ns = 5000;
  p.time_shift = 10;
  p.time_mult = 1024;  // 1 ns per cycle
  p.time_offset = ~std::uint64_t{0} - 999;  // -1000: the page was updated at cycle 1000
  return p;
}

void test_sign_extend_pmc() {
  CHECK(fb::sign_extend_pmc(kMask48, 48) == ~std::uint64_t{0}, "48-bit -1");
  CHECK(fb::sign_extend_pmc(kMask48 >> 1, 48) == (kMask48 >> 1), "largest positive");
  CHECK(fb::sign_extend_pmc(std::uint64_t{1} << 47, 48) == 0xFFFF800000000000ULL,
        fb::sign_extend_pmc(std::uint64_t{1} << 47, 48));
  CHECK(fb::sign_extend_pmc(5, 48) == 5, fb::sign_extend_pmc(5, 48));
  // Bits above the width are not part of the counter.
  CHECK(fb::sign_extend_pmc(0xABCD000000000005ULL, 48) == 5, "high bits ignored");
  CHECK(fb::sign_extend_pmc(0xABCD800000000000ULL, 48) == 0xFFFF800000000000ULL, "");
  CHECK(fb::sign_extend_pmc(0x1, 1) == ~std::uint64_t{0}, "1-bit -1");
  CHECK(fb::sign_extend_pmc(0xFFFFFFFF, 32) == ~std::uint64_t{0}, "32-bit -1");
  CHECK(fb::sign_extend_pmc(0x8000000000000000ULL, 64) == 0x8000000000000000ULL, "64 bits");
  CHECK(fb::sign_extend_pmc(123, 0) == 123 && fb::sign_extend_pmc(123, 65) == 123, "bad width");
}

void test_rdpmc_count_width_48() {
  // The x86 kernel programs a counting event to -period (x86_perf_event_set_period) and sets
  // offset = count - (u64)-period, so offset + sign_extend(counter) is the count.
  const std::uint64_t period = (std::uint64_t{1} << 47) - 1;
  const std::uint64_t programmed = (0 - period) & kMask48;  // 0x800000000001
  const std::int64_t offset = 1000 + static_cast<std::int64_t>(period);
  const fb::MmapPageSnapshot page = rdpmc_page(offset);
  const fb::UserRead at_start = fb::user_space_count(page, programmed, 1000);
  CHECK(at_start.status == fb::UserReadStatus::ok, static_cast<int>(at_start.status));
  CHECK(at_start.value == 1000, at_start.value);
  const fb::UserRead later = fb::user_space_count(page, programmed + 10, 1000);
  CHECK(later.value == 1010, later.value);
  // rdpmc may return bits above the counter's width: they must not reach the count.
  const fb::UserRead noisy = fb::user_space_count(page, (programmed + 10) | (0xFFFFULL << 48), 1000);
  CHECK(noisy.value == 1010, noisy.value);
  // A negative offset: the sum is taken modulo 2^64.
  const fb::UserRead neg = fb::user_space_count(rdpmc_page(-5), 16, 1000);
  CHECK(neg.status == fb::UserReadStatus::ok && neg.value == 11, neg.value);
}

void test_rdpmc_count_wraparound() {
  // The counter wraps from 2^48 - 2 through 0 to 3 between two reads with the same offset:
  // -2 then 3 after sign extension, so the count moves by 5, not by about -2^48.
  const fb::MmapPageSnapshot page = rdpmc_page(102);
  const fb::UserRead before = fb::user_space_count(page, kMask48 - 1, 1000);
  const fb::UserRead after = fb::user_space_count(page, 3, 1000);
  CHECK(before.value == 100, before.value);
  CHECK(after.value == 105, after.value);
  CHECK(after.value - before.value == 5, after.value - before.value);
}

void test_rdpmc_index_0_and_cap_bit_0() {
  fb::MmapPageSnapshot off = rdpmc_page(1000);
  off.index = 0;  // a software event, or stopped, or multiplexed out
  const fb::UserRead r0 = fb::user_space_count(off, 42, 1000);
  CHECK(r0.status == fb::UserReadStatus::not_on_counter, static_cast<int>(r0.status));
  CHECK(r0.value == 0 && r0.time_enabled_ns == 0, r0.value);  // no number to misuse
  fb::MmapPageSnapshot nocap = rdpmc_page(1000);
  nocap.cap_user_rdpmc = false;
  const fb::UserRead r1 = fb::user_space_count(nocap, 42, 1000);
  CHECK(r1.status == fb::UserReadStatus::no_user_rdpmc, static_cast<int>(r1.status));
  CHECK(r1.value == 0, r1.value);
  nocap.index = 0;  // both: the capability is named first (it is why the index is 0, too)
  CHECK(fb::user_space_count(nocap, 42, 1000).status == fb::UserReadStatus::no_user_rdpmc, "");
  fb::MmapPageSnapshot nowidth = rdpmc_page(1000);
  nowidth.pmc_width = 0;
  CHECK(fb::user_space_count(nowidth, 42, 1000).status == fb::UserReadStatus::bad_pmc_width, "");
  nowidth.pmc_width = 65;
  CHECK(fb::user_space_count(nowidth, 42, 1000).status == fb::UserReadStatus::bad_pmc_width, "");
  fb::MmapPageSnapshot notime = rdpmc_page(1000);
  notime.cap_user_time = false;
  CHECK(fb::user_space_count(notime, 42, 1000).status == fb::UserReadStatus::no_user_time, "");
  fb::MmapPageSnapshot shift = rdpmc_page(1000);
  shift.time_shift = 64;
  CHECK(fb::user_space_count(shift, 42, 1000).status == fb::UserReadStatus::bad_time_shift, "");
}

void test_rdpmc_times() {
  // 1 ns per cycle, page updated at cycle 1000: at cycle 1500 both times gained 500 ns.
  const fb::UserRead r = fb::user_space_count(rdpmc_page(0), 0, 1500);
  CHECK(r.time_enabled_ns == 7500 && r.time_running_ns == 5500, r.time_enabled_ns, " ",
        r.time_running_ns);
  // A 2 GHz TSC: mult/2^shift = 0.5 ns per cycle; the rem term keeps the low bits.
  fb::MmapPageSnapshot p;
  p.time_shift = 10;
  p.time_mult = 512;
  p.time_offset = 0 - std::uint64_t{1000000};
  CHECK(fb::mmap_time_delta_ns(p, 3000000) == 500000, fb::mmap_time_delta_ns(p, 3000000));
  CHECK(fb::mmap_time_delta_ns(p, 3000001) == 500000, "floor of 500000.5");
  CHECK(fb::mmap_time_delta_ns(p, 3000002) == 500001, fb::mmap_time_delta_ns(p, 3000002));
  // Large TSC values: quot * mult would overflow as cyc * mult; the quot/rem form does not.
  const std::uint64_t big = std::uint64_t{1} << 60;
  CHECK(fb::mmap_time_delta_ns(p, big) == (big >> 1) - 1000000, fb::mmap_time_delta_ns(p, big));
  // cap_user_time_short: a 32-bit clock that wrapped since the page's update.
  fb::MmapPageSnapshot s;
  s.cap_user_time_short = true;
  s.time_mult = 1;
  s.time_shift = 0;
  s.time_cycles = 0xFFFFFFF0;
  s.time_mask = 0xFFFFFFFF;
  CHECK(fb::mmap_time_delta_ns(s, 0x10) == 0x100000010ULL, fb::mmap_time_delta_ns(s, 0x10));
}

// ---- event names --------------------------------------------------------------------------

void test_resolve_known_events() {
  const std::vector<std::string> names = fb::known_event_names();
  CHECK(names.size() == 21, names.size());
  for (const std::string& n : names) {
    const fb::EventSpec s = fb::resolve_event(n);
    CHECK(s.name == n, s.name);
  }
  CHECK(fb::resolve_event("cycles").type == 0 && fb::resolve_event("cycles").config == 0, "");
  CHECK(fb::resolve_event("ref-cycles").fallback == "cycles", fb::resolve_event("ref-cycles").fallback);
  const fb::EventSpec tc = fb::resolve_event("task-clock");
  CHECK(tc.type == 1 && tc.config == 1 && !tc.hardware, tc.type);
  const fb::EventSpec llc = fb::resolve_event("LLC-load-misses");
  CHECK(llc.type == 3 && llc.config == 0x10002 && llc.hardware, llc.config);
}

void test_resolve_raw_and_type_config() {
  const fb::EventSpec r = fb::resolve_event("r00c0");
  CHECK(r.type == 4 && r.config == 0xc0 && r.hardware, r.config);
  CHECK(fb::resolve_event("rFFFFFFFFFFFFFFFF").config == ~0ULL, "");
  const fb::EventSpec tc = fb::resolve_event("1:1");
  CHECK(tc.type == 1 && tc.config == 1 && !tc.hardware, tc.type);
  const fb::EventSpec hx = fb::resolve_event("4:0x3c");
  CHECK(hx.type == 4 && hx.config == 0x3c, hx.config);
  const fb::EventSpec pmu = fb::resolve_event("software:5");  // from /sys, type 1 on Linux
  CHECK(pmu.type == 1 && pmu.config == 5, pmu.type);
  for (const char* bad : {"", "nope", "r", "rxyz", "r12345678901234567", "1:", ":1", "1:0x",
                          "1:zz", "99999999999:1", "no-such-pmu:1", "../x:1", "cycles "}) {
    CHECK_THROWS(std::invalid_argument, fb::resolve_event(bad), "[resolve_event] unknown event");
  }
}

// ---- probes and the errno hook ------------------------------------------------------------

bool perf_works(std::string& why) {
  const fb::EventProbe p = fb::probe_event("task-clock");
  why = p.reason;
  return p.available;
}

void test_probe_events() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  const fb::EventProbe tc = fb::probe_event("task-clock");
  CHECK(tc.available && tc.reason.empty() && tc.opened_as == "task-clock", tc.reason);
  const fb::EventProbe cy = fb::probe_event("cycles");
  CHECK(cy.available || !cy.reason.empty(), cy.reason);
  if (!cy.available) std::printf("note: cycles unavailable: %s\n", cy.reason.c_str());
  if (!cy.available && cy.error == ENOENT) {
    CHECK(cy.reason == "no hardware PMU exposed (typical of VMs and containers)", cy.reason);
  }
  const fb::EventProbe ref = fb::probe_event("ref-cycles");
  CHECK(ref.available == cy.available || ref.available, ref.reason);
  CHECK_THROWS(std::invalid_argument, fb::probe_event("bogus"), "[resolve_event] unknown event");
}

// The advice fits the level: lowering perf_event_paranoid helps only at 3 or above.
void test_permission_advice_fits_the_paranoid_level() {
  for (const char* level : {"3", "4"}) {
    const std::string a = fb::detail::permission_advice(level);
    CHECK(contains(a, "kernel.perf_event_paranoid=2"), a);
  }
  for (const char* level : {"2", "1", "0", "-1"}) {
    const std::string a = fb::detail::permission_advice(level);
    CHECK(!contains(a, "sysctl"), a);
    CHECK(contains(a, std::string("is ") + level + ":"), a);
    CHECK(contains(a, "something else refused"), a);
  }
  CHECK(contains(fb::detail::permission_advice("unknown"), "unreadable"), "unknown level");
}

void test_injected_errnos() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  struct Case {
    int err;
    std::string part;
  };
  const Case cases[] = {
      {ENOENT, "no hardware PMU exposed (typical of VMs and containers)"},
      {EACCES, "perf_event_paranoid is "},
      {EPERM, "grant CAP_PERFMON"},
      {EINVAL, "unsupported event or attribute combination"},
      {ENOSYS, "perf_event_open is not available (seccomp or container policy?)"},
      {EMFILE, "(errno " + std::to_string(EMFILE) + ")"},
      {EOPNOTSUPP, "(errno " + std::to_string(EOPNOTSUPP) + ")"},
  };
  for (const Case& c : cases) {
    fb::detail::inject_open_errno(c.err, 1);
    const fb::EventProbe p = fb::probe_event("task-clock");
    CHECK(!p.available && p.error == c.err, c.err);
    CHECK(contains(p.reason, c.part), p.reason, " lacks ", c.part);
  }
  fb::detail::inject_open_errno(EACCES, 1);
  const std::string paranoid = fb::probe_event("task-clock").reason;
  FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int level = -100;
  if (f != nullptr) {
    if (std::fscanf(f, "%d", &level) != 1) level = -100;
    std::fclose(f);
  }
  if (level != -100) CHECK(contains(paranoid, "is " + std::to_string(level) + ":"), paranoid);
  // The hook is consumed: the next open reaches the kernel again.
  CHECK(fb::probe_event("task-clock").available, "hook not consumed");
  // Count > 1 spans several opens; a group whose every open fails has nothing available.
  fb::detail::inject_open_errno(ENOSPC, 2);
  fb::CounterGroup g({"task-clock", "page-faults"});
  CHECK(!g.any_available(), g.group_count());
  CHECK(g.events()[1].error == ENOSPC && !g.events()[1].reason.empty(), g.events()[1].error);
  // A failing leader: the first event that opens leads instead.
  fb::detail::inject_open_errno(ENOENT, 1);
  fb::CounterGroup led({"task-clock", "page-faults"});
  CHECK(!led.events()[0].available && led.events()[1].available, led.events()[1].reason);
  CHECK(led.events()[1].group == 0 && led.group_count() == 1, led.events()[1].group);
  fb::detail::inject_open_errno(0, 0);
}

// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID), the quantity task-clock counts.
double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Spins until this thread has run `ns` of CPU time: a wall-clock spin of that length gets
// less CPU time when other processes share the cores (5 ms of spin read 1.9 ms of task-clock
// on a loaded machine).
void spin_cpu_ns(double ns) {
  const double cpu0 = thread_cpu_ns();
  while (thread_cpu_ns() - cpu0 < ns) fb::spin_ns(2e5);
}

void test_refused_member_starts_a_new_group() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  // The leader opens; adding page-faults is refused (EINVAL), so it opens alone.
  fb::detail::inject_open_errno(EINVAL, 1, 1);
  fb::CounterGroup g({"task-clock", "page-faults", "context-switches"});
  fb::detail::inject_open_errno(0, 0);
  CHECK(g.group_count() == 2, g.group_count());
  CHECK(g.events()[0].group == 0 && g.events()[1].group == 1 && g.events()[2].group == 1,
        g.events()[1].group, " ", g.events()[2].group);
  g.start();
  spin_cpu_ns(3e6);
  g.stop();
  const std::vector<fb::CounterReading> r = g.read();
  CHECK(r[0].counted && r[0].value >= 1e6, r[0].value);
  CHECK(r[1].counted && r[2].counted, r[1].reason);
}

// ---- CounterGroup -------------------------------------------------------------------------

void test_task_clock_counts_busy_wait() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  fb::CounterGroup g({"task-clock"});
  CHECK(g.any_available() && g.group_count() == 1, g.group_count());
  CHECK(std::string(g.read_path()) == "read", g.read_path());
  fb::spin_ns(1e3);  // the first spin calibrates the TSC (~70 ms): keep that out of the count
  // The oracle is this thread's CPU time (CLOCK_THREAD_CPUTIME_ID), the quantity task-clock
  // counts: a wall-clock spin gets less CPU time when another process shares the core.
  const double cpu0 = thread_cpu_ns();
  g.start();
  while (thread_cpu_ns() - cpu0 < 20e6) fb::spin_ns(1e6);
  g.stop();
  const double cpu_ns = thread_cpu_ns() - cpu0;
  const std::vector<fb::CounterReading> r = g.read();
  CHECK(r.size() == 1 && r[0].available && r[0].counted, r[0].reason);
  CHECK(r[0].value >= 0.9 * 20e6 && r[0].value <= cpu_ns + 2e6, "task-clock ns ", r[0].value,
        " thread CPU ns ", cpu_ns);
  CHECK(r[0].time_enabled_ns >= r[0].time_running_ns, r[0].time_enabled_ns);
  // Moved-from groups own nothing; the moved-to one still reads.
  fb::CounterGroup moved(std::move(g));
  CHECK(moved.read()[0].raw == r[0].raw, moved.read()[0].raw);
}

void test_page_faults_count_fresh_pages() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  const long page = sysconf(_SC_PAGESIZE);
  const std::size_t n = 256;
  const std::size_t bytes = n * static_cast<std::size_t>(page);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  SKIP_UNLESS(mem != MAP_FAILED, "mmap failed");
  fb::CounterGroup g({"page-faults", "minor-faults"});
  g.start();
  volatile char* p = static_cast<volatile char*>(mem);
  for (std::size_t i = 0; i < n; ++i) p[i * static_cast<std::size_t>(page)] = 1;
  g.stop();
  const std::vector<fb::CounterReading> r = g.read();
  munmap(mem, bytes);
  CHECK(r[0].available && r[0].value >= 0.9 * static_cast<double>(n), r[0].value, " of ", n);
  CHECK(r[1].available && r[1].value >= 0.9 * static_cast<double>(n), r[1].value, " of ", n);
  CHECK(g.group_count() == 1, g.group_count());
}

void test_missing_hardware_is_a_state() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  fb::CounterGroup g({"cycles", "task-clock"});
  const fb::EventProbe cy = fb::probe_event("cycles");
  CHECK(g.events()[0].available == cy.available, g.events()[0].reason);
  if (!cy.available) {
    CHECK(g.events()[0].reason == cy.reason && !cy.reason.empty(), g.events()[0].reason);
  }
  CHECK(g.events()[1].available, g.events()[1].reason);
  g.start();
  spin_cpu_ns(5e6);
  g.stop();
  const std::vector<fb::CounterReading> r = g.read();
  CHECK(r[1].counted && r[1].value >= 2e6, r[1].value);
  if (!cy.available) CHECK(!r[0].counted && !r[0].reason.empty(), r[0].reason);
  CHECK_THROWS(std::invalid_argument, fb::CounterGroup({"task-clock", "bogus"}),
               "[resolve_event] unknown event");
  CHECK_THROWS(std::invalid_argument, fb::CounterGroup({}), "[CounterGroup]");
}

void test_calibrate_read_overhead() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  fb::CounterGroup g({"task-clock", "cycles"});
  const std::vector<fb::CounterOverhead> o = fb::calibrate_read_overhead(g, 51);
  CHECK(o.size() == 2 && o[0].available, o.size());
  CHECK(o[0].median >= 0.0 && o[0].median < 1e6, "empty-region task-clock ns ", o[0].median);
  std::printf("note: empty-region task-clock %.0f ns\n", o[0].median);
  CHECK_THROWS(std::invalid_argument, fb::calibrate_read_overhead(g, 0),
               "[calibrate_read_overhead]");
}

void test_time_counter_ops() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  fb::CounterGroup g({"task-clock", "page-faults", "context-switches"});
  const fb::CounterCost c = fb::time_counter_ops(g, 5, 20);
  CHECK(c.read_ns > 0.0 && std::isfinite(c.read_ns), "read ns ", c.read_ns);
  CHECK(c.region_ns > 0.0 && std::isfinite(c.region_ns), "region ns ", c.region_ns);
  CHECK(c.read_path == g.read_path(), c.read_path, " vs ", g.read_path());
  CHECK(c.reps == 5 && c.batch == 20, c.reps, " ", c.batch);
  // The group is left stopped: a spin afterwards adds no task-clock.
  const double before = g.read()[0].value;
  fb::spin_ns(2e6);
  const double after = g.read()[0].value;
  CHECK(after == before, "task-clock moved from ", before, " to ", after, " while stopped");
  std::printf("note: read %.0f ns, region %.0f ns (%s)\n", c.read_ns, c.region_ns,
              c.read_path.c_str());
  CHECK_THROWS(std::invalid_argument, fb::time_counter_ops(g, 0, 1), "[time_counter_ops]");
  CHECK_THROWS(std::invalid_argument, fb::time_counter_ops(g, 1, 0), "[time_counter_ops]");
}

// ---- the read path -------------------------------------------------------------------------

// Mappings of perf_event files in this process (one per mmapped event page).
int perf_event_mappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (contains(line, "[perf_event]")) ++n;
  }
  return n;
}

void test_software_group_reads_with_read() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  fb::CounterGroup g({"task-clock", "page-faults"});
  const std::string expected =
      "software events are not on hardware counters (mmap index 0): task-clock, page-faults";
  CHECK(std::string(g.read_path()) == "read", g.read_path());
  CHECK(g.read_path_reason() == expected, g.read_path_reason());
  g.start();
  fb::spin_ns(2e6);
  const std::vector<fb::CounterReading> running = g.read();  // tries the pages: index 0
  CHECK(std::string(g.read_path()) == "read" && g.read_path_reason() == expected,
        g.read_path_reason());
  CHECK(running[0].counted && running[0].value > 0, running[0].value);
  g.prefer_read(true);
  CHECK(g.prefers_read() && g.read_path_reason() == "read(2) forced by prefer_read",
        g.read_path_reason());
  const std::vector<fb::CounterReading> forced = g.read();
  CHECK(forced[0].value >= running[0].value, forced[0].value, " < ", running[0].value);
  CHECK(g.read_path_reason() == "read(2) forced by prefer_read", g.read_path_reason());
  g.prefer_read(false);
  CHECK(!g.prefers_read() && g.read_path_reason() == expected, g.read_path_reason());
  g.stop();
  const std::vector<fb::CounterReading> stopped = g.read();
  CHECK(stopped[0].value >= forced[0].value && g.read_path_reason() == expected,
        g.read_path_reason());
  // The path and its reason move with the group.
  fb::CounterGroup moved(std::move(g));
  CHECK(moved.read_path_reason() == expected && std::string(moved.read_path()) == "read",
        moved.read_path_reason());
  fb::CounterGroup inherited({"task-clock"}, true);
  CHECK(contains(inherited.read_path_reason(), "inherit"), inherited.read_path_reason());
}

void test_event_pages_are_mapped_and_unmapped() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
#if defined(__x86_64__)
  const int base = perf_event_mappings();
  {
    fb::CounterGroup plain({"task-clock", "page-faults"});  // software: never mapped
    CHECK(perf_event_mappings() == base, perf_event_mappings() - base);
  }
  struct MapSoftware {  // to see the lifecycle without a PMU, for this test only
    MapSoftware() { fb::detail::map_software_pages(true); }
    ~MapSoftware() { fb::detail::map_software_pages(false); }
  };
  {
    const MapSoftware on;
    fb::CounterGroup g({"task-clock", "page-faults", "context-switches"});
    const bool mapped = !contains(g.read_path_reason(), "mmap of the event page failed");
    SKIP_UNLESS(mapped, g.read_path_reason());
    CHECK(perf_event_mappings() == base + 3, perf_event_mappings() - base);
    fb::CounterGroup moved(std::move(g));  // the pages move, nothing is mapped twice
    CHECK(perf_event_mappings() == base + 3, perf_event_mappings() - base);
    fb::CounterGroup other({"task-clock"});
    CHECK(perf_event_mappings() == base + 4, perf_event_mappings() - base);
    other = std::move(moved);  // other's own page is unmapped, moved's pages now its
    CHECK(perf_event_mappings() == base + 3, perf_event_mappings() - base);
    other.start();
    fb::spin_ns(1e6);
    CHECK(other.read()[0].counted, other.read()[0].reason);
    fb::CounterGroup inherited({"task-clock"}, true);  // the kernel refuses to mmap these
    CHECK(perf_event_mappings() == base + 3, perf_event_mappings() - base);
  }
  CHECK(perf_event_mappings() == base, perf_event_mappings() - base);
#else
  skip("event pages are mapped on x86-64 only");
#endif
}

// Where a hardware event opens, a read while it runs goes through rdpmc or says why not, and
// agrees with read(2). Skipped in VMs without a PMU (hardware events fail with ENOENT).
void test_hardware_read_paths_agree() {
  const fb::EventProbe ins = fb::probe_event("instructions");
  SKIP_UNLESS(ins.available, "instructions cannot be opened: " + ins.reason);
  fb::CounterGroup g({"instructions", "cycles"});
  g.start();
  fb::spin_ns(1e6);
  const std::vector<fb::CounterReading> a = g.read();
  const std::string path_a = g.read_path();
  std::printf("note: hardware read path while running: %s%s%s\n", path_a.c_str(),
              g.read_path_reason().empty() ? "" : ": ", g.read_path_reason().c_str());
  CHECK(path_a == "rdpmc" ? g.read_path_reason().empty() : !g.read_path_reason().empty(),
        g.read_path_reason());
  g.prefer_read(true);
  const std::vector<fb::CounterReading> b = g.read();
  CHECK(std::string(g.read_path()) == "read", g.read_path());
  g.prefer_read(false);
  fb::spin_ns(1e6);
  const std::vector<fb::CounterReading> c = g.read();
  g.stop();
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].raw <= b[i].raw && b[i].raw <= c[i].raw, a[i].name, " ", a[i].raw, " ",
          b[i].raw, " ", c[i].raw);
    CHECK(a[i].time_enabled_ns <= b[i].time_enabled_ns &&
              b[i].time_enabled_ns <= c[i].time_enabled_ns, a[i].name);
  }
  CHECK(a[0].counted && a[0].value > 0, a[0].value);
  g.read();
  CHECK(std::string(g.read_path()) == "read", "a stopped event is on no counter");
}

void test_inherit_opens() {
  std::string why;
  SKIP_UNLESS(perf_works(why), "task-clock cannot be opened: " + why);
  fb::CounterGroup g({"task-clock", "context-switches"}, true);
  CHECK(g.events()[0].available, g.events()[0].reason);
  g.start();
  fb::spin_ns(2e6);
  g.stop();
  CHECK(g.read()[0].counted, g.read()[0].reason);
}


const Test kTests[] = {
    {"parse_group_read", test_parse_group_read},
    {"parse_group_read_rejects_bad_buffers", test_parse_group_read_rejects_bad_buffers},
    {"group_read_delta", test_group_read_delta},
    {"into_variants_reuse_storage", test_into_variants_reuse_storage},
    {"scale_count", test_scale_count},
    {"overhead_and_per_call", test_overhead_and_per_call},
    {"sign_extend_pmc", test_sign_extend_pmc},
    {"rdpmc_count_width_48", test_rdpmc_count_width_48},
    {"rdpmc_count_wraparound", test_rdpmc_count_wraparound},
    {"rdpmc_index_0_and_cap_bit_0", test_rdpmc_index_0_and_cap_bit_0},
    {"rdpmc_times", test_rdpmc_times},
    {"resolve_known_events", test_resolve_known_events},
    {"resolve_raw_and_type_config", test_resolve_raw_and_type_config},
    {"probe_events", test_probe_events},
    {"permission_advice_fits_the_paranoid_level", test_permission_advice_fits_the_paranoid_level},
    {"injected_errnos", test_injected_errnos},
    {"refused_member_starts_a_new_group", test_refused_member_starts_a_new_group},
    {"task_clock_counts_busy_wait", test_task_clock_counts_busy_wait},
    {"page_faults_count_fresh_pages", test_page_faults_count_fresh_pages},
    {"missing_hardware_is_a_state", test_missing_hardware_is_a_state},
    {"calibrate_read_overhead", test_calibrate_read_overhead},
    {"time_counter_ops", test_time_counter_ops},
    {"software_group_reads_with_read", test_software_group_reads_with_read},
    {"event_pages_are_mapped_and_unmapped", test_event_pages_are_mapped_and_unmapped},
    {"hardware_read_paths_agree", test_hardware_read_paths_agree},
    {"inherit_opens", test_inherit_opens},
};

}  // namespace

int main() { return run_all(kTests); }
