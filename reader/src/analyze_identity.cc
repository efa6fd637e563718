/* SPDX-License-Identifier: MIT */
/* The analysis's identity step: the process and crash facts from the
 * core's notes, a ring's identity checked against them, a sidecar's
 * timeline, and whether the crash was handed to the program's handler. */
#include "analyzer.h"

namespace core_timeline::reader {

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

/* The core's own facts (path, size, truncation, machine), the process's
 * (process_facts) and the crash's (crash_facts). */
void Analyzer::core_facts() {
  a_.core_path = core_.path();
  a_.core_size = core_.file_size();
  a_.core_truncated = core_.truncated();
  a_.machine = core_.machine();
  if (a_.core_truncated)
    a_.warnings.push_back("the core file is truncated: some segments end past the end of the file");
  process_facts();
  a_.snapshot = core_.notes().live;
  crash_facts();
}

/* --executable against the core's build-id: false (kExecutableRefused,
 * with the reason) when it contradicts the core, else true, with the
 * file used for symbols when verified (or --unverified-symbols). */
bool Analyzer::check_executable() {
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
        return false;
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
  return true;
}

/* Refused by handle_sidecar(): no timeline, so none of the rings' events
 * (probe() put them in the Analysis as it decoded). */
void Analyzer::drop_timeline() {
  a_.events = {};
  a_.strings = {std::string()};
  a_.locations = {};
  a_.mappings = {};
  a_.crash_slots = {};
  a_.inline_data = {};
}

}  // namespace core_timeline::reader
