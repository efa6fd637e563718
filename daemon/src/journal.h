/* SPDX-License-Identifier: MIT */
/*
 * journal.h - following the local journal for systemd-coredump entries
 * with sd-journal (sd-journal(3)).
 *
 * One Journal holds one sd_journal opened with SD_JOURNAL_LOCAL_ONLY: the
 * system journal and every user's journal, because systemd-coredump logs a
 * user's crash as that user and journald may store it in user-UID.journal.
 * The match is MESSAGE_ID=fc2e22bc6ee647b6b90729ab34a250b1; nothing here
 * decides whether an entry is trusted (entry.h does).
 *
 * Field sizes: fields are read with a data threshold of kFieldThreshold
 * (sd_journal_set_data_threshold(3)), so a huge field (COREDUMP_PROC_MAPS of
 * a giant process) is cut there.  The COREDUMP= field (Storage=journal: the
 * whole uncompressed core) is read only by with_core_field(), which lifts
 * the threshold to 0 ("no limit") for that one read: sd-journal then holds
 * the whole core in memory, as large as JournalSizeMax= (767 MiB by
 * default) allows.
 *
 * Rotation and vacuum: wait() calls sd_journal_process(3), which opens new
 * files and closes deleted ones; the read position (the current entry) is
 * kept across SD_JOURNAL_INVALIDATE.  The number of descriptors is one per
 * journal file on disk plus an inotify descriptor.  A file truncated while
 * mapped (journald of systemd 252 at rotation) reads as zeros once the
 * SIGBUS handler is installed (sigbus.h): next() and process() check its
 * count around each read and, when it moved, drop what they read, open the
 * journal again and go on after the last entry read (with a warning);
 * with_core_field() reports the core unreadable.
 *
 * Thread-safety: none; one thread owns a Journal (sd-journal is not
 * thread-safe for one object).
 */
#ifndef CORE_TIMELINE_DAEMON_JOURNAL_H
#define CORE_TIMELINE_DAEMON_JOURNAL_H

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "entry.h"
#include "util.h"

struct sd_journal;

namespace core_timeline::daemon {

inline constexpr std::size_t kFieldThreshold = 1 << 20;

/**
 * Where the daemon's coredump entries come from, in order: one of the four
 * parts of the daemon (parts.h).  Journal is the one core-timelined uses;
 * tests give it a Journal over journal files of their own
 * (Journal::open_directory).  Each call's contract is Journal's, below.
 * Errors carry the errno of the failed call and name it.  Thread-safety:
 * one thread.
 */
class EntrySource {
 public:
  virtual ~EntrySource() = default;
  virtual Result<bool> seek_after_cursor(const std::string &cursor) = 0;
  virtual Result<void> seek_boot_start(const std::string &boot_id) = 0;
  virtual Result<void> seek_tail() = 0;
  virtual Result<void> seek_head() = 0;
  virtual Result<std::optional<std::string>> newest_cursor() = 0;
  virtual Result<bool> next(RawEntry &out, std::string &warning) = 0;
  virtual Result<void> reseek() = 0;
  virtual Result<void> with_core_field(const std::function<Result<void>(std::span<const std::uint8_t>)> &fn) = 0;
  virtual int fd() const noexcept = 0;
  virtual short events() const noexcept = 0;
  virtual int timeout_ms() const noexcept = 0;
  virtual Result<int> process() = 0;
};

class Journal final : public EntrySource {
 public:
  /** sd_journal_open(LOCAL_ONLY) with the MESSAGE_ID match.  Errors name
   *  the call and errno (e.g. EPERM: run as root or in group
   *  systemd-journal). */
  static Result<Journal> open();

  /** A journal of files under `directory` only (sd_journal_open_directory),
   *  with the same match: --journal-directory (a copied or received
   *  journal), and the tests' journal files. */
  static Result<Journal> open_directory(const std::string &directory);

  Journal(Journal &&o) noexcept;
  Journal &operator=(Journal &&o) noexcept;
  Journal(const Journal &) = delete;
  Journal &operator=(const Journal &) = delete;
  ~Journal() override;

  /** Positions before the first coredump entry after `cursor`.  If the
   *  entry `cursor` names still exists it is skipped (it was handled);
   *  if it was vacuumed, reading resumes at the nearest later entry.
   *  Returns whether the exact entry was found. */
  Result<bool> seek_after_cursor(const std::string &cursor) override;
  /** Positions before the first entry of boot `boot_id`
   *  (sd_journal_seek_monotonic_usec(boot, 0)). */
  Result<void> seek_boot_start(const std::string &boot_id) override;
  /** Positions at the end: only entries added later are read. */
  Result<void> seek_tail() override;
  /** Positions before the oldest entry. */
  Result<void> seek_head() override;

  /** The cursor of the newest entry of the whole journal (any entry, not
   *  only coredump ones), or nullopt if the journal is empty.  Used as the
   *  starting point on a first start.  Leaves the read position alone only
   *  in the sense that the caller must seek afterwards. */
  Result<std::optional<std::string>> newest_cursor() override;

  /** Moves to the next coredump entry and reads it into `out`.  Returns
   *  false at the end (nothing new yet).  An entry whose fields cannot be
   *  read is returned with the fields that could, and `warning` set. */
  Result<bool> next(RawEntry &out, std::string &warning) override;
  /**
   * Seeks again to just after the last entry next() returned (or the
   * cursor seek_after_cursor() was given): a fresh look at the journal
   * files for a reader that should have seen an entry by now.  Nothing if
   * there is no such cursor yet.
   */
  Result<void> reseek() override;

  /** Calls `fn` with the COREDUMP= field of the current entry, without
   *  its "COREDUMP=" prefix (the bytes are valid during the call only).
   *  kNotFound-like Error (err ENOENT) if the entry has none. */
  Result<void> with_core_field(const std::function<Result<void>(std::span<const std::uint8_t>)> &fn) override;

  /** The descriptor to poll (sd_journal_get_fd) and the events to wait for
   *  (sd_journal_get_events). */
  int fd() const noexcept override;
  short events() const noexcept override;
  /** sd_journal_get_timeout as a relative poll(2) timeout in ms (-1: none). */
  int timeout_ms() const noexcept override;
  /** After fd() polled readable (or the timeout passed): sd_journal_process.
   *  Returns SD_JOURNAL_NOP, SD_JOURNAL_APPEND or SD_JOURNAL_INVALIDATE. */
  Result<int> process() override;

 private:
  explicit Journal(sd_journal *j) noexcept : j_(j) {}
  static Result<Journal> finish_open(sd_journal *j, int r, const std::string &what);
  /* Where a reopened journal starts when no entry was read yet. */
  enum class Start { kHead, kBoot };
  Result<bool> next_once(RawEntry &out, std::string &warning);
  /* The same files opened again (journal.h, rotation), positioned after
   * last_cursor_, or as the first seek was. */
  Result<void> reopen();
  /* Reopens if pages were zeroed since the last look; true if it did. */
  Result<bool> reopen_if_truncated(const char *during);
  sd_journal *j_ = nullptr;
  std::string last_cursor_;  /**< of the last entry read, or the seek's */
  std::string directory_;    /**< open_directory's, or "" (the local journal) */
  Start start_ = Start::kHead;
  std::string boot_;         /**< seek_boot_start's */
  std::uint64_t seen_pages_ = 0; /**< sigbus::zeroed_pages() at the last look */
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_JOURNAL_H
