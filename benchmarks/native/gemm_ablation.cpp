// gemm_ablation.cpp — the GEMM core compiled into a program of its own with parts of it
// skipped (FASTBENCH_GEMM_ABLATE, see gemm.cpp), so that the products time what is left.
// Built and run by benchmarks/gemm_ablation.py (tests/roofline/test_gemm_ablation.py runs
// `check`); not part of the extension.
//
//   gemm_ablation time DTYPE M N K [REPS] [BLOCKS] [LDC_PAD] [BLAS]
//   gemm_ablation check DTYPE [ISA] [BLAS]
//
// DTYPE: float32, float64 or bfloat16 (bf16 inputs, float32 output). float and double sit
// in plain vectors, as numpy allocates (large ones start 16 bytes into a cache line); bf16
// rows start on cache lines, as PyTorch allocates. One product fills the packed buffers,
// then the ablation starts.
//
// time: each block measures one core's peak for DTYPE (peak_flops: the widest FMA chains,
// tile products where AMX runs bf16), then REPS products, and keeps the fastest. Prints one
// line, "ratio R1 R2 ... gflops G peak P", each block's product over its own peak, so that a
// slow host phase lowers both sides of a ratio. LDC_PAD (default 0) adds that many elements
// to each row of C (ldc = N + LDC_PAD), so C's rows no longer fall on one cache set where N
// is a power of two. BLAS (float32 and float64 only) names a CBLAS library to load (numpy's
// OpenBLAS): each block then also times its sgemm/dgemm on one thread, REPS calls on the same
// operands and C, and the line ends with "blas S1 S2 ...", each block's fastest product over
// the library's fastest beside it (> 1: faster than the library).
//
// check: the first product (nothing skipped yet) must equal a plain triple loop, exactly
// (small integers); then A and B are scaled by 2 and 4 and C is filled with 0.5, which no
// product of integers gives. With C ablated, C must stay 0.5; otherwise the product must be
// exactly 8 times the first one unless a packing it depends on is skipped, and then it must
// not be. ISA caps the kernels (portable, avx2, avx512, amx), so that every path this CPU
// runs can be checked. BLAS (float32 and float64): the library `time` loads must give the
// first product exactly too, which shows its call (integer widths, layout) is right. Prints
// "check ok" and exits 0, or says what failed and exits 1.
#include "gemm.cpp"  // the translation unit itself, for g_ablating

#include <dlfcn.h>
#include <xmmintrin.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "peak.hpp"

namespace {

template <class T>
using OutOf = std::conditional_t<std::is_same_v<T, std::uint16_t>, float, T>;

template <class T>
constexpr bool kBf16 = std::is_same_v<T, std::uint16_t>;

// A value of the input type: bf16 as the upper half of the float (exact for small integers).
template <class T>
T input(double x) {
  if constexpr (kBf16<T>) {
    const float f = static_cast<float>(x);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    return static_cast<std::uint16_t>(bits >> 16);
  } else {
    return static_cast<T>(x);
  }
}

template <class T>
double value(T v) {
  if constexpr (kBf16<T>) {
    const std::uint32_t bits = std::uint32_t{v} << 16;
    float f = 0.0f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  } else {
    return static_cast<double>(v);
  }
}

// A rows×cols operand in a vector, starting on a cache line for bf16.
template <class T>
struct Matrix {
  std::vector<T> store;
  T* data = nullptr;
  Matrix(std::size_t rows, std::size_t cols) : store(rows * cols + 32) {
    const std::size_t into = reinterpret_cast<std::uintptr_t>(store.data()) % 64;
    data = store.data() + (kBf16<T> && into != 0 ? (64 - into) / sizeof(T) : 0);
  }
};

template <class T>
void product(std::size_t m, std::size_t n, std::size_t k, const T* a, const T* b, OutOf<T>* c,
             std::size_t ldc) {
  if constexpr (kBf16<T>) {
    fastbench::gemm_bf16(m, n, k, 1.0f, a, k, b, n, 0.0f, c, ldc, 1);
  } else {
    fastbench::gemm(m, n, k, T(1), a, k, b, n, T(0), c, ldc, 1);
  }
}

// Row-major C = A·B of a CBLAS library loaded at run time, on one thread: OpenBLAS as numpy
// bundles it (64-bit integers, scipy_ prefix) or a plain CBLAS (int).
template <class T>
class Blas {
 public:
  explicit Blas(const char* path) {
    lib_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) return;
    const bool f64 = std::is_same_v<T, double>;
    wide_ = reinterpret_cast<Wide>(
        dlsym(lib_, f64 ? "scipy_cblas_dgemm64_" : "scipy_cblas_sgemm64_"));
    narrow_ = reinterpret_cast<Narrow>(dlsym(lib_, f64 ? "cblas_dgemm" : "cblas_sgemm"));
    using SetThreads = void (*)(int);
    for (const char* name : {"scipy_openblas_set_num_threads64_", "openblas_set_num_threads"}) {
      if (auto set = reinterpret_cast<SetThreads>(dlsym(lib_, name))) {
        set(1);
        break;
      }
    }
  }
  ~Blas() {
    if (lib_ != nullptr) dlclose(lib_);
  }
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  bool ok() const { return wide_ != nullptr || narrow_ != nullptr; }
  void gemm(std::size_t m, std::size_t n, std::size_t k, const T* a, const T* b, T* c,
            std::size_t ldc) const {
    constexpr int kRowMajor = 101, kNoTrans = 111;
    if (wide_ != nullptr) {
      wide_(kRowMajor, kNoTrans, kNoTrans, long(m), long(n), long(k), T(1), a, long(k), b,
            long(n), T(0), c, long(ldc));
    } else {
      narrow_(kRowMajor, kNoTrans, kNoTrans, int(m), int(n), int(k), T(1), a, int(k), b, int(n),
              T(0), c, int(ldc));
    }
  }

 private:
  using Wide = void (*)(int, int, int, long, long, long, T, const T*, long, const T*, long, T,
                        T*, long);
  using Narrow = void (*)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*,
                          int);
  void* lib_ = nullptr;
  Wide wide_ = nullptr;
  Narrow narrow_ = nullptr;
};

template <class T>
int time_products(std::size_t m, std::size_t n, std::size_t k, int reps, int blocks,
                  const char* dtype, std::size_t ldc_pad, const char* blas_path) {
  Matrix<T> a(m, k), b(k, n);
  const std::size_t ldc = n + ldc_pad;
  std::vector<OutOf<T>> c(m * ldc);
  std::unique_ptr<Blas<T>> blas;
  if constexpr (!kBf16<T>) {
    if (blas_path != nullptr) {
      blas = std::make_unique<Blas<T>>(blas_path);
      if (!blas->ok()) {
        std::fprintf(stderr, "%s: no CBLAS gemm in %s\n", dtype, blas_path);
        return 1;
      }
    }
  }
  for (std::size_t i = 0; i < m * k; ++i) a.data[i] = input<T>(kBf16<T> ? 1.0 + (i % 7) / 8.0 : 1e-3 * (i % 7));
  for (std::size_t i = 0; i < k * n; ++i) b.data[i] = input<T>(kBf16<T> ? 1.0 + (i % 5) / 8.0 : 1e-3 * (i % 5));
  // Denormals would slow the FMAs down; the skipped parts leave earlier products' values.
  _mm_setcsr(_mm_getcsr() | 0x8040);
  product(m, n, k, a.data, b.data, c.data(), ldc);
  fastbench::g_ablating = true;
  const double flop = 2.0 * double(m) * double(n) * double(k);
  // The fastest of `reps` calls of `call`, in GFLOP/s.
  auto fastest = [&](auto&& call) {
    double best = 0.0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      call();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, flop / s / 1e9);
    }
    return best;
  };
  double best_gflops = 0.0, best_peak = 0.0;
  std::vector<double> vs_blas;
  std::printf("ratio");
  for (int blk = 0; blk < blocks; ++blk) {
    const double peak = fastbench::peak_flops(dtype, 1, false, 0.03).flops_per_s / 1e9;
    const double best = fastest([&] { product(m, n, k, a.data, b.data, c.data(), ldc); });
    if constexpr (!kBf16<T>) {
      if (blas) {
        vs_blas.push_back(best / fastest([&] {
          blas->gemm(m, n, k, a.data, b.data, c.data(), ldc);
        }));
      }
    }
    std::printf(" %.4f", best / peak);
    best_gflops = std::max(best_gflops, best);
    best_peak = std::max(best_peak, peak);
  }
  std::printf(" gflops %.1f peak %.1f", best_gflops, best_peak);
  if (!vs_blas.empty()) {
    std::printf(" blas");
    for (double r : vs_blas) std::printf(" %.4f", r);
  }
  std::printf("\n");
  return 0;
}

template <class T>
int check(const char* dtype, const char* blas_path) {
  // Rows past the float kernels' streamed-B tiles, in whole 64-row units of the tile path;
  // bf16's vdpbf16ps kernel streams B here, which mask 2 skips as well.
  constexpr std::size_t m = 192, n = 96, k = 64;
  Matrix<T> a(m, k), b(k, n);
  for (std::size_t i = 0; i < m * k; ++i) a.data[i] = input<T>(double(i % 7) - 3.0);
  for (std::size_t i = 0; i < k * n; ++i) b.data[i] = input<T>(double(i % 5) - 2.0);
  std::vector<OutOf<T>> first(m * n), c(m * n);
  product(m, n, k, a.data, b.data, first.data(), n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double want = 0.0;
      for (std::size_t p = 0; p < k; ++p) want += value(a.data[i * k + p]) * value(b.data[p * n + j]);
      if (double(first[i * n + j]) != want) {
        std::printf("%s: the first product is %g at (%zu, %zu), expected %g\n", dtype,
                    double(first[i * n + j]), i, j, want);
        return 1;
      }
    }
  }
  if constexpr (!kBf16<T>) {  // the library `time` compares with computes the same product
    if (blas_path != nullptr) {
      const Blas<T> blas(blas_path);
      if (!blas.ok()) {
        std::printf("%s: no CBLAS gemm in %s\n", dtype, blas_path);
        return 1;
      }
      std::vector<T> theirs(m * n, T(0.5));
      blas.gemm(m, n, k, a.data, b.data, theirs.data(), n);
      if (theirs != first) {
        std::printf("%s: %s's product differs from the first one\n", dtype, blas_path);
        return 1;
      }
    }
  }
  fastbench::g_ablating = true;
  for (std::size_t i = 0; i < m * k; ++i) a.data[i] = input<T>(2.0 * value(a.data[i]));
  for (std::size_t i = 0; i < k * n; ++i) b.data[i] = input<T>(4.0 * value(b.data[i]));
  std::fill(c.begin(), c.end(), OutOf<T>(0.5));
  product(m, n, k, a.data, b.data, c.data(), n);
  std::size_t untouched = 0, scaled = 0;
  for (std::size_t i = 0; i < m * n; ++i) {
    untouched += c[i] == OutOf<T>(0.5);
    scaled += double(c[i]) == 8.0 * double(first[i]);
  }
  constexpr unsigned mask = FASTBENCH_GEMM_ABLATE;
  // Tiles read a line-aligned A in place (whole 32-row slivers): no packing of A to skip.
  const bool a_packed = !(kBf16<T> && std::strcmp(fastbench::gemm_bf16_isa(), "amx_bf16") == 0);
  const bool stale = (mask & 2) != 0 || ((mask & 1) != 0 && a_packed);
  if ((mask & 4) != 0) {
    if (untouched != m * n) {
      std::printf("%s: C ablated, but %zu of %zu values of C were written\n", dtype,
                  m * n - untouched, m * n);
      return 1;
    }
  } else if (!stale && scaled != m * n) {
    std::printf("%s: nothing skipped that this product needs, yet %zu of %zu values differ\n",
                dtype, m * n - scaled, m * n);
    return 1;
  } else if (stale && scaled == m * n) {
    std::printf("%s: packing skipped (mask %u), yet the product followed the new inputs\n",
                dtype, mask);
    return 1;
  }
  std::printf("check ok\n");
  return 0;
}

template <class T>
int dispatch(const std::string& what, int argc, char** argv, const char* dtype) {
  if (what == "check") {
    if (argc > 3) fastbench::detail::set_isa_cap(fastbench::parse_isa(argv[3], "gemm_ablation"));
    return check<T>(dtype, argc > 4 ? argv[4] : nullptr);
  }
  if (argc < 6) return -1;
  const std::size_t m = std::strtoul(argv[3], nullptr, 10);
  const std::size_t n = std::strtoul(argv[4], nullptr, 10);
  const std::size_t k = std::strtoul(argv[5], nullptr, 10);
  const int reps = argc > 6 ? std::atoi(argv[6]) : 10;
  const int blocks = argc > 7 ? std::atoi(argv[7]) : 5;
  const long pad = argc > 8 ? std::atol(argv[8]) : 0;
  const char* blas = argc > 9 ? argv[9] : nullptr;
  if (m == 0 || n == 0 || k == 0 || reps < 1 || blocks < 1 || pad < 0) return -1;
  return time_products<T>(m, n, k, reps, blocks, dtype, static_cast<std::size_t>(pad), blas);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  const std::string dtype = argc > 2 ? argv[2] : "";
  int rc = -1;
  if (what == "time" || what == "check") {
    if (dtype == "float32") rc = dispatch<float>(what, argc, argv, "float32");
    if (dtype == "float64") rc = dispatch<double>(what, argc, argv, "float64");
    if (dtype == "bfloat16") rc = dispatch<std::uint16_t>(what, argc, argv, "bfloat16");
  }
  if (rc < 0) {
    std::fprintf(stderr,
                 "usage: %s time float32|float64|bfloat16 M N K [REPS] [BLOCKS] [LDC_PAD] [BLAS]\n"
                 "       %s check float32|float64|bfloat16 [portable|avx2|avx512|amx] [BLAS]\n",
                 argv[0], argv[0]);
    return 2;
  }
  return rc;
}
