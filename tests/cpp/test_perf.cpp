// test_perf.cpp — native tests of the perf_event layer: perf_math on synthetic inputs with
// known answers (runs anywhere), event-name resolution, availability probes and the errno
// test hook, and CounterGroup on software events (task-clock, page-faults), which work in
// VMs without a PMU. Same harness as test_core.cpp: CHECK never aborts; tests that need
// Linux perf_event skip with a printed reason. The summary line ends the output.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
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
      {EPERM, "sudo sysctl kernel.perf_event_paranoid=2` or grant CAP_PERFMON"},
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
  fb::spin_ns(3e6);
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
  g.start();
  fb::spin_ns(20e6);
  g.stop();
  const std::vector<fb::CounterReading> r = g.read();
  CHECK(r.size() == 1 && r[0].available && r[0].counted, r[0].reason);
  CHECK(r[0].value >= 15e6 && r[0].value <= 40e6, "task-clock ns ", r[0].value);
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
  fb::spin_ns(5e6);
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
    {"scale_count", test_scale_count},
    {"overhead_and_per_call", test_overhead_and_per_call},
    {"resolve_known_events", test_resolve_known_events},
    {"resolve_raw_and_type_config", test_resolve_raw_and_type_config},
    {"probe_events", test_probe_events},
    {"injected_errnos", test_injected_errnos},
    {"refused_member_starts_a_new_group", test_refused_member_starts_a_new_group},
    {"task_clock_counts_busy_wait", test_task_clock_counts_busy_wait},
    {"page_faults_count_fresh_pages", test_page_faults_count_fresh_pages},
    {"missing_hardware_is_a_state", test_missing_hardware_is_a_state},
    {"calibrate_read_overhead", test_calibrate_read_overhead},
    {"inherit_opens", test_inherit_opens},
};

}  // namespace

int main() { return run_all(kTests); }
