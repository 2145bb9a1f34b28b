// peak.cpp — see peak.hpp. Every chain lives in a register from start to end: ymm kernels
// run 12 FMA chains (latency 4 x 2 pipes needs at least 8 in flight on Zen and Skylake), or
// 8 FMA + 6 add chains for the mix, plus two constants: 14-16 of the 16 ymm registers. zmm
// kernels have 32 registers and run 16 FMA chains, 12 + 12 for the mix, and 16 dot-product
// chains (vdpbf16ps and vpdpbusd take 4-6 cycles: 16 cover two issued a cycle; the
// AVX-VNNI ymm kernel runs 12).
// Tile kernels (AMX) hold four tdpbf16ps or tdpbusd chains in tiles.
// Checked with objdump -d on the Release object: the hot loops touch no memory.
// The core clock comes from a chain of dependent integer adds of a register, one per cycle
// on every x86 core since the P6 (Agner Fog, instruction tables); adds of an immediate are
// not, since Golden Cove folds them (add_chain).
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
#include "parallel.hpp"
#include "simd/amx.hpp"
#include "simd/avx2.hpp"
#include "simd/avx512.hpp"

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
// Dot-product chains add products of small constants: bf16 chains grow by 2e-6 a trip and
// stay far from overflow; int8 chains wrap modulo 2^32, as the instruction defines.
constexpr int kYmmFma = 12;
constexpr int kYmmMixFma = 8;
constexpr int kYmmMixAdd = 6;
constexpr int kZmmFma = 16;
constexpr int kZmmMixFma = 12;
constexpr int kZmmMixAdd = 12;
constexpr int kDotChains = 16;

struct Kernel {
  double (*run)(std::uint64_t iters) = nullptr;  // returns a sink of the chains
  Isa isa = Isa::portable;                       // the path it runs
  int fma_per_iter = 0;
  int add_per_iter = 0;
  double flops_per_instruction = 0.0;  // per FMA or dot product; an add is half an FMA
  int vector_bits = 0;
  const char* instruction = "";
  double flops_per_iter() const {
    return fma_per_iter * flops_per_instruction + add_per_iter * flops_per_instruction / 2;
  }
};

// Distinct starting values: identical chains would be merged into one by the compiler.
template <class T>
constexpr T start(int i) {
  return static_cast<T>(1.0 + 0.01 * i);
}

#if defined(__x86_64__)
// The chain loops, once per register width: a target attribute applies to every
// instantiation of a template, so the ymm and zmm kernels cannot share one. The arrays are
// indexed by constants only in fully unrolled loops, so they live in registers.
template <class T>
__attribute__((target("avx2,fma"))) double fma_ymm(std::uint64_t iters) {
  using A = detail::Avx2<T>;
  const typename A::Reg m = A::set(static_cast<T>(0.9999999));
  const typename A::Reg c = A::set(static_cast<T>(1e-7));
  typename A::Reg r[kYmmFma];
#pragma GCC unroll 16
  for (int j = 0; j < kYmmFma; ++j) r[j] = A::set(start<T>(j));
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kYmmFma; ++j) r[j] = A::fma(r[j], m, c);
  }
#pragma GCC unroll 16
  for (int j = 1; j < kYmmFma; ++j) r[0] = A::add(r[0], r[j]);
  return A::sum(r[0]);
}

template <class T>
__attribute__((target("avx2,fma"))) double mix_ymm(std::uint64_t iters) {
  using A = detail::Avx2<T>;
  const typename A::Reg m = A::set(static_cast<T>(0.9999999));
  const typename A::Reg c = A::set(static_cast<T>(1e-7));
  typename A::Reg f[kYmmMixFma];
  typename A::Reg a[kYmmMixAdd];
#pragma GCC unroll 16
  for (int j = 0; j < kYmmMixFma; ++j) f[j] = A::set(start<T>(j));
#pragma GCC unroll 16
  for (int j = 0; j < kYmmMixAdd; ++j) a[j] = A::set(start<T>(j) - T(1));
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kYmmMixFma; ++j) {
      f[j] = A::fma(f[j], m, c);
      if (j < kYmmMixAdd) a[j] = A::add(a[j], c);
    }
  }
#pragma GCC unroll 16
  for (int j = 1; j < kYmmMixFma; ++j) f[0] = A::add(f[0], f[j]);
#pragma GCC unroll 16
  for (int j = 0; j < kYmmMixAdd; ++j) f[0] = A::add(f[0], a[j]);
  return A::sum(f[0]);
}

#define FASTBENCH_ZMM_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"

template <class T>
__attribute__((target(FASTBENCH_ZMM_TARGET))) double fma_zmm(std::uint64_t iters) {
  using A = detail::Avx512<T>;
  const typename A::Reg m = A::set(static_cast<T>(0.9999999));
  const typename A::Reg c = A::set(static_cast<T>(1e-7));
  typename A::Reg r[kZmmFma];
#pragma GCC unroll 16
  for (int j = 0; j < kZmmFma; ++j) r[j] = A::set(start<T>(j));
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kZmmFma; ++j) r[j] = A::fma(r[j], m, c);
  }
#pragma GCC unroll 16
  for (int j = 1; j < kZmmFma; ++j) r[0] = A::add(r[0], r[j]);
  return A::sum(r[0]);
}

template <class T>
__attribute__((target(FASTBENCH_ZMM_TARGET))) double mix_zmm(std::uint64_t iters) {
  using A = detail::Avx512<T>;
  const typename A::Reg m = A::set(static_cast<T>(0.9999999));
  const typename A::Reg c = A::set(static_cast<T>(1e-7));
  typename A::Reg f[kZmmMixFma];
  typename A::Reg a[kZmmMixAdd];
#pragma GCC unroll 16
  for (int j = 0; j < kZmmMixFma; ++j) f[j] = A::set(start<T>(j));
#pragma GCC unroll 16
  for (int j = 0; j < kZmmMixAdd; ++j) a[j] = A::set(start<T>(j) - T(1));
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kZmmMixFma; ++j) {
      f[j] = A::fma(f[j], m, c);
      a[j] = A::add(a[j], c);
    }
  }
#pragma GCC unroll 16
  for (int j = 1; j < kZmmMixFma; ++j) f[0] = A::add(f[0], f[j]);
#pragma GCC unroll 16
  for (int j = 0; j < kZmmMixAdd; ++j) f[0] = A::add(f[0], a[j]);
  return A::sum(f[0]);
}

// vdpbf16ps: per float32 lane, acc += a[2i]·b[2i] + a[2i+1]·b[2i+1] with bf16 inputs.
__attribute__((target(FASTBENCH_ZMM_TARGET ",avx512bf16"))) double bf16_zmm(std::uint64_t iters) {
  const __m512 x = _mm512_set1_ps(1e-3f);
  const __m512bh a = _mm512_cvtne2ps_pbh(x, x);
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(2e-3f), x);
  __m512 r[kDotChains];
#pragma GCC unroll 16
  for (int j = 0; j < kDotChains; ++j) r[j] = _mm512_set1_ps(start<float>(j));
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kDotChains; ++j) r[j] = _mm512_dpbf16_ps(r[j], a, b);
  }
#pragma GCC unroll 16
  for (int j = 1; j < kDotChains; ++j) r[0] = _mm512_add_ps(r[0], r[j]);
  return detail::Avx512<float>::sum(r[0]);
}

// vpdpbusd: per int32 lane, acc += the four u8·s8 products of its bytes.
__attribute__((target(FASTBENCH_ZMM_TARGET ",avx512vnni"))) double int8_zmm(std::uint64_t iters) {
  const __m512i a = _mm512_set1_epi8(3);
  const __m512i b = _mm512_set1_epi8(-5);
  __m512i r[kDotChains];
#pragma GCC unroll 16
  for (int j = 0; j < kDotChains; ++j) r[j] = _mm512_set1_epi32(j);
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kDotChains; ++j) {
      // Inline assembly: GCC 12 copies each accumulator through a temporary around the
      // intrinsic (two extra moves per instruction); the asm names it as read and written.
      __asm__("vpdpbusd %2, %1, %0" : "+v"(r[j]) : "v"(a), "v"(b));
    }
  }
#pragma GCC unroll 16
  for (int j = 1; j < kDotChains; ++j) r[0] = _mm512_add_epi32(r[0], r[j]);
  // Stored and summed here: the reduce intrinsics start from an undefined register, which
  // GCC 12 reports as used uninitialised.
  alignas(64) std::int32_t v[16];
  _mm512_store_si512(v, r[0]);
  double s = 0.0;
  for (std::int32_t x : v) s += x;
  return s;
}

// The VEX form (AVX-VNNI), 16 ymm registers: 12 chains and two constants.
// No avxvnni target: the instruction is in the asm, so compilers without that target name
// (GCC < 11) still build it; it runs only where has_avx_vnni() says so.
__attribute__((target("avx2,fma"))) double int8_ymm(std::uint64_t iters) {
  const __m256i a = _mm256_set1_epi8(3);
  const __m256i b = _mm256_set1_epi8(-5);
  __m256i r[kYmmFma];
#pragma GCC unroll 16
  for (int j = 0; j < kYmmFma; ++j) r[j] = _mm256_set1_epi32(j);
  for (std::uint64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kYmmFma; ++j) {
      // As in int8_zmm; {vex} forces the AVX-VNNI encoding (the EVEX one needs AVX512VL).
      __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(r[j]) : "x"(a), "x"(b));
    }
  }
#pragma GCC unroll 16
  for (int j = 1; j < kYmmFma; ++j) r[0] = _mm256_add_epi32(r[0], r[j]);
  alignas(32) std::int32_t v[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), r[0]);
  double s = 0.0;
  for (std::int32_t x : v) s += x;
  return s;
}

#undef FASTBENCH_ZMM_TARGET
#endif

#if FASTBENCH_AMX_BUILT
// Tile products: four accumulator tiles (0-3) fed by two A tiles (4, 5) and two B tiles (6,
// 7) that stay loaded, four independent products a trip: tdpbf16ps and tdpbusd issue one
// every 16 cycles on Sapphire Rapids, and four chains cover their latency (Intel
// Optimization Reference Manual, "Intel AMX"). Small inputs keep the float32 sums finite
// however long the chains run; the int32 sums wrap, as the instruction defines.
constexpr int kTileChains = 4;

template <bool kInt8>
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) double tile_products(std::uint64_t iters) {
  alignas(64) std::uint16_t ops[16 * 32];
  for (std::uint16_t& v : ops) v = kInt8 ? 0x0103 : 0x3a83;  // int8 1 and 3; bf16 about 1e-3
  alignas(64) float out[16 * 16];
  const detail::TileScope tiles;
  _tile_loadd(4, ops, 64);
  _tile_loadd(5, ops, 64);
  _tile_loadd(6, ops, 64);
  _tile_loadd(7, ops, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (std::uint64_t i = 0; i < iters; ++i) {
    if constexpr (kInt8) {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    } else {
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  double s = 0.0;
  _tile_stored(0, out, 64);
  for (float x : out) s += static_cast<double>(x);
  _tile_stored(3, out, 64);
  for (float x : out) s += static_cast<double>(x);
  return s;
}
#endif

// Portable: the same chains on scalars; the compiler may or may not vectorise them, so no
// per-instruction count is reported (flops_per_instruction is 2, a scalar FMA). m and c are
// read through volatile: in float32 every start value is a fixed point of x·m + c once
// rounded, and a compiler that sees the constants folds the whole loop into its result.
template <class T>
T opaque(T v) {
  volatile T hidden = v;
  return hidden;
}

template <class T>
double fma_portable(std::uint64_t iters) {
  T r[kYmmFma];
  for (int i = 0; i < kYmmFma; ++i) r[i] = start<T>(i);
  const T m = opaque(static_cast<T>(0.9999999));
  const T c = opaque(static_cast<T>(1e-7));
  for (std::uint64_t i = 0; i < iters; ++i) {
    for (T& x : r) x = x * m + c;
  }
  double s = 0.0;
  for (T x : r) s += static_cast<double>(x);
  return s;
}

template <class T>
double mix_portable(std::uint64_t iters) {
  T f[kYmmMixFma];
  T a[kYmmMixAdd];
  for (int i = 0; i < kYmmMixFma; ++i) f[i] = start<T>(i);
  for (int i = 0; i < kYmmMixAdd; ++i) a[i] = static_cast<T>(0.1 * i);
  const T m = opaque(static_cast<T>(0.9999999));
  const T c = opaque(static_cast<T>(1e-7));
  for (std::uint64_t i = 0; i < iters; ++i) {
    for (T& x : f) x = x * m + c;
    for (T& x : a) x = x + c;
  }
  double s = 0.0;
  for (T x : f) s += static_cast<double>(x);
  for (T x : a) s += static_cast<double>(x);
  return s;
}

template <class T>
Kernel float_kernel(bool mix, Isa isa) {
  Kernel k;
  const bool f32 = sizeof(T) == 4;
  if (isa > Isa::avx512) isa = Isa::avx512;  // no tile FMAs: the amx level runs zmm
  k.isa = isa;
#if defined(__x86_64__)
  if (isa == Isa::avx512) {
    k.vector_bits = 512;
    k.flops_per_instruction = 2.0 * detail::Avx512<T>::kLanes;
    k.fma_per_iter = mix ? kZmmMixFma : kZmmFma;
    k.add_per_iter = mix ? kZmmMixAdd : 0;
    k.run = mix ? &mix_zmm<T> : &fma_zmm<T>;
    k.instruction = f32 ? (mix ? "vfmadd231ps + vaddps zmm" : "vfmadd231ps zmm")
                        : (mix ? "vfmadd231pd + vaddpd zmm" : "vfmadd231pd zmm");
    return k;
  }
  if (isa == Isa::avx2) {
    k.vector_bits = 256;
    k.flops_per_instruction = 2.0 * detail::Avx2<T>::kLanes;
    k.fma_per_iter = mix ? kYmmMixFma : kYmmFma;
    k.add_per_iter = mix ? kYmmMixAdd : 0;
    k.run = mix ? &mix_ymm<T> : &fma_ymm<T>;
    k.instruction = f32 ? (mix ? "vfmadd231ps + vaddps ymm" : "vfmadd231ps ymm")
                        : (mix ? "vfmadd231pd + vaddpd ymm" : "vfmadd231pd ymm");
    return k;
  }
#endif
  (void)isa;
  k.flops_per_instruction = 2.0;
  k.fma_per_iter = mix ? kYmmMixFma : kYmmFma;
  k.add_per_iter = mix ? kYmmMixAdd : 0;
  k.run = mix ? &mix_portable<T> : &fma_portable<T>;
  k.instruction = "scalar C++";
  return k;
}

// Why a dot-product kernel cannot run: the CPU (with its OS) lacks the extension, the ISA
// cap turns it off, or the path asked for is narrower than the one it needs.
std::string why_not(bool cpu_has, Isa needs, Isa asked) {
  if (!cpu_has) return "which this CPU lacks (or its OS does not enable the register state)";
  if (active_isa() < needs) {
    return std::string("which the ISA cap '") + isa_name(active_isa()) + "' turns off";
  }
  return std::string("an ") + isa_name(needs) + " path, but isa '" + isa_name(asked) +
         "' was asked for";
}

// The bf16 and int8 kernels, or std::invalid_argument saying what is missing: tiles on the
// amx path, zmm (or ymm for AVX-VNNI) registers below it.
Kernel dot_kernel(const std::string& dtype, Isa isa) {
  Kernel k;
  const CpuFeatures& cpu = cpu_features();
#if FASTBENCH_AMX_BUILT
  if (isa >= Isa::amx && (dtype == "bfloat16" || has_amx_int8())) {
    const bool int8 = dtype == "int8";
    k.isa = Isa::amx;
    k.run = int8 ? &tile_products<true> : &tile_products<false>;
    k.vector_bits = kTileBits;
    // 16×16 accumulators, each the sum of 32 bf16 (64 int8) products: multiply and add.
    k.flops_per_instruction = 16.0 * 16.0 * (int8 ? 64 : 32) * 2.0;
    k.fma_per_iter = kTileChains;
    k.instruction = int8 ? "tdpbusd tmm (AMX-INT8)" : "tdpbf16ps tmm (AMX-BF16)";
    return k;
  }
#endif
  if (isa > Isa::avx512) isa = Isa::avx512;  // int8 without AMX-INT8: the zmm path
  k.isa = isa;
  if (dtype == "bfloat16") {
    if (!has_avx512_bf16() || isa < Isa::avx512) {
      throw std::invalid_argument("[peak_flops] bfloat16 needs AVX512_BF16, " +
                                  why_not(cpu.avx512_bf16, Isa::avx512, isa));
    }
#if defined(__x86_64__)
    k.run = &bf16_zmm;
    k.vector_bits = 512;
    k.flops_per_instruction = 16 * 2 * 2.0;  // 16 lanes, 2 bf16 pairs, multiply and add
    k.fma_per_iter = kDotChains;
    k.instruction = "vdpbf16ps zmm";
#endif
    return k;
  }
#if defined(__x86_64__)
  if (isa >= Isa::avx512 && has_avx512_vnni()) {
    k.run = &int8_zmm;
    k.vector_bits = 512;
    k.flops_per_instruction = 16 * 4 * 2.0;  // 16 lanes, 4 u8·s8 products, multiply and add
    k.fma_per_iter = kDotChains;
    k.instruction = "vpdpbusd zmm (AVX512_VNNI)";
    return k;
  }
  if (isa >= Isa::avx2 && has_avx_vnni()) {
    k.isa = Isa::avx2;
    k.run = &int8_ymm;
    k.vector_bits = 256;
    k.flops_per_instruction = 8 * 4 * 2.0;
    k.fma_per_iter = kYmmFma;
    k.instruction = "vpdpbusd ymm (AVX-VNNI)";
    return k;
  }
#endif
  // AVX-VNNI runs on an avx2 path, AVX512_VNNI on avx512: name the nearer miss.
  const bool zmm = cpu.avx512_vnni && best_isa() >= Isa::avx512;
  throw std::invalid_argument(
      "[peak_flops] int8 needs AVX512_VNNI or AVX-VNNI, " +
      (zmm ? why_not(true, Isa::avx512, isa)
           : why_not(cpu.avx_vnni, Isa::avx2, isa < Isa::avx2 ? isa : Isa::avx2)));
}

void check_time(double min_time_s, const char* who) {
  if (!std::isfinite(min_time_s) || min_time_s <= 0.0 || min_time_s > 3600.0) {
    throw std::invalid_argument(std::string("[") + who + "] min_time_s is " +
                                std::to_string(min_time_s) + ", expected a time in (0, 3600] s");
  }
}

#if defined(__x86_64__)
// 100 dependent adds per loop trip; the loop counter's own dec/jnz run beside the chain. The
// added value is a register, never an immediate: Golden Cove and later Intel cores fold a
// chain of `add $imm, reg` in the renamer, about six to a cycle, which read a 4.0 GHz Xeon as
// 23.7 GHz and its FMA peak as 10 FLOP per cycle of 64. A register operand keeps each add a
// one-cycle ALU op (4.04 GHz there, as a chain of 3-cycle imuls gives).
std::uint64_t add_chain(std::uint64_t trips) {
  std::uint64_t acc = 0;
  std::uint64_t n = trips;
  std::uint64_t one = 1;
  __asm__ volatile(
      "1:\n\t"
      ".rept 100\n\t"
      "add %2, %0\n\t"
      ".endr\n\t"
      "dec %1\n\t"
      "jnz 1b\n\t"
      : "+r"(acc), "+r"(n)
      : "r"(one)
      : "cc");
  return acc;
}
#endif

}  // namespace

double core_hz(double min_time_s) {
  check_time(min_time_s, "core_hz");
#if defined(__x86_64__)
  // Windows of ~min_time_s / 5 each, the highest kept: a window counts one add per cycle
  // of a dependent chain, so preemption or a shared core only makes it read slow, never fast.
  // The median of 5 read 0.53 and 0.92 GHz for a 3.9 GHz core on a 2-vCPU guest whose cores
  // a build kept busy, and FLOP per cycle then read 2.8x the table's figure. Trips per chunk
  // come from a call of at least a chunk (a fifth of min_time_s when that is shorter).
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
  return *std::max_element(hz.begin(), hz.end());
#else
  return 0.0;  // no portable one-cycle dependent chain: unknown
#endif
}

PeakResult peak_flops(const std::string& dtype, int threads, bool add_mix, double min_time_s,
                      const std::string& isa_asked) {
  const bool floating = dtype == "float32" || dtype == "float64";
  if (!floating && dtype != "bfloat16" && dtype != "int8") {
    throw std::invalid_argument("[peak_flops] dtype is '" + dtype +
                                "', expected 'float32', 'float64', 'bfloat16' or 'int8'");
  }
  if (add_mix && !floating) {
    throw std::invalid_argument("[peak_flops] add_mix is for float32 and float64; " + dtype +
                                " has dot-product chains only");
  }
  const int nt = resolve_threads(threads, "peak_flops");
  check_time(min_time_s, "peak_flops");
  Isa isa = active_isa();
  if (!isa_asked.empty()) {
    isa = parse_isa(isa_asked, "peak_flops");
    if (isa > active_isa()) {
      throw std::invalid_argument("[peak_flops] isa is '" + isa_asked + "', above what runs " +
                                  "here: the widest is '" + isa_name(active_isa()) + "'");
    }
  }
  const Kernel k = dtype == "float32"   ? float_kernel<float>(add_mix, isa)
                   : dtype == "float64" ? float_kernel<double>(add_mix, isa)
                                        : dot_kernel(dtype, isa);
  PeakResult r;
  r.dtype = dtype;
  r.isa = isa_name(k.isa);
  r.instruction = k.instruction;
  r.vector_bits = k.vector_bits;
  r.add_mix = add_mix;
  r.fma_per_iter = k.fma_per_iter;
  r.add_per_iter = k.add_per_iter;
  r.flops_per_instruction = k.flops_per_instruction;
  r.threads = nt;
  const double flops_per_iter = k.flops_per_iter();
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
    rate[static_cast<std::size_t>(tid)] = flops_per_iter * static_cast<double>(done) / s;
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
