// gemm.hpp — C = alpha·A·B + beta·C for float and double, row-major, any sizes: the compute
// ceiling that roofline calibration reaches with real code. Register-blocked AVX-512 and
// AVX2/FMA micro-kernels with packing and cache blocking where the ISA dispatch allows them
// (isa.hpp), a portable path always; and a bf16 GEMM with float32 accumulation. No Python
// here.
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

// C[m×n] = alpha · A[m×k] · B[k×n] + beta · C with A and B in bf16 (each value the upper 16
// bits of a float32), products and sums in float32, C float32; same layout, arguments and
// errors as gemm() ("[gemm_bf16] ..."). Runs AVX512_BF16 (vdpbf16ps) where the CPU has it
// and the ISA cap allows avx512; elsewhere widens A and B to float32 (exact: a bf16 product
// fits a float32) and runs the float32 gemm, which needs (m·k + k·n)·4 bytes more.
void gemm_bf16(std::size_t m, std::size_t n, std::size_t k, float alpha, const std::uint16_t* a,
               std::size_t lda, const std::uint16_t* b, std::size_t ldb, float beta, float* c,
               std::size_t ldc, int threads = 0);

// The path gemm_bf16() takes now: "avx512_bf16", or the gemm_isa() of the float32 gemm it
// widens to.
const char* gemm_bf16_isa();

// The path gemm() takes now for float32 (f64: float64), an isa_name(): "avx512", "avx2" or
// "portable". Follows the ISA cap (detail::set_isa_cap). A core whose 512-bit FMAs run at half
// rate (Zen 4) runs ymm kernels, measured faster there: float32's AVX2 kernel ("avx2"), and
// for float64 a wider tile that needs AVX-512VL's 32 ymm registers ("avx512").
const char* gemm_isa(bool f64 = false);

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
// Test hook: whether tiles of few rows (at most 128 on the float zmm kernels, 64 on the AVX2
// ones, one unit of rows on bf16's vdpbf16ps kernel) stream B a sliver at a time (the
// default) rather than packing whole panels first (process-wide), so that tests cover both
// nests.
void gemm_stream_b(bool on);
// Units of a thread's tile run by another thread since the process started.
std::uint64_t gemm_units_shared();
// Test hook: run the zmm kernels where AVX-512 is allowed even on a core whose 512-bit FMAs
// run at half rate (Zen 4), so that tests there cover them (process-wide).
void gemm_zmm_at_half_rate(bool on);
// Test hook: where AVX-512 is allowed, run the kernels chosen on a core whose 512-bit FMAs run
// at half rate (float64's ymm tile with AVX-512VL, float32's AVX2 kernel) on any AVX-512 core,
// so that tests cover them off Zen 4 (process-wide; wins over gemm_zmm_at_half_rate).
void gemm_ymm_tiles(bool on);
}  // namespace detail

}  // namespace fastbench
