// test_peak.cpp — native tests of the peak kernels on every path this CPU can run (zmm,
// ymm and portable chains under the ISA cap, bf16 and int8 dot products where present):
// each names its path and instruction, counts its work per instruction as the instruction
// defines it, stays below what any core could issue, and refuses clearly what it cannot run.
// No test here asserts a speed: a busy machine only lowers the rates.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu.hpp"
#include "isa.hpp"
#include "peak.hpp"

#include "harness.hpp"
#include "isa_cap.hpp"

namespace fb = fastbench;

namespace {

// No x86 core issues more than four FMA, add or dot instructions a cycle (Zen 5: two FMA
// and two FADD pipes), so a rate above that per core is a miscount or folded work. Scalar
// chains a compiler vectorises reach at most the widest vector's lanes.
constexpr double kMostInstructionsPerCycle = 4.0;

// The register widths this CPU can run (tiles apart: the amx level runs zmm FMAs).
std::vector<fb::Isa> runnable_isas() {
  std::vector<fb::Isa> out;
  for (fb::Isa isa : {fb::Isa::portable, fb::Isa::avx2, fb::Isa::avx512}) {
    if (isa <= fb::best_isa()) out.push_back(isa);
  }
  return out;
}

void check_plausible(const fb::PeakResult& r, const std::string& what) {
  CHECK(r.flops_per_s > 0 && std::isfinite(r.flops_per_s), what, ": ", r.flops_per_s);
  CHECK(r.seconds > 0, what, ": ", r.seconds);
  if (r.core_hz > 0) {
    // The portable chains may be vectorised by the compiler: up to 16 float lanes each.
    const double per_instruction = r.vector_bits > 0 ? r.flops_per_instruction : 2.0 * 16;
    CHECK(r.flops_per_cycle > 0 &&
              r.flops_per_cycle <= 1.5 * kMostInstructionsPerCycle * per_instruction,
          what, ": ", r.flops_per_cycle, " FLOP/cycle");
  }
  std::printf("note: %s: %.1f GFLOP/s, %.1f per cycle (%s)\n", what.c_str(), r.flops_per_s / 1e9,
              r.flops_per_cycle, r.instruction.c_str());
}

void test_float_peaks_run_every_width_the_cpu_allows() {
  for (fb::Isa isa : runnable_isas()) {
    const std::string name = fb::isa_name(isa);
    const int bits = isa == fb::Isa::avx512 ? 512 : isa == fb::Isa::avx2 ? 256 : 0;
    for (const char* dtype : {"float32", "float64"}) {
      const double lanes = bits / (std::string(dtype) == "float32" ? 32.0 : 64.0);
      for (const bool mix : {false, true}) {
        const fb::PeakResult r = fb::peak_flops(dtype, 1, mix, 0.01, name);
        const std::string what = std::string(dtype) + (mix ? "+add " : " ") + name;
        CHECK(r.isa == name && r.dtype == dtype && r.add_mix == mix && r.threads == 1, what);
        CHECK(r.vector_bits == bits, what, ": ", r.vector_bits);
        CHECK(r.flops_per_instruction == (bits ? 2.0 * lanes : 2.0), what, ": ",
              r.flops_per_instruction);
        CHECK(r.fma_per_iter > 0 && (r.add_per_iter > 0) == mix, what);
        const std::string reg = bits == 512 ? "zmm" : bits == 256 ? "ymm" : "scalar";
        CHECK(r.instruction.find(reg) != std::string::npos, what, ": ", r.instruction);
        check_plausible(r, what);
      }
    }
  }
}

// The portable float32 chains start at fixed points of x·m + c once rounded: a compiler
// that sees m and c folded the whole loop, and the "peak" read trillions of FLOP/s.
void test_portable_peak_is_not_folded_by_the_compiler() {
  for (const char* dtype : {"float32", "float64"}) {
    for (const bool mix : {false, true}) {
      const fb::PeakResult r = fb::peak_flops(dtype, 1, mix, 0.01, "portable");
      check_plausible(r, std::string("portable ") + dtype + (mix ? "+add" : ""));
      CHECK(r.flops_per_s < 1e12, dtype, ": ", r.flops_per_s);
    }
  }
}

void test_dot_peaks_run_where_the_cpu_has_them() {
  if (fb::has_avx512_bf16()) {
    const fb::PeakResult r = fb::peak_flops("bfloat16", 1, false, 0.01, "avx512");
    CHECK(r.isa == "avx512" && r.vector_bits == 512 && r.instruction == "vdpbf16ps zmm",
          r.isa, " ", r.instruction);
    // 16 float32 lanes, each two bf16 products and their sums.
    CHECK(r.flops_per_instruction == 64.0, r.flops_per_instruction);
    check_plausible(r, "bfloat16");
  } else {
    skip("no AVX512_BF16: bfloat16 peak not run");
  }
  if (fb::has_avx512_vnni() || fb::has_avx_vnni()) {
    const fb::PeakResult r = fb::peak_flops("int8", 1, false, 0.01,
                                            fb::has_avx512_vnni() ? "avx512" : "avx2");
    // Per int32 lane: four u8·s8 products and their sums.
    CHECK(r.flops_per_instruction == r.vector_bits / 32 * 8.0, r.flops_per_instruction);
    CHECK(r.instruction.find("vpdpbusd") == 0, r.instruction);
    check_plausible(r, "int8");
  } else {
    skip("no AVX512_VNNI or AVX-VNNI: int8 peak not run");
  }
  if (fb::has_avx_vnni()) {
    const fb::PeakResult r = fb::peak_flops("int8", 1, false, 0.01, "avx2");
    CHECK(r.vector_bits == 256 && r.instruction == "vpdpbusd ymm (AVX-VNNI)", r.instruction);
    check_plausible(r, "int8 ymm");
  }
}

// Below avx512 the 512-bit extensions are off: a clear error naming what is missing.
void test_dot_peaks_refuse_clearly_below_avx512() {
  for (fb::Isa cap : runnable_isas()) {
    if (cap == fb::Isa::avx512) continue;
    const IsaCap capped(cap);
    CHECK_THROWS(std::invalid_argument, fb::peak_flops("bfloat16", 1, false, 0.01),
                 "[peak_flops] bfloat16 needs AVX512_BF16, which ");
    if (!fb::has_avx_vnni()) {
      CHECK_THROWS(std::invalid_argument, fb::peak_flops("int8", 1, false, 0.01),
                   "[peak_flops] int8 needs AVX512_VNNI or AVX-VNNI, which ");
    }
  }
  if (!fb::cpu_features().avx512_bf16) {
    CHECK_THROWS(std::invalid_argument, fb::peak_flops("bfloat16", 1, false, 0.01),
                 "[peak_flops] bfloat16 needs AVX512_BF16, which this CPU lacks");
  }
  if (fb::has_avx512_bf16()) {
    CHECK_THROWS(std::invalid_argument, fb::peak_flops("bfloat16", 1, false, 0.01, "avx2"),
                 "[peak_flops] bfloat16 needs AVX512_BF16, an avx512 path, but isa 'avx2'");
  }
}

// Tiles: four product chains of 16×16 accumulators, each instruction 16·16·32 bf16 (or
// 16·16·64 int8) multiply-adds; the amx path by default, zmm under an avx512 cap.
void test_tile_peaks_run_where_the_cpu_has_them() {
  SKIP_UNLESS(fb::best_isa() >= fb::Isa::amx, "no AMX tiles (or no grant of their state)");
  const fb::PeakResult bf = fb::peak_flops("bfloat16", 1, false, 0.01);
  CHECK(bf.isa == "amx" && bf.vector_bits == fb::kTileBits &&
            bf.instruction == "tdpbf16ps tmm (AMX-BF16)",
        bf.isa, " ", bf.instruction);
  CHECK(bf.flops_per_instruction == 16.0 * 16 * 32 * 2, bf.flops_per_instruction);
  // A tile product issues at most once a cycle (Sapphire Rapids: once in 16).
  CHECK(bf.flops_per_cycle > 0 && bf.flops_per_cycle <= 1.5 * bf.flops_per_instruction,
        bf.flops_per_cycle);
  std::printf("note: bfloat16 tiles: %.1f GFLOP/s, %.1f per cycle\n", bf.flops_per_s / 1e9,
              bf.flops_per_cycle);
  if (fb::has_amx_int8()) {
    const fb::PeakResult i8 = fb::peak_flops("int8", 1, false, 0.01, "amx");
    CHECK(i8.isa == "amx" && i8.instruction == "tdpbusd tmm (AMX-INT8)", i8.instruction);
    CHECK(i8.flops_per_instruction == 16.0 * 16 * 64 * 2, i8.flops_per_instruction);
    CHECK(i8.flops_per_cycle > 0 && i8.flops_per_cycle <= 1.5 * i8.flops_per_instruction,
          i8.flops_per_cycle);
    std::printf("note: int8 tiles: %.1f GOPS, %.1f per cycle\n", i8.flops_per_s / 1e9,
                i8.flops_per_cycle);
  }
  {
    const IsaCap capped(fb::Isa::avx512);
    const fb::PeakResult r = fb::peak_flops("bfloat16", 1, false, 0.01);
    CHECK(r.isa == "avx512" && r.instruction == "vdpbf16ps zmm", r.isa, " ", r.instruction);
    CHECK_THROWS(std::invalid_argument, fb::peak_flops("bfloat16", 1, false, 0.01, "amx"),
                 "[peak_flops] isa is 'amx', above what runs here");
  }
  // Tiles hold no FMAs: float chains asked for on the amx path run zmm and say so.
  const fb::PeakResult f = fb::peak_flops("float32", 1, false, 0.01, "amx");
  CHECK(f.isa == "avx512" && f.vector_bits == 512, f.isa);
  // Every thread configures its own tiles: two threads both run.
  const fb::PeakResult two = fb::peak_flops("bfloat16", 2, false, 0.01);
  CHECK(two.threads == 2 && two.flops_per_s > 0 && std::isfinite(two.flops_per_s),
        two.flops_per_s);
}

void test_peak_rejects_bad_isa_and_dtype() {
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float32", 1, false, 0.01, "sse"),
               "[peak_flops] ISA is 'sse'");
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("int4", 1, false, 0.01),
               "[peak_flops] dtype is 'int4'");
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("bfloat16", 1, true, 0.01),
               "[peak_flops] add_mix is for float32 and float64");
  const IsaCap capped(fb::Isa::portable);
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float32", 1, false, 0.01, "avx2"),
               "[peak_flops] isa is 'avx2', above what runs here");
}

const Test kTests[] = {
    {"float_peaks_run_every_width_the_cpu_allows", test_float_peaks_run_every_width_the_cpu_allows},
    {"portable_peak_is_not_folded_by_the_compiler", test_portable_peak_is_not_folded_by_the_compiler},
    {"dot_peaks_run_where_the_cpu_has_them", test_dot_peaks_run_where_the_cpu_has_them},
    {"dot_peaks_refuse_clearly_below_avx512", test_dot_peaks_refuse_clearly_below_avx512},
    {"tile_peaks_run_where_the_cpu_has_them", test_tile_peaks_run_where_the_cpu_has_them},
    {"peak_rejects_bad_isa_and_dtype", test_peak_rejects_bad_isa_and_dtype},
};

}  // namespace

int main() { return run_all(kTests); }
