// bandwidth.hpp — STREAM-style memory kernels (read, write, copy, scale, add, triad) over a
// working set of a given size on 1..N threads: the memory ceilings of the roofline.
// Bytes are counted as STREAM does: each array element read or written once per pass,
// without the write-allocate read a cached store also causes (reported apart). No Python here.
#pragma once

#include <cstddef>
#include <string>

namespace fastbench {

struct BandwidthResult {
  std::string kind;             // read, write, copy, scale, add or triad
  std::size_t working_set_bytes = 0;  // all arrays together
  std::size_t arrays = 0;       // arrays the kind touches (read 1, write 1, copy 2, ... triad 3)
  double bytes_per_pass = 0.0;  // counted bytes moved by one pass over the arrays
  double write_allocate_bytes_per_pass = 0.0;  // extra reads of stored lines (not counted)
  double best_s = 0.0;          // fastest pass
  double median_s = 0.0;        // median pass
  double gb_per_s = 0.0;        // bytes_per_pass / best_s / 1e9
  int threads = 1;
  int passes = 0;
  std::string isa;              // isa_name() of the loops run: "avx512", "avx2" or "portable";
                                // "avx2" for the 16-byte loops of copy, scale, add and triad
                                // past the caches (32 MiB per thread and more)
};

// Runs `kind` over `working_set_bytes` (split evenly among its arrays, each 64-byte aligned,
// first touched by the thread that uses it) on `threads` threads (0 = all) for at least
// `min_time_s`, passes timed after one warm pass. Throws std::invalid_argument for an unknown
// kind, a working set below 4 KiB·threads or above 1/2 of physical memory, or a bad thread
// count or time; std::bad_alloc when the arrays cannot be allocated; Interrupted when the
// InterruptScope of the calling thread stops it. `isa` picks the widest loops to use
// ("avx512", "avx2", "portable"; "" means what kernel_isa() allows); one above what runs here
// is an std::invalid_argument.
BandwidthResult bandwidth(const std::string& kind, std::size_t working_set_bytes, int threads = 1,
                          double min_time_s = 0.05, const std::string& isa = "");

namespace detail {
// What one pass computed and the ISA of the loops that ran it.
struct BandwidthPass {
  double sum = 0.0;         // read: the sum of x1; 0 for the other kinds
  const char* isa = "";     // isa_name(), as BandwidthResult::isa
};

// Test hook: one untimed pass of `kind` over [0, n) on the path bandwidth() takes now (the
// ISA cap included; `past_caches` picks the loops of working sets past the caches), so its
// arithmetic can be checked against a scalar loop: write y = 3; copy y = x1; scale y = 3 x1;
// add y = x1 + x2; triad y = x1 + 3 x2. Arrays must be 64-byte aligned (slices are), else
// std::invalid_argument; x2 and y may be the same array as x1 where unused.
BandwidthPass bandwidth_pass(const std::string& kind, const double* x1, const double* x2,
                             double* y, std::size_t n, bool past_caches = false);
}  // namespace detail

}  // namespace fastbench
