// perf_counters.cpp — see perf_counters.hpp. The event table and name parsing are portable;
// perf_event_open, ioctl, read and mmap are Linux-only, and other platforms get a stub whose
// probes say "unsupported platform"; the rdpmc instruction is x86-64-only. The attr
// type/config numbers below are the kernel's stable ABI (include/uapi/linux/perf_event.h);
// on Linux they are checked against the header.
#include "perf_counters.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "cpu.hpp"
#include "median.hpp"
#include "perf_math.hpp"

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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

const char* const kForcedRead = "read(2) forced by prefer_read";

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
      const std::string t = read_first_line("/sys/bus/event_source/devices/" + type_s + "/type");
      if (!parse_u64(t, false, type) || type > 0xffffffffULL) {
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

std::atomic<bool> g_map_software{false};
void map_software_pages(bool on) { g_map_software.store(on); }

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
// The level as the kernel wrote it (it may be negative), or "unknown".
std::string paranoid_level() {
  const std::string s = read_first_line("/proc/sys/kernel/perf_event_paranoid");
  errno = 0;
  char* end = nullptr;
  const long level = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || errno != 0 || *end != '\0' || level < -1000 || level > 1000) return "unknown";
  return std::to_string(level);
}
}  // namespace

namespace detail {
std::string permission_advice(const std::string& level) {
  if (level == "unknown")
    return "permission denied (perf_event_paranoid unreadable): grant CAP_PERFMON or check the "
           "container's seccomp policy";
  if (std::stoi(level) >= 3)
    return "perf_event_paranoid is " + level +
           ": it forbids unprivileged counting; run `sudo sysctl kernel.perf_event_paranoid=2` "
           "or grant CAP_PERFMON";
  return "perf_event_paranoid is " + level +
         ": it allows counting your own user-space events, so something else refused (a "
         "container or seccomp policy, an LSM such as SELinux or AppArmor, or an event that "
         "needs CAP_PERFMON); run privileged or grant CAP_PERFMON";
}
}  // namespace detail

std::string perf_open_error_reason(int err) {
  switch (err) {
    case ENOENT:
      return "no hardware PMU exposed (typical of VMs and containers)";
    case EACCES:
    case EPERM:
      return detail::permission_advice(paranoid_level());
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

// A page copy that keeps finding the seqlock changed is given up on (read(2) instead) rather
// than spun on: the kernel rewrites the page only when the event is scheduled in or out.
constexpr int kSeqlockTries = 100;

// Keeps the compiler from moving the page reads across the seqlock reads (the header's
// barrier()); x86 does not reorder loads with loads, so no fence is needed.
inline void page_barrier() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

#if defined(__x86_64__)
constexpr bool kHaveRdpmc = true;

// Intel SDM vol. 2B "RDPMC": ECX selects the counter, the value comes back in EDX:EAX. It
// faults unless CR4.PCE is set, which the kernel does for this mm only while an event page is
// mapped and cap_user_rdpmc says so; it is executed only then.
inline std::uint64_t rdpmc(std::uint32_t counter) noexcept {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  __asm__ __volatile__("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

inline std::uint64_t rdtsc() noexcept {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

// Copies what a user-space read needs from the event page, with the counter (`pmc`) and the
// TSC (`cycles`), inside the page's seqlock: the loop in the comment on struct
// perf_event_mmap_page. False when the lock kept changing. The page is read through a
// volatile pointer: the kernel rewrites it behind the compiler's back.
bool snapshot_page(const void* page, MmapPageSnapshot& s, std::uint64_t& pmc,
                   std::uint64_t& cycles) noexcept {
  const volatile perf_event_mmap_page* pc = static_cast<const volatile perf_event_mmap_page*>(page);
  for (int attempt = 0; attempt < kSeqlockTries; ++attempt) {
    const std::uint32_t seq = pc->lock;
    page_barrier();
    s.time_enabled_ns = pc->time_enabled;
    s.time_running_ns = pc->time_running;
    s.cap_user_rdpmc = pc->cap_user_rdpmc != 0;
    s.cap_user_time = pc->cap_user_time != 0;
    s.cap_user_time_short = pc->cap_user_time_short != 0;
    if (s.cap_user_time) {
      cycles = rdtsc();
      s.time_offset = pc->time_offset;
      s.time_mult = pc->time_mult;
      s.time_shift = pc->time_shift;
      if (s.cap_user_time_short) {
        s.time_cycles = pc->time_cycles;
        s.time_mask = pc->time_mask;
      }
    }
    s.index = pc->index;
    s.offset = pc->offset;
    pmc = 0;
    if (s.cap_user_rdpmc && s.index != 0) {
      s.pmc_width = pc->pmc_width;
      pmc = rdpmc(s.index - 1);
    }
    page_barrier();
    if (pc->lock == seq) return true;
  }
  return false;
}
#else
constexpr bool kHaveRdpmc = false;

bool snapshot_page(const void*, MmapPageSnapshot&, std::uint64_t&, std::uint64_t&) noexcept {
  return false;
}
#endif

// Why one event's page does not allow a user-space read right now.
std::string user_read_reason(UserReadStatus status, const std::string& name,
                             std::uint16_t pmc_width, std::uint16_t time_shift) {
  switch (status) {
    case UserReadStatus::ok:
      break;
    case UserReadStatus::no_user_rdpmc:
      return "the kernel does not allow user-space rdpmc (cap_user_rdpmc = 0; see "
             "/sys/bus/event_source/devices/cpu/rdpmc): " + name;
    case UserReadStatus::not_on_counter:
      return "the event is on no hardware counter right now (mmap index 0: stopped, or "
             "multiplexed out): " + name;
    case UserReadStatus::bad_pmc_width:
      return "the event page gives no usable counter width (pmc_width " +
             std::to_string(pmc_width) + "): " + name;
    case UserReadStatus::no_user_time:
      return "the event page's times cannot be brought up to date (cap_user_time = 0: no "
             "stable TSC?): " + name;
    case UserReadStatus::bad_time_shift:
      return "the event page's time_shift is " + std::to_string(time_shift) +
             ", expected < 64: " + name;
  }
  return "";
}

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
      if (specs[i].hardware) {
        ++hw_in_group;
      } else {
        software_note_ += software_note_.empty()
                              ? "software events are not on hardware counters (mmap index 0): "
                              : ", ";
        software_note_ += specs[i].name;
      }
      st.available = true;
      st.group = static_cast<int>(groups_.size() - 1);
      events_.push_back(st);
    }
    map_pages(inherit);
  } catch (...) {
    close_all();
    throw;
  }
}

void CounterGroup::map_pages(bool inherit) {
  if (groups_.empty()) {
    rdpmc_blocker_ = "no event opened";
    return;
  }
  if (!kHaveRdpmc) {
    rdpmc_blocker_ = "not x86-64: rdpmc is an x86 instruction";
    return;
  }
  if (inherit) {
    rdpmc_blocker_ = "inherit: only read(2) sums the counts of threads started later (and "
                     "the kernel refuses to mmap inherited per-thread events)";
    return;
  }
  // A group holding a software event can never be read by rdpmc (the software PMU gives its
  // events no counter index, their pages say index 0): software_note_ says why, and the pages
  // are not mapped, as mapping and unmapping them would cost more than the counting.
  if (!software_note_.empty() && !detail::g_map_software.load()) return;
  const long page = sysconf(_SC_PAGESIZE);
  const std::size_t bytes = page > 0 ? static_cast<std::size_t>(page) : 4096;
  for (Group& g : groups_) {
    g.page_bytes = bytes;
    g.pages.reserve(g.fds.size());  // so that no push_back below can throw and leak a page
    for (const int fd : g.fds) {
      // Only the first page (no ring buffer): it holds struct perf_event_mmap_page. The
      // kernel requires MAP_SHARED; PROT_READ is enough to read it.
      void* p = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        rdpmc_blocker_ = std::string("mmap of the event page failed: ") + std::strerror(err);
        for (Group& h : groups_) {
          for (void* q : h.pages) munmap(q, h.page_bytes);
          h.pages.clear();
        }
        return;
      }
      g.pages.push_back(p);
    }
  }
}

CounterGroup::~CounterGroup() { close_all(); }

CounterGroup::CounterGroup(CounterGroup&& other) noexcept
    : events_(std::move(other.events_)),
      groups_(std::move(other.groups_)),
      started_(other.started_),
      prefer_read_(other.prefer_read_),
      rdpmc_blocker_(std::move(other.rdpmc_blocker_)),
      software_note_(std::move(other.software_note_)),
      have_read_(other.have_read_),
      last_rdpmc_(other.last_rdpmc_),
      last_why_(other.last_why_),
      last_reason_(std::move(other.last_reason_)) {
  other.groups_.clear();
  other.started_ = false;
}

CounterGroup& CounterGroup::operator=(CounterGroup&& other) noexcept {
  if (this != &other) {
    close_all();
    events_ = std::move(other.events_);
    groups_ = std::move(other.groups_);
    started_ = other.started_;
    prefer_read_ = other.prefer_read_;
    rdpmc_blocker_ = std::move(other.rdpmc_blocker_);
    software_note_ = std::move(other.software_note_);
    have_read_ = other.have_read_;
    last_rdpmc_ = other.last_rdpmc_;
    last_why_ = other.last_why_;
    last_reason_ = std::move(other.last_reason_);
    other.groups_.clear();
    other.started_ = false;
  }
  return *this;
}

void CounterGroup::close_all() noexcept {
  for (Group& g : groups_) {
    for (void* p : g.pages) munmap(p, g.page_bytes);
    // Members first, the leader last.
    for (auto it = g.fds.rbegin(); it != g.fds.rend(); ++it) close(*it);
  }
  groups_.clear();
}

bool CounterGroup::any_available() const noexcept { return !groups_.empty(); }

namespace {
// One read(2) of a group into `words` (resized to what the kernel wrote).
void read_words(int fd, std::size_t members, std::vector<std::uint64_t>& words) {
  words.resize(3 + 2 * members);
  const ssize_t n = ::read(fd, words.data(), words.size() * sizeof(std::uint64_t));
  if (n < 0) os_failure("CounterGroup::read", "read(2)", errno);
  words.resize(static_cast<std::size_t>(n) / sizeof(std::uint64_t));
}
}  // namespace

void CounterGroup::start() {
  for (Group& g : groups_) {
    // No RESET: it zeroes the counts but not the enabled/running times, so a baseline is
    // needed anyway, and with one the RESET would only add a system call.
    read_words(g.leader_fd, g.fds.size(), g.words);
    g.baseline = parse_group_read(g.words, static_cast<long long>(g.fds.size()));
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

bool CounterGroup::read_user_space(std::string& why) {
  for (Group& g : groups_) {
    if (g.pages.size() != g.fds.size()) {
      why = "an event page is not mapped";
      return false;
    }
    // The read(2) layout, so that both paths share the parsing and the deltas.
    std::vector<std::uint64_t>& w = g.words;
    w.assign(3 + 2 * g.fds.size(), 0);
    w[0] = g.fds.size();
    for (std::size_t k = 0; k < g.fds.size(); ++k) {
      const std::string& name = events_[g.event_of[k]].name;
      MmapPageSnapshot page;
      std::uint64_t pmc = 0;
      std::uint64_t cycles = 0;
      if (!snapshot_page(g.pages[k], page, pmc, cycles)) {
        why = "the event page kept changing (" + std::to_string(kSeqlockTries) +
              " seqlock tries): " + name;
        return false;
      }
      const UserRead r = user_space_count(page, pmc, cycles);
      if (r.status != UserReadStatus::ok) {
        why = user_read_reason(r.status, name, page.pmc_width, page.time_shift);
        return false;
      }
      // A group is scheduled as a whole: the leader's times are every member's, as in the
      // group read(2), which reports the leader's.
      if (k == 0) {
        w[1] = r.time_enabled_ns;
        w[2] = r.time_running_ns;
      }
      w[3 + 2 * k] = r.value;
      w[4 + 2 * k] = g.ids[k];
    }
  }
  return true;
}

void CounterGroup::read_into(std::vector<CounterReading>& out) {
  if (!started_ && !groups_.empty()) {
    throw std::logic_error("[CounterGroup::read] called before start()");
  }
  if (out.size() != events_.size()) out.resize(events_.size());
  for (std::size_t i = 0; i < events_.size(); ++i) {
    CounterReading& r = out[i];
    if (r.name != events_[i].name) r.name = events_[i].name;
    if (r.reason != events_[i].reason) r.reason = events_[i].reason;
    r.available = events_[i].available;
    r.raw = r.time_enabled_ns = r.time_running_ns = 0;
    r.counted = r.scaled = false;
    r.value = std::nan("");
    r.running_fraction = 0.0;
  }
  // rdpmc for every event, or read(2) for every group: one path per reading. A software
  // event's page always says index 0, so a group holding one never tries the pages.
  bool user = false;
  if (prefer_read_) {
    last_why_ = Why::forced;
  } else if (!rdpmc_blocker_.empty()) {
    last_why_ = Why::blocker;
  } else if (!software_note_.empty()) {
    last_why_ = Why::software;
  } else {
    user = read_user_space(last_reason_);
    last_why_ = user ? Why::none : Why::passing;
  }
  if (!user) {
    for (Group& g : groups_) read_words(g.leader_fd, g.fds.size(), g.words);
  }
  have_read_ = true;
  last_rdpmc_ = user;
  for (Group& g : groups_) {
    parse_group_read_into(g.words.data(), g.words.size(), static_cast<long long>(g.fds.size()),
                          g.now);
    group_read_delta_into(g.baseline, g.now, g.delta);
    const GroupRead& d = g.delta;
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

CounterGroup::CounterGroup(const std::vector<std::string>& names, bool inherit)
    : rdpmc_blocker_(kUnsupported) {
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
    : events_(std::move(other.events_)),
      groups_(),
      started_(other.started_),
      prefer_read_(other.prefer_read_),
      rdpmc_blocker_(std::move(other.rdpmc_blocker_)) {}
CounterGroup& CounterGroup::operator=(CounterGroup&& other) noexcept {
  events_ = std::move(other.events_);
  started_ = other.started_;
  prefer_read_ = other.prefer_read_;
  rdpmc_blocker_ = std::move(other.rdpmc_blocker_);
  return *this;
}
void CounterGroup::close_all() noexcept {}
bool CounterGroup::any_available() const noexcept { return false; }
void CounterGroup::start() { started_ = true; }
void CounterGroup::stop() {}
void CounterGroup::read_into(std::vector<CounterReading>& out) {
  have_read_ = true;
  last_why_ = Why::blocker;
  out.assign(events_.size(), CounterReading{});
  for (std::size_t i = 0; i < events_.size(); ++i) {
    out[i].name = events_[i].name;
    out[i].reason = events_[i].reason;
    out[i].value = std::nan("");
  }
}

#endif

std::vector<CounterReading> CounterGroup::read() {
  std::vector<CounterReading> out;
  read_into(out);
  return out;
}

const char* CounterGroup::read_path() const noexcept {
  if (have_read_) return last_rdpmc_ ? "rdpmc" : "read";
  return prefer_read_ || !rdpmc_blocker_.empty() || !software_note_.empty() ? "read" : "rdpmc";
}

std::string CounterGroup::read_path_reason() const {
  if (have_read_) {
    switch (last_why_) {
      case Why::none: return "";
      case Why::forced: return kForcedRead;
      case Why::blocker: return rdpmc_blocker_;
      case Why::software: return software_note_;
      case Why::passing: return last_reason_;
    }
  }
  if (prefer_read_) return kForcedRead;
  return rdpmc_blocker_.empty() ? software_note_ : rdpmc_blocker_;
}

void CounterGroup::prefer_read(bool on) noexcept {
  prefer_read_ = on;
  have_read_ = false;
}

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
    out[i].available = !samples[i].empty();
    if (out[i].available) out[i].median = detail::median(std::move(samples[i]));
  }
  return out;
}

namespace {

// Median over `reps` batches of the ns per call of `op`, run `batch` times per batch.
template <class Op>
double time_batches(int reps, int batch, Op&& op) {
  using clock = std::chrono::steady_clock;
  std::vector<double> per_op;
  per_op.reserve(static_cast<std::size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    const clock::time_point t0 = clock::now();
    for (int b = 0; b < batch; ++b) op();
    const clock::time_point t1 = clock::now();
    per_op.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / batch);
  }
  return detail::median(std::move(per_op));
}

}  // namespace

CounterCost time_counter_ops(CounterGroup& group, int reps, int batch) {
  if (reps < 1 || batch < 1) {
    throw std::invalid_argument("[time_counter_ops] reps is " + std::to_string(reps) +
                                " and batch " + std::to_string(batch) + ", expected both >= 1");
  }
  CounterCost cost;
  cost.reps = reps;
  cost.batch = batch;
  std::size_t sink = 0;
  std::vector<CounterReading> out;
  group.start();
  group.read_into(out);  // settles the path and sizes the buffers before timing
  cost.read_ns = time_batches(reps, batch, [&] {
    group.read_into(out);
    sink += out.size();
  });
  cost.read_path = group.read_path();
#if defined(__linux__)
  cost.syscall_ns = time_batches(reps, batch, [&] {
    for (CounterGroup::Group& g : group.groups_) {
      sink += static_cast<std::size_t>(::read(g.leader_fd, g.words.data(),
                                              g.words.size() * sizeof(std::uint64_t)) > 0);
    }
  });
#endif
  group.stop();
  cost.region_ns = time_batches(reps, batch, [&] {
    group.start();
    group.stop();
    group.read_into(out);
    sink += out.size();
  });
  if (sink == 0 && !group.events().empty()) {
    throw std::logic_error("[time_counter_ops] read() returned no readings");
  }
  return cost;
}

}  // namespace fastbench
