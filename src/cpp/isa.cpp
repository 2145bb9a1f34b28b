// isa.cpp — see isa.hpp. The choice rests on cpu_features(), whose flags already include the
// OS's consent (XGETBV): a CPU with AVX-512 under a kernel or hypervisor that does not save
// the ZMM state reports no AVX-512 here, and must not run it (Intel SDM vol. 1, 15.2).
#include "isa.hpp"

#include <atomic>
#include <stdexcept>

#include "cpu.hpp"

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fastbench {
namespace {

constexpr Isa kIsas[] = {Isa::portable, Isa::avx2, Isa::avx512, Isa::amx};

// Linux enables the tile data state lazily: a process asks for it once (arch_prctl
// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, kernel 5.16 and later; the grant holds for all
// its threads and is inherited across fork), and a tile instruction before that faults
// (SIGILL). Refused, or elsewhere, the tile paths stay off.
bool tile_data_granted() {
#if defined(__linux__) && FASTBENCH_AMX_BUILT
  constexpr long kReqXcompPerm = 0x1023;  // arch/x86/include/uapi/asm/prctl.h
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// No cap by default; relaxed is enough: a kernel reads the cap once per call, and a test
// that changes it does so between calls.
std::atomic<int> g_cap{static_cast<int>(kWidestIsa)};

// SIMD kernels are built for x86-64 only: anywhere else (32-bit x86 included) every kernel
// runs, and names, its portable path.
Isa detect() {
#if defined(__x86_64__)
  const CpuFeatures& f = cpu_features();
  if (!(f.avx2 && f.fma)) return Isa::portable;
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) {
    return f.amx_tile && f.amx_bf16 && tile_data_granted() ? Isa::amx : Isa::avx512;
  }
  return Isa::avx2;
#else
  return Isa::portable;
#endif
}

}  // namespace

Isa best_isa() {
  static const Isa best = detect();
  return best;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::amx: return "amx";
  }
  return "portable";  // unreachable: every enumerator is named above
}

std::vector<std::string> isa_names() {
  std::vector<std::string> names;
  for (Isa isa : kIsas) names.emplace_back(isa_name(isa));
  return names;
}

Isa parse_isa(const std::string& name, const char* who) {
  for (Isa isa : kIsas) {
    if (name == isa_name(isa)) return isa;
  }
  throw std::invalid_argument(std::string("[") + who + "] ISA is '" + name +
                              "', expected portable, avx2, avx512 or amx");
}

Isa active_isa() {
  const Isa cap = static_cast<Isa>(g_cap.load(std::memory_order_relaxed));
  const Isa best = best_isa();
  return cap < best ? cap : best;
}

bool has_avx512_bf16() {
  return active_isa() >= Isa::avx512 && cpu_features().avx512_bf16;
}

bool has_avx512_vnni() {
  return active_isa() >= Isa::avx512 && cpu_features().avx512_vnni;
}

bool has_avx_vnni() { return active_isa() >= Isa::avx2 && cpu_features().avx_vnni; }

bool has_amx_int8() { return active_isa() >= Isa::amx && cpu_features().amx_int8; }

bool zmm_fma_split() {
  const CpuFeatures& f = cpu_features();
  return best_isa() >= Isa::avx512 && f.vendor == "AuthenticAMD" && f.family == 0x19;
}

namespace detail {
void set_isa_cap(Isa cap) { g_cap.store(static_cast<int>(cap), std::memory_order_relaxed); }
Isa isa_cap() { return static_cast<Isa>(g_cap.load(std::memory_order_relaxed)); }
}  // namespace detail

}  // namespace fastbench
