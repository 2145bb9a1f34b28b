// peak.hpp — peak arithmetic rate from independent chains held in registers, on 1..N
// threads: float32 and float64 FMAs (optionally mixed with independent adds for cores with
// separate add pipes) on ymm or zmm registers, bfloat16 dot products (AMX tdpbf16ps tiles, or
// AVX512_BF16 vdpbf16ps) and int8 dot products (AMX tdpbusd, or AVX512_VNNI or AVX-VNNI
// vpdpbusd); and the core clock measured from a chain of dependent integer adds (one per
// cycle), so FLOP/cycle can be set against what the core's pipes promise (the Python
// layer's table, fastbench.machine.microarch: the core sets no expectation of its own).
// No Python here.
#pragma once

#include <string>

namespace fastbench {

// The vector_bits of a tile (AMX) kernel: one tile register, 16 rows of 64 bytes.
inline constexpr int kTileBits = 16 * 64 * 8;

struct PeakResult {
  std::string dtype;        // "float32", "float64", "bfloat16" or "int8"
  std::string isa;          // isa_name() of the path run: "amx", "avx512", "avx2", "portable"
  std::string instruction;  // what the chains issue: "vfmadd231ps zmm", "tdpbf16ps tmm", ...
  int vector_bits = 0;      // register width of the chains: kTileBits, 512, 256, or 0 (portable
                            // scalars)
  bool add_mix = false;     // FMA chains interleaved with independent adds
  int fma_per_iter = 0;     // chain instructions per loop trip: FMAs (or dot products) ...
  int add_per_iter = 0;     // ... and independent adds (add_mix only)
  double flops_per_instruction = 0.0;  // per FMA or dot instruction: lanes x 2 (x pairs)
  int threads = 1;
  double flops_per_s = 0.0; // all threads together; int8 counts integer ops (OPS)
  double core_hz = 0.0;     // measured (dependent adds), per core
  double flops_per_cycle = 0.0;           // per core: flops_per_s / threads / core_hz
  double seconds = 0.0;
};

// Times the kernel for at least min_time_s per thread (each thread stops once that has
// passed). `isa` picks the path ("amx", "avx512", "avx2", "portable"); "" means the widest
// that active_isa() allows. float32 and float64 run zmm on the amx path (tiles hold no FMAs).
// bfloat16 runs tdpbf16ps tiles on the amx path, else needs has_avx512_bf16() (an avx512
// path); int8 runs tdpbusd tiles where has_amx_int8(), else needs has_avx512_vnni() (zmm,
// on an avx512 path) or has_avx_vnni() (ymm). Throws
// std::invalid_argument for an unknown dtype or ISA, an ISA above active_isa(), a dtype the
// CPU (or the cap) cannot run, a bad thread count or time; Interrupted when the
// InterruptScope of the calling thread stops it.
PeakResult peak_flops(const std::string& dtype, int threads = 1, bool add_mix = false,
                      double min_time_s = 0.1, const std::string& isa = "");

// Core cycles per second, from a chain of dependent adds timed on steady_clock
// (the fastest of five windows of min_time_s / 5: interference only slows one). Under turbo
// it is the clock the chain ran at.
// Throws Interrupted when the InterruptScope of the calling thread stops it.
double core_hz(double min_time_s = 0.02);

}  // namespace fastbench
