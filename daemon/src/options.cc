/* SPDX-License-Identifier: MIT */
/* options.cc - see options.h. */
#include "options.h"

#include <cmath>
#include <cstdio>

#include <CLI/CLI.hpp>

#ifndef CT_VERSION
#define CT_VERSION "0.0.0"
#endif

namespace core_timeline::daemon {

const char *version() { return CT_VERSION; }

namespace {

std::string strip_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

std::string_view first_start_name(FirstStart f) noexcept {
  switch (f) {
    case FirstStart::kBoot: return "boot";
    case FirstStart::kNew: return "new";
    case FirstStart::kAll: return "all";
  }
  return "boot";
}

namespace {

/* Options as given, before check_values() turns them into Options. */
struct Given {
  std::string first_start = "boot", timeout = "30", debuginfod_timeout = "5", log_target = "auto",
              journal_payload = "no";
  bool show_version = false;
};

/* Every option of core-timelined, into `o` or `g`. */
void declare_options(CLI::App &app, Options &o, Given &g) {
  app.set_config("--config", kDefaultConfig,
                 "Configuration file of 'name = value' lines (read if it exists)");
  // Sizes: bytes, or with CLI11's size suffixes (K, M, G, T: powers of 1024;
  // KB, KiB ... as CLI::AsSizeValue takes them).
  // (AsSizeValue would read "-1" as 2^64 - 1.)
  const CLI::Validator not_negative(
      [](std::string &v) { return v.find('-') == std::string::npos ? std::string() : "a size cannot be negative"; },
      "");
  const auto size = [&not_negative] { return CLI::AsSizeValue(false).description("") & not_negative; };
  app.add_option("--coredump-dir", o.coredump_dir, "Where systemd-coredump stores cores")->capture_default_str();
  app.add_option("--output-dir", o.output_dir,
                 "Where timelines of stored cores are written (default: next to the core)");
  app.add_option("--state-dir", o.state_dir,
                 "Saved journal cursor, timelines of cores that are not files, temporary files")
      ->capture_default_str();
  app.add_option("--first-start", g.first_start,
                 "Without a saved cursor, handle the crashes of: boot (this boot), new (from now on), all")
      ->check(CLI::IsMember({"boot", "new", "all"}))
      ->capture_default_str();
  app.add_option("--decode-timeout", g.timeout, "Seconds a core may take to decode before it is undecodable")
      ->capture_default_str();
  app.add_option("--debuginfod-timeout", g.debuginfod_timeout,
                 "With DEBUGINFOD_URLS in the environment: seconds all debuginfod downloads of one core may take "
                 "together (0: only libdebuginfod's own limits); keep it below --decode-timeout")
      ->capture_default_str();
  app.add_option("--memory-limit", o.memory_limit,
                 "Address space the decoder may use beyond the mapped core (bytes, K/M/G suffix)")
      ->transform(size())
      ->default_str("1G");
  app.add_option("--keep-whole-below", o.keep_whole_below,
                 "Cores up to this size are decoded whole; larger ones sparse (only rings, headers, notes)")
      ->transform(size())
      ->default_str("64M");
  app.add_option("--max-kept", o.max_kept, "Most bytes of one core kept for decoding")
      ->transform(size())
      ->default_str("1G");
  app.add_option("--journal-document-max", o.journal_document_max,
                 "Most bytes of the timeline document in a crash's journal entry; a bigger one is cut to fit "
                 "(newest events kept); 0: no document in the entry")
      ->transform(size())
      ->default_str("1M");
  app.add_option("--journal-payload", g.journal_payload,
                 "yes: keep the I/O events' payload bytes (READ, WRITE, RECV, SEND) in the journal entry's "
                 "document; no: leave them out (the timeline file beside the core keeps them)")
      ->check(CLI::IsMember({"yes", "no"}))
      ->capture_default_str();
  app.add_option("--tlmap-dir", o.tlmap_dir, "Event names: NAME.tlmap names the events of executable NAME")
      ->capture_default_str();
  app.add_flag("--once", o.once, "Handle the entries in the journal now, then exit");
  app.add_option("--journal-directory", o.journal_directory,
                 "Read the journal files in this directory instead of the system's journal (as journalctl -D)");
  app.add_option("--log-target", g.log_target,
                 "Where to log: auto, journal, stderr or both (timeline entries go to the journal whatever it says)")
      ->check(CLI::IsMember({"auto", "journal", "stderr", "both"}))
      ->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn or err")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "err"}))
      ->capture_default_str();
  app.add_option("--coredump-exe", o.coredump_exes,
                 "Path systemd-coredump runs as (_EXE of its entries); repeatable; default "
                 "/usr/lib/systemd/systemd-coredump and /lib/systemd/systemd-coredump");
  app.add_flag("--version", g.show_version, "Print the version and exit");
}

/* The values CLI11 cannot check alone, into `o`: the timeout, the first
 * start and log target, lower bounds of sizes, absolute paths. */
Result<void> check_values(const Given &g, Options &o) {
  for (const FirstStart f : {FirstStart::kBoot, FirstStart::kNew, FirstStart::kAll})
    if (first_start_name(f) == g.first_start) o.first_start = f;
  o.log_target = log::target_from_name(g.log_target).value_or(log::Target::kAuto);
  o.journal_payload = g.journal_payload == "yes";
  char *end = nullptr;
  const double secs = std::strtod(g.timeout.c_str(), &end);
  if (end == g.timeout.c_str() || *end != '\0' || !(secs > 0) || secs > 86400)
    return error_of(EINVAL, "--decode-timeout " + g.timeout + ": give seconds, more than 0 and at most 86400");
  o.decode_timeout_ms = static_cast<std::uint64_t>(std::ceil(secs * 1000));
  end = nullptr;
  const double dsecs = std::strtod(g.debuginfod_timeout.c_str(), &end);
  if (end == g.debuginfod_timeout.c_str() || *end != '\0' || !(dsecs >= 0) || dsecs > 3600)
    return error_of(EINVAL, "--debuginfod-timeout " + g.debuginfod_timeout + ": give seconds, 0 to 3600");
  o.debuginfod_timeout_ms = static_cast<std::uint64_t>(std::ceil(dsecs * 1000));
  if (o.memory_limit < (1ull << 20))
    return error_of(EINVAL, "--memory-limit " + std::to_string(o.memory_limit) +
                             ": at least 1M (the decoder itself needs about 20M)");
  if (o.max_kept < (1ull << 20)) return error_of(EINVAL, "--max-kept " + std::to_string(o.max_kept) + ": at least 1M");
  if (o.keep_whole_below > o.max_kept) o.keep_whole_below = o.max_kept;
  if (o.journal_document_max != 0 && (o.journal_document_max < (64ull << 10) || o.journal_document_max > (64ull << 20)))
    return error_of(EINVAL, "--journal-document-max " + std::to_string(o.journal_document_max) +
                             ": 0 (no document in the entry), or 64K to 64M (journald keeps an entry within one "
                             "journal file, at most 128M and often far less: docs/core-timelined.md)");
  o.coredump_dir = strip_slashes(o.coredump_dir);
  o.state_dir = strip_slashes(o.state_dir);
  o.output_dir = strip_slashes(o.output_dir);
  if (o.coredump_dir.empty() || o.coredump_dir[0] != '/')
    return error_of(EINVAL, "--coredump-dir must be an absolute path");
  if (o.state_dir.empty() || o.state_dir[0] != '/') return error_of(EINVAL, "--state-dir must be an absolute path");
  if (!o.output_dir.empty() && o.output_dir[0] != '/') return error_of(EINVAL, "--output-dir must be an absolute path");
  if (!o.journal_directory.empty() && o.journal_directory[0] != '/')
    return error_of(EINVAL, "--journal-directory must be an absolute path");
  return {};
}

}  // namespace

Result<Options> parse_options(int argc, char **argv, int *exit_now) {
  *exit_now = -1;
  Options o;
  Given g;
  CLI::App app{"core-timelined: for every crash that systemd-coredump stores, write the timeline the crashed\n"
               "process left in its core (the compact document of core-timeline-read --format=compact) next to the core.\n"
               "See docs/core-timelined.md.",
               "core-timelined"};
  declare_options(app, o, g);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    *exit_now = app.exit(e);
    return o;
  } catch (const CLI::ParseError &e) {
    return error_of(EINVAL, std::string(e.what()) + " (core-timelined --help lists the options)");
  }
  if (g.show_version) {
    std::printf("core-timelined %s\n", version());
    *exit_now = 0;
    return o;
  }
  o.config = app.get_config_ptr() ? app.get_config_ptr()->as<std::string>() : kDefaultConfig;
  CT_TRY_VOID(check_values(g, o));
  return o;
}

}  // namespace core_timeline::daemon
