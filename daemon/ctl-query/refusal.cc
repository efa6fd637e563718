/* SPDX-License-Identifier: MIT */
#include "refusal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <fmt/format.h>

#include "text.h"

namespace core_timeline::ctl_query {

namespace {

bool system_uid(std::uint64_t uid) { return uid <= 999 || uid == 65534; }

}  // namespace

FileFacts file_facts(int dirfd, const std::string &dir, const std::string &name) {
  FileFacts f;
  struct stat st;
  if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) f.owner = st.st_uid;
  /* No f*xattr on a file we may not open; the path, not followed. */
  const std::string path = dir + "/" + name;
  char buf[512];
  if (lgetxattr(path.c_str(), "system.posix_acl_access", buf, sizeof buf) >= 0 || errno == ERANGE)
    f.has_acl = true;
  else if (errno == ENODATA)
    f.has_acl = false;
  else if (errno == EOPNOTSUPP)
    f.acl_unsupported = true;
  return f;
}

Refusal refusal(std::uint32_t caller, const std::optional<core_timeline::document::TimelineName> &name,
                const FileFacts &facts) {
  if (!name) return {"permission denied", "its name is not a core's, so whose crash it is cannot be told"};
  const std::string crash = fmt::format("the timeline of pid {} ({}), uid {}, by its name", name->pid,
                                        printable(name->comm), name->uid);
  if (name->uid != caller) return {kAnotherUser, crash + ": another user's crash"};
  if (system_uid(caller))
    return {"permission denied", crash + ": your crash, but systemd-coredump grants read of a core only to a "
                                         "regular user (uid above 999), and its timeline has the core's owner"};
  if (facts.owner && *facts.owner == 0 && facts.has_acl == false)
    return {kNotDumpable,
            crash + ": your crash, but the process was not dumpable for you (a setuid or setgid program, one that "
                    "gained capabilities, or one that called prctl(PR_SET_DUMPABLE, 0)), so the kernel dumped it for "
                    "root only and its core and timeline belong to root (the file is root's and grants you nothing); "
                    "run as root to see it"};
  std::string seen;
  if (!facts.owner) seen = "its owner cannot be seen";
  else if (*facts.owner != 0) seen = fmt::format("the file is uid {}'s", *facts.owner);
  else if (facts.acl_unsupported) seen = "the file is root's on a file system without ACLs, so a read grant to you could not be kept";
  else if (facts.has_acl == true) seen = "the file is root's and has an ACL that does not let you read it";
  else seen = "the file is root's and whether it has an ACL cannot be seen";
  return {"permission denied", crash + ": your crash, but " + seen + "; why you may not read it cannot be told"};
}

}  // namespace core_timeline::ctl_query
