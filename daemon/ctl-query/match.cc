/* SPDX-License-Identifier: MIT */
#include "match.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <system_error>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/reader/number.h"
#include "text.h"

namespace core_timeline::ctl_query {

namespace {

bool all_digits(const std::string &s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

void add(std::vector<MatchGroup> &groups, const std::string &field, std::string value, bool either_pid = false) {
  for (auto &g : groups)
    if (g.field == field) {
      if (std::find(g.values.begin(), g.values.end(), value) == g.values.end()) g.values.push_back(std::move(value));
      g.either_pid = g.either_pid || either_pid;
      return;
    }
  groups.push_back(MatchGroup{field, {std::move(value)}, either_pid});
}

/* The document value at a group's dotted path; _BOOT_ID is
 * coredump.boot_id (the boot id is in the document itself; the daemon need
 * not repeat the journal's _BOOT_ID among the fields), and the timeline
 * entry's group fields are the document's "group" ids (group_keys.h). */
const nlohmann::ordered_json *find(const Timeline &t, const std::string &field) {
  namespace jf = core_timeline::document::journal;
  if (field == jf::kGroup) return t.lookup("group.id");
  if (field == jf::kGroupStack) return t.lookup("group.stack_id");
  if (field == jf::kGroupHistory) return t.lookup("group.history_id");
  return t.lookup(field == "_BOOT_ID" ? "coredump.boot_id" : field);
}

/* That value as the text a match compares with; nullopt if absent or not
 * a scalar. */
std::optional<std::string> value_of(const Timeline &t, const std::string &field) {
  if (const std::string *f = t.field(field)) return *f;
  const nlohmann::ordered_json *v = find(t, field);
  if (!v || v->is_structured()) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  // null, true, false, and numbers as JSON writes them (an integer in
  // decimal, a fraction in its shortest round-trip form).
  return v->dump();
}

}  // namespace

Result<MatchSet> MatchSet::parse(const std::vector<std::string> &args, const std::string &cwd) {
  MatchSet m;
  for (const auto &a : args) {
    if (a.empty()) return invalid("an empty match");
    if (auto eq = a.find('='); eq != std::string::npos) {
      if (eq == 0) return invalid("match \"" + printable(a) + "\": no field name before '='");
      add(m.groups_, a.substr(0, eq), a.substr(eq + 1));
    } else if (a.find('/') != std::string::npos) {
      namespace fs = std::filesystem;
      fs::path p(a);
      if (p.is_relative()) p = fs::path(cwd) / p;
      p = p.lexically_normal();
      std::string s = p.string();
      if (s.size() > 1 && s.back() == '/') s.pop_back();
      add(m.groups_, "COREDUMP_EXE", s);
      std::error_code ec;
      fs::path canon = fs::canonical(p, ec);
      if (!ec) add(m.groups_, "COREDUMP_EXE", canon.string());
    } else if (all_digits(a)) {
      const auto pid = reader::parse_unsigned<std::uint32_t>(a);
      if (!pid || *pid == 0) return invalid("match \"" + a + "\": not a valid PID");
      add(m.groups_, "COREDUMP_PID", std::to_string(*pid), /*either_pid=*/true);
    } else {
      add(m.groups_, "COREDUMP_COMM", a);
    }
  }
  return m;
}

bool MatchSet::may_match(const TimelineName &n, const std::function<NamespacePidHint()> &hint) const {
  for (const auto &g : groups_) {
    std::string fact;
    if (g.field == "COREDUMP_PID" && g.either_pid) {
      const auto in = [&g](const std::string &v) { return std::find(g.values.begin(), g.values.end(), v) != g.values.end(); };
      if (in(std::to_string(n.pid))) continue;
      const NamespacePidHint h = hint ? hint() : NamespacePidHint{};
      if (h.kind == NamespacePidHint::Kind::kUnknown || (h.kind == NamespacePidHint::Kind::kPid && in(h.pid))) continue;
      return false;
    }
    if (g.field == "COREDUMP_PID") fact = std::to_string(n.pid);
    else if (g.field == "COREDUMP_UID") fact = std::to_string(n.uid);
    else if (g.field == "COREDUMP_COMM") fact = n.comm;
    else if (g.field == "COREDUMP_TIMESTAMP") fact = std::to_string(n.usec);
    else if (g.field == "_BOOT_ID" || g.field == "coredump.boot_id") fact = n.boot_id;
    else continue;
    if (std::find(g.values.begin(), g.values.end(), fact) == g.values.end()) return false;
  }
  return true;
}

bool MatchSet::has_field(const Timeline &t, std::size_t group) const {
  const std::string &field = groups_.at(group).field;
  return t.field(field) != nullptr || find(t, field) != nullptr;
}

std::optional<std::string> namespace_pid(const Timeline &t) {
  const nlohmann::ordered_json *ids = t.lookup("pids");
  const nlohmann::ordered_json *v = t.lookup(ids && ids->is_object() ? "pids.pid" : "process.pid");
  if (v && v->is_number_unsigned()) return std::to_string(v->get<std::uint64_t>());
  return std::nullopt;
}

bool MatchSet::matches(const Timeline &t) const {
  const auto has = [](const MatchGroup &g, const std::optional<std::string> &v) {
    return v && std::find(g.values.begin(), g.values.end(), *v) != g.values.end();
  };
  for (const auto &g : groups_) {
    if (has(g, value_of(t, g.field))) continue;
    if (g.either_pid && has(g, namespace_pid(t))) continue;
    return false;
  }
  return true;
}

}  // namespace core_timeline::ctl_query
