/* SPDX-License-Identifier: MIT */
#include "query_steps.h"

namespace core_timeline::ctl_query {

int Query::locate(LocatedTimeline *found) {
  if (const auto rc = gather()) return *rc;
  problems_.summary();
  if (rows_.empty()) return problems_.count() > 0 || hid_unverified() ? kExitIncomplete : kExitNoMatch;
  const Candidate &c = *row_candidates_.back();
  found->matches = rows_.size();
  found->time_usec = rows_.back()->time_usec;
  found->path = label(*rows_.back());
  found->file = rows_.back()->path;
  found->source = rows_.back()->from_journal ? "journal" : "file";
  found->entry_cursor = rows_.back()->entry_cursor;
  if (!c.entry) {
    found->dir = dirs_[c.dir].path;
    found->name = c.name;
    return kExitFound;
  }
  auto d = document_of(c, *rows_.back());
  if (!d) {
    err_ << "ctl-query: " << printable(d.error().message) << '\n';
    return kExitIncomplete;
  }
  if (*d) {
    found->document = std::make_shared<const std::string>(std::move(**d));
    return kExitFound;
  }
  /* No document in the entry: the file it names. */
  const std::string path = rows_.back()->path;
  const auto slash = path.rfind('/');
  if (path.empty() || slash == std::string::npos) {
    err_ << "ctl-query: " << printable(found->path) << ": the entry carries no document and names no timeline file\n";
    return kExitIncomplete;
  }
  found->dir = slash == 0 ? "/" : path.substr(0, slash);
  found->name = path.substr(slash + 1);
  found->path = path;
  return kExitFound;
}

int Query::run() {
  if (const auto rc = gather()) return *rc;
  release_unprinted();
  return print();
}

void Query::release_unprinted() {
  const bool rows_only = o_.command == Command::kList || o_.command == Command::kGroup;
  if (!rows_only || rows_.empty() || (o_.max_entries && *o_.max_entries == 0)) return;
  std::vector<std::unique_ptr<JournalEntry>>().swap(entries_);
  std::vector<const Candidate *>().swap(row_candidates_);
  std::vector<const Candidate *>().swap(todo_);
  std::vector<Candidate>().swap(candidates_);
}

std::optional<int> Query::gather() {
  if (const auto rc = open_sources()) return *rc;
  if (const auto rc = resolve_boot()) return *rc;
  if (const auto rc = scan_journal()) return *rc;
  select_by_name();
  read_selected();
  note_fields_no_timeline_has();
  report_read_problems();
  order_rows();
  note_withheld();
  if (untrusted_ > 0)
    err_ << "ctl-query: " << untrusted_ << (untrusted_ == 1 ? " journal entry" : " journal entries")
         << " with the timeline MESSAGE_ID ignored: not logged by root, nor by core-timelined as the crashed "
            "user (docs/ctl-query.md, \"Trust\")\n";
  if (unverified_ > 0 && !o_.unverified)
    err_ << "ctl-query: " << unverified_ << (unverified_ == 1 ? " journal entry" : " journal entries")
         << " left out: only the crashed user vouches for "
         << (unverified_ == 1 ? "it" : "them")
         << " and no root-owned timeline file could be found to back " << (unverified_ == 1 ? "it" : "them")
         << " (--unverified shows them; docs/ctl-query.md, \"Trust\")\n";
  return std::nullopt;
}

int locate_newest(const QueryOptions &o, std::ostream &err, LocatedTimeline *found) noexcept {
  try {
    auto matches = MatchSet::parse(o.matches, o.cwd);
    if (!matches) {
      err << "ctl-query: " << matches.error().message << '\n';
      return kExitUsage;
    }
    Query q(o, *matches, err, err);
    return q.locate(found);
  } catch (const std::exception &e) {
    err << "ctl-query: " << e.what() << '\n';
    return kExitIncomplete;
  }
}

int run_query(const QueryOptions &o, std::ostream &out, std::ostream &err) noexcept {
  try {
    auto matches = MatchSet::parse(o.matches, o.cwd);
    if (!matches) {
      err << "ctl-query: " << matches.error().message << '\n';
      return kExitUsage;
    }
    Query q(o, *matches, out, err);
    return q.run();
  } catch (const std::exception &e) {
    err << "ctl-query: " << e.what() << '\n';
    return kExitIncomplete;
  }
}

}  // namespace core_timeline::ctl_query
