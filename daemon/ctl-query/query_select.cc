/* SPDX-License-Identifier: MIT */
/* Query's selection: the candidates by name, the documents read, each
 * made a row, the rows matched and ordered (query_steps.h). */
#include "compact_timeline.h"
#include "query_steps.h"

#include <bit>
#include <unordered_map>

#include "core_timeline/document/status.h"

namespace core_timeline::ctl_query {

namespace {

std::string string_of(const Timeline &t, const char *field, const std::string &fallback_path = {}) {
  if (const std::string *f = t.field(field)) return *f;
  if (!fallback_path.empty()) {
    const json *v = t.lookup(fallback_path);
    if (v && !v->is_null() && !v->is_structured()) return v->is_string() ? v->get<std::string>() : scalar_text(v);
  }
  return {};
}

Row make_row(Timeline &&t, std::vector<json> &&events) {
  Row r;
  r.path = std::move(t.path);
  r.time_usec = t.time_usec;
  r.realtime_usec = t.realtime_usec;
  r.pid = string_of(t, "COREDUMP_PID", key::dotted({key::process, key::pid}));
  r.uid = string_of(t, "COREDUMP_UID");
  r.gid = string_of(t, "COREDUMP_GID");
  r.signal = string_of(t, "COREDUMP_SIGNAL", key::dotted({key::crash, key::signal}));
  r.signal_name = string_of(t, "COREDUMP_SIGNAL_NAME", key::dotted({key::crash, key::signal_name}));
  r.exe = string_of(t, "COREDUMP_EXE", key::dotted({key::process, key::exe}));
  r.comm = string_of(t, "COREDUMP_COMM", key::dotted({key::process, key::comm}));
  r.status = t.status();
  if (auto own = namespace_pid(t)) r.own_pid = *own;
  r.host_pid = string_of(t, "COREDUMP_PID", key::dotted({key::pids, key::host_pid}));
  if (const json *ids = t.lookup(key::pids); ids && ids->is_object()) {
    if (const auto n = ids->find(key::namespaced); n != ids->end() && n->is_boolean()) r.namespaced = n->get<bool>();
  } else if (!r.own_pid.empty() && !r.pid.empty() && r.own_pid != r.pid) {
    r.namespaced = true;  // a document from before "pids": the core's pid is not the host's
  }
  if (const json *windows = t.lookup(key::windows); windows != nullptr && windows->is_array())
    for (const auto &w : *windows) {
      const auto says = w.find(key::says);
      const auto lost = [&](const char *k) {
        const auto it = w.find(k);
        return it != w.end() && it->is_number_unsigned() && it->get<std::uint64_t>() > 0;
      };
      if (says != w.end() && says->is_string() && (lost(key::overwritten) || lost(key::dropped)))
        r.lossy_windows.push_back(says->get<std::string>());
    }
  const json *reason = t.lookup(key::reason);
  if (reason && reason->is_string()) r.reason = reason->get<std::string>();
  r.boot_id = string_of(t, "_BOOT_ID", "coredump.boot_id");
  r.host = string_of(t, "_HOSTNAME");
  r.machine = string_of(t, "_MACHINE_ID");
  if (const json *b = t.lookup(key::dotted({key::coredump, key::boot_id})); b && b->is_string()) r.boot_id = b->get<std::string>();
  if (const json *c = t.lookup(key::dotted({key::coredump, key::journal_cursor})); c && c->is_string()) r.cursor = c->get<std::string>();
  r.has_events = t.has_events;
  r.event_count = t.event_count;
  r.last_event = std::move(t.last_event);
  r.events = std::move(events);
  r.group = group_facts_of(t);
  return r;
}

/* The first of the two that is not empty, else "". */
const std::string &first_of(const JournalEntry &e, std::size_t field, std::size_t otherwise) {
  const std::string &v = e.value(field);
  return v.empty() ? e.value(otherwise) : v;
}

/* The index in kSummaryFields of each field a row of an entry is made of,
 * found once: row_of_entry() runs for each of 100,000 entries. */
struct RowFields {
  const std::size_t path = summary_field(jf::kTimelinePath), pid = summary_field("COREDUMP_PID"),
                    notice_pid = summary_field("CORE_TIMELINE_PID"), uid = summary_field("COREDUMP_UID"),
                    notice_uid = summary_field("CORE_TIMELINE_UID"), gid = summary_field("COREDUMP_GID"),
                    signal = summary_field("COREDUMP_SIGNAL"), timeline_signal = summary_field(jf::kSignal),
                    signal_name = summary_field("COREDUMP_SIGNAL_NAME"), exe = summary_field("COREDUMP_EXE"),
                    notice_exe = summary_field("CORE_TIMELINE_EXE"), comm = summary_field("COREDUMP_COMM"),
                    status = summary_field(jf::kStatus), namespace_pid = summary_field(jf::kNamespacePid),
                    reason = summary_field("CORE_TIMELINE_REASON"), boot_id = summary_field(jf::kBootId),
                    sender_boot_id = summary_field("_BOOT_ID"), events = summary_field(jf::kEvents),
                    last_event = summary_field(jf::kLastEvent), host = summary_field("_HOSTNAME"),
                    machine = summary_field("_MACHINE_ID"), cut = summary_field(jf::kDocumentCut),
                    group = summary_field(jf::kGroup), timestamp = summary_field("COREDUMP_TIMESTAMP");
};

const RowFields &row_fields() {
  static const RowFields fields;
  return fields;
}

}  // namespace

/* The crash time of a timeline entry: its COREDUMP_TIMESTAMP, else the
 * entry's own time (the notice core-timelined logged before the entry
 * carried the document has no COREDUMP_TIMESTAMP). */
std::uint64_t entry_time(const JournalEntry &e) {
  if (auto t = reader::parse_unsigned(e.value(row_fields().timestamp))) return *t;
  return e.realtime_usec;
}

Row row_of_entry(const JournalEntry &e, bool whole_group) {
  Row r;
  fill_row_of_entry(e, whole_group, &r);
  return r;
}

void fill_row_of_entry(const JournalEntry &e, bool whole_group, Row *row) {
  const RowFields &f = row_fields();
  Row &r = *row;
  r.path = e.value(f.path);
  r.time_usec = entry_time(e);
  r.realtime_usec = e.realtime_usec;
  r.pid = first_of(e, f.pid, f.notice_pid);
  r.uid = first_of(e, f.uid, f.notice_uid);
  r.gid = e.value(f.gid);
  r.signal = first_of(e, f.signal, f.timeline_signal);
  r.signal_name = e.value(f.signal_name);
  r.exe = first_of(e, f.exe, f.notice_exe);
  r.comm = e.value(f.comm);
  r.status = e.value(f.status);
  r.own_pid = e.value(f.namespace_pid);  // only when namespaced (journal_entry.h)
  r.host_pid = e.value(f.pid);
  if (!r.own_pid.empty()) r.namespaced = true;
  r.reason = e.value(f.reason);
  r.boot_id = first_of(e, f.boot_id, f.sender_boot_id);
  if (auto n = reader::parse_unsigned(e.value(f.events))) {
    r.has_events = true;
    r.event_count = static_cast<std::size_t>(*n);
  }
  r.last_event_raw = e.value(f.last_event);
  r.host = e.value(f.host);
  r.machine = e.value(f.machine);
  r.from_journal = true;
  r.entry_cursor = e.cursor;
  r.cut = e.value(f.cut) == "1";
  r.user_vouched = e.user_vouched;
  r.unverified = e.unverified;
  if (whole_group) r.group = group_facts_of(e);
  else r.group.id = e.value(f.group);
}

namespace {

/* The same crash, whichever source it came from: boot, pid, crash time;
 * and its machine (same_machine()).  Views of the row's strings. */
struct CrashKey {
  std::string_view boot_id, pid;
  std::uint64_t time_usec;
  bool operator==(const CrashKey &) const = default;
};
CrashKey crash_key(const Row &r) { return {r.boot_id, r.pid, r.time_usec}; }
std::size_t hash_of(const CrashKey &k) {
  const std::hash<std::string_view> h;
  return h(k.boot_id) ^ (h(k.pid) * 31) ^ (std::hash<std::uint64_t>()(k.time_usec) * 131);
}

/* The last group made of each crash_key() (order_rows()): an
 * open-addressing table of group numbers, sized once for all the rows
 * (no node allocated for each). */
class LastGroupOf {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;
  explicit LastGroupOf(std::size_t rows) : slots_(std::bit_ceil(std::max<std::size_t>(rows * 2, 16)), kNone) {}
  /* The entry of `key`: its last group, or kNone.  key_of(g) is the key
   * of group g. */
  template <class KeyOf>
  std::size_t &at(const CrashKey &key, const KeyOf &key_of) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t h = hash_of(key) & mask;; h = (h + 1) & mask)
      if (slots_[h] == kNone || key_of(slots_[h]) == key) return slots_[h];
  }

 private:
  std::vector<std::size_t> slots_;
};

/* Two rows of one crash_key() are of one crash unless both name their
 * machine (_MACHINE_ID; else _HOSTNAME) and the two differ: containers of
 * one kernel share its boot id, and an entry from another host with the
 * same boot id, pid and time is not this crash. */
bool same_machine(const Row &a, const Row &b) {
  if (!a.machine.empty() && !b.machine.empty()) return a.machine == b.machine;
  if (!a.host.empty() && !b.host.empty()) return a.host == b.host;
  return true;
}

/* A document that says only that its crash's core was gone: a daemon that
 * did the entry again after the core (and the timeline beside it) had been
 * removed stores this, and it must not hide the timeline stored before. */
bool only_says_core_gone(const Row &r) {
  return core_timeline::document::parse_status(r.status) == core_timeline::document::Status::kCoreMissing;
}

/* Of two documents of one crash, whether `a` is the one to keep over `b`
 * (`a_later`: `a` comes later in the reading order, journal order for
 * entries): not one that only says the core was gone, over one that says
 * more; core-timelined's over the crashed user's own word; a file (never
 * cut) over an entry; one with a group signature over one without; the
 * later. */
bool preferred(const Row &a, const Row &b, bool a_later) {
  const auto rank = [](const Row &r) {
    return std::make_tuple(!only_says_core_gone(r), !r.user_vouched, !r.from_journal, !r.group.id.empty());
  };
  if (rank(a) != rank(b)) return rank(a) > rank(b);
  return a_later;
}

/* Why `kept` was kept over `other` (order_rows(), for show's note). */
std::string why_kept(const Row &kept, const Row &other) {
  if (only_says_core_gone(other) && !only_says_core_gone(kept))
    return "the " + other.status + " one only says the core was gone (a daemon did the crash again after its core "
           "was removed), and this one says more";
  if (other.user_vouched && !kept.user_vouched) return "another is only the crashed user's own word";
  if (!kept.from_journal && other.from_journal)
    return "a timeline file holds the whole document (an entry may hold part of it)";
  if (!kept.group.id.empty() && other.group.id.empty())
    return "it has a group signature (the other was written before grouping)";
  return "it is the last logged";
}

bool u64_member_is(const json &e, const char *key, std::uint64_t want) {
  auto it = e.find(key);
  if (it == e.end()) return false;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>() == want;
  if (it->is_number_integer()) return it->get<std::int64_t>() >= 0 && static_cast<std::uint64_t>(it->get<std::int64_t>()) == want;
  return false;
}

}  // namespace

bool EventFilter::matches(const json &e) const {
  if (!e.is_object()) return false;
  if (name) {
    auto it = e.find(key::name);
    if (it == e.end() || !it->is_string() || *it != *name) return false;
  }
  if (kind) {
    auto it = e.find(key::kind);
    if (it == e.end() || !it->is_string() || *it != *kind) return false;
  }
  if (id && !u64_member_is(e, key::id, *id)) return false;
  if (tid && !u64_member_is(e, key::tid, *tid)) return false;
  if (arg) {
    auto it = e.find(key::args);
    if (it == e.end() || !it->is_array()) return false;
    bool any = false;
    for (const auto &a : *it)
      if ((a.is_number_unsigned() && a.get<std::uint64_t>() == *arg) ||
          (a.is_number_integer() && a.get<std::int64_t>() >= 0 &&
           static_cast<std::uint64_t>(a.get<std::int64_t>()) == *arg))
        any = true;
    if (!any) return false;
  }
  return true;
}

void Query::select_by_name() {
  todo_.reserve(candidates_.size());
  for (const auto &c : candidates_) {
    if (c.entry) {
      todo_.push_back(&c);
      continue;
    }
    if (c.parsed && boot_id_ && c.parsed->boot_id != *boot_id_) continue;
    const auto hint = [this, &c] { return namespace_pid_hint(dirs_[c.dir], c.name); };
    if (!c.parsed || (matches_.may_match(*c.parsed, hint) && in_range(c.parsed->usec))) todo_.push_back(&c);
  }
}

bool Query::entry_needs_document() const {
  return o_.command == Command::kEvents || !residual_.empty() || (o_.command == Command::kList && o_.all);
}

bool Query::stale_last_event(const JournalEntry &e) const {
  return o_.command == Command::kList && !o_.all && e.has_document &&
         core_timeline::document::is_bookkeeping_kind(e.value(row_fields().last_event));
}

void Query::parallel(const std::vector<std::size_t> &items, const std::function<void(std::size_t)> &fn) {
  std::atomic<std::size_t> next{0};
  auto worker = [&]() {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= items.size()) return;
      fn(items[i]);
    }
  };
  unsigned jobs = o_.jobs;
  if (jobs == 0) jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  if (items.size() < 64) jobs = 1;
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto &th : threads) th.join();
}

void Query::read_selected() {
  for (const auto &g : matches_.groups()) match_fields_.push_back(g.field);
  slots_.resize(todo_.size());
  field_seen_ = std::vector<std::atomic<bool>>(matches_.groups().size());
  std::vector<std::size_t> files, entries;
  for (std::size_t i = 0; i < todo_.size(); ++i) (todo_[i]->entry ? entries : files).push_back(i);
  if (!entries.empty())
    for (std::size_t g = 0; g < matches_.groups().size(); ++g)
      if (journal_field(matches_.groups()[g].field)) field_seen_[g].store(true);
  {
    std::vector<std::size_t> to_read;  // the entries whose documents are needed
    for (std::size_t i : entries) {
      auto &row = entry_rows_[*todo_[i]->entry];
      if (row) slots_[i].row = std::move(row);
      else to_read.push_back(i);
    }
    std::vector<std::unique_ptr<Row>>().swap(entry_rows_);
    entries = std::move(to_read);
    constexpr std::size_t kChunk = 512;
    docs_.resize(todo_.size());
    for (std::size_t from = 0; from < entries.size(); from += kChunk) {
      std::vector<std::size_t> chunk(entries.begin() + static_cast<std::ptrdiff_t>(from),
                                     entries.begin() + static_cast<std::ptrdiff_t>(std::min(from + kChunk, entries.size())));
      for (std::size_t i : chunk) {
        const JournalEntry &e = *entries_[*todo_[i]->entry];
        if (!e.has_document) continue;
        auto d = journal_->document(e, o_.max_bytes);
        if (!d) {
          slots_[i].error = Error{d.error().code == Errc::kInvalidArgument ? Errc::kTooLarge : Errc::kIo,
                                      d.error().message};
          continue;
        }
        docs_[i] = std::move(*d);
      }
      parallel(chunk, [&](std::size_t i) { read_one(i); });
      for (std::size_t i : chunk) docs_[i].reset();
    }
  }
  const bool printed_whole = o_.command == Command::kShow || o_.command == Command::kInfo || o_.command == Command::kExport;
  if (printed_whole && files.size() == 1 && entries.empty()) lone_ = std::make_shared<CompactCache>();
  parallel(files, [&](std::size_t i) { read_one(i); });
}

ReadRequest Query::request_for(Found &found) const {
  ReadRequest req;
  req.max_bytes = o_.max_bytes;
  req.fields = match_fields_;
  req.fields.push_back("_HOSTNAME");
  req.fields.push_back("_MACHINE_ID");
  req.paths = match_fields_;
  req.paths.push_back(core_timeline::document::group_key::group);  // group, and matches on its ids
  req.bookkeeping = o_.all;
  req.last_event = o_.command == Command::kList;  // the LAST EVENT column
  req.compact_cache = lone_;
  if (o_.command == Command::kEvents) {
    req.paths.push_back(key::windows);
    req.event_name = o_.event_filter.name;
    req.event_kind = o_.event_filter.kind;
    if (o_.event_filter.tid)
      req.on_process = [&found](const json &p) {
        if (const auto it = p.find(key::pid); it != p.end() && it->is_number_unsigned())
          found.leader = it->get<std::uint64_t>();
      };
    req.on_event = [&found, this](const json &e, std::size_t) {
      const EventFilter &f = o_.event_filter;
      bool host = false;
      if (!f.matches(e)) {
        if (!f.tid || !found.leader || *found.leader == *f.tid) return;
        EventFilter leader = f;
        leader.tid = found.leader;
        if (!leader.matches(e)) return;
        host = true;
      }
      found.events.push_back(e);
      found.via_host.push_back(host);
      /* Bookkeeping is left out unless --all, or --name or --kind asked
       * for it (they matched it). */
      found.bookkeeping.push_back(!o_.all && !f.name && !f.kind && core_timeline::document::is_bookkeeping_event(e));
    };
  }
  return req;
}

std::vector<json> Query::keep_host_matches(Found &&found, const Row &row, std::size_t *bookkeeping) const {
  const bool leader_is_host = found.leader && o_.event_filter.tid &&
                              host_tid(row, *found.leader) == o_.event_filter.tid;
  std::vector<json> kept;
  for (std::size_t i = 0; i < found.events.size(); ++i) {
    if (found.via_host[i] && !leader_is_host) continue;
    if (found.bookkeeping[i]) {
      ++*bookkeeping;
      continue;
    }
    kept.push_back(std::move(found.events[i]));
  }
  return kept;
}

void Query::read_one(std::size_t i) {
  const Candidate &c = *todo_[i];
  Slot &slot = slots_[i];
  if (slot.error) return;  // its document could not be fetched
  try {
    Found found;
    const ReadRequest req = request_for(found);
    const JournalEntry *entry = c.entry ? entries_[*c.entry].get() : nullptr;
    std::optional<Result<Timeline>> r;
    if (!entry) {
      r = read_timeline(dirs_[c.dir].fd, dirs_[c.dir].path, c.name, req);
    } else if (docs_[i]) {
      r = parse_timeline(*docs_[i], entry_label(*entry), req);
    } else if (const std::string &path = entry->get(jf::kTimelinePath); !path.empty()) {
      /* No document in the entry (core-timelined's notice before the
       * entry carried it): the file the entry names. */
      r = read_timeline_path(path, req);
    } else {
      slot.error = Error{Errc::kBadData, entry_label(*entry) + ": carries no document and names no timeline file"};
      return;
    }
    if (!*r) {
      slot.error = r->error();
      return;
    }
    Timeline &t = r->value();
    documents_read_.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t g = 0; g < field_seen_.size(); ++g)
      if (!field_seen_[g].load(std::memory_order_relaxed) && matches_.has_field(t, g))
        field_seen_[g].store(true, std::memory_order_relaxed);
    if (!in_range(t.time_usec)) return;
    if (entry) {
      /* The index decided its own groups; the document the rest. */
      if (!residual_.matches(t)) return;
    } else {
      if (!matches_.matches(t)) return;
      if (boot_id_) {
        const json *b = t.lookup(key::dotted({key::coredump, key::boot_id}));
        const std::string *f = t.field("_BOOT_ID");
        const std::string boot = b && b->is_string() ? b->get<std::string>() : (f ? *f : std::string());
        if (boot != *boot_id_) return;
      }
    }
    /* events: a timeline searched without a match stays a row (with no
     * events), so what it lost is still said. */
    Row row = make_row(std::move(t), {});
    row.events = keep_host_matches(std::move(found), row, &row.bookkeeping_left_out);
    if (entry) {
      const Row summary = row_of_entry(*entry, false);
      row.path = summary.path;
      row.from_journal = true;
      row.entry_cursor = summary.entry_cursor;
      row.cut = summary.cut;
      row.user_vouched = summary.user_vouched;
      row.unverified = summary.unverified;
      if (!summary.host.empty()) row.host = summary.host;
      if (row.boot_id.empty()) row.boot_id = summary.boot_id;
    }
    slot.row = std::make_unique<Row>(std::move(row));
  } catch (const std::exception &e) {
    slot.error = Error{Errc::kIo, (c.entry ? entry_label(*entries_[*c.entry])
                                                       : dirs_[c.dir].path + "/" + c.name) +
                                                  ": " + e.what()};
  }
}

std::string Query::entry_label(const JournalEntry &e) {
  const std::string &path = e.get(jf::kTimelinePath);
  return "the journal entry for " + (path.empty() ? "cursor " + e.cursor : path);
}

std::string Query::label_of(const Row &r) {
  if (!r.from_journal) return r.path;
  return "the journal entry for " + (r.path.empty() ? "cursor " + r.entry_cursor : r.path);
}

void Query::note_fields_no_timeline_has() const {
  if (documents_read_.load() == 0 || o_.quiet) return;
  for (std::size_t g = 0; g < field_seen_.size(); ++g)
    if (!field_seen_[g].load())
      err_ << "ctl-query: no timeline has a field " << printable(matches_.groups()[g].field) << '\n';
}

void Query::report_read_problems() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].error) continue;
    const Error &e = *slots_[i].error;
    if (e.code == Errc::kNotFound) continue;
    std::string msg = e.message;
    std::string kind(problem_name(e.code));
    const Candidate &c = *todo_[i];
    if (e.code == Errc::kPermissionDenied && !c.entry) {
      /* Why, as far as the name and the file's owner and ACL show
       * (refusal.h): another user's, or a crash of this user's that
       * was not dumpable for it. */
      const Directory &d = dirs_[c.dir];
      const Refusal why = refusal(static_cast<std::uint32_t>(::geteuid()), c.parsed, file_facts(d.fd, d.path, c.name));
      msg += " (" + why.why + ")";
      kind = why.kind;
    }
    problems_.report(msg, kind);
  }
}

void Query::order_rows() {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].row) order.push_back(i);
  /* Files first, then entries in journal order: "later" is the reading
   * order. */
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return !slots_[i].row->from_journal; });
  /* The rows of one crash: the first, the others (rarely any), and the
   * group made before it with the same crash_key() (another machine's). */
  constexpr std::size_t kNoGroup = LastGroupOf::kNone;
  struct Group {
    std::size_t kept, first;
    std::vector<std::size_t> more;
    std::size_t same_key_before;
  };
  std::vector<Group> groups;
  groups.reserve(order.size());
  LastGroupOf by_key(order.size());
  const auto key_of = [&](std::size_t g) { return crash_key(*slots_[groups[g].first].row); };
  std::unordered_map<std::string_view, std::size_t> by_file;  /* a file's path -> its group */
  for (std::size_t i : order) {
    const Row &r = *slots_[i].row;
    std::optional<std::size_t> g;
    std::size_t &last = by_key.at(crash_key(r), key_of);
    /* The groups of this key, the last made first: the last that is of
     * the same machine. */
    for (std::size_t k = last; k != kNoGroup && !g; k = groups[k].same_key_before)
      if (same_machine(*slots_[groups[k].kept].row, r)) g = k;
    if (!g && r.from_journal && !r.path.empty() && !by_file.empty())
      if (const auto f = by_file.find(r.path); f != by_file.end()) g = f->second;
    if (!g) {
      groups.push_back({i, i, {}, last});
      last = groups.size() - 1;
      if (!r.from_journal) by_file[r.path] = groups.size() - 1;
      continue;
    }
    Group &grp = groups[*g];
    grp.more.push_back(i);
    if (preferred(r, *slots_[grp.kept].row, true)) grp.kept = i;
  }
  order.clear();
  for (const Group &grp : groups) {
    order.push_back(grp.kept);
    if (grp.more.empty()) continue;
    Row &kept = *slots_[grp.kept].row;
    /* The reason given is against a core_missing one, if one was left
     * out (the reason that matters most), else against the first. */
    std::vector<std::size_t> all{grp.first};
    all.insert(all.end(), grp.more.begin(), grp.more.end());
    const Row *other = nullptr;
    for (std::size_t i : all) {
      if (i == grp.kept) continue;
      const Row &r = *slots_[i].row;
      if (!other || (only_says_core_gone(r) && !only_says_core_gone(*other))) other = &r;
    }
    kept.chosen = std::to_string(all.size()) + " documents of this crash; this one (" + kept.status + ", " +
                  label_of(kept) + ") was chosen: " + why_kept(kept, *other);
  }
  /* By crash time, the entry's time, the path and the cursor: the times
   * beside the index, so that most comparisons do not reach the rows. */
  struct Key {
    std::uint64_t time_usec, realtime_usec;
    std::size_t slot;
  };
  std::vector<Key> keys;
  keys.reserve(order.size());
  for (std::size_t i : order) keys.push_back({slots_[i].row->time_usec, slots_[i].row->realtime_usec, i});
  std::sort(keys.begin(), keys.end(), [&](const Key &a, const Key &b) {
    if (a.time_usec != b.time_usec) return a.time_usec < b.time_usec;
    if (a.realtime_usec != b.realtime_usec) return a.realtime_usec < b.realtime_usec;
    const Row &x = *slots_[a.slot].row, &y = *slots_[b.slot].row;
    return std::tie(x.path, x.entry_cursor) < std::tie(y.path, y.entry_cursor);
  });
  rows_.reserve(keys.size());
  row_candidates_.reserve(keys.size());
  for (const Key &k : keys) {
    rows_.push_back(&*slots_[k.slot].row);
    row_candidates_.push_back(todo_[k.slot]);
  }
}

Result<std::optional<std::string>> Query::document_of(const Candidate &c, const Row &row) {
  if (const auto &kept = entries_[*c.entry]) return journal_->document(*kept, o_.max_bytes);
  auto e = journal_->entry_at(row.entry_cursor);
  if (!e) return e.error();
  return journal_->document(*e, o_.max_bytes);
}

DocumentReader Query::reader_of(const Candidate &c, const Row &row, std::string *whole) {
  if (!c.entry) {
    const Directory &dir = dirs_[c.dir];
    *whole = dir.path + "/" + c.name;
    return [&dir, name = c.name, cache = lone_](const ReadRequest &req) {
      ReadRequest r = req;
      r.compact_cache = cache;
      return read_timeline(dir.fd, dir.path, name, r);
    };
  }
  *whole = row.path;  // the entry's CORE_TIMELINE_TIMELINE
  auto d = document_of(c, row);
  if (!d) {
    Error err{Errc::kIo, d.error().message};
    return [err](const ReadRequest &) -> Result<Timeline> { return err; };
  }
  if (*d) {
    auto bytes = std::make_shared<const std::string>(std::move(**d));
    return [bytes, label = label_of(row)](const ReadRequest &req) { return parse_timeline(*bytes, label, req); };
  }
  if (whole->empty()) {
    Error err{Errc::kBadData, label_of(row) + ": carries no document and names no timeline file"};
    return [err](const ReadRequest &) -> Result<Timeline> { return err; };
  }
  return [path = *whole](const ReadRequest &req) { return read_timeline_path(path, req); };
}

}  // namespace core_timeline::ctl_query
