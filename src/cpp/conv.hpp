// conv.hpp — 2-D convolution, float, NCHW, with stride, padding, dilation and groups, by
// im2col + gemm or directly: the kernel that places convolution layers on the roofline.
// No Python here.
#pragma once

#include <cstddef>
#include <string>

namespace fastbench {

struct Conv2dShape {
  std::size_t n = 1, c_in = 1, h = 1, w = 1;  // input x[n][c_in][h][w]
  std::size_t c_out = 1, kh = 1, kw = 1;      // weight w[c_out][c_in/groups][kh][kw]
  std::size_t stride_h = 1, stride_w = 1;
  std::size_t pad_h = 0, pad_w = 0;           // zero padding on each side
  std::size_t dil_h = 1, dil_w = 1;
  std::size_t groups = 1;
};

// Output height and width: (in + 2·pad − dil·(k − 1) − 1) / stride + 1.
// Throws std::invalid_argument ("[conv2d] ...") when the shape is inconsistent: a zero size,
// stride or dilation, channels not divisible by groups, or a dilated kernel larger than the
// padded input.
std::size_t conv2d_out_h(const Conv2dShape& s);
std::size_t conv2d_out_w(const Conv2dShape& s);
void conv2d_check(const Conv2dShape& s);

// y[n][c_out][out_h][out_w] = conv(x, w) + bias[c_out] (bias may be null).
// algo: "im2col" (lowering + gemm), "direct", or "auto" (conv2d_auto_algo); threads: 0 =
// hardware_threads().
// Throws std::invalid_argument for a bad shape, algo or thread count; std::bad_alloc when
// the im2col buffer cannot be allocated; Interrupted when the InterruptScope of the calling
// thread stops it (y partly written).
void conv2d(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* y,
            const std::string& algo = "auto", int threads = 0);

// What "auto" runs for this shape: "direct" when the GEMM that im2col would lower to has a
// reduction shorter than kDirectMaxTaps (channels per group × kernel area; depthwise and
// other thin grouped convolutions), where a GEMM cannot fill its register tiles; "im2col"
// otherwise.
const char* conv2d_auto_algo(const Conv2dShape& s);
inline constexpr std::size_t kDirectMaxTaps = 64;

// FLOPs of one conv2d call (2 per multiply-add, plus the bias adds).
double conv2d_flops(const Conv2dShape& s, bool bias);

// The path the direct kernels take now, an isa_name(): "avx2" or "portable" (never "avx512":
// there are no AVX-512 direct kernels). im2col runs gemm, which takes the widest path it has
// (gemm_isa(), "avx512" included). Follows the ISA cap (detail::set_isa_cap).
const char* conv2d_isa();

}  // namespace fastbench
