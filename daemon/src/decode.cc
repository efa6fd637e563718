/* SPDX-License-Identifier: MIT */
/* decode.cc - see decode.h. */
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/tlmap.h"
#include "credentials.h"
#include "files.h"
#include "sandbox.h"

extern char **environ;

namespace core_timeline::daemon {

namespace {

/* What the daemon reads from a decoder: the compact document, some 40 to
 * 60 bytes an event (docs/performance.md, "redis_document.sh"), so this
 * holds the timeline of several million events; a bigger one the decoder
 * does not write (decode_fd3). */
constexpr std::size_t kMaxOutput = 256u << 20;
constexpr std::size_t kMaxStderr = 16u << 10;
constexpr const char kCoreFdPath[] = "/proc/self/fd/3";

/* Whether a decoder gets RLIMIT_AS (and, from it, RLIMIT_DATA).  Not in an
 * AddressSanitizer build (CT_SANITIZE=address,...: the tests' second build,
 * never a package): ASan reserves its shadow memory, some 20 TiB of address
 * space, when the program starts (gcc defines __SANITIZE_ADDRESS__), so an
 * exec'd decoder under any RLIMIT_AS the daemon would set cannot start, and
 * a cloned one, already past it, could not allocate.  The tests of those
 * limits are left out of that build (tests/run.sh, docs/hacking.md,
 * "Sanitizers"). */
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kLimitAddressSpace = false;
#else
constexpr bool kLimitAddressSpace = true;
#endif

void replace_all(std::string &s, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
}

std::string signal_text(int sig) {
  const char *abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

/* A "Name: N kB" line of /proc/self/status (proc(5)): VmHWM is the peak
 * RSS since exec (the rusage of the child would include the daemon's pages
 * from before exec); RssAnon the anonymous part of the RSS now. */
unsigned long long status_kb(const char *name) {
  FILE *f = std::fopen("/proc/self/status", "re");
  if (!f) return 0;
  char line[256];
  const std::size_t n = std::strlen(name);
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, name, n) == 0 && line[n] == ':' && std::sscanf(line + n + 1, "%llu", &kb) == 1) break;
  std::fclose(f);
  return kb;
}

/* The test build's probe (decode.h set_decoder_probe()); null in
 * core-timelined. */
DecoderProbe g_probe = nullptr;

/* In a decoder, before it opens anything (decode.h, "Whose rights"):
 * becomes `uid`/`gid` with no supplementary groups, sets the dumpable flag
 * and the parent-death signal again (commit_creds() reset them), checks
 * that `parent` (when > 0) is still its parent and that the drop took,
 * and points DEBUGINFOD_CACHE_PATH at this uid's own cache.  Messages go
 * to `err_fd`.  Returns 0, or the exit status to exit with: 125 (refused
 * or failed), 127 (orphaned).  Async-signal-safe up to the setenv, which
 * runs in a single-threaded child. */
int drop_to(uid_t uid, gid_t gid, pid_t parent, int err_fd) {
  if (uid == 0) {
    dprintf(err_fd, "core-timelined decoder: refusing to decode as root\n");
    return 125;
  }
  if (const int err = become(uid, gid); err != 0) {
    dprintf(err_fd, "core-timelined decoder: cannot become uid %u gid %u: %s (the daemon needs CAP_SETUID and "
                    "CAP_SETGID)\n", static_cast<unsigned>(uid), static_cast<unsigned>(gid), strerrordesc_np(err));
    return 125;
  }
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (parent > 0 && getppid() != parent) return 127;
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0 || ru != uid || eu != uid || su != uid ||
      rg != gid || eg != gid || sg != gid || getgroups(0, nullptr) != 0) {
    dprintf(err_fd, "core-timelined decoder: the drop to uid %u gid %u did not take\n", static_cast<unsigned>(uid),
            static_cast<unsigned>(gid));
    return 125;
  }
  if (const char *base = getenv("DEBUGINFOD_CACHE_PATH"); base != nullptr && *base != '\0')
    setenv("DEBUGINFOD_CACHE_PATH", debuginfod_cache_for(base, uid).c_str(), 1);
  return 0;
}

/* A uid or gid from its decimal text (the whole of it), or nullopt. */
std::optional<std::uint32_t> parse_id(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || s.size() > 10) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v >= 0xffffffffull) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

}  // namespace

std::string_view decoder_as_name(DecoderAs as) noexcept {
  switch (as) {
    case DecoderAs::kCrashedUser:
      return "crashed_user";
    case DecoderAs::kDedicatedUser:
      return "dedicated_user";
    case DecoderAs::kFallbackUser:
      break;
  }
  return "fallback_user";
}

DecoderUsers DecoderUsers::lookup() {
  const struct passwd *pw = getpwnam(kDecoderUser);
  if (pw == nullptr || pw->pw_uid == 0 || pw->pw_gid == 0) return DecoderUsers(std::nullopt);
  return DecoderUsers(std::make_pair(pw->pw_uid, pw->pw_gid));
}

DecoderCredentials DecoderUsers::for_crash(std::uint64_t uid, std::optional<std::uint64_t> gid) const {
  if (!is_system_uid(uid))
    return {static_cast<uid_t>(uid), static_cast<gid_t>(gid && *gid < 0xffffffffull ? *gid : kNobody),
            DecoderAs::kCrashedUser};
  if (dedicated_) return {dedicated_->first, dedicated_->second, DecoderAs::kDedicatedUser};
  return {kNobody, kNobody, DecoderAs::kFallbackUser};
}

std::string debuginfod_cache_for(const std::string &base, uid_t uid) {
  return base + "/" + std::to_string(uid);
}

void set_decoder_probe(DecoderProbe probe) noexcept { g_probe = probe; }

namespace {

/* Decodes the core on fd 3 and writes the CTD1 output on fd 1 (decode.h,
 * "Protocol").  Returns the exit status. */
int decode_fd3(const std::string &display, const char *tlmap_path) {
  namespace ctr = core_timeline::reader;
  /* Before anything of the core is read (sandbox.h). */
  const Confinement confined = confine_decoder();
  if (confined.abi == 0) std::fprintf(stderr, "core-timelined decoder: no Landlock: %s\n", confined.failure.c_str());
  if (!confined.seccomp) std::fprintf(stderr, "core-timelined decoder: no seccomp filter: %s\n",
                                      confined.seccomp_failure.c_str());
  limit_own_memory();
  std::vector<std::string> probed;
  if (g_probe) probed = g_probe();
  std::optional<ctr::TlMap> tlmap;
  std::string tlmap_warning;
  if (tlmap_path && tlmap_path[0] != '\0') {
    auto m = ctr::TlMap::load(tlmap_path);
    if (m) tlmap = std::move(*m);
    else tlmap_warning = "event names file " + std::string(tlmap_path) + " not used: " + m.error().message;
  }
  ctr::ReadOptions opts;
  opts.tlmap = tlmap ? &*tlmap : nullptr;
  if (const char *b = getenv(kDebuginfodTimeoutEnv); b != nullptr && *b != '\0')
    opts.debuginfod_timeout_ms = static_cast<int>(std::min<unsigned long long>(std::strtoull(b, nullptr, 10), 3600000));
  ctr::FileFacts facts;
  /* fd 3 itself, never reopened by path: opening /proc/self/fd/3 would
   * check the file's mode against this uid, which the daemon's root-owned
   * copy of the core does not grant (decode.h, "Whose rights"). */
  auto core = ctr::CoreFile::from_fd(Fd(3), kCoreFdPath, &facts);
  ctr::Analysis a = core ? ctr::analyze(*core, opts) : ctr::analysis_of_error(display, core.error(), facts);
  a.core_path = display;
  replace_all(a.reason, kCoreFdPath, display);
  for (auto &w : a.warnings) replace_all(w, kCoreFdPath, display);
  if (!tlmap_warning.empty()) a.warnings.push_back(tlmap_warning);
  for (auto &p : probed) a.warnings.push_back(std::move(p));
  /* The document is written as it is made (compact.h), never held whole,
   * so that the memory limit is for decoding, not for the output; its
   * text part is empty (readers render the text from the document).  The
   * header gives the sizes first: the document is made twice, counted,
   * then written; it is a function of the Analysis alone.
   * Counting stops where the daemon would stop reading (kMaxOutput): a
   * timeline too big to be read costs at most that much making. */
  const std::size_t room = kMaxOutput - 128;  /* the header is shorter */
  std::uint64_t json_bytes = 0, text_bytes = 0;
  const auto counter = [&](std::uint64_t &n) {
    return [&](std::string_view piece) {
      n += piece.size();
      return json_bytes + text_bytes <= room;
    };
  };
  /* The compact document (compact.h): readers render the text from it. */
  if (!ctr::write_compact(a, counter(json_bytes))) {
    std::fprintf(stderr,
                 "core-timelined decoder: not written: the timeline of %zu events is more than the %zu MiB the "
                 "daemon reads (decoded in VmHWM %llu kB)\n",
                 a.events.size(), kMaxOutput >> 20, status_kb("VmHWM"));
    return 123;
  }
  const std::string header = "CTD1 " + std::to_string(json_bytes) + " " + std::to_string(text_bytes) + " " +
                             std::to_string(ctr::exit_code(a.status)) + " " + std::to_string(status_kb("VmHWM")) + " " +
                             std::to_string(status_kb("RssAnon")) + " " + std::to_string(confined.abi) + " " +
                             (confined.seccomp ? "1" : "0") + " " + std::to_string(getuid()) + " " +
                             std::to_string(getgid()) + "\n";
  const ctr::Output to_stdout = [](std::string_view piece) {
    return static_cast<bool>(write_all(1, piece, "the decoder's output"));
  };
  if (!write_all(1, header, "the decoder's output") || !ctr::write_compact(a, to_stdout)) return 124;
  return 0;
}

/* The environment of a decoder or server: the daemon's, without what
 * belongs to the service alone (sd_notify(3), socket activation). */
std::vector<char *> decoder_environment() {
  std::vector<char *> envp;
  for (char **e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("NOTIFY_SOCKET=") || kv.starts_with("WATCHDOG_") || kv.starts_with("LISTEN_")) continue;
    envp.push_back(*e);
  }
  envp.push_back(nullptr);
  return envp;
}

/* Between fork and execve (async-signal-safe calls only): the empty
 * signal mask and default dispositions a new program expects (the daemon
 * blocks SIGTERM, SIGINT and SIGHUP for its signalfd and ignores SIGPIPE). */
void reset_signals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
}

/* RLIMIT_AS of a decoder: `bytes`, or the hard limit the service already
 * has if that is lower (raising it needs CAP_SYS_RESOURCE).  Async-signal-
 * safe.  False if even that cannot be set. */
bool limit_address_space(rlim_t bytes) {
  if (!kLimitAddressSpace) return true;
  struct rlimit now;
  if (getrlimit(RLIMIT_AS, &now) < 0) return false;
  const rlim_t to = now.rlim_max == RLIM_INFINITY || bytes < now.rlim_max ? bytes : now.rlim_max;
  const struct rlimit rl{to, to};
  return setrlimit(RLIMIT_AS, &rl) == 0;
}

/* Server requests: "CTDS1\0<as limit>\0<uid>\0<gid>\0<display>\0<tlmap>\0" with the
 * core, stdout, stderr and go descriptors (SCM_RIGHTS); the answer is the
 * decoder's pid, or minus an errno, as an int32_t. */
constexpr char kServerMagic[] = "CTDS1";
constexpr std::size_t kMaxRequest = 16384;
constexpr int kServerAnswerMs = 2000;

/* Pids of the decoders started and not yet reaped (DecoderRun) and of the
 * running servers: every other child of the daemon is a decoder whose
 * server's answer was lost (DecoderServer::stop). */
std::set<pid_t> &known_children() {
  static std::set<pid_t> pids;
  return pids;
}

/* Kills and reaps the children of this process that known_children() does
 * not list (/proc/self/task/TID/children, proc(5)). */
void reap_unknown_children() {
  std::error_code ec;
  std::vector<pid_t> strays;
  for (const auto &t : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    FILE *f = std::fopen((t.path() / "children").c_str(), "re");
    if (!f) continue;
    long pid;
    while (std::fscanf(f, "%ld", &pid) == 1)
      if (!known_children().count(static_cast<pid_t>(pid))) strays.push_back(static_cast<pid_t>(pid));
    std::fclose(f);
  }
  for (pid_t p : strays) {
    kill(p, SIGKILL);
    while (waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace

std::string prepare_debuginfod(const std::string &state_dir, std::uint64_t budget_ms, std::uint64_t decode_timeout_ms) {
  setenv(kDebuginfodTimeoutEnv, std::to_string(budget_ms).c_str(), 1);
  const char *urls = getenv("DEBUGINFOD_URLS");
  if (urls == nullptr || *urls == '\0') return "";
  const char *cache = getenv("DEBUGINFOD_CACHE_PATH");
  if (cache == nullptr || *cache == '\0') {
    const char *cd = getenv("CACHE_DIRECTORY");
    std::string dir = cd != nullptr && *cd != '\0' ? std::string(cd) : state_dir;
    if (auto colon = dir.find(':'); colon != std::string::npos) dir.resize(colon);
    setenv("DEBUGINFOD_CACHE_PATH", (dir + "/debuginfod_client").c_str(), 1);
  }
  std::string line = "debuginfod: decoders ask DEBUGINFOD_URLS=" + printable(urls, 400) + " for debug info, cache " +
                     printable(getenv("DEBUGINFOD_CACHE_PATH"), 400) + ", ";
  line += budget_ms == 0 ? std::string("no time limit but libdebuginfod's own")
                         : "at most " + std::to_string(budget_ms) + " ms per core (--debuginfod-timeout)";
  if (budget_ms == 0 || budget_ms >= decode_timeout_ms)
    line += "; NOT below --decode-timeout (" + std::to_string(decode_timeout_ms) +
            " ms): a slow server makes cores undecodable";
  return line;
}

int decoder_child_main(int argc, char **argv) {
  /* No core from a decoder that crashes (see decode.h). */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const auto uid = argc >= 5 ? parse_id(argv[2]) : std::nullopt, gid = argc >= 5 ? parse_id(argv[3]) : std::nullopt;
  if (!uid || !gid) {
    std::fprintf(stderr, "usage: core-timelined --decode-child UID GID DISPLAY_NAME [TLMAP] (core on fd 3)\n");
    return 125;
  }
  /* Its parent, the daemon, checked before the exec that it was alive
   * (exec_decoder); an orphan finds its output pipe closed. */
  if (const int r = drop_to(*uid, *gid, 0, 2); r != 0) return r;
  /* Ends as a cloned decoder does (run_cloned_decoder): with _exit, so
   * nothing of the process's teardown runs in the sandbox - destructors,
   * atexit handlers, and in an ASan build LeakSanitizer's check, which
   * needs the ptrace the seccomp filter refuses ("LeakSanitizer does not
   * work under ptrace", exit 1).  The output is written with write(2). */
  const int rc = decode_fd3(argv[4], argc >= 6 ? argv[5] : nullptr);
  std::fflush(nullptr);
  _exit(rc);
}

namespace {

/* One request to the decoder server, as received: its descriptors (core,
 * stdout, stderr, go; -1 where missing) and its NUL-terminated fields,
 * which point into the caller's buffer. */
struct ServerRequest {
  int fds[4] = {-1, -1, -1, -1};
  std::size_t nfds = 0;
  std::vector<std::string_view> fields;
};

/* Receives the next request on fd 3 into `buf` (kMaxRequest bytes).
 * Returns recvmsg's result: <= 0 at the end or on an error. */
ssize_t receive_request(char *buf, ServerRequest &r) {
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(4 * sizeof(int))];
  } ctl;
  struct iovec iov {buf, kMaxRequest};
  struct msghdr m {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl.b;
  m.msg_controllen = sizeof ctl.b;
  const ssize_t n = recvmsg(3, &m, MSG_CMSG_CLOEXEC);
  if (n <= 0) return n;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        if (r.nfds < 4) r.fds[r.nfds++] = fd;
        else close(fd);
      }
    }
  /* Six NUL-terminated fields. */
  for (std::size_t at = 0; at < static_cast<std::size_t>(n) && r.fields.size() < 6;) {
    const void *nul = std::memchr(buf + at, '\0', static_cast<std::size_t>(n) - at);
    if (!nul) break;
    const std::size_t len = static_cast<std::size_t>(static_cast<const char *>(nul) - (buf + at));
    r.fields.emplace_back(buf + at, len);
    at += len + 1;
  }
  return n;
}

/* In the clone: waits for the daemon's go, takes the request's
 * descriptors as 0-3, limits its memory to `as_limit` and decodes. */
[[noreturn]] void run_cloned_decoder(const ServerRequest &r, pid_t daemon, unsigned long long as_limit, uid_t uid,
                                     gid_t gid, const std::string &display, const std::string &tlmap) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != daemon) _exit(127);
  /* Nothing before the daemon has confirmed this pid (spawn()). */
  char go = 0;
  ssize_t g;
  while ((g = read(r.fds[3], &go, 1)) < 0 && errno == EINTR) {
  }
  if (g != 1) _exit(127);
  /* The credentials first: nothing is opened as root (decode.h). */
  if (const int d = drop_to(uid, gid, daemon, r.fds[2]); d != 0) _exit(d);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(r.fds[1], 1) < 0 || dup2(r.fds[2], 2) < 0 || dup2(r.fds[0], 3) < 0)
    _exit(127);
  syscall(SYS_close_range, 4u, ~0u, 0u);
  /* An exec'd decoder under a limit below its own size fails to
   * load; this one would run on without room to grow.  Fail alike. */
  const unsigned long long own_kb = status_kb("VmSize");
  if (kLimitAddressSpace && own_kb * 1024 > as_limit) {
    std::fprintf(stderr, "Cannot allocate memory: the memory limit (%llu bytes with the core) is below the "
                         "decoder's own size (%llu kB)\n", as_limit, own_kb);
    _exit(125);
  }
  if (!limit_address_space(as_limit)) _exit(125);
  _exit(decode_fd3(display, tlmap.c_str()));
}

/* Makes the decoder `r` asks for; the answer to send: its pid, or minus
 * an errno. */
std::int32_t serve(const ServerRequest &r, pid_t daemon) {
  unsigned long long as_limit = 0;
  const auto uid = r.fields.size() == 6 ? parse_id(r.fields[2]) : std::nullopt;
  const auto gid = r.fields.size() == 6 ? parse_id(r.fields[3]) : std::nullopt;
  if (r.nfds != 4 || r.fields.size() != 6 || r.fields[0] != kServerMagic || !uid || !gid ||
      std::sscanf(std::string(r.fields[1]).c_str(), "%llu", &as_limit) != 1)
    return -EINVAL;
  const std::string display(r.fields[4]), tlmap(r.fields[5]);
  /* The decoder is the daemon's child (CLONE_PARENT), so the daemon
   * waits for it, times it out and kills it as it would a child it
   * forked.  A raw clone, as systemd's raw_clone() (src/basic/raw-clone.h):
   * the child runs on a copy of this stack, like fork(2), without
   * glibc's fork handlers, which this single-threaded server does not
   * need. */
  const long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, nullptr, nullptr, 0);
  if (pid == 0) run_cloned_decoder(r, daemon, as_limit, *uid, *gid, display, tlmap);
  return pid > 0 ? static_cast<std::int32_t>(pid) : -errno;
}

}  // namespace

int decoder_server_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  const pid_t daemon = getppid();
  for (;;) {
    char buf[kMaxRequest];
    ServerRequest r;
    const ssize_t n = receive_request(buf, r);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0; /* the daemon closed its end: done */
    const std::int32_t answer = serve(r, daemon);
    for (int fd : r.fds)
      if (fd >= 0) close(fd);
    if (send(3, &answer, sizeof answer, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof answer)) return 0;
  }
}

void limit_own_memory() {
  struct rlimit as;
  struct stat st;
  if (getrlimit(RLIMIT_AS, &as) < 0 || as.rlim_cur == RLIM_INFINITY || fstat(3, &st) < 0) return;
  const rlim_t core = static_cast<rlim_t>(st.st_size);
  const rlim_t own = as.rlim_cur > core ? as.rlim_cur - core : 0;
  struct rlimit data;
  if (getrlimit(RLIMIT_DATA, &data) < 0) return;
  if (data.rlim_max != RLIM_INFINITY && data.rlim_max < own) return; /* already lower */
  const struct rlimit to{own, own};
  (void)setrlimit(RLIMIT_DATA, &to);
}

Result<DecoderServer> DecoderServer::start(const std::string &self_exe) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return errno_error(errno, "socketpair for the decoder server");
  Fd mine(sv[0]), theirs(sv[1]);
  std::vector<std::string> args{"core-timelined", "--decoder-server"};
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char *> envp = decoder_environment();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return errno_error(errno, "fork for the decoder server");
  if (pid == 0) {
    /* Child: async-signal-safe calls only until execve. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0) _exit(127);
    if (theirs.get() == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(theirs.get(), 3) < 0) _exit(127);
    syscall(SYS_close_range, 4u, ~0u, 0u);
    reset_signals();
    struct rlimit core{1, 1};  /* no core from the server nor its decoders (core(5)) */
    setrlimit(RLIMIT_CORE, &core); /* fails only if the hard limit is 0: no core anyway */
    execve(self_exe.c_str(), argv.data(), envp.data());
    _exit(126);
  }
  DecoderServer s;
  s.sock_ = std::move(mine);
  s.pid_ = pid;
  s.self_exe_ = self_exe;
  known_children().insert(pid);
  return s;
}

Result<void> DecoderServer::renew() {
  const std::string exe = self_exe_.empty() ? "/proc/self/exe" : self_exe_;
  stop();
  auto s = start(exe);
  if (!s) return std::move(s).error();
  *this = std::move(*s);
  return {};
}

DecoderServer::DecoderServer(DecoderServer &&o) noexcept
    : sock_(std::move(o.sock_)),
      pid_(std::exchange(o.pid_, -1)),
      self_exe_(std::move(o.self_exe_)),
      spawned_(std::exchange(o.spawned_, 0)) {}

DecoderServer &DecoderServer::operator=(DecoderServer &&o) noexcept {
  if (this != &o) {
    stop();
    sock_ = std::move(o.sock_);
    pid_ = std::exchange(o.pid_, -1);
    self_exe_ = std::move(o.self_exe_);
    spawned_ = std::exchange(o.spawned_, 0);
  }
  return *this;
}

DecoderServer::~DecoderServer() { stop(); }

void DecoderServer::stop() noexcept {
  sock_.reset();
  if (pid_ <= 0) return;
  /* It exits when its socket closes; if it is stuck, it is killed. */
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {
    reaped = waitpid(pid_, nullptr, WNOHANG) == pid_;
    if (!reaped) usleep(1000);
  }
  if (!reaped) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  known_children().erase(pid_);
  pid_ = -1;
  /* The server is gone: nothing can clone any more, so a child nobody
   * knows is a decoder whose answer was lost (it exits at once). */
  reap_unknown_children();
}

namespace {

/* The server request for `req` (kServerMagic, the limit, uid, gid, display
 * name and tlmap, each NUL-terminated).  Errors: EINVAL, E2BIG (DecoderServer::spawn). */
Result<std::string> request_message(const DecodeRequest &req, std::uint64_t as_limit) {
  std::string msg;
  for (const std::string &field :
       {std::string(kServerMagic), std::to_string(as_limit), std::to_string(req.credentials.uid),
        std::to_string(req.credentials.gid), req.display_name, req.tlmap.value_or("")}) {
    if (field.find('\0') != std::string::npos) return error_of(EINVAL, "a NUL byte in a decoder request");
    msg += field;
    msg += '\0';
  }
  if (msg.size() > kMaxRequest) return error_of(E2BIG, "decoder request too long");
  return msg;
}

/* sendmsg(2) of `msg` with `fds` (SCM_RIGHTS) on `sock`, retrying EINTR. */
ssize_t send_with_fds(int sock, std::string &msg, const int (&fds)[4]) {
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof fds)];
  } ctl{};
  struct iovec iov {msg.data(), msg.size()};
  struct msghdr m {};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctl.b;
  m.msg_controllen = sizeof ctl.b;
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  while ((n = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n;
}

}  // namespace

Result<pid_t> DecoderServer::spawn(const DecodeRequest &req, std::uint64_t as_limit, int out_w, int err_w) {
  if (!sock_.valid()) return error_of(ENOTCONN, "the decoder server is not running");
  if (spawned_ >= kRenewEvery)
    if (auto r = renew(); !r) return error_of(ENOTCONN, "renewing the decoder server: " + r.error().message);
  auto msg = request_message(req, as_limit);
  if (!msg) return std::move(msg).error();
  int go[2];
  if (pipe2(go, O_CLOEXEC) < 0) return errno_error(errno, "pipe2 for the decoder server");
  Fd go_r(go[0]), go_w(go[1]);
  const ssize_t n = send_with_fds(sock_.get(), *msg, {req.core_fd, out_w, err_w, go_r.get()});
  go_r.reset();
  /* Any failure from here on: go_w closes first, so a decoder the server
   * made reads EOF and exits; stop() then reaps it with the server. */
  auto fail = [&](int err, std::string what) -> Result<pid_t> {
    go_w.reset();
    stop();
    return error_of(err, std::move(what));
  };
  if (n < 0) return fail(errno == EPIPE || errno == ECONNRESET ? EPIPE : errno,
                         std::string("the decoder server is gone (sending a request: ") + strerrordesc_np(errno) + ")");
  struct pollfd p {sock_.get(), POLLIN, 0};
  int pr;
  while ((pr = poll(&p, 1, kServerAnswerMs)) < 0 && errno == EINTR) {
  }
  if (pr == 0) return fail(ETIMEDOUT, "the decoder server did not answer within 2 s");
  std::int32_t answer = 0;
  const ssize_t r = pr < 0 ? -1 : recv(sock_.get(), &answer, sizeof answer, 0);
  if (r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE)))
    return fail(EPIPE, "the decoder server is gone (it closed its socket)");
  if (r != static_cast<ssize_t>(sizeof answer)) return fail(EPROTO, "the decoder server's answer is malformed");
  if (answer < 0) return errno_error(-answer, "the decoder server could not start a decoder");
  /* Only a child of ours is a decoder the daemon can wait for and kill. */
  siginfo_t si{};
  if (answer == 0 || waitid(P_PID, static_cast<id_t>(answer), &si, WEXITED | WNOHANG | WNOWAIT) < 0)
    return fail(EPROTO, "the decoder server answered pid " + std::to_string(answer) + ", not a child of the daemon");
  const pid_t pid = static_cast<pid_t>(answer);
  known_children().insert(pid);
  ++spawned_;
  const char one = 1;
  if (write(go_w.get(), &one, 1) != 1) {
    /* It is gone already; DecoderRun::finish reads its status. */
  }
  return pid;
}

namespace {

/* A pipe for a decoder's stdout or stderr: the daemon's read end `r`,
 * the decoder's write end `w`. */
Result<void> make_pipe(Fd &r, Fd &w) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return errno_error(errno, "pipe2 for the decoder");
  r.reset(p[0]);
  w.reset(p[1]);
  return {};
}

/* The debuginfod cache of decoders of `uid` under `base` (decode.h,
 * "debuginfod"): `base` root's and 0711 (any decoder reaches its own
 * directory, none lists the others), base/UID root's, 0700, with an ACL
 * giving `uid` rwx.  Errors: the step that failed, or a directory that is
 * not root's (made by someone else: not used). */
Result<void> make_user_cache(const std::string &base, uid_t uid) {
  Fd b(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!b.valid() && errno == ENOENT && (mkdir(base.c_str(), 0711) == 0 || errno == EEXIST))
    b.reset(::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!b.valid()) return errno_error(errno, "opening " + base);
  struct stat st;
  if (fstat(b.get(), &st) < 0) return errno_error(errno, "fstat " + base);
  if (st.st_uid != 0) return error_of(EPERM, base + " is not root's (uid " + std::to_string(st.st_uid) + ")");
  if ((st.st_mode & 07777) != 0711 && fchmod(b.get(), 0711) < 0) return errno_error(errno, "chmod 0711 " + base);
  const std::string name = std::to_string(uid), path = base + "/" + name;
  if (mkdirat(b.get(), name.c_str(), 0700) < 0 && errno != EEXIST) return errno_error(errno, "mkdir " + path);
  Fd d(openat(b.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d.valid()) return errno_error(errno, "opening " + path);
  if (fstat(d.get(), &st) < 0) return errno_error(errno, "fstat " + path);
  if (st.st_uid != 0) return error_of(EPERM, path + " is not root's (uid " + std::to_string(st.st_uid) + ")");
  const std::string acl = acl_user_dir(static_cast<std::uint32_t>(uid));
  if (fsetxattr(d.get(), "system.posix_acl_access", acl.data(), acl.size(), 0) < 0)
    return errno_error(errno, "setting the ACL of " + path + " (user " + name + " rwx)");
  return {};
}

/* Before a decoder of `uid` starts, with DEBUGINFOD_URLS: its cache
 * (make_user_cache), once per uid and daemon.  A failure is logged once;
 * that decoder then has no cache it can write, so its debuginfod
 * questions fail, as its timeline's notes say. */
void prepare_debuginfod_cache(uid_t uid) {
  const char *urls = getenv("DEBUGINFOD_URLS"), *base = getenv("DEBUGINFOD_CACHE_PATH");
  if (urls == nullptr || *urls == '\0' || base == nullptr || *base == '\0') return;
  static std::set<uid_t> made;
  static bool warned = false;
  if (made.count(uid)) return;
  if (auto r = make_user_cache(base, uid); !r) {
    if (!warned) spdlog::warn("debuginfod: no cache for the decoders of uid {}: {}", uid, r.error().message);
    warned = true;
    return;
  }
  made.insert(uid);
}

/* In the forked child: async-signal-safe calls only until execve.  The
 * core goes to fd 3, the pipes to 1 and 2, under the limits of decode.h. */
[[noreturn]] void exec_decoder(const DecodeRequest &req, int out_w, int err_w, std::uint64_t as_limit, pid_t parent,
                               char *const argv[], char *const envp[]) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != parent) _exit(127);
  /* The daemon keeps 0-2 open (Daemon::start), so the pipes are above
   * 2; the core may already be fd 3, where dup2 would keep CLOEXEC. */
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0) _exit(127);
  if (req.core_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(req.core_fd, 3) < 0) _exit(127);
  syscall(SYS_close_range, 4u, ~0u, 0u);
  reset_signals();
  if (!limit_address_space(as_limit)) _exit(125);
  struct rlimit core{1, 1};  /* 1: no core even through a core_pattern pipe (core(5)) */
  setrlimit(RLIMIT_CORE, &core); /* fails only if the hard limit is 0: no core anyway */
  execve(req.self_exe.c_str(), argv, envp);
  _exit(126);
}

}  // namespace

Result<DecoderRun> DecoderRun::start(const DecodeRequest &req, const DecodeLimits &limits, DecoderServer *server) {
  DecoderRun run;
  DecodeResult &res = run.res_;
  run.start_ = monotonic_usec();
  run.limits_ = limits;
  run.self_exe_ = req.self_exe;
  res.credentials = req.credentials;
  prepare_debuginfod_cache(req.credentials.uid);

  /* Everything the child needs is built before fork(). */
  std::vector<std::string> args{"core-timelined", "--decode-child", std::to_string(req.credentials.uid),
                                std::to_string(req.credentials.gid), req.display_name, req.tlmap.value_or("")};
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char *> envp = decoder_environment();
  const std::uint64_t as_limit = limits.memory_limit + req.core_size;
  const pid_t parent = getpid();

  Fd out_r, out_w, err_r, err_w;
  CT_TRY_VOID(make_pipe(out_r, out_w));
  CT_TRY_VOID(make_pipe(err_r, err_w));
  pid_t pid = -1;
  if (server && server->running()) {
    auto p = server->spawn(req, as_limit, out_w.get(), err_w.get());
    if (p) {
      pid = *p;
      res.via_server = true;
    } else {
      res.server_failure = p.error().message;
      /* The fallback gets pipes no decoder of the server ever held. */
      CT_TRY_VOID(make_pipe(out_r, out_w));
      CT_TRY_VOID(make_pipe(err_r, err_w));
    }
  }
  if (pid < 0) {
    pid = fork();
    if (pid == 0) exec_decoder(req, out_w.get(), err_w.get(), as_limit, parent, argv.data(), envp.data());
    if (pid < 0) return errno_error(errno, "fork for the decoder");
    known_children().insert(pid);
  }
  out_w.reset();
  err_w.reset();

  run.pid_ = pid;
  run.pidfd_.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  run.out_r_ = std::move(out_r);
  run.err_r_ = std::move(err_r);
  return run;
}

DecoderRun::DecoderRun(DecoderRun &&o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pidfd_(std::move(o.pidfd_)),
      out_r_(std::move(o.out_r_)),
      err_r_(std::move(o.err_r_)),
      start_(o.start_),
      limits_(o.limits_),
      self_exe_(std::move(o.self_exe_)),
      res_(std::move(o.res_)) {}

DecoderRun::~DecoderRun() {
  if (pid_ <= 0) return;
  /* Never finished (the daemon is stopping): the child goes with it. */
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  known_children().erase(pid_);
}

namespace {

/* What a decoder wrote and how its wait ended (DecoderRun::finish). */
struct Collected {
  std::string output, errors;  /* stdout (at most kMaxOutput), stderr (kMaxStderr) */
  bool out_open = true, err_open = true;
  bool killed = false;         /* by the daemon: timeout, output too big, cancel */
  bool timed_out = false, too_big = false, cancelled = false;
};

bool has_exited(pid_t pid) {
  siginfo_t si{};
  return waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

void kill_decoder(pid_t pid, Collected &c) {
  if (c.killed) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  c.killed = true;
}

/* One read from the decoder's stdout (`is_out`) or stderr into `c`; an
 * output over kMaxOutput kills it. */
void read_from(int fd, bool is_out, std::vector<char> &buf, pid_t pid, Collected &c) {
  const ssize_t r = read(fd, buf.data(), buf.size());
  if (r < 0 && errno == EINTR) return;
  if (r <= 0) {
    (is_out ? c.out_open : c.err_open) = false;
    return;
  }
  const std::size_t n = static_cast<std::size_t>(r);
  if (!is_out) {
    if (c.errors.size() < kMaxStderr) c.errors.append(buf.data(), std::min(n, kMaxStderr - c.errors.size()));
    return;
  }
  if (c.output.size() + n > kMaxOutput) {
    c.too_big = true;
    c.out_open = false;
    kill_decoder(pid, c);
    return;
  }
  c.output.append(buf.data(), n);
}

/* Reads the decoder's output until it has exited and closed both pipes
 * (or exited after being killed): at `deadline_usec` (monotonic) it is
 * killed, and when keep_going() says stop. */
Collected collect(pid_t pid, const Fd &pidfd, const Fd &out_r, const Fd &err_r, std::uint64_t deadline_usec,
                  const std::function<bool()> &keep_going) {
  Collected c;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const bool exited = has_exited(pid);
    if (exited && ((!c.out_open && !c.err_open) || c.killed)) break;
    const std::uint64_t now = monotonic_usec();
    if (!c.killed && now >= deadline_usec) {
      c.timed_out = true;
      kill_decoder(pid, c);
      continue;
    }
    if (!c.killed && keep_going && !keep_going()) {
      c.cancelled = true;
      kill_decoder(pid, c);
      continue;
    }
    struct pollfd p[3];
    int n = 0;
    if (c.out_open) p[n++] = {out_r.get(), POLLIN, 0};
    if (c.err_open) p[n++] = {err_r.get(), POLLIN, 0};
    if (pidfd.valid() && !exited) p[n++] = {pidfd.get(), POLLIN, 0};
    const std::uint64_t wait_ms = c.killed ? 100 : std::min<std::uint64_t>((deadline_usec - now + 999) / 1000, 1000);
    const int pr = poll(p, static_cast<nfds_t>(n), n ? static_cast<int>(wait_ms) : 10);
    if (pr < 0 && errno != EINTR) break;
    for (int i = 0; i < n && pr > 0; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)) || p[i].fd == pidfd.get()) continue;
      read_from(p[i].fd, p[i].fd == out_r.get(), buf, pid, c);
    }
  }
  return c;
}

/* The decoder's last stderr line, printable, for a failure's text. */
std::string last_line(const std::string &errors) {
  std::string last = errors;
  while (!last.empty() && (last.back() == '\n' || last.back() == ' ')) last.pop_back();
  if (auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  return printable(last, 200);
}

bool ran_out_of_memory(const std::string &errors) {
  return errors.find("bad_alloc") != std::string::npos || errors.find("cannot allocate memory") != std::string::npos ||
         errors.find("Cannot allocate memory") != std::string::npos;
}

/* Why a decoder that ended with wait status `status` gave no result, or
 * nullopt if it exited 0 (its output is then parsed). */
std::optional<std::string> failure_of(int status, const Collected &c, bool out_of_memory, const DecodeLimits &limits,
                                      const std::string &self_exe) {
  const std::string last_err = last_line(c.errors);
  const std::string said = last_err.empty() ? "" : ": " + last_err;
  const std::string limits_text = "(limits: " + std::to_string(limits.timeout_ms) + " ms, " +
                                  std::to_string(limits.memory_limit >> 20) + " MiB + the core's size)";
  if (c.timed_out)
    return "the decoder did not finish within " + std::to_string(limits.timeout_ms) +
           " ms and was killed; raise decode-timeout if cores are this slow to decode";
  if (c.too_big) return "the decoder's output exceeded " + std::to_string(kMaxOutput >> 20) + " MiB; killed";
  if (WIFSIGNALED(status))
    return "the decoder was killed by " + signal_text(WTERMSIG(status)) +
           (out_of_memory ? " after running out of memory " : " ") + limits_text + said;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) return std::nullopt;
  std::string failure = code == 126 || code == 127
                            ? "the decoder could not be started (exec of " + self_exe + " failed, exit " +
                                  std::to_string(code) + ")" + said
                            : "the decoder exited with status " + std::to_string(code) + " " + limits_text + said;
  if (out_of_memory) failure += " (out of memory)";
  return failure;
}

/* The result in a decoder's output (decode.h, "Protocol") moved out of
 * res (filled in), or with its failure set. */
Result<DecodeResult> decoded_from(const std::string &output, DecodeResult &res) {
  /* "CTD1 <json> <text> <exit> <VmHWM> <RssAnon> <Landlock ABI> <seccomp> <uid> <gid>\n" */
  const auto nl = output.find('\n');
  unsigned long long jl = 0, tl = 0, hwm = 0, anon = 0, uid = 0, gid = 0;
  int ec = -1, landlock = -1, seccomp = -1;
  char magic[5] = {};
  if (nl == std::string::npos || nl > 140 ||
      std::sscanf(output.substr(0, nl).c_str(), "%4s %llu %llu %d %llu %llu %d %d %llu %llu", magic, &jl, &tl, &ec,
                  &hwm, &anon, &landlock, &seccomp, &uid, &gid) != 10 ||
      std::string_view(magic) != "CTD1" || ec < 0 || ec > 8 || landlock < 0 || (seccomp != 0 && seccomp != 1) ||
      jl > output.size() || tl > output.size() ||
      nl + 1 + jl + tl != output.size()) {
    res.failure = "the decoder's output is malformed (" + std::to_string(output.size()) + " bytes)";
    return std::move(res);
  }
  if (uid != res.credentials.uid || gid != res.credentials.gid) {
    res.failure = "the decoder ran as uid " + std::to_string(uid) + " gid " + std::to_string(gid) + ", not as uid " +
                  std::to_string(res.credentials.uid) + " gid " + std::to_string(res.credentials.gid);
    return std::move(res);
  }
  auto document = core_timeline::document::parse_reader_document(std::string_view(output).substr(nl + 1, jl));
  if (!document) {
    res.failure = "the decoder's JSON is not a timeline document: " + document.error().message;
    return std::move(res);
  }
  res.document = std::move(*document);
  res.text = output.substr(nl + 1 + jl, tl);
  res.max_rss_kb = hwm;
  res.anon_kb = anon;
  res.landlock_abi = landlock;
  res.seccomp = seccomp == 1;
  res.exit_code = ec;
  res.decoded = true;
  return std::move(res);
}

}  // namespace

Result<DecodeResult> DecoderRun::finish(const std::function<bool()> &keep_going) {
  const pid_t pid = pid_;
  const Collected c = collect(pid, pidfd_, out_r_, err_r_, start_ + limits_.timeout_ms * 1000, keep_going);
  int status = 0;
  struct rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  known_children().erase(pid);
  pid_ = -1;
  DecodeResult &res = res_;
  res.timed_out = c.timed_out;
  res.died_by_signal = WIFSIGNALED(status) && !c.killed;
  res.duration_ms = static_cast<double>(monotonic_usec() - start_) / 1000.0;
  res.output_bytes = c.output.size();
  if (c.cancelled) return error_of(ECANCELED, "decoding cancelled (stopping)");
  res.out_of_memory = ran_out_of_memory(c.errors);
  if (auto failure = failure_of(status, c, res.out_of_memory, limits_, self_exe_)) {
    res.failure = std::move(*failure);
    return std::move(res);
  }
  return decoded_from(c.output, res);
}

Result<DecodeResult> run_decoder(const DecodeRequest &req, const DecodeLimits &limits,
                                 const std::function<bool()> &keep_going, DecoderServer *server) {
  auto run = DecoderRun::start(req, limits, server);
  if (!run) return std::move(run).error();
  return run->finish(keep_going);
}

class ChildDecoder::ChildRun final : public Decoder::Run {
 public:
  ChildRun(ChildDecoder *owner, DecoderRun run) : owner_(owner), run_(std::move(run)) {}
  Result<DecodeResult> finish(const std::function<bool()> &keep_going) override {
    auto r = run_.finish(keep_going);
    if (r) owner_->after(*r);
    return r;
  }

 private:
  ChildDecoder *owner_;
  DecoderRun run_;
};

ChildDecoder::ChildDecoder(DecodeLimits limits, std::string self_exe)
    : limits_(limits), self_exe_(std::move(self_exe)) {}

void ChildDecoder::warm_up() { start_server(); }

void ChildDecoder::start_server() {
  const std::uint64_t now = monotonic_usec();
  if (server_started_ && now - server_started_ < kServerRetryMs * 1000) return;
  server_started_ = now;
  auto s = DecoderServer::start(self_exe_);
  if (!s) {
    spdlog::warn("cannot start the decoder server: {}; decoders are started by fork and exec", s.error().message);
    return;
  }
  server_ = std::move(*s);
  spdlog::debug("decoder server started (pid {})", server_.pid());
}

Result<std::unique_ptr<Decoder::Run>> ChildDecoder::start(const DecodeRequest &req) {
  if (!server_.running()) start_server();
  DecodeRequest r = req;
  r.self_exe = self_exe_;
  auto run = DecoderRun::start(r, limits_, &server_);
  if (!run) return std::move(run).error();
  return std::unique_ptr<Decoder::Run>(std::make_unique<ChildRun>(this, std::move(*run)));
}

void ChildDecoder::after(const DecodeResult &d) {
  if (!d.server_failure.empty())
    spdlog::warn("decoder server: {}; this core's decoder was started by fork and exec{}", d.server_failure,
                 server_.running() ? "" : " (a new server is started at most every 10 s)");
  if (!d.via_server || !d.died_by_signal) return;
  /* A fresh address space layout for the next decoders (kRenewEvery). */
  if (auto r = server_.renew(); !r)
    spdlog::warn("cannot renew the decoder server after a decoder died by a signal: {}", r.error().message);
  else
    spdlog::debug("a decoder died by a signal: decoder server renewed (pid {})", server_.pid());
}

}  // namespace core_timeline::daemon
