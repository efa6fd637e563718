/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/analyze.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "core_timeline/reader/printable.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/symbolize.h"
#include "io_events.h"
#include "signal_frame.h"
#include "core_timeline/timeline.h"

namespace core_timeline::reader {

/* The size analyze.h gives (memory per event): change both together. */
static_assert(sizeof(Event) == 152, "analyze.h states the size of an Event; update it");

namespace f = core_timeline::format;

int exit_code(Status s) noexcept {
  switch (s) {
    case Status::kOk: return 0;
    case Status::kNoRing: return 1;
    case Status::kMappingAbsent: return 2;
    case Status::kCoreUnreadable: return 3;
    case Status::kRingInvalid: return 4;
    case Status::kExecutableRefused: return 5;
    case Status::kSidecarMismatch: return 6;
    case Status::kUsage: return 7;
    case Status::kRingNotMade: return 8;
  }
  return 3;
}

document::Status document_status(Status s) noexcept {
  switch (s) {
    case Status::kOk: return document::Status::kOk;
    case Status::kNoRing: return document::Status::kNoRing;
    case Status::kMappingAbsent: return document::Status::kMappingAbsent;
    case Status::kCoreUnreadable: return document::Status::kCoreUnreadable;
    case Status::kRingInvalid: return document::Status::kRingInvalid;
    case Status::kExecutableRefused: return document::Status::kExecutableRefused;
    case Status::kSidecarMismatch: return document::Status::kSidecarMismatch;
    case Status::kUsage: return document::Status::kUsage;
    case Status::kRingNotMade: return document::Status::kRingNotMade;
  }
  return document::Status::kCoreUnreadable;
}

std::string_view status_name(Status s) noexcept { return document::status_name(document_status(s)); }

namespace {

/* The name of `v` in `table`, a list of {value, name} pairs. */
template <class E, std::size_t N>
std::string_view name_in(const std::array<std::pair<E, std::string_view>, N> &table, E v) noexcept {
  for (const auto &[value, name] : table)
    if (value == v) return name;
  return "?";
}

}  // namespace

std::string_view verification_name(Verification v) noexcept {
  static constexpr std::array<std::pair<Verification, std::string_view>, 3> kNames{{
      {Verification::kRaw, "raw"},
      {Verification::kVerified, "verified"},
      {Verification::kUnverifiedNoCoreBuildId, "unverified-no-core-buildid"},
  }};
  return name_in(kNames, v);
}

std::string_view mapping_kind_name(MappingKind k) noexcept {
  static constexpr std::array<std::pair<MappingKind, std::string_view>, 3> kNames{{
      {MappingKind::kUnmapped, "unmapped"}, {MappingKind::kFile, "file"}, {MappingKind::kAnonymous, "anonymous"}}};
  return name_in(kNames, k);
}

std::string_view origin_name(Origin o) noexcept {
  static constexpr std::array<std::pair<Origin, std::string_view>, 2> kNames{{{Origin::kCore, "core"}, {Origin::kSidecar, "sidecar"}}};
  return name_in(kNames, o);
}

std::string_view found_by_name(FoundBy f) noexcept {
  static constexpr std::array<std::pair<FoundBy, std::string_view>, 3> kNames{{
      {FoundBy::kNtFile, "nt_file"}, {FoundBy::kMagicScan, "magic_scan"}, {FoundBy::kSidecar, "sidecar"}}};
  return name_in(kNames, f);
}

std::string_view signal_note_name(SignalNote n) noexcept {
  static constexpr std::array<std::pair<SignalNote, std::string_view>, 2> kNames{{
      {SignalNote::kSiginfo, "NT_SIGINFO"}, {SignalNote::kPrstatus, "NT_PRSTATUS"}}};
  return name_in(kNames, n);
}

std::string_view timeline_source_name(TimelineSource s) noexcept {
  static constexpr std::array<std::pair<TimelineSource, std::string_view>, 4> kNames{{
      {TimelineSource::kNone, ""},
      {TimelineSource::kCoreOnly, "core-only"},
      {TimelineSource::kCoreAndSidecar, "core+sidecar"},
      {TimelineSource::kDegradedSidecar, "degraded-sidecar"},
  }};
  return name_in(kNames, s);
}

std::string_view sidecar_status_name(SidecarStatus s) noexcept {
  static constexpr std::array<std::pair<SidecarStatus, std::string_view>, 6> kNames{{
      {SidecarStatus::kNone, ""},
      {SidecarStatus::kIgnored, "ignored"},
      {SidecarStatus::kMerged, "merged"},
      {SidecarStatus::kDegraded, "degraded"},
      {SidecarStatus::kUnusable, "unusable"},
      {SidecarStatus::kRefused, "refused"},
  }};
  return name_in(kNames, s);
}

std::string_view check_name(Check c) noexcept {
  switch (c) {
    case Check::kMatch: return "match";
    case Check::kMismatch: return "mismatch";
    case Check::kUnchecked: return "unchecked";
  }
  return "unchecked";
}

std::string_view stack_state_name(StackState s) noexcept {
  switch (s) {
    case StackState::kNone: return "none";
    case StackState::kComplete: return "complete";
    case StackState::kDepthLimit: return "depth_limit";
    case StackState::kNoUnwindInfo: return "no_unwind_info";
    case StackState::kBadFrame: return "bad_frame";
    case StackState::kLost: return "lost";
    case StackState::kMalformed: return "malformed";
    case StackState::kCut: return "cut";
  }
  return "none";
}

std::string_view ring_state_name(RingReport::State s) noexcept {
  switch (s) {
    case RingReport::State::kValid: return "valid";
    case RingReport::State::kAbsent: return "absent";
    case RingReport::State::kInvalid: return "invalid";
    case RingReport::State::kForeign: return "foreign";
    case RingReport::State::kNotMade: return "not_made";
  }
  return "invalid";
}

std::string_view name_from_name(NameFrom n) noexcept {
  static constexpr std::array<std::pair<NameFrom, std::string_view>, 3> kNames{{
      {NameFrom::kNone, ""}, {NameFrom::kCore, "core"}, {NameFrom::kTlmap, "tlmap"}}};
  return name_in(kNames, n);
}

std::string_view reference_name(TimeBase::Reference r) noexcept {
  static constexpr std::array<std::pair<TimeBase::Reference, std::string_view>, 4> kNames{{
      {TimeBase::Reference::kNone, ""},
      {TimeBase::Reference::kCrash, "crash"},
      {TimeBase::Reference::kNewestEvent, "newest_event"},
      {TimeBase::Reference::kSnapshot, "snapshot"}}};
  return name_in(kNames, r);
}

std::string_view span_state_name(Span::State s) noexcept {
  static constexpr std::array<std::pair<Span::State, std::string_view>, 5> kNames{{
      {Span::State::kOpen, "open"},
      {Span::State::kOpenOrEndLost, "open_or_end_lost"},
      {Span::State::kClosed, "closed"},
      {Span::State::kBeginLost, "begin_lost"},
      {Span::State::kNoBegin, "no_begin"}}};
  return name_in(kNames, s);
}

std::optional<std::array<std::string_view, 2>> Analysis::arg_names_of(const Event &e) const {
  if (e.kind == f::kKindSpanEnd) return std::array<std::string_view, 2>{"token", "begin_timestamp"};
  if (!e.named) return std::nullopt;
  const auto it = names.find(e.id);
  if (it == names.end()) return std::nullopt;
  return std::array<std::string_view, 2>{it->second.arg0, it->second.arg1};
}

/* Linux signal numbers (include/uapi/asm-generic/signal.h; x86-64 and
 * AArch64 agree for 1..31). */
std::string signal_name(int signo) {
  static const char *const kNames[] = {
      nullptr,   "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",  "SIGTRAP", "SIGABRT", "SIGBUS",
      "SIGFPE",  "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
      "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",
      "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR",  "SIGSYS"};
  if (signo > 0 && signo < 32) return kNames[signo];
  if (signo >= 34 && signo <= 64) return fmt::format("SIGRTMIN+{}", signo - 34);
  return fmt::format("SIG{}", signo);
}

/* include/uapi/asm-generic/siginfo.h */
std::string si_code_name(int signo, int code) {
  switch (code) {
    case 0: return "SI_USER";
    case 0x80: return "SI_KERNEL";
    case -1: return "SI_QUEUE";
    case -2: return "SI_TIMER";
    case -3: return "SI_MESGQ";
    case -4: return "SI_ASYNCIO";
    case -5: return "SI_SIGIO";
    case -6: return "SI_TKILL";
    default: break;
  }
  static const char *const kSegv[] = {nullptr, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR",
                                      "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR",
                                      "SEGV_MTESERR", "SEGV_CPERR"};
  static const char *const kBus[] = {nullptr, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR",
                                     "BUS_MCEERR_AO"};
  static const char *const kIll[] = {nullptr, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
                                     "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"};
  static const char *const kFpe[] = {nullptr, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
                                     "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", nullptr,
                                     nullptr, nullptr, nullptr, nullptr, "FPE_FLTUNK", "FPE_CONDTRAP"};
  auto pick = [&](const char *const *t, std::size_t n) -> std::string {
    if (code > 0 && static_cast<std::size_t>(code) < n && t[code] != nullptr) return t[code];
    return std::to_string(code);
  };
  switch (signo) {
    case SIGSEGV: return pick(kSegv, std::size(kSegv));
    case SIGBUS: return pick(kBus, std::size(kBus));
    case SIGILL: return pick(kIll, std::size(kIll));
    case SIGFPE: return pick(kFpe, std::size(kFpe));
    default: return std::to_string(code);
  }
}

namespace {

/* The signals whose si_addr is the faulting address (sigaction(2)). */
bool fault_signal(int signo) {
  return signo == SIGSEGV || signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGTRAP;
}

std::string perms(std::uint32_t flags) {
  std::string p = "---";
  if (flags & PF_R) p[0] = 'r';
  if (flags & PF_W) p[1] = 'w';
  if (flags & PF_X) p[2] = 'x';
  return p;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

constexpr std::string_view kRingMemfdPrefix = "/memfd:core-timeline";
constexpr std::size_t kMaxMagicMisses = 16;
/* Ring reports per core.  A process has one ring (one more per fork that
 * called tl_init again); without a bound, NT_FILE could list a million
 * ring mappings and each would cost a report, a warning and JSON. */
constexpr std::size_t kMaxRings = 64;

class Analyzer {
 public:
  Analyzer(const CoreFile &core, const ReadOptions &opts) : core_(core), opts_(opts) {}
  Analysis run();
  /* locate_rings(): the rings with their headers validated, not decoded. */
  std::vector<RingReport> locate();

 private:
  void process_facts();
  void crash_facts();
  void find_rings();
  void refuse(RingReport &rep, std::uint64_t addr, const Error &error, bool ring_named);
  void probe(RingReport &rep, std::uint64_t addr, std::uint64_t extent, bool ring_named);
  void check_identity(RingReport &rep, const RingHeaderInfo &h);
  bool handle_sidecar();
  void build_events();
  void judge_handed();
  void collect_names();
  void place_in_time();
  void build_spans();
  void build_windows();
  void summarize_threads();
  bool snapshot_reference();
  Event make_event(std::uint32_t ring_index, const RingHeaderInfo &ring, const RingEvent &e, Origin source);
  void attach_stacks();
  void name_events();
  void sort_events();
  void name_threads();
  std::uint32_t intern(std::string s);
  std::uint32_t location_index(std::uint64_t addr, bool crash, bool mapping_changed);
  std::uint32_t mapping_index(std::uint64_t addr);
  void symbolize_all();
  void core_stacks(const SymbolizeResult &res, const std::function<void(Location &, const std::optional<Symbol> &)> &apply);
  Location locate(std::uint64_t addr) const;
  AddressMapping describe(std::uint64_t addr) const;
  void decide_status();
  std::string ring_may_be_cut_off() const;

  const CoreFile &core_;
  const ReadOptions &opts_;
  Analysis a_;
  std::set<std::uint32_t> core_tids_;  /* tids with an NT_PRSTATUS */
  std::vector<std::pair<std::uint64_t, std::uint32_t>> stacks_;  /* (sp, tid) of threads with registers, sorted */
  std::map<std::uint64_t, std::uint64_t> rings_at_;  /* [start, end) of each ring decoded from the core */
  std::map<std::string, std::uint64_t> immutable_headers_;  /* [0, kCrcEnd) of each ring found -> its address */
  bool exe_verified_ = false;      /* EXECUTABLE build-id equals the core's */
  bool use_executable_ = false;    /* hand EXECUTABLE to libdwfl */
  bool headers_only_ = false;      /* locate(): validate headers, decode nothing */
  /* The Analysis's tables (Event), looked up while they are filled. */
  std::unordered_map<std::string, std::uint32_t> string_at_;
  std::map<std::tuple<std::uint64_t, bool, bool>, std::uint32_t> location_at_;  /* (address, CRASH, changed) */
  std::vector<bool> location_is_crash_;  /* per location: of a CRASH event (its pc, not a return address) */
  std::map<std::tuple<const Segment *, const FileMapping *, bool>, std::uint32_t> mapping_at_;  /* (.., dumped) */

  friend class EventSink;
};

/* Where analyze() puts a ring's events as decode_ring() accepts them:
 * straight into Analysis::events, each made into an Event (make_event), so
 * that a big ring's events are never held twice. */
class EventSink final : public RingEventSink {
 public:
  EventSink(Analyzer &an, std::uint32_t ring, const RingHeaderInfo &header, Origin source)
      : an_(an), ring_(ring), header_(header), source_(source) {}
  void reserve(std::uint64_t events, std::uint64_t inline_bytes) override {
    an_.a_.events.reserve(an_.a_.events.size() + events);
    an_.a_.inline_data.reserve(an_.a_.inline_data.size() + inline_bytes);
  }
  void event(const RingEvent &e) override { an_.a_.events.push_back(an_.make_event(ring_, header_, e, source_)); }

 private:
  Analyzer &an_;
  std::uint32_t ring_;
  const RingHeaderInfo &header_;
  Origin source_;
};

/* A sink that keeps nothing: a foreign ring's lanes are reported, its
 * events are not shown. */
class DiscardSink final : public RingEventSink {
 public:
  void reserve(std::uint64_t, std::uint64_t) override {}
  void event(const RingEvent &) override {}
};

void Analyzer::process_facts() {
  const auto &n = core_.notes();
  auto &p = a_.process;
  if (n.process) {
    p.pid = n.process->pid;
    p.ppid = n.process->ppid;
    p.uid = n.process->uid;
    p.comm = n.process->fname;
    p.args = n.process->psargs;
  } else {
    a_.warnings.push_back("the core has no NT_PRPSINFO: the ring's pid cannot be checked against it");
  }
  for (const auto &t : n.threads) {
    p.threads.push_back(t.tid);
    core_tids_.insert(t.tid);
    if (t.has_regs) stacks_.emplace_back(t.sp, t.tid);
  }
  std::sort(stacks_.begin(), stacks_.end());
  if (!n.has_file_note)
    a_.warnings.push_back("the core has no NT_FILE note: rings are found by scanning for validated headers, "
                          "and code addresses cannot be tied to files");
  std::string how;
  if (const Module *exe = core_.executable(&how)) {
    p.exe = exe->name;
    p.exe_rule = how;
    p.build_id = exe->build_id;
    p.build_id_note = exe->build_id_note;
  } else {
    p.build_id_note = "no executable mapping is known (no NT_FILE)";
  }
  for (const auto &w : n.warnings) a_.warnings.push_back(w);
}

Location Analyzer::locate(std::uint64_t addr) const {
  Location l;
  l.address = addr;
  if (const FileMapping *fm = core_.file_for(addr)) {
    l.in_module = true;
    l.module = fm->name;
    l.file_offset = addr - fm->start + fm->file_offset;
    if (const Module *m = core_.module_for(addr)) l.build_id = m->build_id;
  }
  return l;
}

AddressMapping Analyzer::describe(std::uint64_t addr) const {
  AddressMapping m;
  const Segment *s = core_.segment_for(addr);
  const FileMapping *fm = core_.file_for(addr);
  if (s == nullptr && fm == nullptr) {
    m.kind = MappingKind::kUnmapped;
    return m;
  }
  if (fm != nullptr) {
    m.kind = MappingKind::kFile;
    m.path = fm->name;
    m.start = fm->start;
    m.end = fm->end;
  } else {
    m.kind = MappingKind::kAnonymous;
    m.start = s->vaddr;
    m.end = s->end();
  }
  if (s != nullptr) {
    m.perms = perms(s->flags);
    m.dumped = addr - s->vaddr < s->present;
  }
  if (m.kind == MappingKind::kAnonymous) {
    /* The thread(s) whose stack pointer lies in the mapping, from the
     * sorted stacks_ (a scan of every thread per event was quadratic). */
    auto lo = std::lower_bound(stacks_.begin(), stacks_.end(), std::make_pair(m.start, std::uint32_t{0}));
    auto hi = std::lower_bound(lo, stacks_.end(), std::make_pair(m.end, std::uint32_t{0}));
    if (lo != hi) {
      m.note = fmt::format("stack of tid {}", lo->second);
      if (hi - lo > 1) m.note += fmt::format(" (and {} more threads)", hi - lo - 1);
    }
  }
  return m;
}

/* See HandedOutcome (analyze.h).  Events are in time order. */
void Analyzer::judge_handed() {
  std::map<std::uint32_t, std::size_t> last; /* tid -> its last CRASH event */
  for (std::size_t i = 0; i < a_.events.size(); ++i)
    if (a_.events[i].kind == f::kKindCrash && a_.events[i].crash != kNoIndex) last[a_.events[i].tid] = i;
  const bool live = core_.notes().live.has_value();
  for (std::size_t i = 0; i < a_.events.size(); ++i) {
    const Event &e = a_.events[i];
    if (e.kind != f::kKindCrash || e.crash == kNoIndex) continue;
    CrashSlot &c = a_.crash_slots[e.crash];
    if (!c.handed) continue;
    if (last[e.tid] != i) {
      c.handed_outcome = HandedOutcome::kRecovered;
      c.handed_note = fmt::format("thread {} recorded a later CRASH event: it went on past the program's handler", e.tid);
    } else if (live || !a_.crash || a_.crash->signo == 0) {
      c.handed_outcome = HandedOutcome::kUnknown;
      c.handed_note = live ? "a live snapshot: the program's handler may still run or have recovered"
                           : "the core records no fatal signal to tell whether the program's handler recovered";
    } else if (a_.crash->tid != e.tid) {
      c.handed_outcome = HandedOutcome::kUnknown;
      c.handed_note = fmt::format("the process died of {} on thread {}: thread {} may have recovered or still "
                                  "been in the program's handler",
                                  a_.crash->signal_name, a_.crash->tid, e.tid);
    } else if (a_.crash->signo == c.signo || a_.crash->signo == 11 || a_.crash->signo == 7 ||
               a_.crash->signo == 4 || a_.crash->signo == 8 || a_.crash->signo == 6) {
      c.handed_outcome = HandedOutcome::kCrash;
      c.handed_note = fmt::format("the process died of {} on this thread with no later CRASH event: the "
                                  "program's handler did not recover",
                                  a_.crash->signal_name);
    } else {
      c.handed_outcome = HandedOutcome::kUnknown;
      c.handed_note = fmt::format("the process died of {} on this thread, a signal libtimeline does not "
                                  "handle: the program's handler may have recovered before it",
                                  a_.crash->signal_name);
    }
  }
}

void Analyzer::crash_facts() {
  const auto &n = core_.notes();
  if (n.live) return; /* a running process: no crash */
  if (!n.signal && n.threads.empty()) return;
  CrashFacts c;
  if (n.signal) {
    c.signo = n.signal->signo;
    c.si_code = n.signal->code;
    c.source = SignalNote::kSiginfo;
    if (*c.si_code > 0 && fault_signal(c.signo)) c.fault_address = n.signal->addr;
    if (*c.si_code <= 0) c.sender_pid = n.signal->sender_pid;
  } else {
    c.signo = n.threads.front().cursig != 0 ? n.threads.front().cursig : n.threads.front().signo;
    c.si_code_note = "no NT_SIGINFO in the core, and NT_PRSTATUS does not record the signal's si_code (the kernel "
                     "leaves its pr_info.si_code 0)";
    c.source = SignalNote::kPrstatus;
  }
  if (c.signo == 0) {
    /* Nothing for the si_code, fault address or sender to belong to. */
    c.signal_note = n.signal ? "no signal recorded: NT_SIGINFO has si_signo 0"
                             : "no signal recorded: the first NT_PRSTATUS has pr_cursig and pr_info.si_signo 0";
    if (c.si_code_note.empty()) c.si_code_note = "no signal recorded";
    c.si_code.reset();
    c.fault_address.reset();
    c.sender_pid.reset();
  } else {
    c.signal_name = signal_name(c.signo);
  }
  if (c.si_code) c.si_code_name = si_code_name(c.signo, *c.si_code);
  if (!n.threads.empty()) {
    const auto &t = n.threads.front();
    c.tid = t.tid;
    c.has_regs = t.has_regs;
    c.pc = t.pc;
    c.sp = t.sp;
    if (t.has_regs) c.location = locate(t.pc);
  }
  a_.crash = std::move(c);
}

void Analyzer::check_identity(RingReport &rep, const RingHeaderInfo &h) {
  const auto &p = a_.process;
  if (!p.pid) {
    rep.pid = {Check::kUnchecked, "the core has no NT_PRPSINFO"};
  } else if (h.pid == *p.pid) {
    rep.pid = {Check::kMatch, fmt::format("ring pid {} = NT_PRPSINFO pid", h.pid)};
  } else {
    rep.pid = {Check::kMismatch, fmt::format("ring written by pid {}, the core is of pid {}", h.pid, *p.pid)};
  }
  if (h.build_id.empty()) {
    rep.build_id = {Check::kUnchecked, "the ring records no executable build-id"};
  } else if (p.build_id.empty()) {
    rep.build_id = {Check::kUnchecked, fmt::format("the core does not attest the executable's build-id ({})",
                                                   p.build_id_note)};
  } else if (h.build_id == p.build_id) {
    rep.build_id = {Check::kMatch, "ring build-id = the core's executable build-id"};
  } else {
    rep.build_id = {Check::kMismatch, fmt::format("ring build-id {} but the core's executable {} has {}",
                                                  hex_bytes(h.build_id), p.exe, hex_bytes(p.build_id))};
  }
  rep.start_time = {Check::kUnchecked,
                    "an ELF core does not record the process start time; it is checked against a sidecar"};
  if (rep.pid.result == Check::kMismatch || rep.build_id.result == Check::kMismatch) {
    rep.state = RingReport::State::kForeign;
    rep.reason = rep.pid.result == Check::kMismatch ? rep.pid.detail : rep.build_id.detail;
  }
}

void Analyzer::probe(RingReport &rep, std::uint64_t addr, std::uint64_t extent, bool ring_named) {
  auto view = core_.read_memory(addr, extent);
  std::vector<std::uint8_t> copy;
  auto hdr = validate_ring_header(view, extent);
  if (hdr) {
    /* One process has one ring per region.  Headers whose regions overlap
     * would decode the same slots once each (N headers over one slot area:
     * N copies of every event), so a region that overlaps a ring already
     * found is refused before it is decoded.  region_size <= extent, which
     * does not run past the end of the address space. */
    const std::uint64_t end = addr + hdr->region_size;
    auto next = rings_at_.lower_bound(addr);
    std::optional<std::uint64_t> other;
    if (next != rings_at_.end() && next->first < end) other = next->first;
    else if (next != rings_at_.begin() && std::prev(next)->second > addr) other = std::prev(next)->first;
    if (other) {
      rep.state = RingReport::State::kInvalid;
      rep.reason = fmt::format("its region [{:#x}, {:#x}) overlaps the ring at {:#x}; rings do not share memory, "
                               "so this header is not decoded", addr, end, *other);
      return;
    }
  }
  if (!hdr) return refuse(rep, addr, hdr.error(), ring_named);
  /* No two tl_init calls write the same immutable header: it holds the
   * clock anchor read at tl_init (ring_format.h).  A header byte-identical
   * to a ring's already found is that ring seen again - its memfd mapped
   * twice, or a copy at the start of a file mapping NT_FILE lists - and
   * decoding it would show every event twice. */
  std::string immutable;
  if (view.size() >= f::kCrcEnd) immutable.assign(reinterpret_cast<const char *>(view.data()), f::kCrcEnd);
  if (auto it = immutable_headers_.find(immutable); !immutable.empty() && it != immutable_headers_.end()) {
    rep.state = RingReport::State::kInvalid;
    rep.reason = fmt::format("its header is a byte-for-byte copy of the ring at {:#x} (the same ring mapped twice, "
                             "or a copy of it), so it is not decoded again", it->second);
    return;
  }
  if (hdr->no_ring) {
    rings_at_[addr] = addr + hdr->region_size;
    if (!immutable.empty()) immutable_headers_.emplace(std::move(immutable), addr);
    const int err = hdr->init_error;
    rep.ring.emplace();
    rep.ring->header = std::move(*hdr);
    check_identity(rep, rep.ring->header);
    if (rep.state == RingReport::State::kForeign) return;
    rep.state = RingReport::State::kNotMade;
    rep.reason = fmt::format("libtimeline was loaded but made no ring: {}{}{}",
                             err > 0 ? fmt::format("{} ({})", errno_name(err), std::strerror(err)) : "no errno",
                             rep.ring->header.init_error_text.empty() ? "" : ", ",
                             rep.ring->header.init_error_text);
    return;
  }
  if (headers_only_) {
    rep.state = RingReport::State::kValid;
    rings_at_[addr] = addr + hdr->region_size;
    if (!immutable.empty()) immutable_headers_.emplace(std::move(immutable), addr);
    return;
  }
  if (view.size() < hdr->region_size) {
    /* The region continues in the next PT_LOAD (a split mapping): copy the
     * contiguous dumped bytes, at most region_size (<= 4 GiB, and never more
     * than the file holds). */
    copy = core_.copy_memory(addr, hdr->region_size);
    if (copy.size() > view.size()) view = copy;
  }
  /* The identity is the header's: a foreign ring's lanes are decoded for
   * its report, its events are not kept.  A valid ring's events go
   * straight into the timeline, as the ring with the index this report
   * gets (find_rings pushes every valid report, next). */
  rep.state = RingReport::State::kValid;
  check_identity(rep, *hdr);
  rep.index = static_cast<std::uint32_t>(a_.rings.size());
  DiscardSink discard;
  EventSink keep(*this, rep.index, *hdr, Origin::kCore);
  RingEventSink &sink = rep.state == RingReport::State::kValid ? static_cast<RingEventSink &>(keep) : discard;
  DecodeOptions dopts;
  if (const auto &live = core_.notes().live) {
    dopts.live = true;
    /* The snapshot read the slot clock only if it is the ring's: the same
     * machine's TSC (x86-64) or CNTVCT (AArch64). */
    const bool tsc = (hdr->compat_flags & f::kCompatClockTsc) != 0 && core_.machine() == EM_X86_64;
    const bool cntvct = (hdr->compat_flags & f::kCompatClockCntvct) != 0 && core_.machine() == EM_AARCH64;
    if (live->ticks != 0 && live->monotonic_ns > 0 && live->realtime_ns > 0 && (tsc || cntvct))
      dopts.snapshot_anchor = DecodeOptions::Anchor{live->ticks, static_cast<std::uint64_t>(live->monotonic_ns),
                                                    static_cast<std::uint64_t>(live->realtime_ns), live->spread_ticks};
  }
  auto dec = decode_ring(view, extent, sink, dopts);
  if (!dec) return refuse(rep, addr, dec.error(), ring_named);
  rings_at_[addr] = addr + dec->header.region_size;
  if (!immutable.empty()) immutable_headers_.emplace(std::move(immutable), addr);
  rep.ring = std::move(*dec);
}

void Analyzer::refuse(RingReport &rep, std::uint64_t addr, const Error &error, bool ring_named) {
  rep.state = RingReport::State::kInvalid;
  rep.reason = error.message;
  if (error.code == Errc::kTruncated && core_.truncated()) {
    rep.state = RingReport::State::kAbsent;
    rep.reason = fmt::format("cut off by truncation: the core file ends ({} bytes) inside the ring at {:#x} "
                             "({}); systemd-coredump truncates cores over its size limit "
                             "(COREDUMP_TRUNCATED)", core_.file_size(), addr, error.message);
  } else if (error.code == Errc::kNotFound && ring_named) {
    rep.reason = fmt::format("the mapping at {:#x} is named like a ring but does not start with \"CTLN\"", addr);
  }
}

void Analyzer::find_rings() {
  const auto &n = core_.notes();
  std::set<std::uint64_t> seen;
  std::uint64_t skipped = 0; /* candidates not examined: kMaxRings reached */
  /* 1. NT_FILE: memfd mappings at file offset 0. */
  for (std::size_t i = 0; i < n.files.size(); ++i) {
    const FileMapping &fm = n.files[i];
    /* (fm.start & 4095): a mapping starts on a page; see step 2. */
    if (fm.file_offset != 0 || (fm.start & 4095) != 0 || !starts_with(fm.name, "/memfd:")) continue;
    if (seen.count(fm.start)) continue;
    const bool named = starts_with(fm.name, kRingMemfdPrefix);
    /* The mapping's extent: this entry plus entries of the same file that
     * continue it (a VMA split by mprotect/madvise). */
    std::uint64_t end = fm.end, next_off = fm.end - fm.start;
    std::size_t last = i;
    for (std::size_t j = i + 1; j < n.files.size(); ++j) {
      const FileMapping &g = n.files[j];
      if (g.path != fm.path || g.start != end || g.file_offset != next_off) break;
      end = g.end;
      next_off += g.end - g.start;
      last = j;
    }
    /* The entries that continue this mapping are not mappings of their
     * own: starting again from each of them made a chain of N entries cost
     * N^2/2 (fm still names entry i). */
    i = last;
    if (a_.rings.size() >= kMaxRings) {
      skipped++;
      continue;
    }
    std::uint64_t extent = end - fm.start;
    RingReport rep;
    rep.found_by = FoundBy::kNtFile;
    rep.address = fm.start;
    rep.mapping_size = extent;
    rep.mapping_name = fm.path;
    const Segment *seg = core_.segment_for(fm.start);
    if (seg != nullptr) extent = std::min(extent, core_.mapped_extent(fm.start));
    if (named && seg == nullptr) {
      rep.state = RingReport::State::kAbsent;
      rep.reason = fmt::format("NT_FILE lists {} at {:#x} but no PT_LOAD segment covers it", fm.path, fm.start);
    } else if (named && seg->filesz == 0) {
      rep.state = RingReport::State::kAbsent;
      rep.reason = fmt::format(
          "excluded from the core: NT_FILE lists {} at {:#x} but its PT_LOAD (program header {}) has p_filesz 0; "
          "the kernel left it out (coredump_filter bit 1, shared anonymous memory, is clear, or the mapping "
          "has MADV_DONTDUMP)", fm.path, fm.start, seg->index);
    } else if (named && fm.start - seg->vaddr >= seg->present && seg->present < seg->filesz) {
      rep.state = RingReport::State::kAbsent;
      rep.reason = fmt::format(
          "cut off by truncation: the ring's bytes start at file offset {:#x} but the core file ends at {:#x}; "
          "systemd-coredump truncates cores over its size limit (COREDUMP_TRUNCATED)",
          seg->offset + (fm.start - seg->vaddr), core_.file_size());
    } else if (seg == nullptr || fm.start - seg->vaddr >= seg->present) {
      continue; /* an unnamed memfd without bytes: not ours to judge */
    } else {
      probe(rep, fm.start, extent, named);
      if (!named && rep.state != RingReport::State::kValid && rep.state != RingReport::State::kForeign &&
          rep.state != RingReport::State::kNotMade) {
        /* A memfd of another name: only a validated header makes it a ring. */
        if (has_ring_magic(core_.read_memory(fm.start, 4))) {
          a_.magic_rejected_total++;
          if (a_.magic_rejected.size() < kMaxMagicMisses) a_.magic_rejected.push_back({fm.start, rep.reason});
        }
        seen.insert(fm.start);
        continue;
      }
      if (!named) rep.reason = fmt::format("found in a memfd named {}", fm.path);
    }
    seen.insert(fm.start);
    rep.index = static_cast<std::uint32_t>(a_.rings.size());
    a_.rings.push_back(std::move(rep));
  }
  /* 2. A "CTLN" whose header validates, at the start of a mapping of
   * shared memory other than a memfd (e.g. /dev/zero for
   * MAP_SHARED|MAP_ANONYMOUS).  With an NT_FILE note a ring is shared
   * memory the note lists, and starts its mapping: a valid header anywhere
   * else (the heap, an allocator's page-aligned block) is a copy of a ring
   * the process made, whose events would be shown twice or stand in for a
   * ring the core lost.  So only the starts of the listed mappings are
   * looked at, and finding rings costs O(mappings), not O(core size).
   * Without NT_FILE, every dumped page is looked at: O(core size). */
  auto examine = [&](std::uint64_t a) {
    if (seen.count(a) || !has_ring_magic(core_.read_memory(a, 4))) return;
    seen.insert(a);
    if (a_.rings.size() >= kMaxRings) {
      skipped++;
      return;
    }
    RingReport rep;
    rep.found_by = FoundBy::kMagicScan;
    rep.address = a;
    rep.mapping_size = core_.mapped_extent(a);
    if (const FileMapping *fm = core_.file_for(a)) rep.mapping_name = fm->path;
    probe(rep, a, rep.mapping_size, false);
    if (rep.state == RingReport::State::kValid || rep.state == RingReport::State::kForeign ||
        rep.state == RingReport::State::kNotMade) {
      rep.index = static_cast<std::uint32_t>(a_.rings.size());
      a_.rings.push_back(std::move(rep));
    } else {
      a_.magic_rejected_total++;
      if (a_.magic_rejected.size() < kMaxMagicMisses) a_.magic_rejected.push_back({a, rep.reason});
    }
  };
  if (n.has_file_note) {
    /* A mapping starts on a page: a listed start that does not is crafted,
     * and taking it would let 4 dumped bytes (and ~30 bytes of note) make a
     * candidate, where the page scan needs a page per candidate. */
    for (const FileMapping &fm : n.files)
      if ((fm.start & 4095) == 0) examine(fm.start);
  } else {
    for (const Segment &s : core_.segments()) {
      if (s.present < 4) continue;
      std::uint64_t a = (s.vaddr + 4095) & ~std::uint64_t{4095};
      if (a < s.vaddr) continue; /* wrapped */
      for (; a - s.vaddr <= s.present - 4; a += 4096) {
        examine(a);
        if (a > UINT64_MAX - 4096) break;
      }
    }
  }
  if (skipped > 0)
    a_.warnings.push_back(fmt::format("{} more ring candidates (memfd mappings in NT_FILE, \"CTLN\" pages) were not "
                                      "examined: a core holds at most {} rings, and this one lists more",
                                      skipped, kMaxRings));
}

std::string sanitize_name(std::span<const std::uint8_t> b) {
  return printable_name({reinterpret_cast<const char *>(b.data()), b.size()});
}

std::uint32_t Analyzer::intern(std::string s) {
  if (s.empty()) return 0;
  auto [it, fresh] = string_at_.try_emplace(std::move(s), static_cast<std::uint32_t>(a_.strings.size()));
  if (fresh) a_.strings.push_back(it->first);
  return it->second;
}

/* The Location of `addr` for an event: one per distinct address, CRASH or
 * not (a CRASH event's address is its pc; others are return addresses,
 * symbolized one byte back) and mapping_changed. */
std::uint32_t Analyzer::location_index(std::uint64_t addr, bool crash, bool mapping_changed) {
  auto [it, fresh] = location_at_.try_emplace({addr, crash, mapping_changed},
                                              static_cast<std::uint32_t>(a_.locations.size()));
  if (fresh) {
    Location l = locate(addr);
    l.mapping_changed = mapping_changed;
    a_.locations.push_back(std::move(l));
    location_is_crash_.push_back(crash);
  }
  return it->second;
}

/* The AddressMapping of a pointer argument: describe() depends only on the
 * segment and the file mapping `addr` lies in, and whether it is dumped. */
std::uint32_t Analyzer::mapping_index(std::uint64_t addr) {
  const Segment *s = core_.segment_for(addr);
  const FileMapping *fm = core_.file_for(addr);
  const bool dumped = s != nullptr && addr - s->vaddr < s->present;
  auto [it, fresh] = mapping_at_.try_emplace({s, fm, dumped}, static_cast<std::uint32_t>(a_.mappings.size()));
  if (fresh) a_.mappings.push_back(describe(addr));
  return it->second;
}

/* Whether a slot's stack byte (non-zero) agrees with its kind, its inline
 * length and, for a STACK slot, its place in its chain (arg1: the walk's
 * index of its first frame); ring_format.h, "stacks" and "the stack
 * chain".  A chain (kStackNext on a STACK slot, arg1 > 0, a host whose
 * first part is continued) is version 5's. */
bool stack_byte_ok(std::uint32_t version, const RingEvent &e) {
  const std::uint32_t depth = f::stack_depth(e.stack), end = f::stack_end(e.stack);
  const bool next = (e.stack & f::kStackNext) != 0;
  const bool chain = version >= f::kStackChainVersion;
  if (depth > f::kMaxStackDepth || end > f::kStackBadFrame) return false;
  /* A part that another continues is full and does not end the walk. */
  const bool continued = end == f::kStackNone;
  if (continued && !(chain && depth == f::kMaxStackDepth)) return false;
  if (e.kind == f::kKindStack) {
    if (next != continued || e.inline_len != depth * 8) return false;
    if (!chain) return e.arg1 == 0;
    return e.arg1 % f::kMaxStackDepth == 0 && e.arg1 <= f::kMaxChainedStackDepth - depth;
  }
  if (next) return true;  /* the frames are in the STACK slot after it */
  return !continued && f::stack_inline_ok(e.kind) && e.inline_len == depth * 8;
}

/* An accepted slot as an Event, unnamed: names come in name_events(), once
 * every ring's name table is known; threads in name_threads(). */
Event Analyzer::make_event(std::uint32_t ring_index, const RingHeaderInfo &ring, const RingEvent &e,
                           Origin source) {
  Event ev;
  ev.ring = ring_index;
  ev.lane = e.lane;
  ev.seq = e.seq;
  ev.tid = e.tid;
  ev.kind = e.kind;
  ev.id = e.id;
  ev.arg0 = e.arg0;
  ev.arg1 = e.arg1;
  ev.timestamp = e.timestamp;
  /* realtime_ns and age_ns: place_in_time(), once the ring is in a_.rings. */
  ev.return_address = e.return_address;
  ev.inline_len = static_cast<std::uint8_t>(std::min<std::size_t>(e.inline_len, e.inline_data.size()));
  const auto now_gen = static_cast<std::uint32_t>(ring.mmap_generation);
  const bool gen_changed = e.mmap_generation != 0 && now_gen != 0 && e.mmap_generation != now_gen;
  if (ring.version >= 4 && e.stack != 0) {
    /* The stack byte (ring_format.h, "stacks"): untrusted, so checked
     * against the slot before its frames are believed. */
    const std::uint32_t depth = f::stack_depth(e.stack);
    const bool next = (e.stack & f::kStackNext) != 0;
    if (!stack_byte_ok(ring.version, e)) {
      ev.stack = StackState::kMalformed;
    } else if (next && e.kind != f::kKindStack) {
      ev.stack = StackState::kLost; /* until attach_stacks() finds its slot */
    } else {
      /* A part that the next STACK slot continues is cut until
       * attach_stacks() finds that slot. */
      ev.stack = next ? StackState::kCut : static_cast<StackState>(f::stack_end(e.stack));
      ev.stack_depth = static_cast<std::uint8_t>(depth);
      ev.frames_at = static_cast<std::uint32_t>(a_.frames.size());
      for (std::uint32_t i = 0; i < depth; ++i) {
        std::uint64_t frame;
        std::memcpy(&frame, e.inline_data.data() + i * 8, 8);
        a_.frames.push_back(location_index(frame, false, gen_changed));
      }
      ev.inline_len = 0; /* the bytes were the frames */
    }
  }
  if (ev.inline_len > 0) {
    ev.inline_at = a_.inline_data.size();
    a_.inline_data.insert(a_.inline_data.end(), e.inline_data.begin(), e.inline_data.begin() + ev.inline_len);
  }
  ev.source = source;
  ev.tid_in_core = core_tids_.count(e.tid) != 0;
  switch (e.kind) {
    case f::kKindUserPtr:
    case f::kKindMalloc:
    case f::kKindFree:
    case f::kKindCalloc:
    case f::kKindRealloc:
      ev.pointer = mapping_index(e.arg0);
      break;
    case f::kKindCrash: {
      CrashSlot c;
      c.signo = static_cast<std::int32_t>(e.id);
      c.signal_name = signal_name(c.signo);
      c.fault_address = e.arg0;
      c.sp = e.arg1;
      if (e.inline_len >= sizeof(f::CrashInfo)) {
        f::CrashInfo ci;
        std::memcpy(&ci, e.inline_data.data(), sizeof ci);
        c.si_code = ci.code;
        c.si_errno = ci.error;
        c.sender_pid = ci.sender_pid;
        c.sender_uid = ci.sender_uid;
        c.handler_flags = ci.handler_flags;
        c.chained = (ci.handler_flags & f::kCrashChained) != 0;
        c.repeated = (ci.handler_flags & f::kCrashRepeated) != 0;
        c.handed = (ci.handler_flags & f::kCrashHanded) != 0;
        if (c.handed) c.handed_outcome = HandedOutcome::kUnknown;
      }
      c.si_code_name = si_code_name(c.signo, c.si_code);
      ev.crash = static_cast<std::uint32_t>(a_.crash_slots.size());
      a_.crash_slots.push_back(std::move(c));
      break;
    }
    default: break;
  }
  if (e.return_address != 0 || e.kind == f::kKindCrash) {
    /* 0 means "not known yet" (the writer's helper thread sets the
     * generation on its first pass): only two known, different generations
     * say the set of loaded objects changed after the event. */
    ev.location = location_index(e.return_address, e.kind == f::kKindCrash, gen_changed);
  }
  return ev;
}

/* Kind names, and display names: a user id's from --tlmap (which also
 * enters Analysis::names, keeping the rings' argument names it does not
 * give) or the rings' name tables, else "id=0x...". */
void Analyzer::name_events() {
  std::map<std::uint16_t, std::uint32_t> kinds;  /* kind -> its name in strings */
  struct IdName {
    bool named = false;
    NameFrom from = NameFrom::kNone;
    std::uint32_t name = 0;
  };
  std::unordered_map<std::uint32_t, IdName> ids;  /* user id -> its name */
  for (auto &ev : a_.events) {
    auto [k, fresh] = kinds.try_emplace(ev.kind, 0);
    if (fresh) {
      const char *kn = kind_name(ev.kind);
      k->second = intern(kn != nullptr ? std::string(kn) : fmt::format("KIND_{}", ev.kind));
    }
    ev.kind_name = ev.name = k->second;
    if (ev.kind != f::kKindUser && ev.kind != f::kKindUserPtr && ev.kind != f::kKindSpanBegin &&
        (ev.kind != f::kKindSpanEnd || ev.id == 0))
      continue;
    auto [n, first] = ids.try_emplace(ev.id);
    if (first) {
      if (const TlMap::Entry *t = opts_.tlmap != nullptr ? opts_.tlmap->entry(ev.id) : nullptr) {
        /* The tlmap's name wins; an argument it does not name keeps the
         * core's name for it. */
        EventName named{t->name, t->arg0, t->arg1, NameFrom::kTlmap};
        if (auto core = a_.names.find(ev.id); core != a_.names.end()) {
          if (named.arg0.empty()) named.arg0 = core->second.arg0;
          if (named.arg1.empty()) named.arg1 = core->second.arg1;
        }
        a_.names.insert_or_assign(ev.id, std::move(named));
      }
      if (auto it = a_.names.find(ev.id); it != a_.names.end())
        n->second = {true, it->second.from, intern(it->second.name)};
      else
        n->second.name = intern(fmt::format("id={:#x}", ev.id));
    }
    ev.named = n->second.named;
    ev.name_from = n->second.from;
    ev.name = n->second.name;
  }
}

bool Analyzer::handle_sidecar() {
  if (!opts_.sidecar_path) return true;
  a_.sidecar_path = opts_.sidecar_path;
  if (opts_.core_only) {
    a_.sidecar_status = SidecarStatus::kIgnored;
    a_.sidecar_detail = "--core-only: the sidecar was not read";
    return true;
  }
  const std::string &path = *opts_.sidecar_path;
  /* O_NONBLOCK: a FIFO put at the sidecar's path must not block us before
   * the regular-file check; it does not change reads of a regular file. */
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  struct stat st {};
  std::vector<std::uint8_t> bytes;
  std::string err;
  if (fd < 0) err = fmt::format("cannot open: {}", std::strerror(errno));
  else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) err = "not a regular file";
  else if (static_cast<std::uint64_t>(st.st_size) > f::kMaxRegionSize) err = "larger than any ring (4 GiB)";
  else {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
      ssize_t r = pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    bytes.resize(got);
  }
  if (fd >= 0) close(fd);
  if (!err.empty()) {
    a_.sidecar_status = SidecarStatus::kUnusable;
    a_.sidecar_detail = err;
    a_.warnings.push_back(fmt::format("sidecar {}: {}, ignoring it", path, err));
    return true;
  }
  auto dec = decode_ring(bytes, f::kMaxRegionSize);
  if (!dec) {
    a_.sidecar_status = SidecarStatus::kUnusable;
    a_.sidecar_detail = dec.error().message;
    a_.warnings.push_back(fmt::format("sidecar {}: {}, ignoring it", path, dec.error().message));
    return true;
  }
  const auto &sh = dec->header;
  const auto &p = a_.process;
  auto refuse = [&](std::string why) {
    a_.sidecar_status = SidecarStatus::kRefused;
    a_.sidecar_detail = why;
    a_.status = Status::kSidecarMismatch;
    a_.reason = fmt::format("sidecar identity mismatch: {} ({}); rerun with --core-only to ignore it", why, path);
    return false;
  };
  /* The facts the core itself attests: the pid (NT_PRPSINFO) and the
   * executable build-id (its dumped ELF header).  inode/device are advisory. */
  if (p.pid && sh.pid != *p.pid)
    return refuse(fmt::format("the sidecar was written by pid {}, the core is of pid {}", sh.pid, *p.pid));
  if (!p.build_id.empty() && !sh.build_id.empty() && sh.build_id != p.build_id)
    return refuse(fmt::format("the sidecar's build-id {} differs from the core's executable {}",
                              hex_bytes(sh.build_id), hex_bytes(p.build_id)));
  const bool attested = (p.pid && sh.pid == *p.pid) || (!p.build_id.empty() && sh.build_id == p.build_id);
  if (!attested) return refuse("the core attests neither a pid nor a build-id to check the sidecar against");
  if (sh.sidecar_ino != 0 && (sh.sidecar_ino != st.st_ino || sh.sidecar_dev != st.st_dev))
    a_.warnings.push_back(fmt::format("sidecar {}: inode/device {}/{} differ from the ring's record {}/{} "
                                      "(advisory only: copies and some file systems change them)",
                                      path, st.st_ino, st.st_dev, sh.sidecar_ino, sh.sidecar_dev));
  RingReport *target = nullptr;
  bool any_valid = false;
  for (auto &r : a_.rings) {
    if (r.state != RingReport::State::kValid) continue;
    any_valid = true;
    if (r.ring->header.immutable == sh.immutable) target = &r;
  }
  if (any_valid && target == nullptr) {
    std::string starts;
    for (auto &r : a_.rings)
      if (r.state == RingReport::State::kValid)
        starts += fmt::format(" {}", r.ring->header.process_start_ticks);
    return refuse(fmt::format("the sidecar's ring header (process start {} ticks) matches no ring in the core "
                              "(start{})", sh.process_start_ticks, starts));
  }
  if (target != nullptr) {
    target->start_time = {Check::kMatch, fmt::format("ring and sidecar agree: process start {} ticks",
                                                     sh.process_start_ticks)};
    /* The target ring's events: a_.events holds each ring's, by lane then
     * seq, one ring after the other (probe()). */
    const auto by_ring = [](const Event &x, std::uint32_t ring) { return x.ring < ring; };
    const auto lo = std::lower_bound(a_.events.begin(), a_.events.end(), target->index, by_ring);
    const auto hi = std::find_if(lo, a_.events.end(), [&](const Event &x) { return x.ring != target->index; });
    const auto in_core = [&](const RingEvent &e) -> const Event * {
      const auto it = std::lower_bound(lo, hi, std::make_pair(e.lane, e.seq), [](const Event &x, const auto &k) {
        return std::make_pair(x.lane, x.seq) < k;
      });
      return it != hi && it->lane == e.lane && it->seq == e.seq ? &*it : nullptr;
    };
    std::uint64_t added = 0, conflicts = 0;
    std::vector<const RingEvent *> extra;
    for (const auto &e : dec->events) {
      const Event *c = in_core(e);
      if (c == nullptr) {
        extra.push_back(&e);
        added++;
      } else if (c->tid != e.tid || c->kind != e.kind || c->id != e.id || c->arg0 != e.arg0 || c->arg1 != e.arg1 ||
                 c->timestamp != e.timestamp) {
        conflicts++;
      }
    }
    a_.events.reserve(a_.events.size() + extra.size());
    for (const RingEvent *e : extra)
      a_.events.push_back(make_event(target->index, target->ring->header, *e, Origin::kSidecar));
    a_.source = TimelineSource::kCoreAndSidecar;
    a_.sidecar_status = SidecarStatus::kMerged;
    a_.sidecar_detail = fmt::format("{} events recovered from the sidecar that the core's ring no longer held",
                                    added);
    if (conflicts > 0)
      a_.warnings.push_back(fmt::format("sidecar {}: {} events differ from the core's at the same lane and "
                                        "sequence; the core's were kept", path, conflicts));
    return true;
  }
  /* No valid ring in the core: degraded mode, said loudly. */
  RingReport rep;
  rep.index = static_cast<std::uint32_t>(a_.rings.size());
  rep.found_by = FoundBy::kSidecar;
  rep.mapping_name = path;
  rep.mapping_size = bytes.size();
  rep.state = RingReport::State::kValid;
  check_identity(rep, dec->header);
  /* Its events are the timeline's, as a core ring's are (probe()). */
  a_.events.reserve(a_.events.size() + dec->events.size());
  for (const auto &e : dec->events) a_.events.push_back(make_event(rep.index, dec->header, e, Origin::kSidecar));
  dec->events = {};
  rep.ring = std::move(*dec);
  rep.start_time = {Check::kUnchecked, "no ring in the core to compare the sidecar's start time with"};
  a_.rings.push_back(std::move(rep));
  a_.source = TimelineSource::kDegradedSidecar;
  a_.sidecar_status = SidecarStatus::kDegraded;
  a_.sidecar_detail = "the core holds no ring; the events come from the sidecar, an older copy";
  a_.warnings.push_back(fmt::format("DEGRADED: the timeline comes from the sidecar {}, not the core; it is as "
                                    "old as its last sync and the newest events may be missing", path));
  return true;
}

/* Merge order: within a lane, seq order is exact; across lanes and rings,
 * by slot timestamp.  A timestamp of 0 (none) or one earlier than its lane
 * predecessor's inherits the predecessor's, so the lane order holds.  The
 * events are moved into that order in place, following the permutation's
 * cycles: no second vector of events. */
void Analyzer::sort_events() {
  auto &ev = a_.events;
  const std::size_t n = ev.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  const auto lane_order = [&](std::size_t x, std::size_t y) {
    return std::tie(ev[x].ring, ev[x].lane, ev[x].seq) < std::tie(ev[y].ring, ev[y].lane, ev[y].seq);
  };
  /* Each ring's events are in lane order already, unless a sidecar added some. */
  if (!std::is_sorted(order.begin(), order.end(), lane_order)) std::sort(order.begin(), order.end(), lane_order);
  std::vector<std::uint64_t> key(n);  /* by event index */
  for (std::size_t k = 0; k < n; ++k) {
    const Event &e = ev[order[k]];
    std::uint64_t t = e.timestamp;
    if (k > 0) {
      const Event &p = ev[order[k - 1]];
      if (p.ring == e.ring && p.lane == e.lane) t = std::max(t, key[order[k - 1]]);
    }
    key[order[k]] = t;
  }
  /* (key, lane, ring, seq) is a total order: no two events share (ring,
   * lane, seq). */
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::tie(key[x], ev[x].lane, ev[x].ring, ev[x].seq) < std::tie(key[y], ev[y].lane, ev[y].ring, ev[y].seq);
  });
  key = {};
  /* Position i takes the event at order[i]; a position is done once
   * order[i] == i. */
  for (std::size_t i = 0; i < n; ++i) {
    if (order[i] == i) continue;
    Event held = std::move(ev[i]);
    std::size_t j = i;
    for (;;) {
      const std::size_t from = order[j];
      order[j] = j;
      if (from == i) {
        ev[j] = std::move(held);
        break;
      }
      ev[j] = std::move(ev[from]);
      j = from;
    }
  }
}

/* Thread names: THREAD_NAME events (the latest before each event wins),
 * else the lane owner's name. */
void Analyzer::name_threads() {
  std::map<std::uint32_t, std::uint32_t> owner, named;  /* tid -> name in strings */
  for (const auto &r : a_.rings)
    if (r.ring)
      for (const auto &l : r.ring->lanes)
        if (l.owner_tid != 0 && !l.owner_name.empty())
          owner[l.owner_tid] = intern(sanitize_name({reinterpret_cast<const std::uint8_t *>(l.owner_name.data()),
                                                     l.owner_name.size()}));
  for (auto &e : a_.events) {
    if (e.kind == f::kKindThreadName) named[e.tid] = intern(sanitize_name(a_.inline_bytes_of(e)));
    if (auto it = named.find(e.tid); it != named.end()) e.thread = it->second;
    else if (auto o = owner.find(e.tid); o != owner.end()) e.thread = o->second;
  }
}

const DecodedRing *ring_of(const Analysis &a, std::uint32_t index);

/* A kKindStack slot holds frames of an earlier slot of its lane, its
 * host (arg0 names the host's seq, id its kind): a chain of them (ring
 * format 5) holds a walk of more than 8 frames, 8 a slot, each part's arg1
 * the walk's index of its first frame and kStackNext on every part but the
 * last (ring_format.h, "the stack chain").  Give each host the frames of
 * its chain and drop the parts from the timeline.  A chain is the parts of
 * one (ring, lane, host seq) that follow each other in seq order, each
 * with arg1 8 more than the last, the same tid and host kind, while the
 * last says another follows; a chain that stops before a part without
 * kStackNext is cut (the ring wrapped over its end, or the process died
 * writing it): the host keeps the frames that are there, its stack "cut".
 * Parts whose host is gone (overwritten) stay: the first of each chain,
 * as a STACK event with the chain's frames (its arg1 says where in the
 * walk they begin), the rest dropped.  A host whose first part is
 * malformed is malformed.  Linear in the STACK slots, whatever they say. */
void Analyzer::attach_stacks() {
  auto &ev = a_.events;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, std::size_t> waiting;
  std::vector<std::size_t> parts;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == f::kKindStack && ev[i].stack != StackState::kNone)
      parts.push_back(i);
    else if (ev[i].stack == StackState::kLost)
      waiting.emplace(std::make_tuple(ev[i].ring, ev[i].lane, ev[i].seq), i);
  }
  if (parts.empty()) return;
  /* The parts by host (ring, lane, host seq), each host's in seq order. */
  const auto host_key = [&](std::size_t i) { return std::make_tuple(ev[i].ring, ev[i].lane, ev[i].arg0); };
  std::sort(parts.begin(), parts.end(), [&](std::size_t x, std::size_t y) {
    return std::make_tuple(ev[x].ring, ev[x].lane, ev[x].arg0, ev[x].seq) <
           std::make_tuple(ev[y].ring, ev[y].lane, ev[y].arg0, ev[y].seq);
  });
  std::vector<bool> drop(ev.size(), false);
  for (std::size_t from = 0, to_end = 0; from < parts.size(); from = to_end) {
    to_end = from + 1;
    while (to_end < parts.size() && host_key(parts[to_end]) == host_key(parts[from])) ++to_end;
    const std::span<const std::size_t> g(parts.data() + from, to_end - from);
    const auto host_it = waiting.find(host_key(g[0]));
    Event *host = host_it == waiting.end() ? nullptr : &ev[host_it->second];
    for (std::size_t i = 0; i < g.size();) {
      const Event &head = ev[g[i]];
      std::size_t j = i;
      while (ev[g[j]].stack == StackState::kCut && j + 1 < g.size() && ev[g[j + 1]].stack != StackState::kMalformed &&
             ev[g[j + 1]].arg1 == ev[g[j]].arg1 + f::kMaxStackDepth && ev[g[j + 1]].tid == head.tid &&
             ev[g[j + 1]].id == head.id)
        ++j;
      const bool for_host = host != nullptr && head.arg1 == 0 && head.id == host->kind && head.tid == host->tid &&
                            head.seq > host->seq;
      if (head.stack == StackState::kMalformed) {
        if (for_host) host->stack = StackState::kMalformed, host = nullptr;
        ++i;
        continue;
      }
      Event &to = for_host ? *host : ev[g[i]];
      std::uint32_t depth = 0;
      const std::size_t frames_at = j == i ? head.frames_at : a_.frames.size();
      for (std::size_t k = i; k <= j; ++k) {
        const Event &p = ev[g[k]];
        if (j != i)
          for (std::uint32_t n = 0; n < p.stack_depth; ++n) {
            const std::uint32_t location = a_.frames[p.frames_at + n];
            a_.frames.push_back(location);
          }
        depth += p.stack_depth;
        if (k != i || for_host) drop[g[k]] = true;
      }
      to.stack = ev[g[j]].stack;
      to.stack_depth = static_cast<std::uint8_t>(depth);
      to.frames_at = static_cast<std::uint32_t>(frames_at);
      if (for_host) host = nullptr;
      i = j + 1;
    }
  }
  std::size_t out = 0;
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (!drop[i]) ev[out++] = std::move(ev[i]);
  ev.resize(out);
}

void Analyzer::build_events() {
  attach_stacks();
  name_events();
  sort_events();
  name_threads();
  string_at_ = {};
  judge_handed();
  /* A CRASH event that may be the crash (not one recovered from). */
  for (const auto &e : a_.events)
    if (e.kind == f::kKindCrash && a_.crash && a_.crash_of(e)->handed_outcome != HandedOutcome::kRecovered)
      a_.crash->ring_slot = true;
  place_in_time();
  build_spans();
  tie_fds(a_.events);
  summarize_threads();
  build_windows();
}

/* Each source's window (SourceWindow): what survives, what was lost, and
 * since when nothing was. */
void Analyzer::build_windows() {
  bool any = false;
  for (const auto &r : a_.rings) any |= r.ring && r.state == RingReport::State::kValid;
  if (!any) return;
  static constexpr const char *kNames[f::kSourceCount] = {"user", "alloc", "io"};
  struct Acc {
    std::uint64_t oldest = UINT64_MAX;  /* ticks */
    std::uint64_t boundary = 0;         /* newest oldest-surviving of a lossy lane */
    bool boundary_untimed = false;
  };
  Acc acc[f::kSourceCount];
  a_.windows.resize(f::kSourceCount);
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
    a_.windows[c].source = c;
    a_.windows[c].name = kNames[c];
    a_.windows[c].losses_by_source = true;
  }
  for (const auto &e : a_.events) {
    /* A version-3 lane's source (its LANE_CLAIM is its own), else the kind's. */
    std::uint32_t c = f::source_of_kind(e.kind);
    if (const DecodedRing *d = ring_of(a_, e.ring); d != nullptr && e.lane < d->lanes.size() && d->lanes[e.lane].source)
      c = std::min(*d->lanes[e.lane].source, f::kSourceCount - 1);
    a_.windows[c].events++;
    if (e.timestamp != 0 && e.timestamp < acc[c].oldest) acc[c].oldest = e.timestamp;
  }
  for (const auto &r : a_.rings) {
    if (!r.ring || r.state != RingReport::State::kValid) continue;
    const DecodedRing &d = *r.ring;
    const bool by_source = !d.header.sources.empty();
    static constexpr std::uint32_t kBits[f::kSourceCount] = {TL_SOURCE_USER, TL_SOURCE_ALLOC, TL_SOURCE_IO};
    for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
      SourceWindow &w = a_.windows[c];
      w.losses_by_source &= by_source;
      w.dropped += by_source ? d.header.sources[c].dropped : d.header.dropped;
      if (by_source) w.recorder_loaded = c == f::kSourceUser || d.header.sources[c].present;
      if (d.header.enabled_sources != 0) w.enabled = (d.header.enabled_sources & kBits[c]) != 0;
    }
    for (const auto &l : d.lanes)
      for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
        if (l.source && *l.source != c) continue;
        SourceWindow &w = a_.windows[c];
        w.overwritten += l.overwritten;
        w.torn += l.torn + l.invalid + l.missing;
        if (l.overwritten == 0) continue;
        if (l.first_timestamp == 0) acc[c].boundary_untimed = true;
        else if (l.first_timestamp > acc[c].boundary) acc[c].boundary = l.first_timestamp;
      }
  }
  const DecodedRing *ref_ring = a_.time.reference_ring ? ring_of(a_, *a_.time.reference_ring) : nullptr;
  for (std::uint32_t c = 0; c < f::kSourceCount; ++c) {
    SourceWindow &w = a_.windows[c];
    w.lost = w.overwritten > 0 || w.dropped > 0;
    if (ref_ring != nullptr && acc[c].oldest != UINT64_MAX)
      w.oldest_age_ns = ticks_delta_ns(*ref_ring, acc[c].oldest, a_.time.reference_ticks);
    if (ref_ring == nullptr || w.dropped > 0 || acc[c].boundary_untimed) continue;
    const std::uint64_t since = w.overwritten == 0 ? ref_ring->header.anchor_ticks : acc[c].boundary;
    w.complete_since_init = w.overwritten == 0;
    /* An age is negative before the reference; the window is its length.
     * A lane of another thread may have wrapped after the reference (the
     * CRASH) as well: then nothing of the source is complete at it (0). */
    if (since != 0)
      if (const auto age = ticks_delta_ns(*ref_ring, since, a_.time.reference_ticks))
        w.complete_for_ns = std::max<std::int64_t>(0, -*age);
  }
}

/* The names the program registered (tl_name): each valid ring's table, the
 * newest entry per id winning; --tlmap entries override them per event
 * (make_event). */
void Analyzer::collect_names() {
  for (const auto &r : a_.rings) {
    if (r.state != RingReport::State::kValid || !r.ring) continue;
    for (const auto &n : r.ring->names)
      a_.names.insert_or_assign(n.id, EventName{n.name, n.arg0, n.arg1, NameFrom::kCore});
  }
}

const DecodedRing *ring_of(const Analysis &a, std::uint32_t index) {
  return index < a.rings.size() && a.rings[index].ring ? &*a.rings[index].ring : nullptr;
}

/* A live snapshot's time on the slot clock of its first valid ring: the
 * ticks the snapshot read itself when the ring's clock is the TSC it
 * read (x86-64) or CNTVCT (AArch64), else its CLOCK_MONOTONIC placed with
 * the ring's init anchor and rate.  False when neither can be told. */
bool Analyzer::snapshot_reference() {
  const LiveSnapshotNote &n = *a_.snapshot;
  for (const auto &r : a_.rings) {
    if (r.state != RingReport::State::kValid || !r.ring) continue;
    const DecodedRing &d = *r.ring;
#if defined(__x86_64__)
    const bool same_clock = (d.header.compat_flags & f::kCompatClockTsc) != 0 && core_.machine() == EM_X86_64;
#elif defined(__aarch64__)
    const bool same_clock = (d.header.compat_flags & f::kCompatClockCntvct) != 0 && core_.machine() == EM_AARCH64;
#else
    const bool same_clock = false;
#endif
    std::uint64_t ticks = 0;
    if (same_clock && n.ticks > d.header.anchor_ticks) {
      ticks = n.ticks;
    } else if (d.ticks_per_second > 0 && n.monotonic_ns > 0 &&
               static_cast<std::uint64_t>(n.monotonic_ns) > d.header.anchor_monotonic_ns) {
      const long double dt = static_cast<long double>(static_cast<std::uint64_t>(n.monotonic_ns) -
                                                      d.header.anchor_monotonic_ns);
      /* The note and the header are the core's word: a time past what 64
       * bits of ticks can hold cannot be told (fuzz_recipe found one). */
      const long double at = static_cast<long double>(d.header.anchor_ticks) + dt * d.ticks_per_second / 1e9L;
      if (at < 1.8e19L) ticks = static_cast<std::uint64_t>(at);
    }
    if (ticks == 0) return false;
    a_.time.reference_ticks = ticks;
    a_.time.reference_ring = r.index;
    return true;
  }
  return false;
}

/* Ages: relative to the CRASH event (the crashing thread's, else the last
 * one), else to the newest event with a timestamp.  The slot clock is one
 * machine-wide counter, so an event's ticks minus the reference's, at its
 * ring's rate, is its age. */
void Analyzer::place_in_time() {
  auto &t = a_.time;
  const std::uint32_t crash_tid = a_.crash ? a_.crash->tid : 0;
  for (auto &e : a_.events)
    if (const DecodedRing *er = ring_of(a_, e.ring)) e.realtime_ns = ticks_to_realtime_ns(*er, e.timestamp);
  for (std::size_t i = 0; i < a_.events.size(); ++i) {
    const auto &e = a_.events[i];
    if (e.kind != f::kKindCrash || e.timestamp == 0) continue;
    if (t.reference == TimeBase::Reference::kCrash && a_.events[*t.reference_event].tid == crash_tid) continue;
    t.reference = TimeBase::Reference::kCrash;
    t.reference_event = i;
  }
  if (a_.snapshot && snapshot_reference()) {
    t.reference = TimeBase::Reference::kSnapshot;
    t.reference_event.reset();
  }
  if (t.reference == TimeBase::Reference::kNone)
    for (std::size_t i = a_.events.size(); i-- > 0;)
      if (a_.events[i].timestamp != 0) {
        t.reference = TimeBase::Reference::kNewestEvent;
        t.reference_event = i;
        break;
      }
  if (t.reference != TimeBase::Reference::kSnapshot) {
    if (!t.reference_event) {
      if (!a_.events.empty()) t.note = "no event has a timestamp";
      return;
    }
    const Event &ref = a_.events[*t.reference_event];
    t.reference_ticks = ref.timestamp;
    t.reference_ring = ref.ring;
  }
  const DecodedRing *rr = ring_of(a_, *t.reference_ring);
  if (rr == nullptr) return;
  t.rate_from = rr->clock.rate_from;
  t.ticks_per_second = rr->clock.ticks_per_second;
  t.rate_error = rr->clock.rate_error;
  t.rate_offers = rr->clock.offers;
  t.note = rr->clock.note;
  std::uint64_t untimed = 0;
  for (auto &e : a_.events) {
    const DecodedRing *er = ring_of(a_, e.ring);
    if (er != nullptr) e.age_ns = ticks_delta_ns(*er, e.timestamp, t.reference_ticks);
    if (e.timestamp == 0) untimed++;
    if (e.realtime_ns) t.wall_clock = true;
  }
  if (untimed > 0)
    a_.warnings.push_back(fmt::format("{} events have no timestamp (the writer had no slot clock): they keep their "
                                      "place in their thread's order but cannot be placed in time", untimed));
}

/* What a ring lost that could hold a span's end, indexed once per ring so
 * that judging N open spans costs O(N log lanes), not O(N x lanes). */
struct LossIndex {
  /* (timestamp of the lane's oldest surviving event, or UINT64_MAX when
   * it has none or no timestamp; events overwritten; lane), for lanes
   * that lost events, by timestamp; suffix[i] sums overwritten from i on. */
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint32_t>> lanes;
  std::vector<std::uint64_t> suffix;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> by_lane;  /* lane -> (timestamp, overwritten) */
  std::set<std::pair<std::uint32_t, std::uint64_t>> rejected;  /* (lane, seq) */
};

LossIndex index_losses(const DecodedRing &r) {
  LossIndex x;
  for (const auto &l : r.lanes) {
    if (l.overwritten == 0) continue;
    const std::uint64_t ts = l.committed > 0 && l.first_timestamp != 0 ? l.first_timestamp : UINT64_MAX;
    x.lanes.emplace_back(ts, l.overwritten, l.index);
    x.by_lane.emplace(l.index, std::make_pair(ts, l.overwritten));
  }
  std::sort(x.lanes.begin(), x.lanes.end());
  x.suffix.assign(x.lanes.size() + 1, 0);
  for (std::size_t i = x.lanes.size(); i-- > 0;) x.suffix[i] = x.suffix[i + 1] + std::get<1>(x.lanes[i]);
  for (const auto &j : r.rejected) x.rejected.emplace(j.lane, j.seq);
  return x;
}

/* Why an end of `sp` (open: begun, no end found) may have been lost, or ""
 * when every event that could be its end is in the ring. */
std::string end_may_be_lost(const DecodedRing &r, const LossIndex &x, const Event &b) {
  std::vector<std::string> why;
  if (r.header.dropped > 0)
    why.push_back(fmt::format("{} events were dropped (no lane could be had)", r.header.dropped));
  /* A lane's overwritten events precede its oldest surviving one; they can
   * hold this span's end only if that oldest one is later than the begin.
   * The begin's own lane lost only events before the begin. */
  const auto first = std::upper_bound(x.lanes.begin(), x.lanes.end(),
                                      std::make_tuple(b.timestamp, UINT64_MAX, UINT32_MAX));
  const auto i = static_cast<std::size_t>(first - x.lanes.begin());
  std::uint64_t lanes = x.lanes.size() - i, lost = x.suffix[i];
  if (auto own = x.by_lane.find(b.lane); own != x.by_lane.end() && own->second.first > b.timestamp) {
    lanes--;
    lost -= own->second.second;
  }
  if (lanes > 0)
    why.push_back(fmt::format("{} events of {} other lanes were overwritten after it began", lost, lanes));
  if (r.torn + r.invalid > 0) why.push_back(fmt::format("{} slots are torn or invalid", r.torn + r.invalid));
  if (r.truncated) why.push_back("the ring is cut off by truncation");
  std::string s;
  for (const auto &w : why) s += (s.empty() ? "" : "; ") + w;
  return s;
}

void Analyzer::build_spans() {
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t> by_token;  /* (ring, token) -> span */
  std::map<std::uint32_t, std::vector<std::uint32_t>> open_in;                /* tid -> its open spans */
  std::map<std::uint32_t, LossIndex> loss_index;                              /* ring -> its losses */
  std::vector<std::uint32_t> in_kept_range;  /* begin-less ends whose token names a kept sequence */
  const auto losses = [&](std::uint32_t ring) -> const LossIndex & {
    auto it = loss_index.find(ring);
    if (it == loss_index.end()) it = loss_index.emplace(ring, index_losses(*ring_of(a_, ring))).first;
    return it->second;
  };
  const auto delta = [&](std::uint32_t ring, std::uint64_t later, std::uint64_t earlier) {
    const DecodedRing *r = ring_of(a_, ring);
    return r != nullptr ? ticks_delta_ns(*r, later, earlier) : std::nullopt;
  };
  for (std::size_t i = 0; i < a_.events.size(); ++i) {
    Event &e = a_.events[i];
    if (e.kind == f::kKindSpanBegin) {
      Span sp;
      sp.ring = e.ring;
      sp.token = f::span_token(e.lane, e.seq);
      sp.id = e.id;
      sp.arg = e.arg0;
      sp.begin = i;
      sp.tid = e.tid;
      auto &stack = open_in[e.tid];
      if (!stack.empty()) sp.parent = stack.back();
      sp.depth = static_cast<std::uint32_t>(stack.size());
      const auto index = static_cast<std::uint32_t>(a_.spans.size());
      if (!by_token.emplace(std::make_pair(e.ring, sp.token), index).second) continue; /* cannot happen */
      stack.push_back(index);
      e.span = index;
      a_.spans.push_back(std::move(sp));
      continue;
    }
    if (e.kind != f::kKindSpanEnd) continue;
    const std::uint64_t token = e.arg0;
    auto it = by_token.find({e.ring, token});
    if (it != by_token.end()) {
      Span &sp = a_.spans[it->second];
      e.span = it->second;
      if (sp.end) {
        sp.extra_ends++;
        sp.note = fmt::format("ended {} times", sp.extra_ends + 1);
        continue;
      }
      if (sp.state == Span::State::kBeginLost) continue;
      sp.end = i;
      sp.end_tid = e.tid;
      sp.state = Span::State::kClosed;
      sp.duration_ns = delta(e.ring, e.timestamp, a_.events[*sp.begin].timestamp);
      if (!e.named && sp.id != 0) {
        e.name = a_.events[*sp.begin].name;
        e.named = a_.events[*sp.begin].named;
        e.name_from = a_.events[*sp.begin].name_from;
      }
      auto &stack = open_in[sp.tid];
      stack.erase(std::remove(stack.begin(), stack.end(), it->second), stack.end());
      continue;
    }
    /* An end whose begin is not in the timeline: lost (overwritten, torn,
     * missing), or never there (no_begin: the token names no slot, one the
     * lane never reached, or one that holds another event). */
    Span sp;
    sp.state = Span::State::kBeginLost;
    sp.ring = e.ring;
    sp.token = token;
    sp.id = e.id;
    sp.id_known = e.id != 0;
    sp.end = i;
    sp.tid = sp.end_tid = e.tid;
    const DecodedRing *r = ring_of(a_, e.ring);
    const std::uint32_t lane = f::span_token_lane(token);
    const std::uint64_t seq = f::span_token_seq(token);
    if (r == nullptr || lane >= r->lanes.size() || seq == 0) {
      sp.state = Span::State::kNoBegin;
      sp.note = fmt::format("its token {:#x} names no slot of this ring", token);
    } else {
      const LaneSummary &l = r->lanes[lane];
      const bool torn = losses(e.ring).rejected.count({lane, seq}) != 0;
      if (torn) {
        sp.note = fmt::format("its begin (lane {} seq {}) is torn", lane, seq);
      } else if (seq <= l.overwritten || (l.committed == 0 && seq <= l.write_index)) {
        sp.note = fmt::format("its begin (lane {} seq {}) was overwritten", lane, seq);
      } else if (seq > l.last_seq && seq > l.write_index) {
        sp.state = Span::State::kNoBegin;
        sp.note = fmt::format("its token names lane {} seq {}, which the lane never reached", lane, seq);
      } else {
        sp.note = fmt::format("its begin (lane {} seq {}) is not in the ring", lane, seq);
        /* Whether that slot holds another event is told after this pass. */
        if (seq >= l.first_seq && seq <= l.last_seq) in_kept_range.push_back(static_cast<std::uint32_t>(a_.spans.size()));
      }
    }
    if (sp.state == Span::State::kBeginLost && e.arg1 != 0) sp.duration_ns = delta(e.ring, e.timestamp, e.arg1);
    const auto index = static_cast<std::uint32_t>(a_.spans.size());
    by_token.emplace(std::make_pair(e.ring, token), index);
    e.span = index;
    a_.spans.push_back(std::move(sp));
  }
  /* An end whose token names a slot in its lane's kept range: the event
   * that slot holds, when it is in the timeline and is no span's begin,
   * says the token names no begin (nothing was lost there).  One pass over
   * the events, and only when there are such ends. */
  if (!in_kept_range.empty()) {
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, std::uint32_t> wanted;  /* slot -> span */
    for (const std::uint32_t s : in_kept_range) {
      const Span &sp = a_.spans[s];
      wanted.emplace(std::make_tuple(sp.ring, f::span_token_lane(sp.token), f::span_token_seq(sp.token)), s);
    }
    for (const Event &e : a_.events) {
      const auto it = wanted.find({e.ring, e.lane, e.seq});
      if (it == wanted.end() || e.kind == f::kKindSpanBegin) continue;
      Span &sp = a_.spans[it->second];
      sp.state = Span::State::kNoBegin;
      sp.duration_ns.reset();
      sp.note = fmt::format("its token names lane {} seq {}, which holds a {} event, not a span's begin", e.lane,
                            e.seq, a_.kind_name_of(e));
    }
  }
  for (auto &sp : a_.spans) {
    if (sp.state != Span::State::kOpen) continue;
    const Event &b = a_.events[*sp.begin];
    if (a_.time.reference_ring) sp.open_for_ns = delta(sp.ring, a_.time.reference_ticks, b.timestamp);
    const DecodedRing *r = ring_of(a_, sp.ring);
    if (r == nullptr) continue;
    if (std::string why = end_may_be_lost(*r, losses(sp.ring), b); !why.empty()) {
      sp.state = Span::State::kOpenOrEndLost;
      sp.note = "no end was found, but an end may have been lost: " + why;
    }
  }
  if (a_.crash)
    for (std::uint32_t i = 0; i < a_.spans.size(); ++i) {
      const Span &sp = a_.spans[i];
      if ((sp.state == Span::State::kOpen || sp.state == Span::State::kOpenOrEndLost) && sp.tid == a_.crash->tid)
        a_.crash->inside_spans.push_back(i);
    }
}

void Analyzer::summarize_threads() {
  std::map<std::uint32_t, std::size_t> at;  /* tid -> index in threads */
  std::vector<std::uint32_t> name_of;  /* per thread: its name in strings */
  for (const auto &e : a_.events) {
    auto [it, fresh] = at.emplace(e.tid, a_.threads.size());
    if (fresh) {
      a_.threads.push_back(ThreadSummary{e.tid, {}, 0, a_.crash && a_.crash->tid == e.tid, {}});
      name_of.push_back(0);
    }
    a_.threads[it->second].events++;
    if (e.thread != 0) name_of[it->second] = e.thread;
  }
  for (std::size_t i = 0; i < a_.threads.size(); ++i) a_.threads[i].name = a_.strings[name_of[i]];
  for (std::uint32_t i = 0; i < a_.spans.size(); ++i) {
    const Span &sp = a_.spans[i];
    if (sp.state != Span::State::kOpen && sp.state != Span::State::kOpenOrEndLost) continue;
    if (auto it = at.find(sp.tid); it != at.end()) a_.threads[it->second].open_spans.push_back(i);
  }
}

void Analyzer::symbolize_all() {
  /* Each distinct location once (location_index), however many events
   * share it. */
  std::vector<SymbolQuery> q;
  std::vector<Location *> dest;
  for (std::size_t i = 0; i < a_.locations.size(); ++i) {
    Location &l = a_.locations[i];
    if (!l.in_module) continue;
    q.push_back({l.address, !location_is_crash_[i]});
    dest.push_back(&l);
  }
  if (a_.crash && a_.crash->location && a_.crash->location->in_module) {
    q.push_back({a_.crash->pc, false});
    dest.push_back(&*a_.crash->location);
  }
  std::map<std::string, std::string> raw_modules;  /* module -> why no build-id */
  for (auto *l : dest)
    if (l->build_id.empty() && !opts_.unverified_symbols) {
      l->note = "the core has no build-id for this module: raw address (--unverified-symbols to symbolize)";
      const Module *m = core_.module_for(l->address);
      raw_modules.emplace(l->module, m != nullptr ? m->build_id_note : std::string());
    }
  for (const auto &[m, why] : raw_modules)
    a_.warnings.push_back(fmt::format("NO BUILD-ID: the core attests no build-id for {} ({}); its addresses are "
                                      "shown raw because no file can be verified to be the one that ran "
                                      "(--unverified-symbols symbolizes them, tagged unverified)", m, why));
  const bool unwind = opts_.unwind && a_.crash && a_.crash->has_regs && !core_.notes().threads.empty();
  if ((q.empty() && !unwind) || !opts_.symbolize) return;
  SymbolizeOptions so;
  so.isolate = opts_.isolate_symbolizer;
  so.unverified = opts_.unverified_symbols;
  so.debuginfod_timeout_ms = opts_.debuginfod_timeout_ms;
  if (use_executable_) so.executable = opts_.executable;
  UnwindRequest ur;
  ur.all_threads = opts_.all_threads;
  auto res = symbolize_and_unwind(core_, q, so, unwind ? &ur : nullptr);
  if (!res) {
    a_.warnings.push_back(fmt::format("symbols unavailable ({}); the timeline is complete, with raw addresses",
                                      res.error().message));
    return;
  }
  /* debuginfod failures: one warning per reason, naming the modules. */
  std::map<std::string, std::set<std::string>> debuginfod_failed;
  /* Files refused for their build-id: one warning per module. */
  std::map<std::string, std::string> refused;
  const auto file_refused = [&](Location &l, const std::string &path, const std::vector<std::uint8_t> &id) {
    l.refused_file = path;
    l.refused_build_id = id;
    const std::string what = id.empty() ? fmt::format("the file at {} has no build-id, the core wants {}", path,
                                                      hex_bytes(l.build_id))
                                        : fmt::format("the file at {} has build-id {}, the core wants {}", path,
                                                      hex_bytes(id), hex_bytes(l.build_id));
    l.note = what + ": not used";
    refused.emplace(l.module, what);
  };
  const auto apply = [&](Location &l, const std::optional<Symbol> &s) {
    if (l.build_id.empty() && !opts_.unverified_symbols) {
      if (l.note.empty())
        l.note = "the core has no build-id for this module: raw address (--unverified-symbols to symbolize)";
      return;
    }
    if (!s) {
      if (l.note.empty()) l.note = "no symbol or file found for this address";
      return;
    }
    if (s->module_file.empty() && !s->refused_file.empty() && !l.build_id.empty()) {
      file_refused(l, s->refused_file, s->refused_build_id);
      if (!s->debuginfod_failure.empty()) debuginfod_failed[s->debuginfod_failure].insert(l.module);
      return;
    }
    if (!s->debuginfod_failure.empty()) {
      debuginfod_failed[s->debuginfod_failure].insert(l.module);
      if (l.note.empty())
        l.note = s->module_file.empty() ? fmt::format("no file of this module found: {}", s->debuginfod_failure)
                                        : fmt::format("no debug info: {}", s->debuginfod_failure);
      if (s->module_file.empty()) return;
    }
    if (!l.build_id.empty()) {
      if (s->file_build_id != l.build_id) {
        file_refused(l, s->module_file, s->file_build_id);
        return;
      }
      l.verification = Verification::kVerified;
    } else {
      l.verification = Verification::kUnverifiedNoCoreBuildId;
      l.note = fmt::format("symbols from {}, which cannot be verified against the core", s->module_file);
    }
    l.function = s->function;
    l.function_offset = s->function_offset;
    l.source_file = s->source_file;
    l.line = s->line;
  };
  for (std::size_t i = 0; i < q.size(); ++i) apply(*dest[i], res->symbols[i]);
  if (unwind) core_stacks(*res, apply);
  for (const auto &[module, why] : refused)
    a_.warnings.push_back(fmt::format("BUILD-ID MISMATCH: {}: it is not the file that ran, so the addresses in {} "
                                      "are shown raw (module+offset)", why, module));
  for (const auto &[why, modules] : debuginfod_failed) {
    std::string names;
    for (const auto &m : modules) names += (names.empty() ? "" : ", ") + m;
    a_.warnings.push_back(fmt::format("DEBUGINFOD: {}; no debug info from it for {}: their addresses are shown "
                                      "without source lines (as module+offset where the file has no symbols)",
                                      why, names));
  }
}

/* The threads unwound from the core: the crashing thread's merged with
 * the CRASH event's walk (CrashFacts::stack), a fault its own handler
 * re-raised (CrashFacts::reraised), the others (Analysis::thread_stacks). */
void Analyzer::core_stacks(const SymbolizeResult &res,
                           const std::function<void(Location &, const std::optional<Symbol> &)> &apply) {
  CrashFacts &c = *a_.crash;
  const auto frame_location = [&](const UnwoundFrame &f) {
    Location l = locate(f.pc);
    if (l.in_module) apply(l, f.symbol);
    else if (l.note.empty()) l.note = "not in a file mapping";
    return l;
  };
  /* The CRASH event of the crashing thread: its pc, then its walk. */
  std::vector<std::uint64_t> ring;
  std::vector<const Location *> ring_at;
  const Event *crash_event = nullptr;
  for (const Event &e : a_.events) /* its last: any before it was recovered from */
    if (e.kind == f::kKindCrash && e.tid == c.tid) crash_event = &e;
  if (crash_event != nullptr && crash_event->location != kNoIndex) {
    ring.push_back(crash_event->return_address);
    ring_at.push_back(&a_.locations[crash_event->location]);
    for (const std::uint32_t l : a_.frames_of(*crash_event)) {
      ring.push_back(a_.locations[l].address);
      ring_at.push_back(&a_.locations[l]);
    }
  }
  CrashStack cs;
  if (crash_event != nullptr && crash_event->stack != StackState::kNone)
    cs.ring_end = std::string(stack_state_name(crash_event->stack));
  const UnwoundThread *crashed = nullptr;
  for (const auto &t : res.threads) {
    if (t.tid == c.tid && crashed == nullptr) {
      crashed = &t;
      continue;
    }
    ThreadStack ts;
    ts.tid = t.tid;
    ts.end = t.end;
    for (const auto &fr : t.frames) ts.frames.push_back({frame_location(fr), FrameFrom::kCore, false});
    a_.thread_stacks.push_back(std::move(ts));
  }
  if (crashed == nullptr) {
    cs.core_end = fmt::format("not unwound: {}", res.unwind_error.empty() ? "libdwfl gave no thread" : res.unwind_error);
    for (std::size_t k = 0; k < ring.size(); ++k) cs.frames.push_back({*ring_at[k], FrameFrom::kRing, false});
    c.stack = std::move(cs);
    return;
  }
  cs.core_end = crashed->end;
  std::string why;
  const auto sf = detail::read_signal_frame(core_, crashed->frames, why);
  const detail::MergedStack m = detail::merge_stacks(ring, crashed->frames, crashed->end.empty());
  cs.agree = m.agree;
  cs.note = m.note;
  for (const auto &mf : m.frames) {
    if (mf.from == FrameFrom::kRing) {
      cs.frames.push_back({*ring_at[mf.index], FrameFrom::kRing, false});
      continue;
    }
    StackFrame fr{frame_location(crashed->frames[mf.index]), mf.from, sf && sf->trampoline == mf.index};
    cs.frames.push_back(std::move(fr));
  }
  /* A fatal signal the process sent itself (SI_USER, SI_TKILL, SI_QUEUE). */
  const bool self_sent = c.si_code && (*c.si_code == 0 || *c.si_code == -6 || *c.si_code == -1) && c.sender_pid &&
                         a_.process.pid && static_cast<std::uint32_t>(*c.sender_pid) == *a_.process.pid;
  if (self_sent && sf) {
    ReraisedFault r;
    r.signo = sf->signo;
    r.signal_name = signal_name(sf->signo);
    r.si_code = sf->code;
    r.si_code_name = si_code_name(sf->signo, sf->code);
    const bool fault_signal = sf->signo == 11 || sf->signo == 7 || sf->signo == 4 || sf->signo == 8 || sf->signo == 5;
    if (sf->code > 0 && fault_signal) r.fault_address = sf->addr;
    if (sf->code <= 0) r.sender_pid = sf->pid;
    r.pc = sf->rip;
    r.sp = sf->rsp;
    r.frame_address = sf->ucontext;
    r.location = frame_location(crashed->frames[sf->trampoline + 1]);
    if (sf->trampoline >= 1) r.handler = frame_location(crashed->frames[sf->trampoline - 1]);
    r.raised_with = *c.si_code == 0 ? "kill()" : *c.si_code == -6 ? "tgkill()" : "sigqueue()";
    if (const CrashSlot *slot = crash_event != nullptr ? a_.crash_of(*crash_event) : nullptr)
      r.recorded = slot->chained && slot->signo == sf->signo && crash_event->return_address == sf->rip;
    c.reraised = std::move(r);
  } else if (self_sent) {
    /* "No signal frame" only when the unwind reached the outermost frame:
     * one that stopped early (a frame without unwind information, such as
     * a handler's code stripped of it) may have stopped above one. */
    if (!why.empty())
      c.reraised_note = fmt::format("the process sent the signal itself; {}", why);
    else if (!crashed->end.empty())
      c.reraised_note = fmt::format("the process sent the signal itself, and the core's unwind of the crashing "
                                    "thread stopped after {} frames ({}) without reaching a signal frame: whether "
                                    "the stack holds the fault it may have answered cannot be told",
                                    crashed->frames.size(), crashed->end);
    else
      c.reraised_note = "the process sent the signal itself, and the crashing thread's stack passes through no "
                        "signal frame: the fault it may have answered cannot be told";
  }
  c.stack = std::move(cs);
}

void Analyzer::decide_status() {
  if (a_.status == Status::kSidecarMismatch || a_.status == Status::kExecutableRefused) return;
  bool valid = false, absent = false, invalid = false;
  const RingReport *first_absent = nullptr, *first_invalid = nullptr, *not_made = nullptr;
  for (const auto &r : a_.rings) {
    if (r.state == RingReport::State::kNotMade && !not_made) not_made = &r;
    if (r.state == RingReport::State::kValid && r.found_by != FoundBy::kSidecar) valid = true;
    if (r.state == RingReport::State::kAbsent) { absent = true; if (!first_absent) first_absent = &r; }
    if (r.state == RingReport::State::kInvalid || r.state == RingReport::State::kForeign) {
      invalid = true;
      if (!first_invalid) first_invalid = &r;
    }
  }
  if (valid) {
    a_.status = Status::kOk;
    if (a_.source == TimelineSource::kNone) a_.source = TimelineSource::kCoreOnly;
  } else if (not_made) {
    a_.status = Status::kRingNotMade;
    a_.reason = not_made->reason;
  } else if (absent) {
    a_.status = Status::kMappingAbsent;
    a_.reason = fmt::format("timeline mapping absent: {}", first_absent->reason);
  } else if (invalid) {
    a_.status = Status::kRingInvalid;
    a_.reason = fmt::format("ring invalid: {}", first_invalid->reason);
  } else if (core_.segments().empty() && !core_.notes().has_file_note) {
    /* No memory of the process, and no NT_FILE to list its mappings:
     * nothing in the core could show a ring, or its absence.  The kernel
     * writes a PT_LOAD for every mapping, dumped or not. */
    a_.status = Status::kCoreUnreadable;
    a_.reason = fmt::format("cannot read the core: {}: {}: not a usable core, nothing to read", core_.path(),
                            core_.note_segments().empty() ? "no PT_LOAD and no PT_NOTE program header"
                                                          : "no PT_LOAD program header and no NT_FILE note");
  } else if (std::string why = ring_may_be_cut_off(); !why.empty()) {
    a_.status = Status::kMappingAbsent;
    a_.reason = std::move(why);
    a_.absence_proves_nothing = true;
  } else {
    a_.status = Status::kNoRing;
    a_.reason = a_.magic_rejected_total > 0
                    ? fmt::format("no CTLN mapping found ({} \"CTLN\" byte runs in the core, none a valid ring "
                                  "header)", a_.magic_rejected_total)
                    : "no CTLN mapping found: the process did not run with libtimeline";
  }
}

/* Why finding no ring says nothing of libtimeline, or "" when it says the
 * process did not use it.  With NT_FILE, the ring's /memfd:core-timeline
 * mapping is listed however much of the core was cut (find_rings reports it
 * cut off).  Without NT_FILE the page scan saw only the bytes the file holds:
 * if truncation cut PT_LOAD bytes, the ring may have been in them. */
std::string Analyzer::ring_may_be_cut_off() const {
  if (core_.notes().has_file_note) return {};
  std::size_t cut = 0;
  for (const Segment &s : core_.segments())
    if (s.present < s.filesz) cut++;
  if (cut == 0) return {};
  for (const Segment &n : core_.note_segments())
    if (n.present < n.filesz)
      return "the core is cut off before its notes and segments: whether libtimeline was used cannot be told";
  return fmt::format("the core is cut off inside {} of its {} PT_LOAD segments and has no NT_FILE note to tell "
                     "which mapping would hold a ring: whether libtimeline was used cannot be told",
                     cut, core_.segments().size());
}

std::vector<RingReport> Analyzer::locate() {
  headers_only_ = true;
  find_rings();
  return std::move(a_.rings);
}

Analysis Analyzer::run() {
  a_.core_path = core_.path();
  a_.core_size = core_.file_size();
  a_.core_truncated = core_.truncated();
  a_.machine = core_.machine();
  if (a_.core_truncated)
    a_.warnings.push_back("the core file is truncated: some segments end past the end of the file");
  process_facts();
  a_.snapshot = core_.notes().live;
  crash_facts();

  if (opts_.executable) {
    auto fid = file_build_id(*opts_.executable);
    const auto &cid = a_.process.build_id;
    if (!cid.empty()) {
      if (!fid || *fid != cid) {
        a_.status = Status::kExecutableRefused;
        const std::string of = a_.snapshot ? fmt::format("process {}", a_.snapshot->pid) : std::string("this core");
        /* Without a build-id of its own, the file's reason ("PATH: not an
         * ELF file", "PATH: has no NT_GNU_BUILD_ID note") is the sentence. */
        a_.reason = fid ? fmt::format("{} is not the executable of {}: its build-id is {}, the {}'s {} is {}",
                                      *opts_.executable, of, hex_bytes(*fid), a_.snapshot ? "process" : "core",
                                      a_.process.exe, hex_bytes(cid))
                        : fmt::format("{}, so it cannot be the executable of {} ({}, build-id {})",
                                      fid.error().message, of, a_.process.exe, hex_bytes(cid));
        return std::move(a_);
      }
      exe_verified_ = use_executable_ = true;
    } else if (opts_.unverified_symbols) {
      use_executable_ = true;
      a_.warnings.push_back(fmt::format("UNVERIFIED: the core has no build-id for its executable; {} is used "
                                        "for symbols because of --unverified-symbols", *opts_.executable));
    } else {
      a_.warnings.push_back(fmt::format("the core has no build-id for its executable, so {} cannot be verified "
                                        "and is not used (--unverified-symbols uses it anyway)",
                                        *opts_.executable));
    }
  }

  find_rings();
  collect_names(); /* before handle_sidecar(), which names the sidecar's events */
  if (!handle_sidecar()) {
    /* Refused: no timeline, so none of the rings' events (probe() put them
     * in the Analysis as it decoded). */
    a_.events = {};
    a_.strings = {std::string()};
    a_.locations = {};
    a_.mappings = {};
    a_.crash_slots = {};
    a_.inline_data = {};
    return std::move(a_);
  }
  collect_names(); /* and a degraded sidecar's own names */
  build_events();
  decide_status();

  for (const auto &r : a_.rings) {
    if (!r.ring || r.state != RingReport::State::kValid) continue;
    const auto &d = *r.ring;
    if (d.header.dropped > 0 || d.overwritten > 0 || d.torn > 0 || d.invalid > 0 || d.missing > 0 ||
        d.truncated || d.counter_inconsistent)
      a_.absence_proves_nothing = true;
    for (const auto &w : d.warnings) a_.warnings.push_back(fmt::format("ring {}: {}", r.index, w));
    for (const auto &l : d.lanes)
      if (l.counter_inconsistent)
        a_.warnings.push_back(fmt::format("ring {}: COUNTER INCONSISTENT in lane {}: {}; the timeline shows the "
                                          "slots actually committed", r.index, l.index, l.counter_reason));
    if (d.torn + d.invalid > 0)
      a_.warnings.push_back(fmt::format("ring {}: {} torn and {} invalid slots skipped (listed in the ring report)",
                                        r.index, d.torn, d.invalid));
  }
  for (const auto &r : a_.rings)
    if (r.state == RingReport::State::kForeign || (r.state != RingReport::State::kValid && a_.status == Status::kOk))
      a_.warnings.push_back(fmt::format("ring {} at {:#x} not used: {}", r.index, r.address, r.reason));
  if (a_.absence_proves_nothing) {
    std::string which;
    for (const auto &w : a_.windows)
      if (w.events > 0 || w.lost) which += (which.empty() ? "" : "; ") + absence_text(w);
    a_.warnings.push_back("events were dropped, overwritten, torn or lost: the absence of an event from this "
                          "timeline proves nothing" + (which.empty() ? std::string() : " by itself: " + which));
  }
  if (a_.status == Status::kOk || a_.source == TimelineSource::kDegradedSidecar) symbolize_all();
  if (a_.crash && !a_.crash->ring_slot && a_.status == Status::kOk) {
    std::optional<bool> installed;
    for (const auto &r : a_.rings)
      if (r.state == RingReport::State::kValid && r.ring && r.found_by != FoundBy::kSidecar)
        installed = installed.value_or(false) || (r.ring->header.compat_flags & f::kCompatHandlers) != 0;
    a_.warnings.push_back(detail::no_crash_event_text(*a_.crash, installed));
  }
  a_.group = group_signature(a_);
  return std::move(a_);
}

}  // namespace

std::string_view handed_outcome_name(HandedOutcome o) noexcept {
  switch (o) {
    case HandedOutcome::kNotHanded: return "not_handed";
    case HandedOutcome::kCrash: return "crash";
    case HandedOutcome::kRecovered: return "recovered";
    case HandedOutcome::kUnknown: return "unknown";
  }
  return "unknown";
}


Analysis analysis_of_error(const std::string &path, const Error &error, const FileFacts &facts) {
  Analysis a;
  a.status = Status::kCoreUnreadable;
  a.core_path = path;
  a.core_size = facts.size;
  a.machine = facts.machine;
  a.reason = fmt::format("cannot read the core: {}", error.message);
  return a;
}

Analysis analyze_file(const std::string &path, const ReadOptions &options) noexcept {
  try {
    FileFacts facts;
    auto core = CoreFile::open(path, &facts);
    if (!core) return analysis_of_error(path, core.error(), facts);
    return analyze(*core, options);
  } catch (const std::exception &e) {
    Analysis a;
    a.status = Status::kCoreUnreadable;
    a.core_path = path;
    a.reason = fmt::format("internal error: {}", e.what());
    return a;
  }
}

std::vector<RingReport> locate_rings(const CoreFile &core) {
  const ReadOptions options;
  return Analyzer(core, options).locate();
}

Analysis analyze(const CoreFile &core, const ReadOptions &options) noexcept {
  try {
    return Analyzer(core, options).run();
  } catch (const std::bad_alloc &) {
    Analysis a;
    a.status = Status::kCoreUnreadable;
    a.core_path = core.path();
    a.reason = "out of memory while reading the core";
    return a;
  } catch (const std::exception &e) {
    Analysis a;
    a.status = Status::kCoreUnreadable;
    a.core_path = core.path();
    a.reason = fmt::format("internal error: {}", e.what());
    return a;
  }
}

}  // namespace core_timeline::reader
