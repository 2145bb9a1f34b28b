// test_core.cpp — the native tests of the platform-free core: clock conversion and TSC
// calibration, the timing loop, the loop-count search, sample batches, spins, CPU flags, the
// thread pool (its cap, its wake-ups, a forked child) and interrupt scopes.
// A harness of its own, no framework: CHECK records file:line and a message and never
// aborts; hardware-dependent tests skip with a reason. No Python here. Timing asserts are
// generous (CI runs on shared VMs): ordering, positivity and wide bands, except the 1% TSC
// cross-check, which retries because a preempted attempt says nothing about the rate.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "cpu.hpp"
#include "gemm.hpp"
#include "interrupt.hpp"
#include "parallel.hpp"
#include "timing.hpp"

#include "harness.hpp"
#include "stop_check.hpp"

#if defined(__unix__)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace fb = fastbench;

namespace {

bool near_rel(double a, double b, double rel) { return std::fabs(a - b) <= rel * std::fabs(b); }

// Busy-waits `ns` on steady_clock and returns how long it really took.
std::uint64_t busy_wait_steady_ns(std::uint64_t ns) {
  const std::uint64_t s0 = fb::SteadyClock::now();
  std::uint64_t s1 = s0;
  while (s1 - s0 < ns) s1 = fb::SteadyClock::now();
  return s1 - s0;
}

struct HookError {};  // thrown by test hooks and bodies, so nothing else can be mistaken for it

// A search that keeps sampling past this many trials is stuck; sample functions throw to
// turn the hang into a failure.
constexpr std::size_t kRunawayTrials = 64;

void guard_runaway(std::size_t trials) {
  if (trials > kRunawayTrials) throw std::length_error("runaway: still sampling after 64 trials");
}

constexpr double kNoBudget = 0.0;
constexpr std::uint64_t kTenSecondsNs = 10'000'000'000u;
const char* const kNoTsc = "TSC not usable (needs x86, rdtscp and an invariant TSC)";

// ---- clocks: conversion --------------------------------------------------------------------

void test_steady_conversion_is_identity() {
  for (double t : {0.0, 1.0, 12345.0, 1e15}) {
    CHECK(fb::ticks_to_ns(fb::ClockId::Steady, t) == t, "t=", t);
  }
  for (std::uint64_t t : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{999},
                          std::uint64_t{1'000'000'000'000}}) {
    const double ns = fb::ticks_to_ns(fb::ClockId::Steady, static_cast<double>(t));
    CHECK(fb::ns_to_ticks(fb::ClockId::Steady, ns) == t, "t=", t);
  }
  CHECK(fb::ns_to_ticks(fb::ClockId::Steady, 123.4) == 123u, "rounds to nearest");
  CHECK(fb::ns_to_ticks(fb::ClockId::Steady, 123.6) == 124u, "rounds to nearest");
}

void test_tsc_conversion_round_trip() {
  SKIP_UNLESS(fb::tsc_usable(), kNoTsc);
  const double hz = fb::tsc_calibration().hz;
  CHECK(hz > 0.0, "hz=", hz);
  CHECK(near_rel(fb::ticks_to_ns(fb::ClockId::Tsc, hz), 1e9, 1e-6),
        "one second of ticks -> ", fb::ticks_to_ns(fb::ClockId::Tsc, hz), " ns");
  const double one_s_ticks = static_cast<double>(fb::ns_to_ticks(fb::ClockId::Tsc, 1e9));
  CHECK(std::fabs(one_s_ticks - hz) <= 1.0, "1e9 ns -> ", one_s_ticks, " ticks, hz=", hz);
  for (std::uint64_t t : {std::uint64_t{1000}, std::uint64_t{123'456'789},
                          std::uint64_t{3'000'000'000'000}}) {
    const double ns = fb::ticks_to_ns(fb::ClockId::Tsc, static_cast<double>(t));
    const std::uint64_t back = fb::ns_to_ticks(fb::ClockId::Tsc, ns);
    const std::uint64_t diff = back > t ? back - t : t - back;
    CHECK(diff <= 1u, "ticks ", t, " -> ", ns, " ns -> ", back, " ticks");
  }
  const double tick_ns = 1e9 / hz;
  for (double ns : {0.0, 50.0, 1e6, 2.5e9}) {
    const std::uint64_t ticks = fb::ns_to_ticks(fb::ClockId::Tsc, ns);
    const double back = fb::ticks_to_ns(fb::ClockId::Tsc, static_cast<double>(ticks));
    CHECK(std::fabs(back - ns) <= tick_ns, "ns ", ns, " -> ", ticks, " ticks -> ", back, " ns");
  }
}

// ---- clocks: calibration -------------------------------------------------------------------

void test_calibrate_tsc_rejects_bad_arguments() {
  // Validated before the hardware is looked at, so this runs everywhere.
  for (int windows : {2, 0, -1}) {
    CHECK_THROWS(std::invalid_argument, fb::calibrate_tsc(windows, 0.005), "[calibrate_tsc]");
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double w : {std::nan(""), inf, -inf, 0.0, -0.001, 10.5, 1e9}) {
    CHECK_THROWS(std::invalid_argument, fb::calibrate_tsc(5, w), "[calibrate_tsc]");
  }
}

void test_calibrate_tsc_statistics() {
  if (!fb::cpu_features().x86) {
    CHECK_THROWS(std::runtime_error, fb::calibrate_tsc(5, 0.005), "[calibrate_tsc]");
  }
  SKIP_UNLESS(fb::tsc_usable(), kNoTsc);
  const fb::TscCalibration cal = fb::calibrate_tsc(5, 0.005);
  CHECK(cal.hz > 1e8 && cal.hz < 1e11, "hz=", cal.hz, " (expected 100 MHz..100 GHz)");
  CHECK(cal.window_s == 0.005, "window_s=", cal.window_s);
  CHECK(cal.window_hz.size() == 5u, "size=", cal.window_hz.size());
  if (cal.window_hz.size() != 5u) return;
  std::vector<double> sorted = cal.window_hz;
  std::sort(sorted.begin(), sorted.end());
  CHECK(cal.hz >= sorted.front() && cal.hz <= sorted.back(),
        "median ", cal.hz, " outside [", sorted.front(), ", ", sorted.back(), "]");
  CHECK(cal.hz == sorted[2], "hz ", cal.hz, " is not the median ", sorted[2]);
  CHECK(near_rel(cal.spread_rel, (sorted.back() - sorted.front()) / cal.hz, 1e-9),
        "spread_rel=", cal.spread_rel);
  CHECK(cal.spread_rel >= cal.mad_rel, "spread_rel ", cal.spread_rel, " < mad_rel ", cal.mad_rel);
  CHECK(cal.mad_rel >= 0.0, "mad_rel=", cal.mad_rel);
  const double ref = fb::tsc_calibration().hz;
  CHECK(near_rel(cal.hz, ref, 0.01), "hz ", cal.hz, " vs process calibration ", ref);
  const fb::TscCalibration three = fb::calibrate_tsc(3, 0.001);
  CHECK(three.window_hz.size() == 3u && three.hz > 0.0, "three windows: hz=", three.hz);
}

void test_tsc_agrees_with_steady_over_busy_wait() {
  SKIP_UNLESS(fb::tsc_usable(), kNoTsc);
  // Documented 1% agreement. A preemption between the TSC and steady reads lengthens only
  // the TSC interval, so an attempt may be spoiled; any of three within 1% passes.
  double worst_rel = 0.0;
  bool ok = false;
  for (int attempt = 0; attempt < 3 && !ok; ++attempt) {
    const std::uint64_t t0 = fb::TscClock::start();
    const std::uint64_t steady_ns = busy_wait_steady_ns(20'000'000);
    const std::uint64_t t1 = fb::TscClock::stop();
    const double tsc_ns = fb::ticks_to_ns(fb::ClockId::Tsc, static_cast<double>(t1 - t0));
    const double rel = std::fabs(tsc_ns / static_cast<double>(steady_ns) - 1.0);
    worst_rel = std::max(worst_rel, rel);
    ok = rel < 0.01;
  }
  CHECK(ok, "TSC and steady_clock disagree by up to ", worst_rel * 100, "% over 20 ms");
}

void test_clock_info_facts() {
  const fb::ClockInfo& steady = fb::clock_info(fb::ClockId::Steady);
  CHECK(&steady == &fb::clock_info(fb::ClockId::Steady), "not cached");
  CHECK(steady.id == fb::ClockId::Steady && steady.name == "steady", "name=", steady.name);
  CHECK(steady.available && steady.steady && steady.invariant, "steady flags");
  CHECK(steady.frequency_hz == 1e9, "frequency_hz=", steady.frequency_hz);
  CHECK(steady.resolution_ns > 0.0 && steady.resolution_ns < 1e6,
        "resolution_ns=", steady.resolution_ns);
  CHECK(steady.read_overhead_ns > 0.0, "read_overhead_ns=", steady.read_overhead_ns);
  CHECK(steady.pair_overhead_ns > 0.0, "pair_overhead_ns=", steady.pair_overhead_ns);

  const fb::ClockInfo& tsc = fb::clock_info(fb::ClockId::Tsc);
  CHECK(tsc.id == fb::ClockId::Tsc && tsc.name == "tsc", "name=", tsc.name);
  CHECK(tsc.available == fb::tsc_usable(), "available=", tsc.available);
  CHECK(!tsc.note.empty(), "no note");
  if (tsc.available) {
    CHECK(tsc.frequency_hz == fb::tsc_calibration().hz, "frequency_hz=", tsc.frequency_hz);
    CHECK(tsc.resolution_ns > 0.0, "resolution_ns=", tsc.resolution_ns);
    CHECK(tsc.read_overhead_ns > 0.0 && tsc.pair_overhead_ns > 0.0,
          "overheads ", tsc.read_overhead_ns, ", ", tsc.pair_overhead_ns);
  }

  const fb::AutoClock choice = fb::auto_clock();
  CHECK(choice.id == fb::ClockId::Steady || fb::tsc_usable(), "auto picked an unusable TSC");
  CHECK(choice.reason.rfind(str(fb::clock_name(choice.id), ":"), 0) == 0,
        "reason '", choice.reason, "' does not name the clock");
}

// ---- clocks: names and read costs ----------------------------------------------------------

void test_parse_clock_and_clock_name() {
  CHECK(fb::parse_clock("steady") == fb::ClockId::Steady, "steady");
  CHECK(fb::parse_clock("tsc") == fb::ClockId::Tsc, "tsc");
  for (fb::ClockId id : {fb::ClockId::Steady, fb::ClockId::Tsc}) {
    CHECK(fb::parse_clock(fb::clock_name(id)) == id, "round trip of ", fb::clock_name(id));
  }
  CHECK(std::string(fb::clock_name(fb::ClockId::Steady)) == "steady", "steady name");
  CHECK(std::string(fb::clock_name(fb::ClockId::Tsc)) == "tsc", "tsc name");
  for (const char* bad : {"", "auto", "Steady", "TSC", " tsc", "steady_clock"}) {
    CHECK_THROWS(std::invalid_argument, fb::parse_clock(bad), "[parse_clock]");
  }
}

const char* const kTscKinds[] = {"rdtsc", "lfence_rdtsc", "rdtscp", "rdtscp_lfence", "tsc_pair"};

void test_read_cost_steady_and_errors() {
  for (const char* bad : {"", "bogus", "STEADY", "tsc"}) {
    CHECK_THROWS(std::invalid_argument, fb::read_cost_ns(bad, 100), "[read_cost_ns]");
  }
  CHECK_THROWS(std::invalid_argument, fb::read_cost_ns("steady", 0), "[read_cost_ns]");
  for (const char* kind : {"steady", "steady_pair"}) {
    const double ns = fb::read_cost_ns(kind, 1000);
    CHECK(ns > 0.0 && ns < 1e5, kind, " costs ", ns, " ns");
  }
  const fb::CpuFeatures& f = fb::cpu_features();
  if (!f.x86 || !f.rdtscp) {
    for (const char* kind : kTscKinds) {
      CHECK_THROWS(std::invalid_argument, fb::read_cost_ns(kind, 100), "[read_cost_ns]");
    }
  }
}

void test_read_cost_tsc_kinds() {
  SKIP_UNLESS(fb::tsc_usable(), kNoTsc);
  for (const char* kind : kTscKinds) {
    const double ns = fb::read_cost_ns(kind, 1000);
    CHECK(ns > 0.0 && ns < 1e5, kind, " costs ", ns, " ns");
  }
}

// ---- the timed loop ------------------------------------------------------------------------

void test_time_loop_runs_body_exactly_n_times() {
  for (std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1000}}) {
    std::uint64_t count = 0;
    auto body = [&count] { ++count; };
    const std::uint64_t elapsed = fb::time_loop<fb::SteadyClock>(body, n);
    CHECK(count == n, "n=", n, " ran ", count);
    // Unsigned ticks: a stop before the start would wrap to an enormous value.
    CHECK(elapsed < kTenSecondsNs, "n=", n, " elapsed ", elapsed);
  }
  std::uint64_t count = 0;
  auto body = [&count] { ++count; };
  (void)fb::time_loop<fb::TscClock>(body, 1000);
  CHECK(count == 1000u, "TscClock ran ", count);
}

void test_time_loop_elapsed_covers_body() {
  auto body = [] { busy_wait_steady_ns(1'000'000); };
  const std::uint64_t steady = fb::time_loop<fb::SteadyClock>(body, 3);
  CHECK(steady >= 3'000'000u && steady < kTenSecondsNs, "3 x 1 ms took ", steady, " ns");
  if (fb::tsc_usable()) {
    const std::uint64_t ticks = fb::time_loop<fb::TscClock>(body, 3);
    const double ns = fb::ticks_to_ns(fb::ClockId::Tsc, static_cast<double>(ticks));
    CHECK(ns >= 0.99 * 3e6 && ns < 1e10, "3 x 1 ms took ", ns, " ns by the TSC");
  }
}

void test_time_loop_propagates_exception() {
  int count = 0;
  auto body = [&count] {
    if (++count == 5) throw HookError{};
  };
  bool caught = false;
  try {
    (void)fb::time_loop<fb::SteadyClock>(body, 10);
  } catch (const HookError&) {
    caught = true;
  }
  CHECK(caught, "the body's exception did not propagate");
  CHECK(count == 5, "body ran ", count, " times");
}

void test_make_sample_fn_times_the_body() {
  for (fb::ClockId id : {fb::ClockId::Steady, fb::ClockId::Tsc}) {
    std::uint64_t count = 0;
    const fb::SampleFn fn = fb::make_sample_fn(id, [p = &count] { ++*p; });
    (void)fn(7);
    (void)fn(3);
    CHECK(count == 10u, fb::clock_name(id), ": body ran ", count, " times");
  }
}

// ---- loop-count search ---------------------------------------------------------------------

// The target calibrate_loops documents: max(min_time_s, 1000 x resolution, resolution >= 1 ns).
double documented_target_ns(double min_time_s) {
  const double resolution_ns = std::max(fb::clock_info(fb::ClockId::Steady).resolution_ns, 1.0);
  return std::max(min_time_s * 1e9, 1000.0 * resolution_ns);
}

// Runs calibrate_loops on a synthetic, increasing sample cost (steady clock: ticks are ns)
// and checks the documented contract. The growth rule (x 1.1 target/elapsed, clamped to
// [2, 100]) never steps past 2 x the last too-short count or 1.1 x the linear prediction,
// so the chosen count stays below 3 x the smallest sufficient one.
void check_search(const char* name, const std::function<std::uint64_t(std::uint64_t)>& cost_ns,
                  double min_time_s) {
  std::vector<std::uint64_t> asked;
  int between_calls = 0;
  const fb::SampleFn sample = [&](std::uint64_t loops) {
    asked.push_back(loops);
    guard_runaway(asked.size());
    return cost_ns(loops);
  };
  const fb::Calibration cal = fb::calibrate_loops(sample, fb::ClockId::Steady, min_time_s,
                                                  1'000'000'000'000u, [&] { ++between_calls; });
  const double target = documented_target_ns(min_time_s);
  CHECK(cal.target_ns == target, name, ": target_ns ", cal.target_ns, " expected ", target);
  CHECK(cal.sample_ns >= cal.target_ns, name, ": sample_ns ", cal.sample_ns, " < ", cal.target_ns);
  CHECK(cal.sample_ns == static_cast<double>(cost_ns(cal.loops)), name, ": sample_ns ",
        cal.sample_ns, " is not the cost of ", cal.loops, " loops");
  CHECK(cal.trials >= 2 && cal.trials <= 7, name, ": trials=", cal.trials);
  CHECK(static_cast<int>(asked.size()) == cal.trials && between_calls == cal.trials, name,
        ": ", asked.size(), " samples and ", between_calls, " hooks for ", cal.trials, " trials");
  // The count that reaches the target is sampled twice (the second sample confirms it).
  CHECK(asked.size() >= 2 && asked.back() == cal.loops && asked[asked.size() - 2] == cal.loops,
        name, ": the result was not confirmed by a second sample");
  asked.pop_back();
  for (std::size_t i = 1; i < asked.size(); ++i) {
    CHECK(asked[i] >= 2 * asked[i - 1] && asked[i] <= 100 * asked[i - 1], name, ": step from ",
          asked[i - 1], " to ", asked[i], " loops, outside the documented x2..x100");
  }
  // Smallest sufficient count, by doubling then bisection on the increasing cost.
  std::uint64_t hi = 1;
  while (static_cast<double>(cost_ns(hi)) < target) hi *= 2;
  std::uint64_t lo = hi / 2;  // insufficient (or 0)
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (static_cast<double>(cost_ns(mid)) >= target ? hi : lo) = mid;
  }
  CHECK(cal.loops >= hi && cal.loops < 3 * hi, name, ": loops ", cal.loops,
        " for a minimum of ", hi);
}

void test_calibrate_loops_synthetic() {
  const auto linear = [](std::uint64_t loops) { return loops * 37; };
  const auto affine = [](std::uint64_t loops) { return 5000 + 3 * loops; };
  const auto slow = [](std::uint64_t loops) { return loops * 200'000; };
  check_search("37 ns/loop, 1 ms", linear, 1e-3);
  check_search("37 ns/loop, resolution floor", linear, 1e-9);
  check_search("5 us + 3 ns/loop, 1 ms", affine, 1e-3);
  check_search("0.2 ms/loop, 1 ms", slow, 1e-3);
  check_search("0.2 ms/loop, 10 ms", slow, 1e-2);
}

void test_calibrate_loops_target_is_inclusive() {
  // A first sample that lasts exactly the target is enough.
  const auto target_ns = static_cast<std::uint64_t>(std::ceil(documented_target_ns(1e-3)));
  int calls = 0;
  const fb::SampleFn sample = [&calls, target_ns](std::uint64_t loops) {
    guard_runaway(static_cast<std::size_t>(++calls));
    return loops * target_ns;
  };
  const fb::Calibration cal = fb::calibrate_loops(sample, fb::ClockId::Steady, 1e-3, 1000, nullptr);
  CHECK(cal.loops == 1u && cal.trials == 2 && calls == 2, "loops=", cal.loops,
        " trials=", cal.trials, " for samples of exactly ", target_ns, " ns");
}

void test_calibrate_loops_ignores_one_long_sample() {
  // 1 µs per loop, but the very first sample is a cold start that lasts 5 ms: the
  // confirming sample shows 1 µs, so the search goes on to ~100 loops for a 100 µs target.
  int calls = 0;
  const fb::SampleFn sample = [&calls](std::uint64_t loops) -> std::uint64_t {
    guard_runaway(static_cast<std::size_t>(++calls));
    return calls == 1 ? 5'000'000 : loops * 1000;
  };
  const fb::Calibration cal = fb::calibrate_loops(sample, fb::ClockId::Steady, 1e-4,
                                                  1'000'000, nullptr);
  CHECK(cal.loops >= 100 && cal.loops < 300, "loops=", cal.loops, " after a cold first sample");
  CHECK(cal.sample_ns == static_cast<double>(cal.loops * 1000), "sample_ns=", cal.sample_ns);
}

void test_calibrate_loops_overflow() {
  for (std::uint64_t max_loops :
       {std::uint64_t{1}, std::uint64_t{1000}, std::numeric_limits<std::uint64_t>::max()}) {
    std::vector<std::uint64_t> asked;
    const fb::SampleFn zero = [&asked](std::uint64_t loops) {
      asked.push_back(loops);
      guard_runaway(asked.size());
      return std::uint64_t{0};
    };
    CHECK_THROWS(std::overflow_error,
                 fb::calibrate_loops(zero, fb::ClockId::Steady, 1e-3, max_loops, nullptr),
                 "[calibrate_loops]");
    if (asked.empty()) continue;  // reported by CHECK_THROWS
    CHECK(asked.back() == max_loops, "max_loops ", max_loops, ": last trial at ", asked.back());
    CHECK(*std::max_element(asked.begin(), asked.end()) <= max_loops, "exceeded max_loops ",
          max_loops);
    CHECK(asked.size() <= 12u, "max_loops ", max_loops, ": ", asked.size(), " trials");
  }
}

void test_calibrate_loops_rejects_bad_arguments() {
  int calls = 0;
  const fb::SampleFn sample = [&calls](std::uint64_t loops) {
    ++calls;
    return loops * 1000;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (double min_time_s : {std::nan(""), inf, -inf, 0.0, -1.0}) {
    CHECK_THROWS(std::invalid_argument,
                 fb::calibrate_loops(sample, fb::ClockId::Steady, min_time_s, 1000, nullptr),
                 "[calibrate_loops]");
  }
  CHECK_THROWS(std::invalid_argument,
               fb::calibrate_loops(sample, fb::ClockId::Steady, 1e-3, 0, nullptr),
               "[calibrate_loops]");
  CHECK(calls == 0, "sampled ", calls, " times before validating");
}

void test_calibrate_loops_between_hook_stops_search() {
  int calls = 0;
  const fb::SampleFn sample = [&calls](std::uint64_t loops) {
    guard_runaway(static_cast<std::size_t>(++calls));
    return loops;  // far too short: the search would go on
  };
  bool caught = false;
  try {
    (void)fb::calibrate_loops(sample, fb::ClockId::Steady, 1e-3, 1'000'000'000u,
                              [] { throw HookError{}; });
  } catch (const HookError&) {
    caught = true;
  }
  CHECK(caught, "the hook's exception did not propagate");
  CHECK(calls == 1, "sampled ", calls, " times after the hook threw");
}

// ---- sample batches ------------------------------------------------------------------------

void test_run_samples_exact_count() {
  for (double max_time_s : {kNoBudget, -1.0, 1e6}) {
    std::vector<std::uint64_t> asked;
    int between_calls = 0;
    const fb::SampleFn sample = [&asked](std::uint64_t loops) {
      asked.push_back(loops);
      return loops * 37;
    };
    const fb::SampleRun run = fb::run_samples(sample, fb::ClockId::Steady, 11, 25, max_time_s,
                                              [&] { ++between_calls; });
    CHECK(run.sample_ns.size() == 25u, "budget ", max_time_s, ": ", run.sample_ns.size());
    CHECK(!run.budget_exhausted, "budget ", max_time_s, ": reported exhausted");
    CHECK(run.elapsed_s >= 0.0 && run.elapsed_s < 10.0, "elapsed_s=", run.elapsed_s);
    CHECK(between_calls == 25, "hook called ", between_calls, " times");
    CHECK(std::all_of(asked.begin(), asked.end(), [](std::uint64_t l) { return l == 11; }),
          "a sample was not asked for 11 loops");
    CHECK(std::all_of(run.sample_ns.begin(), run.sample_ns.end(),
                      [](double ns) { return ns == 11.0 * 37.0; }),
          "steady ticks were not returned as ns");
  }
}

void test_run_samples_budget() {
  int between_calls = 0;
  const fb::SampleFn two_ms = [](std::uint64_t) { return busy_wait_steady_ns(2'000'000); };
  const fb::SampleRun run =
      fb::run_samples(two_ms, fb::ClockId::Steady, 1, 1000, 0.01, [&] { ++between_calls; });
  const std::size_t n = run.sample_ns.size();
  CHECK(run.budget_exhausted, "not exhausted after ", n, " samples");
  // Every sample takes >= 2 ms, so the 10 ms budget is spent after five at the latest.
  CHECK(n >= 1u && n <= 5u, n, " samples of 2 ms in a 10 ms budget");
  CHECK(run.elapsed_s >= 0.01, "elapsed_s=", run.elapsed_s);
  CHECK(between_calls == static_cast<int>(n), "hook called ", between_calls, " times for ", n);
  for (double ns : run.sample_ns) CHECK(ns >= 2e6, "sample of ", ns, " ns");

  // The last requested sample ends the run normally, even past the budget.
  const fb::SampleRun one = fb::run_samples(two_ms, fb::ClockId::Steady, 1, 1, 1e-9, nullptr);
  CHECK(one.sample_ns.size() == 1u && !one.budget_exhausted, "one sample: ",
        one.sample_ns.size(), ", exhausted=", one.budget_exhausted);
}

void test_run_samples_rejects_bad_arguments() {
  int calls = 0;
  const fb::SampleFn sample = [&calls](std::uint64_t loops) {
    ++calls;
    return loops;
  };
  const fb::ClockId steady = fb::ClockId::Steady;
  CHECK_THROWS(std::invalid_argument, fb::run_samples(sample, steady, 0, 10, 0.0, nullptr),
               "[run_samples]");
  CHECK_THROWS(std::invalid_argument, fb::run_samples(sample, steady, 10, 0, 0.0, nullptr),
               "[run_samples]");
  const double inf = std::numeric_limits<double>::infinity();
  for (double max_time_s : {std::nan(""), inf, -inf}) {
    CHECK_THROWS(std::invalid_argument,
                 fb::run_samples(sample, steady, 10, 10, max_time_s, nullptr), "[run_samples]");
  }
  CHECK(calls == 0, "sampled ", calls, " times before validating");
}

void test_run_samples_hook_exception_propagates() {
  int calls = 0;
  int hooks = 0;
  const fb::SampleFn sample = [&calls](std::uint64_t loops) {
    ++calls;
    return loops;
  };
  bool caught = false;
  try {
    (void)fb::run_samples(sample, fb::ClockId::Steady, 1, 100, 0.0, [&hooks] {
      if (++hooks == 3) throw HookError{};
    });
  } catch (const HookError&) {
    caught = true;
  }
  CHECK(caught, "the hook's exception did not propagate");
  CHECK(calls == 3, "sampled ", calls, " times, hook threw after the third");
}

// ---- spins ---------------------------------------------------------------------------------

void test_spin_duration() {
  // A spin never ends early; a preempted run can last much longer, so the upper band
  // takes the best of five.
  double best = std::numeric_limits<double>::infinity();
  for (int attempt = 0; attempt < 5 && !(best < 30'000.0); ++attempt) {
    const double ns = fb::spin_duration_ns(10'000, 100);
    CHECK(ns >= 9'000.0, "a 10 us spin took ", ns, " ns");
    best = std::min(best, ns);
  }
  CHECK(best < 30'000.0, "a 10 us spin took at best ", best, " ns");
  const double zero = fb::spin_duration_ns(0, 10);
  CHECK(zero >= 0.0 && zero < 1e6, "a 0 ns spin took ", zero, " ns");

  const std::uint64_t s0 = fb::SteadyClock::now();
  fb::spin_ns(2e6);
  const std::uint64_t s1 = fb::SteadyClock::now();
  CHECK(static_cast<double>(s1 - s0) >= 0.9 * 2e6, "spin_ns(2 ms) took ", s1 - s0, " ns");
}

void test_spin_rejects_bad_arguments() {
  const double inf = std::numeric_limits<double>::infinity();
  for (double ns : {-1.0, std::nan(""), inf, -inf}) {
    CHECK_THROWS(std::invalid_argument, fb::spin_ns(ns), "[spin_ns]");
    CHECK_THROWS(std::invalid_argument, fb::spin_duration_ns(ns, 10), "[spin_duration_ns]");
  }
  CHECK_THROWS(std::invalid_argument, fb::spin_duration_ns(100, 0), "[spin_duration_ns]");
  fb::spin_ns(0);  // valid: returns at once
}

// ---- CPU features --------------------------------------------------------------------------

void test_cpu_features_consistent() {
  const fb::CpuFeatures& f = fb::cpu_features();
  CHECK(&f == &fb::cpu_features(), "not cached");
#if defined(__x86_64__)
  CHECK(f.x86, "built for x86-64 but x86 is false");
  CHECK(f.sse2, "x86-64 always has SSE2");
  CHECK(f.vendor.size() == 12u, "vendor '", f.vendor, "'");
#endif
  if (!f.x86) {
    CHECK(f.vendor.empty() && f.brand.empty(), "vendor/brand set off x86");
    CHECK(!(f.sse2 || f.sse4_2 || f.avx || f.avx2 || f.fma || f.avx512f || f.avx512bw ||
            f.avx512dq || f.avx512vl || f.rdtscp || f.invariant_tsc || f.hypervisor),
          "a feature flag is set off x86");
  }
  CHECK(!f.avx2 || f.avx, "avx2 without avx");
  CHECK(!f.fma || f.avx, "fma without avx");
  CHECK(!f.avx512f || f.avx2, "avx512f without avx2");
  CHECK(!f.sse4_2 || f.sse2, "sse4.2 without sse2");
  CHECK(fb::tsc_usable() == (f.x86 && f.rdtscp && f.invariant_tsc),
        "tsc_usable()=", fb::tsc_usable(), " but x86=", f.x86, " rdtscp=", f.rdtscp,
        " invariant_tsc=", f.invariant_tsc);
}

// read_first_line on files written here: the first line, trailing blanks and CR/LF gone,
// leading ones kept; a line longer than one read buffer whole; "" for an empty or missing file.
void test_read_first_line() {
  char tmpl[] = "/tmp/fastbench-line-XXXXXX";
  const int fd = mkstemp(tmpl);
  SKIP_UNLESS(fd >= 0, "no temporary file");
  close(fd);
  const std::string path = tmpl;
  const std::string long_line(700, 'x');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"4\n", "4"}, {"  -1 \r\n", "  -1"}, {"first\nsecond\n", "first"},
      {"no newline", "no newline"}, {"", ""}, {"\n\nthird", ""},
      {long_line + "\nrest", long_line}};
  for (const auto& [text, want] : cases) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    CHECK(f != nullptr, "cannot write ", path);
    if (f == nullptr) break;
    std::fputs(text.c_str(), f);
    std::fclose(f);
    const std::string got = fb::read_first_line(path);
    CHECK(got == want, "'", text.substr(0, 20), "' read as '", got.substr(0, 20), "' (",
          got.size(), " chars)");
  }
  std::remove(path.c_str());
  CHECK(fb::read_first_line(path).empty(), "a missing file reads as empty");
}

// The sizes kernels block for: cached, plausible, and what sysfs says where it says it.
void test_cache_sizes() {
  const fb::CacheSizes& c = fb::cache_sizes();
  CHECK(&c == &fb::cache_sizes(), "not cached");
  CHECK(c.l1d_bytes >= 8 * 1024 && c.l1d_bytes <= 1024 * 1024, c.l1d_bytes);
  CHECK(c.l2_bytes >= 64 * 1024 && c.l2_bytes <= 64 * 1024 * 1024, c.l2_bytes);
  CHECK(c.l3_bytes >= 1024 * 1024 && c.l3_bytes <= 1024 * 1024 * 1024, c.l3_bytes);
  // index0 is L1 data on every Linux x86 machine: compare by hand with its size file.
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index0/";
  std::ifstream level(dir + "level"), type(dir + "type"), size(dir + "size");
  std::string lv, ty, sz;
  SKIP_UNLESS(level >> lv && type >> ty && size >> sz, "no sysfs cacheinfo");
  if (lv == "1" && ty == "Data" && !sz.empty() && sz.back() == 'K') {
    CHECK(c.l1d_bytes == std::stoul(sz) * 1024, c.l1d_bytes, " vs sysfs ", sz);
  }
  std::printf("note: caches L1d %zu KiB, L2 %zu KiB, L3 %zu KiB\n", c.l1d_bytes >> 10,
              c.l2_bytes >> 10, c.l3_bytes >> 10);
}

// ---- table and runner ----------------------------------------------------------------------


// ---- parallel ----------------------------------------------------------------------------

void test_run_parallel_runs_every_tid_and_rethrows() {
  for (int round = 0; round < 50; ++round) {  // reuses the pool's workers many times
    std::vector<int> hits(3, 0);
    fb::run_parallel(3, [&](int tid, int n) {
      if (n == 3) hits[static_cast<std::size_t>(tid)] += 1;
    });
    CHECK(hits == std::vector<int>({1, 1, 1}), "round ", round);
  }
  CHECK_THROWS(std::runtime_error,
               fb::run_parallel(2, [](int tid, int) {
                 if (tid == 1) throw std::runtime_error("[worker] failed on purpose");
               }),
               "[worker]");
  // Nested: a parallel call inside a parallel region runs on fresh threads, no deadlock.
  std::atomic<int> inner{0};
  fb::run_parallel(2, [&](int, int) { fb::run_parallel(2, [&](int, int) { inner += 1; }); });
  CHECK(inner.load() == 4, inner.load());
  CHECK(fb::hardware_threads() >= 1, fb::hardware_threads());
  CHECK(fb::resolve_threads(0, "t") == fb::hardware_threads(), fb::resolve_threads(0, "t"));
  CHECK_THROWS(std::invalid_argument, fb::resolve_threads(-1, "who"), "[who]");
}

// A call wakes only the workers it uses: after a call of max_threads(), calls of 2 threads
// wake one worker each (with one condition variable for all, each woke every worker).
void test_pool_wakes_only_the_workers_a_call_uses() {
  const int most = fb::max_threads();
  CHECK(most == fb::kMaxThreadsPerCpu * fb::hardware_threads(), most);
  fb::run_parallel(most, [](int, int) {});
  const fb::detail::PoolStats big = fb::detail::pool_stats();
  CHECK(big.workers == most - 1, big.workers, " workers after a call of ", most);
  std::atomic<int> ran{0};
  for (int round = 0; round < 20; ++round) fb::run_parallel(2, [&](int, int) { ran += 1; });
  const fb::detail::PoolStats after = fb::detail::pool_stats();
  CHECK(ran.load() == 40, ran.load());
  CHECK(after.wakeups - big.wakeups == 20, after.wakeups - big.wakeups, " wake-ups for 20 calls");
  CHECK(after.workers == big.workers, after.workers);
}

void test_threads_above_the_cap_are_refused() {
  const int most = fb::max_threads();
  CHECK(fb::resolve_threads(most, "who") == most, fb::resolve_threads(most, "who"));
  CHECK(fb::resolve_threads(fb::kMaxThreadsPerCpu, "who") == fb::kMaxThreadsPerCpu, "8 always");
  CHECK_THROWS(std::invalid_argument, fb::resolve_threads(most + 1, "who"), "[who] threads is");
  CHECK_THROWS(std::invalid_argument,
               fb::resolve_threads(std::numeric_limits<int>::max(), "who"), "[who] threads is");
  CHECK_THROWS(std::invalid_argument, fb::run_parallel(most + 1, [](int, int) {}),
               "[run_parallel] nthreads");
}

// The parent's workers are not copied into a forked child: the pool must start afresh there
// instead of waiting on them forever. The parent gives the child 60 s, then kills it.
void test_pool_starts_afresh_in_a_forked_child() {
#if defined(__SANITIZE_THREAD__)
  skip("ThreadSanitizer does not start threads in a child forked from a threaded process");
#elif defined(__unix__)
  fb::run_parallel(2, [](int, int) {});  // the pool has a worker now
  const pid_t pid = fork();
  if (pid == 0) {
    std::atomic<int> ran{0};
    fb::run_parallel(2, [&](int, int) { ran += 1; });
    std::vector<double> a(128 * 128, 1.0), c(128 * 128, 0.0);
    fb::gemm(128, 128, 128, 1.0, a.data(), 128, a.data(), 128, 0.0, c.data(), 128, 2);
    _exit(ran.load() == 2 && c[0] == 128.0 && c.back() == 128.0 ? 0 : 3);
  }
  CHECK(pid > 0, "fork failed");
  if (pid <= 0) return;
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 6000 && !exited; ++i) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  CHECK(exited, "the child hung in run_parallel");
  CHECK(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status ", status);
#else
  skip("no fork here");
#endif
}

// ---- interrupt ---------------------------------------------------------------------------

void test_interrupt_check_runs_on_its_thread_and_helpers_see_its_flag() {
  CHECK(!fb::interrupt_requested(), "no scope installed");
  StopCheck stop;
  {
    const fb::InterruptScope scope(&StopCheck::check, &stop);
    CHECK(!fb::interrupt_requested() && stop.calls == 0, "checked before the first poll delay");
    wait_first_poll();
    CHECK(fb::interrupt_requested() && stop.calls == 1, "calls ", stop.calls.load());
    // Workers of a region, and of a region nested in it (fresh threads), see the flag and
    // never run the check themselves.
    std::atomic<int> saw{0};
    fb::run_parallel(3, [&](int, int) {
      if (fb::interrupt_requested()) saw += 1;
      fb::run_parallel(2, [&](int, int) {
        if (fb::interrupt_requested()) saw += 1;
      });
    });
    CHECK(saw.load() == 9, saw.load(), " of 9 threads saw the flag");
    CHECK(stop.calls == 1 && !stop.foreign_thread, "calls ", stop.calls.load());
    CHECK_THROWS(fb::Interrupted, fb::throw_if_interrupted("who"), "[who] interrupted");
  }
  CHECK(!fb::interrupt_requested(), "the scope ended");
  fb::throw_if_interrupted("who");  // no scope: nothing to throw
  // Scopes nest: an inner scope that never stops hides the outer one's flag until it ends.
  StopCheck never;
  never.stop_from = 0;
  {
    const StopScope outer(stop);
    CHECK(fb::interrupt_requested(), "outer");
    {
      const StopScope inner(never);
      CHECK(!fb::interrupt_requested() && never.calls == 1, "inner calls ", never.calls.load());
    }
    CHECK(fb::interrupt_requested(), "outer again");
  }
}

// A worker that waits for the flag ends only if the caller runs the check while it waits.
void test_run_parallel_polls_while_it_waits_for_workers() {
  StopCheck stop;
  stop.stop_from = 3;  // the flag goes up a few checks (tens of ms) into the wait
  const fb::InterruptScope scope(&StopCheck::check, &stop);
  std::atomic<bool> gave_up{false};
  fb::run_parallel(2, [&](int tid, int) {
    if (tid == 0) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fb::interrupt_requested()) {
      if (std::chrono::steady_clock::now() > deadline) {
        gave_up = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  CHECK(!gave_up.load(), "the caller never ran the check while it waited");
  CHECK(stop.calls >= 3 && !stop.foreign_thread, "calls ", stop.calls.load());
}

const Test kTests[] = {
    {"run_parallel_runs_every_tid_and_rethrows", test_run_parallel_runs_every_tid_and_rethrows},
    {"pool_wakes_only_the_workers_a_call_uses", test_pool_wakes_only_the_workers_a_call_uses},
    {"threads_above_the_cap_are_refused", test_threads_above_the_cap_are_refused},
    {"pool_starts_afresh_in_a_forked_child", test_pool_starts_afresh_in_a_forked_child},
    {"interrupt_check_runs_on_its_thread_and_helpers_see_its_flag",
     test_interrupt_check_runs_on_its_thread_and_helpers_see_its_flag},
    {"run_parallel_polls_while_it_waits_for_workers",
     test_run_parallel_polls_while_it_waits_for_workers},
    {"steady_conversion_is_identity", test_steady_conversion_is_identity},
    {"tsc_conversion_round_trip", test_tsc_conversion_round_trip},
    {"calibrate_tsc_rejects_bad_arguments", test_calibrate_tsc_rejects_bad_arguments},
    {"calibrate_tsc_statistics", test_calibrate_tsc_statistics},
    {"tsc_agrees_with_steady_over_busy_wait", test_tsc_agrees_with_steady_over_busy_wait},
    {"clock_info_facts", test_clock_info_facts},
    {"parse_clock_and_clock_name", test_parse_clock_and_clock_name},
    {"read_cost_steady_and_errors", test_read_cost_steady_and_errors},
    {"read_cost_tsc_kinds", test_read_cost_tsc_kinds},
    {"time_loop_runs_body_exactly_n_times", test_time_loop_runs_body_exactly_n_times},
    {"time_loop_elapsed_covers_body", test_time_loop_elapsed_covers_body},
    {"time_loop_propagates_exception", test_time_loop_propagates_exception},
    {"make_sample_fn_times_the_body", test_make_sample_fn_times_the_body},
    {"calibrate_loops_synthetic", test_calibrate_loops_synthetic},
    {"calibrate_loops_target_is_inclusive", test_calibrate_loops_target_is_inclusive},
    {"calibrate_loops_ignores_one_long_sample", test_calibrate_loops_ignores_one_long_sample},
    {"calibrate_loops_overflow", test_calibrate_loops_overflow},
    {"calibrate_loops_rejects_bad_arguments", test_calibrate_loops_rejects_bad_arguments},
    {"calibrate_loops_between_hook_stops_search",
     test_calibrate_loops_between_hook_stops_search},
    {"run_samples_exact_count", test_run_samples_exact_count},
    {"run_samples_budget", test_run_samples_budget},
    {"run_samples_rejects_bad_arguments", test_run_samples_rejects_bad_arguments},
    {"run_samples_hook_exception_propagates", test_run_samples_hook_exception_propagates},
    {"spin_duration", test_spin_duration},
    {"spin_rejects_bad_arguments", test_spin_rejects_bad_arguments},
    {"cpu_features_consistent", test_cpu_features_consistent},
    {"cache_sizes", test_cache_sizes},
    {"read_first_line", test_read_first_line},
};

}  // namespace

int main() { return run_all(kTests); }
