// bindings.cpp — the one pybind11 translation unit: fastbench._core.
// Converts arguments and results, maps errors, releases the GIL around native-only work.
// No measuring logic here; the order of definitions matches _core.pyi.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bandwidth.hpp"
#include "clock.hpp"
#include "conv.hpp"
#include "cpu.hpp"
#include "gemm.hpp"
#include "interrupt.hpp"
#include "isa.hpp"
#include "parallel.hpp"
#include "peak.hpp"
#include "perf_counters.hpp"
#include "perf_math.hpp"
#include "timing.hpp"

namespace py = pybind11;
namespace fb = fastbench;

namespace {

// Checked between samples: a pending Ctrl-C (or any signal handler that raised) stops the
// run with the handler's exception.
void check_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// The interrupt check of native kernels (fb::InterruptScope), which the core runs on the
// calling thread between blocks of work, every 10 ms or more, while the GIL is released: takes
// the GIL back for Python's signal handlers. A handler's exception (KeyboardInterrupt for
// Ctrl-C) stays set while the kernel stops; the translator for fb::Interrupted raises it.
// While the interpreter shuts down, taking the GIL would end this thread in the middle of
// the kernel's threads: the kernel finishes instead.
bool signal_raised(void*) {
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return false;
#else
  if (_Py_IsFinalizing()) return false;
#endif
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

// A core function whose long work stops for Ctrl-C: it runs under an InterruptScope.
template <class R, class... Args>
auto interruptible(R (*fn)(Args...)) {
  return [fn](Args... args) -> R {
    const fb::InterruptScope interrupt(signal_raised, nullptr);
    return fn(std::forward<Args>(args)...);
  };
}

// One call of a Python callable with arguments bound once, outside the timed loop.
// Holds borrowed pointers: the owning Sampler keeps the objects alive.
struct VectorCall {
  PyObject* callable;
  std::vector<PyObject*> slots;  // slots[0] is scratch for PY_VECTORCALL_ARGUMENTS_OFFSET
  std::size_t nargsf;
  PyObject* kwnames;
  void operator()() const {
    PyObject* result = PyObject_Vectorcall(callable, slots.data() + 1, nargsf, kwnames);
    if (result == nullptr) throw py::error_already_set();  // fn raised: stop, keep its error
    Py_DECREF(result);
  }
};

// A timed target: a Python callable, a Python inner loop (timeit), or the empty body.
class Sampler {
 public:
  static Sampler calls(py::object fn, py::tuple args, py::dict kwargs, const std::string& clock) {
    if (!PyCallable_Check(fn.ptr())) {
      throw py::type_error("[Sampler.calls] fn is not callable: " +
                           std::string(py::str(py::type::of(fn).attr("__name__"))));
    }
    Sampler s(fb::parse_clock(clock));
    s.keep_ = py::make_tuple(fn, args, kwargs);
    VectorCall body{fn.ptr(), {nullptr}, 0, nullptr};
    for (py::handle a : args) body.slots.push_back(a.ptr());
    body.nargsf = args.size() | PY_VECTORCALL_ARGUMENTS_OFFSET;
    if (!kwargs.empty()) {
      // Own the names and values: the caller may mutate or drop its dict afterwards.
      py::list names, values;
      for (auto item : kwargs) {
        names.append(item.first);
        values.append(item.second);
      }
      py::tuple kwnames(names), kwvalues(values);
      for (py::handle v : kwvalues) body.slots.push_back(v.ptr());
      body.kwnames = kwnames.ptr();
      s.keep_ = py::make_tuple(s.keep_, kwnames, kwvalues);
    }
    s.sample_ = fb::make_sample_fn(s.clock_, body);
    return s;
  }

  static Sampler inner(py::object fn, const std::string& clock) {
    Sampler s(fb::parse_clock(clock));
    s.keep_ = fn;
    PyObject* f = fn.ptr();
    // fn(loops) runs its own loop between read_start/read_stop and returns elapsed ticks.
    s.sample_ = [f](std::uint64_t loops) -> std::uint64_t {
      py::object r = py::reinterpret_steal<py::object>(
          PyObject_CallFunction(f, "K", static_cast<unsigned long long>(loops)));
      if (!r) throw py::error_already_set();
      const unsigned long long ticks = PyLong_AsUnsignedLongLong(r.ptr());
      if (PyErr_Occurred()) throw py::error_already_set();
      return ticks;
    };
    return s;
  }

  static Sampler empty(const std::string& clock) {
    Sampler s(fb::parse_clock(clock));
    s.sample_ = fb::make_sample_fn(s.clock_, fb::EmptyBody{});
    return s;
  }

  fb::Calibration calibrate(double min_time_s, std::uint64_t max_loops) const {
    return fb::calibrate_loops(sample_, clock_, min_time_s, max_loops, check_signals);
  }

  fb::SampleRun run(std::uint64_t loops, std::uint64_t samples, double max_time_s) const {
    return fb::run_samples(sample_, clock_, loops, samples, max_time_s, check_signals);
  }

  std::string clock() const { return fb::clock_name(clock_); }

 private:
  explicit Sampler(fb::ClockId clock) : clock_(clock) {
    if (clock == fb::ClockId::Tsc && !fb::tsc_usable()) {
      throw std::invalid_argument("[Sampler] clock 'tsc' is not usable here: " +
                                  fb::clock_info(fb::ClockId::Tsc).note);
    }
  }
  fb::ClockId clock_;
  fb::SampleFn sample_;
  py::object keep_ = py::none();  // owns everything the sample function points into
};

// Native callables with the same calling convention (METH_FASTCALL | METH_KEYWORDS), so
// that measuring spin against the noop floor cancels the call cost exactly.
struct SpinState {
  fb::ClockId clock;
  std::uint64_t ticks;
};

PyObject* spin_call(PyObject* self, PyObject* const*, Py_ssize_t, PyObject*) {
  const auto* st = static_cast<const SpinState*>(PyCapsule_GetPointer(self, nullptr));
  if (st == nullptr) return nullptr;
  fb::spin_ticks(st->clock, st->ticks);
  Py_RETURN_NONE;
}

PyObject* noop_call(PyObject* self, PyObject* const*, Py_ssize_t, PyObject*) {
  if (PyCapsule_GetPointer(self, nullptr) == nullptr) return nullptr;
  Py_RETURN_NONE;
}

template <class F>
PyCFunction as_cfunction(F f) {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f));
}

PyMethodDef spin_def = {"spin", as_cfunction(spin_call), METH_FASTCALL | METH_KEYWORDS,
                        "Busy-wait for the duration fixed at creation; ignores arguments."};
PyMethodDef noop_def = {"noop", as_cfunction(noop_call), METH_FASTCALL | METH_KEYWORDS,
                        "Do nothing; ignores arguments. The native call floor."};
int noop_token = 0;

py::object make_spin(double ns) {
  fb::check_spin_ns("make_spin", ns);
  const fb::ClockId id = fb::tsc_usable() ? fb::ClockId::Tsc : fb::ClockId::Steady;
  auto* st = new SpinState{id, fb::ns_to_ticks(id, ns)};
  PyObject* cap = PyCapsule_New(st, nullptr, [](PyObject* c) {
    delete static_cast<SpinState*>(PyCapsule_GetPointer(c, nullptr));
  });
  if (cap == nullptr) {
    delete st;
    throw py::error_already_set();
  }
  auto cap_obj = py::reinterpret_steal<py::object>(cap);
  PyObject* fn = PyCFunction_New(&spin_def, cap);
  if (fn == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

py::object make_noop() {
  auto cap = py::reinterpret_steal<py::object>(PyCapsule_New(&noop_token, nullptr, nullptr));
  if (!cap) throw py::error_already_set();
  PyObject* fn = PyCFunction_New(&noop_def, cap.ptr());
  if (fn == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

// A C-contiguous array of exactly T (no conversion, no copy): the kernels read and write
// the caller's memory, which the caller's references keep alive during the call.
template <class T>
using Dense = py::array_t<T, py::array::c_style>;

std::vector<std::size_t> dims(const py::array& a, py::ssize_t ndim, const char* who,
                              const char* name) {
  if (a.ndim() != ndim) {
    throw std::invalid_argument(std::string("[") + who + "] " + name + " has " +
                                std::to_string(a.ndim()) + " dimensions, expected " +
                                std::to_string(ndim));
  }
  std::vector<std::size_t> d;
  for (py::ssize_t i = 0; i < ndim; ++i) d.push_back(static_cast<std::size_t>(a.shape(i)));
  return d;
}

// out = alpha·a·b + beta·out on 2-D arrays of one dtype; shapes checked, GIL released.
template <class T>
void gemm_arrays(const Dense<T>& a, const Dense<T>& b, Dense<T>& out, T alpha, T beta,
                 int threads) {
  const std::vector<std::size_t> da = dims(a, 2, "gemm", "a");
  const std::vector<std::size_t> db = dims(b, 2, "gemm", "b");
  const std::vector<std::size_t> dc = dims(out, 2, "gemm", "out");
  if (da[1] != db[0] || dc[0] != da[0] || dc[1] != db[1]) {
    throw std::invalid_argument("[gemm] shapes do not agree: a " + std::to_string(da[0]) + "x" +
                                std::to_string(da[1]) + ", b " + std::to_string(db[0]) + "x" +
                                std::to_string(db[1]) + ", out " + std::to_string(dc[0]) +
                                "x" + std::to_string(dc[1]));
  }
  T* c = out.mutable_data();  // throws if out is read-only
  const T* pa = a.data();
  const T* pb = b.data();
  // Safe without the GIL: only the arrays' buffers are touched, and the caller holds them.
  py::gil_scoped_release nogil;
  const fb::InterruptScope interrupt(signal_raised, nullptr);
  fb::gemm(da[0], db[1], da[1], alpha, pa, da[1], pb, db[1], beta, c, db[1], threads);
}

// out = alpha·a·b + beta·out with a and b uint16 arrays of bf16 bits, out float32.
void gemm_bf16_arrays(const Dense<std::uint16_t>& a, const Dense<std::uint16_t>& b,
                      Dense<float>& out, float alpha, float beta, int threads) {
  const std::vector<std::size_t> da = dims(a, 2, "gemm_bf16", "a");
  const std::vector<std::size_t> db = dims(b, 2, "gemm_bf16", "b");
  const std::vector<std::size_t> dc = dims(out, 2, "gemm_bf16", "out");
  if (da[1] != db[0] || dc[0] != da[0] || dc[1] != db[1]) {
    throw std::invalid_argument("[gemm_bf16] shapes do not agree: a " + std::to_string(da[0]) +
                                "x" + std::to_string(da[1]) + ", b " + std::to_string(db[0]) +
                                "x" + std::to_string(db[1]) + ", out " +
                                std::to_string(dc[0]) + "x" + std::to_string(dc[1]));
  }
  float* c = out.mutable_data();  // throws if out is read-only
  const std::uint16_t* pa = a.data();
  const std::uint16_t* pb = b.data();
  // Safe without the GIL: only the arrays' buffers are touched, and the caller holds them.
  py::gil_scoped_release nogil;
  const fb::InterruptScope interrupt(signal_raised, nullptr);
  fb::gemm_bf16(da[0], db[1], da[1], alpha, pa, da[1], pb, db[1], beta, c, db[1], threads);
}

py::array_t<float> conv2d_arrays(const Dense<float>& x, const Dense<float>& w,
                                 const std::optional<Dense<float>>& bias,
                                 std::pair<std::size_t, std::size_t> stride,
                                 std::pair<std::size_t, std::size_t> padding,
                                 std::pair<std::size_t, std::size_t> dilation, std::size_t groups,
                                 const std::string& algo, int threads) {
  const std::vector<std::size_t> dx = dims(x, 4, "conv2d", "x");
  const std::vector<std::size_t> dw = dims(w, 4, "conv2d", "weight");
  fb::Conv2dShape s;
  s.n = dx[0];
  s.c_in = dx[1];
  s.h = dx[2];
  s.w = dx[3];
  s.c_out = dw[0];
  s.kh = dw[2];
  s.kw = dw[3];
  s.stride_h = stride.first;
  s.stride_w = stride.second;
  s.pad_h = padding.first;
  s.pad_w = padding.second;
  s.dil_h = dilation.first;
  s.dil_w = dilation.second;
  s.groups = groups;
  fb::conv2d_check(s);
  if (groups == 0 || dw[1] * groups != s.c_in) {
    throw std::invalid_argument("[conv2d] weight has " + std::to_string(dw[1]) +
                                " input channels per group, expected c_in/groups = " +
                                std::to_string(s.c_in) + "/" + std::to_string(groups));
  }
  const float* pb = nullptr;
  if (bias) {
    const std::vector<std::size_t> dbias = dims(*bias, 1, "conv2d", "bias");
    if (dbias[0] != s.c_out) {
      throw std::invalid_argument("[conv2d] bias has " + std::to_string(dbias[0]) +
                                  " elements, expected c_out = " + std::to_string(s.c_out));
    }
    pb = bias->data();
  }
  const std::vector<py::ssize_t> shape = {
      static_cast<py::ssize_t>(s.n), static_cast<py::ssize_t>(s.c_out),
      static_cast<py::ssize_t>(fb::conv2d_out_h(s)), static_cast<py::ssize_t>(fb::conv2d_out_w(s))};
  py::array_t<float> y(shape);
  float* py_out = y.mutable_data();
  const float* px = x.data();
  const float* pw = w.data();
  {
    // Safe without the GIL: only the arrays' buffers are touched, all held by this frame.
    py::gil_scoped_release nogil;
    const fb::InterruptScope interrupt(signal_raised, nullptr);
    fb::conv2d(s, px, pw, pb, py_out, algo, threads);
  }
  return y;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "fastbench native core: clocks, timing loop, calibration (private; use fastbench)";
  // A kernel stopped by signal_raised: the signal handler's exception is still set, raise it.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const fb::Interrupted& e) {
      if (PyErr_Occurred() == nullptr) PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
#ifdef FASTBENCH_VERSION
  m.attr("__version__") = FASTBENCH_VERSION;
#endif

  py::class_<fb::CpuFeatures>(m, "CpuFeatures", "Processor features read from CPUID.")
      .def_readonly("x86", &fb::CpuFeatures::x86)
      .def_readonly("vendor", &fb::CpuFeatures::vendor)
      .def_readonly("brand", &fb::CpuFeatures::brand)
      .def_readonly("sse2", &fb::CpuFeatures::sse2)
      .def_readonly("sse4_2", &fb::CpuFeatures::sse4_2)
      .def_readonly("avx", &fb::CpuFeatures::avx)
      .def_readonly("avx2", &fb::CpuFeatures::avx2)
      .def_readonly("fma", &fb::CpuFeatures::fma)
      .def_readonly("avx512f", &fb::CpuFeatures::avx512f)
      .def_readonly("avx512bw", &fb::CpuFeatures::avx512bw)
      .def_readonly("avx512dq", &fb::CpuFeatures::avx512dq)
      .def_readonly("avx512vl", &fb::CpuFeatures::avx512vl)
      .def_readonly("avx512_vnni", &fb::CpuFeatures::avx512_vnni)
      .def_readonly("avx512_bf16", &fb::CpuFeatures::avx512_bf16)
      .def_readonly("avx_vnni", &fb::CpuFeatures::avx_vnni)
      .def_readonly("amx_tile", &fb::CpuFeatures::amx_tile)
      .def_readonly("amx_bf16", &fb::CpuFeatures::amx_bf16)
      .def_readonly("amx_int8", &fb::CpuFeatures::amx_int8)
      .def_readonly("rdtscp", &fb::CpuFeatures::rdtscp)
      .def_readonly("invariant_tsc", &fb::CpuFeatures::invariant_tsc)
      .def_readonly("hypervisor", &fb::CpuFeatures::hypervisor)
      .def_readonly("family", &fb::CpuFeatures::family)
      .def_readonly("model", &fb::CpuFeatures::model);
  m.def("cpu_features", &fb::cpu_features, py::return_value_policy::copy,
        "Processor features detected at run time.");

  // The one ISA dispatch: names narrowest first; every kernel runs min(active, its widest).
  m.def("isa_names", &fb::isa_names, "ISA names, narrowest first: portable, avx2, avx512, amx.");
  m.def(
      "best_isa", [] { return fb::isa_name(fb::best_isa()); },
      "The widest ISA the CPU and the OS allow.");
  m.def(
      "active_isa", [] { return fb::isa_name(fb::active_isa()); },
      "min(best_isa(), the cap): the widest ISA kernels may use now.");
  m.def(
      "_isa_cap", [] { return fb::isa_name(fb::detail::isa_cap()); },
      "Test hook: the ISA cap of every kernel ('amx' when uncapped).");
  m.def(
      "_set_isa_cap",
      [](const std::string& isa) { fb::detail::set_isa_cap(fb::parse_isa(isa, "_set_isa_cap")); },
      py::arg("isa"), "Test hook: cap the ISA of every kernel (process-wide).");
  m.def("has_avx512_bf16", &fb::has_avx512_bf16, "AVX512_BF16 usable now (the cap included).");
  m.def("has_avx512_vnni", &fb::has_avx512_vnni, "AVX512_VNNI usable now (the cap included).");
  m.def("has_avx_vnni", &fb::has_avx_vnni, "AVX-VNNI usable now (the cap included).");
  m.def("has_amx_int8", &fb::has_amx_int8, "AMX-INT8 tiles usable now (the cap included).");

  py::class_<fb::TscCalibration>(m, "TscCalibration", "TSC rate measured against steady_clock.")
      .def_readonly("hz", &fb::TscCalibration::hz)
      .def_readonly("spread_rel", &fb::TscCalibration::spread_rel)
      .def_readonly("mad_rel", &fb::TscCalibration::mad_rel)
      .def_readonly("window_s", &fb::TscCalibration::window_s)
      .def_readonly("window_hz", &fb::TscCalibration::window_hz);
  m.def("tsc_usable", &fb::tsc_usable, "True when an invariant TSC with rdtscp is present.");
  m.def("calibrate_tsc", &fb::calibrate_tsc, py::arg("windows") = 7, py::arg("window_s") = 0.01,
        py::call_guard<py::gil_scoped_release>(), "Calibrate the TSC rate afresh (GIL released).");
  m.def("tsc_calibration", &fb::tsc_calibration, py::return_value_policy::copy,
        py::call_guard<py::gil_scoped_release>(), "The process-wide TSC calibration.");

  py::class_<fb::ClockInfo>(m, "ClockInfo", "Measured facts about one clock.")
      .def_property_readonly("name", [](const fb::ClockInfo& c) { return c.name; })
      .def_readonly("available", &fb::ClockInfo::available)
      .def_readonly("steady", &fb::ClockInfo::steady)
      .def_readonly("invariant", &fb::ClockInfo::invariant)
      .def_readonly("frequency_hz", &fb::ClockInfo::frequency_hz)
      .def_readonly("resolution_ns", &fb::ClockInfo::resolution_ns)
      .def_readonly("read_overhead_ns", &fb::ClockInfo::read_overhead_ns)
      .def_readonly("pair_overhead_ns", &fb::ClockInfo::pair_overhead_ns)
      .def_readonly("note", &fb::ClockInfo::note);
  m.def(
      "clock_info",
      [](const std::string& name) { return fb::clock_info(fb::parse_clock(name)); },
      py::arg("name"), py::call_guard<py::gil_scoped_release>(),
      "Measured facts about clock 'steady' or 'tsc' (cached).");
  m.def(
      "auto_clock",
      [] {
        const fb::AutoClock a = fb::auto_clock();
        return std::make_pair(std::string(fb::clock_name(a.id)), a.reason);
      },
      py::call_guard<py::gil_scoped_release>(), "The clock 'auto' picks, and why.");
  m.def("read_cost_ns", &fb::read_cost_ns, py::arg("kind"), py::arg("reps") = 1000,
        py::call_guard<py::gil_scoped_release>(), "Cost of one clock read of the given kind.");
  m.def(
      "ticks_to_ns",
      [](const std::string& clock, double ticks) {
        return fb::ticks_to_ns(fb::parse_clock(clock), ticks);
      },
      py::arg("clock"), py::arg("ticks"), "Convert clock ticks to nanoseconds.");
  m.def(
      "read_start",
      [](const std::string& clock) {
        return fb::parse_clock(clock) == fb::ClockId::Tsc ? fb::TscClock::start()
                                                          : fb::SteadyClock::start();
      },
      py::arg("clock"), "Clock ticks, read as at the start of a timed region.");
  m.def(
      "read_stop",
      [](const std::string& clock) {
        return fb::parse_clock(clock) == fb::ClockId::Tsc ? fb::TscClock::stop()
                                                          : fb::SteadyClock::stop();
      },
      py::arg("clock"), "Clock ticks, read as at the end of a timed region.");

  py::class_<fb::Calibration>(m, "Calibration", "Outcome of the loops-per-sample search.")
      .def_readonly("loops", &fb::Calibration::loops)
      .def_readonly("sample_ns", &fb::Calibration::sample_ns)
      .def_readonly("trials", &fb::Calibration::trials)
      .def_readonly("target_ns", &fb::Calibration::target_ns);
  py::class_<fb::SampleRun>(m, "SampleRun", "Samples of one run, in ns per sample.")
      .def_readonly("sample_ns", &fb::SampleRun::sample_ns)
      .def_readonly("budget_exhausted", &fb::SampleRun::budget_exhausted)
      .def_readonly("elapsed_s", &fb::SampleRun::elapsed_s);
  py::class_<Sampler>(m, "Sampler", "A timed target driven by the native loop.")
      .def_static("calls", &Sampler::calls, py::arg("fn"), py::arg("args"), py::arg("kwargs"),
                  py::arg("clock"), "Time fn(*args, **kwargs) through vectorcall.")
      .def_static("inner", &Sampler::inner, py::arg("fn"), py::arg("clock"),
                  "Time fn(loops), which returns elapsed ticks of its own loop.")
      .def_static("empty", &Sampler::empty, py::arg("clock"), "Time the empty native loop.")
      .def("calibrate", &Sampler::calibrate, py::arg("min_time_s"),
           py::arg("max_loops") = std::uint64_t{1} << 40, "Find loops per sample.")
      .def("run", &Sampler::run, py::arg("loops"), py::arg("samples"),
           py::arg("max_time_s") = 0.0, "Take samples; checks signals between them.")
      .def_property_readonly("clock", &Sampler::clock, "Name of the clock used.");

  m.def("spin", &fb::spin_ns, py::arg("ns"), py::call_guard<py::gil_scoped_release>(),
        "Busy-wait for ns nanoseconds with the GIL released.");
  m.def("spin_duration_ns", &fb::spin_duration_ns, py::arg("ns"), py::arg("reps") = 1000,
        py::call_guard<py::gil_scoped_release>(), "True duration of a spin, timed natively.");
  m.def("make_spin", &make_spin, py::arg("ns"),
        "A native callable that busy-waits ns nanoseconds per call.");
  m.attr("noop") = make_noop();

  // perf_event counters: missing hardware is a state (available/reason), not an exception.
  py::class_<fb::ScaledCount>(m, "ScaledCount", "A count scaled for multiplexing.")
      .def_readonly("counted", &fb::ScaledCount::counted)
      .def_readonly("value", &fb::ScaledCount::value)
      .def_readonly("running_fraction", &fb::ScaledCount::running_fraction)
      .def_readonly("scaled", &fb::ScaledCount::scaled);
  m.def("scale_count", &fb::scale_count, py::arg("raw"), py::arg("time_enabled_ns"),
        py::arg("time_running_ns"), "raw x enabled / running, or not counted when running is 0.");
  m.def(
      "subtract_overhead",
      [](double value, double overhead) {
        const fb::Subtracted r = fb::subtract_overhead(value, overhead);
        return std::make_pair(r.value, r.clamped);
      },
      py::arg("value"), py::arg("overhead"), "max(value - overhead, 0) and whether it clamped.");
  m.def("known_event_names", &fb::known_event_names, "Event names fastbench knows.");
  py::class_<fb::EventProbe>(m, "EventProbe", "Whether one event opens here, and why not.")
      .def_readonly("name", &fb::EventProbe::name)
      .def_readonly("available", &fb::EventProbe::available)
      .def_readonly("opened_as", &fb::EventProbe::opened_as)
      .def_readonly("error", &fb::EventProbe::error)
      .def_readonly("reason", &fb::EventProbe::reason);
  m.def("probe_event", &fb::probe_event, py::arg("name"),
        "Open an event once and close it; ValueError for an unknown name.");
  m.def("perf_open_error_reason", &fb::perf_open_error_reason, py::arg("err"),
        "The reason fastbench gives for a perf_event_open errno.");
  m.def("_inject_open_errno", &fb::detail::inject_open_errno, py::arg("err"), py::arg("count"),
        py::arg("skip") = 0, "Test hook: make the next perf_event_open calls fail with err.");
  m.def("_map_software_pages", &fb::detail::map_software_pages, py::arg("on"),
        "Test hook: mmap the pages of software-event groups too.");
  py::class_<fb::EventStatus>(m, "EventStatus", "One event of a CounterGroup.")
      .def_readonly("name", &fb::EventStatus::name)
      .def_readonly("available", &fb::EventStatus::available)
      .def_readonly("opened_as", &fb::EventStatus::opened_as)
      .def_readonly("group", &fb::EventStatus::group)
      .def_readonly("error", &fb::EventStatus::error)
      .def_readonly("reason", &fb::EventStatus::reason);
  py::class_<fb::CounterReading>(m, "CounterReading", "One event's counts since start().")
      .def_readonly("name", &fb::CounterReading::name)
      .def_readonly("available", &fb::CounterReading::available)
      .def_readonly("reason", &fb::CounterReading::reason)
      .def_readonly("raw", &fb::CounterReading::raw)
      .def_readonly("time_enabled_ns", &fb::CounterReading::time_enabled_ns)
      .def_readonly("time_running_ns", &fb::CounterReading::time_running_ns)
      .def_readonly("counted", &fb::CounterReading::counted)
      .def_readonly("value", &fb::CounterReading::value)
      .def_readonly("running_fraction", &fb::CounterReading::running_fraction)
      .def_readonly("scaled", &fb::CounterReading::scaled);
  py::class_<fb::CounterGroup>(m, "CounterGroup", "perf_event groups for the calling thread.")
      .def(py::init<const std::vector<std::string>&, bool>(), py::arg("names"),
           py::arg("inherit") = false)
      .def_property_readonly("events", &fb::CounterGroup::events, "Per event: opened or why not.")
      .def_property_readonly("any_available", &fb::CounterGroup::any_available)
      .def_property_readonly("group_count", &fb::CounterGroup::group_count)
      .def_property_readonly("read_path", &fb::CounterGroup::read_path,
                             "'rdpmc' or 'read': the last read()'s path, or the next one's.")
      .def_property_readonly("read_path_reason", &fb::CounterGroup::read_path_reason,
                             "Why read_path is 'read' ('' when it is 'rdpmc').")
      .def("prefer_read", &fb::CounterGroup::prefer_read, py::arg("on") = true,
           "Force read(2) even where rdpmc works; False allows rdpmc again.")
      .def_property_readonly("prefers_read", &fb::CounterGroup::prefers_read)
      .def("start", &fb::CounterGroup::start, "Take a baseline reading and enable every group.")
      .def("stop", &fb::CounterGroup::stop, "Disable every group.")
      .def("read", &fb::CounterGroup::read, "Counts since start(), per event asked.");
  py::class_<fb::CounterOverhead>(m, "CounterOverhead", "Median count of an empty region.")
      .def_readonly("name", &fb::CounterOverhead::name)
      .def_readonly("available", &fb::CounterOverhead::available)
      .def_readonly("median", &fb::CounterOverhead::median);
  m.def("calibrate_read_overhead", &fb::calibrate_read_overhead, py::arg("group"),
        py::arg("reps") = 101, "Per event, the median count of an empty start/stop region.");
  py::class_<fb::CounterCost>(m, "CounterCost", "Time cost of reading and of a counted region.")
      .def_readonly("read_ns", &fb::CounterCost::read_ns)
      .def_readonly("region_ns", &fb::CounterCost::region_ns)
      .def_readonly("syscall_ns", &fb::CounterCost::syscall_ns)
      .def_readonly("read_path", &fb::CounterCost::read_path)
      .def_readonly("reps", &fb::CounterCost::reps)
      .def_readonly("batch", &fb::CounterCost::batch);
  m.def("time_counter_ops", &fb::time_counter_ops, py::arg("group"), py::arg("reps") = 51,
        py::arg("batch") = 200,
        "Median ns of one read() of a running group and of one start/stop/read region.");

  m.def("hardware_threads", &fb::hardware_threads, "Logical CPUs this process may run on.");
  m.def("max_threads", &fb::max_threads,
        "Most threads a kernel accepts: 8 per CPU this process may run on.");
  m.def(
      "_pool_stats",
      [] {
        const fb::detail::PoolStats st = fb::detail::pool_stats();
        return std::make_pair(st.workers, st.wakeups);
      },
      "Test hook: (workers in the thread pool, worker wake-ups for jobs so far).");
  m.def("gemm_f32", &gemm_arrays<float>, py::arg("a").noconvert(), py::arg("b").noconvert(),
        py::arg("out").noconvert(), py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f,
        py::arg("threads") = 0, "out = alpha*a@b + beta*out for C-contiguous float32 arrays.");
  m.def("gemm_f64", &gemm_arrays<double>, py::arg("a").noconvert(), py::arg("b").noconvert(),
        py::arg("out").noconvert(), py::arg("alpha") = 1.0, py::arg("beta") = 0.0,
        py::arg("threads") = 0, "out = alpha*a@b + beta*out for C-contiguous float64 arrays.");
  m.def("gemm_bf16", &gemm_bf16_arrays, py::arg("a").noconvert(), py::arg("b").noconvert(),
        py::arg("out").noconvert(), py::arg("alpha") = 1.0f, py::arg("beta") = 0.0f,
        py::arg("threads") = 0,
        "out = alpha*a@b + beta*out, a and b uint16 bf16 bits, out float32 (C-contiguous).");
  m.def("gemm_isa", &fb::gemm_isa, py::arg("f64") = false,
        "The ISA gemm runs now for float32 (f64: float64): 'avx512', 'avx2' or 'portable'.");
  m.def("gemm_bf16_isa", &fb::gemm_bf16_isa,
        "The path gemm_bf16 runs now: 'avx512_bf16' or the float32 gemm's ISA it widens to.");
  m.def("_gemm_zmm_at_half_rate", &fb::detail::gemm_zmm_at_half_rate, py::arg("on"),
        "Test hook: run gemm's zmm kernels even where 512-bit FMAs are half rate (Zen 4).");
  m.def("_gemm_ymm_tiles", &fb::detail::gemm_ymm_tiles, py::arg("on"),
        "Test hook: run the ymm kernels of a half-rate-zmm core (Zen 4) on any AVX-512 core.");
  m.def("_gemm_stream_b", &fb::detail::gemm_stream_b, py::arg("on"),
        "Test hook: whether tiles of few rows stream B a sliver at a time (default on).");
  py::class_<fb::GemmBlocking>(m, "GemmBlocking", "Cache and register blocking of gemm.")
      .def_readonly("mc", &fb::GemmBlocking::mc)
      .def_readonly("kc", &fb::GemmBlocking::kc)
      .def_readonly("nc", &fb::GemmBlocking::nc)
      .def_readonly("mr", &fb::GemmBlocking::mr)
      .def_readonly("nr", &fb::GemmBlocking::nr);
  m.def("gemm_blocking", &fb::gemm_blocking, py::arg("f64"), "Blocking sizes in elements.");
  m.def("conv2d", &conv2d_arrays, py::arg("x").noconvert(), py::arg("weight").noconvert(),
        py::arg("bias").noconvert(), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
        py::arg("groups"), py::arg("algo"), py::arg("threads"),
        "NCHW float32 convolution into a new array (GIL released).");
  m.def("conv2d_isa", &fb::conv2d_isa, "The ISA conv2d runs now: 'avx2' or 'portable'.");
  py::class_<fb::BandwidthResult>(m, "BandwidthResult", "One bandwidth kernel's passes.")
      .def_readonly("kind", &fb::BandwidthResult::kind)
      .def_readonly("working_set_bytes", &fb::BandwidthResult::working_set_bytes)
      .def_readonly("arrays", &fb::BandwidthResult::arrays)
      .def_readonly("bytes_per_pass", &fb::BandwidthResult::bytes_per_pass)
      .def_readonly("write_allocate_bytes_per_pass",
                    &fb::BandwidthResult::write_allocate_bytes_per_pass)
      .def_readonly("best_s", &fb::BandwidthResult::best_s)
      .def_readonly("median_s", &fb::BandwidthResult::median_s)
      .def_readonly("gb_per_s", &fb::BandwidthResult::gb_per_s)
      .def_readonly("threads", &fb::BandwidthResult::threads)
      .def_readonly("passes", &fb::BandwidthResult::passes)
      .def_readonly("isa", &fb::BandwidthResult::isa);
  m.def("bandwidth", interruptible(&fb::bandwidth), py::arg("kind"), py::arg("working_set_bytes"),
        py::arg("threads") = 1, py::arg("min_time_s") = 0.05, py::arg("isa") = "",
        py::call_guard<py::gil_scoped_release>(), "A STREAM-style kernel's GB/s (GIL released).");
  py::class_<fb::PeakResult>(m, "PeakResult", "Peak rate of FMA or dot-product chains.")
      .def_readonly("dtype", &fb::PeakResult::dtype)
      .def_readonly("isa", &fb::PeakResult::isa)
      .def_readonly("instruction", &fb::PeakResult::instruction)
      .def_readonly("vector_bits", &fb::PeakResult::vector_bits)
      .def_readonly("add_mix", &fb::PeakResult::add_mix)
      .def_readonly("fma_per_iter", &fb::PeakResult::fma_per_iter)
      .def_readonly("add_per_iter", &fb::PeakResult::add_per_iter)
      .def_readonly("flops_per_instruction", &fb::PeakResult::flops_per_instruction)
      .def_readonly("threads", &fb::PeakResult::threads)
      .def_readonly("flops_per_s", &fb::PeakResult::flops_per_s)
      .def_readonly("core_hz", &fb::PeakResult::core_hz)
      .def_readonly("flops_per_cycle", &fb::PeakResult::flops_per_cycle)
      .def_readonly("seconds", &fb::PeakResult::seconds);
  m.def("peak_flops", interruptible(&fb::peak_flops), py::arg("dtype"), py::arg("threads") = 1,
        py::arg("add_mix") = false, py::arg("min_time_s") = 0.1, py::arg("isa") = "",
        py::call_guard<py::gil_scoped_release>(), "FMA or dot-chain FLOP/s (GIL released).");
  m.def("core_hz", interruptible(&fb::core_hz), py::arg("min_time_s") = 0.02,
        py::call_guard<py::gil_scoped_release>(), "Core clock from dependent adds.");
}
