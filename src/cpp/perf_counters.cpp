// perf_counters.cpp — see perf_counters.hpp. The event table and name parsing are portable;
// perf_event_open, ioctl and read are Linux-only, and other platforms get a stub whose
// probes say "unsupported platform". The attr type/config numbers below are the kernel's
// stable ABI (include/uapi/linux/perf_event.h); on Linux they are checked against the header.
#include "perf_counters.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "perf_math.hpp"

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fastbench {

namespace {

constexpr std::uint32_t kTypeHardware = 0;
constexpr std::uint32_t kTypeSoftware = 1;
constexpr std::uint32_t kTypeHwCache = 3;
constexpr std::uint32_t kTypeRaw = 4;

// PERF_TYPE_HW_CACHE config: cache id | (op << 8) | (result << 16); op read = 0.
constexpr std::uint64_t cache_config(std::uint64_t cache, std::uint64_t result) {
  return cache | (0ULL << 8) | (result << 16);
}
constexpr std::uint64_t kL1d = 0, kLL = 2, kDtlb = 3, kAccess = 0, kMiss = 1;

struct KnownEvent {
  const char* name;
  std::uint32_t type;
  std::uint64_t config;
  const char* fallback;
};

const KnownEvent kKnownEvents[] = {
    {"cycles", kTypeHardware, 0, ""},
    {"instructions", kTypeHardware, 1, ""},
    {"ref-cycles", kTypeHardware, 9, "cycles"},
    {"branches", kTypeHardware, 4, ""},
    {"branch-misses", kTypeHardware, 5, ""},
    {"cache-references", kTypeHardware, 2, ""},
    {"cache-misses", kTypeHardware, 3, ""},
    {"L1-dcache-loads", kTypeHwCache, cache_config(kL1d, kAccess), ""},
    {"L1-dcache-load-misses", kTypeHwCache, cache_config(kL1d, kMiss), ""},
    {"LLC-loads", kTypeHwCache, cache_config(kLL, kAccess), ""},
    {"LLC-load-misses", kTypeHwCache, cache_config(kLL, kMiss), ""},
    {"dTLB-load-misses", kTypeHwCache, cache_config(kDtlb, kMiss), ""},
    {"stalled-cycles-frontend", kTypeHardware, 7, ""},
    {"stalled-cycles-backend", kTypeHardware, 8, ""},
    {"task-clock", kTypeSoftware, 1, ""},
    {"cpu-clock", kTypeSoftware, 0, ""},
    {"page-faults", kTypeSoftware, 2, ""},
    {"minor-faults", kTypeSoftware, 5, ""},
    {"major-faults", kTypeSoftware, 6, ""},
    {"context-switches", kTypeSoftware, 3, ""},
    {"cpu-migrations", kTypeSoftware, 4, ""},
};

[[noreturn]] void unknown_event(const std::string& name, const std::string& why) {
  throw std::invalid_argument("[resolve_event] unknown event '" + name + "': " + why);
}

bool all_of_class(const std::string& s, int (*pred)(int)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [pred](char c) {
    return pred(static_cast<unsigned char>(c)) != 0;
  });
}

// Parses decimal, or hex after 0x; false on anything else or overflow.
bool parse_u64(const std::string& s, bool hex, std::uint64_t& out) {
  if (s.empty() || s.size() > (hex ? 16u : 20u)) return false;
  if (!all_of_class(s, hex ? isxdigit : isdigit)) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  out = static_cast<std::uint64_t>(v);
  return true;
}

bool is_pmu_name(const std::string& s) {
  return !s.empty() && s.size() < 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  });
}

EventSpec make_spec(const std::string& name, std::uint32_t type, std::uint64_t config,
                    const std::string& fallback) {
  EventSpec s;
  s.name = name;
  s.type = type;
  s.config = config;
  s.hardware = type != kTypeSoftware;
  s.fallback = fallback;
  return s;
}

}  // namespace

std::vector<std::string> known_event_names() {
  std::vector<std::string> names;
  for (const KnownEvent& e : kKnownEvents) names.emplace_back(e.name);
  return names;
}

EventSpec resolve_event(const std::string& name) {
  for (const KnownEvent& e : kKnownEvents) {
    if (name == e.name) return make_spec(name, e.type, e.config, e.fallback);
  }
  if (name.size() >= 2 && name[0] == 'r' && name.find(':') == std::string::npos) {
    std::uint64_t config = 0;
    if (!parse_u64(name.substr(1), true, config)) {
      unknown_event(name, "expected rNNNN with 1-16 hex digits");
    }
    return make_spec(name, kTypeRaw, config, "");
  }
  const std::size_t colon = name.find(':');
  if (colon != std::string::npos) {
    const std::string type_s = name.substr(0, colon);
    std::string config_s = name.substr(colon + 1);
    std::uint64_t type = 0;
    if (all_of_class(type_s, isdigit)) {
      if (!parse_u64(type_s, false, type) || type > 0xffffffffULL) {
        unknown_event(name, "type '" + type_s + "' is not a 32-bit decimal number");
      }
    } else if (is_pmu_name(type_s)) {
      std::ifstream f("/sys/bus/event_source/devices/" + type_s + "/type");
      if (!(f >> type) || type > 0xffffffffULL) {
        unknown_event(name, "no PMU named '" + type_s + "' in /sys/bus/event_source/devices");
      }
    } else {
      unknown_event(name, "type '" + type_s + "' is neither a decimal number nor a PMU name");
    }
    const bool hex = config_s.size() > 2 && (config_s.compare(0, 2, "0x") == 0 ||
                                             config_s.compare(0, 2, "0X") == 0);
    std::uint64_t config = 0;
    if (!parse_u64(hex ? config_s.substr(2) : config_s, hex, config)) {
      unknown_event(name, "config '" + config_s + "' is not decimal or 0x-hex");
    }
    return make_spec(name, static_cast<std::uint32_t>(type), config, "");
  }
  unknown_event(name, "expected a known name, rNNNN or type:config");
}

namespace detail {
namespace {
std::atomic<int> g_inject_errno{0};
std::atomic<int> g_inject_count{0};
std::atomic<int> g_inject_skip{0};
}  // namespace

void inject_open_errno(int err, int count, int skip) {
  g_inject_errno.store(err);
  g_inject_skip.store(count > 0 && skip > 0 ? skip : 0);
  g_inject_count.store(count > 0 ? count : 0);
}

// True (with `err` set) when an injected failure is due; consumes one.
bool take_injected(int& err) {
  if (g_inject_count.load() == 0) return false;
  int k = g_inject_skip.load();
  while (k > 0) {
    if (g_inject_skip.compare_exchange_weak(k, k - 1)) return false;
  }
  int n = g_inject_count.load();
  while (n > 0) {
    if (g_inject_count.compare_exchange_weak(n, n - 1)) {
      err = g_inject_errno.load();
      return true;
    }
  }
  return false;
}
}  // namespace detail

namespace {
std::string paranoid_level() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  int level = 0;
  if (f >> level) return std::to_string(level);
  return "unknown";
}
}  // namespace

std::string perf_open_error_reason(int err) {
  switch (err) {
    case ENOENT:
      return "no hardware PMU exposed (typical of VMs and containers)";
    case EACCES:
    case EPERM:
      return "perf_event_paranoid is " + paranoid_level() +
             ": run `sudo sysctl kernel.perf_event_paranoid=2` or grant CAP_PERFMON";
    case EINVAL:
      return "unsupported event or attribute combination";
    case ENOSYS:
      return "perf_event_open is not available (seccomp or container policy?)";
    default:
      return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
  }
}

#if defined(__linux__)

static_assert(PERF_TYPE_HARDWARE == kTypeHardware && PERF_TYPE_SOFTWARE == kTypeSoftware &&
                  PERF_TYPE_HW_CACHE == kTypeHwCache && PERF_TYPE_RAW == kTypeRaw,
              "perf type numbers");
static_assert(PERF_COUNT_HW_REF_CPU_CYCLES == 9 && PERF_COUNT_SW_TASK_CLOCK == 1 &&
                  PERF_COUNT_SW_PAGE_FAULTS_MAJ == 6 && PERF_COUNT_HW_CACHE_RESULT_MISS == 1,
              "perf config numbers");

namespace {

constexpr int kMaxHardwarePerGroup = 8;

// Returns an fd, or -1 with `err` set. The errno test hook is consulted first.
int open_event(const EventSpec& spec, int group_fd, bool inherit, int& err) {
  if (detail::take_injected(err)) return -1;
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = spec.type;
  attr.config = spec.config;
  attr.disabled = group_fd == -1 ? 1 : 0;  // members follow the leader
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.inherit = inherit ? 1 : 0;
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
                     PERF_FORMAT_TOTAL_TIME_RUNNING;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return -1;
  }
  err = 0;
  return static_cast<int>(fd);
}

// Opens `spec`, or its fallback when it fails; `opened_as` names what opened.
int open_with_fallback(const EventSpec& spec, int group_fd, bool inherit, int& err,
                       std::string& opened_as) {
  int fd = open_event(spec, group_fd, inherit, err);
  opened_as = spec.name;
  if (fd < 0 && !spec.fallback.empty()) {
    int err2 = 0;
    fd = open_event(resolve_event(spec.fallback), group_fd, inherit, err2);
    if (fd >= 0) {
      err = 0;
      opened_as = spec.fallback;
    }
  }
  return fd;
}

[[noreturn]] void os_failure(const char* who, const char* what, int err) {
  throw std::runtime_error(std::string("[") + who + "] " + what + " failed: " +
                           std::strerror(err));
}

}  // namespace

EventProbe probe_event(const std::string& name) {
  const EventSpec spec = resolve_event(name);
  EventProbe p;
  p.name = name;
  int err = 0;
  const int fd = open_with_fallback(spec, -1, false, err, p.opened_as);
  if (fd >= 0) {
    close(fd);
    p.available = true;
  } else {
    p.opened_as.clear();
    p.error = err;
    p.reason = perf_open_error_reason(err);
  }
  return p;
}

CounterGroup::CounterGroup(const std::vector<std::string>& names, bool inherit) {
  if (names.empty()) throw std::invalid_argument("[CounterGroup] no events asked for");
  std::vector<EventSpec> specs;
  for (const std::string& n : names) specs.push_back(resolve_event(n));  // may throw
  int hw_in_group = 0;
  try {
    for (std::size_t i = 0; i < specs.size(); ++i) {
      EventStatus st;
      st.name = specs[i].name;
      const bool full = !groups_.empty() && specs[i].hardware && hw_in_group >= kMaxHardwarePerGroup;
      int err = 0;
      int fd = -1;
      bool new_group = groups_.empty() || full;
      if (!new_group) {
        fd = open_with_fallback(specs[i], groups_.back().leader_fd, inherit, err, st.opened_as);
        if (fd < 0 && (err == ENOSPC || err == EINVAL)) new_group = true;  // try alone
      }
      if (new_group) fd = open_with_fallback(specs[i], -1, inherit, err, st.opened_as);
      if (fd < 0) {
        st.opened_as.clear();
        st.error = err;
        st.reason = perf_open_error_reason(err);
        events_.push_back(st);
        continue;
      }
      if (new_group) {
        groups_.emplace_back();
        groups_.back().leader_fd = fd;
        hw_in_group = 0;
      }
      Group& g = groups_.back();
      g.fds.push_back(fd);
      g.event_of.push_back(i);
      std::uint64_t id = 0;
      if (ioctl(fd, PERF_EVENT_IOC_ID, &id) != 0) os_failure("CounterGroup", "ioctl(ID)", errno);
      g.ids.push_back(id);
      if (specs[i].hardware) ++hw_in_group;
      st.available = true;
      st.group = static_cast<int>(groups_.size() - 1);
      events_.push_back(st);
    }
  } catch (...) {
    close_all();
    throw;
  }
}

CounterGroup::~CounterGroup() { close_all(); }

CounterGroup::CounterGroup(CounterGroup&& other) noexcept
    : events_(std::move(other.events_)),
      groups_(std::move(other.groups_)),
      started_(other.started_) {
  other.groups_.clear();
  other.started_ = false;
}

CounterGroup& CounterGroup::operator=(CounterGroup&& other) noexcept {
  if (this != &other) {
    close_all();
    events_ = std::move(other.events_);
    groups_ = std::move(other.groups_);
    started_ = other.started_;
    other.groups_.clear();
    other.started_ = false;
  }
  return *this;
}

void CounterGroup::close_all() noexcept {
  for (Group& g : groups_) {
    // Members first, the leader last.
    for (auto it = g.fds.rbegin(); it != g.fds.rend(); ++it) close(*it);
  }
  groups_.clear();
}

bool CounterGroup::any_available() const noexcept { return !groups_.empty(); }

namespace {
std::vector<std::uint64_t> read_words(int fd, std::size_t members) {
  std::vector<std::uint64_t> words(3 + 2 * members);
  const ssize_t n = ::read(fd, words.data(), words.size() * sizeof(std::uint64_t));
  if (n < 0) os_failure("CounterGroup::read", "read(2)", errno);
  words.resize(static_cast<std::size_t>(n) / sizeof(std::uint64_t));
  return words;
}
}  // namespace

void CounterGroup::start() {
  for (Group& g : groups_) {
    if (ioctl(g.leader_fd, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP) != 0) {
      os_failure("CounterGroup::start", "ioctl(RESET)", errno);
    }
    // RESET zeroes the counts but not the enabled/running times: keep a baseline.
    g.baseline = read_words(g.leader_fd, g.fds.size());
  }
  started_ = true;
  for (Group& g : groups_) {
    if (ioctl(g.leader_fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0) {
      os_failure("CounterGroup::start", "ioctl(ENABLE)", errno);
    }
  }
}

void CounterGroup::stop() {
  for (Group& g : groups_) {
    if (ioctl(g.leader_fd, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP) != 0) {
      os_failure("CounterGroup::stop", "ioctl(DISABLE)", errno);
    }
  }
}

std::vector<CounterReading> CounterGroup::read() const {
  if (!started_ && !groups_.empty()) {
    throw std::logic_error("[CounterGroup::read] called before start()");
  }
  std::vector<CounterReading> out(events_.size());
  for (std::size_t i = 0; i < events_.size(); ++i) {
    out[i].name = events_[i].name;
    out[i].available = events_[i].available;
    out[i].reason = events_[i].reason;
    out[i].value = std::nan("");
  }
  for (const Group& g : groups_) {
    const long long nr = static_cast<long long>(g.fds.size());
    const GroupRead now = parse_group_read(read_words(g.leader_fd, g.fds.size()), nr);
    const GroupRead d = group_read_delta(parse_group_read(g.baseline, nr), now);
    for (std::size_t k = 0; k < g.fds.size(); ++k) {
      CounterReading& r = out[g.event_of[k]];
      for (const CounterValue& v : d.values) {
        if (v.id == g.ids[k]) r.raw = v.value;
      }
      r.time_enabled_ns = d.time_enabled_ns;
      r.time_running_ns = d.time_running_ns;
      const ScaledCount s = scale_count(r.raw, d.time_enabled_ns, d.time_running_ns);
      r.counted = s.counted;
      r.value = s.value;
      r.running_fraction = s.running_fraction;
      r.scaled = s.scaled;
    }
  }
  return out;
}

#else  // not Linux: nothing opens

namespace {
const char* const kUnsupported = "unsupported platform: perf_event is Linux-only";
}  // namespace

EventProbe probe_event(const std::string& name) {
  (void)resolve_event(name);
  EventProbe p;
  p.name = name;
  p.error = ENOSYS;
  p.reason = kUnsupported;
  return p;
}

CounterGroup::CounterGroup(const std::vector<std::string>& names, bool inherit) {
  (void)inherit;
  if (names.empty()) throw std::invalid_argument("[CounterGroup] no events asked for");
  for (const std::string& n : names) {
    (void)resolve_event(n);
    EventStatus st;
    st.name = n;
    st.error = ENOSYS;
    st.reason = kUnsupported;
    events_.push_back(st);
  }
}
CounterGroup::~CounterGroup() = default;
CounterGroup::CounterGroup(CounterGroup&& other) noexcept
    : events_(std::move(other.events_)), groups_(), started_(other.started_) {}
CounterGroup& CounterGroup::operator=(CounterGroup&& other) noexcept {
  events_ = std::move(other.events_);
  started_ = other.started_;
  return *this;
}
void CounterGroup::close_all() noexcept {}
bool CounterGroup::any_available() const noexcept { return false; }
void CounterGroup::start() { started_ = true; }
void CounterGroup::stop() {}
std::vector<CounterReading> CounterGroup::read() const {
  std::vector<CounterReading> out(events_.size());
  for (std::size_t i = 0; i < events_.size(); ++i) {
    out[i].name = events_[i].name;
    out[i].reason = events_[i].reason;
    out[i].value = std::nan("");
  }
  return out;
}

#endif

std::vector<CounterOverhead> calibrate_read_overhead(CounterGroup& group, int reps) {
  if (reps < 1) {
    throw std::invalid_argument("[calibrate_read_overhead] reps is " + std::to_string(reps) +
                                ", expected >= 1");
  }
  const std::size_t n = group.events().size();
  std::vector<std::vector<double>> samples(n);
  for (int r = 0; r < reps; ++r) {
    group.start();
    group.stop();
    const std::vector<CounterReading> rd = group.read();
    for (std::size_t i = 0; i < n; ++i) {
      if (rd[i].counted) samples[i].push_back(rd[i].value);
    }
  }
  std::vector<CounterOverhead> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].name = group.events()[i].name;
    std::vector<double>& s = samples[i];
    out[i].available = !s.empty();
    if (s.empty()) continue;
    const std::size_t mid = s.size() / 2;
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid), s.end());
    double m = s[mid];
    if (s.size() % 2 == 0) {
      const double lo = *std::max_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid));
      m = 0.5 * (lo + m);
    }
    out[i].median = m;
  }
  return out;
}

}  // namespace fastbench
