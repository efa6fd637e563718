/* SPDX-License-Identifier: MIT */
/* Query's sources: the timeline directories and files, the journals and
 * their timeline entries, --boot (query_steps.h). */
#include "query_steps.h"

namespace core_timeline::ctl_query {

/* The journal field a match's field is in the timeline entry (so that the
 * journal's index answers it), or nullopt when only the document has it. */
std::optional<std::string> journal_field(const std::string &field) {
  static const std::set<std::string> same{"COREDUMP_PID",         "COREDUMP_UID",  "COREDUMP_GID",
                                          "COREDUMP_SIGNAL",      "COREDUMP_EXE",  "COREDUMP_COMM",
                                          "COREDUMP_SIGNAL_NAME", "COREDUMP_TIMESTAMP", "COREDUMP_FILENAME",
                                          "_HOSTNAME"};
  if (same.count(field)) return field;
  if (field == "_BOOT_ID" || field == "coredump.boot_id") return std::string(jf::kBootId);
  if (field == key::status) return std::string(jf::kStatus);
  if (field == jf::kGroup || field == jf::kGroupStack || field == jf::kGroupHistory) return field;
  return std::nullopt;
}

namespace {

bool is_id128_text(std::string_view s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

/* --boot's value, as journalctl -b takes it: [ID][{+|-}N], or N. */
struct BootSpec {
  std::string id;
  long long offset = 0;
};

Result<BootSpec> parse_boot(const std::string &text) {
  BootSpec b;
  std::string_view s = text;
  if (s.size() >= 32 && is_id128_text(s.substr(0, 32))) {
    b.id = std::string(s.substr(0, 32));
    s.remove_prefix(32);
    if (s.empty()) return b;
    if (s[0] != '+' && s[0] != '-')
      return invalid("--boot=" + printable(text) + ": after the boot id, only +N or -N");
  }
  if (s.empty()) return b;
  const bool negative = s[0] == '-';
  if (s[0] == '+' || s[0] == '-') s.remove_prefix(1);
  const auto n = reader::parse_unsigned<std::uint32_t>(std::string(s));
  if (!n) return invalid("--boot=" + printable(text) + ": not a boot id (32 hex digits), an offset (0, -1, 1...) or ID±N");
  b.offset = negative ? -static_cast<long long>(*n) : static_cast<long long>(*n);
  return b;
}

}  // namespace

/* The file `path` names, read as a timeline file is (read_timeline). */
Result<Timeline> read_timeline_path(const std::string &path, const ReadRequest &req) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  reader::Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int e = errno;
    return Error{e == EACCES || e == EPERM ? Errc::kPermissionDenied
                 : e == ENOENT             ? Errc::kNotFound
                                           : Errc::kIo,
                 path + ": cannot open its directory: " + std::strerror(e)};
  }
  auto r = read_timeline(fd.get(), dir, name, req);
  if (!r && r.error().code == Errc::kNotFound)
    return Error{Errc::kIo, path + ": does not exist (its journal entry carries no document)"};
  return r;
}

void Query::note_withheld() {
  const uid_t me = ::geteuid();
  if (!journal_ || me == 0 || !residual_.empty() || o_.event_filter.name) return;
  static const std::set<std::string> coredump_fields{"COREDUMP_PID", "COREDUMP_EXE", "COREDUMP_COMM",
                                                     "COREDUMP_SIGNAL", "COREDUMP_SIGNAL_NAME", "COREDUMP_UID",
                                                     "COREDUMP_GID", "COREDUMP_TIMESTAMP", "COREDUMP_FILENAME",
                                                     "_HOSTNAME"};
  JournalTerm term;
  for (const auto &g : matches_.groups()) {
    if (!coredump_fields.count(g.field)) return;  // status=, _BOOT_ID=...: not in systemd-coredump's terms
    term.emplace_back(g.field, g.values);
  }
  if (boot_id_) term.emplace_back("_BOOT_ID", std::vector<std::string>{*boot_id_});
  auto found = journal_->withheld(me, term);
  if (!found) {
    problems_.report(found.error().message, problem_name(Errc::kIo));
    return;
  }
  std::set<std::string> listed;
  for (const Row *r : rows_) listed.insert(r->host_pid + "/" + std::to_string(r->time_usec));
  for (const auto &w : *found) {
    if (!in_range(w.time_usec) || listed.count(w.pid + "/" + std::to_string(w.time_usec))) continue;
    problems_.report(
        fmt::format("pid {} ({}) crashed at {}: your crash, but systemd-coredump's entry in your journal says "
                    "COREDUMP_DUMPABLE={}: the process was not dumpable for you (a setuid or setgid program, one "
                    "that gained capabilities, or one that called prctl(PR_SET_DUMPABLE, 0)), so its core, its "
                    "timeline and its timeline entry belong to root; run as root to see it",
                    w.pid, w.exe.empty() ? w.comm : w.exe,
                    w.time_usec ? format_time(static_cast<std::int64_t>(w.time_usec)) : std::string("?"),
                    w.dumpable),
        kNotDumpable);
  }
}

std::optional<int> Query::open_sources() {
  std::vector<std::pair<std::string, bool>> timeline_dirs;  // path, required
  JournalSpec spec;
  spec.files = o_.journal_files;
  for (const auto &p : o_.directories)
    if (!journal_files_in(p, &spec.files)) timeline_dirs.emplace_back(p, true);
  const bool explicit_source = !o_.directories.empty() || !o_.journal_files.empty() || !o_.machine.empty();
  if (o_.files)
    for (const char *p : kDefaultDirectories) timeline_dirs.emplace_back(p, false);
  bool want_journal = true;
  if (!o_.machine.empty()) {
    spec.kind = JournalSpec::Kind::kMachine;
    spec.machine = o_.machine;
  } else if (!spec.files.empty()) {
    spec.kind = JournalSpec::Kind::kFiles;
  } else if (explicit_source) {
    want_journal = false;  // only timeline directories, as before the journal
  }
  for (const auto &[p, required] : timeline_dirs) {
    int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (required) {
        err_ << "ctl-query: " << printable(p) << ": cannot open the directory: " << std::strerror(e) << '\n';
        return kExitNoDirectory;
      }
      if (e == ENOENT) continue;  // no timeline stored there yet
      problems_.report(
          p + ": cannot open the directory (" + std::strerror(e) + "); its timelines were not searched",
          e == EACCES || e == EPERM ? problem_name(Errc::kPermissionDenied) : problem_name(Errc::kIo));
      continue;
    }
    dirs_.push_back(Directory{p, fd});
    list_directory(dirs_.size() - 1);
  }
  std::sort(candidates_.begin(), candidates_.end(), [](const Candidate &a, const Candidate &b) {
    return std::tie(a.dir, a.name) < std::tie(b.dir, b.name);
  });
  if (want_journal) {
    auto j = Journal::open(spec);
    if (!j) {
      err_ << "ctl-query: " << printable(j.error().message) << '\n';
      return kExitNoDirectory;
    }
    journal_ = std::move(*j);
    journal_local_ = spec.kind == JournalSpec::Kind::kLocal;
    if (const auto unreadable = unreadable_journal_files(spec); !unreadable.empty())
      problems_.report(std::to_string(unreadable.size()) +
                           (unreadable.size() == 1 ? " journal file cannot be read (" : " journal files cannot be read (") +
                           printable(unreadable.front()) + (unreadable.size() > 1 ? ", ..." : "") +
                           "); their timeline entries were not searched (root and the groups systemd-journal and "
                           "adm read them; each user reads its own user-UID.journal, and system.journal holds the "
                           "entries of root's and system users' crashes, and of crashes that were not dumpable "
                           "for their user, such as setuid programs': which of these they are cannot be told)",
                       problem_name(Errc::kPermissionDenied));
  }
  return std::nullopt;
}

void Query::list_directory(std::size_t dir) {
  const Directory &d = dirs_[dir];
  int dup_fd = ::dup(d.fd);
  DIR *listing = dup_fd >= 0 ? ::fdopendir(dup_fd) : nullptr;
  if (!listing) {
    if (dup_fd >= 0) ::close(dup_fd);
    problems_.report(d.path + ": cannot list the directory: " + std::strerror(errno),
                     problem_name(Errc::kIo));
    return;
  }
  while (struct dirent *de = ::readdir(listing)) {
    std::string_view n = de->d_name;
    if (!is_timeline_file_name(n)) continue;
    candidates_.push_back(Candidate{dir, std::string(n), parse_timeline_name(n), std::nullopt});
  }
  ::closedir(listing);
}

std::optional<int> Query::resolve_boot() {
  if (!o_.boot) return std::nullopt;
  auto b = parse_boot(*o_.boot);
  if (!b) {
    err_ << "ctl-query: " << b.error().message << '\n';
    return kExitUsage;
  }
  if (!b->id.empty() && b->offset == 0) {
    boot_id_ = b->id;
    return std::nullopt;
  }
  if (b->id.empty() && b->offset == 0 && (!journal_ || journal_local_)) {
    sd_id128_t id;
    if (const int r = sd_id128_get_boot(&id); r < 0) {
      err_ << "ctl-query: --boot: cannot read this machine's boot id: " << std::strerror(-r) << '\n';
      return kExitUsage;
    }
    char text[SD_ID128_STRING_MAX];
    boot_id_ = sd_id128_to_string(id, text);
    return std::nullopt;
  }
  std::vector<std::string> boots;
  if (journal_) {
    auto list = journal_->boots();
    if (!list) {
      err_ << "ctl-query: " << printable(list.error().message) << '\n';
      return kExitIncomplete;
    }
    boots = std::move(*list);
  } else {
    std::map<std::string, std::uint64_t> first;
    for (const auto &c : candidates_)
      if (c.parsed) {
        auto [it, fresh] = first.try_emplace(c.parsed->boot_id, c.parsed->usec);
        if (!fresh) it->second = std::min(it->second, c.parsed->usec);
      }
    std::vector<std::pair<std::uint64_t, std::string>> dated;
    for (const auto &[id, t] : first) dated.emplace_back(t, id);
    std::sort(dated.begin(), dated.end());
    for (auto &[t, id] : dated) boots.push_back(id);
  }
  long long at = 0;
  if (!b->id.empty()) {
    const auto it = std::find(boots.begin(), boots.end(), b->id);
    at = it == boots.end() ? -1 : (it - boots.begin()) + b->offset;
    if (it == boots.end()) at = static_cast<long long>(boots.size());  // out of range below
  } else if (b->offset > 0) {
    at = b->offset - 1;
  } else {
    at = static_cast<long long>(boots.size()) - 1 + b->offset;
  }
  if (at < 0 || at >= static_cast<long long>(boots.size())) {
    err_ << "ctl-query: --boot=" << printable(*o_.boot) << ": no such boot (" << boots.size()
         << (boots.size() == 1 ? " boot" : " boots") << " in what is read)\n";
    return kExitNoMatch;
  }
  boot_id_ = boots[static_cast<std::size_t>(at)];
  return std::nullopt;
}

std::optional<int> Query::scan_journal() {
  std::vector<MatchGroup> residual;
  JournalTerm base;
  bool impossible = false;
  for (const auto &g : matches_.groups()) {
    if (auto f = journal_field(g.field)) {
      base.emplace_back(*f, g.values);
    } else {
      residual.push_back(g);
    }
  }
  if (boot_id_) {
    bool merged = false;
    for (auto &[f, values] : base)
      if (f == jf::kBootId) {
        /* A _BOOT_ID match and --boot must both hold. */
        impossible = std::find(values.begin(), values.end(), *boot_id_) == values.end();
        values = {*boot_id_};
        merged = true;
      }
    if (!merged) base.emplace_back(std::string(jf::kBootId), std::vector<std::string>{*boot_id_});
  }
  residual_ = MatchSet::of(std::move(residual));
  if (!journal_ || impossible) return std::nullopt;
  std::vector<JournalTerm> terms;
  if (o_.command == Command::kEvents && o_.event_filter.name) {
    JournalTerm named = base, incomplete = base;
    named.emplace_back(std::string(jf::kEventName), std::vector<std::string>{*o_.event_filter.name});
    incomplete.emplace_back(std::string(jf::kEventNamesComplete), std::vector<std::string>{"0"});
    terms = {named, incomplete};
  } else {
    terms = {base};
    /* The notice an older core-timelined logged with this MESSAGE_ID
     * (no document, no COREDUMP_* fields) names the crash by
     * CORE_TIMELINE_PID, _EXE and _UID: a match on only those fields
     * finds it too. */
    static const std::map<std::string, std::string> notice{{"COREDUMP_PID", "CORE_TIMELINE_PID"},
                                                           {"COREDUMP_EXE", "CORE_TIMELINE_EXE"},
                                                           {"COREDUMP_UID", "CORE_TIMELINE_UID"}};
    if (!base.empty() && std::all_of(base.begin(), base.end(), [](const auto &g) { return notice.count(g.first); })) {
      JournalTerm old = base;
      for (auto &g : old) g.first = notice.at(g.first);
      terms.push_back(std::move(old));
    }
  }
  /* A bare PID is the host's or the namespace's pid (match.h): each
   * term again with CORE_TIMELINE_NAMESPACE_PID for COREDUMP_PID. */
  const bool either_pid = std::any_of(matches_.groups().begin(), matches_.groups().end(), [](const MatchGroup &g) {
    return g.field == "COREDUMP_PID" && g.either_pid;
  });
  if (either_pid) {
    const std::size_t n = terms.size();
    for (std::size_t i = 0; i < n; ++i) {
      JournalTerm ns = terms[i];
      bool has = false;
      for (auto &g : ns)
        if (g.first == "COREDUMP_PID") {
          g.first = std::string(jf::kNamespacePid);
          has = true;
        }
      if (has) terms.push_back(std::move(ns));
    }
  }
  const bool rows_now = !entry_needs_document();
  static const std::size_t events = summary_field(jf::kEvents), timeline = summary_field(jf::kTimelinePath);
  auto scanned = journal_->scan(terms, [&](JournalEntry &&e) {
    if (!in_range(entry_time(e))) return;
    if (e.unverified) {
      ++unverified_;
      if (!o_.unverified) return;
    }
    /* The older notice (no document, no summary) is read from the
     * file it names, so that its row says what the file says. */
    const bool notice = !e.has_document && e.value(events).empty() && !e.value(timeline).empty();
    if (rows_now && !notice && !stale_last_event(e)) {
      /* Its row now, and not the entry: show reads the newest row's
       * entry again (document_of()). */
      entry_rows_.push_back(std::make_unique<Row>());
      fill_row_of_entry(e, o_.command == Command::kGroup, entry_rows_.back().get());
      entries_.emplace_back(nullptr);  // the row has its cursor (document_of())
    } else {
      entry_rows_.emplace_back(nullptr);
      entries_.push_back(std::make_unique<JournalEntry>(std::move(e)));
    }
  });
  if (!scanned) {
    problems_.report(scanned.error().message, problem_name(Errc::kIo));
    return std::nullopt;
  }
  untrusted_ = *scanned;
  candidates_.reserve(candidates_.size() + entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) candidates_.push_back(Candidate{0, {}, std::nullopt, i});
  return std::nullopt;
}

bool Query::in_range(std::uint64_t usec) const {
  const auto t = static_cast<std::int64_t>(std::min<std::uint64_t>(usec, INT64_MAX));
  return (!o_.since_usec || t >= *o_.since_usec) && (!o_.until_usec || t <= *o_.until_usec);
}

NamespacePidHint Query::namespace_pid_hint(const Directory &d, const std::string &name) {
  using Kind = NamespacePidHint::Kind;
  char buf[32];
  const std::string path = d.path + "/" + name;
  const ssize_t n = ::lgetxattr(path.c_str(), core_timeline::document::kNamespacePidXattr, buf, sizeof buf);
  if (n >= 0) {
    const std::string v(buf, static_cast<std::size_t>(n));
    return reader::parse_unsigned(v) ? NamespacePidHint{Kind::kPid, v} : NamespacePidHint{Kind::kUnknown, {}};
  }
  if (errno == ENODATA || errno == EACCES || errno == EPERM || errno == ENOENT) return {};
  return {Kind::kUnknown, {}};
}

}  // namespace core_timeline::ctl_query
