/* SPDX-License-Identifier: MIT */
/*
 * options.h - core-timelined's command line and configuration file.
 *
 * Every option can be given on the command line (--name VALUE) or in the
 * configuration file (default /etc/core-timeline/core-timelined.conf, read
 * if it exists) as "name = value" lines, '#' comments (CLI11's config
 * format).  The command line wins.  With no arguments and no file the
 * daemon runs with the defaults below, which suit a standard system.
 *
 * Thread-safety: plain values.
 */
#ifndef CORE_TIMELINE_DAEMON_OPTIONS_H
#define CORE_TIMELINE_DAEMON_OPTIONS_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "log.h"
#include "util.h"

namespace core_timeline::daemon {

inline constexpr const char kDefaultConfig[] = "/etc/core-timeline/core-timelined.conf";

enum class FirstStart { kBoot, kNew, kAll };
/** The name --first-start takes: "boot", "new", "all". */
std::string_view first_start_name(FirstStart f) noexcept;

struct Options {
  std::string config = kDefaultConfig;
  /** Where systemd-coredump stores cores (cores outside it are refused). */
  std::string coredump_dir = "/var/lib/systemd/coredump";
  /** Where timelines of stored cores go; "" = next to the core. */
  std::string output_dir;
  /** Cursor, timelines of cores that are not files, temporary files. */
  std::string state_dir = "/var/lib/core-timeline";
  /** Without a saved cursor: "boot" (every crash of the current boot),
   *  "new" (only crashes from now on), "all" (the whole journal). */
  FirstStart first_start = FirstStart::kBoot;
  std::uint64_t decode_timeout_ms = 30000;
  /** With DEBUGINFOD_URLS: what all debuginfod downloads of one core may
   *  take together (SymbolizeOptions::debuginfod_timeout_ms); 0: only the
   *  client library's own limits. */
  std::uint64_t debuginfod_timeout_ms = 5000;
  std::uint64_t memory_limit = 1ull << 30;
  std::uint64_t keep_whole_below = 64ull << 20;
  std::uint64_t max_kept = 1ull << 30;
  /** NAME.tlmap here names the events of executables called NAME. */
  std::string tlmap_dir = "/etc/core-timeline/tlmap.d";
  /** Handle what is in the journal, then exit (no waiting, no notify). */
  bool once = false;
  /** Read the journal files in this directory (sd_journal_open_directory(3),
   *  as `journalctl -D`) instead of the system's journal; "" = the
   *  system's.  For a copied or received journal, and for tests. */
  std::string journal_directory;
  log::Target log_target = log::Target::kAuto;  /**< --log-target (log::target_name) */
  std::string log_level = "info";    /**< trace, debug, info, warn, err */
  /** Most bytes of the document in a crash's journal entry (the timeline
   *  entry, docs/core-timelined.md); a bigger one is cut to fit; 0: the
   *  entry carries no document. */
  std::uint64_t journal_document_max = 1ull << 20;
  /** --journal-payload=yes: the entry's document keeps the I/O events'
   *  payload bytes; false (the default): they are left out of it
   *  (document::journal::omit_payload()); the timeline file keeps them. */
  bool journal_payload = false;
  /** Paths systemd-coredump may have as _EXE (empty: the defaults). */
  std::vector<std::string> coredump_exes;
};

/**
 * Parses the command line and the configuration file.  On --help or
 * --version prints and sets *exit_now to 0; on a bad option returns an
 * Error naming it (and what is accepted).
 */
Result<Options> parse_options(int argc, char **argv, int *exit_now);

/** The daemon's version (the project version). */
const char *version();

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_OPTIONS_H
