/* SPDX-License-Identifier: MIT */
/*
 * coredump_conf.h - what systemd-coredump's configuration says about the
 * largest core the daemon may have to extract: Storage=, ProcessSizeMax=,
 * ExternalSizeMax= and JournalSizeMax= of coredump.conf(5), read as
 * systemd-coredump reads them (the main file, then the drop-ins).
 *
 * Sources, in systemd's order (coredump.conf(5), "Configuration
 * directories and precedence"; systemd 252 config_parse_many_nulstr()):
 *   ROOT/etc/systemd/coredump.conf, then every *.conf in the drop-in
 *   directories ROOT/etc/systemd/coredump.conf.d, ROOT/run/systemd/...,
 *   ROOT/usr/local/lib/systemd/..., ROOT/usr/lib/systemd/...: sorted by
 *   file name whatever the directory, a name in an earlier directory hiding
 *   the same name in a later one (a link to /dev/null hides it and says
 *   nothing); for each key, the last value read wins.
 * Only the [Coredump] section counts.  A value systemd would refuse (not a
 * size, an unknown Storage=) leaves the key as it was, as systemd's parser
 * does after its warning; `notes` says which.
 *
 * Defaults: systemd 252's (the commented lines of Debian 12's
 * /etc/systemd/coredump.conf, "the compile time defaults"):
 * Storage=external, ProcessSizeMax=2G, ExternalSizeMax=2G,
 * JournalSizeMax=767M.
 *
 * Sizes are bytes; systemd's suffixes B, K, M, G, T, P, E are powers of
 * 1024, a decimal fraction is allowed ("1.5G"), "infinity" is UINT64_MAX.
 *
 * Errors: none; an unreadable file is skipped and named in `notes`.
 * Thread-safety: plain functions and values.
 */
#ifndef CORE_TIMELINE_DAEMON_COREDUMP_CONF_H
#define CORE_TIMELINE_DAEMON_COREDUMP_CONF_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace core_timeline::daemon {

struct CoredumpConf {
  enum class Storage { kNone, kExternal, kJournal };
  Storage storage = Storage::kExternal;
  std::uint64_t process_size_max = 2ull << 30;
  std::uint64_t external_size_max = 2ull << 30;
  std::uint64_t journal_size_max = 767ull << 20;
  /** The files read, in order (for the start's log line). */
  std::vector<std::string> files;
  /** What was skipped and why (an unreadable file, a refused value). */
  std::vector<std::string> notes;

  /** The largest core, uncompressed, that systemd-coredump may hand on:
   *  with Storage=external it stores up to MAX(ProcessSizeMax,
   *  ExternalSizeMax) bytes of the core (systemd 252 coredump.c
   *  save_external_coredump(), which cuts the core there; the file it
   *  keeps is compressed and at most ExternalSizeMax), with
   *  Storage=journal at most JournalSizeMax in the entry's COREDUMP=
   *  field, with Storage=none nothing. */
  std::uint64_t largest_core() const;
  /** "Storage=external, ProcessSizeMax=2G, ExternalSizeMax=2G" and the
   *  like: the settings largest_core() follows from. */
  std::string describe() const;
};

/** coredump.conf and its drop-ins under `root` ("" for /). */
CoredumpConf read_coredump_conf(const std::string &root = "");

/** A size as systemd parses it (above); nullopt if it is not one. */
std::optional<std::uint64_t> parse_systemd_size(std::string_view s);

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_COREDUMP_CONF_H
