// clock.hpp — the two clocks fastbench times with, and what is measured about them.
// No Python here. Caveats, per clock:
//  * steady: std::chrono::steady_clock (CLOCK_MONOTONIC through the vDSO on Linux).
//    Steady and portable; ticks are nanoseconds; a read costs ~20-30 ns.
//  * tsc: the x86 time-stamp counter. Only trusted when CPUID 0x80000007 EDX[8] says it is
//    invariant (constant rate across P-/C-states, synchronised across cores by the OS).
//    Its frequency is calibrated against steady_clock (several windows, median), never
//    taken from the brand string or /proc/cpuinfo.
//    Ordering: the start read is `lfence; rdtsc` (lfence lets every earlier instruction
//    finish first, so prior work is not counted); the stop read is `rdtscp; lfence`
//    (rdtscp waits for the timed body to execute; the trailing lfence keeps later work
//    from starting before the counter is read). Intel SDM vol. 2B "RDTSC"/"RDTSCP", and
//    Intel's "How to Benchmark Code Execution Times" white paper. The start read has no
//    trailing fence, so a few cycles of the body may overlap it: a constant bias, measured
//    as part of the loop overhead and subtracted. On AMD, lfence is dispatch-serialising
//    because Linux sets MSR C001_1029[1] (AMD's Spectre guidance), so the same holds.
//  The inline read functions need the intrinsics, so this header carries the one
//  architecture #if that the timing loop requires; everything else lives in clock.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define FASTBENCH_HAVE_TSC 1
#else
#define FASTBENCH_HAVE_TSC 0
#endif

namespace fastbench {

enum class ClockId : int { Steady = 0, Tsc = 1 };

// Keeps the compiler from moving memory accesses across a clock read.
inline void compiler_barrier() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

struct SteadyClock {
  static constexpr ClockId id = ClockId::Steady;
  static std::uint64_t now() noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }
  static std::uint64_t start() noexcept {
    compiler_barrier();
    const std::uint64_t t = now();
    compiler_barrier();
    return t;
  }
  static std::uint64_t stop() noexcept { return start(); }
};

struct TscClock {
  static constexpr ClockId id = ClockId::Tsc;
#if FASTBENCH_HAVE_TSC
  static std::uint64_t raw() noexcept { return __rdtsc(); }
  static std::uint64_t start() noexcept {
    compiler_barrier();
    _mm_lfence();
    const std::uint64_t t = __rdtsc();
    compiler_barrier();
    return t;
  }
  static std::uint64_t stop() noexcept {
    compiler_barrier();
    unsigned aux = 0;
    const std::uint64_t t = __rdtscp(&aux);
    _mm_lfence();
    compiler_barrier();
    return t;
  }
#else
  // Never selected off x86 (tsc_usable() is false); steady ticks keep the code portable.
  static std::uint64_t raw() noexcept { return SteadyClock::now(); }
  static std::uint64_t start() noexcept { return SteadyClock::start(); }
  static std::uint64_t stop() noexcept { return SteadyClock::stop(); }
#endif
};

struct TscCalibration {
  double hz = 0.0;                 // median over windows
  double spread_rel = 0.0;         // (max - min) / median over windows
  double mad_rel = 0.0;            // median absolute deviation / median
  double window_s = 0.0;
  std::vector<double> window_hz;   // one estimate per window, in order
};

struct ClockInfo {
  ClockId id = ClockId::Steady;
  std::string name;
  bool available = false;
  bool steady = false;             // never goes backwards, constant rate
  bool invariant = false;          // for tsc: CPUID invariant-TSC bit; steady: true
  double frequency_hz = 0.0;       // ticks per second (1e9 for steady)
  double resolution_ns = 0.0;      // smallest non-zero step seen between successive reads
  double read_overhead_ns = 0.0;   // cost of one start read (median of batches)
  double pair_overhead_ns = 0.0;   // cost of a start read followed by a stop read
  std::string note;                // why unavailable, or caveats
};

struct AutoClock {
  ClockId id = ClockId::Steady;
  std::string reason;
};

// True where the TSC exists, has rdtscp, and is invariant.
bool tsc_usable();

// Calibrates the TSC against steady_clock over `windows` busy-waits of `window_s` each.
// Works on any x86 TSC with rdtscp, invariant or not (so a non-invariant one can still be
// reported). Throws std::invalid_argument for windows < 3 or a window outside (0, 10] s,
// and std::runtime_error without an x86 TSC with rdtscp.
TscCalibration calibrate_tsc(int windows, double window_s);

// The process-wide calibration (7 windows of 10 ms), done on first use.
const TscCalibration& tsc_calibration();

// Per-clock facts; resolution and overheads are measured once per process and cached.
const ClockInfo& clock_info(ClockId id);

// Which clock "auto" means on this machine, and why.
AutoClock auto_clock();

// Longest duration the spin helpers accept: 1e12 ns (about 17 minutes).
constexpr double kMaxSpinNs = 1e12;

double ticks_to_ns(ClockId id, double ticks);
// Throws std::invalid_argument for a negative, non-finite or out-of-range duration.
std::uint64_t ns_to_ticks(ClockId id, double ns);

// Cost in ns of one read of a given kind, median of batches of `reps` reads timed by
// steady_clock. Kinds: "rdtsc", "lfence_rdtsc", "rdtscp", "rdtscp_lfence", "tsc_pair",
// "steady", "steady_pair". Throws std::invalid_argument for an unknown kind or a TSC kind
// without an x86 TSC with rdtscp.
double read_cost_ns(const std::string& kind, std::uint64_t reps);

// Busy-waits for `ns` nanoseconds on the best clock (tsc when usable), for tests and
// benchmarks that need work of known duration. Throws std::invalid_argument for ns
// outside [0, kMaxSpinNs] (a huge spin would hold the thread beyond Ctrl-C's reach).
void spin_ns(double ns);
void check_spin_ns(const char* who, double ns);  // the validation spin_ns applies
void spin_ticks(ClockId id, std::uint64_t ticks) noexcept;

ClockId parse_clock(const std::string& name);  // "steady" | "tsc"; invalid_argument else
const char* clock_name(ClockId id) noexcept;

}  // namespace fastbench
