// SPDX-License-Identifier: MIT
//
// sandbox_test.cc (daemon_unit_test): the decoder's sandbox (sandbox.h).

#include "daemon_unit_support.h"

// ---- the decoder's sandbox --------------------------------------------------

namespace {

// errno of a TCP connect to 127.0.0.1:1 (nothing listens there), or 0.
int tcp_connect_errno(std::uint16_t port = 1) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int r = connect(s, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 ? 0 : errno;
  close(s);
  return r;
}

// Runs `body` in a child after `before` and confine_decoder(); returns the
// ABI and the values `body` pushed (errnos, 0 for success).
std::vector<int> confined_child(const std::function<void(std::vector<int> &)> &body,
                                const std::function<void()> &before = [] {}) {
  int out[2];
  if (pipe(out) < 0) return {};
  const pid_t p = fork();
  if (p == 0) {
    close(out[0]);
    before();
    const ctd::Confinement c = ctd::confine_decoder();
    std::vector<int> r{c.abi};
    body(r);
    // The descriptors it was given stay usable.
    const ssize_t len = static_cast<ssize_t>(r.size() * sizeof(int));
    _exit(write(out[1], r.data(), r.size() * sizeof(int)) == len ? 0 : 2);
  }
  close(out[1]);
  std::vector<int> r(64);
  const ssize_t n = read(out[0], r.data(), r.size() * sizeof(int));
  close(out[0]);
  int st = 0;
  waitpid(p, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
  r.resize(n > 0 ? static_cast<std::size_t>(n) / sizeof(int) : 0);
  return r;
}

}  // namespace

// A confined process (sandbox.h) reads files and writes to what it was
// given, and can neither change, create, remove nor execute a file, nor
// connect over TCP, nor signal its parent.  Each attempt runs in a child of
// its own, confined.
TEST(Sandbox, ConfinedDecoderReadsButCannotWriteExecOrSignal) {
  TempDir dir;
  const std::string existing = dir.path + "/core.x.timeline.json";
  std::ofstream(existing) << "{}\n";
  const pid_t parent = getpid();
  ASSERT_EQ(unsetenv("DEBUGINFOD_URLS"), 0);
  const std::vector<int> r = confined_child([&](std::vector<int> &seen) {
    auto attempt = [&](bool ok) { seen.push_back(ok ? 0 : errno); };
    int fd = open(existing.c_str(), O_RDONLY);
    char b[2];
    attempt(fd >= 0 && read(fd, b, 2) == 2);
    attempt(open(existing.c_str(), O_WRONLY) >= 0);
    attempt(open((dir.path + "/new").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) >= 0);
    attempt(truncate(existing.c_str(), 0) == 0);
    attempt(unlink(existing.c_str()) == 0);
    attempt(rename(existing.c_str(), (dir.path + "/moved").c_str()) == 0);
    attempt(mkdir((dir.path + "/d").c_str(), 0700) == 0);
    attempt(symlink("x", (dir.path + "/l").c_str()) == 0);
    char *argv[] = {const_cast<char *>("true"), nullptr};
    execv("/bin/true", argv);
    attempt(false);
    seen.push_back(tcp_connect_errno());
    attempt(kill(parent, 0) == 0);
  });
  ASSERT_EQ(r.size(), 12u);
  ASSERT_GE(r[0], 6) << "Landlock ABI " << r[0] << "; this machine kind's kernel has 7";
  EXPECT_EQ(r[1], 0) << "read: " << strerror(r[1]);
  const char *what[] = {"open for writing", "create", "truncate", "unlink", "rename", "mkdir", "symlink", "execve",
                        "TCP connect"};
  // EACCES from Landlock; EPERM from the seccomp filter where it refuses
  // first (truncate(2), socket(2): sandbox.cc).
  for (int i = 0; i < 9; ++i)
    EXPECT_TRUE(r[2 + i] == EACCES || r[2 + i] == EPERM) << what[i] << ": " << strerror(r[2 + i]);
  EXPECT_EQ(r[11], EPERM) << "kill(parent): " << strerror(r[11]);
  // Nothing changed on disk.
  std::ifstream f(existing);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(f)), {}), "{}\n");
  EXPECT_FALSE(fs::exists(dir.path + "/new"));
}

// With DEBUGINFOD_URLS named, the symbolizer may download: TCP to the
// URLs' ports and writing beneath the debuginfod cache stay allowed, and
// nothing else (TCP to any other port neither).
TEST(Sandbox, DebuginfodKeepsItsCacheAndTcp) {
  TempDir dir;
  const std::string cache = dir.path + "/cache/debuginfod_client";
  const std::vector<int> r = confined_child(
      [&](std::vector<int> &seen) {
        seen.push_back(open((cache + "/x").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) >= 0 ? 0 : errno);
        seen.push_back(mkdir((cache + "/build-id").c_str(), 0700) == 0 ? 0 : errno);
        seen.push_back(open((dir.path + "/y").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600) >= 0 ? 0 : errno);
        seen.push_back(tcp_connect_errno());
        seen.push_back(tcp_connect_errno(2));
      },
      [&] {  // only in the child; confine_decoder() reads them
        setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
        setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
      });
  ASSERT_EQ(r.size(), 6u);
  ASSERT_GE(r[0], 6);
  EXPECT_EQ(r[1], 0) << "create in the cache: " << strerror(r[1]);
  EXPECT_EQ(r[2], 0) << "mkdir in the cache: " << strerror(r[2]);
  EXPECT_EQ(r[3], EACCES) << "create elsewhere: " << strerror(r[3]);
  EXPECT_EQ(r[4], ECONNREFUSED) << "TCP connect to the URL's port: " << strerror(r[4]);
  EXPECT_EQ(r[5], EACCES) << "TCP connect to another port: " << strerror(r[5]);
}

// The ports Landlock lets a decoder connect to: each URL's own, or its
// scheme's; nothing for what is not a URL of a known port.
TEST(Sandbox, DebuginfodPortsAreTheUrlsPorts) {
  using P = std::vector<std::uint16_t>;
  EXPECT_EQ(ctd::debuginfod_ports("http://127.0.0.1:8002"), P{8002});
  EXPECT_EQ(ctd::debuginfod_ports("https://debuginfod.debian.net http://a.example/x http://b.example:80/"),
            (P{443, 80}));
  EXPECT_EQ(ctd::debuginfod_ports("  http://[::1]:8080/path  https://user@host:8443?q  "), (P{8080, 8443}));
  EXPECT_EQ(ctd::debuginfod_ports("HTTPS://host"), P{443});
  EXPECT_EQ(ctd::debuginfod_ports("http://[::1]"), P{80});
  EXPECT_EQ(ctd::debuginfod_ports("ftp://host file:///srv host:99 http://h:0 http://h:70000 http://h:x"), P{});
  EXPECT_EQ(ctd::debuginfod_ports(nullptr), P{});
}

// The service runs the decoder as root without any capability: as the
// owner of every root-owned file it may still change their metadata, and
// as the same uid as the daemon, journald and PID 1 it may still lower their
// resource limits.  Landlock (ABI <= 7) covers none of that, nor connecting
// to a named AF_UNIX socket (/run/systemd/private, the D-Bus system bus,
// journald's socket), nor io_uring's own setxattr.  A confined decoder must
// be denied each of them.
TEST(Sandbox, ConfinedRootWithoutCapabilitiesCannotChangeMetadataLimitsOrReachSockets) {
  TempDir dir;
  const std::string core = dir.path + "/core.victim.1000.zst";  // another user's core: root:root 0640
  std::ofstream(core) << "core";
  ASSERT_EQ(chmod(core.c_str(), 0640), 0);
  ASSERT_EQ(setxattr(core.c_str(), "user.coredump.pid", "1234", 4, 0), 0);
  const std::string sock = dir.path + "/sock";
  const int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, sock.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
  ASSERT_EQ(listen(ls, 4), 0);
  // Stands for the daemon, journald or PID 1: another process of uid 0.
  const pid_t other = fork();
  if (other == 0) {
    pause();
    _exit(0);
  }
  rlimit before{};
  ASSERT_EQ(prlimit(other, RLIMIT_NOFILE, nullptr, &before), 0);
  ASSERT_EQ(unsetenv("DEBUGINFOD_URLS"), 0);
  const std::vector<int> r = confined_child(
      [&](std::vector<int> &seen) {
        auto attempt = [&](bool ok) { seen.push_back(ok ? 0 : errno); };
        attempt(chmod(core.c_str(), 0644) == 0);
        attempt(setxattr(core.c_str(), "user.coredump.pid", "9999", 4, 0) == 0);
        attempt(removexattr(core.c_str(), "user.coredump.pid") == 0);
        attempt(utimensat(AT_FDCWD, core.c_str(), nullptr, 0) == 0);
        rlimit tiny{16, 16};
        attempt(prlimit(other, RLIMIT_NOFILE, &tiny, nullptr) == 0);
        const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        attempt(s >= 0 && connect(s, reinterpret_cast<const sockaddr *>(&sa), sizeof sa) == 0);
        attempt(syscall(SYS_io_uring_setup, 4, std::vector<char>(256, 0).data()) >= 0);
        // What a decoder does stays allowed: its own limits, signals to itself.
        rlimit mine{};
        attempt(getrlimit(RLIMIT_AS, &mine) == 0 && setrlimit(RLIMIT_AS, &mine) == 0);
        attempt(kill(getpid(), 0) == 0);
      },
      [] {  // as in core-timeline.service: root, no capability at all
        for (int c = 0; c <= CAP_LAST_CAP; ++c) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        if (syscall(SYS_capset, &h, d) < 0) _exit(3);
      });
  close(ls);
  ASSERT_EQ(r.size(), 10u);
  ASSERT_GE(r[0], 6);
  const char *what[] = {"chmod", "setxattr", "removexattr", "utimensat", "prlimit(other process)", "connect(AF_UNIX path)",
                        "io_uring_setup"};
  for (int i = 0; i < 7; ++i) EXPECT_NE(r[1 + i], 0) << what[i] << " was allowed";
  EXPECT_EQ(r[8], 0) << "setrlimit(self): " << strerror(r[8]);
  EXPECT_EQ(r[9], 0) << "kill(self, 0): " << strerror(r[9]);
  struct stat st {};
  ASSERT_EQ(stat(core.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  char v[16] = {};
  EXPECT_EQ(getxattr(core.c_str(), "user.coredump.pid", v, sizeof v), 4);
  EXPECT_STREQ(v, "1234");
  rlimit after{};
  EXPECT_EQ(prlimit(other, RLIMIT_NOFILE, nullptr, &after), 0);
  EXPECT_EQ(after.rlim_max, before.rlim_max) << "the decoder lowered another root process's RLIMIT_NOFILE";
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}

// core-timeline.service gives the daemon CAP_SETUID and CAP_SETGID (for the
// child that sends a user's crash entry as that user); a decoder inherits
// them, and its seccomp filter must refuse every call that would use them.
TEST(Sandbox, ConfinedDecoderCannotUseTheServicesSetuidCapabilities) {
  ASSERT_EQ(unsetenv("DEBUGINFOD_URLS"), 0);
  const std::vector<int> r = confined_child(
      [&](std::vector<int> &seen) {
        auto attempt = [&](bool ok) { seen.push_back(ok ? 0 : errno); };
        attempt(setresuid(1000, 1000, 1000) == 0);
        attempt(setresgid(1000, 1000, 1000) == 0);
        attempt(setgroups(0, nullptr) == 0);
        attempt(setuid(1000) == 0);
        attempt(syscall(SYS_setfsuid, 1000) == 0 && syscall(SYS_setfsuid, 1000) == 1000);
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        attempt(syscall(SYS_capset, &h, d) == 0);
        seen.push_back(static_cast<int>(getuid()));
      },
      [] {  // as in core-timeline.service: root with CAP_SETUID and CAP_SETGID only
        for (int c = 0; c <= CAP_LAST_CAP; ++c)
          if (c != CAP_SETUID && c != CAP_SETGID) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2]{};
        d[0].effective = d[0].permitted = (1u << CAP_SETUID) | (1u << CAP_SETGID);
        if (syscall(SYS_capset, &h, d) < 0) _exit(3);
      });
  ASSERT_EQ(r.size(), 8u);
  ASSERT_GE(r[0], 6) << "Landlock ABI";
  const char *what[] = {"setresuid", "setresgid", "setgroups", "setuid", "setfsuid", "capset"};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r[1 + i], EPERM) << what[i] << ": " << strerror(r[1 + i]);
  EXPECT_EQ(r[7], 0) << "the decoder changed its uid";
}
