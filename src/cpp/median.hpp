// median.hpp — the median of a sample, the one summary the native core computes itself
// (calibrations, overhead and cost figures); everything else is summarised in Python.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace fastbench::detail {

// Median of `v` (taken by value and partially reordered); the mean of the middle two for an
// even count. `v` must not be empty.
inline double median(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  const auto mid_it = v.begin() + static_cast<std::ptrdiff_t>(mid);
  std::nth_element(v.begin(), mid_it, v.end());
  const double m = *mid_it;
  return v.size() % 2 ? m : 0.5 * (m + *std::max_element(v.begin(), mid_it));
}

}  // namespace fastbench::detail
