/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/status.h"

#include <array>
#include <utility>

namespace core_timeline::document {

namespace {

/* Each status: its name in documents, core-timeline-read's exit code for
 * it (-1: none) and what that exit means in its --help. */
struct StatusFacts {
  Status status;
  std::string_view name;
  int exit_code;
  std::string_view exit_meaning;
};

constexpr std::array<StatusFacts, 12> kFacts{{
    {Status::kOk, "ok", 0, "timeline printed"},
    {Status::kNoRing, "no_ring", 1, "no CTLN mapping found"},
    {Status::kMappingAbsent, "mapping_absent", 2,
     "timeline mapping absent or cannot be told (excluded, or the core is cut off)"},
    {Status::kCoreUnreadable, "core_unreadable", 3, "core unreadable, not an ELF core or nothing to read"},
    {Status::kRingInvalid, "ring_invalid", 4, "ring invalid"},
    {Status::kExecutableRefused, "executable_refused", 5, "EXECUTABLE refused"},
    {Status::kSidecarMismatch, "sidecar_mismatch", 6, "sidecar identity mismatch"},
    {Status::kUsage, "usage", 7, "usage error"},
    {Status::kCoreMissing, "core_missing", -1, ""},
    {Status::kCoreTruncated, "core_truncated", -1, ""},
    {Status::kUndecodable, "undecodable", -1, ""},
    {Status::kRingNotMade, "ring_not_made", 8, "libtimeline loaded but made no ring"},
}};

constexpr const StatusFacts *facts_of(Status s) noexcept {
  for (const auto &f : kFacts)
    if (f.status == s) return &f;
  return nullptr;
}

static_assert([] {
  for (std::size_t i = 0; i < kReaderStatuses.size(); ++i)
    if (facts_of(kReaderStatuses[i])->exit_code != static_cast<int>(i) || !is_reader_status(kReaderStatuses[i]))
      return false;
  for (const auto &f : kFacts)
    if ((f.exit_code >= 0) != is_reader_status(f.status)) return false;
  return true;
}(), "kReaderStatuses is in exit-code order, and only the reader's statuses have an exit code");

}  // namespace

std::string_view status_name(Status s) noexcept {
  const StatusFacts *f = facts_of(s);
  return f ? f->name : "core_unreadable";
}

std::optional<Status> parse_status(std::string_view name) noexcept {
  for (const auto &f : kFacts)
    if (f.name == name) return f.status;
  return std::nullopt;
}

int exit_code(Status s) noexcept {
  const StatusFacts *f = facts_of(s);
  return f ? f->exit_code : -1;
}

std::string_view exit_meaning(Status s) noexcept {
  const StatusFacts *f = facts_of(s);
  return f ? f->exit_meaning : "";
}

}  // namespace core_timeline::document
