/* SPDX-License-Identifier: MIT */
/* Query's printing: list, show, info, events and export of the rows
 * (query_steps.h). */
#include "query_steps.h"

namespace core_timeline::ctl_query {

namespace {

std::string or_dash(const std::string &s) { return s.empty() ? "-" : printable(s); }

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

/* This machine's host name (gethostname(2)), or "" when it cannot be read. */
std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return {};
  return buf;
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

}  // namespace

/* The host tid of the crash's thread `tid` (a namespace tid, as the core
 * and the ring give it): document::host_tid_of() on the row's ids. */
std::optional<std::uint64_t> host_tid(const Row &r, std::uint64_t tid) {
  core_timeline::document::ProcessIds ids;
  ids.host_pid = reader::parse_unsigned(r.host_pid);
  ids.pid = reader::parse_unsigned(r.own_pid);
  ids.namespaced = r.namespaced;
  return core_timeline::document::host_tid_of(ids, tid);
}

namespace {

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
    req.paths.insert(req.paths.end(), {key::threads, key::warnings, key::thread_stacks, key::cause,
                                         core_timeline::document::group_key::group});
    req.on_event = [&view](const json &e, std::size_t) { view.events.push_back(ViewEvent::of(e)); };
    req.view_events = &view.events;  /* a compact document's, straight */
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
    view.take_cause(t.lookup(key::cause));
    view.take_group(t.lookup(core_timeline::document::group_key::group));
    if (const json *w = t.lookup(key::warnings); w && w->is_array()) view.warnings = w->size();
    ViewOptions options = o.view;
    options.all = o.all;
    auto shown = view_text(view, options);
    if (!shown) {
      /* Say why, and show the text as it is: nothing left out. */
      err << "ctl-query: show: " << printable(shown.error().message) << "; "
          << (options.reshapes() ? "--wall-clock, --by-thread, --tid and -n cannot be applied: " : "")
          << "the stored text follows as it is, every event in it\n";
      write_printable(out, *t.text, true);
      if (t.text->empty() || t.text->back() != '\n') out << '\n';
      return kExitFound;
    }
    write_printable(out, *shown, true);
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

/* The cause section's lines (export.h cause_lines(): the text's), after
 * a blank line, 16 spaces in as the stacks' lines are. */
void print_cause(std::ostream &out, const reader::ExportCause &cause) {
  out << '\n';
  const std::string lines = reader::cause_lines(cause);
  for (std::size_t at = 0, end; at < lines.size(); at = end + 1) {
    end = lines.find('\n', at);
    if (end == std::string::npos) end = lines.size();
    out << std::string(16, ' ') << std::string_view(lines).substr(at, end - at) << '\n';
  }
}

/* info: the newest matching crash as `coredumpctl info` prints one, from
 * its list row and its document's "crash", "thread_stacks", "cause" and
 * "warnings" (read as the exports read them: export_stacks_of_document(),
 * export_cause_of_document()).  The fault, a fault the program's own
 * handler re-raised, the cause section's lines, then "Stack trace of
 * thread N:" blocks, the crashing thread's whole stack first, each
 * frame saying where it came from (docs/ctl-query.md, "info"). */
int info(std::ostream &out, std::ostream &err, const DocumentReader &read, const Row &row, const QueryOptions &o) {
  ReadRequest req;
  req.max_bytes = o.max_bytes;
  req.paths = {key::threads, key::warnings, key::thread_stacks, key::spans, key::cause, "cut"};
  auto r = read(req);
  if (!r) {
    err << "ctl-query: " << printable(r.error().message) << '\n';
    return kExitIncomplete;
  }
  if (o.json) {
    /* The document's own members, as stored. */
    const json *crash = r->lookup(key::crash), *stacks = r->lookup(key::thread_stacks), *cause = r->lookup(key::cause);
    json j;
    j["pid"] = number_or_null(row.pid);
    j["exe"] = string_or_null(row.exe);
    j["file"] = string_or_null(row.path);
    j[key::crash] = crash ? *crash : json(nullptr);
    j[key::thread_stacks] = stacks ? *stacks : json::array();
    j[key::cause] = cause ? *cause : json(nullptr);
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
  if (t.cause) print_cause(out, *t.cause);
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
                 key::absence_proves_nothing, key::cause, "cut"};
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

}  // namespace

int Query::print() {
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
  } else if (o_.command == Command::kGroup) {
    std::vector<GroupMember> members;
    for (const Row *r : rows_) members.push_back(GroupMember{&r->group, r->time_usec, r->host, r->exe, r->pid});
    printed = print_groups(out_, members, o_);
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

}  // namespace core_timeline::ctl_query
