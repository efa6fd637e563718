/* SPDX-License-Identifier: MIT */
/* status.cc - see status.h. */
#include "status.h"

#include <array>

namespace ctd {

namespace {

constexpr std::array kAll{Status::kOk,          Status::kNoRing,          Status::kMappingAbsent,
                          Status::kCoreUnreadable, Status::kRingInvalid,  Status::kExecutableRefused,
                          Status::kSidecarMismatch, Status::kCoreMissing, Status::kCoreTruncated,
                          Status::kUndecodable};

}  // namespace

std::string_view status_name(Status s) noexcept {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kNoRing: return "no_ring";
    case Status::kMappingAbsent: return "mapping_absent";
    case Status::kCoreUnreadable: return "core_unreadable";
    case Status::kRingInvalid: return "ring_invalid";
    case Status::kExecutableRefused: return "executable_refused";
    case Status::kSidecarMismatch: return "sidecar_mismatch";
    case Status::kCoreMissing: return "core_missing";
    case Status::kCoreTruncated: return "core_truncated";
    case Status::kUndecodable: return "undecodable";
  }
  return "undecodable";
}

std::optional<Status> status_from_name(std::string_view name) noexcept {
  for (const Status s : kAll)
    if (status_name(s) == name) return s;
  return std::nullopt;
}

}  // namespace ctd
