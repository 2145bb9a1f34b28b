// bandwidth.cpp — see bandwidth.hpp. Bytes are counted by STREAM's rules (McCalpin, "STREAM:
// Sustainable Memory Bandwidth", run rules): each array element read or written counts 8
// bytes once per pass; the read a cached store triggers first (write-allocate) is reported
// apart, never counted. Each thread owns a contiguous, 64-byte aligned slice of every array
// and touches it first (so its pages land on its NUMA node); threads start every timed unit
// together at a spin barrier and the calling thread times the unit between two barriers.
// An interrupt is checked between timed units and between the pieces of a long pass.
#include "bandwidth.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "interrupt.hpp"
#include "isa.hpp"
#include "median.hpp"
#include "parallel.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__linux__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace fastbench {
namespace {

using Clock = std::chrono::steady_clock;

enum class Kind { read, write, copy, scale, add, triad };

struct KindInfo {
  const char* name;
  Kind kind;
  int arrays;   // arrays touched
  int reads;    // arrays read per element
  int writes;   // arrays written per element
};

constexpr KindInfo kKinds[] = {
    {"read", Kind::read, 1, 1, 0},   {"write", Kind::write, 1, 0, 1},
    {"copy", Kind::copy, 2, 1, 1},   {"scale", Kind::scale, 2, 1, 1},
    {"add", Kind::add, 3, 2, 1},     {"triad", Kind::triad, 3, 2, 1},
};

constexpr double kScalar = 3.0;
constexpr std::size_t kAlignBytes = 64;
constexpr std::size_t kAlignElems = kAlignBytes / sizeof(double);
// A timed unit repeats the pass until it lasts this long, so clock reads and barriers stay
// below 1% of it even for L1-sized working sets (a pass of 16 KiB takes well under 1 µs).
constexpr double kUnitS = 200e-6;
constexpr std::size_t kNarrowFromBytes = std::size_t{32} << 20;
// A pass over a longer slice runs in pieces of this many elements (8 MiB of each array, a
// few milliseconds even from DRAM), with interrupt_requested() between them: a pass over
// gigabytes otherwise runs for seconds without one. Pieces are far beyond any L2, so the
// access pattern is the same sequential stream; shorter slices run in one piece.
constexpr std::size_t kPieceElems = std::size_t{1} << 20;

const KindInfo& find_kind(const std::string& name) {
  for (const KindInfo& k : kKinds) {
    if (name == k.name) return k;
  }
  throw std::invalid_argument("[bandwidth] kind is '" + name +
                              "', expected read, write, copy, scale, add or triad");
}

struct AlignedFree {
  void operator()(double* p) const noexcept { std::free(p); }
};
using Array = std::unique_ptr<double[], AlignedFree>;

// Arrays start on a page boundary, as STREAM's static arrays usually do. Starting them 64 bytes
// into a page (what a 64-byte aligned_alloc of a large block returns from glibc) measured 15–20%
// slower for copy at 256 MiB on Zen 3, with the same instructions.
constexpr std::size_t kPageBytes = 4096;

Array allocate(std::size_t elems) {
  const std::size_t bytes = (elems * sizeof(double) + kPageBytes - 1) / kPageBytes * kPageBytes;
  void* p = std::aligned_alloc(kPageBytes, std::max(bytes, kPageBytes));
  if (p == nullptr) throw std::bad_alloc();
  return Array(static_cast<double*>(p));  // not touched here: each thread touches its slice
}

std::size_t physical_memory_bytes() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
#endif
  return 0;  // unknown: no upper check
}

// One pass of `kind` over [0, n): y = f(x1, x2) (read sums x1; write fills y). Returns what
// `read` summed, 0 for the others. Always inlined, also into pass_avx2's tail: a call from
// AVX code into SSE-encoded code costs a state transition each time (measured ~230 ns per
// pass here), which swamped L1-sized passes.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline double pass_portable(Kind kind, const double* x1, const double* x2, double* y, std::size_t n) {
  const double s = kScalar;
  switch (kind) {
    case Kind::read: {
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      std::size_t i = 0;
      for (; i + 4 <= n; i += 4) {
        s0 += x1[i];
        s1 += x1[i + 1];
        s2 += x1[i + 2];
        s3 += x1[i + 3];
      }
      for (; i < n; ++i) s0 += x1[i];
      return (s0 + s1) + (s2 + s3);
    }
    case Kind::write:
      for (std::size_t i = 0; i < n; ++i) y[i] = s;
      return 0.0;
    case Kind::copy:
      for (std::size_t i = 0; i < n; ++i) y[i] = x1[i];
      return 0.0;
    case Kind::scale:
      for (std::size_t i = 0; i < n; ++i) y[i] = s * x1[i];
      return 0.0;
    case Kind::add:
      for (std::size_t i = 0; i < n; ++i) y[i] = x1[i] + x2[i];
      return 0.0;
    case Kind::triad:
      for (std::size_t i = 0; i < n; ++i) y[i] = x1[i] + s * x2[i];
      return 0.0;
  }
  return 0.0;
}

#if defined(__x86_64__)
// Slices start 64-byte aligned (see slice()), so aligned loads and stores are safe; the tail
// below 8 elements goes through the portable loop.
__attribute__((target("avx2,fma"))) double pass_avx2(Kind kind, const double* x1,
                                                     const double* x2, double* y, std::size_t n) {
  const std::size_t body = n / 8 * 8;
  const __m256d s = _mm256_set1_pd(kScalar);
  double head_sum = 0.0;
  switch (kind) {
    case Kind::read: {
      // Eight sums: add latency 3 × 2 add pipes needs at least 6 in flight to read 2 loads
      // per cycle from L1.
      __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
      __m256d s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
      __m256d s4 = _mm256_setzero_pd(), s5 = _mm256_setzero_pd();
      __m256d s6 = _mm256_setzero_pd(), s7 = _mm256_setzero_pd();
      std::size_t i = 0;
      for (; i + 32 <= body; i += 32) {
        s0 = _mm256_add_pd(s0, _mm256_load_pd(x1 + i));
        s1 = _mm256_add_pd(s1, _mm256_load_pd(x1 + i + 4));
        s2 = _mm256_add_pd(s2, _mm256_load_pd(x1 + i + 8));
        s3 = _mm256_add_pd(s3, _mm256_load_pd(x1 + i + 12));
        s4 = _mm256_add_pd(s4, _mm256_load_pd(x1 + i + 16));
        s5 = _mm256_add_pd(s5, _mm256_load_pd(x1 + i + 20));
        s6 = _mm256_add_pd(s6, _mm256_load_pd(x1 + i + 24));
        s7 = _mm256_add_pd(s7, _mm256_load_pd(x1 + i + 28));
      }
      for (; i < body; i += 4) s0 = _mm256_add_pd(s0, _mm256_load_pd(x1 + i));
      s0 = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
      s4 = _mm256_add_pd(_mm256_add_pd(s4, s5), _mm256_add_pd(s6, s7));
      alignas(32) double v[4];
      _mm256_store_pd(v, _mm256_add_pd(s0, s4));
      head_sum = (v[0] + v[1]) + (v[2] + v[3]);
      break;
    }
    case Kind::write:
      for (std::size_t i = 0; i < body; i += 4) _mm256_store_pd(y + i, s);
      break;
    case Kind::copy:
      for (std::size_t i = 0; i < body; i += 4) _mm256_store_pd(y + i, _mm256_load_pd(x1 + i));
      break;
    case Kind::scale:
      for (std::size_t i = 0; i < body; i += 4) {
        _mm256_store_pd(y + i, _mm256_mul_pd(s, _mm256_load_pd(x1 + i)));
      }
      break;
    case Kind::add:
      for (std::size_t i = 0; i < body; i += 4) {
        _mm256_store_pd(y + i, _mm256_add_pd(_mm256_load_pd(x1 + i), _mm256_load_pd(x2 + i)));
      }
      break;
    case Kind::triad:
      for (std::size_t i = 0; i < body; i += 4) {
        _mm256_store_pd(y + i,
                        _mm256_fmadd_pd(s, _mm256_load_pd(x2 + i), _mm256_load_pd(x1 + i)));
      }
      break;
  }
  return head_sum + pass_portable(kind, x1 + body, x2 + body, y + body, n - body);
}

// copy, scale, add and triad with 16-byte (VEX-128) accesses, for slices far beyond the caches.
// On Zen 3 at 256 MiB these measured 8–12% faster than the 32-byte loop above (triad ~26 vs
// ~23.5 GB/s, one thread), matching what an SSE2 build of STREAM reaches; in L1 and L2 they
// are up to 2x slower, hence the switch on slice size in bandwidth(). read and write stay
// 32-byte wide: there the wide loop was as fast or faster at every size.
__attribute__((target("avx2,fma"))) double pass_avx2_narrow(Kind kind, const double* x1,
                                                            const double* x2, double* y,
                                                            std::size_t n) {
  const std::size_t body = n / 2 * 2;
  const __m128d s = _mm_set1_pd(kScalar);
  switch (kind) {
    case Kind::read:
    case Kind::write:
      return pass_avx2(kind, x1, x2, y, n);
    case Kind::copy:
      for (std::size_t i = 0; i < body; i += 2) _mm_store_pd(y + i, _mm_load_pd(x1 + i));
      break;
    case Kind::scale:
      for (std::size_t i = 0; i < body; i += 2) _mm_store_pd(y + i, _mm_mul_pd(s, _mm_load_pd(x1 + i)));
      break;
    case Kind::add:
      for (std::size_t i = 0; i < body; i += 2) {
        _mm_store_pd(y + i, _mm_add_pd(_mm_load_pd(x1 + i), _mm_load_pd(x2 + i)));
      }
      break;
    case Kind::triad:
      for (std::size_t i = 0; i < body; i += 2) {
        _mm_store_pd(y + i, _mm_fmadd_pd(s, _mm_load_pd(x2 + i), _mm_load_pd(x1 + i)));
      }
      break;
  }
  return pass_portable(kind, x1 + body, x2 + body, y + body, n - body);
}
#endif

#if defined(__x86_64__)
// 64-byte (zmm) accesses: one cache line per load or store. Zen 5 and Intel's AVX-512 server
// cores load two 64-byte vectors per cycle from L1, so there the 32-byte loop above caps the
// L1 and L2 ceilings at about half of what the core moves. Zen 4 splits each 512-bit load
// into two 256-bit ones: there both loops measured the same (~210 GB/s read in L1, one
// thread). Slices start 64-byte aligned, so every vector is aligned; the tail below 8
// elements goes through the portable loop.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) double pass_avx512(
    Kind kind, const double* x1, const double* x2, double* y, std::size_t n) {
  const std::size_t body = n / 8 * 8;
  const __m512d s = _mm512_set1_pd(kScalar);
  double head_sum = 0.0;
  switch (kind) {
    case Kind::read: {
      // Eight sums, as in pass_avx2: 2 loads per cycle into adds of latency 3-4.
      __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
      __m512d s2 = _mm512_setzero_pd(), s3 = _mm512_setzero_pd();
      __m512d s4 = _mm512_setzero_pd(), s5 = _mm512_setzero_pd();
      __m512d s6 = _mm512_setzero_pd(), s7 = _mm512_setzero_pd();
      std::size_t i = 0;
      for (; i + 64 <= body; i += 64) {
        s0 = _mm512_add_pd(s0, _mm512_load_pd(x1 + i));
        s1 = _mm512_add_pd(s1, _mm512_load_pd(x1 + i + 8));
        s2 = _mm512_add_pd(s2, _mm512_load_pd(x1 + i + 16));
        s3 = _mm512_add_pd(s3, _mm512_load_pd(x1 + i + 24));
        s4 = _mm512_add_pd(s4, _mm512_load_pd(x1 + i + 32));
        s5 = _mm512_add_pd(s5, _mm512_load_pd(x1 + i + 40));
        s6 = _mm512_add_pd(s6, _mm512_load_pd(x1 + i + 48));
        s7 = _mm512_add_pd(s7, _mm512_load_pd(x1 + i + 56));
      }
      for (; i < body; i += 8) s0 = _mm512_add_pd(s0, _mm512_load_pd(x1 + i));
      s0 = _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3));
      s4 = _mm512_add_pd(_mm512_add_pd(s4, s5), _mm512_add_pd(s6, s7));
      alignas(64) double v[8];
      _mm512_store_pd(v, _mm512_add_pd(s0, s4));
      head_sum = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
      break;
    }
    case Kind::write:
      for (std::size_t i = 0; i < body; i += 8) _mm512_store_pd(y + i, s);
      break;
    case Kind::copy:
      for (std::size_t i = 0; i < body; i += 8) _mm512_store_pd(y + i, _mm512_load_pd(x1 + i));
      break;
    case Kind::scale:
      for (std::size_t i = 0; i < body; i += 8) {
        _mm512_store_pd(y + i, _mm512_mul_pd(s, _mm512_load_pd(x1 + i)));
      }
      break;
    case Kind::add:
      for (std::size_t i = 0; i < body; i += 8) {
        _mm512_store_pd(y + i, _mm512_add_pd(_mm512_load_pd(x1 + i), _mm512_load_pd(x2 + i)));
      }
      break;
    case Kind::triad:
      for (std::size_t i = 0; i < body; i += 8) {
        _mm512_store_pd(y + i,
                        _mm512_fmadd_pd(s, _mm512_load_pd(x2 + i), _mm512_load_pd(x1 + i)));
      }
      break;
  }
  return head_sum + pass_portable(kind, x1 + body, x2 + body, y + body, n - body);
}
#endif

// The widest passes built here (off x86-64, best_isa() is portable).
constexpr Isa kWidest = Isa::avx512;

// The loops a pass of `kind` takes on `isa` (read once per call by kernel_isa()) and the
// ISA they are compiled for, which the result names. Past the caches (`narrow`) the
// streaming kinds take the 16-byte loops whatever the ISA allows: the DRAM behaviour that
// made them faster there does not depend on the register width the core offers.
struct PassPath {
  Isa isa;
  bool narrow;
};

PassPath pass_path(Kind kind, Isa isa, bool narrow) {
  const bool streaming = kind != Kind::read && kind != Kind::write;
  if (isa >= Isa::avx2 && narrow && streaming) return {Isa::avx2, true};
  return {isa, false};
}

// One pass of `kind` over [0, n) on `path`. Returns what `read` summed, 0 for the others.
double run_pass(Kind kind, PassPath path, const double* x1, const double* x2, double* y,
                std::size_t n) {
#if defined(__x86_64__)
  if (path.narrow) return pass_avx2_narrow(kind, x1, x2, y, n);
  if (path.isa >= Isa::avx512) return pass_avx512(kind, x1, x2, y, n);
  if (path.isa >= Isa::avx2) return pass_avx2(kind, x1, x2, y, n);
#else
  (void)path;
#endif
  return pass_portable(kind, x1, x2, y, n);
}

// A sense-reversing spin barrier: threads are few and passes short, so spinning is cheaper
// and steadier than a condition variable.
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void wait() {
    const int gen = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      count_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    while (gen_.load(std::memory_order_acquire) == gen) {
      std::this_thread::yield();
    }
  }

 private:
  const int n_;
  std::atomic<int> count_{0};
  std::atomic<int> gen_{0};
};

// [begin, end) of thread `tid`'s slice, boundaries on 64-byte multiples.
std::pair<std::size_t, std::size_t> slice(std::size_t n, int tid, int nt) {
  const std::size_t blocks = (n + kAlignElems - 1) / kAlignElems;
  const std::size_t b0 = blocks * static_cast<std::size_t>(tid) / static_cast<std::size_t>(nt);
  const std::size_t b1 = blocks * static_cast<std::size_t>(tid + 1) / static_cast<std::size_t>(nt);
  return {std::min(n, b0 * kAlignElems), std::min(n, b1 * kAlignElems)};
}

}  // namespace

BandwidthResult bandwidth(const std::string& kind, std::size_t working_set_bytes, int threads,
                          double min_time_s, const std::string& isa_asked) {
  const KindInfo& info = find_kind(kind);
  Isa isa = kernel_isa(kWidest);
  if (!isa_asked.empty()) {
    const Isa asked = parse_isa(isa_asked, "bandwidth");
    if (asked > isa) {
      throw std::invalid_argument("[bandwidth] isa is '" + isa_asked + "', above what runs " +
                                  "here: the widest is '" + isa_name(isa) + "'");
    }
    isa = asked;
  }
  const int nt = resolve_threads(threads, "bandwidth");
  if (!std::isfinite(min_time_s) || min_time_s <= 0.0 || min_time_s > 3600.0) {
    throw std::invalid_argument("[bandwidth] min_time_s is " + std::to_string(min_time_s) +
                                ", expected a time in (0, 3600] s");
  }
  const std::size_t floor_bytes = 4096 * static_cast<std::size_t>(nt);
  if (working_set_bytes < floor_bytes) {
    throw std::invalid_argument("[bandwidth] working set of " + std::to_string(working_set_bytes) +
                                " bytes, expected at least 4096 per thread (" +
                                std::to_string(floor_bytes) + ")");
  }
  const std::size_t phys = physical_memory_bytes();
  if (phys > 0 && working_set_bytes > phys / 2) {
    throw std::invalid_argument("[bandwidth] working set of " + std::to_string(working_set_bytes) +
                                " bytes exceeds half of physical memory (" +
                                std::to_string(phys / 2) + " bytes)");
  }
  const std::size_t n = working_set_bytes / sizeof(double) / static_cast<std::size_t>(info.arrays);
  Array arrays[3];
  for (int i = 0; i < info.arrays; ++i) arrays[i] = allocate(n);
  // Inputs first, the written array last: read x1; write y; copy/scale y = f(x1);
  // add/triad y = f(x1, x2).
  double* x1 = arrays[0].get();
  double* x2 = info.arrays > 2 ? arrays[1].get() : x1;
  double* y = arrays[info.arrays - 1].get();

  // Read once: every pass of the call runs the path the result names. Per-thread footprint
  // beyond which the streaming kinds use 16-byte accesses: well past a core's L2 and its
  // share of a typical L3, where only DRAM behaviour matters.
  const bool narrow = working_set_bytes / static_cast<std::size_t>(nt) >= kNarrowFromBytes;
  const PassPath path = pass_path(info.kind, isa, narrow);
  auto pass_piece = [&](const double* p1, const double* p2, double* py, std::size_t len) {
    return run_pass(info.kind, path, p1, p2, py, len);
  };
  // One pass, in pieces when the slice is long; a pass stopped for an interrupt is cut
  // short, and the barriers around it still meet (the caller's loop ends after them).
  auto pass = [&](const double* p1, const double* p2, double* py, std::size_t len) {
    if (len <= kPieceElems) return pass_piece(p1, p2, py, len);
    double sum = 0.0;
    for (std::size_t i = 0; i < len && !interrupt_requested(); i += kPieceElems) {
      sum += pass_piece(p1 + i, p2 + i, py + i, std::min(kPieceElems, len - i));
    }
    return sum;
  };

  SpinBarrier barrier(nt);
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> reps{1};  // passes per timed unit, set by thread 0
  std::vector<double> unit_s;        // thread 0's timings of each unit, per pass
  std::vector<double> sinks(static_cast<std::size_t>(nt), 0.0);
  run_parallel(nt, [&](int tid, int threads_now) {
    const auto [lo, hi] = slice(n, tid, threads_now);
    const double* s1 = x1 + lo;
    const double* s2 = x2 + lo;
    double* sy = y + lo;
    const std::size_t len = hi - lo;
    // First touch: the thread that will stream the slice maps its pages.
    for (int k = 0; k < info.arrays; ++k) {
      double* base = arrays[k].get() + lo;
      for (std::size_t i0 = 0; i0 < len && !interrupt_requested(); i0 += kPieceElems) {
        const std::size_t i1 = std::min(len, i0 + kPieceElems);
        for (std::size_t i = i0; i < i1; ++i) base[i] = 1.0 + static_cast<double>(k);
      }
    }
    double sink = 0.0;
    barrier.wait();
    // Warm pass; thread 0 sizes the timed unit from it.
    const Clock::time_point w0 = Clock::now();
    sink += pass(s1, s2, sy, len);
    barrier.wait();
    if (tid == 0) {
      const double warm_s = std::chrono::duration<double>(Clock::now() - w0).count();
      reps.store(static_cast<std::size_t>(std::max(1.0, std::ceil(kUnitS / std::max(warm_s, 1e-9)))));
    }
    barrier.wait();
    const std::size_t r = reps.load();
    const Clock::time_point start = Clock::now();
    for (;;) {
      barrier.wait();
      const Clock::time_point t0 = Clock::now();
      for (std::size_t k = 0; k < r; ++k) sink += pass(s1, s2, sy, len);
      barrier.wait();
      if (tid == 0) {
        const Clock::time_point t1 = Clock::now();
        unit_s.push_back(std::chrono::duration<double>(t1 - t0).count() / static_cast<double>(r));
        const double total = std::chrono::duration<double>(t1 - start).count();
        // An interrupt ends the run here, between timed units, as the time budget does.
        stop.store((total >= min_time_s && unit_s.size() >= 3) || unit_s.size() >= 100000 ||
                   interrupt_requested());
      }
      barrier.wait();
      if (stop.load()) break;
    }
    sinks[static_cast<std::size_t>(tid)] = sink;
  });
  throw_if_interrupted("bandwidth");

  BandwidthResult res;
  res.kind = info.name;
  res.working_set_bytes = n * sizeof(double) * static_cast<std::size_t>(info.arrays);
  res.arrays = static_cast<std::size_t>(info.arrays);
  res.bytes_per_pass = static_cast<double>(n) * sizeof(double) * (info.reads + info.writes);
  res.write_allocate_bytes_per_pass = static_cast<double>(n) * sizeof(double) * info.writes;
  res.best_s = *std::min_element(unit_s.begin(), unit_s.end());
  res.median_s = detail::median(unit_s);
  res.gb_per_s = res.bytes_per_pass / res.best_s / 1e9;
  res.threads = nt;
  res.passes = static_cast<int>(unit_s.size() * reps.load());
  res.isa = isa_name(path.isa);
  double total = 0.0;
  for (double s : sinks) total += s;
  if (!std::isfinite(total)) res.gb_per_s = 0.0;  // never: keeps the read kernel's sums alive
  return res;
}

namespace detail {

BandwidthPass bandwidth_pass(const std::string& kind, const double* x1, const double* x2,
                             double* y, std::size_t n, bool past_caches) {
  const KindInfo& info = find_kind(kind);
  for (const double* p : {x1, x2, static_cast<const double*>(y)}) {
    if (reinterpret_cast<std::uintptr_t>(p) % kAlignBytes != 0) {
      throw std::invalid_argument("[bandwidth_pass] arrays must be 64-byte aligned");
    }
  }
  const PassPath path = pass_path(info.kind, kernel_isa(kWidest), past_caches);
  return {run_pass(info.kind, path, x1, x2, y, n), isa_name(path.isa)};
}

}  // namespace detail
}  // namespace fastbench
