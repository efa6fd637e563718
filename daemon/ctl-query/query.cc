/* SPDX-License-Identifier: MIT */
#include "query.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <systemd/sd-id128.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/document/ids.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/reader/fd.h"
#include "core_timeline/reader/number.h"
#include "journal.h"
#include "match.h"
#include "refusal.h"
#include "text.h"
#include "time_spec.h"

namespace core_timeline::ctlq {

using json = nlohmann::ordered_json;
namespace key = core_timeline::document::key;
namespace jf = core_timeline::document::journal;

namespace {

/* An open timeline directory. */
struct Directory {
  std::string path;
  int fd = -1;
};

/* A *.timeline.json file found in a directory, or (entry set) a timeline
 * entry found in the journal. */
struct Candidate {
  std::size_t dir = 0;
  std::string name;
  std::optional<TimelineName> parsed;
  std::optional<std::size_t> entry;  /* index in Query::entries_ */
};

/* Reads the document of one timeline (a file, or a journal entry's). */
using DocumentReader = std::function<Result<Timeline, ReadError>(const ReadRequest &)>;

/* What is printed of one matching timeline. */
struct Row {
  std::string path;
  std::uint64_t time_usec = 0, realtime_usec = 0;
  std::string pid, uid, gid, signal, signal_name, exe, comm, status, reason, boot_id, cursor;
  std::string host;          /* _HOSTNAME: the entry's, or the stored coredump entry's */
  std::string machine;       /* _MACHINE_ID, likewise ("" when it has none) */
  /* When this row was chosen among several documents of its crash
   * (order_rows()): how many, and why this one; "" otherwise. */
  std::string chosen;
  /* The crash's pid in its own pid namespace (pids.pid, process.pid; the
   * entry's CORE_TIMELINE_NAMESPACE_PID): its leader's tid there. */
  std::string own_pid;
  std::optional<bool> namespaced; /* pids.namespaced; nullopt: cannot be told */
  std::string host_pid;           /* COREDUMP_PID alone (pid may fall back to process.pid) */
  bool from_journal = false; /* a journal entry (else a file) */
  std::string entry_cursor;  /* the timeline entry's own cursor */
  bool cut = false;          /* the entry's document is cut (CORE_TIMELINE_DOCUMENT_CUT=1) */
  bool user_vouched = false; /* only its crashed user vouches for the entry (journal.h) */
  bool unverified = false;   /* ... and nothing backs it (shown with --unverified) */
  /* An entry's CORE_TIMELINE_LAST_EVENT (the event's name), as read. */
  std::string last_event_raw;
  bool has_events = false;
  std::size_t event_count = 0;
  json last_event;
  std::vector<json> events;  /* the matching events (events command) */
  /* The matching bookkeeping events left out of `events` (not --all). */
  std::size_t bookkeeping_left_out = 0;
  /* The windows of the sources that lost events (events command): the
   * reader's own sentences (windows[].says), so an empty search is not
   * read as "it never happened". */
  std::vector<std::string> lossy_windows;
};

/* The result of reading one candidate. */
struct Slot {
  std::optional<Row> row;
  std::optional<ReadError> error;
};

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
  return r;
}

std::string or_dash(const std::string &s) { return s.empty() ? "-" : printable(s); }

const std::string &first_of(const JournalEntry &e, std::initializer_list<std::string_view> names) {
  for (const auto &n : names)
    if (const std::string &v = e.get(n); !v.empty()) return v;
  return e.get(*names.begin());
}

/* The crash time of a timeline entry: its COREDUMP_TIMESTAMP, else the
 * entry's own time (the notice core-timelined logged before the entry
 * carried the document has no COREDUMP_TIMESTAMP). */
std::uint64_t entry_time(const JournalEntry &e) {
  if (auto t = reader::parse_unsigned(e.get("COREDUMP_TIMESTAMP"))) return *t;
  return e.realtime_usec;
}

/* list's row of a timeline entry, from its summary fields alone. */
Row row_of_entry(const JournalEntry &e) {
  Row r;
  r.path = e.get(jf::kTimelinePath);
  r.time_usec = entry_time(e);
  r.realtime_usec = e.realtime_usec;
  r.pid = first_of(e, {"COREDUMP_PID", "CORE_TIMELINE_PID"});
  r.uid = first_of(e, {"COREDUMP_UID", "CORE_TIMELINE_UID"});
  r.gid = e.get("COREDUMP_GID");
  r.signal = first_of(e, {"COREDUMP_SIGNAL", jf::kSignal});
  r.signal_name = e.get("COREDUMP_SIGNAL_NAME");
  r.exe = first_of(e, {"COREDUMP_EXE", "CORE_TIMELINE_EXE"});
  r.comm = e.get("COREDUMP_COMM");
  r.status = e.get(jf::kStatus);
  r.own_pid = e.get(jf::kNamespacePid);  // only when namespaced (journal_entry.h)
  r.host_pid = e.get("COREDUMP_PID");
  if (!r.own_pid.empty()) r.namespaced = true;
  r.reason = e.get("CORE_TIMELINE_REASON");
  r.boot_id = first_of(e, {jf::kBootId, "_BOOT_ID"});
  if (auto n = reader::parse_unsigned(e.get(jf::kEvents))) {
    r.has_events = true;
    r.event_count = static_cast<std::size_t>(*n);
  }
  r.last_event_raw = e.get(jf::kLastEvent);
  r.host = e.get("_HOSTNAME");
  r.machine = e.get("_MACHINE_ID");
  r.from_journal = true;
  r.entry_cursor = e.cursor;
  r.cut = e.get(jf::kDocumentCut) == "1";
  r.user_vouched = e.user_vouched;
  r.unverified = e.unverified;
  return r;
}

/* A row's last event, one shape whichever source the row came from:
 * {"name": NAME}, or null when there is none.  NAME is the entry's
 * CORE_TIMELINE_LAST_EVENT (the event's name as the daemon writes it,
 * journal_entry.h; never parsed: a user may log any bytes there for its
 * own crashes), or the "name" of the event read from the document. */
json last_event_of(const Row &r) {
  if (!r.last_event_raw.empty()) return json{{key::name, r.last_event_raw}};
  if (!r.last_event.is_object()) return nullptr;
  const auto name = r.last_event.find(key::name);
  if (name == r.last_event.end() || !name->is_string()) return nullptr;
  return json{{key::name, *name}};
}

/* The same crash, whichever source it came from: boot, pid, crash time;
 * and its machine (same_machine()). */
std::string crash_key(const Row &r) { return r.boot_id + "/" + r.pid + "/" + std::to_string(r.time_usec); }

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
bool only_says_core_gone(const Row &r) { return r.status == "core_missing"; }

/* Of two documents of one crash, whether `a` is the one to keep over `b`
 * (`a_later`: `a` comes later in the reading order, journal order for
 * entries): not one that only says the core was gone, over one that says
 * more; core-timelined's over the crashed user's own word; a file (never
 * cut) over an entry; the later. */
bool preferred(const Row &a, const Row &b, bool a_later) {
  const auto rank = [](const Row &r) {
    return std::make_tuple(!only_says_core_gone(r), !r.user_vouched, !r.from_journal);
  };
  if (rank(a) != rank(b)) return rank(a) > rank(b);
  return a_later;
}

/* This machine's host name (gethostname(2)), or "" when it cannot be read. */
std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
}

/* Why `kept` was kept over `other` (order_rows(), for show's note). */
std::string why_kept(const Row &kept, const Row &other) {
  if (only_says_core_gone(other) && !only_says_core_gone(kept))
    return "the " + other.status + " one only says the core was gone (a daemon did the crash again after its core "
           "was removed), and this one says more";
  if (other.user_vouched && !kept.user_vouched) return "another is only the crashed user's own word";
  if (!kept.from_journal && other.from_journal)
    return "a timeline file holds the whole document (an entry may hold part of it)";
  return "it is the last logged";
}

json number_or_null(const std::string &s) {
  const auto v = reader::parse_unsigned(s);
  return v ? json(*v) : json(nullptr);
}

json string_or_null(const std::string &s) { return s.empty() ? json(nullptr) : json(s); }

/* The crash's pid in its own pid namespace when that is not the host's,
 * else "". */
std::string ns_pid_of(const Row &r) { return r.namespaced == true ? r.own_pid : std::string(); }

json bool_or_null(const std::optional<bool> &b) { return b ? json(*b) : json(nullptr); }

/* The host tid of the crash's thread `tid` (a namespace tid, as the core
 * and the ring give it): document::host_tid_of() on the row's ids. */
std::optional<std::uint64_t> host_tid(const Row &r, std::uint64_t tid) {
  core_timeline::document::ProcessIds ids;
  ids.host_pid = reader::parse_unsigned(r.host_pid);
  ids.pid = reader::parse_unsigned(r.own_pid);
  ids.namespaced = r.namespaced;
  return core_timeline::document::host_tid_of(ids, tid);
}

/* An event's tid, if it is a number. */
std::optional<std::uint64_t> tid_of(const json &e) {
  const auto it = e.find(key::tid);
  if (it == e.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

json host_tid_json(const Row &r, const json &e) {
  const auto tid = tid_of(e);
  const auto h = tid ? host_tid(r, *tid) : std::nullopt;
  return h ? json(*h) : json(nullptr);
}

std::string host_tid_text(const Row &r, const json &e) {
  const auto tid = tid_of(e);
  if (!tid) return "-";
  const auto h = host_tid(r, *tid);
  return h ? std::to_string(*h) : "?";
}

std::string dump_line(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/* One object of list or events: a line, or indented by 2 (--json=pretty). */
std::string dump_object(const json &j, const QueryOptions &o) {
  return o.json_pretty ? j.dump(2, ' ', false, json::error_handler_t::replace) : dump_line(j);
}

std::string event_name(const json &e) {
  auto it = e.find(key::name);
  return it != e.end() && it->is_string() ? printable(it->get_ref<const std::string &>()) : "?";
}

/* LAST EVENT: last_event_of()'s name, or "-". */
std::string last_event_text(const json &e) { return e.is_object() ? event_name(e) : "-"; }

/* An event's own wall-clock time ("time_ns"), to the microsecond; "?" when
 * the document could not place it in time. */
std::string event_time_text(const json &e) {
  const auto t = e.find(key::time_ns);
  if (t == e.end() || !t->is_number_integer() || t->get<std::int64_t>() < 0) return "?";
  return format_time_usec(t->get<std::int64_t>() / 1000);
}

std::string event_tid(const json &e) {
  auto it = e.find(key::tid);
  return it != e.end() ? scalar_text(&*it) : "-";
}

void print_list(std::ostream &out, const std::vector<const Row *> &rows, const QueryOptions &o) {
  if (o.json) {
    for (const Row *r : rows) {
      json j;
      j["time_usec"] = r->time_usec;
      j["realtime_usec"] = r->realtime_usec;
      j["pid"] = number_or_null(r->pid);
      j["namespace_pid"] = number_or_null(ns_pid_of(*r));
      j["namespaced"] = bool_or_null(r->namespaced);
      j["uid"] = number_or_null(r->uid);
      j["gid"] = number_or_null(r->gid);
      j["signal"] = number_or_null(r->signal);
      j["signal_name"] = string_or_null(r->signal_name);
      j["exe"] = string_or_null(r->exe);
      j["comm"] = string_or_null(r->comm);
      j["status"] = r->status;
      j["events"] = r->has_events ? json(r->event_count) : json(nullptr);
      j["last_event"] = last_event_of(*r);
      j["boot_id"] = string_or_null(r->boot_id);
      j["journal_cursor"] = string_or_null(r->cursor);
      j["file"] = string_or_null(r->path);
      j["host"] = string_or_null(r->host);
      j["source"] = r->from_journal ? "journal" : "file";
      j["entry_cursor"] = string_or_null(r->entry_cursor);
      j["cut"] = r->cut;
      j["unverified"] = r->unverified;
      out << dump_object(j, o) << '\n';
    }
    return;
  }
  /* The host only when there is more than one (a central journal). */
  std::set<std::string> hosts;
  bool with_ns = false;  // the NS PID column only when a crash was in a pid namespace
  for (const Row *r : rows) {
    hosts.insert(r->host);
    with_ns = with_ns || !ns_pid_of(*r).empty();
  }
  const bool with_host = hosts.size() > 1;
  std::vector<std::string> heads{"TIME", "PID", "UID", "SIG", "EXE", "STATUS", "EVENTS", "LAST EVENT"};
  std::vector<bool> right{false, true, true, false, false, false, true, false};
  if (with_ns) {
    heads.insert(heads.begin() + 2, "NS PID");
    right.insert(right.begin() + 2, true);
  }
  if (with_host) {
    heads.insert(heads.begin() + 1, "HOST");
    right.insert(right.begin() + 1, false);
  }
  std::vector<std::vector<std::string>> cells;
  cells.reserve(rows.size());
  for (const Row *r : rows) {
    cells.push_back({r->time_usec ? format_time(static_cast<std::int64_t>(r->time_usec)) : "-", or_dash(r->pid),
                     or_dash(r->uid), r->signal_name.empty() ? or_dash(r->signal) : printable(r->signal_name),
                     or_dash(r->exe) + (r->unverified ? " (unverified)" : ""), printable(r->status),
                     r->has_events ? std::to_string(r->event_count) : "-", last_event_text(last_event_of(*r))});
    if (with_ns) cells.back().insert(cells.back().begin() + 2, or_dash(ns_pid_of(*r)));
    if (with_host) cells.back().insert(cells.back().begin() + 1, or_dash(r->host));
  }
  print_table(out, heads, right, cells, !o.no_legend);
}

void print_events(std::ostream &out, const std::vector<std::pair<const Row *, const json *>> &lines,
                  const QueryOptions &o) {
  if (o.json) {
    for (const auto &[r, e] : lines) {
      json j;
      j["time_usec"] = r->time_usec;
      j["pid"] = number_or_null(r->pid);
      j["namespace_pid"] = number_or_null(ns_pid_of(*r));
      j["uid"] = number_or_null(r->uid);
      j["exe"] = string_or_null(r->exe);
      j["comm"] = string_or_null(r->comm);
      j["status"] = r->status;
      j["file"] = string_or_null(r->path);
      j["host"] = string_or_null(r->host);
      j["event"] = *e;
      j["host_tid"] = host_tid_json(*r, *e);
      out << dump_object(j, o) << '\n';
    }
    return;
  }
  /* HOST TID (and NS PID) only when a crash was in a pid namespace: TID
   * is then the namespace's, as the core and the ring give it. */
  bool with_ns = false;
  for (const auto &[r, e] : lines) with_ns = with_ns || !ns_pid_of(*r).empty();
  std::vector<std::vector<std::string>> cells;
  cells.reserve(lines.size());
  for (const auto &[r, e] : lines) {
    cells.push_back({event_time_text(*e), or_dash(r->pid),
                     or_dash(r->exe), event_tid(*e), event_name(*e), event_args_text(*e), location_text(*e)});
    if (with_ns) {
      cells.back().insert(cells.back().begin() + 4, host_tid_text(*r, *e));
      cells.back().insert(cells.back().begin() + 2, or_dash(ns_pid_of(*r)));
    }
  }
  if (with_ns)
    print_table(out, {"TIME", "PID", "NS PID", "EXE", "TID", "HOST TID", "EVENT", "ARGS", "LOCATION"},
                {false, true, true, false, true, true, false, false, false}, cells, !o.no_legend);
  else
    print_table(out, {"TIME", "PID", "EXE", "TID", "EVENT", "ARGS", "LOCATION"},
                {false, true, false, true, false, false, false}, cells, !o.no_legend);
}

/* A document cut to fit its journal entry says so in its top-level "cut"
 * object (docs/timeline-json.md, "cut": limit, document_bytes,
 * events_total, events_kept): say it, and where the whole one is
 * (`whole`: the file, with its host when that is not this one; "" when
 * the entry names none). */
void note_cut(std::ostream &err, const Timeline &t, const std::string &whole) {
  const json *cut = t.lookup("cut");
  if (!cut || !cut->is_object()) return;
  auto num = [&](const char *k) { return scalar_text(cut->contains(k) ? &cut->at(k) : nullptr); };
  err << "ctl-query: this timeline was cut to fit its journal entry: " << num("events_kept") << " of "
      << num("events_total") << " events kept, the document cut to at most " << num("limit") << " bytes of its "
      << num("document_bytes") << "; the whole timeline is "
      << (whole.empty() ? std::string("in the file beside the core") : printable(whole))
      << " (read it with ctl-query --files, or -D on its directory)\n";
}

/* For a crash in a pid namespace, whose text (the core's) gives that
 * namespace's ids: the host's, as "pids" has them (ids.h). */
void note_namespace(std::ostream &out, const Timeline &t) {
  const json *ids = t.lookup(key::pids);
  if (!ids || !ids->is_object()) return;
  const auto ns = ids->find(key::namespaced);
  if (ns == ids->end() || !ns->is_boolean() || !ns->get<bool>()) return;
  const auto num = [](const json &o, const char *k) {
    const auto it = o.find(k);
    return it != o.end() && it->is_number_unsigned() ? std::to_string(it->get<std::uint64_t>()) : std::string("unknown");
  };
  out << "pid namespace: the pid and tids below are the crash's own pid namespace's: pid " << num(*ids, key::pid)
      << " is host pid " << num(*ids, key::host_pid) << " (COREDUMP_PID)";
  bool unknown = false;
  std::string threads;
  if (const auto th = ids->find(key::threads); th != ids->end() && th->is_array())
    for (const json &x : *th) {
      if (!x.is_object()) continue;
      const std::string h = num(x, key::host_tid);
      unknown = unknown || h == "unknown";
      threads += (threads.empty() ? "" : ", ") + ("tid " + num(x, key::tid) + " is host tid " + h);
    }
  if (!threads.empty()) out << "; " << threads;
  if (unknown) out << " (the entry names no thread but the process, so only the first thread's host tid is known)";
  out << '\n';
}

int show(std::ostream &out, std::ostream &err, const DocumentReader &read, const std::string &whole,
         const QueryOptions &o) {
  ReadRequest req;
  req.max_bytes = o.max_bytes;
  req.want_text = !o.json;
  req.keep_raw = o.json;
  req.paths = {"cut"};
  ViewInput view;  /* what the view needs of the events (not the events) */
  if (!o.json) {
    req.paths.insert(req.paths.end(), {key::threads, key::warnings, key::thread_stacks});
    req.on_event = [&view](const json &e, std::size_t) { view.events.push_back(ViewEvent::of(e)); };
  }
  auto r = read(req);
  if (!r) {
    err << "ctl-query: " << printable(r.error().message) << '\n';
    return kExitIncomplete;
  }
  const Timeline &t = r.value();
  note_cut(err, t, whole);
  if (o.json && o.json_short) {
    /* Valid JSON as a whole (read_timeline() parsed all of it): compact it. */
    out << dump_line(json::parse(t.raw, nullptr, false)) << '\n';
    return kExitFound;
  }
  if (o.json) {
    out << t.raw;
    if (t.raw.empty() || t.raw.back() != '\n') out << '\n';
    return kExitFound;
  }
  note_namespace(out, t);
  if (t.text) {
    /* The stored text through show's view (view.h): bookkeeping left out
     * unless --all, and the reader's view options. */
    view.text = *t.text;
    if (const json *threads = t.lookup(key::threads); threads && threads->is_array())
      for (const json &th : *threads) {
        if (!th.is_object() || !th.contains(key::tid) || !th[key::tid].is_number_unsigned()) continue;
        const auto name = th.find(key::name);
        view.threads.push_back({th[key::tid].get<std::uint64_t>(),
                                name != th.end() && name->is_string() ? name->get<std::string>() : std::string()});
      }
    view.take_crash(t.lookup(key::crash), t.lookup(key::thread_stacks));
    if (const json *w = t.lookup(key::warnings); w && w->is_array()) view.warnings = w->size();
    ViewOptions options = o.view;
    options.all = o.all;
    auto shown = view_text(view, options);
    if (!shown) {
      /* Say why, and show the text as it is: nothing left out. */
      err << "ctl-query: show: " << printable(shown.error().message) << "; "
          << (options.reshapes() ? "--wall-clock, --by-thread, --tid and -n cannot be applied: " : "")
          << "the stored text follows as it is, every event in it\n";
      out << printable(*t.text, true);
      if (t.text->empty() || t.text->back() != '\n') out << '\n';
      return kExitFound;
    }
    out << printable(*shown, true);
    return kExitFound;
  }
  // No stored text (decoding did not happen): say what the document says.
  const json *reason = t.lookup(key::reason);
  out << "core-timeline: " << printable(t.status());
  if (reason && reason->is_string()) out << ": " << printable(reason->get_ref<const std::string &>());
  out << '\n';
  return kExitFound;
}

/* A stack's frames as coredumpctl info prints a thread's (16 spaces in),
 * one frame_line() each, then what the frames are. */
void print_frames(std::ostream &out, const std::vector<reader::ExportFrame> &frames) {
  for (std::size_t i = 0; i < frames.size(); ++i)
    out << std::string(16, ' ') << printable(reader::frame_line(i, frames[i])) << '\n';
}

/* info: the newest matching crash as `coredumpctl info` prints one, from
 * its list row and its document's "crash", "thread_stacks" and "warnings"
 * (read as the exports read them: export_stacks_of_document()).  The
 * fault, a fault the program's own handler re-raised, then "Stack trace
 * of thread N:" blocks, the crashing thread's whole stack first, each
 * frame saying where it came from (docs/ctl-query.md, "info"). */
int info(std::ostream &out, std::ostream &err, const DocumentReader &read, const Row &row, const QueryOptions &o) {
  ReadRequest req;
  req.max_bytes = o.max_bytes;
  req.paths = {key::threads, key::warnings, key::thread_stacks, key::spans, "cut"};
  auto r = read(req);
  if (!r) {
    err << "ctl-query: " << printable(r.error().message) << '\n';
    return kExitIncomplete;
  }
  if (o.json) {
    /* The document's own members, as stored. */
    const json *crash = r->lookup(key::crash), *stacks = r->lookup(key::thread_stacks);
    json j;
    j["pid"] = number_or_null(row.pid);
    j["exe"] = string_or_null(row.exe);
    j["file"] = string_or_null(row.path);
    j[key::crash] = crash ? *crash : json(nullptr);
    j[key::thread_stacks] = stacks ? *stacks : json::array();
    out << dump_object(j, o) << '\n';
    return kExitFound;
  }
  const reader::ExportTimeline t = reader::export_timeline_of_document(r->top, reader::DocumentEventScan{});
  const auto field = [&out](std::string_view name, const std::string &value) {
    out << fmt::format("{:>12}: ", name) << value << '\n';
  };
  field("PID", or_dash(row.pid) + (row.comm.empty() ? "" : " (" + printable(row.comm) + ")"));
  if (!row.own_pid.empty() && row.own_pid != row.pid) field("NS PID", printable(row.own_pid));
  field("UID", or_dash(row.uid));
  field("Signal", or_dash(row.signal) + (row.signal_name.empty() ? "" : " (" + printable(row.signal_name) + ")"));
  field("Timestamp", row.time_usec ? format_time(static_cast<std::int64_t>(row.time_usec)) : "-");
  field("Executable", or_dash(row.exe));
  if (!row.host.empty()) field("Hostname", printable(row.host));
  field("Timeline", or_dash(row.path));
  field("Status", printable(row.status) + (row.reason.empty() ? "" : ": " + printable(row.reason)));
  field("Events", row.has_events ? std::to_string(row.event_count) : "-");
  if (!t.crash) {
    out << std::string(16, ' ') << "(no crash: the document has none)\n";
    return kExitFound;
  }
  const reader::ExportCrash &c = *t.crash;
  std::string fault = c.signal_name.empty() ? std::string("no signal recorded") : printable(c.signal_name);
  if (!c.si_code_name.empty()) fault += " (" + printable(c.si_code_name) + ")";
  if (c.fault_address) fault += fmt::format(" addr={:#x}", *c.fault_address);
  fault += fmt::format(" in tid {} pc={:#x}", c.tid, c.pc);
  fault += c.ring_slot ? "; CRASH event in the ring" : "; no CRASH event in the ring";
  field("Fault", fault);
  if (c.reraised) field("Re-raised", printable(reader::reraised_line(*c.reraised)));
  if (!c.reraised_note.empty()) field("Re-raise", printable(c.reraised_note));
  if (c.stack) {
    const reader::ExportCrashStack &s = *c.stack;
    std::size_t ring = 0, core = 0;
    for (const auto &f : s.frames) {
      ring += f.from == "ring" ? 1 : 0;
      core += f.from == "core" ? 1 : 0;
    }
    out << '\n' << std::string(16, ' ') << "Stack trace of thread " << c.tid << ":\n";
    print_frames(out, s.frames);
    out << std::string(16, ' ')
        << fmt::format("({} frame{}: {} in both the CRASH walk and the core's unwind, {} from the core's unwind only, "
                       "{} from the CRASH walk only; core unwind {}{})\n",
                       s.frames.size(), s.frames.size() == 1 ? "" : "s", s.agree, core, ring,
                       s.core_end.empty() ? std::string("complete") : printable(s.core_end),
                       s.ring_end.empty() ? std::string() : "; CRASH walk " + printable(s.ring_end));
    if (!s.note.empty()) out << std::string(16, ' ') << '(' << printable(s.note) << ")\n";
  } else {
    out << '\n' << std::string(16, ' ') << "(the crashing thread's stack was not unwound from the core)\n";
  }
  for (const reader::ExportThreadStack &ts : t.thread_stacks) {
    out << '\n' << std::string(16, ' ') << "Stack trace of thread " << ts.tid << ":\n";
    print_frames(out, ts.frames);
    out << std::string(16, ' ')
        << fmt::format("({} frame{}, from the core's unwind; {})\n", ts.frames.size(), ts.frames.size() == 1 ? "" : "s",
                       ts.end.empty() ? std::string("complete") : printable(ts.end));
  }
  return kExitFound;
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

namespace {

/* Problems met along the way: each named on stderr (unless -q) as it is
 * met, and counted by kind for the summary line. */
class Problems {
 public:
  Problems(std::ostream &err, bool quiet) : err_(err), quiet_(quiet) {}

  void report(const std::string &message, std::string_view kind) {
    ++count_;
    ++kinds_[std::string(kind)];
    if (!quiet_) err_ << "ctl-query: " << printable(message) << '\n';
  }
  std::size_t count() const { return count_; }

  /* "N timelines or directories could not be read (...)", if any. */
  void summary() const {
    if (count_ == 0) return;
    std::string kinds;
    for (const auto &[k, n] : kinds_) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, k);
    err_ << "ctl-query: " << count_ << (count_ == 1 ? " timeline or directory" : " timelines or directories")
         << " could not be read (" << kinds << ")"
         << (kinds_.count(std::string(problem_name(Problem::kPermissionDenied))) || kinds_.count(kAnotherUser) ||
                     kinds_.count(kNotDumpable)
                 ? "; run as root to see them"
                 : "")
         << '\n';
  }

 private:
  std::ostream &err_;
  const bool quiet_;
  std::size_t count_ = 0;
  std::map<std::string, std::size_t> kinds_;
};

/* export: the timeline `name` in o.export_format (export.h).  Two reads
 * of the document: the first keeps the top-level values the exporter
 * needs and scans the events (the oldest age, the reference's wall clock,
 * each lane's thread); the second streams each event to the writer, so
 * the events are never held. */
int export_timeline(std::ostream &out, std::ostream &err, const DocumentReader &read, const std::string &whole,
                    const QueryOptions &o) {
  reader::DocumentEventScan scan;
  ReadRequest first;
  first.max_bytes = o.max_bytes;
  first.paths = {key::rings, key::time, key::spans, key::threads, key::windows, key::warnings,
                 key::absence_proves_nothing, "cut"};
  first.on_event = [&](const json &e, std::size_t) { scan.scan(e); };
  auto r = read(first);
  if (!r) {
    err << "ctl-query: " << printable(r.error().message) << '\n';
    return kExitIncomplete;
  }
  note_cut(err, *r, whole);
  reader::ExportTimeline t = reader::export_timeline_of_document(r->top, scan);
  const std::string path = r->path;
  std::ofstream file;
  std::unique_ptr<reader::ExportWriter> w;
  if (o.export_format == reader::ExportFormat::kCtf) {
    auto made = reader::ctf_writer(std::move(t), o.export_output);
    if (!made) {
      err << "ctl-query: export: " << printable(made.error().message) << '\n';
      return kExitUsage;
    }
    w = std::move(*made);
  } else {
    std::ostream *to = &out;
    if (!o.export_output.empty()) {
      file.open(o.export_output, std::ios::binary | std::ios::trunc);
      if (!file) {
        err << "ctl-query: export: --output " << printable(o.export_output) << ": " << std::strerror(errno) << '\n';
        return kExitUsage;
      }
      to = &file;
    }
    w = reader::chrome_trace_writer(std::move(t), [to](std::string_view s) {
      to->write(s.data(), static_cast<std::streamsize>(s.size()));
      return static_cast<bool>(*to);
    });
  }
  std::optional<reader::Error> failed;
  std::uint64_t not_events = 0;
  ReadRequest second;
  second.max_bytes = o.max_bytes;
  second.on_event = [&](const json &e, std::size_t) {
    if (failed) return;
    auto x = reader::export_event_of_json(e);
    if (!x) {
      ++not_events;
      return;
    }
    if (auto written = w->event(*x); !written) failed = written.error();
  };
  auto again = read(second);
  if (!again) {
    err << "ctl-query: " << printable(again.error().message) << '\n';
    return kExitIncomplete;
  }
  if (!failed)
    if (auto done = w->finish(); !done) failed = done.error();
  if (!failed && file.is_open()) {
    file.close();
    if (!file) failed = reader::system_error(errno, "writing " + o.export_output);
  }
  if (failed) {
    err << "ctl-query: export: " << printable(failed->message) << '\n';
    return kExitUsage;
  }
  if (not_events > 0)
    err << "ctl-query: export: " << not_events << " events of " << printable(path)
        << " are not event objects (kind, name, tid); left out\n";
  return kExitFound;
}

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
  return std::nullopt;
}

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

/* The file `path` names, read as a timeline file is (read_timeline). */
Result<Timeline, ReadError> read_timeline_path(const std::string &path, const ReadRequest &req) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  reader::Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int e = errno;
    return ReadError{e == EACCES || e == EPERM ? Problem::kPermissionDenied
                     : e == ENOENT             ? Problem::kVanished
                                               : Problem::kIoError,
                     path + ": cannot open its directory: " + std::strerror(e)};
  }
  auto r = read_timeline(fd.get(), dir, name, req);
  if (!r && r.error().kind == Problem::kVanished)
    return ReadError{Problem::kIoError, path + ": does not exist (its journal entry carries no document)"};
  return r;
}

/* One run of list, show or events, step by step. */
class Query {
 public:
  Query(const QueryOptions &o, const MatchSet &matches, std::ostream &out, std::ostream &err)
      : o_(o), matches_(matches), out_(out), err_(err), problems_(err, o.quiet) {}
  ~Query() {
    for (auto &d : dirs_)
      if (d.fd >= 0) ::close(d.fd);
  }
  Query(const Query &) = delete;
  Query &operator=(const Query &) = delete;

  /* locate_newest(): the steps before print(). */
  int locate(LocatedTimeline *found) {
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
    const JournalEntry &e = entries_[*c.entry];
    auto d = journal_->document(e, o_.max_bytes);
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

  int run() {
    if (const auto rc = gather()) return *rc;
    return print();
  }

 private:
  /* Steps 0-5: the sources, their candidates, what is read, the rows. */
  std::optional<int> gather() {
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

  /* The crashes of this (non-root) user that systemd-coredump's own
   * entries, in the journal it can read, say were not dumpable for it:
   * their timeline entries are in system.journal, which it cannot read
   * (journal.h Journal::withheld()).  Only when the journal's index can
   * decide every match (a match only a document could decide, or events
   * --name, cannot be told), and not for crashes already listed. */
  void note_withheld() {
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
      problems_.report(found.error().message, problem_name(Problem::kIoError));
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

  /* 1. The sources: -D directories (journal or timeline directories),
   *    --file, -M, else the local journal; --files adds the default
   *    timeline directories.  An exit status if one cannot be opened. */
  std::optional<int> open_sources() {
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
            e == EACCES || e == EPERM ? problem_name(Problem::kPermissionDenied) : problem_name(Problem::kIoError));
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
                         problem_name(Problem::kPermissionDenied));
    }
    return std::nullopt;
  }

  void list_directory(std::size_t dir) {
    const Directory &d = dirs_[dir];
    int dup_fd = ::dup(d.fd);
    DIR *listing = dup_fd >= 0 ? ::fdopendir(dup_fd) : nullptr;
    if (!listing) {
      if (dup_fd >= 0) ::close(dup_fd);
      problems_.report(d.path + ": cannot list the directory: " + std::strerror(errno),
                       problem_name(Problem::kIoError));
      return;
    }
    while (struct dirent *de = ::readdir(listing)) {
      std::string_view n = de->d_name;
      if (!is_timeline_file_name(n)) continue;
      candidates_.push_back(Candidate{dir, std::string(n), parse_timeline_name(n), std::nullopt});
    }
    ::closedir(listing);
  }

  /* --boot: the boot id it names.  0 is the current boot for the local
   * journal and for timeline files, the last boot of other journals (as
   * journalctl); other offsets count the journal's boots, or the boots of
   * the timeline files' names when no journal is read. */
  std::optional<int> resolve_boot() {
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

  /* 0. The journal's timeline entries that the index leaves possible:
   *    MESSAGE_ID, the matches on fields the entry has, --boot, and for
   *    events --name the entries that list the name (or could not list
   *    every name).  The other matches are left to the documents. */
  std::optional<int> scan_journal() {
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
    auto scanned = journal_->scan(terms, [&](JournalEntry &&e) {
      if (!in_range(entry_time(e))) return;
      if (e.unverified) {
        ++unverified_;
        if (!o_.unverified) return;
      }
      /* The older notice (no document, no summary) is read from the
       * file it names, so that its row says what the file says. */
      const bool notice = !e.has_document && e.get(jf::kEvents).empty() && !e.get(jf::kTimelinePath).empty();
      if (rows_now && !notice && !stale_last_event(e)) {
        /* Its row now; of the entry, only what show needs. */
        entry_rows_.emplace_back(row_of_entry(e));
        e.values = {};  // the row has the timeline path show needs
      } else {
        entry_rows_.emplace_back();
      }
      entries_.push_back(std::move(e));
    });
    if (!scanned) {
      problems_.report(scanned.error().message, problem_name(Problem::kIoError));
      return std::nullopt;
    }
    untrusted_ = *scanned;
    for (std::size_t i = 0; i < entries_.size(); ++i) candidates_.push_back(Candidate{0, {}, std::nullopt, i});
    return std::nullopt;
  }

  bool in_range(std::uint64_t usec) const {
    const auto t = static_cast<std::int64_t>(std::min<std::uint64_t>(usec, INT64_MAX));
    return (!o_.since_usec || t >= *o_.since_usec) && (!o_.until_usec || t <= *o_.until_usec);
  }

  /* The namespace pid a timeline file's xattr gives (names.h
   * kNamespacePidXattr), not following a symbolic link.  A file this user
   * may not read does not let its xattr be read either (EACCES): kNone, so
   * that a PID match does not report every such file as one that may
   * match (docs/ctl-query.md, "Who sees what"). */
  static NamespacePidHint namespace_pid_hint(const Directory &d, const std::string &name) {
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

  /* 2. What the file names leave possible (journal entries: the index
   *    already decided). */
  void select_by_name() {
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

  /* Whether a journal entry's document must be read: events reads the
   * events, matches the index cannot answer need the document, and so does
   * list --all (the entry names the last event that is not bookkeeping). */
  bool entry_needs_document() const {
    return o_.command == Command::kEvents || !residual_.empty() || (o_.command == Command::kList && o_.all);
  }

  /* Whether list needs this entry's document for its last event: its
   * CORE_TIMELINE_LAST_EVENT names a bookkeeping event (as a daemon wrote
   * it before it passed them over), and the event before it is wanted. */
  bool stale_last_event(const JournalEntry &e) const {
    return o_.command == Command::kList && !o_.all && e.has_document &&
           core_timeline::document::is_bookkeeping_event(json{{key::kind, e.get(jf::kLastEvent)}});
  }

  void parallel(const std::vector<std::size_t> &items, const std::function<void(std::size_t)> &fn) {
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

  /* 3. Read what is left, in parallel, keeping the fields the matches use;
   *    note which match fields some document has.  Journal entries are
   *    rows from their summary fields, or, when their document is needed,
   *    fetched from the journal (one thread: the sd_journal handle) in
   *    chunks that are parsed in parallel. */
  void read_selected() {
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
        if (row) slots_[i].row = std::move(*row);
        else to_read.push_back(i);
      }
      std::vector<std::optional<Row>>().swap(entry_rows_);
      entries = std::move(to_read);
      constexpr std::size_t kChunk = 512;
      docs_.resize(todo_.size());
      for (std::size_t from = 0; from < entries.size(); from += kChunk) {
        std::vector<std::size_t> chunk(entries.begin() + static_cast<std::ptrdiff_t>(from),
                                       entries.begin() + static_cast<std::ptrdiff_t>(std::min(from + kChunk, entries.size())));
        for (std::size_t i : chunk) {
          const JournalEntry &e = entries_[*todo_[i]->entry];
          if (!e.has_document) continue;
          auto d = journal_->document(e, o_.max_bytes);
          if (!d) {
            slots_[i].error = ReadError{d.error().code == Errc::kInvalidArgument ? Problem::kTooLarge : Problem::kIoError,
                                        d.error().message};
            continue;
          }
          docs_[i] = std::move(*d);
        }
        parallel(chunk, [&](std::size_t i) { read_one(i); });
        for (std::size_t i : chunk) docs_[i].reset();
      }
    }
    parallel(files, [&](std::size_t i) { read_one(i); });
  }

  /* The events of one document that the filter keeps.  With --tid T, an
   * event of the thread group leader (tid == process.pid, read before the
   * events) is kept too, as `via_host`, in case T is the crash's host pid,
   * the leader's host tid; keep_host_matches() decides once the document
   * says that pid. */
  struct Found {
    std::vector<json> events;
    std::vector<bool> via_host;
    std::vector<bool> bookkeeping;  /* left out unless --all (or --name/--kind chose it) */
    std::optional<std::uint64_t> leader;
  };

  /* The request for one document. */
  ReadRequest request_for(Found &found) const {
    ReadRequest req;
    req.max_bytes = o_.max_bytes;
    req.fields = match_fields_;
    req.fields.push_back("_HOSTNAME");
    req.fields.push_back("_MACHINE_ID");
    req.paths = match_fields_;
    req.bookkeeping = o_.all;
    if (o_.command == Command::kEvents) {
      req.paths.push_back(key::windows);
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

  /* The leader's events kept as `via_host` stay only when --tid is the
   * crash's host pid and the leader's tid is the pid of its namespace.
   * Bookkeeping events are left out (and counted in *bookkeeping) unless
   * --all. */
  std::vector<json> keep_host_matches(Found &&found, const Row &row, std::size_t *bookkeeping) const {
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

  /* One document (todo_[i]); runs on a worker thread (its slot is its own). */
  void read_one(std::size_t i) {
    const Candidate &c = *todo_[i];
    Slot &slot = slots_[i];
    if (slot.error) return;  // its document could not be fetched
    try {
      Found found;
      const ReadRequest req = request_for(found);
      const JournalEntry *entry = c.entry ? &entries_[*c.entry] : nullptr;
      std::optional<Result<Timeline, ReadError>> r;
      if (!entry) {
        r = read_timeline(dirs_[c.dir].fd, dirs_[c.dir].path, c.name, req);
      } else if (docs_[i]) {
        r = parse_timeline(*docs_[i], entry_label(*entry), req);
      } else if (const std::string &path = entry->get(jf::kTimelinePath); !path.empty()) {
        /* No document in the entry (core-timelined's notice before the
         * entry carried it): the file the entry names. */
        r = read_timeline_path(path, req);
      } else {
        slot.error = ReadError{Problem::kMalformed, entry_label(*entry) + ": carries no document and names no timeline file"};
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
        const Row summary = row_of_entry(*entry);
        row.path = summary.path;
        row.from_journal = true;
        row.entry_cursor = summary.entry_cursor;
        row.cut = summary.cut;
        row.user_vouched = summary.user_vouched;
        row.unverified = summary.unverified;
        if (!summary.host.empty()) row.host = summary.host;
        if (row.boot_id.empty()) row.boot_id = summary.boot_id;
      }
      slot.row = std::move(row);
    } catch (const std::exception &e) {
      slot.error = ReadError{Problem::kIoError, (c.entry ? entry_label(entries_[*c.entry])
                                                         : dirs_[c.dir].path + "/" + c.name) +
                                                    ": " + e.what()};
    }
  }

  static std::string entry_label(const JournalEntry &e) {
    const std::string &path = e.get(jf::kTimelinePath);
    return "the journal entry for " + (path.empty() ? "cursor " + e.cursor : path);
  }

  std::string label(const Row &r) const { return label_of(r); }

  static std::string label_of(const Row &r) {
    if (!r.from_journal) return r.path;
    return "the journal entry for " + (r.path.empty() ? "cursor " + r.entry_cursor : r.path);
  }

  /* A match on a field that no document read has is most likely a
   * misspelling: name it rather than let it look like "no match". */
  void note_fields_no_timeline_has() const {
    if (documents_read_.load() == 0 || o_.quiet) return;
    for (std::size_t g = 0; g < field_seen_.size(); ++g)
      if (!field_seen_[g].load())
        err_ << "ctl-query: no timeline has a field " << printable(matches_.groups()[g].field) << '\n';
  }

  /* 4. Problems, in file order (a file that vanished is not one). */
  void report_read_problems() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      if (!slots_[i].error) continue;
      const ReadError &e = *slots_[i].error;
      if (e.kind == Problem::kVanished) continue;
      std::string msg = e.message;
      std::string kind(problem_name(e.kind));
      const Candidate &c = *todo_[i];
      if (e.kind == Problem::kPermissionDenied && !c.entry) {
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

  /* Entries of their user's word alone were left out (not --unverified):
   * an empty answer is then not "no match". */
  bool hid_unverified() const { return unverified_ > 0 && !o_.unverified; }

  /* 5. The matches, by crash time.  The documents of one crash (its
   *    machine, boot, pid and crash time: crash_key() and same_machine();
   *    or an entry and the file it names, as the older notice has no crash
   *    time) from files and from the journal are one row, preferred()'s:
   *    never one that only says the core was gone over one that says more,
   *    never the crashed user's own word over core-timelined's, a file (never
   *    cut) over an entry, and else the last logged.  The row kept says so
   *    when there were several (Row::chosen, printed by show). */
  void order_rows() {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].row) order.push_back(i);
    /* Files first, then entries in journal order: "later" is the reading
     * order. */
    std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return !slots_[i].row->from_journal; });
    struct Group {
      std::size_t kept;
      std::vector<std::size_t> all;
    };
    std::vector<Group> groups;
    std::map<std::string, std::vector<std::size_t>> by_key;  /* crash_key -> groups */
    std::map<std::string, std::size_t> by_file;              /* a file's path -> its group */
    for (std::size_t i : order) {
      const Row &r = *slots_[i].row;
      std::optional<std::size_t> g;
      for (std::size_t k : by_key[crash_key(r)])
        if (same_machine(*slots_[groups[k].kept].row, r)) g = k;
      if (!g && r.from_journal && !r.path.empty())
        if (const auto f = by_file.find(r.path); f != by_file.end()) g = f->second;
      if (!g) {
        groups.push_back({i, {i}});
        by_key[crash_key(r)].push_back(groups.size() - 1);
        if (!r.from_journal) by_file[r.path] = groups.size() - 1;
        continue;
      }
      Group &grp = groups[*g];
      grp.all.push_back(i);
      if (preferred(r, *slots_[grp.kept].row, true)) grp.kept = i;
    }
    order.clear();
    for (const Group &grp : groups) {
      order.push_back(grp.kept);
      if (grp.all.size() < 2) continue;
      Row &kept = *slots_[grp.kept].row;
      /* The reason given is against a core_missing one, if one was left
       * out (the reason that matters most), else against the first. */
      const Row *other = nullptr;
      for (std::size_t i : grp.all) {
        if (i == grp.kept) continue;
        const Row &r = *slots_[i].row;
        if (!other || (only_says_core_gone(r) && !only_says_core_gone(*other))) other = &r;
      }
      kept.chosen = std::to_string(grp.all.size()) + " documents of this crash; this one (" + kept.status + ", " +
                    label_of(kept) + ") was chosen: " + why_kept(kept, *other);
    }
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Row &x = *slots_[a].row, &y = *slots_[b].row;
      return std::tie(x.time_usec, x.realtime_usec, x.path, x.entry_cursor) <
             std::tie(y.time_usec, y.realtime_usec, y.path, y.entry_cursor);
    });
    for (std::size_t i : order) {
      rows_.push_back(&*slots_[i].row);
      row_candidates_.push_back(todo_[i]);
    }
  }

  /* The reader of the newest row's document (show, export), and where
   * the whole timeline is (the file beside the core). */
  DocumentReader reader_of(const Candidate &c, const Row &row, std::string *whole) {
    if (!c.entry) {
      const Directory &dir = dirs_[c.dir];
      *whole = dir.path + "/" + c.name;
      return [&dir, name = c.name](const ReadRequest &req) { return read_timeline(dir.fd, dir.path, name, req); };
    }
    const JournalEntry &e = entries_[*c.entry];
    *whole = row.path;  // the entry's CORE_TIMELINE_TIMELINE
    auto d = journal_->document(e, o_.max_bytes);
    if (!d) {
      ReadError err{Problem::kIoError, d.error().message};
      return [err](const ReadRequest &) -> Result<Timeline, ReadError> { return err; };
    }
    if (*d) {
      auto bytes = std::make_shared<const std::string>(std::move(**d));
      return [bytes, label = label_of(row)](const ReadRequest &req) { return parse_timeline(*bytes, label, req); };
    }
    if (whole->empty()) {
      ReadError err{Problem::kMalformed, label_of(row) + ": carries no document and names no timeline file"};
      return [err](const ReadRequest &) -> Result<Timeline, ReadError> { return err; };
    }
    return [path = *whole](const ReadRequest &req) { return read_timeline_path(path, req); };
  }

  /* 6. What the command prints, and the exit status. */
  int print() {
    std::size_t printed = 0;
    if (o_.command == Command::kShow || o_.command == Command::kExport || o_.command == Command::kInfo) {
      if (!rows_.empty()) {
        const bool show_it = o_.command != Command::kExport;
        if (rows_.size() > 1 && !o_.quiet)
          err_ << "ctl-query: " << rows_.size() << " timelines match; " << (show_it ? "showing" : "exporting")
               << " the newest (" << printable(label(*rows_.back())) << ")\n";
        if (!rows_.back()->chosen.empty() && !o_.quiet)
          err_ << "ctl-query: " << printable(rows_.back()->chosen) << '\n';
        const Candidate &c = *row_candidates_.back();
        problems_.summary();
        std::string whole;
        const DocumentReader read = reader_of(c, *rows_.back(), &whole);
        if (o_.command == Command::kInfo) return info(out_, err_, read, *rows_.back(), o_);
        /* An entry from another host (a central journal) names that
         * host's file. */
        if (const Row &r = *rows_.back(); r.from_journal && !whole.empty() && !r.host.empty() && r.host != host_name())
          whole = "on host " + r.host + " at " + whole;
        return show_it ? show(out_, err_, read, whole, o_) : export_timeline(out_, err_, read, whole, o_);
      }
    } else if (o_.command == Command::kList) {
      std::vector<const Row *> rows = rows_;
      if (o_.reverse) std::reverse(rows.begin(), rows.end());
      if (o_.max_entries && rows.size() > *o_.max_entries) rows.resize(*o_.max_entries);
      print_list(out_, rows, o_);
      printed = rows.size();
    } else {
      std::vector<std::pair<const Row *, const json *>> lines;
      for (const Row *r : rows_)
        for (const auto &e : r->events) lines.emplace_back(r, &e);
      if (o_.reverse) std::reverse(lines.begin(), lines.end());
      if (o_.max_entries && lines.size() > *o_.max_entries) lines.resize(*o_.max_entries);
      print_events(out_, lines, o_);
      printed = lines.size();
      /* Matching bookkeeping events left out: said, never hidden silently. */
      std::size_t left_out = 0;
      for (const Row *r : rows_) left_out += r->bookkeeping_left_out;
      if (left_out > 0 && !o_.quiet)
        err_ << "ctl-query: " << left_out << (left_out == 1 ? " bookkeeping event" : " bookkeeping events")
             << " (LANE_CLAIM, STACK: the ring's own) that match " << (left_out == 1 ? "was" : "were")
             << " left out; --all shows them\n";
      /* What the events searched could not show: per timeline, the
       * sources whose older events were lost. */
      if (!o_.quiet)
        for (const Row *r : rows_)
          for (const auto &w : r->lossy_windows)
            err_ << "ctl-query: pid " << or_dash(r->pid) << " (" << or_dash(r->exe) << "): " << printable(w) << '\n';
    }
    out_.flush();
    problems_.summary();
    if (printed > 0) return kExitFound;
    if (problems_.count() > 0) {
      err_ << "ctl-query: no match among the timelines that could be read; "
           << "a timeline that could not be read may match\n";
      return kExitIncomplete;
    }
    if (hid_unverified()) {
      err_ << "ctl-query: no match among the entries that could be verified; an unverified one may match "
              "(--unverified)\n";
      return kExitIncomplete;
    }
    /* The journal's index finds only what matches: "no timelines found"
     * only when nothing narrowed what it was asked. */
    const bool none = journal_ ? candidates_.empty() && matches_.empty() && !boot_id_ && !o_.event_filter.name &&
                                     !o_.since_usec && !o_.until_usec
                               : candidates_.empty();
    if (!o_.quiet) err_ << "ctl-query: " << (none ? "no timelines found" : "no matching timelines") << '\n';
    return kExitNoMatch;
  }

  const QueryOptions &o_;
  const MatchSet &matches_;
  std::ostream &out_, &err_;
  Problems problems_;
  std::vector<Directory> dirs_;
  std::unique_ptr<Journal> journal_;
  bool journal_local_ = false;
  std::vector<JournalEntry> entries_;
  /* entries_'s rows, made while scanning for those whose documents are
   * not needed */
  std::vector<std::optional<Row>> entry_rows_;
  std::size_t untrusted_ = 0;
  std::size_t unverified_ = 0;  /* entries of a user's own word alone, in range */
  std::optional<std::string> boot_id_;
  MatchSet residual_;
  std::vector<std::optional<std::string>> docs_;
  std::vector<Candidate> candidates_;
  std::vector<const Candidate *> todo_;
  std::vector<std::string> match_fields_;
  std::vector<Slot> slots_;
  std::vector<std::atomic<bool>> field_seen_;
  std::atomic<std::size_t> documents_read_{0};
  std::vector<const Row *> rows_;
  std::vector<const Candidate *> row_candidates_;
};

}  // namespace

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

}  // namespace core_timeline::ctlq
