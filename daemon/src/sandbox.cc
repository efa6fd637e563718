/* SPDX-License-Identifier: MIT */
/* sandbox.cc - see sandbox.h. */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/landlock.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "files.h"
#include "util.h"

/* Rights and scopes of later ABIs than Debian 12's uapi header knows
 * (include/uapi/linux/landlock.h in the kernel). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0) /* ABI 4 */
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace ctd {

namespace {

/* struct landlock_ruleset_attr as of ABI 6; the kernel takes a prefix of
 * it (copy_struct_from_user), so older kernels get the fields they know. */
struct RulesetAttr {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0;
  std::uint64_t scoped = 0;
};

Confinement not_confined(const char *step, int err) {
  return {0, std::string(step) + ": " + strerrordesc_np(err)};
}

/* The debuginfod client's cache directory (debuginfod-client(7)):
 * $DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/debuginfod_client, else
 * $HOME/.cache/debuginfod_client; "" if none can be named. */
std::string debuginfod_cache() {
  const char *v = getenv("DEBUGINFOD_CACHE_PATH");
  if (v && *v) return v;
  if ((v = getenv("XDG_CACHE_HOME")) && *v) return std::string(v) + "/debuginfod_client";
  if ((v = getenv("HOME")) && *v) return std::string(v) + "/.cache/debuginfod_client";
  return "";
}

}  // namespace

Confinement confine_decoder() {
  /* landlock_restrict_self(2) needs it without CAP_SYS_ADMIN; the service
   * sets it too (NoNewPrivileges=yes). */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return not_confined("PR_SET_NO_NEW_PRIVS", errno);
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) return not_confined("Landlock (landlock_create_ruleset)", errno);

  RulesetAttr attr;
  std::size_t size = sizeof attr.handled_access_fs;
  /* Every right but reading files and directories: handled rights with no
   * rule granting them are denied everywhere. */
  attr.handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                           LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
                           LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                           LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  /* With DEBUGINFOD_URLS named, the symbolizer asks debuginfod servers over
   * HTTP(S) and keeps what it gets in its cache: TCP stays allowed, and so
   * does writing beneath the cache (made first if missing, as the client
   * would). */
  const char *urls = getenv("DEBUGINFOD_URLS");
  const bool debuginfod = urls && *urls;
  if (abi >= 4 && !debuginfod) {
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    size = offsetof(RulesetAttr, scoped);
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  const long ruleset = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) return not_confined("landlock_create_ruleset", errno);
  Fd owned(static_cast<int>(ruleset));
  if (debuginfod) {
    const std::string cache = debuginfod_cache();
    if (!cache.empty()) (void)make_dirs(cache, 0700);
    const int dir = cache.empty() ? -1 : open(cache.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      Fd dir_fd(dir);
      struct landlock_path_beneath_attr beneath {};
      beneath.allowed_access = attr.handled_access_fs & ~(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_IOCTL_DEV);
      beneath.parent_fd = dir_fd.get();
      /* Should it fail, the decoder is confined without it: downloads
       * fail, and symbols come from the core and the files it names. */
      (void)syscall(SYS_landlock_add_rule, owned.get(), LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
    }
  }
  if (syscall(SYS_landlock_restrict_self, owned.get(), 0) < 0) return not_confined("landlock_restrict_self", errno);
  return {static_cast<int>(abi), ""};
}

}  // namespace ctd
