/* SPDX-License-Identifier: MIT */
/*
 * timeline_name.h - what a timeline's file name says about its crash.
 *
 * core-timelined names each timeline after its core:
 *
 *     core.<comm>.<uid>.<boot id>.<pid>.<usec>.timeline.json
 *
 * where everything before ".timeline.json" is systemd-coredump's core file
 * name without its compression suffix (systemd-coredump make_filename():
 * comm, uid, pid and usec are escaped with xescape(s, "./ "), so a '.' never
 * occurs inside a field; usec is COREDUMP_TIMESTAMP, the kernel's crash time
 * in whole seconds times 10^6).  ctl-query reads these facts from the name
 * to filter before it opens a file; the document stays the authority for
 * everything it prints.
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_CTL_QUERY_TIMELINE_NAME_H
#define CORE_TIMELINE_CTL_QUERY_TIMELINE_NAME_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace core_timeline::ctlq {

/** The suffix every timeline file carries. */
inline constexpr std::string_view kTimelineSuffix = ".timeline.json";

/** The crash facts a timeline's file name carries. */
struct TimelineName {
  std::string comm;      /**< COREDUMP_COMM, unescaped (untrusted bytes) */
  std::uint32_t uid = 0; /**< COREDUMP_UID */
  std::string boot_id;   /**< 32 lower-case hex digits */
  std::uint32_t pid = 0; /**< COREDUMP_PID */
  std::uint64_t usec = 0;/**< COREDUMP_TIMESTAMP */
};

/** True when `file_name` (no directory) ends in ".timeline.json" and has
 *  something before it: the files ctl-query considers at all. */
bool is_timeline_file_name(std::string_view file_name) noexcept;

/** Parses a file name (no directory) of the form above.  Returns nullopt
 *  when it does not have that form (a timeline renamed by hand is still
 *  read; it just cannot be filtered before it is opened). */
std::optional<TimelineName> parse_timeline_name(std::string_view file_name);

/** Undoes systemd's xescape(): "\xNN" becomes the byte 0xNN; anything else
 *  is copied.  A malformed escape is copied as is. */
std::string unescape_x(std::string_view s);

}  // namespace core_timeline::ctlq

#endif  // CORE_TIMELINE_CTL_QUERY_TIMELINE_NAME_H
