// isa.hpp — the one ISA dispatch: the widest instruction set the CPU and the OS allow, its
// name (one naming scheme for every kernel and report), and one process-wide cap that tests
// use to run every kernel on a narrower path. A kernel runs kernel_isa(widest it implements).
// Owns no CPUID (cpu.cpp does) and no kernels; no Python here.
#pragma once

#include <string>
#include <vector>

// Whether this build holds tile (AMX) code: x86-64 and a compiler with the AMX intrinsics
// (GCC 11, Clang 12). Without it the amx level is never detected, so no kernel is asked for a
// path it lacks.
#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 12) || \
                            (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define FASTBENCH_AMX_BUILT 1
#else
#define FASTBENCH_AMX_BUILT 0
#endif

namespace fastbench {

// Ordered by width: a wider ISA can run every narrower path.
enum class Isa : int {
  portable = 0,  // baseline x86-64 (SSE2) or any other target: plain C++
  avx2 = 1,      // AVX2 + FMA, with the YMM state enabled by the OS
  avx512 = 2,    // AVX-512 F, BW, VL and DQ, with the opmask and ZMM states enabled by the OS
  amx = 3,       // avx512 and AMX tiles (AMX-TILE, AMX-BF16), the tile state granted to this
                 // process: Sapphire Rapids and later Xeons. Only bf16 and int8 products have
                 // tile paths; every other kernel runs its avx512 path under it.
};
inline constexpr Isa kWidestIsa = Isa::amx;

// The widest ISA this CPU and OS allow (CPUID and XGETBV); detected once, thread-safe.
Isa best_isa();

// "portable", "avx2", "avx512" or "amx": the names every kernel reports.
const char* isa_name(Isa isa);

// Every ISA's name, narrowest first.
std::vector<std::string> isa_names();

// The ISA called `name`. Throws std::invalid_argument ("[<who>] ...") for any other name.
Isa parse_isa(const std::string& name, const char* who = "parse_isa");

// min(best_isa(), the cap): what kernels may use now.
Isa active_isa();

// The path a kernel implementing ISAs up to `widest` takes now: min(active_isa(), widest).
// A kernel reads it once per call and reports the same value it ran.
inline Isa kernel_isa(Isa widest) {
  const Isa active = active_isa();
  return active < widest ? active : widest;
}

// Extensions beyond an ISA level, each usable only where the CPU and OS allow it and the
// active ISA (the cap included) reaches the level it extends: under a cap below avx512 the
// 512-bit extensions read false, and under portable every one does.
bool has_avx512_bf16();  // AVX512_BF16: vdpbf16ps (bf16 pairs into float32)
bool has_avx512_vnni();  // AVX512_VNNI: vpdpbusd (u8 x s8 quads into int32)
bool has_avx_vnni();     // AVX-VNNI: the VEX (ymm) vpdpbusd, on cores without AVX-512 too
bool has_amx_int8();     // AMX-INT8: tdpbusd on tiles (the amx level has tdpbf16ps)

// Whether this core runs a 512-bit FMA as two 256-bit halves, so zmm code peaks no higher
// than ymm code: AMD Zen 4 (family 0x19 with AVX-512; AMD's family 19h optimization guide,
// 2.11). A kernel may then keep its ymm path where that measured faster; the table of
// fastbench.machine.microarch says the same per model.
bool zmm_fma_split();

namespace detail {
// Test hook: cap the ISA of every kernel (process-wide; kWidestIsa lifts the cap).
void set_isa_cap(Isa cap);
Isa isa_cap();
}  // namespace detail

}  // namespace fastbench
