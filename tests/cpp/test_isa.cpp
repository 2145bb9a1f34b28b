// test_isa.cpp — native tests of the one ISA dispatch: best_isa() against CpuFeatures and
// /proc/cpuinfo's flags, detected once whatever thread asks first; names and parsing; the cap
// bounding active_isa(); and every kernel (gemm, conv2d, bandwidth, peak) at every cap: each
// names a path no wider than the cap and still matches a naive reference; the bf16 and int8
// extensions against /proc/cpuinfo and the cap.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bandwidth.hpp"
#include "conv.hpp"
#include "cpu.hpp"
#include "gemm.hpp"
#include "isa.hpp"
#include "peak.hpp"

#include "harness.hpp"
#include "isa_cap.hpp"

namespace fb = fastbench;

namespace {

constexpr fb::Isa kAll[] = {fb::Isa::portable, fb::Isa::avx2, fb::Isa::avx512, fb::Isa::amx};
// The widest path every kernel implements (conv2d's); the others may go wider.
constexpr fb::Isa kWidestKernel = fb::Isa::avx2;

fb::Isa narrowest(fb::Isa a, fb::Isa b) { return a < b ? a : b; }

// ---- detection ----------------------------------------------------------------------------

// Runs first: eight threads ask at once, before anything else has, and all get one answer.
void test_best_isa_is_detected_once_for_every_thread() {
  std::atomic<int> ready{0};
  std::vector<int> seen(8, -1);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < static_cast<int>(seen.size())) {
      }
      seen[i] = static_cast<int>(fb::best_isa());
    });
  }
  for (std::thread& t : threads) t.join();
  for (int v : seen) CHECK(v == static_cast<int>(fb::best_isa()), v);
}

void test_best_isa_follows_cpu_features() {
  const fb::CpuFeatures& f = fb::cpu_features();
  fb::Isa want = fb::Isa::portable;
  if (f.avx2 && f.fma) want = fb::Isa::avx2;
  if (want == fb::Isa::avx2 && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl) {
    want = fb::Isa::avx512;
    // Tiles also need the OS's grant to this process, asked once by the detection.
    if (f.amx_tile && f.amx_bf16 && FASTBENCH_AMX_BUILT) want = fb::Isa::amx;
  }
#if !defined(__x86_64__)
  want = fb::Isa::portable;  // SIMD kernels are built for x86-64 only
#endif
  CHECK(fb::best_isa() == want, fb::isa_name(fb::best_isa()), " vs ", fb::isa_name(want));
  CHECK(!f.avx512bw || f.avx512f, "avx512bw without avx512f");
  CHECK(!f.avx512dq || f.avx512f, "avx512dq without avx512f");
  CHECK(!f.avx512vl || f.avx512f, "avx512vl without avx512f");
  CHECK(!f.amx_bf16 || f.amx_tile, "amx_bf16 without amx_tile");
  CHECK(!f.amx_int8 || f.amx_tile, "amx_int8 without amx_tile");
}

// The flags of the first processor in /proc/cpuinfo; empty where there is none (not Linux).
std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != "flags") continue;
    std::istringstream words(line.substr(colon + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// Linux lists an AVX flag only where it also enables the register state (XCR0), as the
// dispatch requires.
void test_best_isa_agrees_with_proc_cpuinfo() {
  const std::set<std::string> flags = proc_cpuinfo_flags();
  SKIP_UNLESS(!flags.empty(), "no flags line in /proc/cpuinfo (not Linux)");
#if !defined(__x86_64__)
  skip("not x86-64: the SIMD kernels are not built");
  return;
#endif
  auto has = [&](std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(),
                       [&](const char* n) { return flags.count(n) != 0; });
  };
  fb::Isa want = fb::Isa::portable;
  if (has({"avx2", "fma"})) want = fb::Isa::avx2;
  if (has({"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"})) {
    want = fb::Isa::avx512;
    if (has({"amx_tile", "amx_bf16"}) && FASTBENCH_AMX_BUILT) want = fb::Isa::amx;
  }
  CHECK(fb::best_isa() == want, fb::isa_name(fb::best_isa()), " but /proc/cpuinfo says ",
        fb::isa_name(want));
  std::printf("note: best ISA %s\n", fb::isa_name(fb::best_isa()));
}

// ---- names and the cap --------------------------------------------------------------------

void test_names_round_trip_in_order() {
  const std::vector<std::string> names = fb::isa_names();
  CHECK(names == std::vector<std::string>({"portable", "avx2", "avx512", "amx"}), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(fb::isa_name(kAll[i]) == names[i], names[i]);
    CHECK(fb::parse_isa(names[i]) == kAll[i], names[i]);
    if (i > 0) CHECK(kAll[i - 1] < kAll[i], names[i]);
  }
  CHECK(fb::kWidestIsa == kAll[3], "kWidestIsa");
  CHECK_THROWS(std::invalid_argument, fb::parse_isa("avx2+fma"), "[parse_isa]");
  CHECK_THROWS(std::invalid_argument, fb::parse_isa("AVX2", "set"), "[set]");
  CHECK_THROWS(std::invalid_argument, fb::parse_isa(""), "[parse_isa]");
}

void test_cap_bounds_active_and_kernel_isa() {
  const fb::Isa best = fb::best_isa();
  CHECK(fb::detail::isa_cap() == fb::kWidestIsa, "a cap was left behind");
  CHECK(fb::active_isa() == best, fb::isa_name(fb::active_isa()));
  for (fb::Isa cap : kAll) {
    {
      const IsaCap capped(cap);
      CHECK(fb::detail::isa_cap() == cap, fb::isa_name(cap));
      CHECK(fb::active_isa() == narrowest(cap, best), fb::isa_name(cap));
      CHECK(fb::best_isa() == best, fb::isa_name(cap));
      for (fb::Isa widest : kAll) {
        CHECK(fb::kernel_isa(widest) == narrowest(narrowest(cap, best), widest),
              fb::isa_name(cap), " ", fb::isa_name(widest));
      }
    }
    CHECK(fb::detail::isa_cap() == fb::kWidestIsa, "not restored after ", fb::isa_name(cap));
  }
}

// ---- extensions: bf16 and int8 dot products ----------------------------------------------

// Each extension where /proc/cpuinfo lists it (Linux lists a flag only where the kernel
// enables its register state), and, through the feature queries, only under a cap that
// reaches the ISA it extends.
void test_dot_product_extensions_agree_with_proc_cpuinfo_and_the_cap() {
  const fb::CpuFeatures& f = fb::cpu_features();
  CHECK(!f.avx512_bf16 || f.avx512f, "avx512_bf16 without avx512f");
  CHECK(!f.avx512_vnni || f.avx512f, "avx512_vnni without avx512f");
  CHECK(!f.avx_vnni || f.avx2, "avx_vnni without avx2");
  const std::set<std::string> flags = proc_cpuinfo_flags();
  if (!flags.empty()) {
    CHECK(f.avx512_bf16 == (flags.count("avx512_bf16") != 0), f.avx512_bf16);
    CHECK(f.avx512_vnni == (flags.count("avx512_vnni") != 0), f.avx512_vnni);
    CHECK(f.avx_vnni == (flags.count("avx_vnni") != 0), f.avx_vnni);
    CHECK(f.amx_tile == (flags.count("amx_tile") != 0), f.amx_tile);
    CHECK(f.amx_bf16 == (flags.count("amx_bf16") != 0), f.amx_bf16);
    CHECK(f.amx_int8 == (flags.count("amx_int8") != 0), f.amx_int8);
  } else {
    skip("no flags line in /proc/cpuinfo (not Linux): checked against CPUID only");
  }
  for (fb::Isa cap : kAll) {
    const IsaCap capped(cap);
    const bool zmm = fb::active_isa() >= fb::Isa::avx512;
    const bool ymm = fb::active_isa() >= fb::Isa::avx2;
    CHECK(fb::has_avx512_bf16() == (zmm && f.avx512_bf16), fb::isa_name(cap));
    CHECK(fb::has_avx512_vnni() == (zmm && f.avx512_vnni), fb::isa_name(cap));
    CHECK(fb::has_avx_vnni() == (ymm && f.avx_vnni), fb::isa_name(cap));
    CHECK(fb::has_amx_int8() == (fb::active_isa() >= fb::Isa::amx && f.amx_int8),
          fb::isa_name(cap));
  }
  std::printf("note: avx512_bf16 %d, avx512_vnni %d, avx_vnni %d, amx tile/bf16/int8 %d/%d/%d; "
              "family %#x model %#x\n",
              f.avx512_bf16, f.avx512_vnni, f.avx_vnni, f.amx_tile, f.amx_bf16, f.amx_int8,
              static_cast<unsigned>(f.family), static_cast<unsigned>(f.model));
}

// ---- every kernel at every cap ------------------------------------------------------------

template <class T>
void check_gemm(const std::string& isa) {
  const std::size_t m = 29, n = 37, k = 53;
  const std::vector<T> a = random_values<T>(m * k, 1), b = random_values<T>(k * n, 2);
  const std::vector<T> c0 = random_values<T>(m * n, 3);
  std::vector<T> c = c0;
  fb::gemm(m, n, k, T(0.5), a.data(), k, b.data(), n, T(-1.5), c.data(), n, 2);
  const double tol = 4.0 * static_cast<double>(k + 2) *
                     static_cast<double>(std::numeric_limits<T>::epsilon());
  double worst = 0.0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double dot = 0.0, mag = 0.0;
      for (std::size_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(a[i * k + p]) * static_cast<double>(b[p * n + j]);
        dot += t;
        mag += std::fabs(t);
      }
      const double c_in = static_cast<double>(c0[i * n + j]);
      const double want = 0.5 * dot - 1.5 * c_in;
      const double err = std::fabs(static_cast<double>(c[i * n + j]) - want) /
                         (0.5 * mag + 1.5 * std::fabs(c_in) + 1e-30);
      worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(worst, err);
    }
  }
  CHECK(worst <= tol, "gemm ", sizeof(T) * 8, "-bit on ", isa, ": relative error ", worst);
}

// conv2d against the definition (zero padding, sums in double), on the padded direct path
// (stride 1 in width), the strided direct path and im2col.
void check_conv(const std::string& isa) {
  fb::Conv2dShape s;
  s.n = 2;
  s.c_in = 6;
  s.h = 9;
  s.w = 11;
  s.c_out = 5;
  s.kh = 3;
  s.kw = 3;
  s.pad_h = 1;
  s.pad_w = 1;
  for (std::size_t stride_w : {1, 2}) {
    s.stride_w = stride_w;
    const std::size_t oh = fb::conv2d_out_h(s), ow = fb::conv2d_out_w(s);
    const std::vector<float> x = random_values<float>(s.n * s.c_in * s.h * s.w, 4);
    const std::vector<float> w = random_values<float>(s.c_out * s.c_in * 9, 5);
    const std::vector<float> bias = random_values<float>(s.c_out, 6);
    for (const char* algo : {"direct", "im2col"}) {
      std::vector<float> y(s.n * s.c_out * oh * ow, std::numeric_limits<float>::quiet_NaN());
      fb::conv2d(s, x.data(), w.data(), bias.data(), y.data(), algo, 2);
      double worst = 0.0;
      for (std::size_t b = 0; b < s.n; ++b) {
        for (std::size_t co = 0; co < s.c_out; ++co) {
          for (std::size_t oy = 0; oy < oh; ++oy) {
            for (std::size_t ox = 0; ox < ow; ++ox) {
              double acc = bias[co];
              for (std::size_t ci = 0; ci < s.c_in; ++ci) {
                for (std::size_t ky = 0; ky < 3; ++ky) {
                  for (std::size_t kx = 0; kx < 3; ++kx) {
                    const std::size_t iy = oy + ky, ix = ox * stride_w + kx;  // padded coords
                    if (iy < 1 || iy > s.h || ix < 1 || ix > s.w) continue;
                    acc += static_cast<double>(x[((b * s.c_in + ci) * s.h + iy - 1) * s.w + ix - 1]) *
                           static_cast<double>(w[((co * s.c_in + ci) * 3 + ky) * 3 + kx]);
                  }
                }
              }
              const double got = y[((b * s.c_out + co) * oh + oy) * ow + ox];
              const double err = std::fabs(got - acc);
              worst = std::isnan(err) ? std::numeric_limits<double>::infinity()
                                      : std::max(worst, err);
            }
          }
        }
      }
      CHECK(worst <= 1e-5 * (6 * 9 + 1), "conv2d ", algo, " stride_w ", stride_w, " on ", isa,
            ": max error ", worst);
    }
  }
}

void check_kernels_at(fb::Isa cap) {
  const IsaCap capped(cap);
  const fb::Isa active = narrowest(cap, fb::best_isa());
  // GEMM, conv2d and bandwidth may keep to avx2 on an avx512 path where zmm does not pay
  // (each names what it ran); below avx512 every kernel runs the capped path itself. None
  // has a tile path: under amx they run avx512 (or avx2).
  auto runs_capped = [&](const std::string& name) {
    return name == fb::isa_name(narrowest(active, kWidestKernel)) ||
           (active >= fb::Isa::avx512 && name == fb::isa_name(fb::Isa::avx512));
  };
  const std::string ran = fb::gemm_isa();  // names the failures below
  CHECK(runs_capped(fb::gemm_isa()), "gemm_isa ", fb::gemm_isa(), " under cap ",
        fb::isa_name(cap));
  CHECK(runs_capped(fb::conv2d_isa()), "conv2d_isa ", fb::conv2d_isa(), " under cap ",
        fb::isa_name(cap));
  check_gemm<float>(ran);
  check_gemm<double>(ran);
  check_conv(fb::conv2d_isa());
  // bandwidth: the path it names, and STREAM's byte count whatever the path.
  const fb::BandwidthResult bw = fb::bandwidth("triad", 3 * 16 * 1024, 1, 0.002);
  CHECK(runs_capped(bw.isa), "bandwidth ", bw.isa, " under cap ", fb::isa_name(cap));
  CHECK(bw.bytes_per_pass == 3.0 * 16 * 1024 && bw.gb_per_s > 0, bw.bytes_per_pass);
  // peak: every width up to the cap (zmm chains included), and no FLOP/cycle promise of
  // its own (the microarchitecture table, in Python, gives it).
  for (const bool mix : {false, true}) {
    const fb::PeakResult pk = fb::peak_flops("float64", 1, mix, 0.002);
    CHECK(pk.isa == fb::isa_name(narrowest(active, fb::Isa::avx512)), "peak_flops ", pk.isa,
          " under cap ", fb::isa_name(cap));
    CHECK(pk.flops_per_s > 0 && std::isfinite(pk.flops_per_s), pk.flops_per_s);
  }
}

void test_kernels_capped_at_portable() { check_kernels_at(fb::Isa::portable); }

void test_kernels_capped_at_avx2() {
  SKIP_UNLESS(fb::best_isa() >= fb::Isa::avx2, "no AVX2+FMA on this CPU");
  check_kernels_at(fb::Isa::avx2);
}

void test_kernels_capped_at_avx512() {
  SKIP_UNLESS(fb::best_isa() >= fb::Isa::avx512, "no AVX-512 on this CPU");
  check_kernels_at(fb::Isa::avx512);
}

// Uncapped: the peak runs zmm chains on an AVX-512 machine, tiles for bf16 on an AMX one.
void test_kernels_uncapped() {
  check_kernels_at(fb::kWidestIsa);
  if (fb::best_isa() >= fb::Isa::avx512) {
    CHECK(fb::peak_flops("float32", 1, false, 0.002).vector_bits == 512, "no zmm chains");
  }
  if (fb::best_isa() == fb::Isa::amx) {
    CHECK(fb::peak_flops("bfloat16", 1, false, 0.002).vector_bits == fb::kTileBits,
          "no tile chains");
  }
}

const Test kTests[] = {
    {"best_isa_is_detected_once_for_every_thread", test_best_isa_is_detected_once_for_every_thread},
    {"best_isa_follows_cpu_features", test_best_isa_follows_cpu_features},
    {"best_isa_agrees_with_proc_cpuinfo", test_best_isa_agrees_with_proc_cpuinfo},
    {"names_round_trip_in_order", test_names_round_trip_in_order},
    {"cap_bounds_active_and_kernel_isa", test_cap_bounds_active_and_kernel_isa},
    {"dot_product_extensions_agree_with_proc_cpuinfo_and_the_cap",
     test_dot_product_extensions_agree_with_proc_cpuinfo_and_the_cap},
    {"kernels_capped_at_portable", test_kernels_capped_at_portable},
    {"kernels_capped_at_avx2", test_kernels_capped_at_avx2},
    {"kernels_capped_at_avx512", test_kernels_capped_at_avx512},
    {"kernels_uncapped", test_kernels_uncapped},
};

}  // namespace

int main() { return run_all(kTests); }
