// peak.hpp — peak floating-point rate from independent FMA chains held in registers, f32 and
// f64, on 1..N threads, optionally mixed with independent adds for cores with separate add
// pipes; and the core clock measured from a chain of dependent integer adds (one per cycle),
// so FLOP/cycle can be checked against what the ISA promises. No Python here.
#pragma once

#include <string>

namespace fastbench {

struct PeakResult {
  std::string dtype;        // "float32" or "float64"
  std::string isa;          // isa_name() of the chains run: "avx2" or "portable"
  bool add_mix = false;     // FMA chains interleaved with independent adds
  int threads = 1;
  double flops_per_s = 0.0; // all threads together
  double core_hz = 0.0;     // measured (dependent adds), per core
  double flops_per_cycle = 0.0;           // per core: flops_per_s / threads / core_hz
  double expected_flops_per_cycle = 0.0;  // per core, for the detected ISA and pipes
  double seconds = 0.0;
};

// Times the kernel for at least min_time_s per thread (each thread stops once that has
// passed). Throws std::invalid_argument for an unknown dtype, a bad thread count or time;
// Interrupted when the InterruptScope of the calling thread stops it.
PeakResult peak_flops(const std::string& dtype, int threads = 1, bool add_mix = false,
                      double min_time_s = 0.1);

// Core cycles per second, from a chain of dependent adds timed on steady_clock
// (median of five windows of min_time_s / 5). Under turbo it is the clock the chain ran at.
// Throws Interrupted when the InterruptScope of the calling thread stops it.
double core_hz(double min_time_s = 0.02);

}  // namespace fastbench
