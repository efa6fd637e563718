/* SPDX-License-Identifier: MIT */
#include "analyzer.h"

namespace core_timeline::reader {

/* The size analyze.h gives (memory per event): change both together. */
static_assert(sizeof(Event) == 152, "analyze.h states the size of an Event; update it");

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
  return std::move(a_);
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
