/* SPDX-License-Identifier: MIT */
/*
 * diff_group.cc - the group section of ctl-query diff (diff_group.h).
 */
#include "diff_group.h"

#include <fmt/format.h>

#include "core_timeline/document/group_keys.h"
#include "text.h"

namespace core_timeline::ctl_query {

using json = nlohmann::ordered_json;
namespace gk = core_timeline::document::group_key;

namespace {

/* A member that must be a string: its value, "" when absent or null, false
 * when of another type. */
bool string_member(const json &o, const char *k, std::string *out) {
  const auto it = o.find(k);
  if (it == o.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

/* A member that must be an array of strings (absent: empty). */
bool names_member(const json &o, const char *k, std::vector<std::string> *out) {
  const auto it = o.find(k);
  if (it == o.end()) return true;
  if (!it->is_array()) return false;
  for (const auto &x : *it) {
    if (!x.is_string()) return false;
    out->push_back(x.get<std::string>());
  }
  return true;
}

SideGroup unknown(std::string why) {
  SideGroup g;
  g.unknown = std::move(why);
  return g;
}

/* Which names of `mine` are not `theirs` at the same place: aligned at the
 * start (spans, outermost first) or at the end (events, newest last). */
std::vector<bool> differ(const std::vector<std::string> &mine, const std::vector<std::string> &theirs, bool at_end) {
  std::vector<bool> d(mine.size(), true);
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const std::size_t back = mine.size() - 1 - i;  // places from the end
    if (at_end ? back < theirs.size() && theirs[theirs.size() - 1 - back] == mine[i]
               : i < theirs.size() && theirs[i] == mine[i])
      d[i] = false;
  }
  return d;
}

std::string marked(const std::vector<std::string> &names, const std::vector<bool> &differs, const char *sep) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const bool mark = i < differs.size() && differs[i];
    s += (i ? sep : "") + std::string(mark ? "*" : "") + printable(names[i]) + (mark ? "*" : "");
  }
  return s;
}

/* "inside S1 > *S2*, after E1, *E2*", or why the history was not used. */
std::string history_words(const SideGroup &g, const std::vector<bool> &spans, const std::vector<bool> &events) {
  if (g.basis == gk::kStackAlone)
    return "no history used" + (g.note.empty() ? std::string() : ": " + printable(g.note));
  std::string s;
  if (!g.open_spans.empty()) s = "inside " + marked(g.open_spans, spans, " > ");
  if (!g.last_events.empty()) s += (s.empty() ? "after " : ", after ") + marked(g.last_events, events, ", ");
  return s.empty() ? "no open span or user event" : s;
}

json bools(const std::vector<bool> &v) {
  json a = json::array();
  for (bool b : v) a.push_back(b);
  return a;
}

json side_json(const SideGroup &s, const std::vector<bool> &spans, const std::vector<bool> &events) {
  const auto str = [&](const std::string &v) { return s.known && !v.empty() ? json(v) : json(nullptr); };
  json j;
  j["known"] = s.known;
  j["unknown"] = s.known ? json(nullptr) : json(s.unknown);
  j["id"] = str(s.id);
  j["stack_id"] = str(s.stack_id);
  j["basis"] = str(s.basis);
  j["words"] = str(s.words);
  j["stack_words"] = str(s.stack_words);
  j["note"] = str(s.note);
  j["open_spans"] = s.known ? json(s.open_spans) : json(nullptr);
  j["last_events"] = s.known ? json(s.last_events) : json(nullptr);
  j["open_spans_differ"] = s.known ? bools(spans) : json(nullptr);
  j["last_events_differ"] = s.known ? bools(events) : json(nullptr);
  return j;
}

}  // namespace

SideGroup side_group_of(const json &doc) {
  const auto it = doc.is_object() ? doc.find(gk::group) : doc.end();
  if (!doc.is_object() || it == doc.end())
    return unknown("its document has no group signature (written before signatures)");
  if (it->is_null()) return unknown("its document's group is null (no crash facts to group by)");
  if (!it->is_object()) return unknown("its document's group is not an object");
  const json &o = *it;
  SideGroup g;
  if (!string_member(o, gk::id, &g.id) || !string_member(o, gk::stack_id, &g.stack_id) || g.id.empty() ||
      g.stack_id.empty())
    return unknown("its document's group has no id or stack_id string");
  if (!string_member(o, gk::basis, &g.basis) || !string_member(o, gk::words, &g.words) ||
      !string_member(o, gk::stack_words, &g.stack_words) || !string_member(o, gk::note, &g.note) ||
      !names_member(o, gk::open_spans, &g.open_spans) || !names_member(o, gk::last_events, &g.last_events))
    return unknown("its document's group has a member of the wrong type");
  g.known = true;
  return g;
}

const char *group_relation_name(GroupRelation r) {
  switch (r) {
    case GroupRelation::kSameGroup: return "same_group";
    case GroupRelation::kSameStack: return "same_stack";
    case GroupRelation::kDifferentStacks: return "different_stacks";
    case GroupRelation::kUnknown: break;
  }
  return "unknown";
}

GroupDiff compare_groups(SideGroup a, SideGroup b) {
  GroupDiff d;
  d.a = std::move(a);
  d.b = std::move(b);
  d.a_spans_differ.assign(d.a.open_spans.size(), false);
  d.b_spans_differ.assign(d.b.open_spans.size(), false);
  d.a_events_differ.assign(d.a.last_events.size(), false);
  d.b_events_differ.assign(d.b.last_events.size(), false);
  if (!d.a.known || !d.b.known) return d;
  if (d.a.id == d.b.id) {
    d.relation = GroupRelation::kSameGroup;
    return d;
  }
  d.relation = d.a.stack_id == d.b.stack_id ? GroupRelation::kSameStack : GroupRelation::kDifferentStacks;
  d.a_spans_differ = differ(d.a.open_spans, d.b.open_spans, false);
  d.b_spans_differ = differ(d.b.open_spans, d.a.open_spans, false);
  d.a_events_differ = differ(d.a.last_events, d.b.last_events, true);
  d.b_events_differ = differ(d.b.last_events, d.a.last_events, true);
  return d;
}

void print_group_section(std::ostream &out, const GroupDiff &g, bool legend) {
  const SideGroup &a = g.a, &b = g.b;
  switch (g.relation) {
    case GroupRelation::kSameGroup:
      out << "group: same group " << printable(a.id) << ' ' << printable(a.words) << '\n';
      return;
    case GroupRelation::kSameStack:
      out << "group: different groups through the same stack\n"
          << "  stack: " << printable(a.stack_id) << ' ' << printable(a.stack_words) << '\n'
          << "  A: " << printable(a.id) << ' ' << history_words(a, g.a_spans_differ, g.a_events_differ) << '\n'
          << "  B: " << printable(b.id) << ' ' << history_words(b, g.b_spans_differ, g.b_events_differ) << '\n';
      if (legend) out << "  (*NAME*: not the other side's at that place)\n";
      return;
    case GroupRelation::kDifferentStacks:
      out << "group: different stacks\n"
          << "  A: stack " << printable(a.stack_id) << ' ' << printable(a.stack_words) << " (group "
          << printable(a.id) << ")\n"
          << "  B: stack " << printable(b.stack_id) << ' ' << printable(b.stack_words) << " (group "
          << printable(b.id) << ")\n";
      return;
    case GroupRelation::kUnknown:
      break;
  }
  std::string why;
  if (!a.known) why = "A (" + printable(a.unknown) + ")";
  if (!b.known) why += (why.empty() ? "B (" : " nor for B (") + printable(b.unknown) + ")";
  out << "group: cannot be told for " << why << '\n';
  for (const auto &[letter, s] : {std::pair{"A", &a}, std::pair{"B", &b}})
    if (s->known) out << "  " << letter << ": " << printable(s->id) << ' ' << printable(s->words) << '\n';
}

json group_diff_json(const GroupDiff &g) {
  json j;
  j["relation"] = group_relation_name(g.relation);
  const bool same = g.relation == GroupRelation::kSameGroup;
  const bool stack = same || g.relation == GroupRelation::kSameStack;
  j["id"] = same ? json(g.a.id) : json(nullptr);
  j["stack_id"] = stack ? json(g.a.stack_id) : json(nullptr);
  j["stack_words"] = stack ? json(g.a.stack_words) : json(nullptr);
  j["a"] = side_json(g.a, g.a_spans_differ, g.a_events_differ);
  j["b"] = side_json(g.b, g.b_spans_differ, g.b_events_differ);
  return j;
}

}  // namespace core_timeline::ctl_query
