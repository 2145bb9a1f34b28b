// conv.cpp — see conv.hpp. Owns shape checking, the im2col lowering (bounded bands of
// output rows, each one fastbench::gemm call; none for pointwise convs) and the direct path:
// for stride 1 in width on AVX2/FMA, a zero-padded copy of each input band feeding a
// register-blocked kernel (4 output channels × 16 columns); elsewhere portable tap-by-tap
// row updates. Both parallelise over images × groups × bands of output rows.
#include "conv.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "gemm.hpp"
#include "interrupt.hpp"
#include "isa.hpp"
#include "parallel.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fastbench {
namespace {

// The im2col column buffer never exceeds this (split between threads when each lowers its
// own images): bands of output rows are lowered and multiplied in turn. Small on purpose:
// a band that stays in L2/L3 between lowering and gemm measured ~1.8x faster on
// (1,64,56,56) 3x3 than lowering the whole 7 MiB matrix at once.
constexpr std::size_t kColBudgetBytes = std::size_t{2} << 20;
// Below this many output elements per call, starting threads costs more than it saves.
constexpr std::size_t kMinParallelWork = std::size_t{1} << 15;
// A direct-path task keeps about this many input floats (its rows of every input channel of
// its group) hot in L2 while it sweeps the output channels.
constexpr std::size_t kDirectBandFloats = std::size_t{1} << 16;

std::string num(std::size_t v) { return std::to_string(v); }

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("[conv2d] " + what); }

// a·b, or an invalid_argument naming `what` when it does not fit in size_t.
std::size_t mul_checked(std::size_t a, std::size_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a) {
    fail(std::string(what) + " overflows size_t (" + num(a) + " * " + num(b) + ")");
  }
  return a * b;
}

std::size_t add_checked(std::size_t a, std::size_t b, const char* what) {
  if (b > std::numeric_limits<std::size_t>::max() - a) {
    fail(std::string(what) + " overflows size_t (" + num(a) + " + " + num(b) + ")");
  }
  return a + b;
}

// One spatial axis: output length after checking that the dilated kernel fits the padded
// input. Everything else about the shape is checked by check_shape.
std::size_t out_len(std::size_t in, std::size_t k, std::size_t stride, std::size_t pad,
                    std::size_t dil, const char* axis) {
  const std::size_t padded = add_checked(in, mul_checked(2, pad, "padding"), "padded input");
  const std::size_t span = add_checked(mul_checked(dil, k - 1, "dilated kernel"), 1,
                                       "dilated kernel");
  if (span > padded) {
    fail(std::string("dilated kernel ") + axis + " extent " + num(span) +
         " is larger than the padded input " + num(padded) + " (" + num(in) + " + 2*" +
         num(pad) + "); expected at most the padded input");
  }
  return (padded - span) / stride + 1;
}

void check_nonzero(std::size_t v, const char* name) {
  if (v == 0) fail(std::string(name) + " is 0, expected >= 1");
}

struct Dims {
  std::size_t oh = 0, ow = 0;
};

Dims check_shape(const Conv2dShape& s) {
  check_nonzero(s.n, "n");
  check_nonzero(s.c_in, "c_in");
  check_nonzero(s.h, "h");
  check_nonzero(s.w, "w");
  check_nonzero(s.c_out, "c_out");
  check_nonzero(s.kh, "kh");
  check_nonzero(s.kw, "kw");
  check_nonzero(s.stride_h, "stride_h");
  check_nonzero(s.stride_w, "stride_w");
  check_nonzero(s.dil_h, "dil_h");
  check_nonzero(s.dil_w, "dil_w");
  check_nonzero(s.groups, "groups");
  if (s.c_in % s.groups != 0) {
    fail("c_in " + num(s.c_in) + " is not divisible by groups " + num(s.groups));
  }
  if (s.c_out % s.groups != 0) {
    fail("c_out " + num(s.c_out) + " is not divisible by groups " + num(s.groups));
  }
  Dims d;
  d.oh = out_len(s.h, s.kh, s.stride_h, s.pad_h, s.dil_h, "height");
  d.ow = out_len(s.w, s.kw, s.stride_w, s.pad_w, s.dil_w, "width");
  // Element and byte counts of every tensor must be representable.
  const std::size_t x_elems = mul_checked(
      mul_checked(mul_checked(s.n, s.c_in, "input size"), s.h, "input size"), s.w, "input size");
  const std::size_t w_elems =
      mul_checked(mul_checked(mul_checked(s.c_out, s.c_in / s.groups, "weight size"), s.kh,
                              "weight size"),
                  s.kw, "weight size");
  const std::size_t y_elems = mul_checked(
      mul_checked(mul_checked(s.n, s.c_out, "output size"), d.oh, "output size"), d.ow,
      "output size");
  mul_checked(x_elems, sizeof(float), "input bytes");
  mul_checked(w_elems, sizeof(float), "weight bytes");
  mul_checked(y_elems, sizeof(float), "output bytes");
  return d;
}

// Output positions o in [lo, hi) whose input index o·stride + k·dil − pad lies in [0, in).
struct Range {
  std::size_t lo = 0, hi = 0;
};

Range valid_range(std::size_t in, std::size_t out, std::size_t stride, std::size_t pad,
                  std::size_t koff /* k·dil */) {
  Range r;
  r.lo = koff >= pad ? 0 : (pad - koff + stride - 1) / stride;
  if (in + pad <= koff) {
    r.hi = 0;
  } else {
    r.hi = std::min(out, (in + pad - koff - 1) / stride + 1);
  }
  if (r.lo > r.hi) r.lo = r.hi;
  return r;
}

// Everything a kernel needs about one call, sizes resolved.
struct Plan {
  Conv2dShape s;
  std::size_t oh = 0, ow = 0;
  std::size_t cin_g = 0, cout_g = 0;  // channels per group
  std::size_t taps = 0;               // cin_g·kh·kw, the gemm K
  std::size_t plane_in = 0, plane_out = 0;
};

Plan make_plan(const Conv2dShape& s) {
  const Dims d = check_shape(s);
  Plan p;
  p.s = s;
  p.oh = d.oh;
  p.ow = d.ow;
  p.cin_g = s.c_in / s.groups;
  p.cout_g = s.c_out / s.groups;
  p.taps = p.cin_g * s.kh * s.kw;
  p.plane_in = s.h * s.w;
  p.plane_out = d.oh * d.ow;
  return p;
}

std::unique_ptr<float[]> alloc_floats(std::size_t count) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(float)) throw std::bad_alloc();
  return std::unique_ptr<float[]>(new float[count]);
}

// ---- im2col + gemm --------------------------------------------------------------------------

// cols[t][(oy − oy0)·ow + ox] for taps t in [t0, t1) and output rows [oy0, oy1) of one image
// and group (x points at its first input channel); out-of-image taps are zero.
void lower_rows(const Plan& p, const float* x, std::size_t oy0, std::size_t oy1,
                std::size_t t0, std::size_t t1, float* cols) {
  const Conv2dShape& s = p.s;
  const std::size_t ncols = (oy1 - oy0) * p.ow;
  for (std::size_t t = t0; t < t1; ++t) {
    const std::size_t ci = t / (s.kh * s.kw);
    const std::size_t ky = t / s.kw % s.kh;
    const std::size_t kx = t % s.kw;
    const Range cr = valid_range(s.w, p.ow, s.stride_w, s.pad_w, kx * s.dil_w);
    const Range rr = valid_range(s.h, p.oh, s.stride_h, s.pad_h, ky * s.dil_h);
    float* row = cols + t * ncols;
    for (std::size_t oy = oy0; oy < oy1; ++oy) {
      float* dst = row + (oy - oy0) * p.ow;
      if (oy < rr.lo || oy >= rr.hi || cr.lo >= cr.hi) {
        std::fill(dst, dst + p.ow, 0.0f);
        continue;
      }
      const std::size_t iy = oy * s.stride_h + ky * s.dil_h - s.pad_h;
      const float* src = x + (ci * s.h + iy) * s.w + (cr.lo * s.stride_w + kx * s.dil_w - s.pad_w);
      std::fill(dst, dst + cr.lo, 0.0f);
      if (s.stride_w == 1) {
        std::memcpy(dst + cr.lo, src, (cr.hi - cr.lo) * sizeof(float));
      } else {
        const std::size_t sw = s.stride_w;
        for (std::size_t ox = cr.lo; ox < cr.hi; ++ox) dst[ox] = src[(ox - cr.lo) * sw];
      }
      std::fill(dst + cr.hi, dst + p.ow, 0.0f);
    }
  }
}

bool is_pointwise(const Conv2dShape& s) {
  return s.kh == 1 && s.kw == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 &&
         s.pad_w == 0;
}

// Output rows [oy0, oy1) of one image and group: y_g = W_g · cols (+ bias), the bias written
// first so that gemm runs with beta = 1. `cols` holds the band's lowering (unused for a
// pointwise conv, whose input rows already are the K × columns matrix); `threads` goes to the
// lowering and to gemm.
void im2col_band(const Plan& p, const float* x_img, const float* w, const float* bias,
                 float* y_img, std::size_t g, std::size_t oy0, std::size_t oy1, float* cols,
                 int threads) {
  const float* xg = x_img + g * p.cin_g * p.plane_in;
  const float* wg = w + g * p.cout_g * p.taps;
  float* yg = y_img + g * p.cout_g * p.plane_out + oy0 * p.ow;
  const std::size_t ncols = (oy1 - oy0) * p.ow;
  float beta = 0.0f;
  if (bias != nullptr) {
    for (std::size_t co = 0; co < p.cout_g; ++co) {
      float* band = yg + co * p.plane_out;
      std::fill(band, band + ncols, bias[g * p.cout_g + co]);
    }
    beta = 1.0f;
  }
  if (is_pointwise(p.s)) {
    gemm(p.cout_g, ncols, p.taps, 1.0f, wg, p.taps, xg + oy0 * p.ow, p.plane_in, beta, yg,
         p.plane_out, threads);
    return;
  }
  if (threads > 1 && p.taps * ncols >= kMinParallelWork) {
    run_parallel(threads, [&](int tid, int nt) {
      const std::size_t t0 = p.taps * static_cast<std::size_t>(tid) / static_cast<std::size_t>(nt);
      const std::size_t t1 =
          p.taps * static_cast<std::size_t>(tid + 1) / static_cast<std::size_t>(nt);
      lower_rows(p, xg, oy0, oy1, t0, t1, cols);
    });
  } else {
    lower_rows(p, xg, oy0, oy1, 0, p.taps, cols);
  }
  gemm(p.cout_g, ncols, p.taps, 1.0f, wg, p.taps, cols, ncols, beta, yg, p.plane_out, threads);
}

// Output rows per band: as many whole rows as the column budget holds (at least one).
std::size_t band_rows(const Plan& p, std::size_t budget) {
  // A single output row's columns must be allocatable; beyond size_t it cannot be.
  if (p.taps > std::numeric_limits<std::size_t>::max() / sizeof(float) / p.ow) {
    throw std::bad_alloc();
  }
  if (is_pointwise(p.s)) return p.oh;
  return std::max<std::size_t>(1, std::min(p.oh, budget / sizeof(float) / (p.taps * p.ow)));
}

void conv_im2col(const Plan& p, const float* x, const float* w, const float* bias, float* y,
                 int nthreads) {
  const Conv2dShape& s = p.s;
  const std::size_t x_img = s.c_in * p.plane_in;
  const std::size_t y_img = s.c_out * p.plane_out;
  const std::size_t nt = static_cast<std::size_t>(nthreads);
  // Jobs are image × group × band of output rows. With at least as many jobs as threads,
  // each thread lowers and multiplies its own jobs single-threaded: no thread start-up per
  // gemm, and the lowering runs in parallel for free. On 2 cores at batch 1 this was
  // faster than threading inside each band's gemm (which starts threads twice per band)
  // for the 7×7 stem, about even elsewhere; threads cooperate inside a job only when there
  // are fewer jobs than threads.
  const std::size_t images = s.n * s.groups;
  // Whole images per thread when there are enough of them; otherwise the threads share
  // each band's lowering and gemm (the pool makes that cheap), with the whole budget.
  const bool per_thread = nt > 1 && images >= nt;
  const std::size_t band = band_rows(p, per_thread ? kColBudgetBytes / nt : kColBudgetBytes);
  const std::size_t bands = (p.oh + band - 1) / band;
  const std::size_t jobs = images * bands;
  const std::size_t cap = is_pointwise(s) ? 0 : band * p.taps * p.ow;
  const auto run_job = [&](std::size_t j, float* cols, int threads) {
    const std::size_t img = j / bands / s.groups;
    const std::size_t g = j / bands % s.groups;
    const std::size_t oy0 = j % bands * band;
    im2col_band(p, x + img * x_img, w, bias, y + img * y_img, g, oy0, std::min(p.oh, oy0 + band),
                cols, threads);
  };
  if (per_thread) {
    run_parallel(nthreads, [&](int tid, int n_threads) {
      std::unique_ptr<float[]> cols = cap != 0 ? alloc_floats(cap) : nullptr;
      const std::size_t j0 = jobs * static_cast<std::size_t>(tid) / static_cast<std::size_t>(n_threads);
      const std::size_t j1 =
          jobs * static_cast<std::size_t>(tid + 1) / static_cast<std::size_t>(n_threads);
      for (std::size_t j = j0; j < j1 && !interrupt_requested(); ++j) run_job(j, cols.get(), 1);
    });
    return;
  }
  std::unique_ptr<float[]> cols = cap != 0 ? alloc_floats(cap) : nullptr;
  for (std::size_t j = 0; j < jobs && !interrupt_requested(); ++j) {
    run_job(j, cols.get(), nthreads);
  }
}

// ---- direct -----------------------------------------------------------------------------------

// Output channels handled together: each input load feeds this many multiply-adds.
constexpr std::size_t kDirectBlock = 4;
// Weights one register-blocked pass reads (floats), chosen to stay in L1 with room for input.
constexpr std::size_t kWeightChunkFloats = 2048;
// Padded input rows carry this many extra zero columns so that the last, partial vector of
// an output row may read past the row's end.
constexpr std::size_t kRowSlack = 8;

// Always inlined so that the AVX2 build of a task gets AVX2 code for these loops too.
#define FB_INLINE __attribute__((always_inline)) inline

// y_j[i] += w_j · x[i·sx] over n outputs, for 4 and for 1 output rows; restrict lets the
// compiler vectorise over i.
FB_INLINE void axpy4(std::size_t n, std::size_t sx, const float* __restrict x, float w0,
                     float w1, float w2, float w3, float* __restrict y0, float* __restrict y1,
                     float* __restrict y2, float* __restrict y3) {
  if (sx == 1) {
    for (std::size_t i = 0; i < n; ++i) {
      const float v = x[i];
      y0[i] += w0 * v;
      y1[i] += w1 * v;
      y2[i] += w2 * v;
      y3[i] += w3 * v;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const float v = x[i * sx];
      y0[i] += w0 * v;
      y1[i] += w1 * v;
      y2[i] += w2 * v;
      y3[i] += w3 * v;
    }
  }
}

FB_INLINE void axpy1(std::size_t n, std::size_t sx, const float* __restrict x, float w0,
                     float* __restrict y0) {
  if (sx == 1) {
    for (std::size_t i = 0; i < n; ++i) y0[i] += w0 * x[i];
  } else {
    for (std::size_t i = 0; i < n; ++i) y0[i] += w0 * x[i * sx];
  }
}

// What one direct task sees: one image and group, a band of output rows.
struct DirectTask {
  const Plan* p = nullptr;
  const float* x = nullptr;      // the group's first input channel of this image
  const float* w = nullptr;      // the group's first output channel's weights
  const float* wpack = nullptr;  // the group's weights as [block][tap][kDirectBlock], or null
  const float* bias = nullptr;   // the group's first bias, or null
  float* y = nullptr;            // the group's first output plane of this image
  std::size_t oy0 = 0, oy1 = 0;
  const Range* cols = nullptr;   // valid output columns per kx
};

// Output rows of one task for output channels co0..co0+CB−1 (CB = kDirectBlock or 1): rows
// start at the bias, every tap then adds its weight times the shifted input row over the
// columns where it lands inside the image. Any stride, padding and dilation.
template <std::size_t CB>
FB_INLINE void direct_rows(const DirectTask& t, std::size_t co0) {
  const Plan& p = *t.p;
  const Conv2dShape& s = p.s;
  const std::size_t kk = s.kh * s.kw;
  for (std::size_t oy = t.oy0; oy < t.oy1; ++oy) {
    float* yr[CB];
    for (std::size_t j = 0; j < CB; ++j) {
      yr[j] = t.y + (co0 + j) * p.plane_out + oy * p.ow;
      std::fill(yr[j], yr[j] + p.ow, t.bias != nullptr ? t.bias[co0 + j] : 0.0f);
    }
    for (std::size_t ky = 0; ky < s.kh; ++ky) {
      const std::size_t iyp = oy * s.stride_h + ky * s.dil_h;
      if (iyp < s.pad_h || iyp - s.pad_h >= s.h) continue;
      const std::size_t iy = iyp - s.pad_h;
      for (std::size_t kx = 0; kx < s.kw; ++kx) {
        const Range c = t.cols[kx];
        if (c.lo >= c.hi) continue;
        const std::size_t n = c.hi - c.lo;
        const std::size_t xoff = c.lo * s.stride_w + kx * s.dil_w - s.pad_w;
        for (std::size_t ci = 0; ci < p.cin_g; ++ci) {
          const float* xs = t.x + (ci * s.h + iy) * s.w + xoff;
          const std::size_t tap = ci * kk + ky * s.kw + kx;
          if constexpr (CB == kDirectBlock) {
            const float* wt = t.w + co0 * p.taps + tap;
            axpy4(n, s.stride_w, xs, wt[0], wt[p.taps], wt[2 * p.taps], wt[3 * p.taps],
                  yr[0] + c.lo, yr[1] + c.lo, yr[2] + c.lo, yr[3] + c.lo);
          } else {
            axpy1(n, s.stride_w, xs, t.w[co0 * p.taps + tap], yr[0] + c.lo);
          }
        }
      }
    }
  }
}

// A whole task: blocks of output channels, then the leftover channels one at a time.
FB_INLINE void direct_task_body(const DirectTask& t) {
  const std::size_t cout_g = t.p->cout_g;
  std::size_t co = 0;
  for (; co + kDirectBlock <= cout_g; co += kDirectBlock) direct_rows<kDirectBlock>(t, co);
  for (; co < cout_g; ++co) direct_rows<1>(t, co);
}

void direct_task_portable(const DirectTask& t) { direct_task_body(t); }

// Input rows [r0, r0 + rows) of the zero-padded image (padded coordinates), every channel of
// the task's group, each row `pitch` floats: pad_w zeros, the row, zeros to the pitch.
void pad_band(const DirectTask& t, std::size_t r0, std::size_t rows, std::size_t pitch,
              float* dst) {
  const Conv2dShape& s = t.p->s;
  for (std::size_t ci = 0; ci < t.p->cin_g; ++ci) {
    for (std::size_t r = 0; r < rows; ++r, dst += pitch) {
      const std::size_t pr = r0 + r;
      if (pr < s.pad_h || pr - s.pad_h >= s.h) {
        std::fill(dst, dst + pitch, 0.0f);
        continue;
      }
      std::fill(dst, dst + s.pad_w, 0.0f);
      std::memcpy(dst + s.pad_w, t.x + (ci * s.h + pr - s.pad_h) * s.w, s.w * sizeof(float));
      std::fill(dst + s.pad_w + s.w, dst + pitch, 0.0f);
    }
  }
}

// Input rows a stride-1-in-width task reads, and the floats its padded copy takes.
std::size_t band_rows_in(const Plan& p, std::size_t out_rows) {
  return (out_rows - 1) * p.s.stride_h + (p.s.kh - 1) * p.s.dil_h + 1;
}

#if defined(__x86_64__)
// Output columns [ox, ox + 8·V) of row oy for output channels co0..co0+CB−1 from the padded
// band (every tap in bounds, so no edge cases): the accumulators start at the bias, stay in
// registers across all taps and are stored once; columns at or past ow are dropped.
template <std::size_t CB, std::size_t V>
__attribute__((target("avx2,fma"))) FB_INLINE void padded_step(
    const DirectTask& t, const float* band, std::size_t rows, std::size_t pitch,
    const float* wblk, std::size_t co0, std::size_t ci0, std::size_t ci1, std::size_t oy,
    std::size_t ox) {
  const Plan& p = *t.p;
  const Conv2dShape& s = p.s;
  const std::size_t kw = s.kw;
  const std::size_t valid = std::min(8 * V, p.ow - ox);
  float* y0 = t.y + co0 * p.plane_out + oy * p.ow + ox;
  __m256 acc[CB][V];
  for (std::size_t j = 0; j < CB; ++j) {
    if (ci0 == 0) {
      const __m256 b = _mm256_set1_ps(t.bias != nullptr ? t.bias[co0 + j] : 0.0f);
      for (std::size_t v = 0; v < V; ++v) acc[j][v] = b;
    } else if (valid == 8 * V) {
      for (std::size_t v = 0; v < V; ++v) acc[j][v] = _mm256_loadu_ps(y0 + j * p.plane_out + 8 * v);
    } else {
      alignas(32) float tmp[8 * V] = {};
      std::memcpy(tmp, y0 + j * p.plane_out, valid * sizeof(float));
      for (std::size_t v = 0; v < V; ++v) acc[j][v] = _mm256_load_ps(tmp + 8 * v);
    }
  }
  // Named accumulators across the tap loop (an array there is kept in memory by GCC):
  // c<i> holds channel i / V, columns 8·(i % V).
  constexpr std::size_t N = CB * V;
  static_assert(N <= 8, "at most 8 accumulators");
  const __m256 z = _mm256_setzero_ps();
  __m256 c0 = acc[0][0], c1 = N > 1 ? acc[1 / V][1 % V] : z, c2 = N > 2 ? acc[2 / V][2 % V] : z,
         c3 = N > 3 ? acc[3 / V][3 % V] : z, c4 = N > 4 ? acc[4 / V][4 % V] : z,
         c5 = N > 5 ? acc[5 / V][5 % V] : z, c6 = N > 6 ? acc[6 / V][6 % V] : z,
         c7 = N > 7 ? acc[7 / V][7 % V] : z;
  const float* wt = wblk + ci0 * s.kh * kw * CB;
  const float* xc = band + (ci0 * rows + (oy - t.oy0) * s.stride_h) * pitch + ox;
  for (std::size_t ci = ci0; ci < ci1; ++ci, xc += rows * pitch) {
    const float* xr = xc;
    for (std::size_t ky = 0; ky < s.kh; ++ky, wt += kw * CB, xr += s.dil_h * pitch) {
      for (std::size_t kx = 0; kx < kw; ++kx) {
        const float* xk = xr + kx * s.dil_w;
        __m256 xv[V];
        __m256 wv[CB];
        for (std::size_t v = 0; v < V; ++v) xv[v] = _mm256_loadu_ps(xk + 8 * v);
        for (std::size_t j = 0; j < CB; ++j) wv[j] = _mm256_broadcast_ss(wt + kx * CB + j);
        c0 = _mm256_fmadd_ps(wv[0], xv[0], c0);
        if constexpr (N > 1) c1 = _mm256_fmadd_ps(wv[1 / V], xv[1 % V], c1);
        if constexpr (N > 2) c2 = _mm256_fmadd_ps(wv[2 / V], xv[2 % V], c2);
        if constexpr (N > 3) c3 = _mm256_fmadd_ps(wv[3 / V], xv[3 % V], c3);
        if constexpr (N > 4) c4 = _mm256_fmadd_ps(wv[4 / V], xv[4 % V], c4);
        if constexpr (N > 5) c5 = _mm256_fmadd_ps(wv[5 / V], xv[5 % V], c5);
        if constexpr (N > 6) c6 = _mm256_fmadd_ps(wv[6 / V], xv[6 % V], c6);
        if constexpr (N > 7) c7 = _mm256_fmadd_ps(wv[7 / V], xv[7 % V], c7);
      }
    }
  }
  const __m256 named[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
  for (std::size_t i = 0; i < N; ++i) acc[i / V][i % V] = named[i];
  for (std::size_t j = 0; j < CB; ++j) {
    float* yr = y0 + j * p.plane_out;
    if (valid == 8 * V) {
      for (std::size_t v = 0; v < V; ++v) _mm256_storeu_ps(yr + 8 * v, acc[j][v]);
    } else {
      alignas(32) float tmp[8 * V];
      for (std::size_t v = 0; v < V; ++v) _mm256_store_ps(tmp + 8 * v, acc[j][v]);
      std::memcpy(yr, tmp, valid * sizeof(float));
    }
  }
}

// Rows [oy0, oy1) of channels co0..co0+CB−1, NV vectors of 8 columns at a time while whole
// steps fit, then single vectors (the last one partial).
template <std::size_t CB, std::size_t NV>
__attribute__((target("avx2,fma"))) void padded_rows(const DirectTask& t, const float* band,
                                                     std::size_t rows, std::size_t pitch,
                                                     std::size_t co0) {
  const float* wblk = CB == kDirectBlock ? t.wpack + co0 * t.p->taps : t.w + co0 * t.p->taps;
  const std::size_t ow = t.p->ow;
  // Input channels in chunks whose weights stay in L1; partial sums wait in y.
  const std::size_t kk = t.p->s.kh * t.p->s.kw;
  const std::size_t chunk = std::max<std::size_t>(1, kWeightChunkFloats / (CB * kk));
  for (std::size_t ci0 = 0; ci0 < t.p->cin_g; ci0 += chunk) {
    const std::size_t ci1 = std::min(t.p->cin_g, ci0 + chunk);
    for (std::size_t oy = t.oy0; oy < t.oy1; ++oy) {
      std::size_t ox = 0;
      for (; ox + 8 * NV <= ow; ox += 8 * NV) {
        padded_step<CB, NV>(t, band, rows, pitch, wblk, co0, ci0, ci1, oy, ox);
      }
      for (; ox < ow; ox += 8) {
        padded_step<CB, 1>(t, band, rows, pitch, wblk, co0, ci0, ci1, oy, ox);
      }
    }
  }
}

// Stride 1 in width: copy the task's input band zero-padded into `scratch`, then run the
// register-blocked kernel over it.
__attribute__((target("avx2,fma"))) void direct_task_padded_avx2(const DirectTask& t,
                                                                 float* scratch) {
  const Plan& p = *t.p;
  const std::size_t pitch = p.s.w + 2 * p.s.pad_w + kRowSlack;
  const std::size_t rows = band_rows_in(p, t.oy1 - t.oy0);
  pad_band(t, t.oy0 * p.s.stride_h, rows, pitch, scratch);
  std::size_t co = 0;
  for (; co + kDirectBlock <= p.cout_g; co += kDirectBlock) {
    padded_rows<kDirectBlock, 2>(t, scratch, rows, pitch, co);
  }
  for (; co < p.cout_g; ++co) padded_rows<1, 4>(t, scratch, rows, pitch, co);
}

// The portable loops compiled for AVX2/FMA (strides above 1 in width).
__attribute__((target("avx2,fma"))) void direct_task_avx2(const DirectTask& t) {
  direct_task_body(t);
}
#endif

// The widest direct kernels built here; AVX-512 machines run the AVX2 ones (off x86-64,
// best_isa() is portable).
constexpr Isa kWidest = Isa::avx2;

void conv_direct(const Plan& p, const float* x, const float* w, const float* bias, float* y,
                 int nthreads) {
  const Conv2dShape& s = p.s;
  std::unique_ptr<Range[]> cols(new Range[s.kw]);
  for (std::size_t kx = 0; kx < s.kw; ++kx) {
    cols[kx] = valid_range(s.w, p.ow, s.stride_w, s.pad_w, kx * s.dil_w);
  }
  // Tasks: image × group × band of output rows. A band's input rows (all channels of the
  // group) stay in L2 while every output channel sweeps them; more, thinner bands when there
  // are too few tasks to keep every thread busy.
  const std::size_t row_floats = std::max<std::size_t>(1, p.cin_g * s.w * s.stride_h);
  std::size_t band = std::max<std::size_t>(1, std::min(p.oh, kDirectBandFloats / row_floats));
  const std::size_t jobs = s.n * s.groups;
  const std::size_t nt = static_cast<std::size_t>(nthreads);
  if (nt > 1) {
    const std::size_t want = 4 * nt;
    if (jobs * ((p.oh + band - 1) / band) < want) {
      const std::size_t per_job = (want + jobs - 1) / jobs;
      band = std::max<std::size_t>(1, (p.oh + per_job - 1) / per_job);
    }
  }
  const std::size_t bands = (p.oh + band - 1) / band;
  const std::size_t tasks = jobs * bands;

  // Read once: every task of the call runs the path it names.
  const bool avx2 = kernel_isa(kWidest) >= Isa::avx2;
  const bool padded = avx2 && s.stride_w == 1;
  const std::size_t blocks = p.cout_g / kDirectBlock;
  std::unique_ptr<float[]> wpack;
  std::size_t scratch_floats = 0;
  if (padded) {
    // Weights of each block of output channels interleaved by tap, for broadcasts in order.
    if (blocks > 0) {
      wpack = alloc_floats(s.groups * blocks * kDirectBlock * p.taps);
      for (std::size_t g = 0; g < s.groups; ++g) {
        for (std::size_t b = 0; b < blocks; ++b) {
          float* dst = wpack.get() + (g * blocks + b) * kDirectBlock * p.taps;
          const float* src = w + (g * p.cout_g + b * kDirectBlock) * p.taps;
          for (std::size_t tap = 0; tap < p.taps; ++tap) {
            for (std::size_t j = 0; j < kDirectBlock; ++j) {
              dst[tap * kDirectBlock + j] = src[j * p.taps + tap];
            }
          }
        }
      }
    }
    // Size the padded band copy in doubles first: a huge padding must fail as bad_alloc.
    const double need = static_cast<double>(p.cin_g) *
                        static_cast<double>(band_rows_in(p, band)) *
                        (static_cast<double>(s.w) + 2.0 * static_cast<double>(s.pad_w) +
                         static_cast<double>(kRowSlack));
    if (need * sizeof(float) > static_cast<double>(std::numeric_limits<std::size_t>::max() / 2)) {
      throw std::bad_alloc();
    }
    scratch_floats = p.cin_g * band_rows_in(p, band) * (s.w + 2 * s.pad_w + kRowSlack);
  }
  run_parallel(nthreads, [&](int tid, int n_threads) {
    std::unique_ptr<float[]> scratch = padded ? alloc_floats(scratch_floats) : nullptr;
    const std::size_t k0 = tasks * static_cast<std::size_t>(tid) / static_cast<std::size_t>(n_threads);
    const std::size_t k1 =
        tasks * static_cast<std::size_t>(tid + 1) / static_cast<std::size_t>(n_threads);
    for (std::size_t k = k0; k < k1 && !interrupt_requested(); ++k) {
      const std::size_t job = k / bands;
      const std::size_t img = job / s.groups;
      const std::size_t g = job % s.groups;
      DirectTask t;
      t.p = &p;
      t.x = x + (img * s.c_in + g * p.cin_g) * p.plane_in;
      t.w = w + g * p.cout_g * p.taps;
      t.wpack = wpack ? wpack.get() + g * blocks * kDirectBlock * p.taps : nullptr;
      t.bias = bias != nullptr ? bias + g * p.cout_g : nullptr;
      t.y = y + (img * s.c_out + g * p.cout_g) * p.plane_out;
      t.oy0 = (k % bands) * band;
      t.oy1 = std::min(p.oh, t.oy0 + band);
      t.cols = cols.get();
#if defined(__x86_64__)
      if (padded) {
        direct_task_padded_avx2(t, scratch.get());
        continue;
      }
      if (avx2) {
        direct_task_avx2(t);
        continue;
      }
#endif
      direct_task_portable(t);
    }
  });
}

}  // namespace

std::size_t conv2d_out_h(const Conv2dShape& s) { return check_shape(s).oh; }
std::size_t conv2d_out_w(const Conv2dShape& s) { return check_shape(s).ow; }
void conv2d_check(const Conv2dShape& s) { check_shape(s); }

const char* conv2d_auto_algo(const Conv2dShape& s) {
  const Plan p = make_plan(s);
  // Measured at batch 1 on 2 cores (benchmarks/conv_vs_numpy.py): depthwise 3×3 (9 taps)
  // runs 8-12x faster direct; 64 channels 3×3 (576 taps) about even; the 7×7 stem (147
  // taps) and wider layers faster through im2col.
  return p.taps < kDirectMaxTaps ? "direct" : "im2col";
}

void conv2d(const Conv2dShape& s, const float* x, const float* w, const float* bias, float* y,
            const std::string& algo, int threads) {
  if (algo != "direct" && algo != "im2col" && algo != "auto") {
    fail("unknown algo '" + algo + "', expected one of: auto, im2col, direct");
  }
  const Plan p = make_plan(s);
  const bool direct = algo == "direct" || (algo == "auto" && p.taps < kDirectMaxTaps);
  if (x == nullptr || w == nullptr || y == nullptr) {
    fail(std::string("null pointer for a non-empty tensor (") +
         (x == nullptr ? "x" : w == nullptr ? "weight" : "y") + ")");
  }
  int nthreads = resolve_threads(threads, "conv2d");
  // Multiply-adds, saturated: only compared against a small threshold.
  const std::size_t outputs = s.n * s.c_out * p.plane_out;
  const bool small = outputs < kMinParallelWork && outputs * p.taps < kMinParallelWork &&
                     p.taps < kMinParallelWork;
  if (small) nthreads = 1;
  try {
    if (direct) {
      conv_direct(p, x, w, bias, y, nthreads);
    } else {
      conv_im2col(p, x, w, bias, y, nthreads);
    }
  } catch (const Interrupted&) {
    // The im2col path's GEMM saw the interrupt first; the caller asked for a conv2d.
    throw Interrupted("[conv2d] interrupted");
  }
  throw_if_interrupted("conv2d");
}

double conv2d_flops(const Conv2dShape& s, bool bias) {
  const Dims d = check_shape(s);
  const double outputs = static_cast<double>(s.n) * static_cast<double>(s.c_out) *
                         static_cast<double>(d.oh) * static_cast<double>(d.ow);
  const double taps = static_cast<double>(s.c_in / s.groups) * static_cast<double>(s.kh) *
                      static_cast<double>(s.kw);
  return 2.0 * outputs * taps + (bias ? outputs : 0.0);
}

const char* conv2d_isa() { return isa_name(kernel_isa(kWidest)); }

}  // namespace fastbench
