// perf_counters.hpp — Linux perf_event counters for the calling thread, user space only
// (exclude_kernel, exclude_hv: paranoid level 2 allows it), pid = 0, cpu = -1.
//  * Events are read as groups (PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | RUNNING), all
//    counters of a group at once, and scaled by perf_math when the kernel multiplexed. Events
//    are opened disabled and never pinned. A group holds at most 8 hardware events; more, or
//    an event the kernel refuses to add (ENOSPC/EINVAL), starts another group.
//  * Missing hardware is a state: CounterGroup records which events opened and why the others
//    did not; it throws only for an unknown event name (a bad argument).
//  * Read path: rdpmc from user space when every opened event allows it, else read(2) on each
//    group leader (never a mix). Each event's first page is mmapped at opening; a read copies
//    it inside its seqlock with rdpmc(index - 1), as include/uapi/linux/perf_event.h describes,
//    and perf_math does the arithmetic. rdpmc needs x86-64, no inherit (the kernel refuses to
//    mmap inherited per-thread events, and only read(2) sums the children), a mapped page, and
//    per event at each read: cap_user_rdpmc, index != 0 (on a hardware counter now: never for
//    a software event, nor once stopped, so a read after stop() uses read(2)) and
//    cap_user_time (the page's enabled/running times are brought up to date from the TSC, so
//    multiplexing is scaled as with read(2)). read_path() and read_path_reason() say which
//    path was taken and why.
//  * Off Linux everything compiles; probes report "unsupported platform" and nothing opens.
// The syscalls and platform #ifs live in perf_counters.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perf_math.hpp"

namespace fastbench {

struct EventSpec {
  std::string name;           // as asked, e.g. "cycles", "r00c0", "4:0x3c"
  std::uint32_t type = 0;     // perf_event_attr.type (0 hardware, 1 software, 3 cache, 4 raw, ...)
  std::uint64_t config = 0;   // perf_event_attr.config
  bool hardware = true;       // false only for PERF_TYPE_SOFTWARE; counts toward the 8 per group
  std::string fallback;       // event to open instead when this one fails ("cycles" for ref-cycles)
};

// Resolves a name from known_event_names(), "rNNNN" (1-16 hex digits, PERF_TYPE_RAW) or
// "type:config" (type decimal or a PMU name from /sys/bus/event_source/devices/<pmu>/type;
// config decimal or 0x-hex). Throws std::invalid_argument ("[resolve_event] unknown event ...").
EventSpec resolve_event(const std::string& name);
std::vector<std::string> known_event_names();

struct EventProbe {
  std::string name;
  bool available = false;
  std::string opened_as;  // the event actually opened (differs when a fallback was used)
  int error = 0;          // errno of the failed open (0 when available)
  std::string reason;     // why unavailable (empty when available)
};

// Opens the event once (user space, this thread) and closes it. Never throws for an event
// that cannot be opened; throws std::invalid_argument for an unknown name.
EventProbe probe_event(const std::string& name);

// The documented reason for a failed perf_event_open with this errno (ENOENT: no PMU;
// EACCES/EPERM: the paranoid level read from /proc; EINVAL; ENOSYS; others: strerror).
std::string perf_open_error_reason(int err);

namespace detail {
// Test hook: after `skip` more perf_event_open calls go through, the next `count` fail with
// `err` without reaching the kernel. count <= 0 clears it. Process-wide, not for production.
void inject_open_errno(int err, int count, int skip = 0);
// Test hook: also mmap the pages of groups holding software events, which rdpmc can never
// read (their pages say index 0) and which are otherwise left unmapped, since mapping and
// unmapping cost more than the counting. Lets the page lifecycle be tested without a PMU.
void map_software_pages(bool on);
// What to do about EACCES/EPERM at this perf_event_paranoid level ("unknown" when unreadable):
// lowering it helps only at 3 or above; at 2 or below something else refused.
std::string permission_advice(const std::string& level);
}  // namespace detail

struct EventStatus {
  std::string name;
  bool available = false;
  std::string opened_as;  // e.g. "cycles" for a ref-cycles that fell back
  int group = -1;         // index of the kernel group holding it, -1 when unavailable
  int error = 0;
  std::string reason;
};

struct CounterReading {
  std::string name;
  bool available = false;
  std::string reason;              // why unavailable
  std::uint64_t raw = 0;           // count since start()
  std::uint64_t time_enabled_ns = 0;
  std::uint64_t time_running_ns = 0;
  bool counted = false;            // false when unavailable or never scheduled
  double value = 0.0;              // scaled estimate (perf_math::scale_count); NaN if !counted
  double running_fraction = 0.0;
  bool scaled = false;             // true when multiplexed
};

struct CounterCost;

class CounterGroup {
 public:
  // Opens what it can; `inherit` also counts threads created after opening.
  // Throws std::invalid_argument for an unknown name or an empty list.
  explicit CounterGroup(const std::vector<std::string>& names, bool inherit = false);
  ~CounterGroup();
  CounterGroup(const CounterGroup&) = delete;
  CounterGroup& operator=(const CounterGroup&) = delete;
  CounterGroup(CounterGroup&& other) noexcept;
  CounterGroup& operator=(CounterGroup&& other) noexcept;

  const std::vector<EventStatus>& events() const noexcept { return events_; }
  bool any_available() const noexcept;
  std::size_t group_count() const noexcept { return groups_.size(); }
  // "rdpmc" when the last read() used rdpmc for every event, else "read". Before any read()
  // (and after prefer_read()), the path the next read() will try.
  const char* read_path() const noexcept;
  // Why read_path() is "read" (empty when it is "rdpmc"), e.g. "software events are not on
  // hardware counters (mmap index 0): task-clock".
  std::string read_path_reason() const;
  // Forces read(2) even where rdpmc works (to compare the two), or allows rdpmc again.
  void prefer_read(bool on) noexcept;
  bool prefers_read() const noexcept { return prefer_read_; }

  // Takes a baseline reading (later readings are deltas from it) and enables every group
  // (PERF_IOC_FLAG_GROUP).
  // Throws std::runtime_error ("[CounterGroup::start] ...", with strerror) if an ioctl fails.
  void start();
  void stop();  // disables every group
  // Per event, in the order asked: counts since start() (stopped or still running), by
  // rdpmc or read(2) (read_path() says which afterwards).
  // Throws std::runtime_error when read(2) fails, std::logic_error before start().
  std::vector<CounterReading> read();
  // The same into `out`, reusing its storage: no allocation after the first call with it,
  // for readings taken in a loop.
  void read_into(std::vector<CounterReading>& out);

 private:
  struct Group {
    int leader_fd = -1;
    std::vector<int> fds;               // leader first
    std::vector<std::size_t> event_of;  // index into events_ per fd
    std::vector<std::uint64_t> ids;     // kernel id per fd
    GroupRead baseline;                 // what read(2) said at start()
    std::vector<std::uint64_t> words;   // scratch for each reading, in read(2)'s layout
    GroupRead now, delta;               // scratch: the reading parsed, and since start()
    std::vector<void*> pages;           // per fd: the mmapped event page (empty if unmapped)
    std::size_t page_bytes = 0;
  };
  void map_pages(bool inherit);  // mmaps every event page, or sets rdpmc_blocker_
  // The counts and leader times of every group by rdpmc; false (with `why`) when some event
  // does not allow it right now.
  bool read_user_space(std::string& why);
  void close_all() noexcept;
  std::vector<EventStatus> events_;
  std::vector<Group> groups_;
  bool started_ = false;
  bool prefer_read_ = false;
  std::string rdpmc_blocker_;  // why rdpmc can never be used by this group (set at opening)
  std::string software_note_;  // names the software events, whose pages always say index 0
  bool have_read_ = false;     // a read() happened since opening or prefer_read()
  bool last_rdpmc_ = false;    // the last read() used rdpmc
  // Why the last read() did not: one of the lasting reasons above, or a passing one that
  // last_reason_ holds (kept apart so that a reading copies no string).
  enum class Why { none, forced, blocker, software, passing };
  Why last_why_ = Why::none;
  std::string last_reason_;
  friend CounterCost time_counter_ops(CounterGroup& group, int reps, int batch);
};

struct CounterOverhead {
  std::string name;
  bool available = false;
  double median = 0.0;  // counts (ns for task-clock) of an empty start/stop region
};

// Runs start(); stop(); read() `reps` times on `group` and returns, per event, the median
// count of the empty region, for callers to subtract (perf_math::subtract_overhead).
// Throws std::invalid_argument for reps < 1.
std::vector<CounterOverhead> calibrate_read_overhead(CounterGroup& group, int reps);

// What the counting itself costs in time, on steady_clock: medians over `reps` batches of
// `batch` operations each, in ns per operation.
struct CounterCost {
  double read_ns = 0.0;    // one read_into() of a running group (read() less its allocations)
  double region_ns = 0.0;  // one counted empty region: start(); stop(); read_into()
  double syscall_ns = 0.0; // the floor under read(): bare read(2) of every group leader
  std::string read_path;   // the path read() took during the timing
  int reps = 0;
  int batch = 0;
};

// Times read() and start/stop/read on `group` (honouring prefer_read()). Leaves the group
// stopped. Throws std::invalid_argument for reps or batch < 1, and what start()/read() throw.
CounterCost time_counter_ops(CounterGroup& group, int reps, int batch);

}  // namespace fastbench
