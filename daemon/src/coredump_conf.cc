/* SPDX-License-Identifier: MIT */
/* coredump_conf.cc - see coredump_conf.h. */
#include "coredump_conf.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

namespace core_timeline::daemon {

namespace {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

/* Whether the drop-in at `path` hides its name without saying anything: a
 * link to /dev/null, or an empty file (systemd's null_or_empty_path()). */
bool null_or_empty(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  return S_ISCHR(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0);
}

/* One key of [Coredump] applied to `c`. */
void apply(CoredumpConf &c, std::string_view key, std::string_view value, const std::string &file) {
  auto size = [&](std::uint64_t &to, bool infinity) {
    if (infinity && value == "infinity") {
      to = UINT64_MAX;
      return;
    }
    if (auto v = parse_systemd_size(value)) to = *v;
    else c.notes.push_back(fmt::format("{}: {}={} is not a size; ignored, as systemd-coredump does", file, key, value));
  };
  if (key == "ProcessSizeMax") size(c.process_size_max, false);
  else if (key == "ExternalSizeMax") size(c.external_size_max, true);
  else if (key == "JournalSizeMax") size(c.journal_size_max, false);
  else if (key == "Storage") {
    if (value == "none") c.storage = CoredumpConf::Storage::kNone;
    else if (value == "external") c.storage = CoredumpConf::Storage::kExternal;
    else if (value == "journal") c.storage = CoredumpConf::Storage::kJournal;
    else c.notes.push_back(fmt::format("{}: Storage={} is not none, external or journal; ignored", file, value));
  }
}

void read_file(CoredumpConf &c, const std::string &path) {
  std::ifstream in(path);
  if (!in) {
    if (errno != ENOENT) c.notes.push_back(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
    return;
  }
  c.files.push_back(path);
  bool in_section = false;
  for (std::string raw; std::getline(in, raw);) {
    const std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      in_section = line == "[Coredump]";
      continue;
    }
    const auto eq = line.find('=');
    if (!in_section || eq == std::string_view::npos) continue;
    apply(c, trim(line.substr(0, eq)), trim(line.substr(eq + 1)), path);
  }
}

std::string size_text(std::uint64_t b) {
  if (b == UINT64_MAX) return "infinity";
  static constexpr const char *kUnits[] = {"", "K", "M", "G", "T", "P", "E"};
  int u = 0;
  while (u < 6 && b != 0 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + kUnits[u];
}

}  // namespace

std::optional<std::uint64_t> parse_systemd_size(std::string_view s) {
  s = trim(s);
  if (s.empty() || s[0] == '-') return std::nullopt;
  std::uint64_t whole = 0;
  const char *p = s.data(), *end = s.data() + s.size();
  auto [q, ec] = std::from_chars(p, end, whole);
  if (ec != std::errc() || q == p) return std::nullopt;
  /* A fraction: its digits, as systemd's parse_size() reads them. */
  std::uint64_t frac = 0, frac_div = 1;
  if (q < end && *q == '.') {
    ++q;
    const char *digits = q;
    while (q < end && *q >= '0' && *q <= '9') {
      if (frac_div <= UINT64_MAX / 10 / 10) {
        frac = frac * 10 + static_cast<std::uint64_t>(*q - '0');
        frac_div *= 10;
      }
      ++q;
    }
    if (q == digits) return std::nullopt;
  }
  const std::string_view suffix = trim(std::string_view(q, static_cast<std::size_t>(end - q)));
  static constexpr std::pair<std::string_view, int> kSuffixes[] = {{"", 0},  {"B", 0},  {"K", 10}, {"M", 20},
                                                                   {"G", 30}, {"T", 40}, {"P", 50}, {"E", 60}};
  const auto it = std::find_if(std::begin(kSuffixes), std::end(kSuffixes),
                               [&](const auto &e) { return e.first == suffix; });
  if (it == std::end(kSuffixes)) return std::nullopt;
  const int shift = it->second;
  if (shift > 0 && whole > (UINT64_MAX >> shift)) return std::nullopt;
  const std::uint64_t base = whole << shift;
  const std::uint64_t part = shift > 0 ? static_cast<std::uint64_t>(
                                             static_cast<long double>(frac) / frac_div * static_cast<long double>(1ull << shift))
                                       : 0;
  if (base > UINT64_MAX - part) return std::nullopt;
  return base + part;
}

std::uint64_t CoredumpConf::largest_core() const {
  switch (storage) {
    case Storage::kNone: return 0;
    case Storage::kExternal: return std::max(process_size_max, external_size_max);
    case Storage::kJournal: return journal_size_max;
  }
  return 0;
}

std::string CoredumpConf::describe() const {
  switch (storage) {
    case Storage::kNone: return "Storage=none";
    case Storage::kExternal:
      return fmt::format("Storage=external, ProcessSizeMax={}, ExternalSizeMax={}", size_text(process_size_max),
                         size_text(external_size_max));
    case Storage::kJournal: return fmt::format("Storage=journal, JournalSizeMax={}", size_text(journal_size_max));
  }
  return "";
}

CoredumpConf read_coredump_conf(const std::string &root) {
  CoredumpConf c;
  read_file(c, root + "/etc/systemd/coredump.conf");
  /* Drop-ins: by name across the directories, the first directory's file
   * of a name standing for all of that name. */
  std::map<std::string, std::string> dropins;
  for (const char *dir : {"/etc/systemd/coredump.conf.d", "/run/systemd/coredump.conf.d",
                          "/usr/local/lib/systemd/coredump.conf.d", "/usr/lib/systemd/coredump.conf.d"}) {
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(root + dir, ec); !ec && it != std::filesystem::directory_iterator();
         it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() > 5 && name.ends_with(".conf")) dropins.emplace(name, it->path().string());
    }
  }
  for (const auto &[name, path] : dropins)
    if (!null_or_empty(path)) read_file(c, path);
  return c;
}

}  // namespace core_timeline::daemon
