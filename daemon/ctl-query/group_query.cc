/* SPDX-License-Identifier: MIT */
/*
 * group_query.cc - ctl-query group (group_query.h).
 */
#include "group_query.h"

#include <algorithm>
#include <map>
#include <set>

#include "core_timeline/document/group_keys.h"
#include "query.h"
#include "text.h"
#include "time_spec.h"

namespace core_timeline::ctl_query {

namespace jf = core_timeline::document::journal;
namespace gk = core_timeline::document::group_key;
using json = nlohmann::ordered_json;

GroupFacts group_facts_of(const JournalEntry &e) {
  return GroupFacts{e.get(jf::kGroup),      e.get(jf::kGroupStack),      e.get(jf::kGroupHistory),
                    e.get(jf::kGroupWords), e.get(jf::kGroupStackWords), e.get(jf::kGroupBasis)};
}

GroupFacts group_facts_of(const Timeline &t) {
  GroupFacts g;
  const json *o = t.lookup(gk::group);
  if (!o || !o->is_object()) return g;
  const auto str = [&](const char *k) {
    const auto it = o->find(k);
    return it != o->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  g.id = str(gk::id);
  g.stack_id = str(gk::stack_id);
  g.history_id = str(gk::history_id);
  g.words = str(gk::words);
  g.stack_words = str(gk::stack_words);
  g.basis = str(gk::basis);
  return g;
}

namespace {

struct Group {
  std::string id, history_id, basis, words;
  std::size_t count = 0;
  std::uint64_t first = 0, last = 0;
  std::string pid;  // the newest member's
  std::set<std::string> hosts, exes, histories;
};

std::string joined(const std::set<std::string> &s) {
  std::string out;
  for (const auto &x : s) out += (out.empty() ? "" : ",") + printable(x);
  return out.empty() ? "-" : out;
}

json set_json(const std::set<std::string> &s) {
  json a = json::array();
  for (const auto &x : s) a.push_back(x);
  return a;
}

std::vector<Group> collect(const std::vector<GroupMember> &members, bool by_stack) {
  std::map<std::string, Group> groups;
  for (const GroupMember &m : members) {
    const GroupFacts &f = *m.group;
    const std::string &id = by_stack ? f.stack_id : f.id;
    Group &g = groups[id];
    if (g.count == 0) {
      g.id = id;
      g.words = by_stack ? f.stack_words : f.words;
      g.basis = by_stack ? std::string(gk::kStackAlone) : f.basis;
      g.history_id = by_stack ? std::string() : f.history_id;
      g.first = m.time_usec;
    }
    ++g.count;
    g.first = std::min(g.first, m.time_usec);
    if (m.time_usec >= g.last) {
      g.last = m.time_usec;
      g.pid = m.pid;
    }
    if (!m.host.empty()) g.hosts.insert(m.host);
    if (!m.exe.empty()) g.exes.insert(m.exe);
    g.histories.insert(f.id);
  }
  std::vector<Group> out;
  for (auto &[id, g] : groups) out.push_back(std::move(g));
  std::stable_sort(out.begin(), out.end(), [](const Group &a, const Group &b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.last != b.last) return a.last > b.last;
    return a.id < b.id;
  });
  return out;
}

std::string time_text(std::uint64_t usec) { return usec ? format_time(static_cast<std::int64_t>(usec)) : "-"; }

}  // namespace

std::size_t print_groups(std::ostream &out, const std::vector<GroupMember> &members, const QueryOptions &o) {
  std::vector<Group> groups = collect(members, o.group_by_stack);
  if (o.max_entries && groups.size() > *o.max_entries) groups.resize(*o.max_entries);
  if (o.json) {
    for (const Group &g : groups) {
      json j;
      j["count"] = g.count;
      j["first_usec"] = g.first;
      j["last_usec"] = g.last;
      j["hosts"] = set_json(g.hosts);
      j["executables"] = set_json(g.exes);
      j["id"] = g.id.empty() ? json(nullptr) : json(g.id);
      j["history_id"] = g.history_id.empty() ? json(nullptr) : json(g.history_id);
      j["basis"] = g.basis.empty() ? json(nullptr) : json(g.basis);
      j["words"] = g.words.empty() ? json(nullptr) : json(g.words);
      j["pid"] = g.pid.empty() ? json(nullptr) : json(g.pid);
      if (o.group_by_stack) j["histories"] = g.histories.size();
      out << j.dump(o.json_pretty ? 2 : -1, ' ', false, json::error_handler_t::replace) << '\n';
    }
    return groups.size();
  }
  std::vector<std::vector<std::string>> cells;
  for (const Group &g : groups) {
    std::string words = g.id.empty() ? std::string("no signature stored (a timeline written before grouping)")
                                     : printable(g.words);
    cells.push_back({std::to_string(g.count), time_text(g.first), time_text(g.last), joined(g.hosts),
                     joined(g.exes), g.id.empty() ? "-" : printable(g.id), g.pid.empty() ? "-" : printable(g.pid)});
    if (o.group_by_stack) cells.back().push_back(std::to_string(g.histories.size()));
    cells.back().push_back(std::move(words));
  }
  std::vector<std::string> heads{"COUNT", "FIRST", "LAST", "HOSTS", "EXES", "GROUP", "PID"};
  std::vector<bool> right{true, false, false, false, false, false, true};
  if (o.group_by_stack) {
    heads.push_back("HISTORIES");
    right.push_back(true);
  }
  heads.push_back(o.group_by_stack ? "STACK" : "SIGNATURE");
  right.push_back(false);
  print_table(out, heads, right, cells, !o.no_legend);
  return groups.size();
}

}  // namespace core_timeline::ctl_query
