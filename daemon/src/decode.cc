/* SPDX-License-Identifier: MIT */
/* decode.cc - see decode.h. */
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/reader/tlmap.h"

extern char **environ;

namespace ctd {

namespace {

constexpr std::size_t kMaxOutput = 256u << 20;  /* a ring of 4 GiB renders to less */
constexpr std::size_t kMaxStderr = 16u << 10;
constexpr const char kCoreFdPath[] = "/proc/self/fd/3";

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

}  // namespace

int decoder_child_main(int argc, char **argv) {
  namespace ctr = core_timeline::reader;
  /* No core from a decoder that crashes (see decode.h). */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (argc < 3) {
    std::fprintf(stderr, "usage: core-timelined --decode-child DISPLAY_NAME [TLMAP] (core on fd 3)\n");
    return 125;
  }
  const std::string display = argv[2];
  std::optional<ctr::TlMap> tlmap;
  std::string tlmap_warning;
  if (argc >= 4 && argv[3][0] != '\0') {
    auto m = ctr::TlMap::load(argv[3]);
    if (m) tlmap = std::move(*m);
    else tlmap_warning = "event names file " + std::string(argv[3]) + " not used: " + m.error().message;
  }
  ctr::ReadOptions opts;
  opts.tlmap = tlmap ? &*tlmap : nullptr;
  auto core = ctr::CoreFile::open(kCoreFdPath);
  ctr::Analysis a = core ? ctr::analyze(*core, opts) : ctr::analysis_of_error(display, core.error());
  a.core_path = display;
  replace_all(a.reason, kCoreFdPath, display);
  for (auto &w : a.warnings) replace_all(w, kCoreFdPath, display);
  if (!tlmap_warning.empty()) a.warnings.push_back(tlmap_warning);
  const std::string json = ctr::render_json(a);
  const std::string text = ctr::render_text(a);
  const std::string header = "CTD1 " + std::to_string(json.size()) + " " + std::to_string(text.size()) + " " +
                             std::to_string(ctr::exit_code(a.status)) + " " + std::to_string(status_kb("VmHWM")) + " " +
                             std::to_string(status_kb("RssAnon")) + "\n";
  for (const std::string *s : {&header, &json, &text})
    if (!write_all(1, *s, "the decoder's output")) return 124;
  return 0;
}

Result<DecodeResult> run_decoder(const DecodeRequest &req, const DecodeLimits &limits,
                                 const std::function<bool()> &keep_going) {
  DecodeResult res;
  const std::uint64_t start = monotonic_usec();

  /* Everything the child needs is built before fork(). */
  std::vector<std::string> args{"core-timelined", "--decode-child", req.display_name, req.tlmap.value_or("")};
  std::vector<char *> argv;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char *> envp;
  for (char **e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.starts_with("NOTIFY_SOCKET=") || kv.starts_with("WATCHDOG_") || kv.starts_with("LISTEN_")) continue;
    envp.push_back(*e);
  }
  envp.push_back(nullptr);
  const std::uint64_t as_limit = limits.memory_limit + req.core_size;
  const pid_t parent = getpid();

  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) < 0) return errno_error(errno, "pipe2 for the decoder");
  if (pipe2(err, O_CLOEXEC) < 0) {
    const int e = errno;
    close(out[0]);
    close(out[1]);
    return errno_error(e, "pipe2 for the decoder");
  }
  Fd out_r(out[0]), out_w(out[1]), err_r(err[0]), err_w(err[1]);

  const pid_t pid = fork();
  if (pid < 0) return errno_error(errno, "fork for the decoder");
  if (pid == 0) {
    /* Child: async-signal-safe calls only until execve. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(127);
    /* The daemon keeps 0-2 open (Daemon::start), so the pipes are above
     * 2; the core may already be fd 3, where dup2 would keep CLOEXEC. */
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) _exit(127);
    if (req.core_fd == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(req.core_fd, 3) < 0) _exit(127);
    syscall(SYS_close_range, 4u, ~0u, 0u);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s = 1; s < NSIG; ++s)
      if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    struct rlimit rl{as_limit, as_limit};
    setrlimit(RLIMIT_AS, &rl);
    struct rlimit core{1, 1};  /* 1: no core even through a core_pattern pipe (core(5)) */
    setrlimit(RLIMIT_CORE, &core);
    execve(req.self_exe.c_str(), argv.data(), envp.data());
    _exit(126);
  }
  out_w.reset();
  err_w.reset();

  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  std::string output, errors;
  bool out_open = true, err_open = true, killed = false, too_big = false, cancelled = false;
  const std::uint64_t deadline = start + limits.timeout_ms * 1000;
  auto kill_child = [&] {
    if (!killed) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
    }
  };
  std::vector<char> buf(1 << 16);
  for (;;) {
    const bool exited = [&] {
      siginfo_t si{};
      return waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
    }();
    if (exited && !out_open && !err_open) break;
    if (exited && killed) break;
    const std::uint64_t now = monotonic_usec();
    if (!killed && now >= deadline) {
      res.timed_out = true;
      kill_child();
      continue;
    }
    if (!killed && keep_going && !keep_going()) {
      cancelled = true;
      kill_child();
      continue;
    }
    struct pollfd p[3];
    int n = 0;
    if (out_open) p[n++] = {out_r.get(), POLLIN, 0};
    if (err_open) p[n++] = {err_r.get(), POLLIN, 0};
    if (pidfd.valid() && !exited) p[n++] = {pidfd.get(), POLLIN, 0};
    std::uint64_t wait_ms = killed ? 100 : std::min<std::uint64_t>((deadline - now + 999) / 1000, 1000);
    int pr = poll(p, static_cast<nfds_t>(n), n ? static_cast<int>(wait_ms) : 10);
    if (pr < 0 && errno != EINTR) break;
    for (int i = 0; i < n && pr > 0; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (p[i].fd == pidfd.get()) continue;
      const bool is_out = p[i].fd == out_r.get();
      ssize_t r = read(p[i].fd, buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        (is_out ? out_open : err_open) = false;
        continue;
      }
      if (is_out) {
        if (output.size() + static_cast<std::size_t>(r) > kMaxOutput) {
          too_big = true;
          out_open = false;
          kill_child();
        } else {
          output.append(buf.data(), static_cast<std::size_t>(r));
        }
      } else if (errors.size() < kMaxStderr) {
        errors.append(buf.data(), std::min(static_cast<std::size_t>(r), kMaxStderr - errors.size()));
      }
    }
  }
  int status = 0;
  struct rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  res.duration_ms = static_cast<double>(monotonic_usec() - start) / 1000.0;
  res.output_bytes = output.size();
  if (cancelled) return Error{ECANCELED, "decoding cancelled (stopping)"};

  /* The child's last stderr line, for the failure text. */
  std::string last_err = errors;
  while (!last_err.empty() && (last_err.back() == '\n' || last_err.back() == ' ')) last_err.pop_back();
  if (auto nl = last_err.rfind('\n'); nl != std::string::npos) last_err = last_err.substr(nl + 1);
  last_err = printable(last_err, 200);
  res.out_of_memory = errors.find("bad_alloc") != std::string::npos ||
                      errors.find("cannot allocate memory") != std::string::npos ||
                      errors.find("Cannot allocate memory") != std::string::npos;
  const std::string limits_text = "(limits: " + std::to_string(limits.timeout_ms) + " ms, " +
                                  std::to_string(limits.memory_limit >> 20) + " MiB + the core's size)";
  if (res.timed_out) {
    res.failure = "the decoder did not finish within " + std::to_string(limits.timeout_ms) +
                  " ms and was killed; raise decode-timeout if cores are this slow to decode";
    return res;
  }
  if (too_big) {
    res.failure = "the decoder's output exceeded " + std::to_string(kMaxOutput >> 20) + " MiB; killed";
    return res;
  }
  if (WIFSIGNALED(status)) {
    res.failure = "the decoder was killed by " + signal_text(WTERMSIG(status)) +
                  (res.out_of_memory ? " after running out of memory " : " ") + limits_text +
                  (last_err.empty() ? "" : ": " + last_err);
    return res;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    res.failure = code == 126 || code == 127
                      ? "the decoder could not be started (exec of " + req.self_exe + " failed, exit " +
                            std::to_string(code) + ")" + (last_err.empty() ? "" : ": " + last_err)
                      : "the decoder exited with status " + std::to_string(code) + " " + limits_text +
                            (last_err.empty() ? "" : ": " + last_err);
    if (res.out_of_memory) res.failure += " (out of memory)";
    return res;
  }

  /* "CTD1 <json> <text> <exit>\n" */
  const auto nl = output.find('\n');
  unsigned long long jl = 0, tl = 0, hwm = 0, anon = 0;
  int ec = -1;
  char magic[5] = {};
  if (nl == std::string::npos || nl > 100 ||
      std::sscanf(output.substr(0, nl).c_str(), "%4s %llu %llu %d %llu %llu", magic, &jl, &tl, &ec, &hwm, &anon) != 6 ||
      std::string_view(magic) != "CTD1" || ec < 0 || ec > 7 || jl > output.size() || tl > output.size() ||
      nl + 1 + jl + tl != output.size()) {
    res.failure = "the decoder's output is malformed (" + std::to_string(output.size()) + " bytes)";
    return res;
  }
  try {
    res.document = nlohmann::ordered_json::parse(output.begin() + static_cast<std::ptrdiff_t>(nl + 1),
                                                 output.begin() + static_cast<std::ptrdiff_t>(nl + 1 + jl));
  } catch (const nlohmann::json::exception &e) {
    res.failure = std::string("the decoder's JSON does not parse: ") + e.what();
    return res;
  }
  if (!res.document.is_object() || !res.document.contains("status") || !res.document["status"].is_string()) {
    res.failure = "the decoder's JSON is not a timeline document";
    return res;
  }
  res.text = output.substr(nl + 1 + jl, tl);
  res.max_rss_kb = hwm;
  res.anon_kb = anon;
  res.exit_code = ec;
  res.decoded = true;
  return res;
}

}  // namespace ctd
