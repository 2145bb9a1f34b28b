// simd/avx512.hpp — the traits of Isa::avx512: zmm registers of float and double behind the
// names of simd/avx2.hpp, so a kernel written once as a template over the traits runs on
// either width. Every function carries target("avx512f,avx512bw,avx512vl,avx512dq"):
// callable (and inlined) only from functions with that target, which run only where
// kernel_isa() (isa.hpp) says avx512; the rest of the library stays baseline x86-64.
// x86-64 only; no Python here.
#pragma once

#if defined(__x86_64__)

#include <immintrin.h>

#define FASTBENCH_AVX512_FN                                                         \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), always_inline)) \
  static inline

namespace fastbench::detail {

template <class T>
struct Avx512;

template <>
struct Avx512<float> {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  FASTBENCH_AVX512_FN Reg zero() { return _mm512_setzero_ps(); }
  FASTBENCH_AVX512_FN Reg set(float v) { return _mm512_set1_ps(v); }
  FASTBENCH_AVX512_FN Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  FASTBENCH_AVX512_FN Reg load(const float* p) { return _mm512_load_ps(p); }
  FASTBENCH_AVX512_FN Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  FASTBENCH_AVX512_FN void store(float* p, Reg v) { _mm512_store_ps(p, v); }
  FASTBENCH_AVX512_FN void storeu(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  FASTBENCH_AVX512_FN Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  FASTBENCH_AVX512_FN Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  FASTBENCH_AVX512_FN Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  // The lanes summed in double.
  FASTBENCH_AVX512_FN double sum(Reg a) {
    alignas(64) float v[kLanes];
    _mm512_store_ps(v, a);
    double s = 0.0;
    for (float x : v) s += x;
    return s;
  }
};

template <>
struct Avx512<double> {
  using Reg = __m512d;
  static constexpr int kLanes = 8;
  FASTBENCH_AVX512_FN Reg zero() { return _mm512_setzero_pd(); }
  FASTBENCH_AVX512_FN Reg set(double v) { return _mm512_set1_pd(v); }
  FASTBENCH_AVX512_FN Reg broadcast(const double* p) { return _mm512_set1_pd(*p); }
  FASTBENCH_AVX512_FN Reg load(const double* p) { return _mm512_load_pd(p); }
  FASTBENCH_AVX512_FN Reg loadu(const double* p) { return _mm512_loadu_pd(p); }
  FASTBENCH_AVX512_FN void store(double* p, Reg v) { _mm512_store_pd(p, v); }
  FASTBENCH_AVX512_FN void storeu(double* p, Reg v) { _mm512_storeu_pd(p, v); }
  FASTBENCH_AVX512_FN Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_pd(a, b, c); }
  FASTBENCH_AVX512_FN Reg add(Reg a, Reg b) { return _mm512_add_pd(a, b); }
  FASTBENCH_AVX512_FN Reg mul(Reg a, Reg b) { return _mm512_mul_pd(a, b); }
  FASTBENCH_AVX512_FN double sum(Reg a) {
    alignas(64) double v[kLanes];
    _mm512_store_pd(v, a);
    double s = 0.0;
    for (double x : v) s += x;
    return s;
  }
};

}  // namespace fastbench::detail

#undef FASTBENCH_AVX512_FN

#endif  // __x86_64__
