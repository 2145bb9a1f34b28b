// cpu.cpp — CPUID-based feature detection and the cache sizes. The only file that issues
// CPUID directly and the only one that reads cache sizes (the kernels block for them).
// Off x86 every flag stays false and callers fall back to portable paths.
#include "cpu.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(__linux__)
#include <unistd.h>
#endif

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
      // Leaf 7 EBX: F bit 16, DQ bit 17, BW bit 30, VL bit 31 (Intel SDM vol. 2A, CPUID).
      f.avx512f = ((r7.b >> 16) & 1u) && zmm_ok;
      f.avx512dq = ((r7.b >> 17) & 1u) && zmm_ok;
      f.avx512bw = ((r7.b >> 30) & 1u) && zmm_ok;
      f.avx512vl = ((r7.b >> 31) & 1u) && zmm_ok;
      // Leaf 7.0 ECX[11] AVX512_VNNI; leaf 7.1 EAX[4] AVX-VNNI, EAX[5] AVX512_BF16, read
      // only where leaf 7.0 EAX says subleaf 1 exists (Intel SDM vol. 2A, CPUID; AMD APM
      // vol. 3, E.3.6). The 512-bit features count only with the ZMM state, AVX-VNNI with YMM.
      f.avx512_vnni = ((r7.c >> 11) & 1u) && zmm_ok && f.avx512f;
      // Leaf 7.0 EDX: AMX-BF16 bit 22, AMX-TILE bit 24, AMX-INT8 bit 25; XCR0 bit 17
      // (XTILECFG) and bit 18 (XTILEDATA) say the OS saves the tile state (Intel SDM vol. 1,
      // 13.3; vol. 2A, CPUID).
      const bool tiles_ok = (xcr0 & 0x60000u) == 0x60000u;
      f.amx_tile = ((r7.d >> 24) & 1u) && tiles_ok;
      f.amx_bf16 = ((r7.d >> 22) & 1u) && f.amx_tile;
      f.amx_int8 = ((r7.d >> 25) & 1u) && f.amx_tile;
      if (r7.a >= 1) {
        const Regs r71 = cpuid(7, 1);
        f.avx_vnni = ((r71.a >> 4) & 1u) && ymm_ok && f.avx2;
        f.avx512_bf16 = ((r71.a >> 5) & 1u) && zmm_ok && f.avx512f;
      }
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

// Parses sysfs sizes such as "32K" or "32768K".
std::size_t parse_size_bytes(const std::string& s) {
  std::size_t value = 0;
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    value = value * 10 + static_cast<std::size_t>(s[i] - '0');
    ++i;
  }
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) value *= 1024;
  if (i < s.size() && (s[i] == 'M' || s[i] == 'm')) value *= 1024 * 1024;
  return value;
}

// sysfs first: under some hypervisors sysconf reports an L3 far larger than the real one.
CacheSizes detect_caches() {
  CacheSizes c;
  std::size_t l1 = 0, l2 = 0, l3 = 0;
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx);
    const std::string level = read_first_line(dir + "/level");
    if (level.empty()) break;
    const std::string type = read_first_line(dir + "/type");
    const std::size_t size = parse_size_bytes(read_first_line(dir + "/size"));
    if (level == "1" && type == "Data") l1 = size;
    if (level == "2" && type != "Instruction") l2 = size;
    if (level == "3" && type != "Instruction") l3 = size;
  }
#if defined(__linux__) && defined(_SC_LEVEL1_DCACHE_SIZE)
  auto sc = [](int name) {
    const long v = sysconf(name);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{0};
  };
  if (l1 == 0) l1 = sc(_SC_LEVEL1_DCACHE_SIZE);
  if (l2 == 0) l2 = sc(_SC_LEVEL2_CACHE_SIZE);
  if (l3 == 0) l3 = sc(_SC_LEVEL3_CACHE_SIZE);
#endif
  // Ignore implausible readings rather than let kernels build absurd blocks from them.
  if (l1 >= 8 * 1024 && l1 <= 1024 * 1024) c.l1d_bytes = l1;
  if (l2 >= 64 * 1024 && l2 <= 64 * 1024 * 1024) c.l2_bytes = l2;
  if (l3 >= 1024 * 1024 && l3 <= 1024 * 1024 * 1024) c.l3_bytes = l3;
  return c;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const CacheSizes& cache_sizes() {
  static const CacheSizes sizes = detect_caches();
  return sizes;
}

std::string read_first_line(const std::string& path) {
  std::string line;
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return line;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') break;
  }
  std::fclose(f);
  while (!line.empty() && std::strchr(" \t\r\n", line.back()) != nullptr) line.pop_back();
  return line;
}

}  // namespace fastbench
