/* SPDX-License-Identifier: MIT */
/* The analysis's symbols step: addresses described and symbolized, and
 * the threads unwound from the core. */
#include "analyzer.h"

namespace core_timeline::reader {

namespace {

std::string perms(std::uint32_t flags) {
  std::string p = "---";
  if (flags & PF_R) p[0] = 'r';
  if (flags & PF_W) p[1] = 'w';
  if (flags & PF_X) p[2] = 'x';
  return p;
}

}  // namespace

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

}  // namespace core_timeline::reader
