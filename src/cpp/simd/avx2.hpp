// simd/avx2.hpp — the traits of Isa::avx2: AVX2+FMA registers of float and double behind
// one set of names, so a kernel is written once as a template over the element type. Every
// function carries target("avx2,fma"): callable (and inlined) only from functions with that
// target, which run only where kernel_isa() (isa.hpp) says avx2 or wider; the rest of the
// library stays baseline x86-64. x86-64 only; no Python here.
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#define FASTBENCH_AVX2_FN __attribute__((target("avx2,fma"), always_inline)) static inline

namespace fastbench::detail {

template <class T>
struct Avx2;

template <>
struct Avx2<float> {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  FASTBENCH_AVX2_FN Reg zero() { return _mm256_setzero_ps(); }
  FASTBENCH_AVX2_FN Reg set(float v) { return _mm256_set1_ps(v); }
  FASTBENCH_AVX2_FN Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  FASTBENCH_AVX2_FN Reg load(const float* p) { return _mm256_load_ps(p); }
  FASTBENCH_AVX2_FN Reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  FASTBENCH_AVX2_FN void store(float* p, Reg v) { _mm256_store_ps(p, v); }
  FASTBENCH_AVX2_FN void storeu(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  FASTBENCH_AVX2_FN Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  FASTBENCH_AVX2_FN Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  FASTBENCH_AVX2_FN Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  // The lanes summed in double.
  FASTBENCH_AVX2_FN double sum(Reg a) {
    alignas(32) float v[kLanes];
    _mm256_store_ps(v, a);
    double s = 0.0;
    for (float x : v) s += x;
    return s;
  }
};

template <>
struct Avx2<double> {
  using Reg = __m256d;
  static constexpr int kLanes = 4;
  FASTBENCH_AVX2_FN Reg zero() { return _mm256_setzero_pd(); }
  FASTBENCH_AVX2_FN Reg set(double v) { return _mm256_set1_pd(v); }
  FASTBENCH_AVX2_FN Reg broadcast(const double* p) { return _mm256_broadcast_sd(p); }
  FASTBENCH_AVX2_FN Reg load(const double* p) { return _mm256_load_pd(p); }
  FASTBENCH_AVX2_FN Reg loadu(const double* p) { return _mm256_loadu_pd(p); }
  FASTBENCH_AVX2_FN void store(double* p, Reg v) { _mm256_store_pd(p, v); }
  FASTBENCH_AVX2_FN void storeu(double* p, Reg v) { _mm256_storeu_pd(p, v); }
  FASTBENCH_AVX2_FN Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_pd(a, b, c); }
  FASTBENCH_AVX2_FN Reg add(Reg a, Reg b) { return _mm256_add_pd(a, b); }
  FASTBENCH_AVX2_FN Reg mul(Reg a, Reg b) { return _mm256_mul_pd(a, b); }
  FASTBENCH_AVX2_FN double sum(Reg a) {
    alignas(32) double v[kLanes];
    _mm256_store_pd(v, a);
    return v[0] + v[1] + v[2] + v[3];
  }
};

}  // namespace fastbench::detail

#undef FASTBENCH_AVX2_FN

#endif  // __x86_64__
