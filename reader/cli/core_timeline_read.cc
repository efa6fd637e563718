/* SPDX-License-Identifier: MIT */
/*
 * core-timeline-read - print the timeline a libtimeline process left in its
 * own core dump.
 *
 *   core-timeline-read [--core-only] [--json] [--wall-clock] [--by-thread]
 *                      [--sidecar PATH] [--tlmap FILE] [--unverified-symbols]
 *                      [--no-symbols] [--debuginfod-timeout SECONDS]
 *                      [--all-threads]
 *                      [--format=text|json|compact|chrome-trace|ctf]
 *                      [--output PATH] CORE [EXECUTABLE]
 *
 * --format=chrome-trace and ctf export the timeline (export.h,
 * docs/export.md); --output writes to PATH instead of stdout, and is the
 * directory the ctf trace is made in (required for ctf).
 *   core-timeline-read --pid PID [--save FILE [--force]] [the options above]
 *                      [EXECUTABLE]
 *
 * --pid reads the ring of a running process without stopping it, as a live
 * snapshot (core_timeline/reader/live.h): an ELF core built in memory and
 * read like any other; --save writes that core to FILE, a regular file
 * (created with mode 0600; an existing FILE is refused unless --force,
 * which writes it in place and keeps its mode; anything but a regular file
 * is refused).
 *
 * Exit codes: one per status of core-timeline-read, 0..8
 * (core_timeline/document/status.h, exit_code() and exit_meaning(), which
 * --help lists; docs/timeline-json.md, "Exit codes").
 * A failure prints one line "core-timeline-read: REASON" on stderr.
 */
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/export.h"
#include "core_timeline/reader/live.h"
#include "core_timeline/reader/number.h"
#include "core_timeline/reader/printable.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/tlmap.h"

namespace ctr = core_timeline::reader;

namespace {

enum class Format { kText, kJson, kCompact, kChromeTrace, kCtf };

/* The largest process id Linux gives (PID_MAX_LIMIT on 64-bit, 2^22;
 * /proc/sys/kernel/pid_max is at most that). */
constexpr unsigned kPidMaxLimit = 4194304;

/* --pid's value: a process id, 1 to kPidMaxLimit, in decimal digits only.
 * Its message is a sentence about the value given (CLI11 puts "--pid: "
 * before it); the value is escaped, as it is printed. */
const CLI::Validator kProcessId(
    [](std::string &value) -> std::string {
      const auto pid = ctr::parse_unsigned<unsigned>(value);
      if (pid && *pid >= 1 && *pid <= kPidMaxLimit) return {};
      const bool numeric = !value.empty() && value.find_first_not_of("+-0123456789") == std::string::npos;
      const std::string shown =
          numeric ? ctr::printable(value, {.max_len = 64})
                  : "\"" + ctr::printable(value, {.max_len = 64, .quoted = true}) + "\"";
      return fmt::format("{} is not a process id: process ids are whole numbers from 1 to {}", shown, kPidMaxLimit);
    },
    "1..4194304", "process id");

/* True when `a` and `b` name one existing file (same st_dev and st_ino). */
bool same_file(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  return !a.empty() && !b.empty() && stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Writes the timeline in `format` to `out` (or, for ctf, into the
 * directory `output`); false with a message on stderr when that failed. */
bool write_timeline(const ctr::Analysis &a, Format format, const ctr::TextOptions &text, std::FILE *out,
                    const std::string &output) {
  /* Written as it is made: a ring of a million events is never one string. */
  const ctr::Output to_file = ctr::file_output(out);
  std::string what = "writing the timeline";
  ctr::Result<void> r;
  switch (format) {
    case Format::kText:
      if (!ctr::write_text(a, to_file, text)) r = ctr::system_error(errno, what);
      break;
    case Format::kJson:
      if (!ctr::write_json(a, to_file)) r = ctr::system_error(errno, what);
      break;
    case Format::kCompact:
      if (!ctr::write_compact(a, to_file)) r = ctr::system_error(errno, what);
      break;
    case Format::kChromeTrace: {
      auto w = ctr::chrome_trace_writer(ctr::export_timeline_of(a), to_file);
      r = ctr::export_events(a, *w);
      break;
    }
    case Format::kCtf: {
      auto w = ctr::ctf_writer(ctr::export_timeline_of(a), output);
      if (!w) {
        r = w.error();
        break;
      }
      r = ctr::export_events(a, **w);
      break;
    }
  }
  if (r && out && std::fflush(out) != 0) r = ctr::system_error(errno, what);
  if (!r) std::fprintf(stderr, "core-timeline-read: %s\n", r.error().message.c_str());
  return r.ok();
}

/* "Exit codes: 0 timeline printed, 1 ...", from the one table of statuses
 * (core_timeline/document/status.h exit_code(), exit_meaning()). */
std::string exit_codes_help() {
  std::string h = "Exit codes:";
  for (const ctr::Status s : core_timeline::document::kReaderStatuses)
    h += fmt::format("{}\n  {} {} ({})", s == ctr::Status::kOk ? "" : ",", ctr::exit_code(s),
                     core_timeline::document::exit_meaning(s), ctr::status_name(s));
  return h + ".";
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"Print the timeline that a process using libtimeline left in its core dump.\n" + exit_codes_help(),
               "core-timeline-read"};
  bool core_only = false, as_json = false, unverified = false, no_symbols = false, all_threads = false;
  ctr::TextOptions text;
  std::string sidecar, tlmap_path, core_path, exe_path, save_path;
  int pid = 0;
  bool force = false;
  app.add_flag("--core-only", core_only, "Use the core alone; ignore any sidecar");
  app.add_flag("--json", as_json, "Print one JSON document (docs/timeline-json.md); --format=json");
  Format format = Format::kText;
  const std::map<std::string, Format> formats{{"text", Format::kText},
                                              {"json", Format::kJson},
                                              {"compact", Format::kCompact},
                                              {"chrome-trace", Format::kChromeTrace},
                                              {"ctf", Format::kCtf}};
  app.add_option("--format", format,
                 "Output: text (default), json, compact (the compact JSON document core-timelined stores), chrome-trace (Trace Event Format: Perfetto, chrome://tracing, "
                 "speedscope) or ctf (a CTF 1.8 directory: babeltrace2, Trace Compass); docs/export.md")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case))
      ->type_name("FORMAT");
  std::string output;
  app.add_option("--output", output,
                 "Write to this file instead of stdout; for --format=ctf the directory to make the trace in "
                 "(required; new or empty)")
      ->type_name("PATH");
  app.add_flag("--wall-clock", text.wall_clock,
               "Show each event's wall-clock time (journalctl's short-precise style, local time) instead of its "
               "age relative to the crash");
  app.add_flag("--by-thread", text.by_thread, "Group events by thread instead of one list merged by time");
  app.add_option("--sidecar", sidecar, "Sidecar file (byte copy of the ring) to merge, degraded mode");
  app.add_option("--tlmap", tlmap_path, "File naming user event ids (\"0x1001 REQ_PARSE\" lines)");
  app.add_flag("--unverified-symbols", unverified,
               "Symbolize modules the core records no build-id for; tagged unverified");
  app.add_flag("--no-symbols", no_symbols, "Do not symbolize (raw module+offset only)");
  app.add_flag("--all-threads", all_threads,
               "Also unwind every other thread of the core with libdwfl (the crashing thread's stack is always "
               "unwound, beside the CRASH event's own walk)");
  double debuginfod_timeout = 5;
  app.add_option("--debuginfod-timeout", debuginfod_timeout,
                 "With DEBUGINFOD_URLS: seconds all debuginfod downloads of this read may take together; then "
                 "symbols without the debug info not yet fetched, and a note (0: only libdebuginfod's own "
                 "limits, DEBUGINFOD_TIMEOUT and DEBUGINFOD_MAXTIME)")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str()
      ->type_name("SECONDS");
  auto *pid_opt = app.add_option("--pid", pid,
                                 "Read the ring of running process PID without stopping it: a live snapshot "
                                 "(needs what ptrace attach needs: same user, or CAP_SYS_PTRACE)")
                      ->check(kProcessId)
                      ->type_name("PID");
  auto *save_opt = app.add_option("--save", save_path,
                                  "With --pid: also write the snapshot, an ELF core, to FILE, a regular file (created "
                                  "with mode 0600; an existing FILE is refused unless --force)")
                       ->needs(pid_opt);
  app.add_flag("--force", force, "With --save: write over an existing regular FILE (its mode is kept)")->needs(save_opt);
  auto *core_opt = app.add_option("CORE", core_path, "The core file (uncompressed ELF core); with --pid, none");
  app.add_option("EXECUTABLE", exe_path, "The crashed executable; refused unless its build-id matches the core");
  try {
    app.parse(argc, argv);
    if (pid_opt->count() == 0 && core_opt->count() == 0) throw CLI::RequiredError("CORE (or --pid PID)");
  } catch (const CLI::ParseError &e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : ctr::exit_code(ctr::Status::kUsage);
  }
  if (as_json) {
    if (app.count("--format") && format != Format::kJson) {
      std::fprintf(stderr, "core-timeline-read: --json is --format=json; it cannot go with another --format\n");
      return ctr::exit_code(ctr::Status::kUsage);
    }
    format = Format::kJson;
  }
  if (format == Format::kCtf && output.empty()) {
    std::fprintf(stderr, "core-timeline-read: --format=ctf needs --output DIR (the directory to make the trace in)\n");
    return ctr::exit_code(ctr::Status::kUsage);
  }
  /* --output is truncated before it is written: never one of the inputs. */
  for (const std::string *input : {&core_path, &exe_path, &sidecar, &tlmap_path})
    if (same_file(output, *input)) {
      std::fprintf(stderr, "core-timeline-read: --output %s is an input (%s): refused, it would be overwritten\n",
                   output.c_str(), input->c_str());
      return ctr::exit_code(ctr::Status::kUsage);
    }
  if (pid_opt->count() > 0 && !core_path.empty()) {
    /* --pid takes no CORE: the one positional is the EXECUTABLE. */
    if (!exe_path.empty()) {
      std::fprintf(stderr, "core-timeline-read: --pid takes no CORE, only an optional EXECUTABLE\n");
      return ctr::exit_code(ctr::Status::kUsage);
    }
    exe_path = std::move(core_path);
    core_path.clear();
  }
  if (pid_opt->count() > 0 && !exe_path.empty() && ctr::CoreFile::open(exe_path)) {
    /* A core given with --pid would be taken as the EXECUTABLE, and
     * refused for its build-id: say what was given instead. */
    std::fprintf(stderr,
                 "core-timeline-read: %s is a core file, and --pid reads a running process, not a core (with --pid "
                 "the one file named is the process's EXECUTABLE): give the core without --pid, or --pid alone\n",
                 ctr::printable(exe_path).c_str());
    return ctr::exit_code(ctr::Status::kUsage);
  }

  std::optional<ctr::TlMap> tlmap;
  if (!tlmap_path.empty()) {
    auto m = ctr::TlMap::load(tlmap_path);
    if (!m) {
      std::fprintf(stderr, "core-timeline-read: --tlmap: %s\n", m.error().message.c_str());
      return ctr::exit_code(ctr::Status::kUsage);
    }
    tlmap = std::move(*m);
  }

  ctr::ReadOptions opts;
  opts.core_only = core_only;
  if (!sidecar.empty()) opts.sidecar_path = sidecar;
  if (!exe_path.empty()) opts.executable = exe_path;
  opts.unverified_symbols = unverified;
  /* Every format symbolizes: the exports name each stack frame
   * (docs/export.md, "Stacks") as the stored document does. */
  opts.symbolize = !no_symbols;
  opts.all_threads = all_threads;
  opts.tlmap = tlmap ? &*tlmap : nullptr;
  opts.debuginfod_timeout_ms = static_cast<int>(std::ceil(debuginfod_timeout * 1000));

  ctr::Analysis a;
  if (pid_opt->count() > 0) {
    const std::string name = "pid " + std::to_string(pid) + " (live snapshot)";
    auto snap = ctr::snapshot_process(pid);
    if (!snap) {
      a.status = ctr::Status::kCoreUnreadable;
      a.core_path = name;
      a.reason = "cannot take a live snapshot: " + snap.error().message;
    } else {
      if (!save_path.empty())
        if (auto saved = ctr::save_snapshot(snap->core, save_path, force); !saved) {
          std::fprintf(stderr, "core-timeline-read: %s\n", saved.error().message.c_str());
          return ctr::exit_code(ctr::Status::kUsage);
        }
      ctr::FileFacts facts;
      auto core = ctr::CoreFile::from_bytes(std::move(snap->core), name, &facts);
      a = core ? ctr::analyze(*core, opts) : ctr::analysis_of_error(name, core.error(), facts);
      for (auto &w : snap->warnings) a.warnings.push_back("snapshot: " + w);
    }
  } else {
    ctr::FileFacts facts;
    auto core = ctr::CoreFile::open(core_path, &facts);
    a = core ? ctr::analyze(*core, opts) : ctr::analysis_of_error(core_path, core.error(), facts);
  }
  std::FILE *out = stdout;
  std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(nullptr, std::fclose);
  if (!output.empty() && format != Format::kCtf) {
    file.reset(std::fopen(output.c_str(), "we"));
    if (!file) {
      std::fprintf(stderr, "core-timeline-read: --output %s: %s\n", output.c_str(), std::strerror(errno));
      return ctr::exit_code(ctr::Status::kUsage);
    }
    out = file.get();
  }
  const bool written = write_timeline(a, format, text, format == Format::kCtf ? nullptr : out, output);
  if (file && std::fclose(file.release()) != 0 && written)
    std::fprintf(stderr, "core-timeline-read: --output %s: %s\n", output.c_str(), std::strerror(errno));
  /* A trace directory that could not be made (not empty, not creatable)
   * is an unusable --output: exit 7, whatever the core said. */
  if (!written && format == Format::kCtf) return ctr::exit_code(ctr::Status::kUsage);
  if (a.status != ctr::Status::kOk) {
    std::string reason = a.reason;
    for (auto &c : reason)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "core-timeline-read: %s\n", reason.c_str());
  }
  return ctr::exit_code(a.status);
}
