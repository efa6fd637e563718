// SPDX-License-Identifier: MIT
//
// process.cc - see process.h.
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <thread>

extern char **environ;

namespace ct::test {
namespace {

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

std::string errno_text(int err) { return strerror(err); }

// What a child that could not get to its program tells the parent, on a
// pipe that exec closes.
struct ChildError {
  int err;
  const char *what;  // a string literal: the same address in parent and child
};
int g_child_error_fd = -1;  // in the child, between fork and exec

void close_fd(int &fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

int open_for(const Stream &s, bool input) {
  if (input) return open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (s.kind == Stream::Kind::append ? O_APPEND : O_TRUNC);
  return open(s.path.c_str(), flags, s.mode);
}

// In the child: makes `fd_no` what `s` says (capture: `pipe_w`).
void redirect(const Stream &s, int fd_no, int pipe_w) {
  switch (s.kind) {
    case Stream::Kind::inherit:
      return;
    case Stream::Kind::capture:
      if (dup2(pipe_w, fd_no) < 0) child_failed("cannot redirect a standard stream");
      return;
    case Stream::Kind::file:
    case Stream::Kind::append: {
      const int fd = open_for(s, fd_no == 0);
      if (fd < 0) child_failed(fd_no == 0 ? "cannot open its stdin" : "cannot open its output file");
      if (dup2(fd, fd_no) < 0) child_failed("cannot redirect a standard stream");
      close(fd);
      return;
    }
    case Stream::Kind::to_stdout:
      if (dup2(1, fd_no) < 0) child_failed("cannot send stderr to stdout");
      return;
  }
}

bool unset(const std::vector<std::string> &names, const std::string &name) {
  for (const auto &u : names) {
    if (!u.empty() && u.back() == '*' ? name.starts_with(u.substr(0, u.size() - 1)) : name == u) return true;
  }
  return false;
}

struct Spawned {
  pid_t pid = -1;
  int out = -1, err = -1;  // read ends of the captured streams
};

Spawned spawn_impl(const std::vector<std::string> &argv, const ProcessOptions &opts) {
  if (argv.empty()) fail("spawn: empty argv");
  if (opts.in.kind == Stream::Kind::capture || opts.in.kind == Stream::Kind::to_stdout ||
      opts.out.kind == Stream::Kind::to_stdout || opts.in.kind == Stream::Kind::append)
    fail("spawn " + argv[0] + ": a standard stream redirected in a way it cannot be");

  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls (and in_child's).
  std::vector<char *> cargv;
  for (const auto &a : argv) cargv.push_back(const_cast<char *>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings;
  std::vector<char *> cenv;
  char **envp = environ;
  if (!opts.env.empty() || !opts.unset_env.empty()) {
    for (char **e = environ; *e; ++e) {
      std::string kv(*e);
      const std::string name = kv.substr(0, kv.find('='));
      if (!opts.env.count(name) && !unset(opts.unset_env, name)) env_strings.push_back(std::move(kv));
    }
    for (const auto &[k, v] : opts.env) env_strings.push_back(k + "=" + v);
    for (auto &s : env_strings) cenv.push_back(s.data());
    cenv.push_back(nullptr);
    envp = cenv.data();
  }

  int errp[2], outp[2] = {-1, -1}, errpipe[2] = {-1, -1};
  if (pipe2(errp, O_CLOEXEC) < 0) fail("pipe2: " + errno_text(errno));
  const bool cap_out = opts.out.kind == Stream::Kind::capture, cap_err = opts.err.kind == Stream::Kind::capture;
  if ((cap_out && pipe2(outp, O_CLOEXEC) < 0) || (cap_err && pipe2(errpipe, O_CLOEXEC) < 0)) {
    const int e = errno;
    for (int fd : {errp[0], errp[1], outp[0], outp[1], errpipe[0], errpipe[1]})
      if (fd >= 0) close(fd);
    fail("pipe2: " + errno_text(e));
  }

  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {errp[0], errp[1], outp[0], outp[1], errpipe[0], errpipe[1]})
      if (fd >= 0) close(fd);
    fail("fork: " + errno_text(e));
  }
  if (pid == 0) {
    g_child_error_fd = errp[1];
    if (opts.own_process_group && setpgid(0, 0) < 0) child_failed("cannot make a process group of its own");
    redirect(opts.in, 0, -1);
    redirect(opts.out, 1, outp[1]);
    redirect(opts.err, 2, errpipe[1]);
    if (opts.in_child) opts.in_child();
    if (opts.search_path)
      execvpe(cargv[0], cargv.data(), envp);
    else
      execve(cargv[0], cargv.data(), envp);
    child_failed(nullptr);
  }
  close(errp[1]);
  Spawned s;
  s.pid = pid;
  if (cap_out) close(outp[1]), s.out = outp[0];
  if (cap_err) close(errpipe[1]), s.err = errpipe[0];

  ChildError ce{};
  ssize_t n;
  do n = read(errp[0], &ce, sizeof ce);
  while (n < 0 && errno == EINTR);
  close(errp[0]);
  if (n == static_cast<ssize_t>(sizeof ce)) {
    close_fd(s.out);
    close_fd(s.err);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (!ce.what) fail("child pid " + std::to_string(pid) + ": cannot exec " + argv[0] + ": " + errno_text(ce.err));
    fail("child pid " + std::to_string(pid) + " (" + argv[0] + "): " + ce.what + ": " + errno_text(ce.err));
  }
  return s;
}

}  // namespace

void child_failed(const char *what) {
  ChildError ce{errno, what};
  if (g_child_error_fd >= 0) {
    ssize_t ignored = write(g_child_error_fd, &ce, sizeof ce);
    (void)ignored;
  }
  _exit(127);
}

int Ran::exit_code() const {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

pid_t spawn(const std::vector<std::string> &argv, const ProcessOptions &opts) {
  if (opts.out.kind == Stream::Kind::capture || opts.err.kind == Stream::Kind::capture)
    fail("spawn " + (argv.empty() ? std::string("(empty argv)") : argv[0]) +
         ": only run() captures output; redirect it to a file");
  return spawn_impl(argv, opts).pid;
}

Ran run(const std::vector<std::string> &argv, const ProcessOptions &opts) {
  using Clock = std::chrono::steady_clock;
  Spawned s = spawn_impl(argv, opts);
  Ran r;
  r.pid = s.pid;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, s.pid, 0));
  if (pidfd < 0) {
    const int e = errno;
    kill(s.pid, SIGKILL);
    waitpid(s.pid, nullptr, 0);
    close_fd(s.out);
    close_fd(s.err);
    fail("pidfd_open: " + errno_text(e));
  }
  const auto deadline = opts.timeout ? Clock::now() + *opts.timeout : Clock::time_point::max();
  auto abandon = [&] {
    kill(opts.own_process_group ? -s.pid : s.pid, SIGKILL);
    while (waitpid(s.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    close_fd(s.out);
    close_fd(s.err);
    close(pidfd);
  };
  // Until the child has exited and both captured streams are at their end.
  bool exited = false;
  char buf[65536];
  while (!exited || s.out >= 0 || s.err >= 0) {
    pollfd fds[3] = {{exited ? -1 : pidfd, POLLIN, 0}, {s.out, POLLIN, 0}, {s.err, POLLIN, 0}};
    int wait_ms = -1;
    if (opts.timeout && !r.timed_out) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      wait_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left + 1, 1 << 30)));
    }
    const int n = poll(fds, 3, wait_ms);
    if (n < 0) {
      if (errno != EINTR) {
        const int e = errno;
        abandon();
        fail("poll: " + errno_text(e));
      }
      if (opts.on_interrupt) {
        try {
          opts.on_interrupt();
        } catch (...) {
          abandon();
          throw;
        }
      }
      continue;
    }
    if (n == 0 && opts.timeout && !r.timed_out && Clock::now() >= deadline) {
      // Killed; what it printed so far is still read, but not what a
      // descendant that holds the pipes prints later.
      kill(opts.own_process_group ? -s.pid : s.pid, SIGKILL);
      r.timed_out = true;
      continue;
    }
    if (!exited && (fds[0].revents & POLLIN)) exited = true;
    std::string *dest[3] = {nullptr, &r.out, &r.err};
    int *fdp[3] = {nullptr, &s.out, &s.err};
    for (int i = 1; i < 3; ++i) {
      if (*fdp[i] < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = read(*fdp[i], buf, sizeof buf);
      if (got > 0)
        dest[i]->append(buf, static_cast<std::size_t>(got));
      else if (got == 0 || errno != EINTR)
        close_fd(*fdp[i]);
    }
    if (exited && r.timed_out) {
      close_fd(s.out);
      close_fd(s.err);
    }
  }
  close(pidfd);
  while (waitpid(s.pid, &r.wait_status, 0) < 0) {
    if (errno != EINTR) fail("waitpid " + std::to_string(s.pid) + ": " + errno_text(errno));
  }
  return r;
}

bool wait_until(const std::function<bool()> &done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the poll's period, not a wait for the event
  }
}

}  // namespace ct::test
