/* SPDX-License-Identifier: MIT */
/*
 * daemon.h - core-timelined's main loop.
 *
 * One thread.  It works with four parts it is given (parts.h): the entry
 * source (the journal, journal.h), the extractor (extract.h), the decoder
 * (decode.h) and the store (files.h).  It follows the entry source, and
 * for each trusted systemd-coredump entry (entry.h) in journal order -
 * one that only the crashed user vouches for must first be corroborated by
 * its core or its sender's cgroup, or it is logged as unverified and
 * skipped for good (unverified()) -:
 *   1. skips it if a whole timeline for its crash (boot id, pid,
 *      timestamp) already exists - after a restart, also after kill -9
 *      between writing a timeline and saving the cursor; a timeline cut
 *      short by a power cut is written again (files.h, existing_document);
 *   2. extracts the core into an unlinked temporary file (extract.h),
 *      unless it is uncompressed and small enough to be decoded as stored;
 *   3. decodes it in an isolated child (decode.h);
 *   4. writes the document (document.h) atomically with the core's owner,
 *      mode and ACL (files.h), and names it at once, without waiting for
 *      the disk: content and name are fsynced before the cursor is saved
 *      past it (step 5);
 *   5. logs (mapping_absent loudly, no_ring quietly) and only then marks
 *      the entry's cursor for saving (save_progress()).  The cursor is
 *      saved, after fsyncing the timelines written since the last save and
 *      their directories, when the journal has been read to its end and no
 *      new core awaits its entry, and otherwise at most kCursorSaveMs after
 *      the oldest entry not yet saved.  A crash storm's entries come in
 *      bursts; each entry's timeline waiting for its own fsync made the last
 *      of a burst wait for all the others' (docs/performance.md).
 * It reads the journal as journald announces new entries, and every few
 * milliseconds while a new core in the coredump directory awaits its entry
 * (core_watch.h: journald's announcements lag by 250-500 ms).  Between
 * entries it extracts and decodes each new core as soon as it appears
 * there, before its entry comes (prepared.h); steps 2 and 3 then use that
 * result if the entry names the same, unchanged file.  A preparation's
 * decoder runs while the daemon extracts the next new core, so a storm of
 * crashes keeps both CPUs of a small machine busy.
 * Between entries and inside long steps it pings the systemd watchdog and
 * checks for SIGTERM/SIGINT; on those it abandons the current entry (its
 * cursor is not saved, so it is redone) and exits 0.  An entry that cannot
 * be finished for want of a resource (no space for the temporary core or
 * the timeline, no descriptors, no memory) is tried again with backoff,
 * kResourceAttempts times in all, then stored as core_unreadable with the
 * reason (logged at error priority, kMsgResourceGaveUp), and the daemon
 * goes on: one core never holds up the later ones.  Any other error that
 * makes an entry impossible to finish (an output directory that cannot be
 * opened) stops it with exit status 1, without saving that entry's cursor:
 * systemd's Restart= retries.
 * Each timeline entry it sends is recorded in the state directory with
 * its sender's pid (SentLog, timeline_entry.h) until the cursor is saved,
 * so that after a restart it knows its own entries whatever uid or cgroup
 * sent them, and does not do again a crash whose timeline file is gone
 * since (the vacuum took it with its core).
 *
 * Thread-safety: a Daemon is used by one thread; it blocks SIGTERM, SIGINT
 * and SIGHUP in that thread and reads them from a signalfd.
 */
#ifndef CORE_TIMELINE_DAEMON_DAEMON_H
#define CORE_TIMELINE_DAEMON_DAEMON_H

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core_watch.h"
#include "decode.h"
#include "document.h"
#include "entry.h"
#include "files.h"
#include "journal.h"
#include "options.h"
#include "parts.h"
#include "prepared.h"
#include "rate_limit.h"
#include "timeline_entry.h"
#include "util.h"

namespace core_timeline::daemon {

class Daemon {
 public:
  /** How long an entry's cursor, and its timeline's durability, may wait
   *  for the next save while entries keep coming (step 5). */
  static constexpr std::uint64_t kCursorSaveMs = 100;
  /** Timelines written but not yet fsynced, at most: one more saves. */
  static constexpr std::size_t kMaxUnsynced = 256;
  /** A new core whose entry has not been read after this long makes the
   *  daemon seek the journal again after the last entry it read (and again
   *  each such period): systemd-coredump sends the entry 40-50 ms after
   *  linking the core (0.7-0.9 s in a storm of 32); a reader that polls
   *  every millisecond has been seen to miss an entry journald had
   *  written for 5 s (cause unknown), and seeking again finds it. */
  static constexpr std::uint64_t kReseekAfterMs = 2000;
  /** Unverified entries (entry.h: only the crashed user vouches for them
   *  and nothing corroborates them) logged at once at most, and then per
   *  minute; the others are counted and the count logged once
   *  (log_unverified()).  Any local user can send such entries at will. */
  static constexpr std::uint64_t kUnverifiedBurst = 10;
  static constexpr std::uint64_t kUnverifiedPerMinute = 10;
  /** An entry that fails for want of a resource (is_resource_errno():
   *  ENOSPC, EDQUOT, EMFILE, ENFILE, ENOMEM) is tried this many times in
   *  all, waiting kResourceBackoffMs, then twice that, and so on, between
   *  attempts; then it is stored as core_unreadable with the reason, logged
   *  at error priority (kMsgResourceGaveUp), and the daemon goes on. */
  static constexpr unsigned kResourceAttempts = 4;
  static constexpr std::uint64_t kResourceBackoffMs = 250;

  /** A daemon for `options` that works with `parts` (parts.h; each must
   *  be set): make_parts(options) for core-timelined, the tests' own
   *  otherwise.  Options::journal_directory, state_dir and the sizes and
   *  limits are the parts' business; the Daemon uses the rest. */
  Daemon(Options options, TrustPolicy policy, Parts parts);
  Daemon(const Daemon &) = delete;
  Daemon &operator=(const Daemon &) = delete;
  /** Runs until stopped (or, with --once, until the journal is read).
   *  Returns the process exit status: 0 on a clean stop, 1 if it could
   *  not start or had to stop on an error (the reason is logged, at error
   *  level: a timeline that could not be written or fsynced, the journal
   *  failing).  Call once. */
  int run();

 private:
  enum class Handled { kDone, kStop };
  Result<void> start();
  /** run()'s loop: reads, saves, prepares and waits until a stop; returns
   *  the exit status.  Each turn is the steps below. */
  int loop();
  /** Saves progress if an entry has waited kCursorSaveMs, or the first
   *  start's backlog is done. */
  void save_when_due();
  /** After the first start's backlog: saves its anchor if no entry's
   *  cursor was saved. */
  void save_first_start_anchor();
  /** How long to wait for news (ms, -1: until some): the journal's, the
   *  watchdog's, an awaited core's and the next save's due times. */
  int poll_timeout_ms();
  /** Seeks the journal again after kReseekAfterMs without a new core's
   *  entry (and again each such period). */
  void reseek_if_an_entry_is_overdue();
  /** Waits up to `timeout_ms` for the journal, a signal or the coredump
   *  directory, then lets the journal process what came; an exit status
   *  when the loop must end. */
  std::optional<int> wait_for_news(int timeout_ms);
  Result<void> position();
  /** Reads and handles entries until none is left or a stop. */
  Result<bool> drain();
  Handled handle(const RawEntry &raw);
  /** Steps 1-5 for a trusted entry, each a function below. */
  Handled handle_trusted(const CoredumpEntry &e);
  /** Where an entry's timeline may go: `core_name` in `out_dir` (open as
   *  `out_fd`; invalid if it cannot be opened, `out_error` says why),
   *  or `state_name` in the store's timelines directory. */
  struct Destination {
    std::string out_dir;
    Fd out_fd;
    std::string out_error;
    std::string core_name, state_name;
  };
  /** What became of an entry's core before its document is made. */
  struct Gathered {
    std::optional<FileOwner> owner;  /**< set when the core was opened: the
                                          timeline goes next to it, so owned */
    std::string display;             /**< the core as the document names it */
    CoreWork work;
    bool prepared = false;           /**< `work` is a preparation's (prepared.h) */
    double prepared_ms = 0;          /**< work done before the entry */
  };
  /** How a step of handle_trusted() ends: the next step follows, or the
   *  entry is done (nothing more to write), or the daemon stops. */
  enum class Next { kGoOn, kDone, kStop };
  Destination destination_for(const CoredumpEntry &e);
  /** Step 1: a timeline of this crash is there already (timeline_exists);
   *  if it is a whole one, makes sure its journal entry was sent
   *  (ensure_entry()). */
  bool already_has_timeline(const CoredumpEntry &e, const Destination &to);
  /** Steps 2-3: the core of the entry, by its storage, extracted and
   *  decoded into g.work (or g.work says why not). */
  Next gather(const CoredumpEntry &e, const Destination &to, Gathered &g);
  Next gather_from_file(const CoredumpEntry &e, const Destination &to, Gathered &g);
  Next gather_from_journal(const CoredumpEntry &e, Gathered &g);
  /** The opened core's preparation if it fits, else the core done now. */
  Next work_on_entry_core(const CoredumpEntry &e, int core_fd, const struct stat &st, Gathered &g);
  /** Logs (rate-limited: kUnverifiedBurst, kUnverifiedPerMinute) that
   *  entry `e`, vouched for only by the crashed user, is not corroborated
   *  (`why`), and so is not stored as a crash; the entry is done (its
   *  cursor is saved: it is never retried).  A missing core is final:
   *  systemd-coredump links the core before it sends the entry
   *  (coredump.c submit_coredump()).  `core_gone`: the entry's core file
   *  was removed before it was read (ENOENT), which `why` says first. */
  Next unverified(const CoredumpEntry &e, const std::string &why, bool core_gone = false);
  /** Logs how many unverified entries were left out, if any: with `now`
   *  at once (before the next unverified line, and at the stop), else only
   *  once the rate allows a line again (each turn of the loop). */
  void report_suppressed_unverified(bool now);
  /** Whether the core's user.coredump.* xattrs contradict the entry (logs
   *  the rejection). */
  bool rejected_by_xattrs(int core_fd, const CoredumpEntry &e);
  /** Logs an error that makes the entry impossible to finish now and
   *  stops the daemon (exit 1; the entry is redone after the restart). */
  Next stop_on_error(const CoredumpEntry &e, const std::string &what);
  /** An error `what` (errno `err`) that keeps the entry from being
   *  finished: for want of a resource (is_resource_errno()), noted in
   *  resource_failure_ for handle()'s retries, without stopping; else
   *  stop_on_error(). */
  Next fail_entry(const CoredumpEntry &e, const std::string &what, int err);
  /** handle_trusted(), tried again with backoff while it fails for want of
   *  a resource (kResourceAttempts), then give_up(). */
  Handled handle_with_retries(const CoredumpEntry &e);
  /** After the last attempt: logs kMsgResourceGaveUp and stores the crash
   *  as core_unreadable with the reason (if even that can be written). */
  Handled give_up(const CoredumpEntry &e, const std::string &what);
  /** Waits `ms` while pinging the watchdog and reading signals; false if
   *  asked to stop meanwhile. */
  bool pause_ms(std::uint64_t ms);
  /** Logs, at start, the space of the state directory's tmp/ against the
   *  most a core's extraction may need there: the largest core
   *  systemd-coredump may hand on (coredump.conf and its drop-ins,
   *  coredump_conf.h), at most --max-kept; a warning when it is less. */
  void report_state_space() const;
  /** What kept the entry being handled from being finished, for want of a
   *  resource (fail_entry()). */
  std::optional<std::string> resource_failure_;
  void warn_once_if_unconfined(const CoreWork &w);
  /** The document: its tree and its bytes (serialize()). */
  struct Document {
    core_timeline::document::Json tree;
    std::string bytes;
  };
  /** The document; `t0`: when the entry's handling began. */
  Document make_document(const CoredumpEntry &e, const Verdict &verdict, const Gathered &g, std::uint64_t t0) const;
  /** Step 4: writes the document where it goes, unsynced (step 5 syncs
   *  it), then report()s it. */
  Handled store_timeline(const CoredumpEntry &e, const Destination &to, const Gathered &g, const Verdict &verdict,
                         const Document &doc);
  /** Step 5's log: the loud entries of mapping_absent and ring_not_made,
   *  and for every status the timeline entry (send_timeline_entry()). */
  void report(const CoredumpEntry &e, const Verdict &verdict, const std::string &path, const Document &doc,
              const FileOwner &owner);
  /** Sends crash `e`'s timeline entry (docs/core-timelined.md, "The
   *  timeline entry in the journal"): `message` at PRIORITY 6 for ok and
   *  no_ring, else 4, the Scope's fields, CORE_TIMELINE_EXE, _UID and
   *  _REASON, and document::journal::entry_fields(); as the crashed user
   *  when `owner` (the timeline file's) lets that user read it
   *  (send_as()).  Whatever --log-target says: the entry is data, not a
   *  log line.  A failure is logged; the daemon goes on. */
  void send_timeline_entry(const CoredumpEntry &e, const std::string &message, const std::string &path,
                           const Document &doc, const FileOwner &owner);
  /** For a whole timeline `name` in `dirfd` (`path`) written before (a
   *  restart between writing it and sending its entry, or saving the
   *  cursor): sends its entry from the file, unless the journal holds
   *  one already (TimelineEntries::has_entry(); when that cannot be told,
   *  it is sent: a duplicate rather than a loss). */
  void ensure_entry(const CoredumpEntry &e, int dirfd, const std::string &name, const std::string &path);
  /** Extracts the stored core open on `core_fd` (`name` in the coredump
   *  directory; its suffix says the compression) and decodes it.  Errors:
   *  ECANCELED when asked to stop, else what makes the core impossible to
   *  finish now (no space for the temporary core, a decoder that cannot be
   *  started). */
  Result<CoreWork> work_on_core_file(int core_fd, const std::string &name, const std::string &display,
                                     const std::optional<std::string> &tlmap, const DecoderCredentials &as);
  /** The extraction half of work_on_core_file: the core goes into a new
   *  temporary file, *tmp; or *tmp is the stored core itself, when the
   *  decoder may map it as it is (Extractor::as_stored()). */
  Result<CoreWork> extract_core_file(int core_fd, const std::string &name, const std::string &display, Fd *tmp);
  /** Decodes the extracted core in `tmp` into w.decoded (errors: as above);
   *  start_decoder() and finish_decoder() are its two halves. */
  Result<void> decode_extracted(CoreWork &w, const Fd &tmp, const std::string &display,
                                const std::optional<std::string> &tlmap, const DecoderCredentials &as);
  /** The decoder runs as `as` (decoder_for()). */
  Result<std::unique_ptr<Decoder::Run>> start_decoder(const CoreWork &w, const Fd &tmp, const std::string &display,
                                                      const std::optional<std::string> &tlmap,
                                                      const DecoderCredentials &as);
  /** Whom the decoder of crash `e` runs as: its COREDUMP_UID and
   *  COREDUMP_GID, or the dedicated user (decode.h, DecoderUsers). */
  DecoderCredentials decoder_for(const CoredumpEntry &e) const;
  Result<void> finish_decoder(CoreWork &w, Decoder::Run &run);
  /** Collects the decoder of the preparation in flight, if any, and keeps
   *  its result in prepared_. */
  void finish_inflight();
  /** Where timelines go next to their cores: --output-dir, else the
   *  coredump directory. */
  std::string timelines_dir() const;
  /** The event-names file for executable `exe` (--tlmap-dir), if there is one. */
  std::optional<std::string> tlmap_for(std::string_view exe) const;
  /** Prepares the next new core of the coredump directory, if one waits;
   *  true if it did some work. */
  bool prepare_next();
  /** Whether new core `name` still awaits a preparation: its entry has
   *  not come, nor has its timeline. */
  bool worth_preparing(const std::string &name);
  /** Extracts core `name` and starts its decoder (start_preparation);
   *  false if it could not even be opened, or should not be prepared. */
  bool prepare(const std::string &name);
  /** Whether a prepared core still awaits its entry. */
  bool prepared_awaiting() const;
  /** Whether `name` in `dirfd` (`dir`) is this entry's timeline, to be left
   *  as it is.  A whole one is fsynced with the next save; an empty or
   *  short one (a power cut, files.h) is removed, and false returned. */
  bool timeline_exists(const CoredumpEntry &e, const std::string &dir, int dirfd, const std::string &name);
  TimelineEntries timeline_entries_;
  /** What this run sent since the last save, and what earlier runs sent
   *  (timeline_entry.h); unset if <state dir>/sent cannot be opened (a
   *  warning: then only entries sent as root or from the packaged unit's
   *  cgroup are known after a restart). */
  std::optional<SentLog> sent_log_;
  /** Whether the journal has been read to its end once: the entries an
   *  earlier run may have handled are behind. */
  bool backlog_read_ = false;
  /** Step 1, when no timeline file is there: an earlier run sent this
   *  crash's timeline entry (its SentLog line, and the entry in the
   *  journal from that pid), so its timeline was stored and the file has
   *  gone since (the vacuum removed it with its core).  Logs it. */
  bool sent_by_earlier_run(const CoredumpEntry &e);
  /** The test seam CT_TEST_STOP_AFTER_ENTRY_OF (daemon.cc). */
  void stop_here_for_test(const CoredumpEntry &e) const;
  /** Watchdog ping when due; reads pending signals.  False once asked to
   *  stop. */
  bool keep_going();
  void read_signals();

  Options opt_;
  TrustPolicy policy_;
  Parts parts_;
  EntrySource &entries_;
  Store &store_;
  std::optional<CoreWatch> core_watch_;  /**< not with --once */
  std::deque<std::string> to_prepare_;   /**< new cores, in the order seen;
                                              at most CoreWatch::kMaxExpected */
  PreparedCores prepared_;
  /** A preparation whose decoder runs while the daemon extracts the next
   *  new core or handles entries: at most one, so at most two decoders run
   *  at once (this one and an entry's). */
  struct InFlight {
    std::string name;
    CoreIdentity identity;
    std::optional<std::string> tlmap;
    CoreWork work;
    std::unique_ptr<Decoder::Run> run;
    DecoderCredentials as;  /**< whom its decoder runs as (from its xattrs) */
  };
  std::optional<InFlight> inflight_;
  /** Starts the decoder of `next`, extracted into `tmp`, and makes it the
   *  preparation in flight once the previous one is collected (one whose
   *  core needs no decoding is kept at once). */
  void start_preparation(InFlight next, const Fd &tmp, const std::string &display);
  Fd signal_fd_;
  bool stop_ = false;
  bool failed_ = false;  /**< stopping because of an error: exit 1 */
  bool cursor_saved_ = false;
  bool warned_unconfined_ = false;  /**< "decoders run without Landlock" logged */
  /** Whom decoders run as: kDecoderUser looked up once, at construction. */
  DecoderUsers decoder_users_ = DecoderUsers::lookup();
  std::optional<std::string> pending_anchor_;
  /** Fsyncs the timelines written since the last save, then their
   *  directories, then saves the cursor of the last entry handled.  A
   *  timeline that cannot be fsynced is unlinked, and on that or a
   *  directory that cannot be fsynced the daemon stops (exit 1) without
   *  saving: the entries since the last save are redone after the
   *  restart. */
  void save_progress();
  /** save_progress()'s fsyncs of the timelines, then of their directories
   *  (Store::sync_file, sync_directory); each stops at the first failure,
   *  logged (a timeline that failed is unlinked first), and says false. */
  bool sync_timelines();
  bool sync_directories();
  /** The timeline `dir`/`name` of crash `key`, open as `file`, is
   *  fsynced, and then `dir`, by the next save_progress(). */
  void sync_later(Fd file, const std::string &dir, const std::string &name, const std::string &key);
  /** Whether a core in the coredump directory awaits its entry (so more
   *  entries are due within milliseconds). */
  bool entries_due() const;
  /** The cursor of the last entry handled, not yet saved, and since when
   *  (monotonic µs) an entry has waited for a save. */
  std::optional<std::string> unsaved_cursor_;
  std::uint64_t unsaved_since_ = 0;
  /** Timelines linked since the last save, not yet fsynced (files.h). */
  struct UnsyncedTimeline {
    Fd file;
    std::string path;
    std::string key;  /**< its crash's (CoredumpEntry::key()) */
  };
  std::vector<UnsyncedTimeline> unsynced_timelines_;
  /** Their directories: fsynced after them, before the cursor is saved. */
  std::set<std::string> unsynced_dirs_;
  std::uint64_t watchdog_usec_ = 0;
  std::uint64_t last_ping_ = 0;
  std::uint64_t handled_ = 0;
  std::uint64_t reseeked_at_ = 0;
  TokenBucket unverified_log_{kUnverifiedBurst, kUnverifiedPerMinute, 60ull * 1000 * 1000};
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_DAEMON_H
