/* SPDX-License-Identifier: MIT */
/*
 * names.h - the file names of stored timelines (docs/core-timelined.md,
 * "Where timelines go").
 *
 * core-timelined names each timeline after its core.  Beside the core:
 * the core file's name without its compression suffix, plus
 * ".timeline.json".  In the state directory, or when there is no core
 * file, the name systemd-coredump would give the core:
 *
 *     core.<comm>.<uid>.<boot id>.<pid>.<usec>.timeline.json
 *
 * (systemd-coredump, src/coredump/coredump.c make_filename(): comm is
 * escaped with xescape(s, "./ ") (src/basic/escape.c), so a '.' never
 * occurs inside a field; usec is COREDUMP_TIMESTAMP, the kernel's crash
 * time in whole seconds times 10^6).  ctl-query reads these facts back
 * from a name to filter before it opens a file; the document stays the
 * authority for everything it prints.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DOCUMENT_NAMES_H
#define CORE_TIMELINE_DOCUMENT_NAMES_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace core_timeline::document {

/** The suffix every timeline file carries. */
inline constexpr std::string_view kTimelineSuffix = ".timeline.json";

/** The extended attribute core-timelined gives the timeline of a crash in
 *  a pid namespace: its pid in that namespace (the document's pids.pid), in
 *  decimal.  ctl-query reads it, as it reads the host pid from the file
 *  name, to tell whether a PID match may hold without parsing the
 *  document (docs/ctl-query.md, "Untrusted documents"); like the user.*
 *  xattrs systemd-coredump puts on cores, only those who may read the file
 *  may read it (xattr(7)). */
inline constexpr const char kNamespacePidXattr[] = "user.core_timeline.namespace_pid";

/** The crash facts a timeline's file name carries. */
struct TimelineName {
  std::string comm;       /**< COREDUMP_COMM, unescaped (untrusted bytes) */
  std::uint64_t uid = 0;  /**< COREDUMP_UID */
  std::string boot_id;    /**< 32 lower-case hex digits */
  std::uint64_t pid = 0;  /**< COREDUMP_PID, not 0 */
  std::uint64_t usec = 0; /**< COREDUMP_TIMESTAMP */
};

/** core.COMM.UID.BOOT_ID.PID.USEC.timeline.json for `n`: comm is cut to
 *  32 bytes (the kernel's is at most 15) and escaped with xescape_comm(),
 *  "unknown" when empty.  parse_timeline_name() of the result gives `n`
 *  back for a comm of at most 32 bytes. */
std::string format_timeline_name(const TimelineName &n);

/** Parses the name systemd-coredump gives a core file (no directory):
 *  core.COMM.UID.BOOT_ID.PID.USEC, with or without .zst/.lz4/.xz.
 *  nullopt when it does not have that form. */
std::optional<TimelineName> parse_core_file_name(std::string_view file_name);

/** Parses a file name (no directory) of the form above.  Returns nullopt
 *  when it does not have that form (a timeline renamed by hand is still
 *  read; it just cannot be filtered before it is opened). */
std::optional<TimelineName> parse_timeline_name(std::string_view file_name);

/** True when `file_name` (no directory) ends in ".timeline.json", has
 *  something before it and does not begin with '.' (a temporary). */
bool is_timeline_file_name(std::string_view file_name) noexcept;

/** The name of the timeline of the core file `core_name`: without
 *  .zst/.lz4/.xz, plus ".timeline.json"; "" for "". */
std::string timeline_name_for_core(std::string_view core_name);

/** `name` without a trailing ".zst", ".lz4" or ".xz". */
std::string_view strip_compression_suffix(std::string_view name) noexcept;

/** systemd's xescape(s, "./ ") plus '/': every byte below 0x20 or above
 *  0x7e, '\\', '.', '/' and ' ' as \xNN (lower-case hex). */
std::string xescape_comm(std::string_view s);

/** Undoes xescape(): "\xNN" becomes the byte 0xNN; anything else is
 *  copied.  A malformed escape is copied as is. */
std::string unescape_x(std::string_view s);

}  // namespace core_timeline::document

#endif  // CORE_TIMELINE_DOCUMENT_NAMES_H
