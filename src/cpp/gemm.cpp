// gemm.cpp — see gemm.hpp. Owns the Goto/BLIS-style driver (B panels kc×nc and A blocks
// mc×kc packed into aligned buffers, an mr×nr register-tile micro-kernel over them), the
// choice of mc/kc/nc from cache_sizes() (cpu.hpp), the AVX-512, AVX2+FMA and portable
// micro-kernels (the ISA from kernel_isa(), isa.hpp), the bf16 GEMM (vdpbf16ps with its own
// pair-interleaved packing, or widening to float32), and the split of C among threads. One
// driver runs the float, double and bf16 products (FloatGemm, Bf16Gemm): each thread owns a
// tile of C and packs its own panels; a thread done early runs row units left in the others'
// tiles (claimed by compare-and-swap), so a call does not wait on one slowed vCPU. A tile of
// few rows on the SIMD kernels streams B a sliver at a time instead (gemm_streamed_b).
#include "gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cpu.hpp"
#include "interrupt.hpp"
#include "isa.hpp"
#include "parallel.hpp"
#include "simd/amx.hpp"
#include "simd/avx2.hpp"
#include "simd/avx512.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#define FASTBENCH_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"
#endif

namespace fastbench {
namespace {

constexpr std::size_t kAlignBytes = 64;
// Below this many multiply-adds (64³) thread start-up costs more than it saves.
constexpr double kMinParallelMacs = 64.0 * 64.0 * 64.0;

std::atomic<bool> g_small_units{false};
std::atomic<bool> g_stream_b{true};
std::atomic<std::uint64_t> g_units_shared{0};

// ---- ablation builds ----------------------------------------------------------------------
// benchmarks/gemm_ablation.py compiles this file into a program of its own with
// FASTBENCH_GEMM_ABLATE set to a mask of parts; the extension and the tests never set it, and
// then every ablated() below is a constant false. Once that program sets g_ablating (after a
// product has filled the packed buffers), the parts in the mask are skipped, so that the
// products after it time the rest: their results are wrong by design.
#ifndef FASTBENCH_GEMM_ABLATE
#define FASTBENCH_GEMM_ABLATE 0
#endif
constexpr unsigned kAblatePackA = 1;  // packing A's blocks
constexpr unsigned kAblatePackB = 2;  // packing B's panels
constexpr unsigned kAblateC = 4;      // C: a tile's prefetch and update go to a scratch tile
                                      // (tiles: the sums stay in their buffer)
bool g_ablating = false;

bool ablated(unsigned part) { return (FASTBENCH_GEMM_ABLATE & part) != 0 && g_ablating; }

// With C ablated, points a kernel's tile of C (`c`, rows `ldc` apart) at one register tile
// per thread instead, kept in L1 (rows `nr` apart; the largest tile here is 12×32 floats).
template <class T>
void ablate_c(T*& c, std::size_t& ldc, std::size_t nr) {
  if (!ablated(kAblateC)) return;
  alignas(64) static thread_local T sink[512];
  c = sink;
  ldc = nr;
}

std::size_t round_down(std::size_t x, std::size_t to) { return x / to * to; }
std::size_t round_up(std::size_t x, std::size_t to) { return (x + to - 1) / to * to; }
std::size_t div_up(std::size_t x, std::size_t y) { return (x + y - 1) / y; }

// kc: one B micro-panel (kc×nr) in half of L1 for float64, leaving room for its 48-byte A
// slivers and C; in all of L1 for float32, whose A slivers are half as wide: the longer k
// block halves the passes over C, which measured 3-6% faster at n >= 512 on Zen 3 (kc 512
// against 256, alternating in one process), while float64 gained nothing from it. The zmm
// kernels' micro-panels are two to three times wider (nr 32 floats, 24 doubles): the same
// rule would cut kc to 128-256, and kc 512 measured 4-10% faster than 256 for both dtypes
// (Zen 4, n = 1024, alternating in one process), so their micro-panel may fill twice L1
// (`l1_panels` 2), streaming from L2 as BLIS's Zen 4 blocking (KC 512) does; so may
// YmmVlKernel's (16 doubles): for a 4×16 form of it, kc 512 and an A block of a quarter of L2
// measured best of five blockings (kc 256-512, 64-128 rows) at 2048³ (one thread, Zen 4).
// mc: the packed A block (mc×kc) in about half of L2; in a quarter where the micro-panel
// streams from L2 beside it (`l1_panels` 2: 64 KiB float32, 96 KiB float64 at kc 512). Against
// half, one thread, alternating in one process, a Golden Cove-class Xeon (2 MiB L2: 128 rows
// float64, 252 float32): float64 1.06x at 1024^3, 1.08x at 2048^3, 1.05x at 512^3, 1.07x at
// 4096×64×4096 (1.07x at 2048^3 on two threads); float32 1.00-1.04x, 0.99x at 1024^3 on two
// threads. nc: the B panel (kc×nc) in a quarter of L3, which is shared with the other cores'
// panels.
GemmBlocking blocking_for(std::size_t elem_bytes, std::size_t mr, std::size_t nr,
                          std::size_t l1_panels = 1) {
  const CacheSizes& cs = cache_sizes();
  GemmBlocking b;
  b.mr = mr;
  b.nr = nr;
  const std::size_t l1_for_b =
      l1_panels * (elem_bytes == 4 || l1_panels > 1 ? cs.l1d_bytes : cs.l1d_bytes / 2);
  b.kc = std::clamp<std::size_t>(round_down(l1_for_b / (nr * elem_bytes), 8), 64, 512);
  const std::size_t l2_for_a = cs.l2_bytes / (l1_panels > 1 ? 4 : 2);
  b.mc = std::clamp<std::size_t>(round_down(l2_for_a / (b.kc * elem_bytes), mr), mr * 4,
                                 mr * 128);
  b.nc = std::clamp<std::size_t>(round_down(cs.l3_bytes / 4 / (b.kc * elem_bytes), nr), nr * 16,
                                 round_down(4096, b.nr));
  return b;
}

// ---- aligned buffers ----------------------------------------------------------------------

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <class T>
std::unique_ptr<T[], FreeDeleter> aligned_buffer(std::size_t count) {
  const std::size_t bytes = round_up(std::max<std::size_t>(count, 1) * sizeof(T), kAlignBytes);
  void* p = std::aligned_alloc(kAlignBytes, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

enum class Packed { a, b };

// What releases a packing buffer: free(), or nothing where an ablation build keeps it.
struct KeepDeleter {
  void operator()(void*) const {}
};
template <class T>
using PackingBuffer =
    std::unique_ptr<T[], std::conditional_t<FASTBENCH_GEMM_ABLATE == 0, FreeDeleter, KeepDeleter>>;

// A buffer for packed A or B of one product. Ablation builds keep each thread's from one
// product to the next, so that a skipped packing leaves the values an earlier product packed
// in the same memory: a fresh buffer never written reads the kernel's zero page, all of it
// one physical page in L1, which would flatter the products left.
template <class T>
PackingBuffer<T> packing_buffer(std::size_t count, [[maybe_unused]] Packed which) {
  if constexpr (FASTBENCH_GEMM_ABLATE == 0) {
    return aligned_buffer<T>(count);
  } else {
    struct Kept {
      std::unique_ptr<T[], FreeDeleter> data;
      std::size_t count = 0;
    };
    static thread_local Kept kept[2];
    Kept& k = kept[static_cast<int>(which)];
    if (k.count < count) {
      k.data = aligned_buffer<T>(count);
      k.count = count;
    }
    return PackingBuffer<T>(k.data.get());
  }
}

// ---- packing ------------------------------------------------------------------------------

#if defined(__x86_64__)
// Full-sliver transposes in SSE2, the x86-64 baseline (no dispatch needed): the MR rows side
// by side, one register of p values at a time (two doubles, four floats), into p-major order.
// Rows go in pairs (double, and the two float rows left over past a group of four) or in
// groups of four (float, a 4×4 transpose). Each writes out[(p+q)·MR + i] = src[i][p+q].
template <std::size_t MR>
void transpose_p_block(const double* const* src, std::size_t p, double* out) {
  for (std::size_t i = 0; i < MR; i += 2) {
    const __m128d x = _mm_loadu_pd(src[i] + p);
    const __m128d y = _mm_loadu_pd(src[i + 1] + p);
    _mm_storeu_pd(out + p * MR + i, _mm_unpacklo_pd(x, y));
    _mm_storeu_pd(out + (p + 1) * MR + i, _mm_unpackhi_pd(x, y));
  }
}

template <std::size_t MR>
void transpose_p_block(const float* const* src, std::size_t p, float* out) {
  std::size_t i = 0;
  for (; i + 4 <= MR; i += 4) {
    __m128 r0 = _mm_loadu_ps(src[i] + p), r1 = _mm_loadu_ps(src[i + 1] + p);
    __m128 r2 = _mm_loadu_ps(src[i + 2] + p), r3 = _mm_loadu_ps(src[i + 3] + p);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(out + p * MR + i, r0);
    _mm_storeu_ps(out + (p + 1) * MR + i, r1);
    _mm_storeu_ps(out + (p + 2) * MR + i, r2);
    _mm_storeu_ps(out + (p + 3) * MR + i, r3);
  }
  for (; i < MR; i += 2) {
    const __m128 x = _mm_loadu_ps(src[i] + p), y = _mm_loadu_ps(src[i + 1] + p);
    const __m128 lo = _mm_unpacklo_ps(x, y), hi = _mm_unpackhi_ps(x, y);
    _mm_storel_pi(reinterpret_cast<__m64*>(out + p * MR + i), lo);
    _mm_storeh_pi(reinterpret_cast<__m64*>(out + (p + 1) * MR + i), lo);
    _mm_storel_pi(reinterpret_cast<__m64*>(out + (p + 2) * MR + i), hi);
    _mm_storeh_pi(reinterpret_cast<__m64*>(out + (p + 3) * MR + i), hi);
  }
}
#endif

#if defined(__x86_64__)
// Tables of transpose6_words: for output register j (words 16j..16j+15 of a block of 16
// values of 6 rows) the index of lane l into a row, w / 6 for its word w = 16j + l, and per
// row i the lanes whose word comes from row i (w % 6 == i).
struct Transpose6Tables {
  alignas(64) std::uint32_t index[6][16] = {};
  std::uint16_t lanes[6][6] = {};
  constexpr Transpose6Tables() {
    for (std::size_t j = 0; j < 6; ++j) {
      for (std::size_t l = 0; l < 16; ++l) {
        const std::size_t w = 16 * j + l;
        index[j][l] = static_cast<std::uint32_t>(w / 6);
        lanes[j][w % 6] = static_cast<std::uint16_t>(lanes[j][w % 6] | (1u << l));
      }
    }
  }
};
constexpr Transpose6Tables kTranspose6{};

// 32-bit values [0, n) of 6 rows into p-major order, out[p·6 + i] = src[i][p], 16 values of p
// at a time in zmm registers: six loads, 36 merge-masked vpermd and six stores per 96 values,
// where the SSE2 transposes make 24 loads, 40 shuffles and 32 stores. Returns the first p not
// written. Packs A for the 6-row kernels (float32 on the AVX2 kernel, bf16 pairs as 32-bit
// words) where AVX-512 is allowed: against the SSE2 transposes alone, bf16 4096×64×4096 ran
// at 77% of the peak instead of 70% and 1024^3 one point higher; float32 1.01x on
// 4096×64×4096 and within noise at 256-2048 (one thread, Zen 4, the products of
// benchmarks/gemm_ablation.py's harness, one process per side, two of each).
template <class T>
__attribute__((target(FASTBENCH_AVX512_TARGET))) std::size_t transpose6_words(
    std::size_t n, const T* const* src, T* out) {
  static_assert(sizeof(T) == 4, "32-bit values");
  std::size_t p = 0;
  for (; p + 16 <= n; p += 16) {
    __m512i r[6];
#pragma GCC unroll 6
    for (std::size_t i = 0; i < 6; ++i) r[i] = _mm512_loadu_si512(src[i] + p);
#pragma GCC unroll 6
    for (std::size_t j = 0; j < 6; ++j) {
      const __m512i index = _mm512_load_si512(kTranspose6.index[j]);
      __m512i o = _mm512_setzero_si512();
#pragma GCC unroll 6
      for (std::size_t i = 0; i < 6; ++i) {
        o = _mm512_mask_permutexvar_epi32(o, kTranspose6.lanes[j][i], index, r[i]);
      }
      _mm512_storeu_si512(out + p * 6 + 16 * j, o);
    }
  }
  return p;
}
#endif

// Whether a packing call may use transpose6_words: AVX-512 is allowed now. Read once per
// packing call, as a kernel reads its ISA once per call.
bool zmm_transposes() { return kernel_isa(Isa::avx512) >= Isa::avx512; }

// Values [0, kc) of MR full rows into p-major order; returns the first p not written, left to
// the scalar loop (all of them where no SIMD transpose fits). `zmm`: zmm_transposes().
template <std::size_t MR, class T>
std::size_t pack_full_sliver(std::size_t kc, const T* const* src, T* out,
                             [[maybe_unused]] bool zmm) {
  std::size_t p = 0;
#if defined(__x86_64__)
  if constexpr (MR == 6 && sizeof(T) == 4) {
    if (zmm) p = transpose6_words(kc, src, out);
  }
  if constexpr (MR % 2 == 0) {
    constexpr std::size_t kStep = 16 / sizeof(T);  // values of p in one SSE register
    for (; p + kStep <= kc; p += kStep) transpose_p_block<MR>(src, p, out);
  }
#else
  (void)kc;
  (void)src;
  (void)out;
#endif
  return p;
}

// A block rows [0, mc) × cols [0, kc) into MR-row slivers: sliver s holds, for each p, the MR
// values A[s·MR + i][p] contiguously; rows past mc are zero so the kernel needs no masks.
// The loop runs over p with the sliver's MR rows read side by side and the output written in
// order: against copying row by row into a stride-MR output, 1.2-1.3x faster on GEMMs whose A
// dominates (4096×64×4096) and even elsewhere (alternating runs in one process, Zen 3). Full
// slivers transpose several p at once in SSE registers, or zmm ones (pack_full_sliver).
template <std::size_t MR, class T>
void pack_a(std::size_t mc, std::size_t kc, const T* a, std::size_t lda, T* out) {
  const bool zmm = zmm_transposes();
  for (std::size_t i0 = 0; i0 < mc; i0 += MR) {
    const std::size_t rows = std::min(MR, mc - i0);
    const T* src[MR];
    for (std::size_t i = 0; i < MR; ++i) src[i] = a + (i0 + std::min(i, rows - 1)) * lda;
    if (rows == MR) {
      for (std::size_t p = pack_full_sliver<MR>(kc, src, out, zmm); p < kc; ++p) {
        for (std::size_t i = 0; i < MR; ++i) out[p * MR + i] = src[i][p];
      }
    } else {
      for (std::size_t p = 0; p < kc; ++p) {
        for (std::size_t i = 0; i < MR; ++i) out[p * MR + i] = i < rows ? src[i][p] : T(0);
      }
    }
    out += MR * kc;
  }
}

// B panel rows [0, kc) × nc columns into NR-column slivers: sliver s holds, for each p, the NR
// values of panel columns s·NR + j contiguously, zero-padded past nc. The panel's first
// `lead` columns are zeros (see gemm_owned's column shift) and the rest are B's columns
// [0, nc - lead). B is read in blocks of kRows rows: for each full sliver, its kRows rows are
// copied into kRows consecutive lines of the sliver, from kRows streams of B read along their
// rows (each line once). Against one row at a time scattered into every sliver (a write a
// sliver apart, 32 KiB, each time), 1.15x faster on 64×4096×1024 float32 and 1.11x float64,
// where packing B is most of the gap to the kernel's speed, and no slower on 256³, 1024³ or
// 4096×64×4096 (one thread, alternating processes, Zen 4); reading each sliver down its
// columns (a new row, often a new page, every NR values) was 1.2-1.4x slower than one row at
// a time. A full sliver's row is a fixed-size copy, which the compiler emits as vector moves.
template <std::size_t NR, class T>
void pack_b(std::size_t kc, std::size_t nc, std::size_t lead, const T* b, std::size_t ldb,
            T* out) {
  constexpr std::size_t kRows = 8;
  const std::size_t slivers = (nc + NR - 1) / NR;
  // Slivers [full0, full1) have no lead zeros and no padding; the others are edges.
  const std::size_t full0 = lead > 0 ? 1 : 0;
  const std::size_t full1 = std::max(full0, nc / NR);
  const T* src = b - lead;  // indexed from `lead` on only
  auto edge = [&](std::size_t p, std::size_t s) {
    const std::size_t j0 = s * NR;
    const std::size_t cols = std::min(NR, nc - j0);
    const std::size_t first = s == 0 ? std::min(lead, cols) : 0;
    T* dst = out + s * NR * kc + p * NR;
    for (std::size_t j = 0; j < first; ++j) dst[j] = T(0);
    for (std::size_t j = first; j < cols; ++j) dst[j] = src[p * ldb + j0 + j];
    for (std::size_t j = cols; j < NR; ++j) dst[j] = T(0);
  };
  for (std::size_t p0 = 0; p0 < kc; p0 += kRows) {
    const std::size_t rows = std::min(kRows, kc - p0);
    for (std::size_t s = full0; s < full1; ++s) {
      const T* from = src + p0 * ldb + s * NR;
      T* to = out + s * NR * kc + p0 * NR;
      for (std::size_t p = 0; p < rows; ++p) {
        std::memcpy(to + p * NR, from + p * ldb, NR * sizeof(T));
      }
    }
    for (std::size_t p = p0; p < p0 + rows; ++p) {
      if (full0 == 1) edge(p, 0);
      for (std::size_t s = full1; s < slivers; ++s) edge(p, s);
    }
  }
}

// Rows [r0, r1) of one NR-column sliver of B (`cols` of its columns real, the rest zero)
// into a packed sliver `out` (row p at out + p·NR): the streamed-B path packs a sliver a few
// rows at a time, between the tiles of the sliver before it (gemm_streamed_b).
template <std::size_t NR, class T>
void pack_b_rows(std::size_t r0, std::size_t r1, std::size_t cols, const T* b, std::size_t ldb,
                 T* out) {
  for (std::size_t p = r0; p < r1; ++p) {
    T* dst = out + p * NR;
    const T* src = b + p * ldb;
    if (cols == NR) {
      std::memcpy(dst, src, NR * sizeof(T));
    } else {
      for (std::size_t j = 0; j < cols; ++j) dst[j] = src[j];
      for (std::size_t j = cols; j < NR; ++j) dst[j] = T(0);
    }
  }
}

// Rows of B for a kernel to prefetch into L2 while it runs, spread over its k loop: `rows`
// rows from `at`, `stride` bytes apart, each the kernel's sliver width (kNr values).
struct RowPrefetch {
  const char* at = nullptr;
  std::size_t stride = 0;
  std::size_t rows = 0;
};

#if defined(__x86_64__)
// A kernel's walk through a RowPrefetch over its k loop of kc steps: step() at each step
// prefetches the next row every kc / rows steps (each line of its kRowBytes; a row that
// starts inside a line ends in one more), finish() the rows no step was left for.
template <std::size_t kRowBytes>
class RowPrefetcher {
 public:
  RowPrefetcher(const RowPrefetch& pf, std::size_t kc)
      : row_(pf.at), stride_(pf.stride), left_(pf.rows),
        every_(std::max<std::size_t>(1, kc / std::max<std::size_t>(1, pf.rows))) {}
  __attribute__((always_inline)) void step() {
    if (left_ != 0 && --count_ == 0) {
      count_ = every_;
      fetch();
    }
  }
  void finish() {
    while (left_ != 0) fetch();
  }

 private:
  __attribute__((always_inline)) void fetch() {
#pragma GCC unroll 4
    for (std::size_t o = 0; o < kRowBytes; o += 64) _mm_prefetch(row_ + o, _MM_HINT_T1);
    _mm_prefetch(row_ + kRowBytes - 1, _MM_HINT_T1);
    row_ += stride_;
    --left_;
  }
  const char* row_;
  std::size_t stride_, left_, every_, count_ = 1;
};
#endif

// Writes tile columns [col0, cols) of the rows of an mr×nr tile held in `acc` (row stride nr)
// to C, `c` pointing at the element of tile column col0.
template <class T>
void store_tile(std::size_t rows, std::size_t col0, std::size_t cols, const T* acc,
                std::size_t nr, T alpha, T beta, T* c, std::size_t ldc) {
  for (std::size_t i = 0; i < rows; ++i) {
    T* ci = c + i * ldc - col0;  // indexed from col0 on only
    const T* ai = acc + i * nr;
    if (beta == T(0)) {
      for (std::size_t j = col0; j < cols; ++j) ci[j] = alpha * ai[j];
    } else {
      for (std::size_t j = col0; j < cols; ++j) ci[j] = alpha * ai[j] + beta * ci[j];
    }
  }
}

// ---- micro-kernels ------------------------------------------------------------------------
// A kernel computes the full mr×nr product of one packed A sliver and one packed B sliver
// over kc and updates tile rows [0, rows) × columns [col0, cols) of C with alpha and beta, `c`
// pointing at the element of tile column col0.

// Portable: sized for 16 SSE2 registers (the x86-64 baseline) so the compiler can keep the
// accumulators in registers; other targets get plain, still blocked, loops.
template <class T>
struct PortableKernel {
  static constexpr std::size_t kMr = 4;
  static constexpr std::size_t kNr = sizeof(T) == 4 ? 8 : 4;
  static constexpr std::size_t kL1Panels = 1;
  static constexpr std::size_t kStreamRows = 0;  // no run_prefetching: B is always packed

  static void run(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                  std::size_t ldc, std::size_t rows, std::size_t col0, std::size_t cols) {
    ablate_c(c, ldc, kNr);
    T acc[kMr * kNr] = {};
    for (std::size_t p = 0; p < kc; ++p) {
      for (std::size_t i = 0; i < kMr; ++i) {
        const T ai = pa[p * kMr + i];
        for (std::size_t j = 0; j < kNr; ++j) acc[i * kNr + j] += ai * pb[p * kNr + j];
      }
    }
    store_tile(rows, col0, cols, acc, kNr, alpha, beta, c, ldc);
  }
};

#if defined(__x86_64__)

// 6 rows × two registers of B (6×16 floats, 6×8 doubles): 12 ymm accumulators + 2 for B + 1
// broadcast, two FMAs per B load pair and enough independent chains (12) to cover FMA latency
// on two pipes. A tile of fewer rows (the last sliver of A) runs a copy of the loop compiled
// for its row count, which does only that many rows' FMAs: m = 128 with 6-row tiles would
// otherwise compute 132 rows.
template <class T>
struct Avx2Kernel {
  using V = detail::Avx2<T>;
  using Reg = typename V::Reg;
  static constexpr std::size_t kMr = 6;
  static constexpr std::size_t kLanes = V::kLanes;
  static constexpr std::size_t kNr = 2 * kLanes;
  static constexpr std::size_t kL1Panels = 1;
  // Tiles of at most this many rows stream B (gemm_streamed_b): against packing panels,
  // 1.02-1.08x on 64×4096×1024 and 1.2-1.35x on 16×4096×1024, but 0.92-0.96x float64 at 96
  // and 128 rows (one thread, alternating processes, a Golden Cove-class Xeon capped to AVX2).
  static constexpr std::size_t kStreamRows = 64;

  static void run(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                  std::size_t ldc, std::size_t rows, std::size_t col0, std::size_t cols) {
    dispatch<false>(kc, pa, pb, alpha, beta, c, ldc, rows, col0, cols, nullptr);
  }
  // run, prefetching `pf`'s rows of B into L2 over the k loop.
  static void run_prefetching(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                              std::size_t ldc, std::size_t rows, std::size_t col0,
                              std::size_t cols, const RowPrefetch& pf) {
    if (pf.rows == 0) return run(kc, pa, pb, alpha, beta, c, ldc, rows, col0, cols);
    dispatch<true>(kc, pa, pb, alpha, beta, c, ldc, rows, col0, cols, &pf);
  }
  template <bool kPrefetch>
  static void dispatch(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                       std::size_t ldc, std::size_t rows, std::size_t col0, std::size_t cols,
                       const RowPrefetch* pf) {
    switch (rows) {
      case 1: return run_rows<1, kPrefetch>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
      case 2: return run_rows<2, kPrefetch>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
      case 3: return run_rows<3, kPrefetch>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
      case 4: return run_rows<4, kPrefetch>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
      case 5: return run_rows<5, kPrefetch>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
      default: return run_rows<6, kPrefetch>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
    }
  }

  // Row I of one step of p, compiled away for rows the tile does not have.
  template <std::size_t I, std::size_t R>
  __attribute__((target("avx2,fma"), always_inline)) static inline void row(const T* pa, Reg b0,
                                                                            Reg b1, Reg& acc0,
                                                                            Reg& acc1) {
    if constexpr (I < R) {
      const Reg a = V::broadcast(pa + I);
      acc0 = V::fma(a, b0, acc0);
      acc1 = V::fma(a, b1, acc1);
    }
  }

  template <std::size_t R, bool kPrefetch>
  __attribute__((target("avx2,fma"))) static void run_rows(std::size_t kc, const T* pa,
                                                           const T* pb, T alpha, T beta, T* c,
                                                           std::size_t ldc, std::size_t col0,
                                                           std::size_t cols,
                                                           const RowPrefetch* pf) {
    Reg c00 = V::zero(), c01 = V::zero(), c10 = V::zero(), c11 = V::zero();
    Reg c20 = V::zero(), c21 = V::zero(), c30 = V::zero(), c31 = V::zero();
    Reg c40 = V::zero(), c41 = V::zero(), c50 = V::zero(), c51 = V::zero();
    ablate_c(c, ldc, kNr);
    for (std::size_t i = 0; i < R; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    }
    // Unrolled so the loop overhead hides between the FMAs; the accumulators are named
    // variables (not an array) so that they stay in registers.
    [[maybe_unused]] RowPrefetcher<kNr * sizeof(T)> fetch(kPrefetch ? *pf : RowPrefetch{}, kc);
#pragma GCC unroll 4
    for (std::size_t p = 0; p < kc; ++p) {
      if constexpr (kPrefetch) fetch.step();
      const Reg b0 = V::load(pb);
      const Reg b1 = V::load(pb + kLanes);
      row<0, R>(pa, b0, b1, c00, c01);
      row<1, R>(pa, b0, b1, c10, c11);
      row<2, R>(pa, b0, b1, c20, c21);
      row<3, R>(pa, b0, b1, c30, c31);
      row<4, R>(pa, b0, b1, c40, c41);
      row<5, R>(pa, b0, b1, c50, c51);
      pa += kMr;
      pb += kNr;
    }
    if constexpr (kPrefetch) fetch.finish();
    const Reg acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                             {c30, c31}, {c40, c41}, {c50, c51}};
    const Reg va = V::set(alpha);
    if (col0 == 0 && cols == kNr) {
      // Full-width tile: straight from registers, unaligned access to the caller's C.
      if (beta == T(0)) {
        for (std::size_t i = 0; i < R; ++i) {
          V::storeu(c + i * ldc, V::mul(va, acc[i][0]));
          V::storeu(c + i * ldc + kLanes, V::mul(va, acc[i][1]));
        }
      } else {
        const Reg vb = V::set(beta);
        for (std::size_t i = 0; i < R; ++i) {
          T* ci = c + i * ldc;
          V::storeu(ci, V::fma(va, acc[i][0], V::mul(vb, V::loadu(ci))));
          V::storeu(ci + kLanes, V::fma(va, acc[i][1], V::mul(vb, V::loadu(ci + kLanes))));
        }
      }
      return;
    }
    alignas(32) T tile[kMr * kNr];
    for (std::size_t i = 0; i < R; ++i) {
      V::store(tile + i * kNr, acc[i][0]);
      V::store(tile + i * kNr + kLanes, acc[i][1]);
    }
    store_tile(R, col0, cols, tile, kNr, alpha, beta, c, ldc);
  }
};

// MR rows × NV registers of B, MR·NV = 24 accumulators + NV registers of B + one broadcast
// of A within AVX-512's 32 vector registers: 24 independent chains cover the FMA latency (4
// cycles) on two pipes. With zmm registers (V = Avx512), float32 runs 12×32 (two loads of B
// and 12 broadcasts per 24 FMAs); float64 runs 8×24 (three loads and 8 broadcasts), which
// measured 8-15% faster than 12×16 for float64 and 5-8% slower for float32 (Zen 4, n = 1024,
// alternating in one process). V = Avx2 runs the same loop in ymm registers, which AVX-512VL
// also numbers 0-31: YmmVlKernel. Rows are specialised as in Avx2Kernel (dispatch<>).
template <class T, std::size_t MR, std::size_t NV, class Vec = detail::Avx512<T>>
struct Avx512Kernel {
  using V = Vec;
  using Reg = typename V::Reg;
  static constexpr std::size_t kMr = MR;
  static constexpr std::size_t kLanes = V::kLanes;
  static constexpr std::size_t kNr = NV * kLanes;
  static constexpr std::size_t kL1Panels = 2;
  // Tiles of at most this many rows stream B (gemm_streamed_b): against packing panels,
  // 1.10-1.19x on float64 16-128×4096×1024 and 1.02-1.09x on float32, even at 192 rows, but
  // 0.92-0.98x on float32 256³ and 257×511×129 (one thread, alternating processes, a Golden
  // Cove-class Xeon). Each packed value of B serves more tiles as rows grow, so packing a
  // panel first costs less; a zmm tile does twice a ymm tile's work per value of B, so the
  // threshold sits higher than Avx2Kernel's.
  static constexpr std::size_t kStreamRows = 128;

  static void run(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                  std::size_t ldc, std::size_t rows, std::size_t col0, std::size_t cols) {
    dispatch<1>(rows, kc, pa, pb, alpha, beta, c, ldc, col0, cols, nullptr);
  }
  // run, prefetching `pf`'s rows of B into L2 over the k loop.
  static void run_prefetching(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                              std::size_t ldc, std::size_t rows, std::size_t col0,
                              std::size_t cols, const RowPrefetch& pf) {
    dispatch<1>(rows, kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf.rows > 0 ? &pf : nullptr);
  }

  // run_rows<rows>, found by recursion over the row counts 1..MR.
  template <std::size_t R>
  static void dispatch(std::size_t rows, std::size_t kc, const T* pa, const T* pb, T alpha,
                       T beta, T* c, std::size_t ldc, std::size_t col0, std::size_t cols,
                       const RowPrefetch* pf) {
    if constexpr (R < MR) {
      if (rows != R) {
        return dispatch<R + 1>(rows, kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
      }
    }
    run_rows<R>(kc, pa, pb, alpha, beta, c, ldc, col0, cols, pf);
  }

  // The k loop alone, its accumulators written to `tile` (R rows of kNr): kept apart from
  // the update of C, whose alpha and beta would otherwise stay live in registers across the
  // loop. In one function, GCC 12 ran out of the 32 zmm registers for 8×24 float64 and
  // reloaded a register of B from the stack for every FMA that used it: 82 against 117
  // GFLOP/s with the loop alone (one core, 12-cycle-per-step peak 119, a Golden Cove-class
  // Xeon). With kPrefetch, `pf`'s rows are prefetched over the loop (RowPrefetcher).
  template <std::size_t R, bool kPrefetch>
  __attribute__((target(FASTBENCH_AVX512_TARGET), noinline)) static void accumulate(
      std::size_t kc, const T* pa, const T* pb, T* tile, const RowPrefetch* pf) {
    // Indexed only by constants once the loops over rows unroll, so the accumulators stay
    // in registers.
    Reg acc[R][NV];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) acc[i][v] = V::zero();
    }
    [[maybe_unused]] RowPrefetcher<kNr * sizeof(T)> fetch(kPrefetch ? *pf : RowPrefetch{}, kc);
#pragma GCC unroll 2
    for (std::size_t p = 0; p < kc; ++p) {
      if constexpr (kPrefetch) fetch.step();
      Reg b[NV];
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) b[v] = V::load(pb + v * kLanes);
#pragma GCC unroll 16
      for (std::size_t i = 0; i < R; ++i) {
        const Reg a = V::broadcast(pa + i);
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[i][v] = V::fma(a, b[v], acc[i][v]);
      }
      pa += kMr;
      pb += kNr;
    }
    if constexpr (kPrefetch) fetch.finish();
#pragma GCC unroll 16
    for (std::size_t i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) V::store(tile + i * kNr + v * kLanes, acc[i][v]);
    }
  }

  template <std::size_t R>
  __attribute__((target(FASTBENCH_AVX512_TARGET))) static void run_rows(
      std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c, std::size_t ldc,
      std::size_t col0, std::size_t cols, const RowPrefetch* pf) {
    ablate_c(c, ldc, kNr);
    for (std::size_t i = 0; i < R; ++i) {
      for (std::size_t j = 0; j < kNr; j += kAlignBytes / sizeof(T)) {  // a cache line each
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + j), _MM_HINT_T0);
      }
    }
    alignas(64) T tile[kMr * kNr];
    if (pf != nullptr) {
      accumulate<R, true>(kc, pa, pb, tile, pf);
    } else {
      accumulate<R, false>(kc, pa, pb, tile, nullptr);
    }
    if (col0 != 0 || cols != kNr) {
      store_tile(R, col0, cols, tile, kNr, alpha, beta, c, ldc);
      return;
    }
    // Full-width tile: unaligned access to the caller's C.
    const Reg va = V::set(alpha);
    if (beta == T(0)) {
      for (std::size_t i = 0; i < R; ++i) {
        for (std::size_t v = 0; v < NV; ++v) {
          V::storeu(c + i * ldc + v * kLanes, V::mul(va, V::load(tile + i * kNr + v * kLanes)));
        }
      }
    } else {
      const Reg vb = V::set(beta);
      for (std::size_t i = 0; i < R; ++i) {
        for (std::size_t v = 0; v < NV; ++v) {
          T* ci = c + i * ldc + v * kLanes;
          const Reg sum = V::load(tile + i * kNr + v * kLanes);
          V::storeu(ci, V::fma(va, sum, V::mul(vb, V::loadu(ci))));
        }
      }
    }
  }
};

template <class T>
using ZmmKernel = std::conditional_t<sizeof(T) == 4, Avx512Kernel<float, 12, 2>,
                                     Avx512Kernel<double, 8, 3>>;

// float64 where AVX-512 runs but zmm kernels do not pay (Zen 4, see zmm_kernels_pay): a 6×16
// tile in ymm registers, 24 accumulators that the AVX2 kernel's 16 registers cannot hold
// (it runs 6×8). Against that kernel, with numpy's OpenBLAS timed beside each in one program
// (benchmarks/gemm_ablation.py's harness, one thread, a 2-vCPU Zen 4 guest): 1.01-1.03x at
// 2048³ and 256³, 1.09x on 64×4096×1024 and 1.11x on 4096×64×4096, 0.98-1.00x at 512³ and
// 1024³; on two threads, each timed against numpy in its own run, 1.00-1.08x (and 1.23x at
// 256³, in a wide interval). Half a load per FMA where the AVX2 kernel makes two thirds, and on C's rows of 16
// KiB at n = 2048, which all fall on one L1 set, two lines a row instead of one. float32
// stays on the AVX2 kernel there: 6×32 and 4×32 measured 1-5% slower on five of the eight
// benchmark shapes and faster on 64×4096×1024 alone.
template <class T>
using YmmVlKernel = Avx512Kernel<T, 6, 4, detail::Avx2<T>>;

#endif  // __x86_64__

// The widest micro-kernel built here (off x86-64, best_isa() is portable).
constexpr Isa kWidest = Isa::avx512;

std::atomic<bool> g_zmm_at_half_rate{false};
std::atomic<bool> g_ymm_tiles{false};

// Whether the zmm kernels run where AVX-512 is allowed. Zen 4 (AMD family 0x19 with
// AVX-512) executes a 512-bit FMA as two 256-bit halves on its two FMA pipes (AMD's Zen 4
// optimization guide, 2.11; Agner Fog's microarchitecture manual, Zen 4): its zmm peak is
// its ymm peak (117 GFLOP/s float32 per core for both, measured), and there the 6×16 ymm
// kernel measured 3-13% faster than the zmm ones when chosen (n = 1024, both dtypes), so
// Zen 4 runs it unless a test asks for the zmm kernels (detail::gemm_zmm_at_half_rate).
// With the kernels as they are now the two widths are at parity there: zmm over ymm
// 0.96-1.07 across 1-2 threads, both dtypes, n = 512-2048, each side ahead in 3 of the 12
// cases (`python benchmarks/gemm_widths.py` on a 2-vCPU Zen 4 guest).
bool zmm_kernels_pay() {
  if (g_ymm_tiles.load(std::memory_order_relaxed)) return false;
  return g_zmm_at_half_rate.load(std::memory_order_relaxed) || !zmm_fma_split();
}

// The micro-kernels gemm can run: those of one ISA, and on the AVX-512 path the zmm ones or,
// where they do not pay, float64's YmmVlKernel (float32 then runs the AVX2 kernel).
enum class Tiles { portable, avx2, ymm_vl, zmm };

// The kernel gemm<T> runs now: kernel_isa(), and on the AVX-512 path whether zmm pays.
template <class T>
Tiles gemm_tiles() {
  const Isa isa = kernel_isa(kWidest);
  if (isa >= Isa::avx512) {
    if (zmm_kernels_pay()) return Tiles::zmm;
    return std::is_same_v<T, double> ? Tiles::ymm_vl : Tiles::avx2;
  }
  return isa >= Isa::avx2 ? Tiles::avx2 : Tiles::portable;
}

// The ISA the kernel needs: YmmVlKernel's registers 16-31 and EVEX encodings are AVX-512VL.
Isa tiles_isa(Tiles t) {
  switch (t) {
    case Tiles::zmm:
    case Tiles::ymm_vl: return Isa::avx512;
    case Tiles::avx2: return Isa::avx2;
    case Tiles::portable: break;
  }
  return Isa::portable;
}

// ---- driver -------------------------------------------------------------------------------

// Splits `total` into `parts` near-equal pieces of whole `unit`s; returns the pieces'
// boundaries for piece `idx` as [begin, end).
void split_range(std::size_t total, std::size_t unit, std::size_t parts, std::size_t idx,
                 std::size_t* begin, std::size_t* end) {
  const std::size_t units = div_up(total, unit);
  const std::size_t lo = units * idx / parts;
  const std::size_t hi = units * (idx + 1) / parts;
  *begin = std::min(total, lo * unit);
  *end = std::min(total, hi * unit);
}

// Balances a loop of `total` over blocks of at most `max_block`: equal blocks rounded up to
// `unit`, so k = 300 with kc = 256 runs 2 × 152 rather than 256 + 44.
std::size_t balanced_block(std::size_t total, std::size_t max_block, std::size_t unit) {
  const std::size_t blocks = div_up(total, max_block);
  return std::min(max_block, round_up(div_up(total, blocks), unit));
}

// Columns to shift C's tiles by so that they start on cache lines: the kernel's unaligned
// loads and stores of C then never straddle two lines. Possible when every row of C starts
// at the same offset in a line (ldc a whole number of lines); numpy's large arrays start 16
// bytes into one. Aligned tiles measured 6-7% faster for float64 and 3-6% for float32 at
// n = 2048 (same output array at both offsets, alternating in one process, Zen 4). The shifted
// columns are computed too, so where they add a sliver (n + shift past a multiple of nr) the
// shift is taken only on tiles of at least kMinShiftSlivers slivers, where that costs at most
// 3%: an added sliver made 4096×64×4096 float32 (4 slivers) 1.2x slower and 256³ (16) 4%.
constexpr std::size_t kMinShiftSlivers = 32;

template <class T>
std::size_t column_shift(const T* c, std::size_t ldc, std::size_t n, std::size_t nr) {
  const std::size_t line = kAlignBytes / sizeof(T);
  const std::size_t into = reinterpret_cast<std::uintptr_t>(c) % kAlignBytes;
  if (into % sizeof(T) != 0 || ldc % line != 0 || n <= nr || nr % line != 0) return 0;
  const std::size_t shift = into / sizeof(T);
  const std::size_t slivers = div_up(n, nr);
  if (div_up(n + shift, nr) > slivers && slivers < kMinShiftSlivers) return 0;
  return shift;
}

// ---- work sharing between threads ---------------------------------------------------------
// Each thread owns a tile of C and runs the Goto loop nest on it with its own packed panels,
// as a serial GEMM would. Its work comes in epochs, one per (jc, pc) B panel, each cut into
// row units of A; the owner claims units one at a time, and a thread that has finished its
// own tile claims the units left in the others' current epochs (packing their A rows itself,
// reading their packed B). On a shared VM one vCPU is often slowed for milliseconds; without
// this, a call waits for its slowest thread (2-thread calls measured 3-6% slower than their
// threads' mean busy time at n = 512-1024 on Zen 4).

// An epoch as the owner published it. Fields are written only while no unit of the previous
// epoch is claimed and unfinished, and read by a thief only after it claimed a unit: a
// successful claim orders the read after the write.
template <class P>
struct Epoch {
  using In = typename P::In;
  using Out = typename P::Out;
  const In* a = nullptr;  // A at the tile's first row and the epoch's first k column
  std::size_t lda = 0;
  const typename P::PackedB* packed_b = nullptr;
  std::size_t kc = 0, nc = 0, lead = 0;
  Out* c = nullptr;       // C at the tile's first row and the panel's first real column
  std::size_t ldc = 0;
  std::size_t m = 0, mu = 0;  // tile rows; rows per unit
  Out alpha = Out(0), beta = Out(0);
  bool stream_c = false;  // a block kernel writes C with streaming stores (gemm_with)
};

// The claim word: the epoch's serial number, its unit count and the next unclaimed unit, so
// one compare-and-swap checks all three, and two flags: the owner has started (a thread done
// early waits for owners that have, and passes over the others: one may never start, when
// the system refuses a thread) and the owner has finished. A serial that wraps is harmless:
// a claim always takes a unit of the epoch published at that moment.
class ClaimWord {
 public:
  static constexpr int kUnitBits = 24;
  static constexpr std::uint64_t kMaxUnits = (std::uint64_t{1} << kUnitBits) - 1;
  static constexpr std::uint64_t kStarted = std::uint64_t{1} << 62;
  static constexpr std::uint64_t kFinished = std::uint64_t{1} << 63;

  static std::uint64_t make(std::uint64_t serial, std::uint64_t units) {
    return kStarted | ((serial & 0x3fff) << (2 * kUnitBits)) | (units << kUnitBits);
  }
  static std::uint64_t units(std::uint64_t w) { return (w >> kUnitBits) & kMaxUnits; }
  static std::uint64_t next(std::uint64_t w) { return w & kMaxUnits; }
};

template <class P>
struct alignas(64) ShareSlot {
  std::atomic<std::uint64_t> word{0};  // not started: no flags, no units
  std::atomic<std::uint64_t> done{0};  // units of the current epoch finished
  Epoch<P> epoch;

  // Claims the next unit of the current epoch; false when none is left.
  bool claim(std::uint64_t* unit) {
    std::uint64_t w = word.load(std::memory_order_acquire);
    while ((w & ClaimWord::kFinished) == 0 && ClaimWord::next(w) < ClaimWord::units(w)) {
      if (word.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        *unit = ClaimWord::next(w);
        return true;
      }
    }
    return false;
  }
  // Claims every unit left (they are then not run); returns how many.
  std::uint64_t close() {
    std::uint64_t w = word.load(std::memory_order_acquire);
    while ((w & ClaimWord::kFinished) == 0 && ClaimWord::next(w) < ClaimWord::units(w)) {
      const std::uint64_t left = ClaimWord::units(w) - ClaimWord::next(w);
      if (word.compare_exchange_weak(w, w + left, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        return left;
      }
    }
    return 0;
  }
  // True once the owner has finished, or if it has not started.
  bool finished() const {
    const std::uint64_t w = word.load(std::memory_order_acquire);
    return (w & ClaimWord::kFinished) != 0 || (w & ClaimWord::kStarted) == 0;
  }
};

// One row unit of an epoch: its A rows packed into `packed_a`, then the jr → ir loops against
// the epoch's packed B. Columns are counted from the panel's `lead` zero columns on (see
// gemm_owned's column shift).
template <class P>
void run_unit(const Epoch<P>& e, std::size_t unit, typename P::PackedA* packed_a) {
  constexpr std::size_t kMr = P::kMr;
  constexpr std::size_t kNr = P::kNr;
  const std::size_t i0 = unit * e.mu;
  const std::size_t mc = std::min(e.mu, e.m - i0);
  if constexpr (P::kBlockKernel) {  // the policy runs the unit's whole block, A included
    P::block(e.kc, e.nc, mc, e.a + i0 * e.lda, e.lda, packed_a, e.packed_b, e.alpha, e.beta,
             e.stream_c, e.c + i0 * e.ldc, e.ldc);
  } else {
    const std::size_t a_step = P::a_step(e.kc), b_step = P::b_step(e.kc);
    P::pack_a_block(mc, e.kc, e.a + i0 * e.lda, e.lda, packed_a);
    for (std::size_t jr = 0; jr < e.nc; jr += kNr) {
      const std::size_t cols = std::min(kNr, e.nc - jr);
      const std::size_t col0 = jr == 0 ? e.lead : 0;
      const typename P::PackedB* pb = e.packed_b + jr * b_step;
      typename P::Out* cj = e.c + i0 * e.ldc + jr + col0 - e.lead;
      for (std::size_t ir = 0; ir < mc; ir += kMr) {
        const std::size_t rows = std::min(kMr, mc - ir);
        P::tile(e.kc, packed_a + ir * a_step, pb, e.alpha, e.beta, cj + ir * e.ldc, e.ldc,
                rows, col0, cols);
      }
    }
  }
}

// A tile of C of at most P::kStreamMaxRows rows, one unit: the loop nest with pc outside and B
// streamed a sliver at a time, its packing overlapped with the products. The Goto nest packs
// a whole kc×nc panel of B before any product runs on it, and with few rows of A the kernels
// use each packed value only m times: on 64×4096×1024 that packing was a third of the time,
// spent waiting on B's rows from memory or L3 while the FMA units idled (float64, one thread,
// perf record). Here A's rows are packed once per k block; each NR-column sliver of B is
// packed in `tiles` pieces of rows, one after each tile of the sliver before it, and each
// tile's kernel prefetches the rows of B that the piece after it will copy, so those copies
// read L2 (bf16 packs the k pairs holding a piece's rows). Two sliver buffers alternate
// (kc×NR each, in L2 beside A's block).
template <class P>
void gemm_streamed_b(std::size_t m, std::size_t n, std::size_t k, typename P::Out alpha,
                     const typename P::In* a, std::size_t lda, const typename P::In* b,
                     std::size_t ldb, typename P::Out beta, typename P::Out* c,
                     std::size_t ldc, std::size_t kc_max, typename P::PackedA* packed_a) {
  using Out = typename P::Out;
  using In = typename P::In;
  using PackedB = typename P::PackedB;
  constexpr std::size_t kMr = P::kMr;
  constexpr std::size_t kNr = P::kNr;
  const std::size_t slivers = div_up(n, kNr);
  const std::size_t tiles = div_up(m, kMr);
  const std::size_t sliver_values = kNr * P::b_step(kc_max);
  auto buffers = packing_buffer<PackedB>(2 * sliver_values, Packed::b);
  for (std::size_t pc = 0; pc < k; pc += kc_max) {
    const std::size_t kc = std::min(kc_max, k - pc);
    const Out beta_k = pc == 0 ? beta : Out(1);  // later k blocks add to what the first wrote
    const In* bk = b + pc * ldb;
    const std::size_t a_step = P::a_step(kc);
    const std::size_t piece = div_up(kc, tiles);
    P::pack_a_block(m, kc, a + pc, lda, packed_a);
    P::pack_b_rows(0, kc, kc, std::min(kNr, n), bk, ldb, buffers.get());
    for (std::size_t s = 0; s < slivers; ++s) {
      if (interrupt_requested()) return;
      const std::size_t j0 = s * kNr;
      const std::size_t cols = std::min(kNr, n - j0);
      const PackedB* current = buffers.get() + (s % 2) * sliver_values;
      PackedB* next = buffers.get() + ((s + 1) % 2) * sliver_values;
      const bool more = s + 1 < slivers;
      const std::size_t next_cols = more ? std::min(kNr, n - j0 - kNr) : 0;
      const In* next_b = bk + j0 + kNr;
      for (std::size_t t = 0; t < tiles; ++t) {
        const std::size_t r0 = std::min(kc, t * piece);
        const std::size_t r1 = std::min(kc, r0 + piece);
        RowPrefetch pf;
        if (more && r1 > r0) {
          pf = {reinterpret_cast<const char*>(next_b + r0 * ldb), ldb * sizeof(In), r1 - r0};
        }
        P::tile_prefetching(kc, packed_a + t * kMr * a_step, current, alpha, beta_k,
                            c + t * kMr * ldc + j0, ldc, std::min(kMr, m - t * kMr), 0, cols,
                            pf);
        if (more) P::pack_b_rows(r0, r1, kc, next_cols, next_b, ldb, next);
      }
    }
  }
}

// The Goto loop nest on the m×n tile of C that `slot` owns (jc → pc → units of mu rows → jr →
// ir), publishing each (jc, pc) epoch in the slot so that idle threads can share it; returns
// once every unit, its own and any taken, is done. Columns are counted from `shift` columns
// before C's first (column_shift): the first B sliver starts with that many zero columns,
// which are computed and never stored.
template <class P>
void gemm_owned(std::size_t m, std::size_t n, std::size_t k, typename P::Out alpha,
                const typename P::In* a, std::size_t lda, const typename P::In* b,
                std::size_t ldb, typename P::Out beta, typename P::Out* c, std::size_t ldc,
                std::size_t kc_max, std::size_t mu, std::size_t nc_cap, bool stream_c,
                typename P::PackedA* packed_a, ShareSlot<P>& slot) {
  using Out = typename P::Out;
  constexpr std::size_t kNr = P::kNr;
  if constexpr (P::kStreamMaxRows > 0) {
    if (m <= std::min(mu, P::kStreamMaxRows) && div_up(n, kNr) >= P::kStreamMinSlivers &&
        g_stream_b.load(std::memory_order_relaxed)) {
      gemm_streamed_b<P>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, kc_max, packed_a);
      return;
    }
  }
  const std::size_t shift = P::kShiftColumns ? column_shift(c, ldc, n, kNr) : 0;
  const std::size_t nv = n + shift;  // columns counted from the shifted start
  const std::size_t nc_max = balanced_block(nv, nc_cap, kNr);
  auto packed_b = packing_buffer<typename P::PackedB>(round_up(nc_max, kNr) * P::b_step(kc_max),
                                                     Packed::b);
  const std::uint64_t units = div_up(m, mu);
  std::uint64_t serial = 0;
  Epoch<P>& e = slot.epoch;
  for (std::size_t jc = 0; jc < nv; jc += nc_max) {
    const std::size_t nc = std::min(nc_max, nv - jc);
    const std::size_t lead = jc == 0 ? shift : 0;  // zero columns at the panel's start
    const std::size_t col = jc + lead - shift;     // C's column of the panel's first real one
    for (std::size_t pc = 0; pc < k; pc += kc_max) {
      const std::size_t kc = std::min(kc_max, k - pc);
      P::pack_b_panel(kc, nc, lead, b + pc * ldb + col, ldb, packed_b.get());
      // Later k blocks accumulate onto what the first one wrote.
      e = Epoch<P>{a + pc, lda, packed_b.get(), kc, nc, lead, c + col, ldc, m, mu, alpha,
                   pc == 0 ? beta : Out(1), stream_c};
      slot.done.store(0, std::memory_order_relaxed);
      slot.word.store(ClaimWord::make(++serial, units), std::memory_order_release);
      std::uint64_t unit = 0, mine = 0;
      bool stopped = false;
      for (;;) {
        if (interrupt_requested()) {  // what is left is claimed and not run
          mine += slot.close();
          stopped = true;
          break;
        }
        if (!slot.claim(&unit)) break;
        run_unit<P>(e, unit, packed_a);
        ++mine;
      }
      // Units taken by other threads must be done before the panel is re-packed (or freed).
      const std::uint64_t want = units - mine;
      for (int spins = 0; slot.done.load(std::memory_order_acquire) != want;) {
        spin_wait_step(&spins);
      }
      if (stopped) return;
    }
  }
}

// After its own tile: units of the other threads' current epochs until every owner that has
// started is done.
template <class P>
void help_others(std::size_t self, std::size_t nt, ShareSlot<P>* slots,
                 typename P::PackedA* packed_a) {
  for (std::size_t step = 1; step < nt; ++step) {
    ShareSlot<P>& victim = slots[(self + step) % nt];
    std::uint64_t unit = 0;
    for (int spins = 0; !victim.finished();) {
      if (interrupt_requested()) return;  // the owners close their epochs themselves
      if (victim.claim(&unit)) {
        run_unit<P>(victim.epoch, unit, packed_a);
        victim.done.fetch_add(1, std::memory_order_release);
        g_units_shared.fetch_add(1, std::memory_order_relaxed);
        spins = 0;
      } else {
        spin_wait_step(&spins);  // the owner is packing its next panel or finishing its units
      }
    }
  }
}

template <class T>
void scale_c(std::size_t m, std::size_t n, T beta, T* c, std::size_t ldc) {
  for (std::size_t i = 0; i < m; ++i) {
    T* ci = c + i * ldc;
    if (beta == T(0)) {
      std::fill(ci, ci + n, T(0));
    } else if (beta != T(1)) {
      for (std::size_t j = 0; j < n; ++j) ci[j] *= beta;
    }
  }
}

template <class T, class C>
void check(std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda, const T* b,
           std::size_t ldb, const C* c, std::size_t ldc, const char* who = "gemm") {
  const std::string tag = std::string("[") + who + "] ";
  if (lda < k || ldb < n || ldc < n) {
    throw std::invalid_argument(tag + "leading dimensions lda=" + std::to_string(lda) +
                                ", ldb=" + std::to_string(ldb) + ", ldc=" + std::to_string(ldc) +
                                " below the row lengths; expected lda >= k=" + std::to_string(k) +
                                ", ldb >= n=" + std::to_string(n) + ", ldc >= n");
  }
  if (m == 0 || n == 0) return;  // C is empty: nothing is read or written
  if (k > 0 && a == nullptr) {
    throw std::invalid_argument(tag + "a is null for a non-empty " + std::to_string(m) + "x" +
                                std::to_string(k) + " A; expected a valid pointer");
  }
  if (k > 0 && b == nullptr) {
    throw std::invalid_argument(tag + "b is null for a non-empty " + std::to_string(k) + "x" +
                                std::to_string(n) + " B; expected a valid pointer");
  }
  if (c == nullptr) {
    throw std::invalid_argument(tag + "c is null for a non-empty " + std::to_string(m) + "x" +
                                std::to_string(n) + " C; expected a valid pointer");
  }
}

// Whether the elements of a rows×cols row-major operand (leading dimension ld) at p and those
// of one at q can share memory: their address ranges meet. Compared as integers, since the
// pointers need not point into one object.
template <class T>
bool ranges_meet(const T* p, std::size_t p_rows, std::size_t p_cols, std::size_t p_ld,
                 const T* q, std::size_t q_rows, std::size_t q_cols, std::size_t q_ld) {
  const auto p0 = reinterpret_cast<std::uintptr_t>(p);
  const auto q0 = reinterpret_cast<std::uintptr_t>(q);
  const std::uintptr_t p1 = p0 + ((p_rows - 1) * p_ld + p_cols) * sizeof(T);
  const std::uintptr_t q1 = q0 + ((q_rows - 1) * q_ld + q_cols) * sizeof(T);
  return p0 < q1 && q0 < p1;
}

// C is written block by block while A and B are still read, so an output that shares memory
// with an input gives wrong numbers (a relative error of 46 for c == a at 200×200).
template <class T>
void check_no_overlap(std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda,
                      const T* b, std::size_t ldb, const T* c, std::size_t ldc) {
  const char* input = ranges_meet(c, m, n, ldc, a, m, k, lda)   ? "a"
                      : ranges_meet(c, m, n, ldc, b, k, n, ldb) ? "b"
                                                                : nullptr;
  if (input != nullptr) {
    throw std::invalid_argument(std::string("[gemm] c shares memory with ") + input +
                                ", which it would overwrite while it is read; expected an "
                                "output apart from both inputs (copy the input first)");
  }
}

// Rows per claimable unit of an m_tile × n_tile tile: the A block mc, made smaller when the
// tile's epochs (k blocks) would hold fewer than kMinUnits units in all, so that a thread done
// early finds work of a useful size left in the others' tiles. Every unit streams the whole
// packed B panel through the core, so a unit keeps at least kMinUnitMacs multiply-adds (tens
// of microseconds), and at least 8 slivers where the panel is larger than half of L2.
std::size_t unit_rows(std::size_t m_tile, std::size_t n_tile, std::size_t k, std::size_t kc_max,
                      std::size_t nc_max, std::size_t nt, std::size_t mc, std::size_t mr,
                      std::size_t elem_bytes) {
  constexpr std::size_t kMinUnits = 16;
  constexpr std::size_t kMinUnitMacs = std::size_t{1} << 21;
  std::size_t cap = mc;
  if (nt > 1) {
    const std::size_t epochs = div_up(k, kc_max);
    const std::size_t per_epoch = div_up(kMinUnits, epochs);
    const std::size_t row_macs = std::min(n_tile, nc_max) * std::min(k, kc_max);
    std::size_t floor_rows = round_up(div_up(kMinUnitMacs, row_macs), mr);
    if (row_macs * elem_bytes > cache_sizes().l2_bytes / 2) floor_rows = std::max(floor_rows, 8 * mr);
    if (g_small_units.load(std::memory_order_relaxed)) floor_rows = mr;
    cap = std::clamp(round_up(div_up(m_tile, per_epoch), mr), std::min(mc, floor_rows), mc);
  }
  // The claim word counts units in 24 bits.
  cap = std::max(cap, round_up(div_up(m_tile, ClaimWord::kMaxUnits), mr));
  return balanced_block(m_tile, cap, mr);
}


// The threads of a product: a grid tm × tn of C tiles (tm · tn threads), shaped so the tiles
// are about square (each thread re-packs the panels of the other operand, so square tiles
// pack the least); one thread below kMinParallelMacs, never more threads than register
// tiles, one dimension where no exact grid fits.
struct ThreadGrid {
  std::size_t tm = 1, tn = 1;
};

ThreadGrid thread_grid(std::size_t m, std::size_t n, std::size_t k, std::size_t m_units,
                       std::size_t n_units, int nthreads) {
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  std::size_t nt = macs < kMinParallelMacs ? 1 : static_cast<std::size_t>(nthreads);
  nt = std::max<std::size_t>(1, std::min(nt, m_units * n_units));
  std::size_t tm = 1;
  double best = -1.0;
  for (std::size_t d = 1; d <= nt; ++d) {
    if (nt % d != 0 || d > m_units || nt / d > n_units) continue;
    const double tile_m = static_cast<double>(m) / static_cast<double>(d);
    const double tile_n = static_cast<double>(n) / static_cast<double>(nt / d);
    const double squareness = std::min(tile_m, tile_n) / std::max(tile_m, tile_n);
    if (squareness > best) {
      best = squareness;
      tm = d;
    }
  }
  if (best < 0.0) return {std::min(nt, m_units), 1};  // no exact grid fits: one dimension
  return {tm, nt / tm};
}

// What the driver (gemm_owned, run_unit, gemm_with) needs of a product: the element types of
// the inputs (In), of C with alpha and beta (Out) and of the packed panels; the register tile
// (kMr × kNr) and the unit a k block is a whole number of (kKUnit); the packed values per
// row of an A sliver and per column of a B sliver for a k block of kc (a_step, b_step); the
// packing; the kernel; whether tiles may start before C's first column (column_shift); and
// the cache blocking. FloatGemm is float or double throughout; Bf16Gemm (below) packs bf16
// pairs and accumulates in float32.
// What a thread of a product sets up for its kernels while it runs (tiles, for AMX).
struct NoThreadScope {};

template <class T, class Kernel>
struct FloatGemm {
  using ThreadScope = NoThreadScope;
  using In = T;
  using Out = T;
  using PackedA = T;
  using PackedB = T;
  static constexpr std::size_t kMr = Kernel::kMr;
  static constexpr std::size_t kNr = Kernel::kNr;
  static constexpr std::size_t kKUnit = 8;
  static constexpr bool kShiftColumns = true;
  static constexpr bool kBlockKernel = false;
  static constexpr std::size_t kStreamMaxRows = Kernel::kStreamRows;  // 0: never streamed
  static constexpr std::size_t kStreamMinSlivers = 2;  // tiles with more than one of B
  static std::size_t a_step(std::size_t kc) { return kc; }
  static std::size_t b_step(std::size_t kc) { return kc; }
  static void pack_a_block(std::size_t mc, std::size_t kc, const T* a, std::size_t lda, T* out) {
    if (ablated(kAblatePackA)) return;
    pack_a<kMr>(mc, kc, a, lda, out);
  }
  static void pack_b_panel(std::size_t kc, std::size_t nc, std::size_t lead, const T* b,
                           std::size_t ldb, T* out) {
    if (ablated(kAblatePackB)) return;
    pack_b<kNr>(kc, nc, lead, b, ldb, out);
  }
  static void tile(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                   std::size_t ldc, std::size_t rows, std::size_t col0, std::size_t cols) {
    Kernel::run(kc, pa, pb, alpha, beta, c, ldc, rows, col0, cols);
  }
  static void pack_b_rows(std::size_t r0, std::size_t r1, std::size_t /*kc*/, std::size_t cols,
                          const T* b, std::size_t ldb, T* out) {
    if (ablated(kAblatePackB)) return;
    fastbench::pack_b_rows<kNr>(r0, r1, cols, b, ldb, out);
  }
  static void tile_prefetching(std::size_t kc, const T* pa, const T* pb, T alpha, T beta, T* c,
                               std::size_t ldc, std::size_t rows, std::size_t col0,
                               std::size_t cols, const RowPrefetch& pf) {
    Kernel::run_prefetching(kc, pa, pb, alpha, beta, c, ldc, rows, col0, cols, pf);
  }
  static GemmBlocking blocking() { return blocking_for(sizeof(T), kMr, kNr, Kernel::kL1Panels); }
  static std::size_t panel_columns(std::size_t /*kc*/, std::size_t nc) { return nc; }
};

// The product on `nthreads` threads: a grid of C tiles (thread_grid), each thread running
// gemm_owned on its own and then helping the others (help_others).
template <class P>
void gemm_with(std::size_t m, std::size_t n, std::size_t k, typename P::Out alpha,
               const typename P::In* a, std::size_t lda, const typename P::In* b, std::size_t ldb,
               typename P::Out beta, typename P::Out* c, std::size_t ldc, int nthreads) {
  using PackedA = typename P::PackedA;
  const GemmBlocking bl = P::blocking();
  const std::size_t m_units = div_up(m, P::kMr);
  const std::size_t n_units = div_up(n, P::kNr);
  const ThreadGrid grid = thread_grid(m, n, k, m_units, n_units, nthreads);
  const std::size_t nt = grid.tm * grid.tn, tm = grid.tm, tn = grid.tn;
  // Every tile gets the same blocks, so that any thread's packed-A buffer fits any unit.
  const std::size_t m_tile = std::min(m, div_up(m_units, tm) * P::kMr);
  const std::size_t n_tile = std::min(n, div_up(n_units, tn) * P::kNr);
  const std::size_t kc_max = balanced_block(k, bl.kc, P::kKUnit);
  const std::size_t nc_cap = P::panel_columns(kc_max, bl.nc);
  const std::size_t mu = unit_rows(m_tile, n_tile, k, kc_max, nc_cap, nt, bl.mc, P::kMr,
                                   sizeof(typename P::PackedB));
  // A block kernel writes C with plain stores when one thread runs the product and C fits in
  // L2 beside the B panel (up to half of L2) and a unit's sums and A (about an eighth): C
  // is then still there for whoever reads it next. Otherwise it writes C with streaming
  // stores, which skip reading each line first: a larger C would leave L2 anyway, and with
  // several threads a line of C is often in another core's cache (units move between
  // threads), where a plain store must first fetch it. bf16 on tiles, one thread: streamed,
  // 256^3 and 257×511×129 ran 1.14-1.20x slower; plain, 512^3 (a C of half of L2) ran 1.04x
  // slower. Two threads, plain: 1.1-1.25x slower at 256^3-512^3.
  const bool stream_c =
      nt > 1 || m_tile * n_tile * sizeof(typename P::Out) > cache_sizes().l2_bytes * 3 / 8;
  std::unique_ptr<ShareSlot<P>[]> slots(new ShareSlot<P>[nt]);
  run_parallel(static_cast<int>(nt), [&](int tid, int) {
    [[maybe_unused]] const typename P::ThreadScope scope;  // its own tile, and units it helps with
    const std::size_t t = static_cast<std::size_t>(tid);
    ShareSlot<P>& slot = slots[t];
    slot.word.store(ClaimWord::kStarted, std::memory_order_relaxed);
    // However this thread leaves (a failed allocation included), nobody waits on its tile.
    struct Finish {
      ShareSlot<P>& s;
      ~Finish() { s.word.store(ClaimWord::kFinished, std::memory_order_release); }
    };
    PackingBuffer<PackedA> packed_a;
    {
      const Finish finish{slot};
      packed_a = packing_buffer<PackedA>(round_up(mu, P::kMr) * P::a_step(kc_max), Packed::a);
      std::size_t m0 = 0, m1 = 0, n0 = 0, n1 = 0;
      split_range(m, P::kMr, tm, t / tn, &m0, &m1);
      split_range(n, P::kNr, tn, t % tn, &n0, &n1);
      if (m0 < m1 && n0 < n1) {
        gemm_owned<P>(m1 - m0, n1 - n0, k, alpha, a + m0 * lda, lda, b + n0, ldb, beta,
                      c + m0 * ldc + n0, ldc, kc_max, mu, nc_cap, stream_c, packed_a.get(),
                      slot);
      }
    }
    if (nt > 1) help_others<P>(t, nt, slots.get(), packed_a.get());
  });
}

// A type carried as a value, for with_float_gemm's callback.
template <class P>
struct TypeTag {
  using type = P;
};

// f(TypeTag<FloatGemm<T, Kernel>>) for the kernel gemm<T> runs now (gemm_tiles): the one
// place the kernel's type follows from the choice, for the product and its blocking alike.
template <class T, class F>
decltype(auto) with_float_gemm(F&& f) {
#if defined(__x86_64__)
  switch (gemm_tiles<T>()) {
    case Tiles::zmm: return f(TypeTag<FloatGemm<T, ZmmKernel<T>>>{});
    case Tiles::ymm_vl:  // float64 only (gemm_tiles); float32 would run the AVX2 kernel
      if constexpr (std::is_same_v<T, double>) return f(TypeTag<FloatGemm<T, YmmVlKernel<T>>>{});
      return f(TypeTag<FloatGemm<T, Avx2Kernel<T>>>{});
    case Tiles::avx2: return f(TypeTag<FloatGemm<T, Avx2Kernel<T>>>{});
    case Tiles::portable: break;
  }
#endif
  return f(TypeTag<FloatGemm<T, PortableKernel<T>>>{});
}

template <class T>
void gemm_impl(std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
               const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc, int threads) {
  check(m, n, k, a, lda, b, ldb, c, ldc);
  const int nthreads = resolve_threads(threads, "gemm");
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == T(0)) {  // A·B contributes nothing and is not read, as in BLAS
    scale_c(m, n, beta, c, ldc);
    return;
  }
  check_no_overlap(m, n, k, a, lda, b, ldb, c, ldc);
  with_float_gemm<T>([&](auto policy) {
    gemm_with<typename decltype(policy)::type>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                                               nthreads);
  });
  throw_if_interrupted("gemm");
}

// ---- bf16 ---------------------------------------------------------------------------------
// bf16 inputs (the upper 16 bits of a float32), float32 accumulation and output. With
// AVX512_BF16, `vdpbf16ps` multiplies pairs of bf16 along k and adds both products into a
// float32 lane: B is packed in pairs of k rows interleaved per column (the pair of column j
// side by side) and A in pairs of k per row (one 32-bit broadcast). Elsewhere both inputs are
// widened to float32 and the float32 gemm runs: a product of two bf16 values is exact in
// float32 (8-bit significands), so the two paths differ only in the order of the sums.

// vdpbf16ps where the CPU, the OS and the ISA cap allow it (isa.hpp).
bool bf16_native() { return has_avx512_bf16(); }

float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

#if defined(__x86_64__)
#define FASTBENCH_BF16_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"

// MR rows × NV zmm registers of 16 float32 lanes (MR·NV = 24 accumulators), as
// ZmmKernel<float>, each step taking a pair of k.
template <std::size_t MR, std::size_t NV>
struct Bf16KernelT {
  static constexpr std::size_t kMr = MR;
  static constexpr std::size_t kNr = 16 * NV;

  // With pf, its rows of B (kNr bf16 values each) are prefetched into L2 over the k loop.
  template <std::size_t R>
  __attribute__((target(FASTBENCH_BF16_TARGET))) static void run_rows(
      std::size_t pairs, const std::uint32_t* pa, const std::uint16_t* pb, float alpha,
      float beta, float* c, std::size_t ldc, std::size_t cols, const RowPrefetch* pf) {
    ablate_c(c, ldc, kNr);
    __m512 acc[R][NV];
#pragma GCC unroll 16
    for (std::size_t i = 0; i < R; ++i) {
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) {
        acc[i][v] = _mm512_setzero_ps();
        _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16 * v), _MM_HINT_T0);
      }
    }
    if (pf != nullptr) {
      accumulate<R, true>(pairs, pa, pb, acc, pf);
    } else {
      accumulate<R, false>(pairs, pa, pb, acc, nullptr);
    }
    const __m512 va = _mm512_set1_ps(alpha);
    if (cols == kNr) {
      const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
      for (std::size_t i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) {
          float* ci = c + i * ldc + 16 * v;
          const __m512 r = _mm512_mul_ps(va, acc[i][v]);
          _mm512_storeu_ps(ci, beta == 0.0f ? r : _mm512_fmadd_ps(vb, _mm512_loadu_ps(ci), r));
        }
      }
      return;
    }
    alignas(64) float tile[kMr * kNr];
    for (std::size_t i = 0; i < R; ++i) {
      for (std::size_t v = 0; v < NV; ++v) _mm512_store_ps(tile + i * kNr + 16 * v, acc[i][v]);
    }
    store_tile(R, 0, cols, tile, kNr, alpha, beta, c, ldc);
  }

  // The k loop over `pairs` steps into `acc`.
  template <std::size_t R, bool kPrefetch>
  __attribute__((target(FASTBENCH_BF16_TARGET), always_inline)) static inline void accumulate(
      std::size_t pairs, const std::uint32_t* pa, const std::uint16_t* pb, __m512 (&acc)[R][NV],
      const RowPrefetch* pf) {
    [[maybe_unused]] RowPrefetcher<kNr * sizeof(std::uint16_t)> fetch(
        kPrefetch ? *pf : RowPrefetch{}, pairs);
#pragma GCC unroll 2
    for (std::size_t q = 0; q < pairs; ++q) {
      if constexpr (kPrefetch) fetch.step();
      __m512bh b[NV];
#pragma GCC unroll 4
      for (std::size_t v = 0; v < NV; ++v) b[v] = (__m512bh)_mm512_load_si512(pb + 32 * v);
#pragma GCC unroll 16
      for (std::size_t i = 0; i < R; ++i) {
        const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pa[i]));
#pragma GCC unroll 4
        for (std::size_t v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a, b[v]);
      }
      pa += kMr;
      pb += 2 * kNr;
    }
    if constexpr (kPrefetch) fetch.finish();
  }

  template <std::size_t R = 1>
  static void run(std::size_t rows, std::size_t pairs, const std::uint32_t* pa,
                  const std::uint16_t* pb, float alpha, float beta, float* c, std::size_t ldc,
                  std::size_t cols, const RowPrefetch* pf = nullptr) {
    if constexpr (R < kMr) {
      if (rows != R) return run<R + 1>(rows, pairs, pa, pb, alpha, beta, c, ldc, cols, pf);
    }
    run_rows<R>(pairs, pa, pb, alpha, beta, c, ldc, cols, pf);
  }
};
// 6×64 measured 2-6% faster than 12×32 and 8×48 (Zen 4, n = 1024, one thread), fewer
// broadcasts per vdpbf16ps.
using Bf16Kernel = Bf16KernelT<6, 4>;

// A rows [0, mc) × k values [0, kc) into MR-row slivers of k pairs: sliver s holds, for each
// pair q, the 32-bit words (A[i][2q], A[i][2q+1]) of its rows side by side; rows past mc and
// the value past an odd kc are zero. The rows are read side by side and the output written
// in order, as pack_a does.
void pack_a_bf16(std::size_t mc, std::size_t kc, const std::uint16_t* a, std::size_t lda,
                 std::uint32_t* out) {
  constexpr std::size_t kMr = Bf16Kernel::kMr;
  const std::size_t full = kc / 2;  // pairs with both values
  const std::size_t pairs = div_up(kc, 2);
  const bool zmm = zmm_transposes();
  for (std::size_t i0 = 0; i0 < mc; i0 += kMr) {
    const std::size_t rows = std::min(kMr, mc - i0);
    const std::uint16_t* src[kMr];
    for (std::size_t i = 0; i < kMr; ++i) src[i] = a + (i0 + std::min(i, rows - 1)) * lda;
    std::size_t q = 0;
    if (rows == kMr) {
      // A pair is 32 bits wide, as a float: the float transposes move four pairs of each row
      // at a time (unaligned loads; the bits are moved, never used as floats). Against pair
      // by pair, the product ran 1-5% faster on 4096×64×4096, where packing A took a fifth of
      // the time (one thread, Zen 4).
      const float* words[kMr];
      for (std::size_t i = 0; i < kMr; ++i) words[i] = reinterpret_cast<const float*>(src[i]);
      q = pack_full_sliver<kMr>(full, words, reinterpret_cast<float*>(out), zmm);
    }
    for (; q < full; ++q) {
      for (std::size_t i = 0; i < kMr; ++i) {
        std::uint32_t w;  // any alignment: lda may be odd
        std::memcpy(&w, src[i] + 2 * q, sizeof w);
        out[q * kMr + i] = w;
      }
    }
    if (pairs > full) {
      for (std::size_t i = 0; i < kMr; ++i) out[full * kMr + i] = src[i][2 * full];
    }
    if (rows < kMr) {
      for (std::size_t z = 0; z < pairs; ++z) {
        for (std::size_t i = rows; i < kMr; ++i) out[z * kMr + i] = 0;
      }
    }
    out += kMr * pairs;
  }
}

// Interleaves 32 columns of two rows of B into the pairs of a sliver's step: (r0[j], r1[j])
// for j = 0..31 in two registers (vpermt2w).
__attribute__((target(FASTBENCH_BF16_TARGET))) void interleave32(const std::uint16_t* r0,
                                                                   const std::uint16_t* r1,
                                                                   std::uint16_t* dst) {
  alignas(64) static constexpr std::uint16_t kLo[32] = {
      0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr std::uint16_t kHi[32] = {
      16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
      24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i x = _mm512_loadu_si512(r0);
  const __m512i y = _mm512_loadu_si512(r1);
  _mm512_store_si512(dst, _mm512_permutex2var_epi16(x, _mm512_load_si512(kLo), y));
  _mm512_store_si512(dst + 32, _mm512_permutex2var_epi16(x, _mm512_load_si512(kHi), y));
}

// One pair step of a packed bf16 sliver: columns [0, cols) of rows r0 and r1 (r1 null: zeros,
// past an odd kc) side by side at `dst`, zeros past cols.
void pack_b_bf16_step(const std::uint16_t* r0, const std::uint16_t* r1, std::size_t cols,
                      std::uint16_t* dst) {
  constexpr std::size_t kNr = Bf16Kernel::kNr;
  static_assert(kNr % 32 == 0, "a sliver's step is whole interleave32 blocks");
  if (cols == kNr && r1 != nullptr) {
    for (std::size_t j = 0; j < kNr; j += 32) interleave32(r0 + j, r1 + j, dst + 2 * j);
    return;
  }
  for (std::size_t j = 0; j < cols; ++j) {
    dst[2 * j] = r0[j];
    dst[2 * j + 1] = r1 != nullptr ? r1[j] : 0;
  }
  for (std::size_t j = cols; j < kNr; ++j) dst[2 * j] = dst[2 * j + 1] = 0;
}

// B rows [0, kc) × columns [0, nc) into NR-column slivers of k pairs: sliver s holds, for
// each pair q, B[2q][j], B[2q+1][j] side by side for its NR columns; zeros past nc and past
// an odd kc. B is read two rows at a time, each line once.
void pack_b_bf16(std::size_t kc, std::size_t nc, const std::uint16_t* b, std::size_t ldb,
                 std::uint16_t* out) {
  constexpr std::size_t kNr = Bf16Kernel::kNr;
  const std::size_t pairs = div_up(kc, 2);
  const std::size_t slivers = div_up(nc, kNr);
  for (std::size_t q = 0; q < pairs; ++q) {
    const std::uint16_t* r0 = b + 2 * q * ldb;
    const std::uint16_t* r1 = 2 * q + 1 < kc ? r0 + ldb : nullptr;
    for (std::size_t s = 0; s < slivers; ++s) {
      const std::size_t j0 = s * kNr;
      pack_b_bf16_step(r0 + j0, r1 != nullptr ? r1 + j0 : nullptr, std::min(kNr, nc - j0),
                       out + (s * pairs + q) * 2 * kNr);
    }
  }
}

// The pairs holding rows [r0, r1) of B (k < kc) of one sliver, `cols` columns real, into the
// packed sliver `out`: the streamed-B path (gemm_streamed_b) packs a sliver a few rows at a
// time. A pair that straddles two pieces is packed by both, the same values.
void pack_b_bf16_rows(std::size_t r0, std::size_t r1, std::size_t kc, std::size_t cols,
                      const std::uint16_t* b, std::size_t ldb, std::uint16_t* out) {
  constexpr std::size_t kNr = Bf16Kernel::kNr;
  for (std::size_t q = r0 / 2; q < div_up(r1, 2); ++q) {
    const std::uint16_t* row0 = b + 2 * q * ldb;
    pack_b_bf16_step(row0, 2 * q + 1 < kc ? row0 + ldb : nullptr, cols, out + q * 2 * kNr);
  }
}

// kc: a B micro-panel (kc×nr bf16) in an eighth of L2, beside the A block (mc×kc) in half
// of it; nc: the B panel in a quarter of L3. kc 1024 measured 4-7% faster than 512 and mc
// 252 no slower than 504 (Zen 4, 1 MiB L2, n = 1024, one thread): with vdpbf16ps twice the
// MACs of an FMA per byte of B, a long k block matters more than the micro-panel in L1.
GemmBlocking bf16_blocking() {
  const CacheSizes& cs = cache_sizes();
  GemmBlocking b;
  b.mr = Bf16Kernel::kMr;
  b.nr = Bf16Kernel::kNr;
  b.kc = std::clamp<std::size_t>(round_down(cs.l2_bytes / 8 / (b.nr * 2), 8), 64, 1024);
  b.mc = std::clamp<std::size_t>(round_down(cs.l2_bytes / 2 / (b.kc * 2), b.mr), b.mr * 4,
                                 b.mr * 128);
  b.nc = std::clamp<std::size_t>(round_down(cs.l3_bytes / 4 / (b.kc * 2), b.nr), b.nr * 16,
                                 round_down(4096, b.nr));
  return b;
}

// The bf16 product for the shared driver: A packed in k pairs (32-bit words), B in
// pair-interleaved slivers, C float32. pack_b_bf16 has no lead columns, so tiles start at
// C's first column.
struct Bf16Gemm {
  using ThreadScope = NoThreadScope;
  using In = std::uint16_t;
  using Out = float;
  using PackedA = std::uint32_t;
  using PackedB = std::uint16_t;
  static constexpr std::size_t kMr = Bf16Kernel::kMr;
  static constexpr std::size_t kNr = Bf16Kernel::kNr;
  static constexpr std::size_t kKUnit = 2;
  static constexpr bool kShiftColumns = false;
  static constexpr bool kBlockKernel = false;
  // Any tile of one unit of rows (mc, at most 128 slivers) streams B (gemm_streamed_b):
  // against packing panels, 1.18-1.24x on 64 and 128×4096×1024, 1.05x on 192×2048×1024,
  // 1.03x on 252×1024×1024 and 1.00x on 128×512×512 (one thread, Zen 4, the products of
  // benchmarks/gemm_ablation.py's harness, one process per side, two of each at 64 rows).
  static constexpr std::size_t kStreamMaxRows = 128 * kMr;
  // ... of at least 16 slivers of B (961 columns or more): with fewer the gain was at most 3%,
  // and a tile that streams runs on its own thread alone, never shared with an idle one
  // (gemm_streamed_b): 256^3 on 2 threads, right after PyTorch's bf16 matmul in the same
  // process (its threads spin on after it), ran 65 GFLOP/s streamed against 155 in panels.
  static constexpr std::size_t kStreamMinSlivers = 16;
  static std::size_t a_step(std::size_t kc) { return div_up(kc, 2); }
  static std::size_t b_step(std::size_t kc) { return 2 * div_up(kc, 2); }
  static void pack_a_block(std::size_t mc, std::size_t kc, const std::uint16_t* a,
                           std::size_t lda, std::uint32_t* out) {
    if (ablated(kAblatePackA)) return;
    pack_a_bf16(mc, kc, a, lda, out);
  }
  static void pack_b_panel(std::size_t kc, std::size_t nc, std::size_t /*lead: always 0*/,
                           const std::uint16_t* b, std::size_t ldb, std::uint16_t* out) {
    if (ablated(kAblatePackB)) return;
    pack_b_bf16(kc, nc, b, ldb, out);
  }
  static void tile(std::size_t kc, const std::uint32_t* pa, const std::uint16_t* pb, float alpha,
                   float beta, float* c, std::size_t ldc, std::size_t rows,
                   std::size_t /*col0: always 0*/, std::size_t cols) {
    Bf16Kernel::run(rows, div_up(kc, 2), pa, pb, alpha, beta, c, ldc, cols);
  }
  static void pack_b_rows(std::size_t r0, std::size_t r1, std::size_t kc, std::size_t cols,
                          const std::uint16_t* b, std::size_t ldb, std::uint16_t* out) {
    if (ablated(kAblatePackB)) return;
    pack_b_bf16_rows(r0, r1, kc, cols, b, ldb, out);
  }
  static void tile_prefetching(std::size_t kc, const std::uint32_t* pa, const std::uint16_t* pb,
                               float alpha, float beta, float* c, std::size_t ldc,
                               std::size_t rows, std::size_t /*col0: always 0*/,
                               std::size_t cols, const RowPrefetch& pf) {
    Bf16Kernel::run(rows, div_up(kc, 2), pa, pb, alpha, beta, c, ldc, cols,
                    pf.rows > 0 ? &pf : nullptr);
  }
  static GemmBlocking blocking() { return bf16_blocking(); }
  static std::size_t panel_columns(std::size_t /*kc*/, std::size_t nc) { return nc; }
};
#undef FASTBENCH_BF16_TARGET

#if FASTBENCH_AMX_BUILT
// ---- bf16 on tiles (AMX) ------------------------------------------------------------------
// A 32×32 block of C in four float32 tiles (0-3: rows 0-15 and 16-31 × columns 0-15 and
// 16-31), fed per 32 values of k (a chunk) by two A tiles (4, 5: 16 rows × 32 bf16) and two
// B tiles (6, 7: 16 k pairs × 16 columns): each operand tile feeds two products, the most
// reuse that eight tiles allow. Tiles are not renamed, so each load comes right after the
// products that last read its tile have issued.
//
// A unit (mc rows of A against the epoch's B panel, nc columns) runs as one block
// (amx_block): its 32×32 blocks of C sum in a buffer that stays in L2 over the epoch's
// whole k, in sub-blocks of kAmxSubChunks chunks; within a sub-block each B micro-panel
// (16 KiB) stays in L1 while the unit's A slivers stream past it, and C is written once, row
// by row, at the end. A tile block stored to C itself has its 16 rows a power-of-two stride
// apart in one L1 set, and a k block per pass over C read and wrote all of C k/256 times:
// 0.53 TFLOP/s on one core at 1024^3, against 1.4 with C left out.
// A is read by the tiles where it lies when its rows start on cache lines (64-byte
// aligned, as PyTorch allocates); otherwise (numpy's arrays start 16 bytes into a line, and
// a tile row across two lines loads slower) each sub-block is copied into aligned chunks
// just before use. Rows in place lie a power of two apart at k = 1024 or 2048 and share L1
// sets, and alone the tile loop reads them 8% slower than copied chunks; yet copying an
// aligned A as well measured 0.99x at 1024^3 and 0.92x at 2048^3 (one thread, alternating in
// one process). Either way the next sub-block's lines of A are prefetched while the
// current one runs, so reading A from memory overlaps the products: packing all of A first
// left 4096×64×4096 waiting on memory for half its time.
constexpr std::size_t kAmxChunk = 32;          // k values per tile product
constexpr std::size_t kAmxChunkElems = 1024;   // bf16 values of a packed chunk (2 KiB)
constexpr std::size_t kAmxSubChunks = 8;       // chunks of a k sub-block: 256 values of k

// Rows [0, rows) of a sliver of A (`rows` ≤ 32, from `a` with leading dimension lda), k
// values [32·c0, 32·c0 + 32·chunks) ending at kc, into `chunks` chunks of 32 rows × 32 values
// (64 bytes a row, one zmm); zeros past rows and kc.
__attribute__((target(FASTBENCH_AVX512_TARGET))) void pack_a_chunks(
    const std::uint16_t* a, std::size_t lda, std::size_t rows, std::size_t kc, std::size_t c0,
    std::size_t chunks, std::uint16_t* out) {
  for (std::size_t ch = 0; ch < chunks; ++ch) {
    const std::size_t p0 = (c0 + ch) * kAmxChunk;
    const std::size_t left = kc - p0;
    const __mmask32 mask = left >= 32 ? __mmask32(0xFFFFFFFFu) : __mmask32((1u << left) - 1);
    std::uint16_t* dst = out + ch * kAmxChunkElems;
    for (std::size_t i = 0; i < rows; ++i) {
      _mm512_store_si512(dst + i * kAmxChunk, _mm512_maskz_loadu_epi16(mask, a + i * lda + p0));
    }
    for (std::size_t i = rows; i < 32; ++i) {
      _mm512_store_si512(dst + i * kAmxChunk, _mm512_setzero_si512());
    }
  }
}

// Where the tiles read a 32-row sliver of A for a run of chunks: a first chunk, the byte
// stride of its rows, the elements from one chunk to the next and from row 0 to row 16.
struct AmxA {
  const std::uint16_t* first;
  std::size_t stride_bytes;
  std::size_t chunk_step;
  std::size_t half;
};

// Rows p and p + 1 of B (of kc) at the 32 columns of sliver `s` (of nc) into 64 values at
// `dst`, B[p][j] and B[p+1][j] side by side; zeros past nc and kc.
void pack_b_amx_pair(const std::uint16_t* b, std::size_t ldb, std::size_t kc, std::size_t nc,
                     std::size_t s, std::size_t p, std::uint16_t* dst) {
  const std::size_t j0 = s * 32, cols = std::min<std::size_t>(32, nc - j0);
  const std::uint16_t* r0 = p < kc ? b + p * ldb + j0 : nullptr;
  const std::uint16_t* r1 = p + 1 < kc ? r0 + ldb : nullptr;
  if (cols == 32 && r1 != nullptr) {
    interleave32(r0, r1, dst);
    return;
  }
  for (std::size_t j = 0; j < 32; ++j) {
    dst[2 * j] = r0 != nullptr && j < cols ? r0[j] : 0;
    dst[2 * j + 1] = r1 != nullptr && j < cols ? r1[j] : 0;
  }
}

// B rows [0, kc) × columns [0, nc) into 32-column slivers of pair-interleaved chunks (16
// pairs of k rows × 32 columns, 2 KiB: B[2q][j], B[2q+1][j] side by side), the layout of
// pack_b_bf16<32, 16>; zeros past nc and kc. Chunk by chunk of k, two slivers at a time, each
// pair of rows read 128 bytes at a time: the chunk's 32 rows advance together, in streams
// the hardware prefetchers follow. A pair of rows read across every sliver (scattered 2 KiB
// writes a sliver apart) took most of a 64×4096×1024 product. One sliver at a time with a
// software prefetch of the next chunk's rows ran 64×4096×1024 at 0.83-0.87x torch's speed
// and 32×4096×1024 at 0.74-0.78x, against 0.89-0.93x and 0.83-0.87x this way (one thread,
// 1024^3 unchanged). Every software prefetch tried here made it slower: the reads are bound
// by the misses in flight, and a prefetch takes one of them.
void pack_b_amx(std::size_t kc, std::size_t nc, const std::uint16_t* b, std::size_t ldb,
                std::uint16_t* out) {
  constexpr std::size_t kGroup = 2;  // slivers read side by side
  const std::size_t chunks = div_up(kc, kAmxChunk);
  const std::size_t slivers = div_up(nc, 32);
  for (std::size_t ch = 0; ch < chunks; ++ch) {
    for (std::size_t g = 0; g < slivers; g += kGroup) {
      const std::size_t g1 = std::min(slivers, g + kGroup);
      for (std::size_t q = 0; q < 16; ++q) {
        for (std::size_t s = g; s < g1; ++s) {
          pack_b_amx_pair(b, ldb, kc, nc, s, ch * kAmxChunk + 2 * q,
                          out + (s * chunks + ch) * kAmxChunkElems + q * 64);
        }
      }
    }
  }
}

// One 32×32 block of C's sums over `chunks` chunks, kept at `acc` (rows `ld` floats apart):
// read into the accumulator tiles first unless `first`, stored back after.
__attribute__((target("amx-tile,amx-bf16"))) void amx_accumulate(std::size_t chunks,
                                                                  const AmxA& a,
                                                                  const std::uint16_t* pb,
                                                                  float* acc, std::size_t ld,
                                                                  bool first) {
  const std::size_t stride = ld * sizeof(float);
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, acc, stride);
    _tile_loadd(1, acc + 16, stride);
    _tile_loadd(2, acc + 16 * ld, stride);
    _tile_loadd(3, acc + 16 * ld + 16, stride);
  }
  for (std::size_t ch = 0; ch < chunks; ++ch) {
    const std::uint16_t* ta = a.first + ch * a.chunk_step;
    const std::uint16_t* b = pb + ch * kAmxChunkElems;
    _tile_loadd(4, ta, a.stride_bytes);            // rows 0-15
    _tile_loadd(6, b, 128);  // columns 0-15: the first 64 bytes of each 128-byte pair row
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, b + 32, 128);                   // columns 16-31
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, ta + a.half, a.stride_bytes);   // rows 16-31
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, acc, stride);
  _tile_stored(1, acc + 16, stride);
  _tile_stored(2, acc + 16 * ld, stride);
  _tile_stored(3, acc + 16 * ld + 16, stride);
}

// alpha · sums[j] + beta · c[j] for the `mask` lanes of 16 columns.
__attribute__((target(FASTBENCH_AVX512_TARGET), always_inline)) inline __m512 amx_scaled(
    const float* sums, const float* c, __mmask16 mask, __m512 va, __m512 vb, bool beta) {
  const __m512 r = _mm512_mul_ps(va, _mm512_maskz_loadu_ps(mask, sums));
  return beta ? _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, c), r) : r;
}

// C rows [0, rows) × columns [0, cols) = alpha · sums + beta · C, each row of C written once,
// in order. With beta 0 and `stream`, C is not read, and its whole cache lines are written
// with streaming stores (the unaligned ends of a row with plain ones): they skip reading each
// line before writing it, which was a sixth of a 1024^3 product's time. gemm_with chooses
// `stream`. Writing C sooner measured slower (one thread, alternating in one process): each
// 32×32 block as soon as its last k sub-block is summed, through a tile-sized buffer, 0.78x at
// 1024^3 and 0.85x at 2048^3 streamed, 0.90-0.94x with plain stores; a unit's C spread row by
// row over the next unit's products (sums double-buffered), 0.94-0.95x. Stores among the tile
// loads cost the tile loop more than the unit's one burst of them does.
__attribute__((target(FASTBENCH_AVX512_TARGET))) void amx_store(
    const float* sums, std::size_t ld, std::size_t rows, std::size_t cols, float alpha,
    float beta, bool stream, float* c, std::size_t ldc) {
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 vb = _mm512_set1_ps(beta);
  const bool read_c = beta != 0.0f;
  bool streamed = false;
  for (std::size_t i = 0; i < rows; ++i) {
    const float* si = sums + i * ld;
    float* ci = c + i * ldc;
    std::size_t j = 0;
    if (stream && !read_c && reinterpret_cast<std::uintptr_t>(ci) % sizeof(float) == 0) {
      // Plain stores up to the first line boundary, then whole lines streamed.
      const std::size_t into = reinterpret_cast<std::uintptr_t>(ci) % kAlignBytes;
      const std::size_t head = std::min(cols, into == 0 ? 0 : (kAlignBytes - into) / 4);
      if (head > 0) {
        const __mmask16 mask = __mmask16((1u << head) - 1);
        _mm512_mask_storeu_ps(ci, mask, amx_scaled(si, ci, mask, va, vb, false));
      }
      for (j = head; j + 16 <= cols; j += 16) {
        _mm512_stream_ps(ci + j, _mm512_mul_ps(va, _mm512_loadu_ps(si + j)));
        streamed = true;
      }
    }
    for (; j < cols; j += 16) {
      const std::size_t left = cols - j;
      const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
      _mm512_mask_storeu_ps(ci + j, mask, amx_scaled(si + j, ci + j, mask, va, vb, read_c));
    }
  }
  // Streaming stores are weakly ordered: fenced before the unit is counted done (another
  // thread may then read C, or the next k block add to it).
  if (streamed) _mm_sfence();
}

// The sums of a unit's block, kept per thread between calls (grown, never shrunk).
struct AmxScratch {
  std::unique_ptr<float[], FreeDeleter> sums;
  std::size_t size = 0;
};
thread_local AmxScratch amx_scratch;

// Prefetches into L2 the lines of A rows [0, rows) × k values [p0, p1): the next
// sub-block's, `part` of `parts` of them (row by row), so that they arrive spread over the
// current sub-block's products.
void prefetch_a(const std::uint16_t* a, std::size_t lda, std::size_t rows, std::size_t p0,
                std::size_t p1, std::size_t part, std::size_t parts) {
  const std::size_t r0 = rows * part / parts, r1 = rows * (part + 1) / parts;
  for (std::size_t i = r0; i < r1; ++i) {
    const char* row = reinterpret_cast<const char*>(a + i * lda);
    for (std::size_t p = p0 * 2; p < p1 * 2; p += 64) _mm_prefetch(row + p, _MM_HINT_T1);
  }
}

// The unit: A rows [0, mc) (at `a`) × k [0, kc) against the epoch's packed B panel (nc
// columns), into C with alpha and beta, with streaming stores if `stream_c` (amx_store).
// `packed_a` holds one sub-block of A where A is copied (mc rows × 256 values, rounded up to
// whole slivers).
void amx_block(std::size_t kc, std::size_t nc, std::size_t mc, const std::uint16_t* a,
               std::size_t lda, std::uint16_t* packed_a, const std::uint16_t* pb, float alpha,
               float beta, bool stream_c, float* c, std::size_t ldc) {
  const std::size_t chunks = div_up(kc, kAmxChunk);
  const std::size_t row_blocks = div_up(mc, 32), col_blocks = div_up(nc, 32);
  // Rows of sums a line more than a power of two apart, so that a tile's 16 rows spread
  // over L1's sets.
  const std::size_t ld = col_blocks * 32 + 16;
  const std::size_t need = row_blocks * 32 * ld;
  if (amx_scratch.size < need) {
    amx_scratch.sums = aligned_buffer<float>(need);
    amx_scratch.size = need;
  }
  float* sums = amx_scratch.sums.get();
  const bool in_place = reinterpret_cast<std::uintptr_t>(a) % kAlignBytes == 0 &&
                        (lda * sizeof(std::uint16_t)) % kAlignBytes == 0 &&
                        mc % 32 == 0 && kc % kAmxChunk == 0;
  const std::size_t calls = row_blocks * col_blocks;  // per sub-block
  for (std::size_t k0 = 0; k0 < chunks; k0 += kAmxSubChunks) {
    const std::size_t sub = std::min(kAmxSubChunks, chunks - k0);
    if (!in_place && !ablated(kAblatePackA)) {
      for (std::size_t i = 0; i < row_blocks; ++i) {
        pack_a_chunks(a + i * 32 * lda, lda, std::min<std::size_t>(32, mc - i * 32), kc, k0,
                      sub, packed_a + i * sub * kAmxChunkElems);
      }
    }
    const std::size_t next0 = (k0 + sub) * kAmxChunk;
    const std::size_t next1 = std::min(kc, next0 + kAmxSubChunks * kAmxChunk);
    std::size_t call = 0;
    for (std::size_t j = 0; j < col_blocks; ++j) {
      const std::uint16_t* b = pb + (j * chunks + k0) * kAmxChunkElems;
      for (std::size_t i = 0; i < row_blocks; ++i, ++call) {
        const AmxA tiles =
            in_place ? AmxA{a + i * 32 * lda + k0 * kAmxChunk, lda * sizeof(std::uint16_t),
                            kAmxChunk, 16 * lda}
                     : AmxA{packed_a + i * sub * kAmxChunkElems, 64, kAmxChunkElems, 512};
        amx_accumulate(sub, tiles, b, sums + i * 32 * ld + j * 32, ld, k0 == 0);
        if (next0 < next1) prefetch_a(a, lda, mc, next0, next1, call, calls);
      }
    }
  }
  if (ablated(kAblateC)) return;  // the sums stay in their buffer
  amx_store(sums, ld, mc, nc, alpha, beta, stream_c, c, ldc);
}

// kc: the epoch's k block, up to 4096 (the unit's sums stay in the buffer across it, so a
// long block writes C fewer times); nc: at most a quarter of L3 for the B panel, narrowed to
// half of L2 for the k block the product has (panel_columns); mc: 64 rows, two slivers per
// B micro-panel (128 measured no faster at 1024^3 and slower at 4096×64×4096).
GemmBlocking amx_blocking() {
  const CacheSizes& cs = cache_sizes();
  GemmBlocking b;
  b.mr = 32;
  b.nr = 32;
  b.kc = 4096;
  b.mc = 64;
  b.nc = std::clamp<std::size_t>(round_down(cs.l3_bytes / 4 / (b.kc * 2), b.nr), b.nr * 4,
                                 round_down(4096, b.nr));
  return b;
}

// The tile product for the shared driver: B in 32-column pair-interleaved slivers padded to
// whole B tiles, C float32; each unit runs as one block (amx_block), which reads or copies A
// itself; every thread configures its tiles for the product's length (TileScope) and
// releases them after.
struct AmxBf16Gemm {
  using ThreadScope = detail::TileScope;
  using In = std::uint16_t;
  using Out = float;
  using PackedA = std::uint16_t;
  using PackedB = std::uint16_t;
  static constexpr std::size_t kMr = 32;
  static constexpr std::size_t kNr = 32;
  static constexpr std::size_t kKUnit = kAmxChunk;
  static constexpr bool kShiftColumns = false;
  static constexpr bool kBlockKernel = true;
  static constexpr std::size_t kStreamMaxRows = 0;
  static constexpr std::size_t kStreamMinSlivers = 0;
  // packed A: one k sub-block of the unit's rows (the driver sizes it mu × a_step(kc)).
  static std::size_t a_step(std::size_t kc) {
    return std::min(round_up(kc, kAmxChunk), kAmxSubChunks * kAmxChunk);
  }
  static std::size_t b_step(std::size_t kc) { return round_up(kc, kAmxChunk); }
  static void pack_b_panel(std::size_t kc, std::size_t nc, std::size_t /*lead: always 0*/,
                           const std::uint16_t* b, std::size_t ldb, std::uint16_t* out) {
    if (ablated(kAblatePackB)) return;
    pack_b_amx(kc, nc, b, ldb, out);
  }
  static void block(std::size_t kc, std::size_t nc, std::size_t mc, const std::uint16_t* a,
                    std::size_t lda, std::uint16_t* packed_a, const std::uint16_t* pb,
                    float alpha, float beta, bool stream_c, float* c, std::size_t ldc) {
    amx_block(kc, nc, mc, a, lda, packed_a, pb, alpha, beta, stream_c, c, ldc);
  }
  static GemmBlocking blocking() { return amx_blocking(); }
  // The B panel (kc × nc bf16) in half of L2, beside the unit's sums: nc from the k block
  // the product has (512 columns at k = 1024, 256 at 2048, 128 at 4096, each measured best
  // of the three at 2 threads).
  static std::size_t panel_columns(std::size_t kc, std::size_t nc) {
    const std::size_t fits = round_down(cache_sizes().l2_bytes / 2 / (kc * 2), kNr);
    return std::clamp<std::size_t>(fits, 4 * kNr, nc);
  }
};
#endif  // FASTBENCH_AMX_BUILT
#endif  // __x86_64__

// Both inputs widened to float32 (dense copies), then the float32 gemm.
void gemm_bf16_widened(std::size_t m, std::size_t n, std::size_t k, float alpha,
                       const std::uint16_t* a, std::size_t lda, const std::uint16_t* b,
                       std::size_t ldb, float beta, float* c, std::size_t ldc, int nthreads) {
  auto wa = aligned_buffer<float>(m * k);
  auto wb = aligned_buffer<float>(k * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t p = 0; p < k; ++p) wa[i * k + p] = bf16_to_float(a[i * lda + p]);
  }
  for (std::size_t p = 0; p < k; ++p) {
    for (std::size_t j = 0; j < n; ++j) wb[p * n + j] = bf16_to_float(b[p * ldb + j]);
  }
  gemm(m, n, k, alpha, wa.get(), k, wb.get(), n, beta, c, ldc, nthreads);
}

}  // namespace

void gemm(std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
          std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc, int threads) {
  gemm_impl(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
}

void gemm(std::size_t m, std::size_t n, std::size_t k, double alpha, const double* a,
          std::size_t lda, const double* b, std::size_t ldb, double beta, double* c,
          std::size_t ldc, int threads) {
  gemm_impl(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
}

void gemm_bf16(std::size_t m, std::size_t n, std::size_t k, float alpha, const std::uint16_t* a,
               std::size_t lda, const std::uint16_t* b, std::size_t ldb, float beta, float* c,
               std::size_t ldc, int threads) {
  check(m, n, k, a, lda, b, ldb, c, ldc, "gemm_bf16");
  const int nthreads = resolve_threads(threads, "gemm_bf16");
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) {  // A·B contributes nothing and is not read, as in BLAS
    scale_c(m, n, beta, c, ldc);
    return;
  }
  // C (float) may meet A or B (bf16) only through a caller's reinterpreting cast.
  if (ranges_meet(reinterpret_cast<const unsigned char*>(c), m, n * sizeof(float),
                  ldc * sizeof(float), reinterpret_cast<const unsigned char*>(a), m,
                  k * sizeof(std::uint16_t), lda * sizeof(std::uint16_t)) ||
      ranges_meet(reinterpret_cast<const unsigned char*>(c), m, n * sizeof(float),
                  ldc * sizeof(float), reinterpret_cast<const unsigned char*>(b), k,
                  n * sizeof(std::uint16_t), ldb * sizeof(std::uint16_t))) {
    throw std::invalid_argument(
        "[gemm_bf16] c shares memory with a or b, which it would overwrite while they are "
        "read; expected an output apart from both inputs");
  }
#if FASTBENCH_AMX_BUILT
  if (active_isa() >= Isa::amx) {
    gemm_with<AmxBf16Gemm>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nthreads);
    throw_if_interrupted("gemm_bf16");
    return;
  }
#endif
#if defined(__x86_64__)
  if (bf16_native()) {
    gemm_with<Bf16Gemm>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nthreads);
    throw_if_interrupted("gemm_bf16");
    return;
  }
#endif
  gemm_bf16_widened(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nthreads);
}

const char* gemm_bf16_isa() {
  if (active_isa() >= Isa::amx) return "amx_bf16";
  return bf16_native() ? "avx512_bf16" : gemm_isa();
}

const char* gemm_isa(bool f64) {
  return isa_name(tiles_isa(f64 ? gemm_tiles<double>() : gemm_tiles<float>()));
}

GemmBlocking gemm_blocking(bool f64) {
  const auto blocking = [](auto policy) { return decltype(policy)::type::blocking(); };
  return f64 ? with_float_gemm<double>(blocking) : with_float_gemm<float>(blocking);
}

namespace detail {
void gemm_small_units(bool on) { g_small_units.store(on, std::memory_order_relaxed); }
void gemm_stream_b(bool on) { g_stream_b.store(on, std::memory_order_relaxed); }
void gemm_zmm_at_half_rate(bool on) { g_zmm_at_half_rate.store(on, std::memory_order_relaxed); }
void gemm_ymm_tiles(bool on) { g_ymm_tiles.store(on, std::memory_order_relaxed); }
std::uint64_t gemm_units_shared() { return g_units_shared.load(std::memory_order_relaxed); }
}  // namespace detail

}  // namespace fastbench
