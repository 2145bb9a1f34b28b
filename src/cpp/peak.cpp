// peak.cpp — see peak.hpp. The FMA kernels keep every chain in a ymm register: 12 chains for
// FMA alone (latency 4 × 2 pipes needs at least 8 in flight on Zen 3 and Skylake), 8 FMA +
// 6 add chains for the mix, plus two constants: 14–16 of the 16 ymm registers, so nothing
// spills (checked with objdump -d on the Release object: the hot loops touch no memory).
// The core clock comes from a chain of dependent integer adds, one per cycle on every x86
// core since the P6 (Agner Fog, instruction tables).
#include "peak.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cpu.hpp"
#include "interrupt.hpp"
#include "isa.hpp"
#include "median.hpp"
#include "parallel.hpp"
#include "simd/avx2.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fastbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Chains (and the core clock's add chain) run in calls of about this long, with clock reads
// and interrupt_requested() between them: a call adds a few register set-ups and a
// reduction, tens of nanoseconds per chunk.
constexpr double kChunkS = 2e-3;

// Chains are a = a·m + c (FMA) and b = b + c (add) with m just below 1: the FMA chains
// converge to c / (1 − m) and never overflow or go denormal however long they run.
constexpr int kFmaChains = 12;
constexpr int kMixFma = 8;
constexpr int kMixAdd = 6;

struct Kernel {
  double flops_per_iter = 0.0;
  double (*run)(std::uint64_t iters) = nullptr;  // returns a sink of the chains
};

#if defined(__x86_64__)
template <class T>
using Avx = detail::Avx2<T>;

template <class T>
__attribute__((target("avx2,fma"))) double fma_avx2(std::uint64_t iters) {
  using A = Avx<T>;
  const typename A::Reg m = A::set(static_cast<T>(0.9999999));
  const typename A::Reg c = A::set(static_cast<T>(1e-7));
  // Distinct starting values: identical chains would be merged into one by the compiler.
  typename A::Reg r0 = A::set(T(1.00)), r1 = A::set(T(1.01)), r2 = A::set(T(1.02));
  typename A::Reg r3 = A::set(T(1.03)), r4 = A::set(T(1.04)), r5 = A::set(T(1.05));
  typename A::Reg r6 = A::set(T(1.06)), r7 = A::set(T(1.07)), r8 = A::set(T(1.08));
  typename A::Reg r9 = A::set(T(1.09)), r10 = A::set(T(1.10)), r11 = A::set(T(1.11));
  for (std::uint64_t i = 0; i < iters; ++i) {
    r0 = A::fma(r0, m, c), r1 = A::fma(r1, m, c), r2 = A::fma(r2, m, c), r3 = A::fma(r3, m, c);
    r4 = A::fma(r4, m, c), r5 = A::fma(r5, m, c), r6 = A::fma(r6, m, c), r7 = A::fma(r7, m, c);
    r8 = A::fma(r8, m, c), r9 = A::fma(r9, m, c), r10 = A::fma(r10, m, c);
    r11 = A::fma(r11, m, c);
  }
  r0 = A::add(A::add(A::add(r0, r1), A::add(r2, r3)), A::add(A::add(r4, r5), A::add(r6, r7)));
  r8 = A::add(A::add(r8, r9), A::add(r10, r11));
  return A::sum(A::add(r0, r8));
}

template <class T>
__attribute__((target("avx2,fma"))) double mix_avx2(std::uint64_t iters) {
  using A = Avx<T>;
  const typename A::Reg m = A::set(static_cast<T>(0.9999999));
  const typename A::Reg c = A::set(static_cast<T>(1e-7));
  typename A::Reg f0 = A::set(T(1.00)), f1 = A::set(T(1.01)), f2 = A::set(T(1.02));
  typename A::Reg f3 = A::set(T(1.03)), f4 = A::set(T(1.04)), f5 = A::set(T(1.05));
  typename A::Reg f6 = A::set(T(1.06)), f7 = A::set(T(1.07));
  typename A::Reg a0 = A::set(T(0.0)), a1 = A::set(T(0.1)), a2 = A::set(T(0.2));
  typename A::Reg a3 = A::set(T(0.3)), a4 = A::set(T(0.4)), a5 = A::set(T(0.5));
  for (std::uint64_t i = 0; i < iters; ++i) {
    f0 = A::fma(f0, m, c), a0 = A::add(a0, c), f1 = A::fma(f1, m, c), a1 = A::add(a1, c);
    f2 = A::fma(f2, m, c), a2 = A::add(a2, c), f3 = A::fma(f3, m, c), a3 = A::add(a3, c);
    f4 = A::fma(f4, m, c), a4 = A::add(a4, c), f5 = A::fma(f5, m, c), a5 = A::add(a5, c);
    f6 = A::fma(f6, m, c), f7 = A::fma(f7, m, c);
  }
  f0 = A::add(A::add(A::add(f0, f1), A::add(f2, f3)), A::add(A::add(f4, f5), A::add(f6, f7)));
  a0 = A::add(A::add(A::add(a0, a1), A::add(a2, a3)), A::add(a4, a5));
  return A::sum(A::add(f0, a0));
}
#endif

// Portable: the same chains on scalars; the compiler may or may not vectorise them, so no
// FLOP-per-cycle expectation is attached.
template <class T>
double fma_portable(std::uint64_t iters) {
  T r[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) r[i] = static_cast<T>(1.0 + 0.01 * i);
  const T m = static_cast<T>(0.9999999);
  const T c = static_cast<T>(1e-7);
  for (std::uint64_t i = 0; i < iters; ++i) {
    for (T& x : r) x = x * m + c;
  }
  double s = 0.0;
  for (T x : r) s += static_cast<double>(x);
  return s;
}

template <class T>
double mix_portable(std::uint64_t iters) {
  T f[kMixFma];
  T a[kMixAdd];
  for (int i = 0; i < kMixFma; ++i) f[i] = static_cast<T>(1.0 + 0.01 * i);
  for (int i = 0; i < kMixAdd; ++i) a[i] = static_cast<T>(0.1 * i);
  const T m = static_cast<T>(0.9999999);
  const T c = static_cast<T>(1e-7);
  for (std::uint64_t i = 0; i < iters; ++i) {
    for (T& x : f) x = x * m + c;
    for (T& x : a) x = x + c;
  }
  double s = 0.0;
  for (T x : f) s += static_cast<double>(x);
  for (T x : a) s += static_cast<double>(x);
  return s;
}

// The widest chains built here; AVX-512 machines run the AVX2 ones and expect their rate
// (off x86-64, best_isa() is portable).
constexpr Isa kWidest = Isa::avx2;

template <class T>
Kernel pick(bool mix, bool avx, double& expected) {
  Kernel k;
  const double fma_flops = 2.0;  // a multiply and an add
#if defined(__x86_64__)
  if (avx) {
    const double lanes = Avx<T>::kLanes;
    // Two FMA pipes on every AVX2+FMA core from Haswell and Zen on. AMD Zen (family 0x17
    // and later; Hygon's family 0x18 is Zen too) adds two FADD pipes beside them (AMD,
    // Software Optimization Guide for Zen 3, 2.11); Intel's adds share the FMA ports, and
    // older AMD cores (Bulldozer family 0x15) have no separate add pipes.
    const CpuFeatures& cpu = cpu_features();
    const bool separate_add_pipes =
        (cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine") && cpu.family >= 0x17;
    if (!mix) {
      k.flops_per_iter = kFmaChains * lanes * fma_flops;
      k.run = &fma_avx2<T>;
      expected = 2.0 * lanes * fma_flops;
    } else {
      k.flops_per_iter = (kMixFma * fma_flops + kMixAdd) * lanes;
      k.run = &mix_avx2<T>;
      // One trip is 8 FMAs and 6 adds: 4 cycles where adds have their own pipes (44 f32 /
      // 22 f64 FLOP/cycle; a 48/24 mix would need 8 add chains, two more ymm registers than
      // there are), 7 where they share the FMA ports (~25 f32 / ~12.6 f64).
      const double cycles = separate_add_pipes ? std::max(kMixFma, kMixAdd) / 2.0
                                               : (kMixFma + kMixAdd) / 2.0;
      expected = k.flops_per_iter / cycles;
    }
    return k;
  }
#else
  (void)avx;
#endif
  k.flops_per_iter = mix ? kMixFma * fma_flops + kMixAdd : kFmaChains * fma_flops;
  k.run = mix ? &mix_portable<T> : &fma_portable<T>;
  expected = 0.0;
  return k;
}

void check_time(double min_time_s, const char* who) {
  if (!std::isfinite(min_time_s) || min_time_s <= 0.0 || min_time_s > 3600.0) {
    throw std::invalid_argument(std::string("[") + who + "] min_time_s is " +
                                std::to_string(min_time_s) + ", expected a time in (0, 3600] s");
  }
}

#if defined(__x86_64__)
// 100 dependent adds per loop trip; the loop counter's own dec/jnz run beside the chain.
std::uint64_t add_chain(std::uint64_t trips) {
  std::uint64_t acc = 0;
  std::uint64_t n = trips;
  __asm__ volatile(
      "1:\n\t"
      ".rept 100\n\t"
      "add $1, %0\n\t"
      ".endr\n\t"
      "dec %1\n\t"
      "jnz 1b\n\t"
      : "+r"(acc), "+r"(n)
      :
      : "cc");
  return acc;
}
#endif

}  // namespace

double core_hz(double min_time_s) {
  check_time(min_time_s, "core_hz");
#if defined(__x86_64__)
  // Windows of ~min_time_s / 5 each; the median resists one preempted window, the highest
  // windows being where the clock ran undisturbed. Trips per chunk come from a call of at
  // least a chunk (a fifth of min_time_s when that is shorter).
  std::uint64_t trips = 1000;
  const double probe_s = std::min(kChunkS, min_time_s / 5);
  double s = 0.0;
  for (;;) {
    const Clock::time_point t0 = Clock::now();
    add_chain(trips);
    s = seconds_since(t0);
    if (s >= probe_s || trips > (1ULL << 40)) break;
    trips *= 4;
  }
  const std::uint64_t chunk = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(static_cast<double>(trips) * kChunkS / std::max(s, 1e-9)));
  // Each window is a run of chunks timed as one.
  std::vector<double> hz;
  for (int w = 0; w < 5 && !interrupt_requested(); ++w) {
    const Clock::time_point t0 = Clock::now();
    std::uint64_t adds = 0;
    double window_s = 0.0;
    do {
      adds += add_chain(chunk);
      window_s = seconds_since(t0);
    } while (window_s < min_time_s / 5 && !interrupt_requested());
    hz.push_back(static_cast<double>(adds) / window_s);
  }
  throw_if_interrupted("core_hz");
  return detail::median(std::move(hz));
#else
  return 0.0;  // no portable one-cycle dependent chain: unknown
#endif
}

PeakResult peak_flops(const std::string& dtype, int threads, bool add_mix, double min_time_s) {
  if (dtype != "float32" && dtype != "float64") {
    throw std::invalid_argument("[peak_flops] dtype is '" + dtype +
                                "', expected 'float32' or 'float64'");
  }
  const int nt = resolve_threads(threads, "peak_flops");
  check_time(min_time_s, "peak_flops");
  const Isa isa = kernel_isa(kWidest);
  const bool avx = isa >= Isa::avx2;
  PeakResult r;
  r.dtype = dtype;
  r.isa = isa_name(isa);
  r.add_mix = add_mix;
  r.threads = nt;
  const Kernel k = dtype == "float32" ? pick<float>(add_mix, avx, r.expected_flops_per_cycle)
                                      : pick<double>(add_mix, avx, r.expected_flops_per_cycle);
  // Iterations per chunk, from a trial on the calling thread of at least a chunk (of
  // min_time_s / 20 when that is shorter).
  std::uint64_t iters = 1 << 14;
  double sink = 0.0;
  for (;;) {
    const Clock::time_point t0 = Clock::now();
    sink += k.run(iters);
    const double s = seconds_since(t0);
    if (s >= std::min(kChunkS, min_time_s / 20) || iters > (1ULL << 40)) {
      const double per_chunk = static_cast<double>(iters) * kChunkS / std::max(s, 1e-9);
      iters = static_cast<std::uint64_t>(per_chunk) + 1;
      break;
    }
    iters *= 4;
  }
  // All threads start together (a spin barrier) so they overlap; each times its own run.
  // Each runs chunks until min_time_s has passed on its own clock, so all stop together
  // whatever their speed (a fixed count sized on one thread runs longer on threads that
  // share a core).
  std::atomic<int> ready{0};
  std::vector<double> rate(static_cast<std::size_t>(nt), 0.0);
  std::vector<double> secs(static_cast<std::size_t>(nt), 0.0);
  std::vector<double> sinks(static_cast<std::size_t>(nt), 0.0);
  run_parallel(nt, [&](int tid, int n) {
    ready.fetch_add(1);
    while (ready.load() < n) cpu_pause();
    const Clock::time_point t0 = Clock::now();
    double chains = 0.0;
    std::uint64_t done = 0;
    double s = 0.0;
    do {
      chains += k.run(iters);
      done += iters;
      s = seconds_since(t0);
    } while (s < min_time_s && !interrupt_requested());
    sinks[static_cast<std::size_t>(tid)] = chains;
    secs[static_cast<std::size_t>(tid)] = s;
    rate[static_cast<std::size_t>(tid)] = k.flops_per_iter * static_cast<double>(done) / s;
  });
  throw_if_interrupted("peak_flops");
  for (double s : sinks) sink += s;
  r.seconds = *std::max_element(secs.begin(), secs.end());
  for (double x : rate) r.flops_per_s += x;
  r.core_hz = core_hz(0.01);
  if (r.core_hz > 0.0) r.flops_per_cycle = r.flops_per_s / nt / r.core_hz;
  if (!std::isfinite(sink)) r.flops_per_s = 0.0;  // never true: keeps the chains' results alive
  return r;
}

}  // namespace fastbench
