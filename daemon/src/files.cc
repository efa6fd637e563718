/* SPDX-License-Identifier: MIT */
/* files.cc - see files.h. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "extract.h"

namespace core_timeline::daemon {

namespace {

constexpr const char kAclXattr[] = "system.posix_acl_access";

void put16(std::string &s, std::uint16_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>(v >> 8);
}
void put32(std::string &s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string random_suffix() {
  unsigned char b[6];
  if (getrandom(b, sizeof b, 0) != sizeof b) {
    const std::uint64_t t = monotonic_usec();
    std::memcpy(b, &t, sizeof b);
  }
  static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (unsigned char c : b) s += digits[c % 36];
  return s;
}

}  // namespace

namespace {

/* posix_acl_xattr_header {le32 a_version = 2} then entries
 * {le16 e_tag, le16 e_perm, le32 e_id}, sorted by tag then id: owner,
 * `uid`, group and other get these permissions, the mask uid's and the
 * group's together. */
std::string acl_of(std::uint16_t owner, std::uint32_t uid, std::uint16_t user, std::uint16_t group) {
  constexpr std::uint32_t kUndefined = 0xffffffffu;
  std::string s;
  put32(s, 2);
  put16(s, 0x01); put16(s, owner); put32(s, kUndefined);                              /* ACL_USER_OBJ */
  put16(s, 0x02); put16(s, user); put32(s, uid);                                      /* ACL_USER uid */
  put16(s, 0x04); put16(s, group); put32(s, kUndefined);                              /* ACL_GROUP_OBJ */
  put16(s, 0x10); put16(s, static_cast<std::uint16_t>(user | group)); put32(s, kUndefined); /* ACL_MASK */
  put16(s, 0x20); put16(s, 0); put32(s, kUndefined);                                  /* ACL_OTHER --- */
  return s;
}

}  // namespace

std::string acl_user_read(std::uint32_t uid) { return acl_of(6, uid, 4, 4); }

std::string acl_user_dir(std::uint32_t uid) { return acl_of(7, uid, 7, 0); }

bool grants_read(const FileOwner &owner, std::uint32_t uid) {
  if (owner.uid == uid && (owner.mode & 0400)) return true;
  if (owner.mode & 0004) return true;
  const std::string &a = owner.acl;
  if (a.size() < 4 || (a.size() - 4) % 8 != 0) return false;
  const auto u16 = [&a](std::size_t at) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(a[at]) | static_cast<unsigned char>(a[at + 1]) << 8);
  };
  const auto u32 = [&](std::size_t at) { return static_cast<std::uint32_t>(u16(at)) | static_cast<std::uint32_t>(u16(at + 2)) << 16; };
  if (u32(0) != 2) return false;
  bool user_read = false, mask_read = true;
  for (std::size_t at = 4; at < a.size(); at += 8) {
    const std::uint16_t tag = u16(at), perm = u16(at + 2);
    if (tag == 0x02 && u32(at + 4) == uid) user_read = (perm & 4) != 0; /* ACL_USER */
    if (tag == 0x10) mask_read = (perm & 4) != 0;                        /* ACL_MASK */
  }
  return user_read && mask_read;
}

FileOwner owner_of_core(int fd, const struct stat &st) {
  FileOwner o;
  o.uid = st.st_uid;
  o.gid = st.st_gid;
  o.mode = st.st_mode & 0666;
  char buf[4096];
  ssize_t n = fgetxattr(fd, kAclXattr, buf, sizeof buf);
  if (n > 0) o.acl.assign(buf, static_cast<std::size_t>(n));
  return o;
}

FileOwner owner_for_uid(std::uint64_t crash_uid) {
  FileOwner o;
  if (crash_uid >= 1000 && crash_uid != 65534 && crash_uid < 0xffffffffu)
    o.acl = acl_user_read(static_cast<std::uint32_t>(crash_uid));
  return o;
}

bool file_exists(int dirfd, const std::string &name) {
  struct stat st;
  return fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Result<Existing> existing_document(int dirfd, const std::string &name, Fd *opened) {
  const int fd = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return Existing::kAbsent;
    if (errno == ELOOP) return Existing::kOther; /* a symlink */
    return errno_error(errno, "cannot open " + name);
  }
  Fd file(fd);
  struct stat st;
  if (fstat(fd, &st) < 0) return errno_error(errno, "cannot stat " + name);
  if (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > kMaxDocumentBytes) return Existing::kOther;
  if (st.st_size == 0) return Existing::kPartial;
  /* A stream of its own (dup), so that closing it leaves `file` open. */
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return errno_error(errno, "cannot duplicate the descriptor of " + name);
  FILE *f = fdopen(copy, "r");
  if (!f) {
    const int e = errno;
    close(copy);
    return errno_error(e, "cannot read " + name);
  }
  const bool whole = nlohmann::json::accept(f);
  const bool failed = ferror(f) != 0;
  const int e = errno;
  fclose(f);
  if (failed) return errno_error(e, "cannot read " + name);
  if (!whole) return Existing::kPartial;
  if (opened) *opened = std::move(file);
  return Existing::kWhole;
}

static Result<void> apply_owner(int fd, const FileOwner &owner, const std::string &what, std::string *acl_warning) {
  if (fchown(fd, owner.uid, owner.gid) < 0) return errno_error(errno, "cannot chown " + what);
  if (fchmod(fd, owner.mode) < 0) return errno_error(errno, "cannot chmod " + what);
  if (!owner.acl.empty() && fsetxattr(fd, kAclXattr, owner.acl.data(), owner.acl.size(), 0) < 0) {
    const int e = errno;
    if (e != EOPNOTSUPP && e != ENOTSUP) return errno_error(e, "cannot set the ACL of " + what);
    if (acl_warning)
      *acl_warning = what + ": the file system does not support POSIX ACLs; only owner and mode were copied";
  }
  for (const auto &[name, value] : owner.xattrs)
    if (fsetxattr(fd, name.c_str(), value.data(), value.size(), 0) < 0 && errno != EOPNOTSUPP && errno != ENOTSUP)
      return errno_error(errno, "cannot set the extended attribute " + name + " of " + what);
  return {};
}

Result<WriteOutcome> write_new_file(int dirfd, const std::string &dir, const std::string &name, std::string_view data,
                                    const FileOwner &owner, std::string *acl_warning,
                                    bool sync_directory, Fd *unsynced) {
  const std::string what = dir + "/" + name;
  if (file_exists(dirfd, name)) return WriteOutcome::kExists;
  int fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  std::string tmp_name;
  if (fd < 0) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      return errno_error(errno, "cannot create a file in " + dir);
    tmp_name = "." + name + "." + random_suffix() + ".tmp";
    fd = openat(dirfd, tmp_name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return errno_error(errno, "cannot create " + dir + "/" + tmp_name);
  }
  Fd file(fd);
  auto cleanup = [&] {
    if (!tmp_name.empty()) unlinkat(dirfd, tmp_name.c_str(), 0);
  };
  auto w = write_all(fd, data, what);
  if (w) w = apply_owner(fd, owner, what, acl_warning);
  if (w && !unsynced && fsync(fd) < 0) w = errno_error(errno, "cannot fsync " + what);
  if (!w) {
    cleanup();
    return std::move(w).error();
  }
  if (tmp_name.empty()) {
    char proc[64];
    std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, dirfd, name.c_str(), AT_SYMLINK_FOLLOW) < 0) {
      if (errno == EEXIST) return WriteOutcome::kExists;
      return errno_error(errno, "cannot link " + what + " (is /proc mounted?)");
    }
  } else if (renameat2(dirfd, tmp_name.c_str(), dirfd, name.c_str(), RENAME_NOREPLACE) < 0) {
    const int e = errno;
    cleanup();
    if (e == EEXIST) return WriteOutcome::kExists;
    return errno_error(e, "cannot rename " + dir + "/" + tmp_name + " to " + name);
  }
  if (unsynced) {
    *unsynced = std::move(file);
    return WriteOutcome::kWritten;
  }
  if (sync_directory && fsync(dirfd) < 0) return errno_error(errno, "cannot fsync directory " + dir);
  return WriteOutcome::kWritten;
}

Result<void> make_dirs(const std::string &path, mode_t mode) {
  if (path.empty()) return error_of(EINVAL, "empty directory name");
  std::string cur;
  std::size_t pos = 0;
  while (pos <= path.size()) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    cur = path.substr(0, next);
    pos = next + 1;
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), mode) < 0 && errno != EEXIST) return errno_error(errno, "cannot create directory " + cur);
  }
  struct stat st;
  if (stat(path.c_str(), &st) < 0) return errno_error(errno, "cannot stat " + path);
  if (!S_ISDIR(st.st_mode)) return error_of(ENOTDIR, path + " exists and is not a directory");
  return {};
}

Result<StateDir> StateDir::open(const std::string &dir) {
  StateDir s;
  s.dir_ = dir;
  while (s.dir_.size() > 1 && s.dir_.back() == '/') s.dir_.pop_back();
  struct stat st;
  const bool created = stat(s.dir_.c_str(), &st) < 0;
  CT_TRY_VOID(make_dirs(s.dir_, 0755));
  CT_TRY_VOID(make_dirs(s.timelines_path(), 0755));
  CT_TRY_VOID(make_dirs(s.tmp_path(), 0700));
  /* Modes regardless of the umask (a unit's UMask=0077): users must reach
   * their timelines; nobody but us the temporary cores. */
  if (created && chmod(s.dir_.c_str(), 0755) < 0) return errno_error(errno, "cannot chmod " + s.dir_);
  if (chmod(s.timelines_path().c_str(), 0755) < 0) return errno_error(errno, "cannot chmod " + s.timelines_path());
  if (chmod(s.tmp_path().c_str(), 0700) < 0) return errno_error(errno, "cannot chmod " + s.tmp_path());
  if (stat(s.dir_.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    s.warning_ = s.dir_ + " is mode " + mode + ": users cannot reach their timelines in " + s.timelines_path() +
                 " (Storage=journal, missing cores); make it 0755 (in a unit: StateDirectoryMode=0755)";
  }
  auto d = open_directory(s.dir_);
  if (!d) return std::move(d).error();
  s.dir_fd_ = std::move(*d);
  auto t = open_directory(s.timelines_path());
  if (!t) return std::move(t).error();
  s.timelines_fd_ = std::move(*t);
  return s;
}

Result<std::optional<std::string>> StateDir::load_cursor() const {
  int fd = openat(dir_fd_.get(), "cursor", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return errno_error(errno, "cannot open " + dir_ + "/cursor");
  }
  Fd f(fd);
  char buf[4096];
  std::string s;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot read " + dir_ + "/cursor");
    if (n == 0) break;
    s.append(buf, static_cast<std::size_t>(n));
    if (s.size() > 4096) return error_of(EINVAL, dir_ + "/cursor is too long to be a journal cursor; remove it to start over");
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return error_of(EINVAL, dir_ + "/cursor is empty; remove it to start over (see first-start)");
  return std::optional<std::string>(s);
}

Result<void> StateDir::save_cursor(const std::string &cursor) {
  const std::string path = dir_ + "/cursor";
  int fd = openat(dir_fd_.get(), "cursor.new", O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(errno, "cannot create " + path + ".new");
  Fd f(fd);
  auto w = write_all(fd, cursor + "\n", path + ".new");
  if (!w) return w;
  if (fsync(fd) < 0) return errno_error(errno, "cannot fsync " + path + ".new");
  if (renameat(dir_fd_.get(), "cursor.new", dir_fd_.get(), "cursor") < 0)
    return errno_error(errno, "cannot rename " + path + ".new to " + path);
  if (fsync(dir_fd_.get()) < 0) return errno_error(errno, "cannot fsync " + dir_);
  return {};
}

Result<FileStore> FileStore::open(const std::string &state_dir, const std::string &output_dir) {
  if (!output_dir.empty()) {
    struct stat ost;
    const bool created = stat(output_dir.c_str(), &ost) < 0;
    CT_TRY_VOID(make_dirs(output_dir, 0755));
    if (created) (void)chmod(output_dir.c_str(), 0755);
  }
  auto st = StateDir::open(state_dir);
  if (!st) return error_of(st.error().sys_errno, st.error().message + " (set --state-dir to a writable directory)");
  return FileStore(std::move(*st));
}

Result<WriteOutcome> FileStore::write_timeline(int dirfd, const std::string &dir, const std::string &name,
                                               std::string_view data, const FileOwner &owner,
                                               std::string *acl_warning, Fd *unsynced) {
  return write_new_file(dirfd, dir, name, data, owner, acl_warning, /*sync_directory=*/false, unsynced);
}

Result<void> FileStore::sync_file(int fd, const std::string &path) {
  if (fsync(fd) < 0) return errno_error(errno, "cannot fsync the timeline " + path);
  return {};
}

Result<void> FileStore::sync_directory(const std::string &dir) {
  auto d = open_directory(dir);
  if (!d) return std::move(d).error();
  if (fsync(d->get()) < 0) return errno_error(errno, "cannot fsync " + dir);
  return {};
}

}  // namespace core_timeline::daemon
