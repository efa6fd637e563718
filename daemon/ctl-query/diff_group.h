/* SPDX-License-Identifier: MIT */
/*
 * diff_group.h - the group section of `ctl-query diff A B` (docs/ctl-query.md,
 * "diff"; docs/grouping.md): whether A and B are the same bug by their group
 * signatures, and when they share a stack but not a group, which part of
 * their histories set them apart.
 *
 * A side's signature is its document's "group" (document/group_keys.h),
 * read and checked here: a document without one (written before group
 * signatures), with "group": null (no crash facts), or with one of the
 * wrong shape leaves the group of that side untold, with a reason.
 *
 * Thread-safety: plain values and pure functions.  Errors: none (an
 * unusable "group" is a SideGroup with `known` false).
 */
#ifndef CORE_TIMELINE_CTL_QUERY_DIFF_GROUP_H
#define CORE_TIMELINE_CTL_QUERY_DIFF_GROUP_H

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace core_timeline::ctl_query {

/** One side's group signature, as its document stores it. */
struct SideGroup {
  bool known = false;     /**< a usable "group": id and stack_id strings */
  std::string unknown;    /**< when not known: why, "its document has no group
                               signature (written before them)" */
  std::string id, stack_id, basis, words, stack_words;
  std::string note;       /**< the signature's note; "" when null */
  std::vector<std::string> open_spans;   /**< outermost first */
  std::vector<std::string> last_events;  /**< oldest first */
};

/** The "group" member of a document (untrusted): known when it is an object
 *  whose id and stack_id are non-empty strings and whose open_spans and
 *  last_events, where present, are arrays of strings; words, stack_words,
 *  basis and note are taken when strings.  Otherwise unknown, saying why. */
SideGroup side_group_of(const nlohmann::ordered_json &document);

/** How A's group stands to B's. */
enum class GroupRelation {
  kUnknown,         /**< a side's group cannot be told */
  kSameGroup,       /**< the same group id */
  kSameStack,       /**< the same stack id, different group ids */
  kDifferentStacks, /**< different stack ids */
};

/** "unknown", "same_group", "same_stack", "different_stacks". */
const char *group_relation_name(GroupRelation r);

/** The comparison of two sides' signatures. */
struct GroupDiff {
  GroupRelation relation = GroupRelation::kUnknown;
  SideGroup a, b;
  /** Parallel to a.open_spans, b.open_spans, a.last_events, b.last_events:
   *  true where the name is not the other side's at the same place (spans
   *  aligned at the outermost, events at the newest, so a name with no
   *  counterpart differs too).  All false unless both sides are known. */
  std::vector<bool> a_spans_differ, b_spans_differ, a_events_differ, b_events_differ;
};

GroupDiff compare_groups(SideGroup a, SideGroup b);

/** The text section, each line ending in '\n' (names escaped, printable()):
 *    same group:      "group: same group ID WORDS"
 *    same stack:      "group: different groups through the same stack
 *                        stack: STACK_ID STACK_WORDS
 *                        A: ID inside S1 > *S2*, after E1, *E2*
 *                        B: ID after E1, *E3*"
 *                     a name that differs from the other side's is marked
 *                     *NAME*; with `legend`, a last line says so
 *    different stacks: "group: different stacks" and per side its stack id,
 *                     stack words and group id
 *    unknown:         "group: cannot be told for A (WHY)" and the other
 *                     side's group when it is known. */
void print_group_section(std::ostream &out, const GroupDiff &g, bool legend);

/** The --json "group" object (docs/ctl-query.md, "diff --json"): relation,
 *  id (same group) or null, stack_id and stack_words (same group or same
 *  stack) or null, and "a" and "b": known, unknown (the reason or null),
 *  id, stack_id, basis, words, stack_words, note, open_spans, last_events,
 *  open_spans_differ, last_events_differ (null where unknown). */
nlohmann::ordered_json group_diff_json(const GroupDiff &g);

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_DIFF_GROUP_H
