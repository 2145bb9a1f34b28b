// test_gemm.cpp — native tests of gemm() against a naive double-accumulated reference: many
// shapes (1×1×1, primes, tall/skinny, sizes straddling mr/nr/kc/mc), padded leading
// dimensions, alpha/beta cases (beta 0 over NaN), k == 0, both dtypes, 1 and 2 threads, on
// the AVX-512 and AVX2 paths where the CPU has them and with the ISA capped at portable;
// units of work shared between threads; the bf16 GEMM on its vdpbf16ps and widened paths;
// then the error paths, an output sharing memory with an input, and interrupts.
// Sizes stay small enough for ASan Debug; Release adds a large check and a GFLOP/s note.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu.hpp"
#include "gemm.hpp"
#include "interrupt.hpp"
#include "isa.hpp"

#include "harness.hpp"
#include "isa_cap.hpp"
#include "stop_check.hpp"

namespace fb = fastbench;

namespace {

bool have_avx2() { return fb::best_isa() >= fb::Isa::avx2; }
bool have_avx512() { return fb::best_isa() >= fb::Isa::avx512; }

// A process-wide gemm test hook set to `On` for one scope and back to !On after it, even when
// the test body throws.
template <void (*Set)(bool), bool On>
struct ScopedHook {
  ScopedHook() { Set(On); }
  ~ScopedHook() { Set(!On); }
  ScopedHook(const ScopedHook&) = delete;
  ScopedHook& operator=(const ScopedHook&) = delete;
};

// The zmm kernels, even on a core whose 512-bit FMAs run at half rate.
using ZmmKernels = ScopedHook<fb::detail::gemm_zmm_at_half_rate, true>;
// The kernels a half-rate-zmm core (Zen 4) runs on the AVX-512 path, on any AVX-512 core:
// float64's 6×16 ymm tile (AVX-512VL), float32's AVX2 kernel.
using YmmTiles = ScopedHook<fb::detail::gemm_ymm_tiles, true>;
// The Goto nest (whole B panels packed first) even for tiles of few rows.
using PanelsOnly = ScopedHook<fb::detail::gemm_stream_b, false>;

struct Shape {
  std::size_t m, n, k;
};

struct Case {
  Shape s;
  std::size_t pad = 0;  // extra elements per row in A, B and C
  double alpha = 1.0;
  double beta = 0.0;
  int threads = 1;
  bool aligned_a = false;  // bf16 only: A's first row on a cache line (tiles may read it in place)
};

// Runs one case against the reference; returns false (after recording) on a mismatch.
template <class T>
bool check_case(const Case& cs, std::uint64_t seed) {
  const std::size_t m = cs.s.m, n = cs.s.n, k = cs.s.k;
  const std::size_t lda = k + cs.pad, ldb = n + cs.pad, ldc = n + cs.pad;
  const std::vector<T> a = random_values<T>(m * lda + 1, seed);
  const std::vector<T> b = random_values<T>(k * ldb + 1, seed + 1);
  std::vector<T> c = random_values<T>(m * ldc + 1, seed + 2);
  if (cs.beta == 0.0) {
    // beta == 0 must ignore C entirely, NaN included.
    for (T& x : c) x = std::numeric_limits<T>::quiet_NaN();
  }
  const std::vector<T> c0 = c;
  fb::gemm(m, n, k, static_cast<T>(cs.alpha), a.data(), lda, b.data(), ldb,
           static_cast<T>(cs.beta), c.data(), ldc, cs.threads);
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  const double tol = 4.0 * static_cast<double>(k + 2) * eps;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const T got = c[i * ldc + j];
      if (j >= n) {  // padding past the row must be untouched
        const T want = c0[i * ldc + j];
        if (!(got == want || (std::isnan(got) && std::isnan(want)))) {
          CHECK(false, "padding changed at ", i, ",", j, " m=", m, " n=", n, " k=", k);
          return false;
        }
        continue;
      }
      double dot = 0.0, mag = 0.0;
      for (std::size_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(a[i * lda + p]) * static_cast<double>(b[p * ldb + j]);
        dot += t;
        mag += std::fabs(t);
      }
      double want = cs.alpha * dot;
      double scale = std::fabs(cs.alpha) * mag;
      if (cs.beta != 0.0) {
        want += cs.beta * static_cast<double>(c0[i * ldc + j]);
        scale += std::fabs(cs.beta * static_cast<double>(c0[i * ldc + j]));
      }
      const double err = std::fabs(static_cast<double>(got) - want);
      if (!(err <= tol * (scale + 1e-30) + 1e-300)) {
        CHECK(false, "C[", i, ",", j, "] = ", static_cast<double>(got), ", expected ", want,
              " (m=", m, " n=", n, " k=", k, " pad=", cs.pad, " alpha=", cs.alpha,
              " beta=", cs.beta, " threads=", cs.threads, " isa=", fb::gemm_isa(), ")");
        return false;
      }
    }
  }
  return true;
}

const Shape kShapes[] = {
    {1, 1, 1},     {2, 3, 4},     {7, 13, 29},  {31, 17, 3},   {6, 16, 8},   {6, 8, 8},
    {5, 15, 7},    {7, 17, 9},    {12, 32, 64}, {13, 33, 65},  {257, 1, 64}, {1, 300, 5},
    {64, 1, 300},  {1, 1, 600},   {3, 200, 1},  {97, 101, 103}, {130, 70, 257},
    {200, 48, 520}, {61, 199, 13}, {180, 190, 200},
    // Around the zmm tiles (12×32 float, 8×24 double) and a k block of 512.
    {12, 32, 1},   {11, 31, 2},   {13, 33, 513}, {8, 24, 7},   {9, 25, 1},   {25, 97, 40},
    {1, 64, 9},    {40, 1, 17},
    // Streamed B (at most 128 rows on zmm, 64 on AVX2): several k blocks, an edge sliver,
    // the limits and a row past them.
    {40, 203, 1100}, {128, 70, 530}, {129, 66, 20}, {64, 35, 600}, {65, 40, 9}};

// Shapes × a rotation of alpha/beta/padding/threads, for one dtype on the current path.
template <class T>
void run_shapes() {
  const double alphas[] = {1.0, -0.5, 2.0};
  const double betas[] = {0.0, 1.0, 0.75};
  std::uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    for (int threads : {1, 2}) {
      for (int variant = 0; variant < 3; ++variant) {
        Case cs;
        cs.s = s;
        cs.alpha = alphas[variant];
        cs.beta = betas[(variant + threads) % 3];
        cs.pad = variant == 1 ? 3 : (variant == 2 ? 17 : 0);
        cs.threads = threads;
        if (!check_case<T>(cs, seed++)) return;
      }
    }
  }
}

template <class T>
void test_avx512_dtype() {
  SKIP_UNLESS(have_avx512(), "no AVX-512 on this CPU");
  const ZmmKernels zmm;
  CHECK(std::string(fb::gemm_isa()) == "avx512", fb::gemm_isa());
  run_shapes<T>();
}

template <class T>
void test_avx2_dtype() {
  SKIP_UNLESS(have_avx2(), "no AVX2+FMA on this CPU");
  const IsaCap cap(fb::Isa::avx2);
  CHECK(std::string(fb::gemm_isa()) == "avx2", fb::gemm_isa());
  run_shapes<T>();
}

template <class T>
void test_portable_dtype() {
  const IsaCap cap(fb::Isa::portable);
  CHECK(std::string(fb::gemm_isa()) == "portable", fb::gemm_isa());
  run_shapes<T>();
}

void test_avx512_f32() { test_avx512_dtype<float>(); }
void test_avx512_f64() { test_avx512_dtype<double>(); }

// float64's ymm tile on the AVX-512 path (6×16: rows and columns past its edges in
// run_shapes), with B packed in panels and streamed; it names avx512, float32 avx2 beside it
// (the AVX2 kernel, its A packed by the zmm transposes where AVX-512 is allowed).
void test_ymm_vl_f64() {
  SKIP_UNLESS(have_avx512(), "no AVX-512 on this CPU");
  const YmmTiles ymm;
  CHECK(std::string(fb::gemm_isa(true)) == "avx512", fb::gemm_isa(true));
  CHECK(std::string(fb::gemm_isa()) == "avx2", fb::gemm_isa());
  const fb::GemmBlocking d = fb::gemm_blocking(true);
  CHECK(d.mr == 6 && d.nr == 16, d.mr, "x", d.nr);
  run_shapes<double>();
  run_shapes<float>();
}


// Shapes of few rows stream B by default (at most 128 rows on the zmm kernels, 64 on the
// AVX2 ones); with streaming off they take the Goto nest, which must stay right for them too.
template <class T>
void test_avx512_panels_dtype() {
  SKIP_UNLESS(have_avx512(), "no AVX-512 on this CPU");
  const ZmmKernels zmm;
  const PanelsOnly panels;
  run_shapes<T>();
}
template <class T>
void test_avx2_panels_dtype() {
  SKIP_UNLESS(have_avx2(), "no AVX2+FMA on this CPU");
  const IsaCap cap(fb::Isa::avx2);
  const PanelsOnly panels;
  run_shapes<T>();
}
void test_avx512_panels_f32() { test_avx512_panels_dtype<float>(); }
void test_avx512_panels_f64() { test_avx512_panels_dtype<double>(); }
void test_ymm_vl_panels_f64() {
  SKIP_UNLESS(have_avx512(), "no AVX-512 on this CPU");
  const YmmTiles ymm;
  const PanelsOnly panels;
  run_shapes<double>();
}
void test_avx2_panels_f32() { test_avx2_panels_dtype<float>(); }
void test_avx2_panels_f64() { test_avx2_panels_dtype<double>(); }
void test_avx2_f32() { test_avx2_dtype<float>(); }
void test_avx2_f64() { test_avx2_dtype<double>(); }
void test_portable_f32() { test_portable_dtype<float>(); }
void test_portable_f64() { test_portable_dtype<double>(); }

// Uncapped, gemm names the widest path that pays: avx512 except for float32 on Zen 4 (AMD
// family 0x19), whose 512-bit FMAs are two 256-bit halves and where the AVX2 kernel measured
// faster; float64 runs a ymm tile there that needs AVX-512VL, and names avx512. Tiles hold no
// float FMAs: the amx level runs the avx512 kernels. The register tile says which kernel runs.
void test_uncapped_path() {
  const fb::CpuFeatures& f = fb::cpu_features();
  const bool zen4 = f.vendor == "AuthenticAMD" && f.family == 0x19;
  const fb::Isa widest = std::min(fb::best_isa(), fb::Isa::avx512);
  const fb::Isa want = widest == fb::Isa::avx512 && zen4 ? fb::Isa::avx2 : widest;
  CHECK(std::string(fb::gemm_isa()) == fb::isa_name(want), fb::gemm_isa(), " want ",
        fb::isa_name(want));
  CHECK(std::string(fb::gemm_isa(true)) == fb::isa_name(widest), fb::gemm_isa(true), " want ",
        fb::isa_name(widest));
  if (widest == fb::Isa::avx512) {
    const fb::GemmBlocking d = fb::gemm_blocking(true);
    const std::size_t want_mr = zen4 ? 6 : 8, want_nr = zen4 ? 16 : 24;
    CHECK(d.mr == want_mr && d.nr == want_nr, d.mr, "x", d.nr, " want ", want_mr, "x",
          want_nr);
  }
}

// ---- bf16 -------------------------------------------------------------------------------

std::uint16_t bf16_bits(float x) {  // truncation: any bf16 value will do as input
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return static_cast<std::uint16_t>(u >> 16);
}

double bf16_value(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// One bf16 case against a double reference of the bf16 values; float32 sums give an error
// of a few k·eps(float) of the sum of magnitudes.
bool check_bf16_case(const Case& cs, std::uint64_t seed) {
  const std::size_t m = cs.s.m, n = cs.s.n, k = cs.s.k;
  const std::size_t lda = k + cs.pad, ldb = n + cs.pad, ldc = n + cs.pad;
  std::vector<std::uint16_t> a_store, b;
  for (float x : random_values<float>(m * lda + 1, seed)) a_store.push_back(bf16_bits(x));
  // Aligned: the same values copied to start on a 64-byte boundary.
  std::vector<std::uint16_t> a_room(cs.aligned_a ? a_store.size() + 32 : 0);
  std::uint16_t* a = a_store.data();
  if (cs.aligned_a) {
    void* p = a_room.data();
    std::size_t space = a_room.size() * sizeof(std::uint16_t);
    a = static_cast<std::uint16_t*>(std::align(64, a_store.size() * sizeof(std::uint16_t), p,
                                               space));
    std::copy(a_store.begin(), a_store.end(), a);
  }
  for (float x : random_values<float>(k * ldb + 1, seed + 1)) b.push_back(bf16_bits(x));
  std::vector<float> c = random_values<float>(m * ldc + 1, seed + 2);
  if (cs.beta == 0.0) {
    for (float& x : c) x = std::numeric_limits<float>::quiet_NaN();
  }
  const std::vector<float> c0 = c;
  fb::gemm_bf16(m, n, k, static_cast<float>(cs.alpha), a, lda, b.data(), ldb,
                static_cast<float>(cs.beta), c.data(), ldc, cs.threads);
  const double tol = 4.0 * static_cast<double>(k + 2) * std::numeric_limits<float>::epsilon();
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n) {
        const float want = c0[i * ldc + j];
        if (!(got == want || (std::isnan(got) && std::isnan(want)))) {
          CHECK(false, "padding changed at ", i, ",", j, " m=", m, " n=", n, " k=", k);
          return false;
        }
        continue;
      }
      double dot = 0.0, mag = 0.0;
      for (std::size_t p = 0; p < k; ++p) {
        const double t = bf16_value(a[i * lda + p]) * bf16_value(b[p * ldb + j]);
        dot += t;
        mag += std::fabs(t);
      }
      double want = cs.alpha * dot, scale = std::fabs(cs.alpha) * mag;
      if (cs.beta != 0.0) {
        want += cs.beta * static_cast<double>(c0[i * ldc + j]);
        scale += std::fabs(cs.beta * static_cast<double>(c0[i * ldc + j]));
      }
      if (!(std::fabs(static_cast<double>(got) - want) <= tol * (scale + 1e-30))) {
        CHECK(false, "C[", i, ",", j, "] = ", static_cast<double>(got), ", expected ", want,
              " (m=", m, " n=", n, " k=", k, " pad=", cs.pad, " beta=", cs.beta,
              " threads=", cs.threads, " path=", fb::gemm_bf16_isa(), ")");
        return false;
      }
    }
  }
  return true;
}

void run_bf16_shapes() {
  const double betas[] = {0.0, 1.0, 0.75};
  std::uint64_t seed = 500;
  for (const Shape& s : kShapes) {
    for (int threads : {1, 2}) {
      for (int variant = 0; variant < 3; ++variant) {
        Case cs;
        cs.s = s;
        cs.alpha = variant == 1 ? -0.5 : 1.0;
        cs.beta = betas[(variant + threads) % 3];
        cs.pad = variant == 2 ? 5 : (variant == 1 ? 1 : 0);  // odd lda: unaligned k pairs
        cs.threads = threads;
        if (!check_bf16_case(cs, seed++)) return;
      }
    }
  }
}

// vdpbf16ps: the path below amx (capped there on a machine with tiles).
void test_bf16_native() {
  SKIP_UNLESS(fb::has_avx512_bf16(), "no AVX512_BF16 on this CPU");
  const IsaCap capped(fb::Isa::avx512);
  CHECK(std::string(fb::gemm_bf16_isa()) == "avx512_bf16", fb::gemm_bf16_isa());
  run_bf16_shapes();
}

// Tiles: 32×32 blocks of C over chunks of 32 values of k, edges zero-padded in packing.
void test_bf16_tiles() {
  SKIP_UNLESS(fb::best_isa() >= fb::Isa::amx, "no AMX tiles (or no grant of their state)");
  CHECK(std::string(fb::gemm_bf16_isa()) == "amx_bf16", fb::gemm_bf16_isa());
  run_bf16_shapes();
  // Around the tile block, a k sub-block (256) and a unit (64 rows): one chunk, one short
  // of two, past a sub-block with a partial chunk, several units and sub-blocks. With A on a
  // cache line and rows a whole number of lines apart (pad 0 or 32 with k a multiple of 32),
  // whole units are read in place; otherwise they are copied. With beta 0, C is written with
  // streaming stores on two threads, and on one when it is larger than 3/8 of L2 (the last,
  // 4 MB, on any core).
  const Shape around[] = {{32, 32, 32},   {31, 33, 63},  {33, 31, 65}, {64, 64, 544},
                          {65, 95, 257},  {96, 17, 1},   {128, 96, 512}, {160, 40, 288},
                          {70, 33, 64},   {200, 150, 800}, {1500, 700, 40}};
  std::uint64_t seed = 900;
  for (const Shape& s : around) {
    for (int variant = 0; variant < 4; ++variant) {
      Case cs;
      cs.s = s;
      cs.threads = 1 + variant % 2;
      cs.beta = variant == 1 ? 0.5 : 0.0;
      cs.alpha = variant == 3 ? -2.0 : 1.0;
      cs.aligned_a = variant >= 2;
      cs.pad = variant == 3 ? 32 : variant == 1 ? 3 : 0;
      if (!check_bf16_case(cs, seed++)) return;
    }
  }
}

// Below avx512 (or without AVX512_BF16) both inputs are widened and the float32 gemm runs.
void test_bf16_widened() {
  for (fb::Isa cap : {fb::Isa::avx2, fb::Isa::portable}) {
    if (cap > fb::best_isa()) continue;
    const IsaCap capped(cap);
    CHECK(std::string(fb::gemm_bf16_isa()) == fb::isa_name(cap), fb::gemm_bf16_isa());
    run_bf16_shapes();
  }
}

void test_bf16_errors() {
  std::vector<std::uint16_t> a(64, 0x3f80), b(64, 0x3f80);
  std::vector<float> c(64, 0.0f);
  CHECK_THROWS(std::invalid_argument,
               fb::gemm_bf16(4, 4, 4, 1.0f, a.data(), 3, b.data(), 4, 0.0f, c.data(), 4),
               "[gemm_bf16] leading dimensions");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm_bf16(4, 4, 4, 1.0f, a.data(), 4, static_cast<const std::uint16_t*>(nullptr),
                             4, 0.0f, c.data(), 4),
               "[gemm_bf16] b is null");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm_bf16(4, 4, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 4, -1),
               "[gemm_bf16] threads");
  // C over A's memory (a caller's reinterpreting cast).
  CHECK_THROWS(std::invalid_argument,
               fb::gemm_bf16(4, 4, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f,
                             reinterpret_cast<float*>(a.data()), 4),
               "[gemm_bf16] c shares memory");
  // 1.0 × 1.0 summed over k = 4.
  fb::gemm_bf16(4, 4, 4, 1.0f, a.data(), 4, b.data(), 4, 0.0f, c.data(), 4, 1);
  CHECK(c[0] == 4.0f && c[15] == 4.0f, c[0], " ", c[15]);
}

// Larger than one mc/kc block in every dimension, multi-threaded, both paths; gated on
// NDEBUG because the reference alone takes seconds under ASan Debug.
void test_large() {
#if defined(NDEBUG)
  for (bool portable : {false, true}) {
    const IsaCap cap(portable ? fb::Isa::portable : fb::kWidestIsa);
    const ZmmKernels zmm;
    Case cs;
    cs.s = {611, 587, 701};
    cs.alpha = 1.5;
    cs.beta = -1.0;
    cs.threads = 2;
    check_case<float>(cs, 101);
    cs.pad = 5;
    cs.beta = 0.0;
    check_case<double>(cs, 102);
  }
#else
  skip("Debug build: large shapes run in Release only");
#endif
}

void test_k_zero_scales_c() {
  std::vector<double> c = {1.0, 2.0, 3.0, 4.0};
  fb::gemm(2, 2, 0, 1.0, static_cast<const double*>(nullptr), 0,
           static_cast<const double*>(nullptr), 2, 0.5, c.data(), 2);
  CHECK(c[0] == 0.5 && c[3] == 2.0, c[0], " ", c[3]);
  std::vector<float> cf(4, std::numeric_limits<float>::quiet_NaN());
  fb::gemm(2, 2, 0, 1.0f, static_cast<const float*>(nullptr), 0,
           static_cast<const float*>(nullptr), 2, 0.0f, cf.data(), 2);
  CHECK(cf[0] == 0.0f && cf[3] == 0.0f, cf[0], " ", cf[3]);
}

void test_alpha_zero_ignores_ab() {
  // As in BLAS, alpha == 0 does not read A and B: NaN there must not reach C.
  const std::vector<double> a(6, std::numeric_limits<double>::quiet_NaN());
  const std::vector<double> b(6, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> c = {1.0, 2.0, 3.0, 4.0};
  fb::gemm(2, 2, 3, 0.0, a.data(), 3, b.data(), 2, 2.0, c.data(), 2);
  CHECK(c[0] == 2.0 && c[3] == 8.0, c[0], " ", c[3]);
}

void test_empty_is_noop() {
  // m == 0: A and C are empty (null is fine), B is not and must be valid.
  std::vector<float> c = {7.0f};
  const std::vector<float> b(3, 1.0f);
  fb::gemm(0, 1, 3, 1.0f, static_cast<const float*>(nullptr), 3, b.data(), 1, 0.0f,
           static_cast<float*>(nullptr), 1);
  fb::gemm(1, 0, 3, 1.0f, static_cast<const float*>(nullptr), 3,
           static_cast<const float*>(nullptr), 0, 0.0f, static_cast<float*>(nullptr), 0);
  CHECK(c[0] == 7.0f, c[0]);
}

void test_errors() {
  std::vector<double> a(100, 1.0), b(100, 1.0), c(100, 0.0);
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0, a.data(), 3, b.data(), 4, 0.0, c.data(), 4), "[gemm] ");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0, a.data(), 4, b.data(), 3, 0.0, c.data(), 4), "[gemm] ");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0, a.data(), 4, b.data(), 4, 0.0, c.data(), 3), "[gemm] ");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0, static_cast<const double*>(nullptr), 4, b.data(), 4, 0.0,
                        c.data(), 4),
               "[gemm] a is null");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0, a.data(), 4, static_cast<const double*>(nullptr), 4, 0.0,
                        c.data(), 4),
               "[gemm] b is null");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0, a.data(), 4, b.data(), 4, 0.0,
                        static_cast<double*>(nullptr), 4),
               "[gemm] c is null");
  std::vector<float> af(100, 1.0f), bf(100, 1.0f), cf(100, 0.0f);
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0f, af.data(), 4, bf.data(), 4, 0.0f, cf.data(), 4, -1),
               "[gemm] threads");
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 5, 4, 1.0f, af.data(), 4, bf.data(), 4, 0.0f, cf.data(), 5), "[gemm] ");
  try {
    fb::gemm(4, 5, 4, 1.0f, af.data(), 4, bf.data(), 4, 0.0f, cf.data(), 5);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("ldb=4") != std::string::npos && what.find("n=5") != std::string::npos,
          what);
  }
}

// Restores whole-block units even when a test body throws.
struct SmallUnits {
  SmallUnits() { fb::detail::gemm_small_units(true); }
  ~SmallUnits() { fb::detail::gemm_small_units(false); }
  SmallUnits(const SmallUnits&) = delete;
  SmallUnits& operator=(const SmallUnits&) = delete;
};

// C is written while A and B are read: a C that shares memory with either is refused, where
// they are read (k > 0, alpha != 0); operands side by side in one buffer are fine.
void test_output_sharing_an_input_is_refused() {
  std::vector<double> buf(3 * 64, 1.0);
  double* a = buf.data();
  double* b = buf.data() + 64;
  CHECK_THROWS(std::invalid_argument, fb::gemm(8, 8, 8, 1.0, a, 8, b, 8, 0.0, a, 8),
               "[gemm] c shares memory with a");
  CHECK_THROWS(std::invalid_argument, fb::gemm(8, 8, 8, 1.0, a, 8, b, 8, 0.0, b, 8),
               "[gemm] c shares memory with b");
  // Overlapping views: C's first rows are A's last ones.
  CHECK_THROWS(std::invalid_argument, fb::gemm(8, 8, 8, 1.0, a, 8, b + 64, 8, 0.0, a + 40, 8),
               "[gemm] c shares memory with a");
  // Padded rows: C starts in the last row of B.
  CHECK_THROWS(std::invalid_argument, fb::gemm(4, 4, 4, 1.0, a, 4, b, 16, 0.0, b + 50, 4),
               "[gemm] c shares memory with b");
  std::vector<float> f(3 * 16, 2.0f);
  CHECK_THROWS(std::invalid_argument,
               fb::gemm(4, 4, 4, 1.0f, f.data(), 4, f.data() + 16, 4, 0.0f, f.data() + 8, 4, 2),
               "[gemm] c shares memory with a");
  // Side by side: a, b, c.
  fb::gemm(8, 8, 8, 1.0, a, 8, b, 8, 0.0, buf.data() + 128, 8);
  CHECK(buf[128] == 8.0 && buf.back() == 8.0, buf[128], " ", buf.back());
  // A and B not read: C only scaled.
  fb::gemm(8, 8, 0, 1.0, a, 8, b, 8, 2.0, a, 8);
  fb::gemm(8, 8, 8, 0.0, a, 8, b, 8, 0.5, a, 8);
  CHECK(buf[0] == 1.0 && buf[63] == 1.0, buf[0], " ", buf[63]);
}

// A scope whose check asks to stop at once: gemm throws Interrupted on 1, 2 and 3 threads;
// on one thread before writing any of C (which starts as NaN, with beta 0).
void test_interrupt_stops_gemm() {
  const std::size_t n = 300;
  const std::vector<double> a = random_values<double>(n * n, 1);
  for (int threads : {1, 2, 3}) {
    std::vector<double> c(n * n, std::numeric_limits<double>::quiet_NaN());
    StopCheck stop;
    {
      const StopScope scope(stop);
      CHECK_THROWS(fb::Interrupted,
                   fb::gemm(n, n, n, 1.0, a.data(), n, a.data(), n, 0.0, c.data(), n, threads),
                   "[gemm] interrupted");
    }
    if (threads == 1) {
      std::size_t written = 0;
      for (double x : c) written += std::isnan(x) ? 0 : 1;
      CHECK(written == 0, written, " elements of C written after the interrupt");
    }
    CHECK(stop.calls == 1 && !stop.foreign_thread, "threads=", threads, " calls ",
          stop.calls.load());
  }
}

// The flag rises in the middle of a run of products whose units change hands (3 threads,
// small units): every product before it is right, the interrupted one throws, and nothing
// waits forever on a unit left unclaimed.
void test_interrupt_in_the_middle_of_shared_units() {
  const SmallUnits small;
  const std::size_t m = 150, n = 170, k = 190;
  const std::vector<double> a = random_values<double>(m * k, 2);
  const std::vector<double> b = random_values<double>(k * n, 3);
  std::vector<double> want(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t j = 0; j < n; ++j) want[i * n + j] += a[i * k + p] * b[p * n + j];
    }
  }
  StopCheck stop;
  stop.stop_from = 3;  // two checks (20 ms or more of products) pass first
  const fb::InterruptScope scope(&StopCheck::check, &stop);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int completed = 0;
  bool interrupted = false;
  while (!interrupted && std::chrono::steady_clock::now() < deadline) {
    std::vector<double> c(m * n, std::numeric_limits<double>::quiet_NaN());
    try {
      fb::gemm(m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, c.data(), n, 3);
    } catch (const fb::Interrupted&) {
      interrupted = true;
      continue;
    }
    ++completed;
    for (std::size_t i = 0; i < m * n; ++i) {
      if (!(std::fabs(c[i] - want[i]) <= 1e-12 * static_cast<double>(k))) {
        CHECK(false, "product ", completed, ": C[", i, "] = ", c[i], ", expected ", want[i]);
        return;
      }
    }
  }
  CHECK(interrupted, "no interrupt after ", completed, " products and ", stop.calls.load(),
        " checks");
  CHECK(!stop.foreign_thread, "the check ran on a worker");
}

// Threads that finish their own tile run units of the others'. Tiles of unequal width (3 or
// 5 threads over few column slivers) and several k blocks (beta applied once, later blocks
// accumulating) make threads take units from tiles in every epoch; each result must still
// match the reference, and some unit must have changed hands. A thread only takes units of
// owners that have started, and on a loaded machine the workers may start after the caller
// has done its own tile: rounds go on (up to 20 s) until a unit has changed hands. `check`
// runs one case against its reference (check_case<T>, check_bf16_case).
template <class Check>
void run_shared_units(Check check) {
  const SmallUnits small;
  const Shape shapes[] = {{60, 64, 700}, {97, 50, 300}, {130, 70, 257}, {200, 40, 1100}};
  const std::uint64_t before = fb::detail::gemm_units_shared();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::uint64_t seed = 500;
  for (int round = 0; round < 4 || std::chrono::steady_clock::now() < deadline; ++round) {
    for (const Shape& s : shapes) {
      for (int threads : {2, 3, 5}) {
        Case cs;
        cs.s = s;
        cs.beta = 0.75;
        cs.alpha = -1.5;
        cs.pad = round % 2 == 0 ? 0 : 5;
        cs.threads = threads;
        if (!check(cs, seed++)) return;
      }
    }
    if (fb::detail::gemm_units_shared() > before) return;
  }
  CHECK(fb::detail::gemm_units_shared() > before, "no unit ran on a thread other than its owner");
}

void test_shared_units_f32() { run_shared_units(check_case<float>); }
void test_shared_units_f64() { run_shared_units(check_case<double>); }

void test_shared_units_portable() {
  const IsaCap cap(fb::Isa::portable);
  run_shared_units(check_case<double>);
}

// The bf16 GEMM shares units through the same driver: on tiles, and on vdpbf16ps.
void test_shared_units_bf16() {
  SKIP_UNLESS(fb::has_avx512_bf16(), "no AVX512_BF16 on this CPU");
  run_shared_units(check_bf16_case);
  if (fb::best_isa() >= fb::Isa::amx) {
    const IsaCap capped(fb::Isa::avx512);
    run_shared_units(check_bf16_case);
  }
}

void test_blocking() {
  for (bool portable : {false, true}) {
    const IsaCap cap(portable ? fb::Isa::portable : fb::kWidestIsa);
    for (bool f64 : {false, true}) {
      const fb::GemmBlocking b = fb::gemm_blocking(f64);
      const std::size_t elem = f64 ? 8 : 4;
      CHECK(b.mr > 0 && b.nr > 0 && b.kc > 0 && b.mc > 0 && b.nc > 0, b.mr, " ", b.nr);
      CHECK(b.mc % b.mr == 0 && b.nc % b.nr == 0, b.mc, " ", b.nc);
      // The B micro-panel fits L1 (twice L1 for the AVX-512 kernels, which stream it from L2).
      CHECK(b.kc * b.nr * elem <= 2 * fb::cache_sizes().l1d_bytes, b.kc, " ", b.nr);
    }
  }
  if (have_avx2()) {
    const IsaCap cap(fb::Isa::avx2);
    const fb::GemmBlocking b = fb::gemm_blocking(false);
    CHECK(b.mr == 6 && b.nr == 16, b.mr, " ", b.nr);
  }
  if (have_avx512()) {
    const ZmmKernels zmm;
    const fb::GemmBlocking f = fb::gemm_blocking(false), d = fb::gemm_blocking(true);
    CHECK(f.mr == 12 && f.nr == 32 && d.mr == 8 && d.nr == 24, f.mr, "x", f.nr, " ", d.mr, "x",
          d.nr);
    // The zmm micro-panel may fill twice L1 (it streams from L2), not more.
    const std::size_t l1 = fb::cache_sizes().l1d_bytes;
    CHECK(f.kc * f.nr * 4 <= 2 * l1 && d.kc * d.nr * 8 <= 2 * l1, f.kc, " ", d.kc);
    // Their A block takes a quarter of L2 (the micro-panel streams beside it), unless the
    // smallest block (four slivers) is larger.
    const std::size_t l2 = fb::cache_sizes().l2_bytes;
    CHECK(f.mc * f.kc * 4 <= l2 / 4 || f.mc == 4 * f.mr, f.mc, " ", f.kc);
    CHECK(d.mc * d.kc * 8 <= l2 / 4 || d.mc == 4 * d.mr, d.mc, " ", d.kc);
    CHECK(f.mc * f.kc * 4 > l2 / 8 || f.mc == 128 * f.mr, f.mc, " ", f.kc);
  }
}

// Prints GFLOP/s at n = 1024 (Release only; never a pass/fail criterion on shared machines).
template <class T>
void report_speed(const char* name, int threads) {
  const std::size_t n = 1024;
  const std::vector<T> a = random_values<T>(n * n, 7), b = random_values<T>(n * n, 8);
  std::vector<T> c(n * n);
  double best_s = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    fb::gemm(n, n, n, T(1), a.data(), n, b.data(), n, T(0), c.data(), n, threads);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best_s = std::min(best_s, dt.count());
  }
  const fb::GemmBlocking tile = fb::gemm_blocking(std::is_same_v<T, double>);
  std::printf("note: gemm %s n=%zu threads=%d %s %zux%zu: %.1f GFLOP/s\n", name, n, threads,
              fb::gemm_isa(std::is_same_v<T, double>), tile.mr, tile.nr,
              2.0 * static_cast<double>(n * n * n) / best_s * 1e-9);
}

void test_speed_note() {
#if defined(NDEBUG)
  for (int threads : {1, 2}) {
    report_speed<float>("f32", threads);
    report_speed<double>("f64", threads);
    if (have_avx512()) {
      const ZmmKernels zmm;
      report_speed<float>("f32", threads);
      report_speed<double>("f64", threads);
      const YmmTiles ymm;
      report_speed<double>("f64", threads);
    }
  }
#else
  skip("Debug build: speed is reported in Release only");
#endif
}

const Test kTests[] = {
    {"avx512_f32", test_avx512_f32},
    {"avx512_f64", test_avx512_f64},
    {"avx512_panels_f32", test_avx512_panels_f32},
    {"avx512_panels_f64", test_avx512_panels_f64},
    {"ymm_vl_f64", test_ymm_vl_f64},
    {"ymm_vl_panels_f64", test_ymm_vl_panels_f64},
    {"avx2_panels_f32", test_avx2_panels_f32},
    {"avx2_panels_f64", test_avx2_panels_f64},
    {"avx2_f32", test_avx2_f32},
    {"avx2_f64", test_avx2_f64},
    {"portable_f32", test_portable_f32},
    {"portable_f64", test_portable_f64},
    {"uncapped_path", test_uncapped_path},
    {"bf16_native", test_bf16_native},
    {"bf16_widened", test_bf16_widened},
    {"bf16_errors", test_bf16_errors},
    {"large", test_large},
    {"shared_units_f32", test_shared_units_f32},
    {"shared_units_f64", test_shared_units_f64},
    {"shared_units_portable", test_shared_units_portable},
    {"shared_units_bf16", test_shared_units_bf16},
    {"bf16_tiles", test_bf16_tiles},
    {"k_zero_scales_c", test_k_zero_scales_c},
    {"alpha_zero_ignores_ab", test_alpha_zero_ignores_ab},
    {"empty_is_noop", test_empty_is_noop},
    {"errors", test_errors},
    {"output_sharing_an_input_is_refused", test_output_sharing_an_input_is_refused},
    {"interrupt_stops_gemm", test_interrupt_stops_gemm},
    {"interrupt_in_the_middle_of_shared_units", test_interrupt_in_the_middle_of_shared_units},
    {"blocking", test_blocking},
    {"speed_note", test_speed_note},
};

}  // namespace

int main() { return run_all(kTests); }
