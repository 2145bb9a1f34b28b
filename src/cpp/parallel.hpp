// parallel.hpp — runs one function on several threads and waits for all of them: the only
// threading the kernels use, on a pool of workers kept for the process (a call from inside
// a parallel region starts fresh threads instead). No Python here.
#pragma once

#include <functional>

namespace fastbench {

// Logical CPUs this process may run on (sched_getaffinity on Linux, else
// std::thread::hardware_concurrency), at least 1.
int hardware_threads();

// `threads` as a kernel parameter: 0 means hardware_threads(); negative throws
// std::invalid_argument naming `who`. Returns at least 1.
int resolve_threads(int threads, const char* who);

// Calls fn(tid, nthreads) for tid in [0, nthreads) on nthreads threads (tid 0 on the caller)
// and waits for all. The first exception thrown by any call is rethrown after all have
// finished. Calls from several threads at once run one after another.
void run_parallel(int nthreads, const std::function<void(int tid, int nthreads)>& fn);

}  // namespace fastbench
