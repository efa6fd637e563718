/* SPDX-License-Identifier: MIT */
/*
 * prepared.h - cores extracted and decoded before their journal entry.
 *
 * systemd-coredump links a core into its directory, then analyzes it and
 * only then sends the journal entry (systemd 252 src/coredump/coredump.c:
 * save_external_coredump(), then submit_coredump()); on this project's VMs
 * the entry follows the core by 40-50 ms (docs/performance.md).  The
 * daemon uses that time: when core_watch.h reports a new core it extracts
 * and decodes it at once (a "preparation"), and keeps the result here.
 * When the core's entry arrives the result is used only if the file the
 * entry names is still the file that was prepared: same device, inode,
 * size, modification and change times (inode(7): a rename over the name
 * changes the inode; a write, chmod, chown or xattr change moves mtime or
 * ctime, unless it lands within the same tick of the kernel's coarse clock
 * as the preparation's fstat - and only root writes in that directory),
 * and the same event-names file path (.tlmap, chosen by the executable's
 * name: from the core's user.coredump.exe xattr before the entry, from
 * COREDUMP_EXE after; the file's content is not compared).  Otherwise the
 * entry's core is done again, as without a preparation.  A core without
 * that xattr is not prepared when event-names files are in use.  Nothing of the entry is trusted or decided here: the
 * entry's checks, the xattr comparison, the verdict and the document all
 * happen when the entry is handled (daemon.cc).
 *
 * Bounds: at most kMaxCores results and kMaxBytes of decoder output are
 * kept; a result whose entry has not come within kMaxAgeMs is dropped (the
 * entry, if it ever comes, is then done as usual).  The oldest go first.
 *
 * Thread-safety: one thread.
 */
#ifndef CORE_TIMELINE_DAEMON_PREPARED_H
#define CORE_TIMELINE_DAEMON_PREPARED_H

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "decode.h"
#include "extract.h"
#include "stored_status.h"

namespace core_timeline::daemon {

/** What extraction and decoding made of one core. */
struct CoreWork {
  std::optional<ExtractStats> extract;   /**< unset: nothing was extracted */
  std::optional<DecodeResult> decoded;   /**< unset: nothing to decode, see below */
  std::optional<Status> status_without_core;  /**< set when nothing was decoded:
                                                  kCoreMissing or kCoreUnreadable */
  std::string reason_without_core;
  double work_ms = 0;                    /**< wall time of extraction and decoding */
};

/** Which file a core was: stat(2) fields that change with its content,
 *  its name's target or its metadata. */
struct CoreIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {};
  struct timespec ctime {};

  static CoreIdentity of(const struct stat &st) noexcept;
  /** "" if `o` is the same file, else what differs ("inode", ...). */
  std::string differs(const CoreIdentity &o) const;
};

class PreparedCores {
 public:
  static constexpr std::size_t kMaxCores = 64;
  /** Decoder output (DecodeResult::output_bytes); the parsed document
   *  takes a few times that in memory. */
  static constexpr std::uint64_t kMaxBytes = 64ull << 20;
  static constexpr std::uint64_t kMaxAgeMs = 60000;
  /** While a prepared core's entry is expected (core_watch.h, at most
   *  CoreWatch::kEagerMaxMs), the daemon reads the journal this often:
   *  its timeline is then one write away. */
  static constexpr int kPollMs = 1;

  /** Keeps the preparation of core `name` (a name in the coredump
   *  directory), made at `now_usec` (CLOCK_MONOTONIC) from the file
   *  `identity` with event names from `tlmap`. */
  void put(std::string name, const CoreIdentity &identity, std::optional<std::string> tlmap, CoreWork work,
           std::uint64_t now_usec);

  /**
   * The preparation of `name`, if it was made from the file `identity`
   * with the same `tlmap`; it is removed either way.  When there was one
   * but it does not fit, *why_not says why ("" otherwise).
   */
  std::optional<CoreWork> take(std::string_view name, const CoreIdentity &identity,
                               const std::optional<std::string> &tlmap, std::string *why_not);

  /** Forgets the preparation of `name`, if any. */
  void discard(std::string_view name);
  bool contains(std::string_view name) const { return cores_.find(name) != cores_.end(); }
  std::size_t size() const noexcept { return cores_.size(); }
  std::uint64_t bytes() const noexcept { return bytes_; }
  /** Calls f(name) for each kept preparation, in name order. */
  template <class F>
  void for_each_name(F &&f) const {
    for (const auto &kv : cores_) f(kv.first);
  }
  /** Drops preparations older than kMaxAgeMs. */
  void expire(std::uint64_t now_usec);

 private:
  struct Entry {
    CoreIdentity identity;
    std::optional<std::string> tlmap;
    CoreWork work;
    std::uint64_t made_usec = 0;
    std::uint64_t bytes = 0;
  };
  void drop_oldest();
  std::map<std::string, Entry, std::less<>> cores_;
  std::uint64_t bytes_ = 0;
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_PREPARED_H
