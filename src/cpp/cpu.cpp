// cpu.cpp — CPUID-based feature detection. The only file that issues CPUID directly.
// Off x86 every flag stays false and callers fall back to portable paths.
#include "cpu.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FASTBENCH_X86 1
#else
#define FASTBENCH_X86 0
#endif

namespace fastbench {
namespace {

#if FASTBENCH_X86
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

// XGETBV(0): which register states the OS saves on context switch. AVX is only usable
// when the OS saves XMM and YMM (bits 1 and 2); AVX-512 also needs opmask/ZMM (bits 5-7).
std::uint64_t xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  f.x86 = true;
  const Regs r0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &r0.b, 4);
  std::memcpy(vendor + 4, &r0.d, 4);
  std::memcpy(vendor + 8, &r0.c, 4);
  f.vendor = vendor;
  const unsigned max_leaf = r0.a;

  if (max_leaf >= 1) {
    const Regs r1 = cpuid(1);
    f.sse2 = (r1.d >> 26) & 1u;
    f.sse4_2 = (r1.c >> 20) & 1u;
    f.hypervisor = (r1.c >> 31) & 1u;
    // Display family and model (Intel SDM vol. 2A, CPUID leaf 1; AMD APM vol. 3, E.3.2):
    // the extended fields count only when the base family is 0xF (and, for the model, 6).
    const unsigned base_family = (r1.a >> 8) & 0xFu;
    const unsigned base_model = (r1.a >> 4) & 0xFu;
    const unsigned ext_family = (r1.a >> 20) & 0xFFu;
    const unsigned ext_model = (r1.a >> 16) & 0xFu;
    f.family = static_cast<int>(base_family == 0xFu ? base_family + ext_family : base_family);
    f.model = static_cast<int>(base_family == 0xFu || base_family == 6u
                                   ? (ext_model << 4) | base_model
                                   : base_model);
    const bool osxsave = (r1.c >> 27) & 1u;
    const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    const bool ymm_ok = (xcr0 & 0x6u) == 0x6u;
    const bool zmm_ok = (xcr0 & 0xE6u) == 0xE6u;
    f.avx = ((r1.c >> 28) & 1u) && ymm_ok;
    f.fma = ((r1.c >> 12) & 1u) && ymm_ok;
    if (max_leaf >= 7) {
      const Regs r7 = cpuid(7, 0);
      f.avx2 = ((r7.b >> 5) & 1u) && ymm_ok;
      f.avx512f = ((r7.b >> 16) & 1u) && zmm_ok;
    }
  }

  const unsigned max_ext = cpuid(0x80000000u).a;
  if (max_ext >= 0x80000001u) f.rdtscp = (cpuid(0x80000001u).d >> 27) & 1u;
  if (max_ext >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002u + i);
      std::memcpy(brand + 16 * i + 0, &r.a, 4);
      std::memcpy(brand + 16 * i + 4, &r.b, 4);
      std::memcpy(brand + 16 * i + 8, &r.c, 4);
      std::memcpy(brand + 16 * i + 12, &r.d, 4);
    }
    std::string s = brand;
    const auto first = s.find_first_not_of(' ');
    const auto last = s.find_last_not_of(' ');
    f.brand = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  }
  if (max_ext >= 0x80000007u) f.invariant_tsc = (cpuid(0x80000007u).d >> 8) & 1u;
  return f;
}
#else
CpuFeatures detect() { return CpuFeatures{}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace fastbench
