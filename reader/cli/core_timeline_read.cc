/* SPDX-License-Identifier: MIT */
/*
 * core-timeline-read - print the timeline a libtimeline process left in its
 * own core dump.
 *
 *   core-timeline-read [--core-only] [--json] [--wall-clock] [--by-thread]
 *                      [--sidecar PATH] [--tlmap FILE] [--unverified-symbols]
 *                      [--no-symbols] CORE [EXECUTABLE]
 *   core-timeline-read --pid PID [--save FILE [--force]] [the options above]
 *                      [EXECUTABLE]
 *
 * --pid reads the ring of a running process without stopping it, as a live
 * snapshot (core_timeline/reader/live.h): an ELF core built in memory and
 * read like any other; --save writes that core to FILE (mode 0600; an
 * existing FILE is refused unless --force).
 *
 * Exit codes (docs/timeline-json.md):
 *   0 timeline printed          1 no CTLN mapping found (the process did
 *                                 not use libtimeline)
 *   2 timeline mapping absent, or whether there was one cannot be told
 *     (excluded by coredump_filter, or the core is cut off)
 *   3 core unreadable, not an ELF core, or nothing to read in it; with
 *     --pid, no snapshot could be taken (no such process, access refused,
 *     it exited during the copy)
 *   4 ring invalid              5 EXECUTABLE refused (build-id mismatch)
 *   6 sidecar identity mismatch 7 usage error / unreadable --tlmap /
 *                                 --save FILE not written
 *   8 libtimeline was loaded but made no ring (its ring-less header says why)
 * A failure prints one line "core-timeline-read: REASON" on stderr.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/live.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/tlmap.h"

namespace ctr = core_timeline::reader;

int main(int argc, char **argv) {
  CLI::App app{"Print the timeline that a process using libtimeline left in its core dump.\n"
               "Exit codes: 0 timeline printed, 1 no CTLN mapping found, 2 timeline mapping absent\n"
               "or cannot be told (excluded, or the core is cut off), 3 core unreadable, not an ELF core\n"
               "or nothing to read, 4 ring invalid, 5 EXECUTABLE refused,\n"
               "6 sidecar identity mismatch, 7 usage error, 8 libtimeline loaded but made no ring.",
               "core-timeline-read"};
  bool core_only = false, as_json = false, unverified = false, no_symbols = false;
  ctr::TextOptions text;
  std::string sidecar, tlmap_path, core_path, exe_path, save_path;
  int pid = 0;
  bool force = false;
  app.add_flag("--core-only", core_only, "Use the core alone; ignore any sidecar");
  app.add_flag("--json", as_json, "Print one JSON document (docs/timeline-json.md)");
  app.add_flag("--wall-clock", text.wall_clock,
               "Show each event's wall-clock time (journalctl's short-precise style, local time) instead of its "
               "age relative to the crash");
  app.add_flag("--by-thread", text.by_thread, "Group events by thread instead of one list merged by time");
  app.add_option("--sidecar", sidecar, "Sidecar file (byte copy of the ring) to merge, degraded mode");
  app.add_option("--tlmap", tlmap_path, "File naming user event ids (\"0x1001 REQ_PARSE\" lines)");
  app.add_flag("--unverified-symbols", unverified,
               "Symbolize modules the core records no build-id for; tagged unverified");
  app.add_flag("--no-symbols", no_symbols, "Do not symbolize (raw module+offset only)");
  auto *pid_opt = app.add_option("--pid", pid,
                                 "Read the ring of running process PID without stopping it: a live snapshot "
                                 "(needs what ptrace attach needs: same user, or CAP_SYS_PTRACE)")
                      ->check(CLI::PositiveNumber);
  auto *save_opt = app.add_option("--save", save_path,
                                  "With --pid: also write the snapshot, an ELF core, to FILE (mode 0600; an existing "
                                  "FILE is refused unless --force)")
                       ->needs(pid_opt);
  app.add_flag("--force", force, "With --save: replace an existing FILE")->needs(save_opt);
  auto *core_opt = app.add_option("CORE", core_path, "The core file (uncompressed ELF core); with --pid, none");
  app.add_option("EXECUTABLE", exe_path, "The crashed executable; refused unless its build-id matches the core");
  try {
    app.parse(argc, argv);
    if (pid_opt->count() == 0 && core_opt->count() == 0) throw CLI::RequiredError("CORE (or --pid PID)");
  } catch (const CLI::ParseError &e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : ctr::exit_code(ctr::Status::kUsage);
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
  opts.symbolize = !no_symbols;
  opts.tlmap = tlmap ? &*tlmap : nullptr;

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
  /* Written as it is made: a ring of a million events is never one string. */
  const ctr::Output out = ctr::file_output(stdout);
  const bool written = as_json ? ctr::write_json(a, out) : ctr::write_text(a, out, text);
  if (!written || std::fflush(stdout) != 0)
    std::fprintf(stderr, "core-timeline-read: writing the timeline: %s\n", std::strerror(errno));
  if (a.status != ctr::Status::kOk) {
    std::string reason = a.reason;
    for (auto &c : reason)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "core-timeline-read: %s\n", reason.c_str());
  }
  return ctr::exit_code(a.status);
}
