// clock.cpp — TSC calibration, resolution and read-cost probes, and the auto choice.
// Measures, never assumes: the TSC rate comes from steady_clock windows, resolution from
// successive reads. No Python here.
#include "clock.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "cpu.hpp"
#include "median.hpp"

namespace fastbench {
namespace {

// One (steady ns, tsc ticks) pair taken as close together as possible: of five tries, the
// one whose bracketing steady reads are closest, with the steady time at their midpoint.
void paired_read(double& steady_ns, double& tsc_ticks) {
  std::uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const std::uint64_t a = SteadyClock::now();
    const std::uint64_t t = TscClock::start();
    const std::uint64_t b = SteadyClock::now();
    if (b - a < best_gap) {
      best_gap = b - a;
      steady_ns = 0.5 * (static_cast<double>(a) + static_cast<double>(b));
      tsc_ticks = static_cast<double>(t);
    }
  }
}

template <class Read>
double batch_cost_ns(Read read, std::uint64_t reps) {
  std::vector<double> costs;
  volatile std::uint64_t sink = 0;
  for (int b = 0; b < 11; ++b) {
    std::uint64_t acc = 0;
    const std::uint64_t s0 = SteadyClock::now();
    for (std::uint64_t i = 0; i < reps; ++i) acc += read();
    const std::uint64_t s1 = SteadyClock::now();
    sink = sink + acc;
    costs.push_back(static_cast<double>(s1 - s0) / static_cast<double>(reps));
  }
  return detail::median(costs);
}

template <class Clock>
double resolution_ticks() {
  // Smallest non-zero difference between back-to-back reads. For a fine clock this is
  // bounded by the read cost itself, which is what a measurement can actually resolve.
  std::uint64_t best = UINT64_MAX;
  std::uint64_t prev = Clock::start();
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t t = Clock::start();
    if (t > prev) best = std::min(best, t - prev);
    prev = t;
  }
  return best == UINT64_MAX ? 0.0 : static_cast<double>(best);
}

ClockInfo probe(ClockId id) {
  ClockInfo info;
  info.id = id;
  info.name = clock_name(id);
  if (id == ClockId::Steady) {
    info.available = true;
    info.steady = true;
    info.invariant = true;
    info.frequency_hz = 1e9;
    info.resolution_ns = resolution_ticks<SteadyClock>();
    info.read_overhead_ns = read_cost_ns("steady", 1000);
    info.pair_overhead_ns = read_cost_ns("steady_pair", 1000);
    info.note = "std::chrono::steady_clock";
    return info;
  }
  const CpuFeatures& f = cpu_features();
  if (!f.x86) {
    info.note = "not an x86 processor: no time-stamp counter";
    return info;
  }
  info.invariant = f.invariant_tsc;
  if (!f.rdtscp) {
    info.note = "the processor lacks rdtscp (CPUID 0x80000001 EDX[27])";
    return info;
  }
  if (!f.invariant_tsc) {
    info.note = "TSC is not invariant (CPUID 0x80000007 EDX[8] clear): its rate may follow "
                "frequency changes or stop in sleep states";
    return info;
  }
  const TscCalibration& cal = tsc_calibration();
  info.available = true;
  info.steady = true;
  info.frequency_hz = cal.hz;
  info.resolution_ns = resolution_ticks<TscClock>() * 1e9 / cal.hz;
  info.read_overhead_ns = read_cost_ns("lfence_rdtsc", 1000);
  info.pair_overhead_ns = read_cost_ns("tsc_pair", 1000);
  info.note = "lfence;rdtsc start, rdtscp;lfence stop; rate calibrated against steady_clock";
  return info;
}

}  // namespace

const char* clock_name(ClockId id) noexcept { return id == ClockId::Tsc ? "tsc" : "steady"; }

ClockId parse_clock(const std::string& name) {
  if (name == "steady") return ClockId::Steady;
  if (name == "tsc") return ClockId::Tsc;
  throw std::invalid_argument("[parse_clock] unknown clock '" + name +
                              "', expected 'steady' or 'tsc'");
}

bool tsc_usable() {
  const CpuFeatures& f = cpu_features();
  return FASTBENCH_HAVE_TSC && f.x86 && f.rdtscp && f.invariant_tsc;
}

TscCalibration calibrate_tsc(int windows, double window_s) {
  if (windows < 3) {
    throw std::invalid_argument("[calibrate_tsc] windows must be >= 3, got " +
                                std::to_string(windows));
  }
  if (!std::isfinite(window_s) || window_s <= 0.0 || window_s > 10.0) {
    throw std::invalid_argument("[calibrate_tsc] window_s must be in (0, 10], got " +
                                std::to_string(window_s));
  }
  if (!FASTBENCH_HAVE_TSC || !cpu_features().x86 || !cpu_features().rdtscp) {
    throw std::runtime_error("[calibrate_tsc] no usable time-stamp counter on this processor");
  }
  TscCalibration cal;
  cal.window_s = window_s;
  const double window_ns = window_s * 1e9;
  for (int w = 0; w < windows; ++w) {
    double s0 = 0, t0 = 0, s1 = 0, t1 = 0;
    paired_read(s0, t0);
    while (static_cast<double>(SteadyClock::now()) < s0 + window_ns) {
    }
    paired_read(s1, t1);
    cal.window_hz.push_back((t1 - t0) / ((s1 - s0) * 1e-9));
  }
  cal.hz = detail::median(cal.window_hz);
  const auto [lo, hi] = std::minmax_element(cal.window_hz.begin(), cal.window_hz.end());
  cal.spread_rel = (*hi - *lo) / cal.hz;
  std::vector<double> dev;
  for (double h : cal.window_hz) dev.push_back(std::fabs(h - cal.hz));
  cal.mad_rel = detail::median(dev) / cal.hz;
  return cal;
}

const TscCalibration& tsc_calibration() {
  static const TscCalibration cal = calibrate_tsc(7, 0.01);
  return cal;
}

const ClockInfo& clock_info(ClockId id) {
  static const ClockInfo steady = probe(ClockId::Steady);
  if (id == ClockId::Steady) return steady;
  static const ClockInfo tsc = probe(ClockId::Tsc);
  return tsc;
}

AutoClock auto_clock() {
  const ClockInfo& tsc = clock_info(ClockId::Tsc);
  if (!tsc.available) return {ClockId::Steady, "steady_clock: " + tsc.note};
  const TscCalibration& cal = tsc_calibration();
  if (cal.mad_rel > 1e-3) {
    return {ClockId::Steady, "steady_clock: TSC calibration windows disagree by " +
                                 std::to_string(cal.mad_rel * 100) + "% (MAD), rate not trusted"};
  }
  const ClockInfo& steady = clock_info(ClockId::Steady);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "tsc: invariant TSC at %.4f GHz (calibration spread %.4f%%); a start/stop pair "
                "costs %.1f ns against %.1f ns for steady_clock",
                cal.hz * 1e-9, cal.spread_rel * 100, tsc.pair_overhead_ns, steady.pair_overhead_ns);
  return {ClockId::Tsc, buf};
}

double ticks_to_ns(ClockId id, double ticks) {
  if (id == ClockId::Steady) return ticks;
  return ticks * 1e9 / tsc_calibration().hz;
}

std::uint64_t ns_to_ticks(ClockId id, double ns) {
  const double ticks = id == ClockId::Steady ? ns : ns * tsc_calibration().hz * 1e-9;
  // 2^63: beyond it the conversion to an integer is undefined behaviour.
  if (!std::isfinite(ticks) || ticks < 0.0 || ticks >= 9.2e18) {
    throw std::invalid_argument("[ns_to_ticks] duration must be finite, >= 0 and below 2^63 "
                                "ticks, got " + std::to_string(ns) + " ns");
  }
  return static_cast<std::uint64_t>(std::llround(ticks));
}

double read_cost_ns(const std::string& kind, std::uint64_t reps) {
  if (reps == 0) throw std::invalid_argument("[read_cost_ns] reps must be >= 1, got 0");
  if (kind == "steady") return batch_cost_ns([] { return SteadyClock::now(); }, reps);
  if (kind == "steady_pair") {
    return batch_cost_ns([] { return SteadyClock::start() + SteadyClock::stop(); }, reps);
  }
  if (kind != "rdtsc" && kind != "lfence_rdtsc" && kind != "rdtscp" && kind != "rdtscp_lfence" &&
      kind != "tsc_pair") {
    throw std::invalid_argument("[read_cost_ns] unknown kind '" + kind +
                                "', expected rdtsc, lfence_rdtsc, rdtscp, rdtscp_lfence, "
                                "tsc_pair, steady or steady_pair");
  }
  if (!FASTBENCH_HAVE_TSC || !cpu_features().x86 || !cpu_features().rdtscp) {
    throw std::invalid_argument("[read_cost_ns] '" + kind + "' needs an x86 TSC with rdtscp");
  }
#if FASTBENCH_HAVE_TSC
  if (kind == "rdtsc") return batch_cost_ns([] { return TscClock::raw(); }, reps);
  if (kind == "lfence_rdtsc") return batch_cost_ns([] { return TscClock::start(); }, reps);
  if (kind == "rdtscp") {
    return batch_cost_ns(
        [] {
          unsigned aux = 0;
          return static_cast<std::uint64_t>(__rdtscp(&aux));
        },
        reps);
  }
  if (kind == "rdtscp_lfence") return batch_cost_ns([] { return TscClock::stop(); }, reps);
  return batch_cost_ns([] { return TscClock::start() + TscClock::stop(); }, reps);
#else
  return 0.0;
#endif
}

void spin_ticks(ClockId id, std::uint64_t ticks) noexcept {
  if (id == ClockId::Tsc) {
    // Fenced at both ends so the wait neither overlaps the caller's preceding work nor
    // lets the caller's following work start inside it: its duration is the wait alone.
    const std::uint64_t t0 = TscClock::start();
    while (TscClock::raw() - t0 < ticks) {
    }
#if FASTBENCH_HAVE_TSC
    _mm_lfence();
#endif
  } else {
    const std::uint64_t t0 = SteadyClock::now();
    while (SteadyClock::now() - t0 < ticks) {
    }
  }
}

void check_spin_ns(const char* who, double ns) {
  if (!(ns >= 0.0 && ns <= kMaxSpinNs)) {  // also rejects NaN
    throw std::invalid_argument(std::string("[") + who + "] ns must be in [0, 1e12], got " +
                                std::to_string(ns));
  }
}

void spin_ns(double ns) {
  check_spin_ns("spin_ns", ns);
  const ClockId id = tsc_usable() ? ClockId::Tsc : ClockId::Steady;
  spin_ticks(id, ns_to_ticks(id, ns));
}

}  // namespace fastbench
