// timing.cpp — iteration-count search and sample batches around time_loop.
// Everything here runs outside the timed region. No Python here.
#include "timing.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fastbench {

Calibration calibrate_loops(const SampleFn& sample, ClockId clock, double min_time_s,
                            std::uint64_t max_loops, const BetweenFn& between) {
  if (!std::isfinite(min_time_s) || min_time_s <= 0.0) {
    throw std::invalid_argument("[calibrate_loops] min_time_s must be finite and > 0, got " +
                                std::to_string(min_time_s));
  }
  if (max_loops == 0) throw std::invalid_argument("[calibrate_loops] max_loops must be >= 1");
  Calibration cal;
  const double resolution_ns = std::max(clock_info(clock).resolution_ns, 1.0);
  cal.target_ns = std::max(min_time_s * 1e9, 1000.0 * resolution_ns);
  std::uint64_t loops = 1;
  for (;;) {
    double ns = ticks_to_ns(clock, static_cast<double>(sample(loops)));
    ++cal.trials;
    if (between) between();
    if (ns >= cal.target_ns) {
      // One long sample may be a cold first call or an interrupt: confirm with a second
      // and keep the shorter, so the loops count is not settled on an accident.
      ns = std::min(ns, ticks_to_ns(clock, static_cast<double>(sample(loops))));
      ++cal.trials;
      if (between) between();
    }
    cal.loops = loops;
    cal.sample_ns = ns;
    if (ns >= cal.target_ns) return cal;
    if (loops >= max_loops) {
      throw std::overflow_error("[calibrate_loops] " + std::to_string(max_loops) +
                                " loops last only " + std::to_string(ns) +
                                " ns, below the target of " + std::to_string(cal.target_ns) +
                                " ns; pass a fixed loops count");
    }
    // A sample shorter than 10 resolution steps carries no usable rate: grow by 100x.
    double factor = ns < 10.0 * resolution_ns ? 100.0 : 1.1 * cal.target_ns / ns;
    factor = std::clamp(factor, 2.0, 100.0);
    const double next = std::ceil(static_cast<double>(loops) * factor);
    loops = next >= static_cast<double>(max_loops) ? max_loops : static_cast<std::uint64_t>(next);
  }
}

SampleRun run_samples(const SampleFn& sample, ClockId clock, std::uint64_t loops,
                      std::uint64_t samples, double max_time_s, const BetweenFn& between) {
  if (loops == 0) throw std::invalid_argument("[run_samples] loops must be >= 1, got 0");
  if (samples == 0) throw std::invalid_argument("[run_samples] samples must be >= 1, got 0");
  if (!std::isfinite(max_time_s)) {
    throw std::invalid_argument("[run_samples] max_time_s must be finite, got " +
                                std::to_string(max_time_s));
  }
  SampleRun run;
  run.sample_ns.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(samples, 1u << 20)));
  const std::uint64_t start = SteadyClock::now();
  const double budget_ns = max_time_s * 1e9;
  for (std::uint64_t i = 0; i < samples; ++i) {
    run.sample_ns.push_back(ticks_to_ns(clock, static_cast<double>(sample(loops))));
    if (between) between();
    if (max_time_s > 0.0 && i + 1 < samples &&
        static_cast<double>(SteadyClock::now() - start) >= budget_ns) {
      run.budget_exhausted = true;
      break;
    }
  }
  run.elapsed_s = static_cast<double>(SteadyClock::now() - start) * 1e-9;
  return run;
}

}  // namespace fastbench

namespace fastbench {

double spin_duration_ns(double ns, std::uint64_t reps) {
  check_spin_ns("spin_duration_ns", ns);
  if (reps == 0) throw std::invalid_argument("[spin_duration_ns] reps must be >= 1, got 0");
  const ClockId id = tsc_usable() ? ClockId::Tsc : ClockId::Steady;
  const std::uint64_t ticks = ns_to_ticks(id, ns);
  auto body = [id, ticks] { spin_ticks(id, ticks); };
  const std::uint64_t elapsed = id == ClockId::Tsc ? time_loop<TscClock>(body, reps)
                                                   : time_loop<SteadyClock>(body, reps);
  return ticks_to_ns(id, static_cast<double>(elapsed)) / static_cast<double>(reps);
}

}  // namespace fastbench
