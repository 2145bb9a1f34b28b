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
  std::string isa;              // isa_name() of the path run: "avx2" or "portable"
};

// Runs `kind` over `working_set_bytes` (split evenly among its arrays, each 64-byte aligned,
// first touched by the thread that uses it) on `threads` threads (0 = all) for at least
// `min_time_s`, passes timed after one warm pass. Throws std::invalid_argument for an unknown
// kind, a working set below 4 KiB·threads or above 1/2 of physical memory, or a bad thread
// count or time; std::bad_alloc when the arrays cannot be allocated; Interrupted when the
// InterruptScope of the calling thread stops it.
BandwidthResult bandwidth(const std::string& kind, std::size_t working_set_bytes, int threads = 1,
                          double min_time_s = 0.05);

}  // namespace fastbench
