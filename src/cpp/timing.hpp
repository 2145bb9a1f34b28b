// timing.hpp — the measurement loop and the out-of-line machinery around it.
// time_loop is the only code that runs between the two clock reads; keep it that small.
// Iteration-count search, sample batches, time budgets and conversions live in timing.cpp
// (the shape of nanobench's Bench::runImpl). No Python here: a caller that needs to check
// for signals passes a `between` hook, called between samples, which may throw.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "clock.hpp"

namespace fastbench {

// Reads the clock, runs `body` `loops` times, reads the clock; returns elapsed ticks.
// Must stay tiny and inline: everything in it is part of every measurement.
template <class Clock, class Body>
inline std::uint64_t time_loop(Body& body, std::uint64_t loops) {
  const std::uint64_t t0 = Clock::start();
  for (std::uint64_t i = 0; i < loops; ++i) body();
  const std::uint64_t t1 = Clock::stop();
  return t1 - t0;
}

// An empty body the compiler cannot delete: the loop's own cost per iteration.
struct EmptyBody {
  void operator()() const noexcept { compiler_barrier(); }
};

// Runs one sample of `loops` iterations and returns its elapsed ticks.
using SampleFn = std::function<std::uint64_t(std::uint64_t loops)>;
// Called between samples (e.g. to check for Ctrl-C); may throw to stop the run.
using BetweenFn = std::function<void()>;

template <class Body>
SampleFn make_sample_fn(ClockId clock, Body body) {
  if (clock == ClockId::Tsc) {
    return [body](std::uint64_t loops) mutable { return time_loop<TscClock>(body, loops); };
  }
  return [body](std::uint64_t loops) mutable { return time_loop<SteadyClock>(body, loops); };
}

struct Calibration {
  std::uint64_t loops = 1;   // chosen loops per sample
  double sample_ns = 0.0;    // duration of the last trial, at `loops`
  int trials = 0;            // samples spent searching
  double target_ns = 0.0;    // what a sample had to reach
};

// Finds loops per sample so that one sample lasts at least max(min_time_s, 1000 x clock
// resolution). Each trial scales loops by the predicted ratio target/elapsed (x1.1 margin,
// at least x2 and at most x100 per step), so it converges in two or three trials where
// timeit.autorange's 1-2-5 ladder takes a dozen. Throws std::invalid_argument for a
// non-finite or non-positive min_time_s or max_loops == 0; std::overflow_error when even
// max_loops iterations do not reach the target.
Calibration calibrate_loops(const SampleFn& sample, ClockId clock, double min_time_s,
                            std::uint64_t max_loops, const BetweenFn& between);

struct SampleRun {
  std::vector<double> sample_ns;  // total ns of each sample (all `loops` iterations)
  bool budget_exhausted = false;  // stopped early because max_time_s ran out
  double elapsed_s = 0.0;         // wall time of the whole run, steady_clock
};

// Takes up to `samples` samples of `loops` iterations, calling `between` after each.
// Stops early (after at least one sample) once max_time_s of steady time has passed;
// max_time_s <= 0 means no budget. Throws std::invalid_argument for loops == 0,
// samples == 0 or a non-finite max_time_s.
SampleRun run_samples(const SampleFn& sample, ClockId clock, std::uint64_t loops,
                      std::uint64_t samples, double max_time_s, const BetweenFn& between);

}  // namespace fastbench

namespace fastbench {

// The true duration of spin_ns(ns): `reps` spins timed natively in one time_loop with
// the TSC (steady_clock where the TSC is not usable), so neither a call nor the clock
// pair is in it. The reference against which benchmarks judge measured spins.
double spin_duration_ns(double ns, std::uint64_t reps);

}  // namespace fastbench
