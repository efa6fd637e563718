/* SPDX-License-Identifier: MIT */
#include "cli.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include <CLI/CLI.hpp>

#include "diff.h"
#include "text.h"
#include "core_timeline/reader/number.h"
#include "time_spec.h"

#ifndef CT_VERSION
#define CT_VERSION "unknown"
#endif

namespace core_timeline::ctl_query {

namespace {

constexpr const char *kDescription =
    "Find the timelines core-timelined stored for crashes, the way coredumpctl finds cores.\n"
    "\n"
    "Commands: list (default), show (the newest match, as core-timeline-read prints it;\n"
    "--wall-clock, --by-thread, --tid, -n N: the last N events),\n"
    "events (events across timelines: --name, --kind, --arg, --id, --tid),\n"
    "info (the newest match's crash, as coredumpctl info: the fault, a re-raised fault,\n"
    "each thread's stack with where each frame came from),\n"
    "export (the newest match as a chrome-trace document or a CTF trace: --format, --output).\n"
    "group (one line per group of crashes that are the same bug, the most first; --stack:\n"
    "by the crash stack alone; docs/grouping.md),\n"
    "diff A B (per event and span name, what one timeline did that the other did not;\n"
    "A and B each a MATCH, or a core FILE: a path to an ELF core).\n"
    "MATCH: a number is a PID, a path (with '/') an executable, FIELD=VALUE a stored journal\n"
    "field (COREDUMP_UID=1000) or document value (status=ok), anything else a command name.\n"
    "Exit codes: 0 found, 1 no match, 2 usage error, 3 no match among the readable timelines\n"
    "but some could not be read, 4 a -D directory cannot be opened.  See docs/ctl-query.md.";

/* Options that take a value, so that a value starting with '-' ("-1h")
 * stays with its option, and "-1" can be told from a negative number. */
const std::set<std::string> kShortWithValue{"-S", "-U", "-n", "-D", "-M"};
const std::set<std::string> kLongWithValue{"--since", "--until", "--directory", "--max-size", "--name", "--kind",
                                           "--arg",   "--id",    "--tid",       "--jobs",     "--output", "--tlmap",
                                           "--file",  "--machine"};

/* Whether `a` is a --boot value as journalctl takes one after -b: an
 * offset ([+-]N) or a boot id (32 hex digits) with an optional offset. */
bool is_boot_descriptor(const std::string &a) {
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  std::string_view s = a;
  if (s.size() >= 32 && std::all_of(s.begin(), s.begin() + 32, [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    s.remove_prefix(32);
    if (s.empty()) return true;
  }
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return digits(s);
}

std::vector<std::string> preprocess(const std::vector<std::string> &argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool options_done = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    if (i == 0 || options_done) {
      out.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      out.push_back(a);
    } else if (a == "-b" || a == "--boot") {
      /* As journalctl: -b alone is the current boot; a boot descriptor
       * that follows ("-b -1", "-b ID") is its value. */
      if (i + 1 < argv.size() && is_boot_descriptor(argv[i + 1])) out.push_back("--boot=" + argv[++i]);
      else out.emplace_back("--boot=0");
    } else if (a.size() > 2 && a.starts_with("-b") && is_boot_descriptor(a.substr(2))) {
      out.push_back("--boot=" + a.substr(2));
    } else if (a == "-1") {
      out.emplace_back("--newest");
    } else if (a.starts_with("--boot=") && a.size() == 7) {
      out.emplace_back("--boot=0");
    } else if (a.starts_with("--json=")) {
      out.push_back("--json-mode=" + a.substr(7));  /* coredumpctl's --json=MODE */
    } else if (kShortWithValue.count(a) && i + 1 < argv.size()) {
      out.push_back(a + argv[++i]);
    } else if (kLongWithValue.count(a) && i + 1 < argv.size()) {
      out.push_back(a + "=" + argv[++i]);
    } else {
      out.push_back(a);
    }
  }
  return out;
}

}  // namespace

Result<std::uint64_t> parse_u64(const std::string &text) {
  if (auto v = reader::parse_unsigned(text, /*allow_hex=*/true)) return *v;
  return invalid("\"" + printable(text) + "\" is not an unsigned number (decimal or 0x-hexadecimal)");
}

namespace {

/* The command line as CLI11 reads it: the options that go straight into
 * QueryOptions, and the texts that are checked and converted after. */
struct CommandLine {
  CLI::App app{kDescription, "ctl-query"};
  QueryOptions o;
  std::string since, until, name, kind, arg, id, tid, show_tid, json_mode, boot;
  std::size_t lines = 0;
  bool newest = false, version = false;
  std::vector<std::string> list_matches, show_matches, events_matches, export_matches, info_matches, group_matches;
  DiffOptions diff_options;
  CLI::App *list = nullptr, *show = nullptr, *events = nullptr, *export_ = nullptr, *diff = nullptr,
           *info = nullptr, *group = nullptr;

  CommandLine() {
    app.require_subcommand(0, 1);
    app.fallthrough();
    app.add_option("-S,--since", since, "Only crashes at or after this time (\"2026-11-30 06:25:26\", today, -1h)");
    app.add_option("-U,--until", until, "Only crashes at or before this time");
    app.add_flag("-r,--reverse", o.reverse, "Newest first");
    app.add_option("-n", lines,
                   "Print at most this many lines (the oldest, or with -r the newest); show: the last N events")
        ->type_name("N")
        ->check(CLI::Validator(
            [](std::string &v) -> std::string {
              if (const auto n = reader::parse_unsigned<std::size_t>(v); n && *n >= 1) return {};
              return "\"" + printable(v) + "\" is not a count: N is a whole number, 1 or more";
            },
            "", ""));
    app.add_flag("-1,--newest", newest, "Only the newest entry (same as -r -n 1)");
    app.add_flag("--all", o.all,
                 "Also the bookkeeping events (LANE_CLAIM, STACK: what only libtimeline's own machinery writes) "
                 "in list's LAST EVENT, in events and in show, which leave them out by default");
    app.add_flag("--json", o.json,
                 "JSON: one object per line (list, events); the stored document (show); one object (diff). "
                 "--json=short|pretty|off as coredumpctl");
    app.add_option("--json-mode", json_mode, "")  /* what --json=MODE becomes (preprocess) */
        ->group("")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("-D,--directory", o.directories,
                   "Read this directory instead of the local journal: a journal directory (it holds *.journal "
                   "files, e.g. systemd-journal-remote's) is read as a journal, any other as a directory of "
                   "timeline files (may be repeated)")
        ->allow_extra_args(false);
    app.add_option("--file", o.journal_files, "Read this journal file instead of the local journal (may be repeated)")
        ->type_name("FILE")
        ->allow_extra_args(false);
    app.add_option("-M,--machine", o.machine, "Read the journal of this container (as journalctl -M)")
        ->type_name("NAME");
    app.add_option("-b,--boot", boot,
                   "Only crashes of this boot: -b alone or 0 the current boot, -1 the one before, 1 the first, "
                   "a boot id, ID+N/ID-N (as journalctl -b)")
        ->type_name("[ID][+-N]");
    app.add_flag("--files", o.files,
                 "Also read the timeline files of /var/lib/systemd/coredump and /var/lib/core-timeline/timelines "
                 "(for a crash both have, the file wins)");
    app.add_flag("--unverified", o.unverified,
                 "Also show timeline entries that only the crashed user vouches for and no root-owned "
                 "timeline file backs, marked (unverified)");
    app.add_flag("-q,--quiet", o.quiet, "Do not name each timeline that cannot be read (the count stays)");
    app.add_flag("--no-legend", o.no_legend, "Do not print the column header");
    app.add_option("--max-size", o.max_bytes, "Skip (and report) documents larger than this (default 64MiB)")
        ->type_name("SIZE")
        ->transform(CLI::AsSizeValue(false).description(""));
    app.add_option("--jobs", o.jobs, "Threads that read documents (default: up to 4)")
        ->type_name("N")
        ->check(CLI::Range(1u, 64u).description(""));
    app.add_flag("--version", version, "Print the version and exit");

    list = app.add_subcommand("list", "One line per crash: time, pid, uid, signal, executable, status, "
                                      "event count, last event (default)");
    list->add_option("MATCH", list_matches, "PID, /path/to/exe, COMM or FIELD=VALUE");
    show = app.add_subcommand("show", "Print the newest matching timeline as core-timeline-read does");
    show->add_flag("--wall-clock", o.view.wall_clock,
                   "Show each event's wall-clock time (journalctl's short-precise style, local time) instead of its "
                   "age relative to the crash (as core-timeline-read --wall-clock)");
    show->add_flag("--by-thread", o.view.by_thread,
                   "Group events by thread instead of one list merged by time (as core-timeline-read --by-thread)");
    show->add_option("--tid", show_tid, "Only this thread's events (its tid as the text gives it)")->type_name("TID");
    show->add_option("MATCH", show_matches, "PID, /path/to/exe, COMM or FIELD=VALUE");
    info = app.add_subcommand("info", "The newest matching crash as coredumpctl info prints one: its fault, "
                                      "a fault its own handler re-raised, and the crashing thread's whole stack "
                                      "(each other thread's too, when the reader unwound them)");
    info->add_option("MATCH", info_matches, "PID, /path/to/exe, COMM or FIELD=VALUE");
    events = app.add_subcommand("events", "One line per matching event across timelines");
    events->add_option("--name", name, "Event name (BEFORE_DIE, MALLOC...)");
    events->add_option("--kind", kind, "Event kind (USER, MALLOC, CRASH...)");
    events->add_option("--arg", arg, "One of the event's two arguments equals this (decimal or 0x-hex)");
    events->add_option("--id", id, "Event id (decimal or 0x-hex)");
    events->add_option("--tid", tid, "Thread id");
    events->add_option("MATCH", events_matches, "PID, /path/to/exe, COMM or FIELD=VALUE");
    export_ = app.add_subcommand("export", "Export the newest matching timeline for a trace viewer "
                                           "(chrome-trace) or babeltrace2 (ctf); docs/export.md");
    const std::map<std::string, reader::ExportFormat> formats{{"chrome-trace", reader::ExportFormat::kChromeTrace},
                                                              {"ctf", reader::ExportFormat::kCtf}};
    export_->add_option("--format", o.export_format, "chrome-trace (Perfetto, chrome://tracing, speedscope) or ctf")
        ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
        ->type_name("FORMAT")
        ->required();
    export_->add_option("--output", o.export_output,
                        "Write to this file (chrome-trace; default stdout), or make the CTF trace in this new or "
                        "empty directory (ctf: required)")
        ->type_name("PATH");
    export_->add_option("MATCH", export_matches, "PID, /path/to/exe, COMM or FIELD=VALUE");
    diff = app.add_subcommand("diff", "Per event and span name, timeline A against timeline B, the biggest "
                                      "changes first");
    diff->add_option("A", diff_options.a, "MATCH (the newest matching timeline), or a core FILE (a path to an ELF core)")
        ->required();
    diff->add_option("B", diff_options.b, "the same, for the other side")->required();
    diff->add_option("--tlmap", diff_options.tlmap, "Names for the user ids of a core FILE (core-timeline-read --tlmap)");
    group = app.add_subcommand("group", "One line per group of crashes that are the same bug (the same stack "
                                        "after the same history; docs/grouping.md), the most crashes first");
    group->add_flag("--stack", o.group_by_stack, "Group by the crash stack alone (the stack part of the signature)");
    group->add_option("MATCH", group_matches, "PID, /path/to/exe, COMM or FIELD=VALUE");
    for (auto *sub : {list, show, events, export_, diff, group}) sub->fallthrough();
  }

  /* After parsing: the texts into QueryOptions.  A message for stderr
   * (without "ctl-query: ") on a usage error. */
  std::optional<std::string> finish(std::int64_t now_usec) {
    if (!json_mode.empty() || app.count("--json-mode")) {
      /* As coredumpctl: short (compact), pretty (indented), off (text). */
      if (json_mode == "short") o.json = o.json_short = true;
      else if (json_mode == "pretty") o.json = o.json_pretty = true;
      else if (json_mode == "off") o.json = false;
      else return "--json=" + printable(json_mode) + ": MODE is short, pretty or off";
    }
    if (show->parsed()) {
      o.command = Command::kShow;
      o.matches = show_matches;
      if (lines) o.view.last = lines;  /* show: the last N events */
      if (!show_tid.empty()) {
        auto v = parse_u64(show_tid);
        if (!v) return "--tid: " + v.error().message;
        o.view.tid = *v;
      }
    } else if (info->parsed()) {
      o.command = Command::kInfo;
      o.matches = info_matches;
    } else if (events->parsed()) {
      o.command = Command::kEvents;
      o.matches = events_matches;
    } else if (export_->parsed()) {
      o.command = Command::kExport;
      o.matches = export_matches;
      if (o.export_format == reader::ExportFormat::kCtf && o.export_output.empty())
        return std::string("export --format=ctf needs --output DIR (the directory to make the trace in)");
    } else if (group->parsed()) {
      o.command = Command::kGroup;
      o.matches = group_matches;
    } else {
      o.command = Command::kList;
      o.matches = list_matches;
    }
    if (lines) o.max_entries = lines;
    if (newest) {
      o.reverse = true;
      o.max_entries = 1;
    }
    for (auto [flag, text, dest] : {std::tuple{"--since", &since, &o.since_usec},
                                    std::tuple{"--until", &until, &o.until_usec}}) {
      if (text->empty()) continue;
      auto t = parse_time_spec(*text, now_usec);
      if (!t) return std::string(flag) + ": " + t.error().message;
      *dest = *t;
    }
    if (o.since_usec && o.until_usec && *o.since_usec > *o.until_usec) return "--since must not be after --until";
    for (auto [flag, text, dest] : {std::tuple{"--arg", &arg, &o.event_filter.arg},
                                    std::tuple{"--id", &id, &o.event_filter.id},
                                    std::tuple{"--tid", &tid, &o.event_filter.tid}}) {
      if (text->empty()) continue;
      auto v = parse_u64(*text);
      if (!v) return std::string(flag) + ": " + v.error().message;
      *dest = *v;
    }
    if (!name.empty()) o.event_filter.name = name;
    if (!kind.empty()) o.event_filter.kind = kind;
    if (o.max_bytes == 0) return "--max-size must be at least 1 byte";
    if (app.count("--boot")) o.boot = boot;
    if (!o.machine.empty() && !o.journal_files.empty()) return std::string("-M and --file cannot be used together");
    char cwd[PATH_MAX];
    o.cwd = ::getcwd(cwd, sizeof cwd) ? cwd : "/";
    return std::nullopt;
  }
};

}  // namespace

int ctl_query_main(const std::vector<std::string> &argv_in, std::ostream &out, std::ostream &err,
                   std::int64_t now_usec) noexcept {
  try {
    CommandLine cl;
    const std::vector<std::string> args = preprocess(argv_in);
    std::vector<const char *> cargs;
    for (const auto &a : args) cargs.push_back(a.c_str());
    try {
      cl.app.parse(static_cast<int>(cargs.size()), cargs.data());
    } catch (const CLI::ParseError &e) {
      const int rc = cl.app.exit(e, out, err);
      return rc == 0 ? 0 : kExitUsage;
    }
    if (cl.version) {
      out << "ctl-query " << CT_VERSION << '\n';
      return 0;
    }
    if (auto usage = cl.finish(now_usec)) {
      err << "ctl-query: " << *usage << '\n';
      return kExitUsage;
    }
    if (cl.diff->parsed()) return run_diff(cl.o, cl.diff_options, out, err);
    return run_query(cl.o, out, err);
  } catch (const std::exception &e) {
    err << "ctl-query: " << e.what() << '\n';
    return kExitUsage;
  }
}

}  // namespace core_timeline::ctl_query
