/* SPDX-License-Identifier: MIT */
#include "core_timeline/reader/tlmap.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "core_timeline/reader/number.h"
#include "core_timeline/reader/printable.h"

namespace core_timeline::reader {

namespace {
constexpr std::size_t kMaxFile = 16u << 20;
constexpr std::size_t kMaxName = 64;

bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}
/* Bytes of the file (or its path) in an error message: never raw, and
 * never cut at a NUL (printable.h). */
std::string quoted(std::string_view s) { return "\"" + printable(s, {.quoted = true}) + "\""; }
}  // namespace

Result<TlMap> TlMap::parse(std::string_view text, std::string_view origin_bytes) {
  TlMap m;
  const std::string origin = printable(origin_bytes);
  std::size_t lineno = 0;
  while (!text.empty()) {
    ++lineno;
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    std::size_t sp = line.find_first_of(" \t");
    if (sp == std::string_view::npos)
      return Error{Errc::kBadData, fmt::format("{}:{}: expected \"ID NAME\"", origin, lineno)};
    std::string_view id_s = line.substr(0, sp);
    std::string_view rest = trim(line.substr(sp));
    std::string_view words[3];
    std::size_t nwords = 0;
    while (!rest.empty()) {
      if (nwords == 3)
        return Error{Errc::kBadData,
                     fmt::format("{}:{}: expected \"ID NAME [ARG0 [ARG1]]\": more than two argument names", origin,
                                 lineno)};
      const std::size_t end = rest.find_first_of(" \t");
      words[nwords++] = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : trim(rest.substr(end));
    }
    std::string_view name = words[0];
    const auto id = parse_unsigned<std::uint32_t>(id_s, /*allow_hex=*/true);
    if (!id)
      return Error{Errc::kBadData, fmt::format("{}:{}: id {} is not a 32-bit decimal or 0x-hex number",
                                               origin, lineno, quoted(line.substr(0, sp)))};
    if (name.empty() || name.size() > kMaxName)
      return Error{Errc::kBadData, fmt::format("{}:{}: name must be 1 to {} characters", origin, lineno, kMaxName)};
    for (std::size_t w = 0; w < nwords; ++w) {
      if (words[w].size() > kMaxName)
        return Error{Errc::kBadData, fmt::format("{}:{}: name must be 1 to {} characters", origin, lineno, kMaxName)};
      for (char c : words[w])
        if (!name_char(c))
          return Error{Errc::kBadData,
                       fmt::format("{}:{}: name {} has a character outside [A-Za-z0-9_.:-]", origin, lineno,
                                   quoted(words[w]))};
    }
    Entry entry{std::string(name), std::string(words[1]), std::string(words[2])};
    if (!m.names_.emplace(*id, std::move(entry)).second)
      return Error{Errc::kBadData, fmt::format("{}:{}: id {:#x} is named twice", origin, lineno, *id)};
  }
  return m;
}

Result<TlMap> TlMap::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{Errc::kIo, fmt::format("{}: cannot open: {}", printable(path), std::strerror(errno))};
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxFile)
      return Error{Errc::kBadData, fmt::format("{}: larger than {} bytes", printable(path), kMaxFile)};
  }
  if (in.bad()) return Error{Errc::kIo, fmt::format("{}: read error", printable(path))};
  return parse(text, path);
}

const std::string *TlMap::find(std::uint32_t id) const {
  const Entry *e = entry(id);
  return e == nullptr ? nullptr : &e->name;
}

const TlMap::Entry *TlMap::entry(std::uint32_t id) const {
  auto it = names_.find(id);
  return it == names_.end() ? nullptr : &it->second;
}

}  // namespace core_timeline::reader
