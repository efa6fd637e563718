/* SPDX-License-Identifier: MIT */
/* The analysis's last step: its status and reason (decide_status). */
#include "analyzer.h"

namespace core_timeline::reader {

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

/* Warnings of what the rings lost (dropped, overwritten, torn, invalid,
 * missing, cut off), of rings not used, and, when anything was lost, that
 * an absence proves nothing. */
void Analyzer::warn_of_losses() {
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
}

/* The warning that a recovered timeline holds no CRASH event of this
 * crash, and why it may not (detail::no_crash_event_text). */
void Analyzer::warn_of_no_crash_event() {
  if (a_.crash && !a_.crash->ring_slot && a_.status == Status::kOk) {
    std::optional<bool> installed;
    for (const auto &r : a_.rings)
      if (r.state == RingReport::State::kValid && r.ring && r.found_by != FoundBy::kSidecar)
        installed = installed.value_or(false) || (r.ring->header.compat_flags & f::kCompatHandlers) != 0;
    a_.warnings.push_back(detail::no_crash_event_text(*a_.crash, installed));
  }
}

}  // namespace core_timeline::reader
