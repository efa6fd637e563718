/* SPDX-License-Identifier: MIT */
/*
 * group_keys.h - the names of the group signature (docs/grouping.md) in
 * the timeline document and in the timeline entry of the journal, spelled
 * once for the reader (reader/src/group_json.cc), the daemon's entry
 * (group_entry_fields()) and ctl-query.
 *
 * The document's top-level "group" (docs/timeline-json.md, "group"): null,
 * or an object with these members:
 *   rule          the rule's number (group.h kGroupRule)
 *   id            the group id: 16 hex digits
 *   stack_id      the stack part's id
 *   history_id    the history part's id, null when the history was not used
 *   basis         "history+stack" or "stack" (no usable history: see note)
 *   signal        the signal's name
 *   frames        the stack part's function names, innermost first
 *   open_spans    the history part's span names, outermost first
 *   last_events   the history part's event names, oldest first
 *   words         the group in words; stack_words the stack part's
 *   note          why the history was not used, or what limits it; null
 *
 * The timeline entry's fields (journal_entry.h), when the document has a
 * group: kGroup, kGroupStack, kGroupHistory (only when the history was
 * used), kGroupWords, kGroupStackWords, kGroupBasis.
 *
 * Thread-safety: constants and a pure function.
 */
#ifndef CORE_TIMELINE_DOCUMENT_GROUP_KEYS_H
#define CORE_TIMELINE_DOCUMENT_GROUP_KEYS_H

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace core_timeline::document {

namespace group_key {
inline constexpr char group[] = "group";
inline constexpr char rule[] = "rule";
inline constexpr char id[] = "id";
inline constexpr char stack_id[] = "stack_id";
inline constexpr char history_id[] = "history_id";
inline constexpr char basis[] = "basis";
inline constexpr char signal[] = "signal";
inline constexpr char frames[] = "frames";
inline constexpr char open_spans[] = "open_spans";
inline constexpr char last_events[] = "last_events";
inline constexpr char words[] = "words";
inline constexpr char stack_words[] = "stack_words";
inline constexpr char note[] = "note";
/** basis values */
inline constexpr char kHistoryAndStack[] = "history+stack";
inline constexpr char kStackAlone[] = "stack";
}  // namespace group_key

namespace journal {
inline constexpr std::string_view kGroup = "CORE_TIMELINE_GROUP";
inline constexpr std::string_view kGroupStack = "CORE_TIMELINE_GROUP_STACK";
inline constexpr std::string_view kGroupHistory = "CORE_TIMELINE_GROUP_HISTORY";
inline constexpr std::string_view kGroupWords = "CORE_TIMELINE_GROUP_WORDS";
inline constexpr std::string_view kGroupStackWords = "CORE_TIMELINE_GROUP_STACK_WORDS";
inline constexpr std::string_view kGroupBasis = "CORE_TIMELINE_GROUP_BASIS";

/** The group fields of a timeline entry from a document's "group" (none
 *  when it is absent, null, or its id is not a string), appended to *out.
 *  Values are the document's strings as they are.  Pure; thread-safe. */
void group_entry_fields(const nlohmann::ordered_json &doc, std::vector<std::pair<std::string, std::string>> *out);
}  // namespace journal

}  // namespace core_timeline::document

#endif  // CORE_TIMELINE_DOCUMENT_GROUP_KEYS_H
