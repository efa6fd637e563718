/* SPDX-License-Identifier: MIT */
#include "query.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/number.h"
#include "match.h"
#include "text.h"
#include "time_spec.h"

namespace core_timeline::ctlq {

using json = nlohmann::ordered_json;
namespace key = core_timeline::document::key;

namespace {

/* An open timeline directory. */
struct Directory {
  std::string path;
  int fd = -1;
};

/* A *.timeline.json file found in a directory. */
struct Candidate {
  std::size_t dir = 0;
  std::string name;
  std::optional<TimelineName> parsed;
};

/* What is printed of one matching timeline. */
struct Row {
  std::string path;
  std::uint64_t time_usec = 0, realtime_usec = 0;
  std::string pid, uid, gid, signal, signal_name, exe, comm, status, reason, boot_id, cursor;
  bool has_events = false;
  std::size_t event_count = 0;
  json last_event;
  std::vector<json> events;  /* the matching events (events command) */
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
  if (const json *b = t.lookup(key::dotted({key::coredump, key::boot_id})); b && b->is_string()) r.boot_id = b->get<std::string>();
  if (const json *c = t.lookup(key::dotted({key::coredump, key::journal_cursor})); c && c->is_string()) r.cursor = c->get<std::string>();
  r.has_events = t.has_events;
  r.event_count = t.event_count;
  r.last_event = std::move(t.last_event);
  r.events = std::move(events);
  return r;
}

std::string or_dash(const std::string &s) { return s.empty() ? "-" : printable(s); }

json number_or_null(const std::string &s) {
  const auto v = reader::parse_unsigned(s);
  return v ? json(*v) : json(nullptr);
}

json string_or_null(const std::string &s) { return s.empty() ? json(nullptr) : json(s); }

std::string dump_line(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/* One object of list or events: a line, or indented by 2 (--json=pretty). */
std::string dump_object(const json &j, const QueryOptions &o) {
  return o.json_pretty ? j.dump(2, ' ', false, json::error_handler_t::replace) : dump_line(j);
}

std::string event_name(const json &e) {
  auto it = e.find(key::name);
  return it != e.end() && it->is_string() ? printable(it->get_ref<const std::string &>()) : "?";
}

std::string event_summary(const json &e) {
  if (!e.is_object()) return "-";
  return event_name(e) + " " + event_args_text(e);
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
      j["uid"] = number_or_null(r->uid);
      j["gid"] = number_or_null(r->gid);
      j["signal"] = number_or_null(r->signal);
      j["signal_name"] = string_or_null(r->signal_name);
      j["exe"] = string_or_null(r->exe);
      j["comm"] = string_or_null(r->comm);
      j["status"] = r->status;
      j["events"] = r->has_events ? json(r->event_count) : json(nullptr);
      j["last_event"] = r->last_event;
      j["boot_id"] = string_or_null(r->boot_id);
      j["journal_cursor"] = string_or_null(r->cursor);
      j["file"] = r->path;
      out << dump_object(j, o) << '\n';
    }
    return;
  }
  std::vector<std::vector<std::string>> cells;
  cells.reserve(rows.size());
  for (const Row *r : rows) {
    cells.push_back({r->time_usec ? format_time(static_cast<std::int64_t>(r->time_usec)) : "-", or_dash(r->pid),
                     or_dash(r->uid), r->signal_name.empty() ? or_dash(r->signal) : printable(r->signal_name),
                     or_dash(r->exe), printable(r->status), r->has_events ? std::to_string(r->event_count) : "-",
                     event_summary(r->last_event)});
  }
  print_table(out, {"TIME", "PID", "UID", "SIG", "EXE", "STATUS", "EVENTS", "LAST EVENT"},
              {false, true, true, false, false, false, true, false}, cells, !o.no_legend);
}

void print_events(std::ostream &out, const std::vector<std::pair<const Row *, const json *>> &lines,
                  const QueryOptions &o) {
  if (o.json) {
    for (const auto &[r, e] : lines) {
      json j;
      j["time_usec"] = r->time_usec;
      j["pid"] = number_or_null(r->pid);
      j["uid"] = number_or_null(r->uid);
      j["exe"] = string_or_null(r->exe);
      j["comm"] = string_or_null(r->comm);
      j["status"] = r->status;
      j["file"] = r->path;
      j["event"] = *e;
      out << dump_object(j, o) << '\n';
    }
    return;
  }
  std::vector<std::vector<std::string>> cells;
  cells.reserve(lines.size());
  for (const auto &[r, e] : lines)
    cells.push_back({r->time_usec ? format_time(static_cast<std::int64_t>(r->time_usec)) : "-", or_dash(r->pid),
                     or_dash(r->exe), event_tid(*e), event_name(*e), event_args_text(*e), location_text(*e)});
  print_table(out, {"TIME", "PID", "EXE", "TID", "EVENT", "ARGS", "LOCATION"},
              {false, true, false, true, false, false, false}, cells, !o.no_legend);
}

int show(std::ostream &out, std::ostream &err, const Directory &dir, const std::string &name, const QueryOptions &o) {
  ReadRequest req;
  req.max_bytes = o.max_bytes;
  req.want_text = !o.json;
  req.keep_raw = o.json;
  auto r = read_timeline(dir.fd, dir.path, name, req);
  if (!r) {
    err << "ctl-query: " << printable(r.error().message) << '\n';
    return kExitIncomplete;
  }
  const Timeline &t = r.value();
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
  if (t.text) {
    out << printable(*t.text, true);
    if (t.text->empty() || t.text->back() != '\n') out << '\n';
    return kExitFound;
  }
  // No stored text (decoding did not happen): say what the document says.
  const json *reason = t.lookup(key::reason);
  out << "core-timeline: " << printable(t.status());
  if (reason && reason->is_string()) out << ": " << printable(reason->get_ref<const std::string &>());
  out << '\n';
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
         << (kinds_.count(std::string(problem_name(Problem::kPermissionDenied)))
                 ? "; permission denied means they belong to another user: run as root to see them"
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
int export_timeline(std::ostream &out, std::ostream &err, const Directory &dir, const std::string &name,
                    const QueryOptions &o) {
  reader::DocumentEventScan scan;
  ReadRequest first;
  first.max_bytes = o.max_bytes;
  first.paths = {key::rings, key::time, key::spans, key::threads, key::windows, key::warnings,
                 key::absence_proves_nothing};
  first.on_event = [&](const json &e, std::size_t) { scan.scan(e); };
  auto r = read_timeline(dir.fd, dir.path, name, first);
  if (!r) {
    err << "ctl-query: " << printable(r.error().message) << '\n';
    return kExitIncomplete;
  }
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
  auto again = read_timeline(dir.fd, dir.path, name, second);
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
    if (const auto rc = open_directories()) return *rc;
    select_by_name();
    read_selected();
    note_fields_no_timeline_has();
    report_read_problems();
    order_rows();
    problems_.summary();
    if (rows_.empty()) return problems_.count() > 0 ? kExitIncomplete : kExitNoMatch;
    const Candidate &c = *row_candidates_.back();
    found->dir = dirs_[c.dir].path;
    found->name = c.name;
    found->path = rows_.back()->path;
    found->matches = rows_.size();
    found->time_usec = rows_.back()->time_usec;
    return kExitFound;
  }

  int run() {
    if (const auto rc = open_directories()) return *rc;
    select_by_name();
    read_selected();
    note_fields_no_timeline_has();
    report_read_problems();
    order_rows();
    return print();
  }

 private:
  /* 1. The directories (-D, or the default ones) and their
   *    *.timeline.json files.  An exit status if a -D directory cannot be
   *    opened. */
  std::optional<int> open_directories() {
    const bool explicit_dirs = !o_.directories.empty();
    std::vector<std::string> paths = o_.directories;
    if (!explicit_dirs) paths.assign(std::begin(kDefaultDirectories), std::end(kDefaultDirectories));
    for (const auto &p : paths) {
      int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) {
        const int e = errno;
        if (explicit_dirs) {
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
      candidates_.push_back(Candidate{dir, std::string(n), parse_timeline_name(n)});
    }
    ::closedir(listing);
  }

  bool in_range(std::uint64_t usec) const {
    const auto t = static_cast<std::int64_t>(std::min<std::uint64_t>(usec, INT64_MAX));
    return (!o_.since_usec || t >= *o_.since_usec) && (!o_.until_usec || t <= *o_.until_usec);
  }

  /* 2. What the file names leave possible. */
  void select_by_name() {
    todo_.reserve(candidates_.size());
    for (const auto &c : candidates_)
      if (!c.parsed || (matches_.may_match(*c.parsed) && in_range(c.parsed->usec))) todo_.push_back(&c);
  }

  /* 3. Read what is left, in parallel, keeping the fields the matches use;
   *    note which match fields some document has. */
  void read_selected() {
    for (const auto &g : matches_.groups()) match_fields_.push_back(g.field);
    slots_.resize(todo_.size());
    field_seen_ = std::vector<std::atomic<bool>>(matches_.groups().size());
    std::atomic<std::size_t> next{0};
    auto worker = [&]() {
      for (;;) {
        const std::size_t i = next.fetch_add(1);
        if (i >= todo_.size()) return;
        read_one(*todo_[i], slots_[i]);
      }
    };
    unsigned jobs = o_.jobs;
    if (jobs == 0) jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    if (todo_.size() < 64) jobs = 1;
    std::vector<std::thread> threads;
    for (unsigned j = 1; j < jobs; ++j) threads.emplace_back(worker);
    worker();
    for (auto &th : threads) th.join();
  }

  /* One document; runs on a worker thread (slot is its own). */
  void read_one(const Candidate &c, Slot &slot) {
    try {
      std::vector<json> events;
      ReadRequest req;
      req.max_bytes = o_.max_bytes;
      req.fields = match_fields_;
      req.paths = match_fields_;
      if (o_.command == Command::kEvents) {
        req.paths.push_back(key::windows);
        req.on_event = [&](const json &e, std::size_t) {
          if (o_.event_filter.matches(e)) events.push_back(e);
        };
      }
      auto r = read_timeline(dirs_[c.dir].fd, dirs_[c.dir].path, c.name, req);
      if (!r) {
        slot.error = r.error();
        return;
      }
      Timeline &t = r.value();
      documents_read_.fetch_add(1, std::memory_order_relaxed);
      for (std::size_t g = 0; g < field_seen_.size(); ++g)
        if (!field_seen_[g].load(std::memory_order_relaxed) && matches_.has_field(t, g))
          field_seen_[g].store(true, std::memory_order_relaxed);
      if (!in_range(t.time_usec) || !matches_.matches(t)) return;
      /* events: a timeline searched without a match stays a row (with no
       * events), so what it lost is still said. */
      slot.row = make_row(std::move(t), std::move(events));
    } catch (const std::exception &e) {
      slot.error = ReadError{Problem::kIoError, dirs_[c.dir].path + "/" + c.name + ": " + e.what()};
    }
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
      const Candidate &c = *todo_[i];
      if (e.kind == Problem::kPermissionDenied && c.parsed)
        msg += fmt::format(" (the timeline of pid {} ({}), uid {}, by its name)", c.parsed->pid, c.parsed->comm,
                           c.parsed->uid);
      problems_.report(msg, problem_name(e.kind));
    }
  }

  /* 5. The matches, by crash time. */
  void order_rows() {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].row) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Row &x = *slots_[a].row, &y = *slots_[b].row;
      return std::tie(x.time_usec, x.realtime_usec, x.path) < std::tie(y.time_usec, y.realtime_usec, y.path);
    });
    for (std::size_t i : order) {
      rows_.push_back(&*slots_[i].row);
      row_candidates_.push_back(todo_[i]);
    }
  }

  /* 6. What the command prints, and the exit status. */
  int print() {
    std::size_t printed = 0;
    if (o_.command == Command::kShow || o_.command == Command::kExport) {
      if (!rows_.empty()) {
        const bool show_it = o_.command == Command::kShow;
        if (rows_.size() > 1 && !o_.quiet)
          err_ << "ctl-query: " << rows_.size() << " timelines match; " << (show_it ? "showing" : "exporting")
               << " the newest (" << printable(rows_.back()->path) << ")\n";
        const Candidate &c = *row_candidates_.back();
        problems_.summary();
        return show_it ? show(out_, err_, dirs_[c.dir], c.name, o_)
                       : export_timeline(out_, err_, dirs_[c.dir], c.name, o_);
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
    if (!o_.quiet)
      err_ << "ctl-query: " << (candidates_.empty() ? "no timelines found" : "no matching timelines") << '\n';
    return kExitNoMatch;
  }

  const QueryOptions &o_;
  const MatchSet &matches_;
  std::ostream &out_, &err_;
  Problems problems_;
  std::vector<Directory> dirs_;
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
