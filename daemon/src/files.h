/* SPDX-License-Identifier: MIT */
/*
 * files.h - durable, atomic, correctly owned files: timelines and the
 * saved journal cursor.
 *
 * Timelines are created, never overwritten: write_new_file() writes into an
 * unnamed O_TMPFILE in the target directory, sets owner, mode and ACL, and
 * gives it its name with linkat(2) (which fails with EEXIST rather than
 * replacing an existing file).  Until the link the file has no name, so a
 * kill -9 at any point leaves either the whole timeline or nothing - no
 * temporary files to clean up.  Where O_TMPFILE is unsupported it falls
 * back to a named temporary file and renameat2(RENAME_NOREPLACE).
 *
 * Durability is the caller's choice.  Either the content is fsync(2)ed
 * before the link (and the directory after it), so that a name once linked
 * always holds the whole file; or the file is linked at once and handed
 * back, and the caller fsyncs it and the directory before relying on it:
 * the daemon does that for a run of entries before it saves the journal
 * cursor past them.  Then a power cut (not a kill) before those fsyncs can
 * leave the name holding an empty or short file (ext4's delayed
 * allocation); the entry is after the saved cursor, so it is redone, and
 * existing_document() tells such a file from a whole one.
 *
 * Ownership.  systemd-coredump stores a core as root:root, mode 0640, with
 * a POSIX ACL granting read to the crashed user when that user is not a
 * system user (coredump.c fix_acl(); measured on Debian 12:
 * "user::rw- user:1234:r-- group::r-- mask::r-- other::---").  A timeline
 * copies exactly that: the core's uid, gid, permission bits and its
 * system.posix_acl_access xattr.  A timeline without a core file (journal
 * storage, core gone) gets what systemd-coredump would have given the
 * core: root:root 0640 plus the same ACL for COREDUMP_UID.
 *
 * Thread-safety: functions are independent; concurrent writers of the same
 * name get EEXIST, never a mixed file.
 */
#ifndef CORE_TIMELINE_DAEMON_FILES_H
#define CORE_TIMELINE_DAEMON_FILES_H

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util.h"

namespace core_timeline::daemon {

struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
  mode_t mode = 0640;     /**< permission bits only (& 0666) */
  std::string acl;        /**< raw system.posix_acl_access value; "" none */
  /** Further extended attributes the file gets (name, value), set before
   *  it is named; a file system without them (EOPNOTSUPP) is not an
   *  error.  A timeline's: document::kNamespacePidXattr (names.h). */
  std::vector<std::pair<std::string, std::string>> xattrs;
};


/** The owner, mode and ACL of the open core `fd` (fstat'ed as `st`). */
FileOwner owner_of_core(int fd, const struct stat &st);

/** root:root 0640, plus read for `crash_uid` unless it is a system user
 *  (uid < 1000, or nobody 65534), as systemd-coredump does. */
FileOwner owner_for_uid(std::uint64_t crash_uid);

/** The system.posix_acl_access value (linux/posix_acl_xattr.h, version 2)
 *  for "user::rw- user:UID:r-- group::r-- mask::r-- other::---". */
std::string acl_user_read(std::uint32_t uid);

/** The same for a directory only its owner and `uid` may use:
 *  "user::rwx user:UID:rwx group::--- mask::rwx other::---" (a decoder's
 *  debuginfod cache, decode.h). */
std::string acl_user_dir(std::uint32_t uid);

/** Whether a file owned as `owner` lets uid `uid` read it: as its owner
 *  (mode u+r), through an ACL_USER entry for `uid` with read that the
 *  ACL's mask (if any) lets through, or as other (o+r).  Group membership
 *  is not looked at (a core's group is root).  A malformed ACL grants
 *  nothing.  Pure. */
bool grants_read(const FileOwner &owner, std::uint32_t uid);

enum class WriteOutcome { kWritten, kExists };

/**
 * Creates `name` in the directory `dirfd` (shown as `dir` in messages) with
 * `data`, owned as `owner`.  kExists if the name already exists (nothing is
 * written).  Errors name the directory and the step; on an error no name is
 * linked.  `acl_warning` receives a note if the ACL could not be set (a
 * file system without ACLs); the file is then still written with owner and
 * mode.
 *
 * With `unsynced` null the content is fsynced before the name is linked,
 * and the directory after it unless `sync_directory` is false (the name is
 * then durable once the caller fsyncs `dirfd`).  With `unsynced` non-null
 * nothing is fsynced: the name is linked as soon as the content is
 * written, and on kWritten the open file is moved to *unsynced; the caller
 * must fsync it, then the directory, before relying on either.
 */
Result<WriteOutcome> write_new_file(int dirfd, const std::string &dir, const std::string &name, std::string_view data,
                                    const FileOwner &owner, std::string *acl_warning, bool sync_directory = true,
                                    Fd *unsynced = nullptr);

/** What a name in a directory holds, for a file that should be one JSON
 *  document (existing_document()). */
enum class Existing {
  kAbsent,   /**< no such name */
  kWhole,    /**< a regular file holding exactly one complete JSON document */
  kPartial,  /**< a regular file that does not: empty or cut short */
  kOther,    /**< not a regular file, or over kMaxDocumentBytes: not judged */
};

/** Larger files are kOther: a timeline is at most the decoder's output
 *  (256 MiB, decode.cc) plus the entry's fields. */
inline constexpr std::uint64_t kMaxDocumentBytes = 512ull << 20;

/**
 * Looks at `name` in `dirfd` (not following a symlink, not blocking on a
 * FIFO) and, for a regular file, parses it as JSON without building it
 * (nlohmann::json::accept, streaming: memory does not follow its size).
 * On kWhole, `opened` (if non-null) receives the open file, for the caller
 * to fsync.  Errors: the name cannot be opened or read (errno and name).
 */
Result<Existing> existing_document(int dirfd, const std::string &name, Fd *opened = nullptr);

/** Whether `name` exists in `dirfd` (fstatat, no symlink following). */
bool file_exists(int dirfd, const std::string &name);

/** mkdir -p `path` with `mode` for the directories it creates. */
Result<void> make_dirs(const std::string &path, mode_t mode);

/**
 * The daemon's state directory: DIR/cursor (the journal cursor of the last
 * entry handled), DIR/timelines/ (timelines of cores that are not files)
 * and DIR/tmp/ (decompressed cores, unlinked).
 */
class StateDir {
 public:
  /** Creates the directories and sets their modes whatever the umask:
   *  the state directory 0755 if it creates it, timelines 0755, tmp 0700.
   *  An existing state directory others cannot traverse is left alone and
   *  reported by warning(). */
  static Result<StateDir> open(const std::string &dir);
  /** A problem found by open() that does not stop the daemon, or "". */
  const std::string &warning() const { return warning_; }

  const std::string &path() const { return dir_; }
  std::string timelines_path() const { return dir_ + "/timelines"; }
  std::string tmp_path() const { return dir_ + "/tmp"; }
  int timelines_fd() const { return timelines_fd_.get(); }

  /** The saved cursor, or nullopt if none was saved (first start).  A
   *  file that is empty or unreadable is an Error naming it. */
  Result<std::optional<std::string>> load_cursor() const;
  /** Saves `cursor` atomically and durably: DIR/cursor.new, fsync, rename
   *  over DIR/cursor, fsync DIR. */
  Result<void> save_cursor(const std::string &cursor);

 private:
  std::string dir_;
  std::string warning_;
  Fd dir_fd_, timelines_fd_;
};

/**
 * Where timelines and the journal cursor go, and how they become durable:
 * one of the four parts of the daemon (parts.h).  FileStore is
 * core-timelined's; tests derive from it to make an fsync fail, which a
 * real disk here cannot be made to do.
 *  - write_timeline(): write_new_file() with `unsynced`: the name is
 *    linked at once and, on kWritten, the open file handed back;
 *  - sync_file(): fsync(2) of such a file (`path` names it in messages);
 *    sync_directory(): fsync(2) of the directory `dir`, opened by path.
 *    Errors carry errno and name the path.  The daemon does not retry a
 *    failed one: a second fsync of the same file may report success for
 *    data that never reached the disk (daemon.h, save_progress());
 *  - the state directory (StateDir): its timelines/ and tmp/, the cursor.
 * Thread-safety: one thread.
 */
class Store {
 public:
  virtual ~Store() = default;
  virtual Result<WriteOutcome> write_timeline(int dirfd, const std::string &dir, const std::string &name,
                                              std::string_view data, const FileOwner &owner,
                                              std::string *acl_warning, Fd *unsynced) = 0;
  virtual Result<void> sync_file(int fd, const std::string &path) = 0;
  virtual Result<void> sync_directory(const std::string &dir) = 0;
  /** StateDir's timelines_path(), timelines_fd(), tmp_path(),
   *  load_cursor() and save_cursor(). */
  virtual std::string timelines_path() const = 0;
  virtual int timelines_fd() const = 0;
  virtual std::string tmp_path() const = 0;
  virtual Result<std::optional<std::string>> load_cursor() const = 0;
  virtual Result<void> save_cursor(const std::string &cursor) = 0;
};

/** core-timelined's Store: files.h's functions on a StateDir. */
class FileStore : public Store {
 public:
  /** StateDir::open(`state_dir`); and `output_dir`, unless "", made with
   *  make_dirs (0755, whatever the umask, if it creates it).  Errors: as
   *  theirs. */
  static Result<FileStore> open(const std::string &state_dir, const std::string &output_dir);
  explicit FileStore(StateDir state) : state_(std::move(state)) {}
  /** StateDir::warning(). */
  const std::string &warning() const { return state_.warning(); }

  Result<WriteOutcome> write_timeline(int dirfd, const std::string &dir, const std::string &name,
                                      std::string_view data, const FileOwner &owner, std::string *acl_warning,
                                      Fd *unsynced) override;
  Result<void> sync_file(int fd, const std::string &path) override;
  Result<void> sync_directory(const std::string &dir) override;
  std::string timelines_path() const override { return state_.timelines_path(); }
  int timelines_fd() const override { return state_.timelines_fd(); }
  std::string tmp_path() const override { return state_.tmp_path(); }
  Result<std::optional<std::string>> load_cursor() const override { return state_.load_cursor(); }
  Result<void> save_cursor(const std::string &cursor) override { return state_.save_cursor(cursor); }

 private:
  StateDir state_;
};

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_FILES_H
