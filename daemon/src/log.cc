/* SPDX-License-Identifier: MIT */
/* log.cc - see log.h. */
#include "log.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace core_timeline::daemon::log {

namespace {

thread_local Fields t_scope;
bool g_journal = false;
bool g_stderr = false;

bool stderr_is_journal() {
  /* systemd.exec(5): $JOURNAL_STREAM is "DEV:INODE" of stderr when it is
   * connected to the journal. */
  const char *js = std::getenv("JOURNAL_STREAM");
  if (!js) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (fstat(STDERR_FILENO, &st) < 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

void send(int priority, std::string_view message_id, std::string_view message, const Fields &extra) {
  std::vector<std::string> parts;
  parts.reserve(4 + t_scope.size() + extra.size());
  parts.push_back("MESSAGE=" + std::string(message));
  parts.push_back("PRIORITY=" + std::to_string(priority));
  parts.push_back("SYSLOG_IDENTIFIER=core-timelined");
  if (!message_id.empty()) parts.push_back("MESSAGE_ID=" + std::string(message_id));
  for (const auto &[k, v] : t_scope) parts.push_back(k + "=" + v);
  for (const auto &[k, v] : extra) parts.push_back(k + "=" + v);
  std::vector<struct iovec> iov;
  iov.reserve(parts.size());
  for (auto &p : parts) iov.push_back({p.data(), p.size()});
  sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
}

template <class Mutex>
class JournalSink final : public spdlog::sinks::base_sink<Mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg &msg) override {
    send(priority_of(msg.level), "", std::string_view(msg.payload.data(), msg.payload.size()), {});
  }
  void flush_() override {}
};

}  // namespace

std::string_view target_name(Target t) noexcept {
  switch (t) {
    case Target::kAuto: return "auto";
    case Target::kJournal: return "journal";
    case Target::kStderr: return "stderr";
    case Target::kBoth: return "both";
  }
  return "auto";
}

std::optional<Target> target_from_name(std::string_view name) noexcept {
  for (const Target t : {Target::kAuto, Target::kJournal, Target::kStderr, Target::kBoth})
    if (target_name(t) == name) return t;
  return std::nullopt;
}

int priority_of(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LOG_DEBUG;
    case spdlog::level::info: return LOG_INFO;
    case spdlog::level::warn: return LOG_WARNING;
    case spdlog::level::err: return LOG_ERR;
    case spdlog::level::critical: return LOG_CRIT;
    default: return LOG_INFO;
  }
}

void setup(Target target, spdlog::level::level_enum level) {
  g_journal = target != Target::kStderr;
  g_stderr = target == Target::kStderr || target == Target::kBoth || (target == Target::kAuto && !stderr_is_journal());
  std::vector<spdlog::sink_ptr> sinks;
  if (g_journal) sinks.push_back(std::make_shared<JournalSink<std::mutex>>());
  if (g_stderr) {
    auto s = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    s->set_pattern("%Y-%m-%d %H:%M:%S.%e core-timelined[%P] %l: %v");
    sinks.push_back(s);
  }
  auto logger = std::make_shared<spdlog::logger>("core-timelined", sinks.begin(), sinks.end());
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}


const Fields &scope_fields() noexcept { return t_scope; }

namespace {

void stderr_line(int priority, const std::string &line) {
    const char *lvl = priority <= LOG_ERR ? "error" : priority == LOG_WARNING ? "warning" : priority == LOG_DEBUG ? "debug" : "info";
    std::fprintf(stderr, "core-timelined[%d] %s: %s\n", static_cast<int>(getpid()), lvl, line.c_str());
    std::fflush(stderr);
}

}  // namespace

void mirror(int priority, const std::string &message) {
  if (g_stderr) stderr_line(priority, message);
}

void event(int priority, std::string_view message_id, const std::string &message, const Fields &fields) {
  if (g_journal) send(priority, message_id, message, fields);
  if (g_stderr) {
    std::string line = message;
    for (const auto &[k, v] : fields) line += " " + k + "=" + v;
    stderr_line(priority, line);
  }
}

Scope::Scope(Fields fields) : previous_size_(t_scope.size()) {
  for (auto &f : fields) t_scope.push_back(std::move(f));
}

Scope::~Scope() { t_scope.resize(previous_size_); }

}  // namespace core_timeline::daemon::log
