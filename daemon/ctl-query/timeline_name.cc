/* SPDX-License-Identifier: MIT */
#include "timeline_name.h"

#include "core_timeline/reader/number.h"

#include <charconv>
#include <vector>

namespace core_timeline::ctlq {

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool is_timeline_file_name(std::string_view n) noexcept {
  return n.size() > kTimelineSuffix.size() && n.substr(n.size() - kTimelineSuffix.size()) == kTimelineSuffix &&
         n.front() != '.';
}

std::string unescape_x(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      int hi = hex_value(s[i + 2]), lo = hex_value(s[i + 3]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::optional<TimelineName> parse_timeline_name(std::string_view n) {
  if (!is_timeline_file_name(n)) return std::nullopt;
  n.remove_suffix(kTimelineSuffix.size());
  if (n.substr(0, 5) != "core.") return std::nullopt;
  n.remove_prefix(5);
  // comm.uid.boot.pid.usec: split on '.', exactly five parts.
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = n.find('.', start);
    parts.push_back(n.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (parts.size() != 5 || parts[0].empty()) return std::nullopt;
  TimelineName t;
  t.comm = unescape_x(parts[0]);
  auto uid = reader::parse_unsigned<std::uint32_t>(parts[1]);
  auto pid = reader::parse_unsigned<std::uint32_t>(parts[3]);
  auto usec = reader::parse_unsigned<std::uint64_t>(parts[4]);
  if (!uid || !pid || !usec || *pid == 0) return std::nullopt;
  if (parts[2].size() != 32) return std::nullopt;
  for (char c : parts[2])
    if (hex_value(c) < 0 || (c >= 'A' && c <= 'F')) return std::nullopt;
  t.uid = *uid;
  t.boot_id = std::string(parts[2]);
  t.pid = *pid;
  t.usec = *usec;
  return t;
}

}  // namespace core_timeline::ctlq
