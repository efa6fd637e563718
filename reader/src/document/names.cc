/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/names.h"

#include <array>

#include <fmt/format.h>

#include "core_timeline/reader/number.h"

namespace core_timeline::document {

namespace {

constexpr std::string_view kCorePrefix = "core.";

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_boot_id(std::string_view s) noexcept {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

std::string xescape_comm(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '.' || c == '/' || c == ' ')
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

std::string unescape_x(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      const int hi = hex_value(s[i + 2]), lo = hex_value(s[i + 3]);
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

std::string_view strip_compression_suffix(std::string_view name) noexcept {
  for (std::string_view suffix : {".zst", ".lz4", ".xz"})
    if (name.size() > suffix.size() && name.ends_with(suffix)) return name.substr(0, name.size() - suffix.size());
  return name;
}

std::string timeline_name_for_core(std::string_view core_name) {
  if (core_name.empty()) return "";
  return std::string(strip_compression_suffix(core_name)) + std::string(kTimelineSuffix);
}

bool is_timeline_file_name(std::string_view n) noexcept {
  return n.size() > kTimelineSuffix.size() && n.ends_with(kTimelineSuffix) && n.front() != '.';
}

std::string format_timeline_name(const TimelineName &n) {
  const std::string comm = xescape_comm(n.comm.empty() ? std::string_view("unknown") : std::string_view(n.comm).substr(0, 32));
  return fmt::format("{}{}.{}.{}.{}.{}{}", kCorePrefix, comm, n.uid, n.boot_id, n.pid, n.usec, kTimelineSuffix);
}

std::optional<TimelineName> parse_core_file_name(std::string_view n) {
  n = strip_compression_suffix(n);
  if (!n.starts_with(kCorePrefix)) return std::nullopt;
  n.remove_prefix(kCorePrefix.size());
  // comm.uid.boot.pid.usec: exactly five parts, split on '.'.
  std::array<std::string_view, 5> parts;
  std::size_t count = 0;
  for (;;) {
    const std::size_t dot = n.find('.');
    if (count == parts.size()) return std::nullopt;
    parts[count++] = n.substr(0, dot);
    if (dot == std::string_view::npos) break;
    n.remove_prefix(dot + 1);
  }
  if (count != parts.size() || parts[0].empty() || !is_boot_id(parts[2])) return std::nullopt;
  const auto uid = reader::parse_unsigned<std::uint64_t>(parts[1]);
  const auto pid = reader::parse_unsigned<std::uint64_t>(parts[3]);
  const auto usec = reader::parse_unsigned<std::uint64_t>(parts[4]);
  if (!uid || !pid || !usec || *pid == 0) return std::nullopt;
  return TimelineName{unescape_x(parts[0]), *uid, std::string(parts[2]), *pid, *usec};
}

std::optional<TimelineName> parse_timeline_name(std::string_view n) {
  if (!is_timeline_file_name(n)) return std::nullopt;
  n.remove_suffix(kTimelineSuffix.size());
  if (strip_compression_suffix(n).size() != n.size()) return std::nullopt;
  return parse_core_file_name(n);
}

}  // namespace core_timeline::document
