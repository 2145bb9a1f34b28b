// cpu.hpp — what the processor offers, read once at run time: CPUID features (x86) and the
// data cache sizes. Owns detection only; isa.hpp, the kernels and the clocks decide what to
// do with it. No Python here, and no platform #if outside cpu.cpp.
#pragma once

#include <cstddef>
#include <string>

namespace fastbench {

struct CpuFeatures {
  bool x86 = false;            // compiled for and running on x86-64
  std::string vendor;          // CPUID leaf 0 vendor string, "" off x86
  std::string brand;           // CPUID 0x80000002..4 brand string, "" off x86
  bool sse2 = false;
  bool sse4_2 = false;
  bool avx = false;            // includes OS support for the YMM state (XGETBV)
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;        // AVX-512 flags include OS support for opmask and ZMM state
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512_vnni = false;    // CPUID 7.0 ECX[11]: vpdpbusd and kin on zmm (and ymm with VL)
  bool avx512_bf16 = false;    // CPUID 7.1 EAX[5]: vdpbf16ps, vcvtne2ps2bf16 (needs ZMM state)
  bool avx_vnni = false;       // CPUID 7.1 EAX[4]: VEX-encoded vpdpbusd on ymm (needs YMM state)
  // AMX: CPUID 7.0 EDX[24] AMX-TILE, EDX[22] AMX-BF16 (tdpbf16ps), EDX[25] AMX-INT8
  // (tdpbusd), each with the tile state enabled by the OS (XCR0 bits 17 and 18). Linux also
  // asks each process to request the tile data state before its first use (isa.cpp does).
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  bool rdtscp = false;         // CPUID 0x80000001 EDX[27]
  bool invariant_tsc = false;  // CPUID 0x80000007 EDX[8]: constant rate, runs in all C-states
  bool hypervisor = false;     // CPUID 1 ECX[31]: running under a hypervisor
  int family = 0;              // CPUID 1 display family (base + extended), 0 off x86
  int model = 0;               // CPUID 1 display model (extended model for family 6 and 0xF+)
};

// Detected once and cached; safe to call from any thread.
const CpuFeatures& cpu_features();

// Data cache sizes of CPU 0 (L2 and L3 unified), from sysfs, else sysconf; a level that is
// unknown or implausible keeps its default.
struct CacheSizes {
  std::size_t l1d_bytes = 32 * 1024;
  std::size_t l2_bytes = 512 * 1024;
  std::size_t l3_bytes = 32 * 1024 * 1024;
};

// Read once and cached; safe to call from any thread.
const CacheSizes& cache_sizes();

// The first line of a small text file (sysfs, procfs) without its trailing whitespace; "" when
// it cannot be read. C stdio, not iostreams: a stream's number parsing goes through the C++
// runtime's locale, and where the extension carries a runtime linked in statically beside the
// process's, the two locales mixed and `stream >> int` crashed (gcc 13, Ubuntu 24.04).
std::string read_first_line(const std::string& path);

}  // namespace fastbench
