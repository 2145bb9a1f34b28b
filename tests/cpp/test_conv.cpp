// test_conv.cpp — native tests of conv2d: both algorithms against a naive seven-loop
// reference (double accumulation) over 1×1 and larger kernels, strides, padding, dilation,
// groups and depthwise, non-square shapes, batches, bias and thread counts; the output-size
// and FLOP formulas on hand-computed cases; every error path. Every case runs on the widest
// path, on gemm's zmm kernels where AVX-512 exists, and with the ISA capped at portable.
// Shapes stay small so the executable runs in seconds under ASan.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv.hpp"
#include "gemm.hpp"
#include "interrupt.hpp"
#include "isa.hpp"

#include "harness.hpp"
#include "isa_cap.hpp"
#include "stop_check.hpp"

namespace fb = fastbench;

namespace {

// Deterministic values in [-1, 1) (a fixed LCG, so failures reproduce).
std::vector<float> random_floats(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed * 2654435761u + 12345u;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return v;
}

fb::Conv2dShape shape(std::size_t n, std::size_t c_in, std::size_t h, std::size_t w,
                      std::size_t c_out, std::size_t kh, std::size_t kw, std::size_t stride_h = 1,
                      std::size_t stride_w = 1, std::size_t pad_h = 0, std::size_t pad_w = 0,
                      std::size_t dil_h = 1, std::size_t dil_w = 1, std::size_t groups = 1) {
  fb::Conv2dShape s;
  s.n = n;
  s.c_in = c_in;
  s.h = h;
  s.w = w;
  s.c_out = c_out;
  s.kh = kh;
  s.kw = kw;
  s.stride_h = stride_h;
  s.stride_w = stride_w;
  s.pad_h = pad_h;
  s.pad_w = pad_w;
  s.dil_h = dil_h;
  s.dil_w = dil_w;
  s.groups = groups;
  return s;
}

std::string describe(const fb::Conv2dShape& s) {
  return str("(n", s.n, " c", s.c_in, " ", s.h, "x", s.w, " -> ", s.c_out, " k", s.kh, "x",
             s.kw, " s", s.stride_h, ",", s.stride_w, " p", s.pad_h, ",", s.pad_w, " d", s.dil_h,
             ",", s.dil_w, " g", s.groups, ")");
}

// The definition, written independently of the kernels: signed input coordinates, every
// tap tested against the image bounds, sums in double.
std::vector<double> reference(const fb::Conv2dShape& s, const std::vector<float>& x,
                              const std::vector<float>& w, const float* bias) {
  const auto oh = static_cast<long>((s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1);
  const auto ow = static_cast<long>((s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1);
  const std::size_t cin_g = s.c_in / s.groups, cout_g = s.c_out / s.groups;
  const auto h = static_cast<long>(s.h), wd = static_cast<long>(s.w);
  std::vector<double> y(s.n * s.c_out * static_cast<std::size_t>(oh * ow));
  for (std::size_t b = 0; b < s.n; ++b) {
    for (std::size_t co = 0; co < s.c_out; ++co) {
      const std::size_t g = co / cout_g;
      for (long oy = 0; oy < oh; ++oy) {
        for (long ox = 0; ox < ow; ++ox) {
          double acc = bias != nullptr ? bias[co] : 0.0;
          for (std::size_t ci = 0; ci < cin_g; ++ci) {
            for (std::size_t ky = 0; ky < s.kh; ++ky) {
              for (std::size_t kx = 0; kx < s.kw; ++kx) {
                const long iy = oy * static_cast<long>(s.stride_h) - static_cast<long>(s.pad_h) +
                                static_cast<long>(ky * s.dil_h);
                const long ix = ox * static_cast<long>(s.stride_w) - static_cast<long>(s.pad_w) +
                                static_cast<long>(kx * s.dil_w);
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const std::size_t xi =
                    ((b * s.c_in + g * cin_g + ci) * s.h + static_cast<std::size_t>(iy)) * s.w +
                    static_cast<std::size_t>(ix);
                const std::size_t wi = ((co * cin_g + ci) * s.kh + ky) * s.kw + kx;
                acc += static_cast<double>(x[xi]) * static_cast<double>(w[wi]);
              }
            }
          }
          y[((b * s.c_out + co) * static_cast<std::size_t>(oh) + static_cast<std::size_t>(oy)) *
                static_cast<std::size_t>(ow) +
            static_cast<std::size_t>(ox)] = acc;
        }
      }
    }
  }
  return y;
}

// Runs gemm's zmm kernels for one scope when `on`, even on a core whose 512-bit FMAs run at
// half rate.
struct ZmmKernels {
  explicit ZmmKernels(bool on) : on_(on) { fb::detail::gemm_zmm_at_half_rate(on); }
  ~ZmmKernels() {
    if (on_) fb::detail::gemm_zmm_at_half_rate(false);
  }
  ZmmKernels(const ZmmKernels&) = delete;
  ZmmKernels& operator=(const ZmmKernels&) = delete;

 private:
  bool on_;
};

// Runs both algorithms with and without bias on 1 and 2 threads, uncapped (with gemm's zmm
// kernels forced, too) and capped at portable, and compares with the reference; the tolerance scales with the number of terms
// per output.
void check_case(const fb::Conv2dShape& s, std::uint32_t seed) {
  const std::size_t oh = fb::conv2d_out_h(s), ow = fb::conv2d_out_w(s);
  const std::size_t taps = s.c_in / s.groups * s.kh * s.kw;
  const std::vector<float> x = random_floats(s.n * s.c_in * s.h * s.w, seed);
  const std::vector<float> w = random_floats(s.c_out * taps, seed + 1);
  const std::vector<float> b = random_floats(s.c_out, seed + 2);
  const double tol = 1e-5 * static_cast<double>(taps + 1) + 1e-5;
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    const float* bias = with_bias != 0 ? b.data() : nullptr;
    const std::vector<double> ref = reference(s, x, w, bias);
    CHECK(ref.size() == s.n * s.c_out * oh * ow, describe(s), " reference size ", ref.size());
    for (const char* algo : {"im2col", "direct", "auto"}) {
      for (int threads : {1, 2}) {
        // The widest path, then with gemm's zmm kernels even where 512-bit FMAs are half
        // rate (Zen 4 runs its ymm kernel otherwise), then portable.
        for (int variant = 0; variant < 3; ++variant) {
          const IsaCap capped(variant == 2 ? fb::Isa::portable : fb::kWidestIsa);
          const ZmmKernels zmm(variant == 1);
          std::vector<float> y(ref.size(), std::numeric_limits<float>::quiet_NaN());
          fb::conv2d(s, x.data(), w.data(), bias, y.data(), algo, threads);
          double worst = 0.0;
          std::size_t at = 0;
          for (std::size_t i = 0; i < y.size(); ++i) {
            const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
            if (!(err <= worst)) {  // NaN counts as the worst
              worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
              at = i;
            }
          }
          CHECK(worst <= tol, describe(s), " ", algo, " threads=", threads, " bias=", with_bias,
                " isa=", fb::conv2d_isa(), " gemm=", fb::gemm_isa(), ": max error ", worst, " at ", at, " (tolerance ", tol,
                ")");
        }
      }
    }
  }
}

// ---- correctness --------------------------------------------------------------------------

// With AVX-512, the lowering's gemm runs the zmm kernels: im2col on a shape whose GEMM has
// edge tiles in every dimension (m = 30 output channels, k = 5·9 taps, 17·19 pixels).
void test_im2col_on_the_avx512_gemm() {
  SKIP_UNLESS(fb::best_isa() >= fb::Isa::avx512, "no AVX-512 on this CPU");
  {
    const ZmmKernels zmm(true);
    CHECK(std::string(fb::gemm_isa()) == "avx512", fb::gemm_isa());
  }
  check_case(shape(2, 5, 17, 19, 30, 3, 3, 1, 1, 1, 1), 7);
}

void test_pointwise() {
  check_case(shape(1, 8, 5, 7, 6, 1, 1), 1);
  check_case(shape(3, 5, 4, 3, 9, 1, 1), 2);
  check_case(shape(2, 16, 9, 10, 12, 1, 1, 2, 2), 3);            // strided 1×1: lowered
  check_case(shape(1, 4, 6, 6, 4, 1, 1, 1, 1, 1, 1), 4);         // padded 1×1: lowered
  check_case(shape(2, 8, 6, 5, 8, 1, 1, 1, 1, 0, 0, 1, 1, 2), 5);  // grouped 1×1
}

void test_3x3() {
  check_case(shape(1, 3, 8, 8, 4, 3, 3), 10);
  check_case(shape(1, 8, 12, 20, 8, 3, 3, 1, 1, 1, 1), 11);   // padded, wide: vector interior
  check_case(shape(3, 5, 9, 11, 7, 3, 3, 1, 1, 1, 1), 12);    // batch 3, odd channel counts
  check_case(shape(1, 4, 33, 37, 9, 3, 3, 1, 1, 1, 1), 13);   // long rows, remainder channels
  check_case(shape(2, 6, 10, 19, 5, 3, 3, 1, 1, 2, 2), 14);   // padding beyond the kernel's reach
}

void test_strides_and_dilation() {
  check_case(shape(1, 3, 15, 17, 4, 3, 3, 2, 2, 1, 1), 20);
  check_case(shape(2, 4, 16, 14, 5, 3, 3, 3, 3, 1, 1), 21);
  check_case(shape(1, 3, 23, 21, 8, 7, 7, 2, 2, 3, 3), 22);   // the ResNet stem, scaled down
  check_case(shape(1, 4, 14, 30, 8, 3, 3, 1, 1, 2, 2, 2, 2), 23);  // dilation 2
  check_case(shape(1, 3, 13, 26, 4, 3, 3, 2, 1, 2, 2, 2, 3), 24);  // mixed strides and dilations
  check_case(shape(1, 2, 9, 9, 3, 5, 5, 1, 2, 0, 1, 2, 1), 25);
}

void test_non_square() {
  check_case(shape(1, 3, 7, 19, 5, 2, 5, 1, 1, 1, 2), 30);
  check_case(shape(2, 4, 20, 6, 4, 5, 1, 1, 1, 2, 0), 31);
  check_case(shape(1, 2, 1, 40, 8, 1, 3, 1, 1, 0, 1), 32);    // one input row
  check_case(shape(1, 2, 5, 4, 3, 5, 4), 33);                 // kernel covers the whole input
  check_case(shape(1, 2, 3, 3, 2, 3, 3, 1, 1, 4, 4), 34);     // mostly padding
}

void test_groups_and_depthwise() {
  check_case(shape(1, 8, 10, 12, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2), 40);
  check_case(shape(2, 6, 9, 24, 12, 3, 3, 1, 1, 1, 1, 1, 1, 3), 41);
  check_case(shape(1, 8, 18, 20, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8), 42);    // depthwise
  check_case(shape(3, 4, 17, 21, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4), 43);    // depthwise, stride 2
  check_case(shape(1, 4, 16, 24, 8, 5, 5, 1, 1, 4, 4, 2, 2, 4), 44);    // multiplier 2, dilated
  check_case(shape(1, 16, 12, 12, 32, 3, 3, 1, 1, 1, 1, 1, 1, 2), 45);  // full channel blocks
}

void test_large_enough_to_thread() {
  // Big enough that two threads really split the work on both paths.
  check_case(shape(1, 16, 28, 28, 16, 3, 3, 1, 1, 1, 1), 50);
  check_case(shape(4, 8, 16, 16, 8, 3, 3, 1, 1, 1, 1), 51);
  check_case(shape(2, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16), 52);
}

void test_many_input_channels() {
  // More input channels than one weight chunk of the register-blocked direct kernel holds
  // (partial sums carried in y), with a remainder output channel and a partial last vector.
  check_case(shape(1, 64, 5, 11, 5, 3, 3, 1, 1, 1, 1), 60);
  check_case(shape(1, 240, 3, 9, 2, 3, 3, 1, 1, 1, 1), 61);
}

void test_output_buffer_fully_written() {
  // beta = 0 semantics: whatever y held (NaN here, in check_case; huge values here) is
  // ignored, on both paths.
  const fb::Conv2dShape s = shape(1, 2, 6, 6, 3, 3, 3, 1, 1, 1, 1);
  const std::vector<float> x = random_floats(2 * 36, 7), w = random_floats(3 * 18, 8);
  const std::vector<double> ref = reference(s, x, w, nullptr);
  for (const char* algo : {"im2col", "direct"}) {
    std::vector<float> y(ref.size(), 1e30f);
    fb::conv2d(s, x.data(), w.data(), nullptr, y.data(), algo, 1);
    bool ok = true;
    for (std::size_t i = 0; i < y.size(); ++i) ok = ok && std::fabs(y[i] - ref[i]) < 1e-4;
    CHECK(ok, algo);
  }
}

// A scope whose check asks to stop at once: both paths, on 1 and 2 threads, throw
// Interrupted, and one thread on the direct path writes nothing.
void test_interrupt_stops_conv2d() {
  const fb::Conv2dShape s = shape(2, 16, 24, 24, 16, 3, 3, 1, 1, 1, 1);
  const std::vector<float> x = random_floats(2 * 16 * 24 * 24, 9);
  const std::vector<float> w = random_floats(16 * 16 * 9, 10);
  for (const char* algo : {"im2col", "direct"}) {
    for (int threads : {1, 2}) {
      std::vector<float> y(2 * 16 * 24 * 24, std::numeric_limits<float>::quiet_NaN());
      StopCheck stop;
      {
        const StopScope scope(stop);
        CHECK_THROWS(fb::Interrupted,
                     fb::conv2d(s, x.data(), w.data(), nullptr, y.data(), algo, threads),
                     "[conv2d] interrupted");
      }
      CHECK(stop.calls == 1 && !stop.foreign_thread, algo, " threads=", threads, " calls ",
            stop.calls.load());
      if (threads == 1 && std::string(algo) == "direct") {
        std::size_t written = 0;
        for (float v : y) written += std::isnan(v) ? 0 : 1;
        CHECK(written == 0, written, " outputs written after the interrupt");
      }
    }
  }
  // A check that never asks to stop changes nothing.
  StopCheck never;
  never.stop_from = 0;
  const StopScope scope(never);
  check_case(shape(1, 16, 28, 28, 16, 3, 3, 1, 1, 1, 1), 53);
}

// ---- formulas -----------------------------------------------------------------------------

void test_output_size() {
  // ResNet stem: (224 + 6 − 6 − 1) / 2 + 1 = 112.
  const fb::Conv2dShape stem = shape(1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3);
  CHECK(fb::conv2d_out_h(stem) == 112, fb::conv2d_out_h(stem));
  CHECK(fb::conv2d_out_w(stem) == 112, fb::conv2d_out_w(stem));
  // h: (10 + 2 − 2·2 − 1) / 3 + 1 = 3; w: (7 + 0 − 1·4 − 1) / 1 + 1 = 3.
  const fb::Conv2dShape odd = shape(1, 1, 10, 7, 1, 3, 5, 3, 1, 1, 0, 2, 1);
  CHECK(fb::conv2d_out_h(odd) == 3, fb::conv2d_out_h(odd));
  CHECK(fb::conv2d_out_w(odd) == 3, fb::conv2d_out_w(odd));
  // The kernel exactly covering the padded input gives one output.
  const fb::Conv2dShape exact = shape(1, 1, 3, 1, 1, 5, 3, 1, 1, 1, 1);
  CHECK(fb::conv2d_out_h(exact) == 1 && fb::conv2d_out_w(exact) == 1, fb::conv2d_out_h(exact));
  fb::conv2d_check(stem);  // consistent: no throw
}

void test_flops() {
  // (1,64,56,56) → 64, 3×3 pad 1: 2·64·56·56·64·9 = 231,211,008; bias adds 64·56·56 = 200,704.
  const fb::Conv2dShape s = shape(1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1);
  CHECK(fb::conv2d_flops(s, false) == 231211008.0, fb::conv2d_flops(s, false));
  CHECK(fb::conv2d_flops(s, true) == 231211008.0 + 200704.0, fb::conv2d_flops(s, true));
  // Depthwise, batch 2, stride 2: outputs 2·32·4·4 = 1024, 9 taps each: 18432 (+1024).
  const fb::Conv2dShape dw = shape(2, 32, 8, 8, 32, 3, 3, 2, 2, 1, 1, 1, 1, 32);
  CHECK(fb::conv2d_flops(dw, false) == 18432.0, fb::conv2d_flops(dw, false));
  CHECK(fb::conv2d_flops(dw, true) == 19456.0, fb::conv2d_flops(dw, true));
  CHECK_THROWS(std::invalid_argument, fb::conv2d_flops(shape(0, 1, 1, 1, 1, 1, 1), false),
               "[conv2d]");
}

void test_auto_algo() {
  // Depthwise 3×3: 9 taps per output, direct. 64 channels 3×3: 576 taps, im2col. The 7×7 stem
  // on 3 channels: 147 taps, im2col. 4 channels per group, 3×3: 36 taps, direct.
  CHECK(std::string(fb::conv2d_auto_algo(shape(1, 32, 16, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32))) ==
            "direct", "depthwise");
  CHECK(std::string(fb::conv2d_auto_algo(shape(1, 64, 8, 8, 64, 3, 3, 1, 1, 1, 1))) == "im2col",
        "64 channels");
  CHECK(std::string(fb::conv2d_auto_algo(shape(1, 3, 32, 32, 64, 7, 7, 2, 2, 3, 3))) == "im2col",
        "stem");
  CHECK(std::string(fb::conv2d_auto_algo(shape(1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 4))) ==
            "direct", "4 channels per group");
  CHECK_THROWS(std::invalid_argument, fb::conv2d_auto_algo(shape(0, 1, 1, 1, 1, 1, 1)), "[conv2d]");
}

// ---- errors -------------------------------------------------------------------------------

void test_bad_shapes() {
  const fb::Conv2dShape good = shape(1, 4, 8, 8, 4, 3, 3);
  std::size_t fb::Conv2dShape::*fields[] = {
      &fb::Conv2dShape::n,        &fb::Conv2dShape::c_in,     &fb::Conv2dShape::h,
      &fb::Conv2dShape::w,        &fb::Conv2dShape::c_out,    &fb::Conv2dShape::kh,
      &fb::Conv2dShape::kw,       &fb::Conv2dShape::stride_h, &fb::Conv2dShape::stride_w,
      &fb::Conv2dShape::dil_h,    &fb::Conv2dShape::dil_w,    &fb::Conv2dShape::groups};
  for (auto field : fields) {
    fb::Conv2dShape s = good;
    s.*field = 0;
    CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d]");
    CHECK_THROWS(std::invalid_argument, fb::conv2d_out_h(s), "[conv2d]");
    CHECK_THROWS(std::invalid_argument, fb::conv2d_out_w(s), "[conv2d]");
  }
  fb::Conv2dShape s = good;
  s.groups = 3;  // 4 channels
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d] c_in 4 is not divisible");
  s = shape(1, 4, 8, 8, 6, 3, 3, 1, 1, 0, 0, 1, 1, 4);
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d] c_out 6 is not divisible");
  // 3×3 dilated by 4 spans 9 > 8; padding 1 makes it fit.
  s = shape(1, 1, 8, 8, 1, 3, 3, 1, 1, 0, 0, 4, 4);
  CHECK_THROWS(std::invalid_argument, fb::conv2d_out_h(s), "[conv2d] dilated kernel height");
  s.pad_h = 1;
  CHECK_THROWS(std::invalid_argument, fb::conv2d_out_w(s), "[conv2d] dilated kernel width");
  s.pad_w = 1;
  CHECK(fb::conv2d_out_h(s) == 2 && fb::conv2d_out_w(s) == 2, fb::conv2d_out_h(s));
  s = shape(1, 1, 4, 4, 1, 5, 5);
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d] dilated kernel");
}

void test_overflowing_shapes() {
  const std::size_t big = std::numeric_limits<std::size_t>::max() / 4;
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(shape(big, 8, 8, 8, 1, 1, 1)),
               "[conv2d] input size overflows");
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(shape(1, 1, 8, 8, big, 8, 8)),
               "[conv2d] weight size overflows");
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(shape(1, 1, big + 1, 1, 1, 1, 1)),
               "[conv2d] input bytes overflows");
  fb::Conv2dShape s = shape(1, 1, 1, 1, 1, 1, 1);
  s.pad_h = std::numeric_limits<std::size_t>::max() / 2 + 1;
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d] padding overflows");
  s = shape(1, 1, 1, 1, 1, 3, 1);
  s.dil_h = std::numeric_limits<std::size_t>::max();
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d] dilated kernel overflows");
  // Output larger than the input via padding: the output count overflows on its own.
  s = shape(1, 1, 1, 1, big, 1, 1, 1, 1, 1, 1);
  CHECK_THROWS(std::invalid_argument, fb::conv2d_check(s), "[conv2d]");
}

void test_bad_arguments() {
  const fb::Conv2dShape s = shape(1, 2, 4, 4, 2, 3, 3, 1, 1, 1, 1);
  const std::vector<float> x(32, 1.0f), w(36, 1.0f);
  std::vector<float> y(32);
  CHECK_THROWS(std::invalid_argument, fb::conv2d(s, x.data(), w.data(), nullptr, y.data(), "fft"),
               "[conv2d] unknown algo 'fft', expected one of: auto, im2col, direct");
  CHECK_THROWS(std::invalid_argument, fb::conv2d(s, x.data(), w.data(), nullptr, y.data(), ""),
               "[conv2d] unknown algo");
  for (const char* algo : {"im2col", "direct"}) {
    CHECK_THROWS(std::invalid_argument, fb::conv2d(s, nullptr, w.data(), nullptr, y.data(), algo),
                 "[conv2d] null pointer");
    CHECK_THROWS(std::invalid_argument, fb::conv2d(s, x.data(), nullptr, nullptr, y.data(), algo),
                 "[conv2d] null pointer");
    CHECK_THROWS(std::invalid_argument, fb::conv2d(s, x.data(), w.data(), nullptr, nullptr, algo),
                 "[conv2d] null pointer");
    CHECK_THROWS(std::invalid_argument,
                 fb::conv2d(s, x.data(), w.data(), nullptr, y.data(), algo, -1),
                 "[conv2d] threads is -1");
    fb::Conv2dShape bad = s;
    bad.groups = 0;
    CHECK_THROWS(std::invalid_argument,
                 fb::conv2d(bad, x.data(), w.data(), nullptr, y.data(), algo), "[conv2d] groups");
  }
  // threads = 0 (all cores) and more threads than work both run.
  for (int threads : {0, 7}) {
    fb::conv2d(s, x.data(), w.data(), nullptr, y.data(), "direct", threads);
    CHECK(y[5] == 18.0f, threads, " centre output ", y[5]);  // all 2·3·3 taps inside
  }
}

const Test kTests[] = {
    {"im2col_on_the_avx512_gemm", test_im2col_on_the_avx512_gemm},
    {"pointwise", test_pointwise},
    {"3x3", test_3x3},
    {"strides_and_dilation", test_strides_and_dilation},
    {"non_square", test_non_square},
    {"groups_and_depthwise", test_groups_and_depthwise},
    {"large_enough_to_thread", test_large_enough_to_thread},
    {"many_input_channels", test_many_input_channels},
    {"output_buffer_fully_written", test_output_buffer_fully_written},
    {"interrupt_stops_conv2d", test_interrupt_stops_conv2d},
    {"output_size", test_output_size},
    {"flops", test_flops},
    {"auto algo", test_auto_algo},
    {"bad_shapes", test_bad_shapes},
    {"overflowing_shapes", test_overflowing_shapes},
    {"bad_arguments", test_bad_arguments},
};

}  // namespace

int main() { return run_all(kTests); }
