/* SPDX-License-Identifier: MIT */
/*
 * match.h - the MATCH arguments, as coredumpctl(1) takes them.
 *
 *   FIELD=VALUE   contains '=': the document's coredump.fields[FIELD]
 *                 (COREDUMP_PID=, COREDUMP_UID=, _BOOT_ID=... any journal
 *                 field the daemon stored) when FIELD is one of them, else
 *                 any value of the document by dotted path ("status=ok",
 *                 "core.truncated=false", "process.exe=...",
 *                 "daemon.decoder.seccomp=true", "events.0.kind=LANE_CLAIM":
 *                 a decimal part indexes an array); _BOOT_ID falls back to
 *                 coredump.boot_id
 *   /path, a/b    contains '/': COREDUMP_EXE, the path made absolute against
 *                 the current directory and lexically normalized (and, when
 *                 it exists, also its canonical path)
 *   1234          a number: the crash's pid, on the host (COREDUMP_PID) or
 *                 in its own pid namespace (the document's pids.pid, else
 *                 process.pid; the timeline entry's
 *                 CORE_TIMELINE_NAMESPACE_PID): either matches
 *   name          anything else: COREDUMP_COMM
 *
 * As in the journal's matching, several matches on the same field are
 * alternatives (pid 1 or pid 2) and matches on different fields must all
 * hold.  Values compare as exact strings; other scalars compare by their
 * JSON text: an integer in decimal, a fraction in its shortest round-trip
 * form (1.5), true, false and null by those words.  An object or array
 * matches nothing.
 *
 * Thread-safety: a MatchSet is immutable after parse(); its methods may be
 * called from several threads.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_MATCH_H
#define CORE_TIMELINE_CTL_QUERY_MATCH_H

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "document_reader.h"
#include "expected.h"
#include "core_timeline/document/names.h"

namespace core_timeline::ctl_query {

/* Timeline file names are the document module's (core_timeline/document/names.h). */
using core_timeline::document::is_timeline_file_name;
using core_timeline::document::parse_timeline_name;
using core_timeline::document::TimelineName;

/** One field and the values any of which it may have. */
struct MatchGroup {
  std::string field;
  std::vector<std::string> values;
  /** A COREDUMP_PID group that a bare number made: its values also match
   *  the namespace pid (namespace_pid()). */
  bool either_pid = false;
};

/** What a timeline file says of its namespace pid without being parsed:
 *  its document::kNamespacePidXattr (names.h). */
struct NamespacePidHint {
  enum class Kind {
    kNone,     /**< none: not in a pid namespace (or the file may not be read) */
    kPid,      /**< `pid` */
    kUnknown,  /**< cannot be told (a file system without user xattrs) */
  };
  Kind kind = Kind::kNone;
  std::string pid;
};

/** The crash's pid in its own pid namespace: pids.pid, else (documents
 *  written before "pids") process.pid; nullopt when neither is a number. */
std::optional<std::string> namespace_pid(const Timeline &t);

class MatchSet {
 public:
  /** Parses the MATCH arguments; `cwd` makes relative paths absolute.
   *  Fails on an empty argument or an empty FIELD. */
  static Result<MatchSet> parse(const std::vector<std::string> &args, const std::string &cwd);

  /** False only when the facts of a timeline's file name prove that its
   *  document cannot match (COREDUMP_PID, COREDUMP_UID, COREDUMP_COMM,
   *  COREDUMP_TIMESTAMP and _BOOT_ID are in the name).  The name holds
   *  only the host pid: a bare number that is not it may still be the
   *  namespace pid, which `hint` tells (called only then; without it, as
   *  kNone). */
  bool may_match(const TimelineName &name, const std::function<NamespacePidHint()> &hint = {}) const;

  /** Whether the document has the field of groups()[group] at all, with
   *  any value (a field that no document has is worth a note: a
   *  misspelling). */
  bool has_field(const Timeline &t, std::size_t group) const;

  /** Whether a read document matches every group. */
  bool matches(const Timeline &t) const;

  /** A set of exactly these groups (a part of a parsed set: the groups a
   *  journal's index did not already decide). */
  static MatchSet of(std::vector<MatchGroup> groups) {
    MatchSet m;
    m.groups_ = std::move(groups);
    return m;
  }

  bool empty() const { return groups_.empty(); }
  const std::vector<MatchGroup> &groups() const { return groups_; }

 private:
  std::vector<MatchGroup> groups_;
};

}  // namespace core_timeline::ctl_query

#endif  // CORE_TIMELINE_CTL_QUERY_MATCH_H
