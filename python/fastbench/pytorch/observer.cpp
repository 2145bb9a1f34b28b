// fastbench's native op observer: a RecordFunction callback that stamps the start and end
// of the ops the dispatcher runs (and of the autograd nodes backward runs) on the thread that
// started it, with the op's name and input shapes, into a buffer Python drains later. No
// Python runs on the op's path: a callback pair costs a few hundred ns where a Python
// dispatch mode costs several µs, and the calls an op makes inside itself cost a counter.
//
// record_function ranges (USER_SCOPE: a DataLoader's fetch of a batch, an optimizer's step)
// are recorded too, by their own start and end: torch opens one inside an op
// (profiler::_record_function_enter_new) and closes it inside another, so they do not nest
// with the ops and stay off the depth stack.
//
// Built on first use against the installed torch (torch.utils.cpp_extension.load, from
// fastbench.pytorch.observer), so it matches that torch's ABI; compiled with -DNDEBUG as
// torch is, which RecordFunction's layout depends on.

#include <ATen/record_function.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

inline int64_t now_ns() {
  // steady_clock is CLOCK_MONOTONIC, the clock of Python's time.perf_counter_ns on Linux:
  // the profiler's Python marks and these stamps share one timeline.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What a recorded range is: a range outside any op (a composite such as aten::linear, or an
// op the first step did not meet), an autograd node backward ran, or an op (a range whose
// name is one of the ops set by set_ops, outside any other op), or a record_function range
// (kUser, recorded wherever it starts). Other ranges inside an op are not recorded, only
// counted on it: their callbacks' cost lies inside its window.
enum Kind : int32_t { kRange = 0, kNode = 1, kOp = 2, kUser = 3 };

struct Event {
  int64_t t0;
  int64_t t1;
  int32_t key;     // index into State::keys_in_order: (name, input shapes)
  int32_t depth;   // nesting depth of observed ranges on the thread when it started
  int32_t kind;    // Kind
  int32_t nested;  // ranges started inside it (an op's only)
};

struct Open {
  int64_t t0 = 0;
  int32_t key = 0;
  int32_t kind = kRange;
  int32_t nested = 0;
};

struct State {
  std::deque<Event> events;  // a deque: no copy of everything when it grows
  std::unordered_map<uint64_t, int32_t> keys;
  std::vector<std::pair<std::string, std::string>> keys_in_order;
  std::unordered_set<std::string> ops;                 // names that are ops
  std::unordered_map<const char*, bool> op_by_name;    // by the schema's name pointer
  std::vector<Open> open;                              // per depth
  std::thread::id owner;
  int32_t depth = 0;
  int32_t op_depth = -1;  // depth of the op open now, -1 if none
  // Read by any thread a callback runs on (only the owner's record): set after owner.
  std::atomic<bool> running{false};
  bool shapes = true;     // ask RecordFunction for the inputs (boxing them costs)
  at::CallbackHandle handle = 0;
};

State* g_state = nullptr;

// A record_function range's start, kept by RecordFunction until its end callback: such a
// range does not nest with the ops (see the top of this file), so the depth stack cannot hold
// it. One allocation a range: a fetch of a batch or an optimizer's step, not an op.
struct UserRange : at::ObserverContext {
  int64_t t0 = 0;
  int32_t key = 0;
};

inline uint64_t mix(uint64_t h, uint64_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

// Python's repr of a shape tuple: "(8,)", "(2, 3)", "()".
void append_shape(std::string& s, c10::IntArrayRef sizes) {
  s += '(';
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  if (sizes.size() == 1) s += ',';
  s += ')';
}

// A list argument whose first element is a tensor counts as a tuple of shapes; other
// arguments (numbers, None, lists of numbers) are not part of the signature.
bool tensor_list(const c10::IValue& v) {
  if (!v.isList()) return false;
  auto list = v.toListRef();
  return !list.empty() && list[0].isTensor();
}

uint64_t signature_hash(const at::RecordFunction& fn, const char* name) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over the name, then the shapes mixed in
  for (const char* p = name; *p; ++p) {
    h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ULL;
  }
  if (!g_state->shapes || fn.scope() != at::RecordScope::FUNCTION) return h;
  for (const auto& v : fn.inputs()) {
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      if (!t.defined()) continue;
      h = mix(h, 0x1000u + static_cast<uint64_t>(t.dim()));
      for (auto d : t.sizes()) h = mix(h, static_cast<uint64_t>(d));
    } else if (tensor_list(v)) {
      auto list = v.toListRef();
      h = mix(h, 0x2000u + list.size());
      for (const auto& e : list) {
        if (!e.isTensor()) continue;
        const auto& t = e.toTensor();
        h = mix(h, 0x3000u + static_cast<uint64_t>(t.dim()));
        for (auto d : t.sizes()) h = mix(h, static_cast<uint64_t>(d));
      }
    }
  }
  return h;
}

// The shapes as fastbench's Python collector writes them: each tensor argument's shape, a
// list of tensors as a tuple of shapes, joined by ", ".
std::string signature_text(const at::RecordFunction& fn) {
  std::string text;
  if (!g_state->shapes || fn.scope() != at::RecordScope::FUNCTION) return text;
  bool first = true;
  for (const auto& v : fn.inputs()) {
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      if (!t.defined()) continue;
      if (!first) text += ", ";
      first = false;
      append_shape(text, t.sizes());
    } else if (tensor_list(v)) {
      if (!first) text += ", ";
      first = false;
      text += '(';
      size_t n = 0;
      for (const auto& e : v.toListRef()) {
        if (!e.isTensor()) continue;
        if (n++) text += ", ";
        append_shape(text, e.toTensor().sizes());
      }
      if (n == 1) text += ',';
      text += ')';
    }
  }
  return text;
}

int32_t key_of(State& s, const at::RecordFunction& fn) {
  const char* name = fn.name();
  uint64_t h = signature_hash(fn, name);
  auto it = s.keys.find(h);
  if (it != s.keys.end()) return it->second;
  auto k = static_cast<int32_t>(s.keys_in_order.size());
  s.keys_in_order.emplace_back(name, signature_text(fn));
  s.keys.emplace(h, k);
  return k;
}

bool is_op(State& s, const at::RecordFunction& fn) {
  if (fn.scope() != at::RecordScope::FUNCTION || s.ops.empty()) return false;
  const char* name = fn.name();  // an operator's name: stable for the process
  auto it = s.op_by_name.find(name);
  if (it != s.op_by_name.end()) return it->second;
  bool op = s.ops.count(name) > 0;
  s.op_by_name.emplace(name, op);
  return op;
}

// No ObserverContext (an allocation per range): ranges nest on a thread, so a stack by
// depth holds what the end callback needs, and end callbacks run for every range whose
// start callback ran, with or without a context.
std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  State* s = g_state;
  if (s == nullptr || !s->running.load(std::memory_order_acquire) ||
      std::this_thread::get_id() != s->owner) {
    return nullptr;
  }
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    // Its callbacks run inside the op that opens it: their cost lies in that op's window.
    if (s->op_depth >= 0) ++s->open[static_cast<size_t>(s->op_depth)].nested;
    auto range = std::make_unique<UserRange>();
    range->key = key_of(*s, fn);
    range->t0 = now_ns();
    return range;
  }
  int32_t d = s->depth++;
  if (s->op_depth >= 0) {  // inside an op: counted only
    ++s->open[static_cast<size_t>(s->op_depth)].nested;
    return nullptr;
  }
  if (s->open.size() <= static_cast<size_t>(d)) s->open.resize(static_cast<size_t>(d) + 1);
  Open& o = s->open[static_cast<size_t>(d)];
  o.key = key_of(*s, fn);
  o.nested = 0;
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    o.kind = kNode;
  } else if (is_op(*s, fn)) {
    o.kind = kOp;
    s->op_depth = d;
  } else {
    o.kind = kRange;
  }
  o.t0 = now_ns();
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  int64_t t1 = now_ns();
  State* s = g_state;
  if (s == nullptr || !s->running.load(std::memory_order_acquire) ||
      std::this_thread::get_id() != s->owner) {
    return;
  }
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    // No context: the range started before the observer did, or on another thread.
    if (ctx == nullptr) return;
    if (s->op_depth >= 0) ++s->open[static_cast<size_t>(s->op_depth)].nested;
    const auto* range = static_cast<const UserRange*>(ctx);
    s->events.push_back(Event{range->t0, t1, range->key, s->depth, kUser, 0});
    return;
  }
  if (s->depth == 0) return;
  int32_t d = --s->depth;
  if (s->op_depth >= 0 && d > s->op_depth) return;  // a range inside an op
  const Open& o = s->open[static_cast<size_t>(d)];
  if (d == s->op_depth) s->op_depth = -1;
  s->events.push_back(Event{o.t0, t1, o.key, d, o.kind, o.nested});
}

State& state() {
  if (g_state == nullptr) throw std::runtime_error("the observer is not open");
  return *g_state;
}

void observer_open() {
  if (g_state != nullptr) throw std::runtime_error("the observer is already open");
  g_state = new State();
}

void observer_close() {
  if (g_state == nullptr) return;
  if (g_state->running) at::removeCallback(g_state->handle);
  delete g_state;
  g_state = nullptr;
}

void observer_start(bool shapes) {
  State& s = state();
  if (s.running) throw std::runtime_error("the observer is already running");
  s.shapes = shapes;
  s.owner = std::this_thread::get_id();
  s.depth = 0;
  s.op_depth = -1;
  auto cb = at::RecordFunctionCallback(on_start, on_end)
                .needsInputs(shapes)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                         at::RecordScope::USER_SCOPE});
  s.handle = at::addThreadLocalCallback(cb);
  s.running.store(true, std::memory_order_release);
}

void observer_stop() {
  State& s = state();
  if (!s.running) return;
  at::removeCallback(s.handle);
  s.running.store(false, std::memory_order_release);
}

// The events recorded since the last drain, in the order they ended: an int64 array of
// (t0, t1) rows and an int32 array of (key, depth, kind, nested) rows.
py::tuple observer_drain() {
  State& s = state();
  auto n = static_cast<py::ssize_t>(s.events.size());
  py::array_t<int64_t> times(std::vector<py::ssize_t>{n, 2});
  py::array_t<int32_t> ints(std::vector<py::ssize_t>{n, 4});
  auto t = times.mutable_unchecked<2>();
  auto k = ints.mutable_unchecked<2>();
  py::ssize_t i = 0;
  for (const auto& e : s.events) {
    t(i, 0) = e.t0;
    t(i, 1) = e.t1;
    k(i, 0) = e.key;
    k(i, 1) = e.depth;
    k(i, 2) = e.kind;
    k(i, 3) = e.nested;
    ++i;
  }
  s.events.clear();
  return py::make_tuple(times, ints);
}

// The names of the ops: a range so named, outside any other op, is recorded as an op and
// the ranges inside it only counted. Before any is set every range is recorded.
void observer_set_ops(const std::vector<std::string>& names) {
  State& s = state();
  if (s.running) throw std::runtime_error("set the ops while the observer is stopped");
  s.ops = std::unordered_set<std::string>(names.begin(), names.end());
  s.op_by_name.clear();
}

// The (name, shapes) of each key from index `since` on.
std::vector<std::pair<std::string, std::string>> observer_keys(size_t since) {
  State& s = state();
  if (since >= s.keys_in_order.size()) return {};
  return {s.keys_in_order.begin() + static_cast<std::ptrdiff_t>(since), s.keys_in_order.end()};
}

int64_t clock_ns() { return now_ns(); }

// The cost of one clock read, averaged over n back-to-back reads (ns).
double clock_read_ns(int64_t n) {
  if (n < 1) throw std::invalid_argument("n must be >= 1");
  int64_t t0 = now_ns();
  int64_t sink = 0;
  for (int64_t i = 0; i < n; ++i) sink ^= now_ns();
  int64_t t1 = now_ns();
  volatile int64_t keep = sink;
  (void)keep;
  return static_cast<double>(t1 - t0) / static_cast<double>(n);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "fastbench's native op observer (RecordFunction callbacks)";
  m.def("open", &observer_open, "Create the observer's buffer and key table.");
  m.def("close", &observer_close, "Stop observing and free the buffer and key table.");
  m.def("start", &observer_start, py::arg("shapes") = true,
        "Observe ops on this thread from now on (with their input shapes).");
  m.def("stop", &observer_stop, "Stop observing (the buffer is kept).");
  m.def("drain", &observer_drain,
        "Events since the last drain: ((t0, t1) int64, (key, depth, kind, nested) int32).");
  m.def("set_ops", &observer_set_ops, py::arg("names"), "The names of the ops.");
  m.def("keys", &observer_keys, py::arg("since") = 0, "(name, shapes) of each key from `since` on.");
  m.def("clock_ns", &clock_ns, "The observer's clock (CLOCK_MONOTONIC), ns.");
  m.def("clock_read_ns", &clock_read_ns, py::arg("n") = 10000, "The cost of a clock read, ns.");
}
