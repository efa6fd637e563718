// SPDX-License-Identifier: MIT
//
// daemon_harness.cc - see daemon_harness.h.
#include "daemon_harness.h"

// Before <signal.h>, which defines si_pid (a member name of keys.h).
#include "core_timeline/reader/compact.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace ct::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

[[noreturn]] void fail(const std::string &what) { throw std::runtime_error(what); }

constexpr std::string_view kTimelineSuffix = ".timeline.json";

// Its exit status as DaemonHarness reports it.
int exit_status_of(int wait_status) { return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1; }

}  // namespace

std::string boot_id() {
  std::string s = read_text("/proc/sys/kernel/random/boot_id");
  std::erase(s, '-');
  std::erase(s, '\n');
  return s;
}

std::uint64_t now_usec() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

std::string read_text(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// ---- DaemonHarness ----------------------------------------------------------

DaemonHarness::DaemonHarness(Options opts)
    : opts_(std::move(opts)),
      state_(opts_.root + "/state"),
      out_(opts_.output_dir ? opts_.root + "/out" : ""),
      log_(opts_.root + "/daemon.log"),
      notify_path_(opts_.root + "/notify") {
  if (!out_.empty()) {
    fs::create_directories(out_);
    fs::permissions(out_, fs::perms(0755));  // read by other uids (their own timelines)
  }
  notify_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (notify_fd_ < 0) fail("socket: " + std::string(strerror(errno)));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (notify_path_.size() >= sizeof sa.sun_path) fail("notify socket path too long: " + notify_path_);
  std::strncpy(sa.sun_path, notify_path_.c_str(), sizeof sa.sun_path - 1);
  unlink(notify_path_.c_str());
  if (bind(notify_fd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa) < 0) {
    const int e = errno;
    close(notify_fd_);
    fail("bind " + notify_path_ + ": " + strerror(e));
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    const int e = errno;
    close(notify_fd_);
    fail("eventfd: " + std::string(strerror(e)));
  }
  notify_reader_ = std::thread([this] { read_notifications(); });
}

DaemonHarness::~DaemonHarness() {
  stop();
  const std::uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) != static_cast<ssize_t>(sizeof one)) std::abort();
  notify_reader_.join();
  close(wake_fd_);
  close(notify_fd_);
  unlink(notify_path_.c_str());
}

void DaemonHarness::read_notifications() {
  for (;;) {
    pollfd p[2] = {{notify_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      std::abort();  // a bad descriptor: nothing the tests could go on with
    }
    if (p[1].revents != 0) return;
    char buf[4096];
    const ssize_t n = recv(notify_fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) continue;
    {
      std::lock_guard lock(notify_mu_);
      notifications_.emplace_back(buf, static_cast<std::size_t>(n));
    }
    notify_cv_.notify_all();
  }
}

void DaemonHarness::start(const std::vector<std::string> &extra, const std::map<std::string, std::string> &env) {
  // One at a time: a daemon still running would take the next crashes from
  // the one started now.
  if (pid_ > 0) {
    const pid_t old = pid_;
    kill_now();
    fail("core-timelined started while the previous one (pid " + std::to_string(old) + ") still ran; killed it");
  }
  const std::vector<std::string> args = arguments(extra);
  ProcessOptions po = process_options(env);
  po.env["NOTIFY_SOCKET"] = notify_path_;
  // Notifications left from a daemon run before are not this one's.
  while (!next_notification(0ms).empty()) {
  }
  pid_ = spawn(args, po);

  const auto deadline = Clock::now() + opts_.ready_timeout;
  while (Clock::now() < deadline) {
    if (opts_.on_wait) opts_.on_wait();
    if (next_notification(100ms).find("READY=1") != std::string::npos) return;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      fail("core-timelined exited (wait status " + std::to_string(st) + ") before it was ready; its log:\n" +
           log_tail());
    }
  }
  fail("core-timelined did not report READY=1 within " + std::to_string(opts_.ready_timeout.count()) +
       " ms; its log:\n" + log_tail());
}

ProcessOptions DaemonHarness::process_options(const std::map<std::string, std::string> &env) const {
  ProcessOptions po;
  po.in = Stream::null();
  po.out = Stream::append(log_);
  po.err = Stream::to_stdout();
  po.unset_env = {"NOTIFY_SOCKET", "WATCHDOG_*"};
  po.env = env;
  return po;
}

std::vector<std::string> DaemonHarness::arguments(const std::vector<std::string> &extra) const {
  std::vector<std::string> args{opts_.binary, "--state-dir", state_, "--first-start", opts_.first_start};
  if (!out_.empty()) args.insert(args.end(), {"--output-dir", out_});
  if (!opts_.log_target.empty()) args.insert(args.end(), {"--log-target", opts_.log_target});
  if (!opts_.log_level.empty()) args.insert(args.end(), {"--log-level", opts_.log_level});
  if (!opts_.tlmap_dir.empty()) args.insert(args.end(), {"--tlmap-dir", opts_.tlmap_dir});
  if (!opts_.config.empty()) args.insert(args.end(), {"--config", opts_.config});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

Ran DaemonHarness::run_once(const std::vector<std::string> &extra, const std::map<std::string, std::string> &env) {
  if (pid_ > 0) fail("core-timelined --once while the one started before (pid " + std::to_string(pid_) + ") runs");
  std::vector<std::string> args = arguments(extra);
  args.push_back("--once");
  return run(args, process_options(env));
}

int DaemonHarness::stop() {
  if (pid_ <= 0) return -2;
  kill(pid_, SIGTERM);
  int st = 0;
  if (wait_until([&] { return waitpid(pid_, &st, WNOHANG) == pid_; }, opts_.stop_timeout)) {
    pid_ = -1;
    return exit_status_of(st);
  }
  kill_now();
  return -1;
}

void DaemonHarness::kill_now() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

int DaemonHarness::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -2;
  int st = 0;
  if (!wait_until([&] { return waitpid(pid_, &st, WNOHANG) == pid_; }, timeout)) return -3;
  pid_ = -1;
  return exit_status_of(st);
}

std::string DaemonHarness::next_notification(std::chrono::milliseconds timeout) {
  std::unique_lock lock(notify_mu_);
  if (!notify_cv_.wait_for(lock, timeout, [this] { return !notifications_.empty(); })) return "";
  std::string m = std::move(notifications_.front());
  notifications_.pop_front();
  return m;
}

std::size_t DaemonHarness::pending_notifications() {
  std::lock_guard lock(notify_mu_);
  return notifications_.size();
}

std::string DaemonHarness::log() const { return read_text(log_); }

std::string DaemonHarness::log_tail(std::size_t max) const {
  const std::string s = log();
  return s.size() > max ? "..." + s.substr(s.size() - max) : s;
}

bool DaemonHarness::wait_log(const std::string &needle, std::chrono::milliseconds timeout) const {
  return wait_until([&] { return log().find(needle) != std::string::npos; }, timeout);
}

std::vector<std::string> DaemonHarness::timeline_dirs() const {
  std::vector<std::string> dirs;
  if (!out_.empty()) dirs.push_back(out_);
  dirs.push_back(state_ + "/timelines");
  return dirs;
}

std::optional<Timeline> DaemonHarness::find_timeline(pid_t pid, std::uint64_t not_before_usec) const {
  const std::string needle = "." + boot_id() + "." + std::to_string(pid) + ".";
  for (const auto &d : timeline_dirs()) {
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(d, ec)) {
      const std::string name = e.path().filename();
      if (name.find(needle) == std::string::npos || !name.ends_with(kTimelineSuffix)) continue;
      if (not_before_usec) {
        const std::string stem = name.substr(0, name.size() - kTimelineSuffix.size());
        const std::uint64_t ts = std::strtoull(stem.substr(stem.rfind('.') + 1).c_str(), nullptr, 10);
        // COREDUMP_TIMESTAMP is the kernel's %t: whole seconds of its coarse
        // clock (ktime_get_real_seconds()), which lags CLOCK_REALTIME by up
        // to a tick, so a crash just after a second began can carry the
        // second before: one more second of slack (a reused pid's earlier
        // crash is minutes older).
        if (ts + 2000000 <= not_before_usec) continue;
      }
      Timeline t{e.path(), full_document(nlohmann::json::parse(read_text(e.path()), nullptr, false))};
      if (t.doc.is_discarded()) continue;
      return t;
    }
  }
  return std::nullopt;
}

nlohmann::ordered_json full_document(const nlohmann::ordered_json &doc) {
  namespace ctr = core_timeline::reader;
  if (!ctr::is_compact(doc)) return doc;
  /* The stored members as they are; events, spans and time in the full
   * shape, and the text, made by the reader from the document. */
  nlohmann::ordered_json full = doc;
  full.erase("tables");
  if (doc.contains("events")) {
    auto a = ctr::analysis_of_compact(doc);
    if (!a) return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    for (const auto &e : a->events) events.push_back(ctr::full_event(*a, e));
    full["events"] = std::move(events);
    /* A compact ring object is the full one with what the text needs
     * besides (compact_write.cc, ring_object). */
    for (auto &r : full["rings"])
      for (const char *k : {"pools", "live", "torn_slots", "invalid_slots", "anchors"}) r.erase(k);
    full["spans"] = ctr::full_spans(*a);
    full["time"] = ctr::full_time(*a);
    full["text"] = ctr::render_text(*a);
  } else {
    full["text"] = "core-timeline: " + doc.value("status", std::string()) + ": " + doc.value("reason", std::string()) + "\n";
  }
  return full;
}

nlohmann::json full_document(const nlohmann::json &stored) {
  return nlohmann::json(full_document(nlohmann::ordered_json(stored)));
}

std::optional<Timeline> DaemonHarness::wait_timeline(pid_t pid, std::chrono::milliseconds timeout,
                                                     std::uint64_t not_before_usec) const {
  std::optional<Timeline> t;
  wait_until([&] { return (t = find_timeline(pid, not_before_usec)).has_value(); }, timeout);
  return t;
}

std::size_t DaemonHarness::files_of(pid_t pid) const {
  const std::string needle = "." + boot_id() + "." + std::to_string(pid) + ".";
  std::size_t n = 0;
  for (const auto &d : timeline_dirs()) {
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(d, ec)) n += e.path().filename().string().find(needle) != std::string::npos;
  }
  return n;
}

// ---- CorePipeLimit ----------------------------------------------------------

namespace {
constexpr const char kPipeLimitPath[] = "/proc/sys/kernel/core_pipe_limit";
std::atomic<CorePipeLimit *> g_active_limit{nullptr};
}  // namespace

DaemonRoot::DaemonRoot(const std::string &stem) {
  std::string t = "/tmp/" + stem + "-XXXXXX";
  if (mkdtemp(t.data()) == nullptr) fail("DaemonRoot: mkdtemp " + t + ": " + strerror(errno));
  root_ = t;
  tlmap_dir_ = root_ + "/tlmap.d";
  config_ = root_ + "/empty.conf";
  std::error_code ec;
  fs::permissions(root_, fs::perms(0755), ec);
  if (!ec) fs::create_directory(tlmap_dir_, ec);
  if (!ec && !std::ofstream(config_).flush()) ec = std::make_error_code(std::errc::io_error);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(root_, ec);
    fail("DaemonRoot: cannot prepare " + root_ + ": " + why);
  }
}

DaemonRoot::~DaemonRoot() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

DaemonHarness::Options DaemonRoot::options(const std::string &binary) const {
  DaemonHarness::Options o;
  o.binary = binary;
  o.root = root_;
  o.log_target = "stderr";
  o.tlmap_dir = tlmap_dir_;
  o.config = config_;
  return o;
}

CorePipeLimit::CorePipeLimit(int at_least) {
  std::string old = read_text(kPipeLimitPath);
  while (!old.empty() && old.back() == '\n') old.pop_back();
  try {
    before_ = std::stoi(old);
  } catch (const std::exception &) {
    fail(std::string("cannot read ") + kPipeLimitPath + ": '" + old + "'");
  }
  now_ = before_;
  if (before_ == 0 || before_ >= at_least) return;
  old += "\n";
  if (old.size() > sizeof saved_) fail(std::string(kPipeLimitPath) + " holds more than a number");
  std::memcpy(saved_, old.data(), old.size());
  CorePipeLimit *none = nullptr;
  if (!g_active_limit.compare_exchange_strong(none, this))
    fail("CorePipeLimit: another one is in effect; one at a time");
  {
    std::ofstream f(kPipeLimitPath);
    f << at_least << "\n";
    f.flush();
    if (!f) {
      g_active_limit = nullptr;
      fail(std::string("cannot write ") + kPipeLimitPath);
    }
  }
  saved_len_ = old.size();
  now_ = at_least;
}

void CorePipeLimit::restore() noexcept {
  CorePipeLimit *self = this;
  if (!g_active_limit.compare_exchange_strong(self, nullptr)) return;  // not changed, or restored already
  const int fd = open(kPipeLimitPath, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t w = write(fd, saved_, saved_len_);
  (void)w;
  close(fd);
}

void CorePipeLimit::restore_from_signal_handler() noexcept {
  if (CorePipeLimit *l = g_active_limit.load()) l->restore();
}

}  // namespace ct::test
