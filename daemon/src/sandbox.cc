/* SPDX-License-Identifier: MIT */
/* sandbox.cc - see sandbox.h. */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

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
#ifndef LANDLOCK_RULE_NET_PORT
#define LANDLOCK_RULE_NET_PORT 2 /* ABI 4 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace core_timeline::daemon {

namespace {

/* struct landlock_ruleset_attr as of ABI 6; the kernel takes a prefix of
 * it (copy_struct_from_user), so older kernels get the fields they know. */
struct RulesetAttr {
  std::uint64_t handled_access_fs = 0;
  std::uint64_t handled_access_net = 0;
  std::uint64_t scoped = 0;
};

/* struct landlock_net_port_attr (ABI 4). */
struct NetPortAttr {
  std::uint64_t allowed_access = 0;
  std::uint64_t port = 0;
} __attribute__((packed));

}  // namespace

std::vector<std::uint16_t> debuginfod_ports(const char *urls) {
  std::vector<std::uint16_t> ports;
  if (urls == nullptr) return ports;
  const std::string all(urls);
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t sp = all.find_first_of(" \t\n", at);
    const std::string url = all.substr(at, sp == std::string::npos ? std::string::npos : sp - at);
    at = sp == std::string::npos ? all.size() : sp + 1;
    const std::size_t scheme_end = url.find("://");
    if (url.empty() || scheme_end == std::string::npos) continue;
    std::string scheme = url.substr(0, scheme_end);
    for (auto &c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string host = url.substr(scheme_end + 3);
    host = host.substr(0, host.find_first_of("/?#"));
    if (const auto atsign = host.rfind('@'); atsign != std::string::npos) host = host.substr(atsign + 1);
    /* [v6]:port, host:port, or the scheme's port. */
    const std::size_t bracket = host.rfind(']');
    const std::size_t colon = host.rfind(':');
    long port = scheme == "https" ? 443 : scheme == "http" ? 80 : -1;
    if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
      char *end = nullptr;
      const std::string digits = host.substr(colon + 1);
      const long p = std::strtol(digits.c_str(), &end, 10);
      port = !digits.empty() && *end == '\0' && p > 0 && p < 65536 ? p : -1;
    }
    if (port > 0 && std::find(ports.begin(), ports.end(), port) == ports.end())
      ports.push_back(static_cast<std::uint16_t>(port));
  }
  return ports;
}

namespace {

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

#if defined(__x86_64__)
/* Calls newer than Debian 12's headers. */
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif
#ifndef SYS_removexattrat
#define SYS_removexattrat 466
#endif

namespace bpf {

constexpr std::uint32_t kDeny = SECCOMP_RET_ERRNO | EPERM, kAllow = SECCOMP_RET_ALLOW;
constexpr std::uint32_t kNr = offsetof(struct seccomp_data, nr);
constexpr std::uint32_t kArg0 = offsetof(struct seccomp_data, args[0]); /* low 32 bits (little endian) */

/* A seccomp program, appended to instruction by instruction. */
struct Program {
  std::vector<sock_filter> f;
  void stmt(std::uint16_t code, std::uint32_t k) { f.push_back(BPF_STMT(code, k)); }
  void jump(std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
    f.push_back(BPF_JUMP(code, k, jt, jf));
  }
  /* The call (in the accumulator) `nr` gets EPERM; any other goes on. */
  void deny(long nr) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 1);
    stmt(BPF_RET | BPF_K, kDeny);
  }
  /* Call `nr`, whose first argument names a process, is allowed on this
   * process (`self`) only, and on "this process", 0, where `zero` says so;
   * any other call goes on (the accumulator holds the call again). */
  void self_only(long nr, std::uint32_t self, bool zero) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, zero ? 6 : 4);
    stmt(BPF_LD | BPF_W | BPF_ABS, kArg0);
    jump(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1);
    stmt(BPF_RET | BPF_K, kAllow);
    if (zero) {
      jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
      stmt(BPF_RET | BPF_K, kAllow);
    }
    stmt(BPF_RET | BPF_K, kDeny);
  }
};

/* x86-64 calls only (no x32, no other ABI); loads the call's number. */
void native_calls_only(Program &p) {
  p.stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  p.stmt(BPF_RET | BPF_K, kDeny);
  p.stmt(BPF_LD | BPF_W | BPF_ABS, kNr);
  p.jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* __X32_SYSCALL_BIT */, 0, 1);
  p.stmt(BPF_RET | BPF_K, kDeny);
}

/* Metadata, io_uring, IPC, other processes' memory, keyrings; and, without
 * `inet`, socketpair. */
void deny_calls(Program &p, bool inet) {
  for (const long nr :
       {SYS_chmod, SYS_fchmod, SYS_fchmodat, SYS_fchmodat2, SYS_chown, SYS_fchown, SYS_lchown, SYS_fchownat,
        SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr, SYS_setxattrat, SYS_removexattr, SYS_lremovexattr,
        SYS_fremovexattr, SYS_removexattrat, SYS_utime, SYS_utimes, SYS_futimesat, SYS_utimensat, SYS_truncate,
        SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_pidfd_send_signal, SYS_setpriority,
        SYS_ioprio_set, SYS_msgget, SYS_msgsnd, SYS_msgrcv, SYS_msgctl, SYS_semget, SYS_semop,
        SYS_semtimedop, SYS_semctl, SYS_shmget, SYS_shmat, SYS_shmctl, SYS_shmdt, SYS_mq_open, SYS_mq_unlink,
        SYS_mq_timedsend, SYS_mq_timedreceive, SYS_mq_notify, SYS_mq_getsetattr,
        /* Landlock keeps these within the decoder; without it, too. */
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_pidfd_getfd, SYS_kcmp,
        /* root's keyrings (the unit has KeyringMode=private; a decoder
         * started otherwise would share its caller's). */
        SYS_keyctl, SYS_add_key, SYS_request_key,
        /* The service gives the daemon CAP_SETUID and CAP_SETGID, for the
         * child that sends a crash's journal entry as the crashed user
         * (daemon/src/timeline_entry.h); a decoder inherits them and must
         * not use them. */
        SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid, SYS_setresuid, SYS_setresgid, SYS_setgroups,
        SYS_setfsuid, SYS_setfsgid, SYS_capset})
    p.deny(nr);
  /* A connected AF_UNIX datagram pair can still send to a named socket
   * (sendto with an address); libcurl (debuginfod) makes a pair for its
   * own wakeups. */
  if (!inet) p.deny(SYS_socketpair);
}

/* Signals, resource limits and scheduling: of this process only. */
void on_self_only(Program &p, std::uint32_t self) {
  p.self_only(SYS_kill, self, true);
  p.self_only(SYS_tkill, self, false);
  p.self_only(SYS_tgkill, self, false);
  p.self_only(SYS_rt_sigqueueinfo, self, false);
  p.self_only(SYS_rt_tgsigqueueinfo, self, false);
  p.self_only(SYS_prlimit64, self, true);
  p.self_only(SYS_sched_setaffinity, self, true);
  p.self_only(SYS_sched_setscheduler, self, true);
  p.self_only(SYS_sched_setparam, self, true);
  p.self_only(SYS_sched_setattr, self, true);
}

/* socket(2): none, or for debuginfod's downloads only IP; then every
 * other call is allowed (the program's end). */
void sockets_then_allow(Program &p, bool inet) {
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 5);
  p.stmt(BPF_LD | BPF_W | BPF_ABS, kArg0);
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, inet ? AF_INET : 0xffffffffu, 1, 0);
  p.jump(BPF_JMP | BPF_JEQ | BPF_K, inet ? AF_INET6 : 0xffffffffu, 0, 1);
  p.stmt(BPF_RET | BPF_K, kAllow);
  p.stmt(BPF_RET | BPF_K, kDeny);
  p.stmt(BPF_RET | BPF_K, kAllow);
}

}  // namespace bpf

/* What Landlock (ABI <= 7) does not govern and a decoder never needs, as a
 * seccomp filter (seccomp(2)) answering EPERM.  A decoder now runs as the
 * crashed user or core-timeline-decoder (decode.h, "Whose rights"), not as
 * root; the filter was written for a decoder that ran as root, the owner
 * of every root-owned file and the same uid as the daemon, journald and
 * PID 1, and still refuses all of this to the uid it runs as (any other
 * process of the crashed user's, among them; and every further change of
 * uid, gid or capabilities).  Without it a decoder of root's uid could
 *  - change the metadata of what root owns where the unit allows writing:
 *    make other users' cores world-readable (chmod, ACL xattr), edit the
 *    user.coredump.* xattrs the daemon trusts (entry.h, rule 6), so that
 *    genuine entries are rejected;
 *  - lower the resource limits of any root process (prlimit64: no
 *    capability is needed to lower another process's limits of the same
 *    uid), signal it (kill: Landlock scopes signals only from ABI 6 on), or
 *    change its scheduling;
 *  - connect to named AF_UNIX sockets (the service manager's private bus,
 *    D-Bus, journald's sockets, where uid 0 is trusted): Landlock scopes
 *    only abstract ones;
 *  - reach files through io_uring, whose setxattr does not pass seccomp,
 *    and System V or POSIX IPC objects of other root processes.
 * Its own limits and signals stay allowed (abort(3) signals itself).  With
 * `inet`, sockets of AF_INET and AF_INET6 stay allowed (debuginfod). */
std::string deny_what_landlock_does_not(bool inet) {
  bpf::Program p;
  bpf::native_calls_only(p);
  bpf::deny_calls(p, inet);
  bpf::on_self_only(p, static_cast<std::uint32_t>(getpid()));
  bpf::sockets_then_allow(p, inet);
  const sock_fprog prog{static_cast<unsigned short>(p.f.size()), p.f.data()};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
    return std::string("seccomp filter: ") + strerrordesc_np(errno);
  return "";
}
#else
std::string deny_what_landlock_does_not(bool) { return "seccomp filter: not built for this architecture"; }
#endif

}  // namespace

namespace {

/* The Landlock half of confine_decoder(): the ABI it restricted the
 * process with, or 0 and why not in `failure`. */
int restrict_with_landlock(bool debuginfod, std::string &failure) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    failure = std::string("Landlock (landlock_create_ruleset): ") + strerrordesc_np(errno);
    return 0;
  }
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
  /* No TCP server ever; no TCP client either, but to the ports of the
   * servers DEBUGINFOD_URLS names, whom the symbolizer asks over HTTP(S). */
  if (abi >= 4) {
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    size = offsetof(RulesetAttr, scoped);
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  const long ruleset = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) {
    failure = std::string("landlock_create_ruleset: ") + strerrordesc_np(errno);
    return 0;
  }
  Fd owned(static_cast<int>(ruleset));
  if (debuginfod && abi >= 4)
    for (const std::uint16_t port : debuginfod_ports(getenv("DEBUGINFOD_URLS"))) {
      NetPortAttr rule;
      rule.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP;
      rule.port = port;
      /* Should it fail, that server cannot be reached: a note, no more. */
      (void)syscall(SYS_landlock_add_rule, owned.get(), LANDLOCK_RULE_NET_PORT, &rule, 0);
    }
  /* What the debuginfod client downloads is kept in its cache: writing
   * beneath it stays allowed (made first if missing, as the client would). */
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
  if (syscall(SYS_landlock_restrict_self, owned.get(), 0) < 0) {
    failure = std::string("landlock_restrict_self: ") + strerrordesc_np(errno);
    return 0;
  }
  return static_cast<int>(abi);
}

}  // namespace

Confinement confine_decoder() {
  Confinement c;
  /* Both halves need it without CAP_SYS_ADMIN; the service sets it too
   * (NoNewPrivileges=yes). */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
    c.failure = std::string("PR_SET_NO_NEW_PRIVS: ") + strerrordesc_np(errno);
    c.seccomp_failure = c.failure;
    return c;
  }
  const char *urls = getenv("DEBUGINFOD_URLS");
  const bool debuginfod = urls && *urls;
  c.abi = restrict_with_landlock(debuginfod, c.failure);
  /* The filter also where Landlock is missing: it still keeps the decoder
   * from other processes and from the metadata of what root owns. */
  c.seccomp_failure = deny_what_landlock_does_not(debuginfod);
  c.seccomp = c.seccomp_failure.empty();
  return c;
}

}  // namespace core_timeline::daemon
