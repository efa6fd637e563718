/* SPDX-License-Identifier: MIT */
/*
 * log.h - core-timelined's logging: spdlog, into the journal with
 * structured fields, and onto stderr when not run by systemd.
 *
 * Every spdlog line goes to a small sink that calls sd_journal_sendv(3)
 * with MESSAGE, PRIORITY (syslog levels, from the spdlog level),
 * SYSLOG_IDENTIFIER=core-timelined and the fields of the current Scope
 * (e.g. CORE_TIMELINE_PID, CORE_TIMELINE_COREDUMP_CURSOR while an entry is
 * handled), so `journalctl CORE_TIMELINE_PID=1234` finds everything said
 * about one crash.  With stderr on, the same line is printed there too.
 *
 * event() sends one entry with a MESSAGE_ID of ours (message_ids.h, documented in
 * units/core-timeline.catalog) and any fields: the entries meant for
 * people and programs to find (mapping absent, entry rejected, timeline
 * written).
 *
 * Only the daemon's top level and its parts (parts.h) log; library-like
 * modules return errors.  Thread-safety: spdlog's _mt sinks; Scope is thread-local.
 */
#ifndef CORE_TIMELINE_DAEMON_LOG_H
#define CORE_TIMELINE_DAEMON_LOG_H

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace core_timeline::daemon::log {

enum class Target {
  kAuto,     /**< journal; plus stderr unless stderr is the journal
                  ($JOURNAL_STREAM names it, i.e. started by systemd) */
  kJournal,
  kStderr,
  kBoth,
};

/** The name --log-target takes: "auto", "journal", "stderr", "both". */
std::string_view target_name(Target t) noexcept;
/** The Target target_name() names `name`; nullopt for any other string. */
std::optional<Target> target_from_name(std::string_view name) noexcept;

using Fields = std::vector<std::pair<std::string, std::string>>;

/** Installs the default logger for `target` at `level`. */
void setup(Target target, spdlog::level::level_enum level);

/** Journal priority (0 emerg .. 7 debug) for a spdlog level. */
int priority_of(spdlog::level::level_enum level);

/**
 * One structured entry: MESSAGE_ID=`message_id`, PRIORITY=`priority`,
 * MESSAGE=`message`, the Scope's fields and `fields` (names must be valid
 * journal field names: A-Z, 0-9, _, not starting with _).  Mirrored on
 * stderr as a normal log line when stderr is on.
 */
void event(int priority, std::string_view message_id, const std::string &message, const Fields &fields);

/** The fields of this thread's Scopes, outermost first. */
const Fields &scope_fields() noexcept;
/** event()'s stderr half alone, when stderr is on: the message without
 *  fields (the timeline entry's document is no line for a terminal). */
void mirror(int priority, const std::string &message);

/** Fields added to every line logged on this thread while it lives. */
class Scope {
 public:
  explicit Scope(Fields fields);
  ~Scope();
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

 private:
  std::size_t previous_size_;
};

}  // namespace core_timeline::daemon::log

#endif  // CORE_TIMELINE_DAEMON_LOG_H
