// test_bandwidth.cpp — native tests of the memory-bandwidth and FMA-peak kernels: STREAM
// byte counting, ordering of cache levels, thread scaling kept generous (the machine is
// shared), FLOP per cycle against the ISA's promise, every error path, and interrupts; each
// bandwidth path the CPU runs (AVX-512, AVX2, portable, under the ISA cap) against a scalar loop.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bandwidth.hpp"
#include "harness.hpp"
#include "interrupt.hpp"
#include "isa.hpp"
#include "isa_cap.hpp"
#include "peak.hpp"
#include "stop_check.hpp"

namespace fb = fastbench;

namespace {

void test_bytes_are_counted_as_stream() {
  struct Case {
    const char* kind;
    std::size_t arrays;
    double bytes_per_element;
  };
  const Case cases[] = {{"read", 1, 8},  {"write", 1, 8}, {"copy", 2, 16},
                        {"scale", 2, 16}, {"add", 3, 24},  {"triad", 3, 24}};
  for (const Case& c : cases) {
    const std::size_t ws = 3 * 32 * 1024;
    const fb::BandwidthResult r = fb::bandwidth(c.kind, ws, 1, 0.002);
    const double elements = static_cast<double>(ws / 8 / c.arrays);
    CHECK(r.kind == c.kind && r.arrays == c.arrays, c.kind, " arrays ", r.arrays);
    CHECK(r.bytes_per_pass == elements * c.bytes_per_element, c.kind, " ", r.bytes_per_pass);
    const double stored = std::string(c.kind) == "read" ? 0.0 : elements * 8;
    CHECK(r.write_allocate_bytes_per_pass == stored, c.kind, " ", r.write_allocate_bytes_per_pass);
    CHECK(r.gb_per_s > 0 && std::isfinite(r.gb_per_s), c.kind, " ", r.gb_per_s);
    CHECK(r.best_s > 0 && r.best_s <= r.median_s, c.kind, " ", r.best_s, " ", r.median_s);
    CHECK(std::fabs(r.gb_per_s - r.bytes_per_pass / r.best_s / 1e9) <= 1e-9 * r.gb_per_s, c.kind);
    CHECK(r.passes >= 3 && r.threads == 1, c.kind, " passes ", r.passes);
  }
}

// 32 MiB on one thread takes the 16-byte loops of the streaming kinds (past the caches).
void test_large_working_sets_take_every_kind() {
  for (const char* kind : {"copy", "scale", "add", "triad"}) {
    const fb::BandwidthResult r = fb::bandwidth(kind, 32u << 20, 1, 0.005);
    CHECK(r.gb_per_s > 0 && std::isfinite(r.gb_per_s) && r.passes >= 3, kind, " ", r.gb_per_s);
    CHECK(r.working_set_bytes <= (32u << 20) && r.working_set_bytes + 64 > (32u << 20), kind,
          " ", r.working_set_bytes);
  }
}

void test_l1_outruns_dram() {
  const fb::BandwidthResult l1 = fb::bandwidth("read", 16 * 1024, 1, 0.01);
#if defined(NDEBUG)
  const std::size_t big = 128u << 20;
#else
  const std::size_t big = 64u << 20;  // sanitizers slow the first touch
#endif
  const fb::BandwidthResult dram = fb::bandwidth("read", big, 1, 0.02);
  CHECK(l1.gb_per_s > 0 && dram.gb_per_s > 0, l1.gb_per_s, " ", dram.gb_per_s);
#if defined(NDEBUG)
  // Unoptimised (Debug) kernels are bound by their own instructions at every size.
  CHECK(l1.gb_per_s > dram.gb_per_s, "L1 ", l1.gb_per_s, " vs DRAM ", dram.gb_per_s);
#endif
  std::printf("note: read L1 %.1f GB/s, %zu MiB %.1f GB/s (%s)\n", l1.gb_per_s, big >> 20,
              dram.gb_per_s, l1.isa.c_str());
}

void test_two_threads_are_not_slower_than_half_of_one() {
  const fb::BandwidthResult one = fb::bandwidth("triad", 3u << 20, 1, 0.01);
  const fb::BandwidthResult two = fb::bandwidth("triad", 3u << 20, 2, 0.01);
  CHECK(two.threads == 2, two.threads);
  CHECK(two.gb_per_s > 0.5 * one.gb_per_s, "2 threads ", two.gb_per_s, " vs 1 ", one.gb_per_s);
}

// The ISAs this CPU can run, narrowest first.
std::vector<fb::Isa> runnable_isas() {
  std::vector<fb::Isa> out;
  for (fb::Isa isa : {fb::Isa::portable, fb::Isa::avx2, fb::Isa::avx512}) {
    if (isa <= fb::best_isa()) out.push_back(isa);
  }
  return out;
}

struct FreeDeleter {
  void operator()(double* p) const noexcept { std::free(p); }
};
using Buffer = std::unique_ptr<double[], FreeDeleter>;

Buffer aligned_buffer(std::size_t n) {
  void* p = std::aligned_alloc(64, (n * sizeof(double) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return Buffer(static_cast<double*>(p));
}

// Every kind on every path (the zmm, ymm, 16-byte and scalar loops and their tails) computes
// what a scalar loop does, element by element. Values are small multiples of 1/4, so every
// sum, product and fused multiply-add is exact and the comparison can be exact too.
void test_every_bandwidth_path_computes_what_a_scalar_loop_does() {
  const std::size_t lengths[] = {1, 7, 8, 63, 64, 65, 200, 1037};
  for (fb::Isa isa : runnable_isas()) {
    const IsaCap cap(isa);
    for (const bool past_caches : {false, true}) {
      for (const std::size_t n : lengths) {
        Buffer x1 = aligned_buffer(n), x2 = aligned_buffer(n), y = aligned_buffer(n);
        for (std::size_t i = 0; i < n; ++i) {
          x1[i] = 0.25 * static_cast<double>(i % 97) - 3.0;
          x2[i] = 0.5 * static_cast<double>((i * 7) % 31) + 1.0;
        }
        for (const char* kind : {"read", "write", "copy", "scale", "add", "triad"}) {
          const std::string k = kind;
          for (std::size_t i = 0; i < n; ++i) y[i] = -1e300;  // poison: every element is written
          const fb::detail::BandwidthPass r =
              fb::detail::bandwidth_pass(k, x1.get(), x2.get(), y.get(), n, past_caches);
          const bool streaming = k != "read" && k != "write";
          const fb::Isa ran = past_caches && streaming && isa >= fb::Isa::avx2 ? fb::Isa::avx2 : isa;
          CHECK(std::string(r.isa) == fb::isa_name(ran), kind, " capped at ", fb::isa_name(isa),
                " ran ", r.isa);
          if (k == "read") {
            double want = 0.0;
            for (std::size_t i = 0; i < n; ++i) want += x1[i];
            CHECK(r.sum == want, kind, " ", r.isa, " n=", n, ": ", r.sum, " vs ", want);
            continue;
          }
          CHECK(r.sum == 0.0, kind, " ", r.sum);
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const double want = k == "write"   ? 3.0
                                : k == "copy"  ? x1[i]
                                : k == "scale" ? 3.0 * x1[i]
                                : k == "add"   ? x1[i] + x2[i]
                                               : x1[i] + 3.0 * x2[i];
            if (y[i] != want) ++wrong;
          }
          CHECK(wrong == 0, kind, " ", r.isa, past_caches ? " past caches" : "", " n=", n, ": ",
                wrong, " elements differ");
        }
      }
    }
  }
  Buffer a = aligned_buffer(16);
  CHECK_THROWS(std::invalid_argument,
               fb::detail::bandwidth_pass("copy", a.get() + 1, a.get(), a.get(), 8),
               "[bandwidth_pass]");
  CHECK_THROWS(std::invalid_argument, fb::detail::bandwidth_pass("stream", a.get(), a.get(), a.get(), 8),
               "[bandwidth]");
}

// The kernel runs the widest loops the cap allows and says which: zmm where AVX-512 is
// allowed, in cache-sized working sets; the 16-byte loops past the caches say "avx2".
void test_bandwidth_runs_and_names_the_widest_allowed_path() {
  for (fb::Isa isa : runnable_isas()) {
    const IsaCap cap(isa);
    for (const char* kind : {"read", "write", "copy", "scale", "add", "triad"}) {
      const fb::BandwidthResult r = fb::bandwidth(kind, 3 * 8 * 1024, 1, 0.001);
      CHECK(r.isa == fb::isa_name(isa), kind, " capped at ", fb::isa_name(isa), " ran ", r.isa);
    }
    const fb::BandwidthResult big = fb::bandwidth("triad", 33u << 20, 1, 0.001);
    const fb::Isa want = isa >= fb::Isa::avx2 ? fb::Isa::avx2 : isa;
    CHECK(big.isa == fb::isa_name(want), "triad 33 MiB capped at ", fb::isa_name(isa), " ran ",
          big.isa);
    // Indicative only: the machine is shared.
    const fb::BandwidthResult l1 = fb::bandwidth("read", 16 * 1024, 1, 0.01);
    const fb::BandwidthResult l2 = fb::bandwidth("triad", 384 * 1024, 1, 0.01);
    std::printf("note: %s: read 16 KiB %.1f GB/s, triad 384 KiB %.1f GB/s\n", l1.isa.c_str(),
                l1.gb_per_s, l2.gb_per_s);
  }
}

void test_bandwidth_rejects_bad_input() {
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("stream", 1 << 20, 1, 0.01), "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", 100, 1, 0.01), "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", 8192, 4, 0.01), "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", std::size_t{1} << 62, 1, 0.01),
               "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", 1 << 20, -1, 0.01), "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", 1 << 20, 1, 0.0), "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", 1 << 20, 1, NAN), "[bandwidth]");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("copy", 1 << 20, 1, INFINITY), "[bandwidth]");
  // An explicit width runs those loops; one above what runs here is refused.
  CHECK(fb::bandwidth("triad", 24 << 10, 1, 0.002, "portable").isa == "portable", "portable");
  CHECK_THROWS(std::invalid_argument, fb::bandwidth("triad", 24 << 10, 1, 0.002, "sse9"),
               "[bandwidth]");
  if (fb::active_isa() < fb::kWidestIsa) {
    CHECK_THROWS(std::invalid_argument,
                 fb::bandwidth("triad", 24 << 10, 1, 0.002, fb::isa_name(fb::kWidestIsa)),
                 "[bandwidth] isa is");
  }
}

// No x86 core issues more than four vector FMA (or FMA+ADD) instructions a cycle: a figure
// above that is a broken count (a loop the compiler folded, a wrong FLOP per instruction),
// whatever the microarchitecture; a busy machine only lowers the rate.
void test_peak_stays_within_what_four_pipes_could_issue() {
  for (const char* dtype : {"float32", "float64"}) {
    for (const bool mix : {false, true}) {
      const fb::PeakResult r = fb::peak_flops(dtype, 1, mix, 0.02);
      CHECK(r.flops_per_s > 0 && std::isfinite(r.flops_per_s), dtype, " ", r.flops_per_s);
      CHECK(r.dtype == dtype && r.add_mix == mix && r.threads == 1, dtype);
      CHECK(r.flops_per_instruction > 0, dtype);
      CHECK(r.flops_per_cycle > 0 && r.flops_per_cycle <= 4.0 * r.flops_per_instruction,
            dtype, " mix ", mix, ": ", r.flops_per_cycle, " per cycle, ",
            r.flops_per_instruction, " per instruction");
      std::printf("note: %s%s %.1f GFLOP/s, %.1f FLOP/cycle (%s)\n", dtype, mix ? "+add" : "",
                  r.flops_per_s / 1e9, r.flops_per_cycle, r.isa.c_str());
    }
  }
}

void test_core_clock_is_plausible() {
  const double hz = fb::core_hz(0.01);
#if defined(__x86_64__)
  CHECK(hz > 0.5e9 && hz < 6e9, hz);
#else
  CHECK(hz == 0.0, hz);
#endif
}

void test_peak_rejects_bad_input() {
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float16", 1, false, 0.01), "[peak_flops]");
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float32", -2, false, 0.01), "[peak_flops]");
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float32", 1, false, -1.0), "[peak_flops]");
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float32", 1, true, NAN), "[peak_flops]");
  CHECK_THROWS(std::invalid_argument, fb::peak_flops("float64", 1, false, 0.0), "[peak_flops]");
  CHECK_THROWS(std::invalid_argument, fb::core_hz(INFINITY), "[core_hz]");
  CHECK_THROWS(std::invalid_argument, fb::core_hz(0.0), "[core_hz]");
}

// Seconds since `t0`.
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Asked for 30 s of work, each kernel stops at the first check of a scope that asks to stop
// at once (a bound of 15 s leaves any loaded machine room), on 1 and 2 threads.
void test_interrupt_stops_long_kernels() {
  for (int threads : {1, 2}) {
    // A slice longer than one piece of a pass, so the pieces are checked too.
    for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{48} << 20}) {
      StopCheck stop;
      const StopScope scope(stop);
      const auto t0 = std::chrono::steady_clock::now();
      CHECK_THROWS(fb::Interrupted, fb::bandwidth("triad", bytes, threads, 30.0),
                   "[bandwidth] interrupted");
      CHECK(since(t0) < 15.0 && stop.calls == 1 && !stop.foreign_thread, "bandwidth ", bytes,
            " threads=", threads, ": ", since(t0), " s, calls ", stop.calls.load());
    }
    StopCheck stop;
    const StopScope scope(stop);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS(fb::Interrupted, fb::peak_flops("float32", threads, false, 30.0),
                 "[peak_flops] interrupted");
    CHECK(since(t0) < 15.0 && stop.calls == 1 && !stop.foreign_thread, "peak_flops threads=",
          threads, ": ", since(t0), " s, calls ", stop.calls.load());
  }
  StopCheck stop;
  const StopScope scope(stop);
  const auto t0 = std::chrono::steady_clock::now();
#if defined(__x86_64__)
  CHECK_THROWS(fb::Interrupted, fb::core_hz(30.0), "[core_hz] interrupted");
#else
  fb::core_hz(30.0);  // no chain to run: returns 0 at once
#endif
  CHECK(since(t0) < 15.0, "core_hz: ", since(t0), " s");
}

// A check that never asks to stop leaves results as they were.
void test_interrupt_check_that_never_stops_changes_nothing() {
  StopCheck never;
  never.stop_from = 0;
  const StopScope scope(never);
  const fb::BandwidthResult bw = fb::bandwidth("copy", 1 << 20, 2, 0.03);
  CHECK(bw.passes >= 3 && bw.gb_per_s > 0 && never.calls >= 1, bw.passes, " passes, calls ",
        never.calls.load());
  const fb::PeakResult peak = fb::peak_flops("float64", 2, false, 0.03);
  CHECK(peak.flops_per_s > 0 && peak.seconds >= 0.03, peak.flops_per_s, " ", peak.seconds);
}

const Test kTests[] = {
    {"bytes_are_counted_as_stream", test_bytes_are_counted_as_stream},
    {"large_working_sets_take_every_kind", test_large_working_sets_take_every_kind},
    {"l1_outruns_dram", test_l1_outruns_dram},
    {"two_threads_are_not_slower_than_half_of_one", test_two_threads_are_not_slower_than_half_of_one},
    {"every_bandwidth_path_computes_what_a_scalar_loop_does",
     test_every_bandwidth_path_computes_what_a_scalar_loop_does},
    {"bandwidth_runs_and_names_the_widest_allowed_path",
     test_bandwidth_runs_and_names_the_widest_allowed_path},
    {"bandwidth_rejects_bad_input", test_bandwidth_rejects_bad_input},
    {"peak_stays_within_what_four_pipes_could_issue",
     test_peak_stays_within_what_four_pipes_could_issue},
    {"core_clock_is_plausible", test_core_clock_is_plausible},
    {"peak_rejects_bad_input", test_peak_rejects_bad_input},
    {"interrupt_stops_long_kernels", test_interrupt_stops_long_kernels},
    {"interrupt_check_that_never_stops_changes_nothing",
     test_interrupt_check_that_never_stops_changes_nothing},
};

}  // namespace

int main() { return run_all(kTests); }
