/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/status.h"

#include <array>
#include <utility>

namespace core_timeline::document {

namespace {

constexpr std::array<std::pair<Status, std::string_view>, 12> kNames{{
    {Status::kOk, "ok"},
    {Status::kNoRing, "no_ring"},
    {Status::kMappingAbsent, "mapping_absent"},
    {Status::kCoreUnreadable, "core_unreadable"},
    {Status::kRingInvalid, "ring_invalid"},
    {Status::kExecutableRefused, "executable_refused"},
    {Status::kSidecarMismatch, "sidecar_mismatch"},
    {Status::kUsage, "usage"},
    {Status::kCoreMissing, "core_missing"},
    {Status::kCoreTruncated, "core_truncated"},
    {Status::kUndecodable, "undecodable"},
    {Status::kRingNotMade, "ring_not_made"},
}};

}  // namespace

std::string_view status_name(Status s) noexcept {
  for (const auto &[status, name] : kNames)
    if (status == s) return name;
  return "core_unreadable";
}

std::optional<Status> parse_status(std::string_view name) noexcept {
  for (const auto &[status, n] : kNames)
    if (n == name) return status;
  return std::nullopt;
}

}  // namespace core_timeline::document
