/* SPDX-License-Identifier: MIT */
#include "analyzer.h"
#include "find_causes.h"

namespace core_timeline::reader {

/* The size analyze.h gives (memory per event): change both together. */
static_assert(sizeof(Event) == 152, "analyze.h states the size of an Event; update it");

std::vector<RingReport> Analyzer::locate() {
  headers_only_ = true;
  find_rings();
  return std::move(a_.rings);
}

Analysis Analyzer::run() {
  core_facts();                        /* the core, the process and the crash (analyze_identity.cc) */
  if (!check_executable()) return std::move(a_);
  find_rings();                        /* the rings (analyze_rings.cc) */
  collect_names();                     /* before handle_sidecar(), which names the sidecar's events */
  if (!handle_sidecar()) {             /* a sidecar (analyze_identity.cc) */
    drop_timeline();
    return std::move(a_);
  }
  collect_names();                     /* and a degraded sidecar's own names */
  build_events();                      /* the events (analyze_events.cc) */
  build_time_and_spans();              /* their times, spans and windows (analyze_spans.cc) */
  decide_status();                     /* the status (analyze_status.cc) */
  warn_of_losses();
  if (a_.status == Status::kOk || a_.source == TimelineSource::kDegradedSidecar)
    symbolize_all();                   /* the symbols (analyze_symbols.cc) */
  warn_of_no_crash_event();
  a_.group = group_signature(a_);     /* the crash's group (group.cc) */
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
    Analysis a = Analyzer(core, options).run();
    detail::find_causes(core, options, a); /* cause.cc */
    return a;
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
