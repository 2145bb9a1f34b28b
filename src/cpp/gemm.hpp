// gemm.hpp — C = alpha·A·B + beta·C for float and double, row-major, any sizes: the compute
// ceiling that roofline calibration reaches with real code. A register-blocked AVX2/FMA
// micro-kernel with packing and cache blocking where the ISA dispatch allows it (isa.hpp;
// AVX-512 machines run it too), a portable path always. No Python here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fastbench {

// C[m×n] = alpha · A[m×k] · B[k×n] + beta · C, row-major with leading dimensions in
// elements (lda >= k, ldb >= n, ldc >= n). beta == 0 ignores what C held (NaN included),
// as BLAS does; k == 0 scales C by beta. threads: 0 = hardware_threads().
// Throws std::invalid_argument ("[gemm] ...") for a leading dimension below its row length,
// a null pointer with a non-empty operand, a C whose memory meets A's or B's (where they are
// read: k > 0 and alpha != 0), or a thread count that resolve_threads refuses;
// Interrupted when the InterruptScope of the calling thread stops it (C partly written).
void gemm(std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
          std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc, int threads = 0);
void gemm(std::size_t m, std::size_t n, std::size_t k, double alpha, const double* a,
          std::size_t lda, const double* b, std::size_t ldb, double beta, double* c,
          std::size_t ldc, int threads = 0);

// The path gemm() takes now, an isa_name(): "avx2" or "portable" (never "avx512": there is
// no AVX-512 micro-kernel). Follows the ISA cap (detail::set_isa_cap).
const char* gemm_isa();

// Cache-blocking sizes in use (elements), for reports and tests.
struct GemmBlocking {
  std::size_t mc = 0, kc = 0, nc = 0;  // A block mc×kc (L2), B panel kc×nc (L3), kc·nr (L1)
  std::size_t mr = 0, nr = 0;          // micro-kernel register tile
};
GemmBlocking gemm_blocking(bool f64);

namespace detail {
// Test hook: cut multi-threaded work into units of a few register tiles whatever their cost
// (process-wide), so that small products exercise the sharing of units between threads.
void gemm_small_units(bool on);
// Units of a thread's tile run by another thread since the process started.
std::uint64_t gemm_units_shared();
}  // namespace detail

}  // namespace fastbench
