/* SPDX-License-Identifier: MIT */
/*
 * group_json.cc - the document's "group" member (group_keys.h) of an
 * Analysis's group signature.
 */
#include "core_timeline/document/group_keys.h"
#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/group.h"

namespace core_timeline::reader {

namespace gk = core_timeline::document::group_key;

nlohmann::ordered_json group_json(const Analysis &a) {
  if (!a.group) return nullptr;
  const GroupSignature &g = *a.group;
  nlohmann::ordered_json j;
  j[gk::rule] = kGroupRule;
  j[gk::id] = g.id;
  j[gk::stack_id] = g.stack_id;
  j[gk::history_id] = g.history_used ? nlohmann::ordered_json(g.history_id) : nlohmann::ordered_json(nullptr);
  j[gk::basis] = g.history_used ? gk::kHistoryAndStack : gk::kStackAlone;
  j[gk::signal] = g.signal;
  j[gk::frames] = g.frames;
  j[gk::open_spans] = g.open_spans;
  j[gk::last_events] = g.last_events;
  j[gk::words] = g.words;
  j[gk::stack_words] = g.stack_words;
  j[gk::note] = g.note.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(g.note);
  return j;
}

}  // namespace core_timeline::reader
