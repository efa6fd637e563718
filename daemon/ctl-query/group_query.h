/* SPDX-License-Identifier: MIT */
/*
 * group_query.h - ctl-query group: the matching crashes by their group signature
 * (docs/grouping.md; docs/ctl-query.md, "group"), one line per group, the
 * most crashes first.
 *
 * A crash's signature comes from its timeline entry's summary fields
 * (CORE_TIMELINE_GROUP...: core_timeline/document/group_keys.h), so that
 * grouping reads no document; or from a document's "group" member (a
 * timeline file, an entry whose document a match needs).  A timeline
 * written before signatures has none: its crashes form one line of their
 * own, with the id "-".
 *
 * Thread-safety: pure functions over their arguments.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_GROUP_H
#define CORE_TIMELINE_CTL_QUERY_GROUP_H

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "document_reader.h"
#include "journal_source.h"

namespace core_timeline::ctl_query {

struct QueryOptions;

/** One crash's signature as stored ("" where absent). */
struct GroupFacts {
  std::string id, stack_id, history_id, words, stack_words, basis;
};

/** From a timeline entry's summary fields (journal.h kSummaryFields has
 *  them). */
GroupFacts group_facts_of(const JournalEntry &e);
/** From a document's "group" (Timeline::top must keep it: ReadRequest::
 *  paths with "group"); all "" when it is absent or not an object. */
GroupFacts group_facts_of(const Timeline &t);

/** One matching crash, as `group` takes it. */
struct GroupMember {
  const GroupFacts *group = nullptr;
  std::uint64_t time_usec = 0;  /**< crash time; 0 unknown */
  std::string host, exe, pid;   /**< "" unknown */
};

/**
 * Prints the groups of `members` (in crash-time order, oldest first):
 * text as a table (COUNT, FIRST, LAST, HOSTS, EXES, GROUP, PID, SIGNATURE),
 * or with o.json one object per line (count, first_usec, last_usec, hosts,
 * executables, id, stack_id, history_id, basis, words, pid, histories).
 * With o.group_by_stack, by stack_id and its words, and "histories" (the
 * text's HISTORIES column) counts the distinct group ids inside.  Order:
 * most crashes first, then the newest last crash; o.max_entries keeps the
 * first N.  PID is the newest member's (for `ctl-query show PID`).
 * Returns how many groups it printed.
 */
std::size_t print_groups(std::ostream &out, const std::vector<GroupMember> &members, const QueryOptions &o);

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_GROUP_H
