// SPDX-License-Identifier: MIT
//
// crash_harness.cc - see crash_harness.h.
#include "crash_harness.h"

#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <lzma.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <systemd/sd-journal.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <stdexcept>

#include "core_timeline/reader/fd.h"

namespace ct::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

std::string errno_text(int err) { return std::string(strerror(err)); }

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// ---- files ----------------------------------------------------------------

using core_timeline::reader::Fd;

// Reads a stored core in chunks.
class Input {
 public:
  explicit Input(const std::string& path) : path_(path), fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (!fd_.valid()) fail("cannot open stored core " + path + ": " + errno_text(errno));
  }
  // Returns the number of bytes read into buf; 0 at end of file.
  size_t read(void* buf, size_t len) {
    for (;;) {
      ssize_t n = ::read(fd_.get(), buf, len);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) fail("cannot read stored core " + path_ + ": " + errno_text(errno));
    }
  }

 private:
  std::string path_;
  Fd fd_;
};

// Writes the decompressed core to a temporary name, renamed on commit().
class Output {
 public:
  explicit Output(const std::string& path)
      : path_(path), tmp_(path + ".part"),
        fd_(open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) {
    if (!fd_.valid()) fail("cannot create " + tmp_ + ": " + errno_text(errno));
  }
  ~Output() {
    if (!committed_) unlink(tmp_.c_str());
  }
  void write(const void* buf, size_t len) {
    const char* p = static_cast<const char*>(buf);
    while (len > 0) {
      ssize_t n = ::write(fd_.get(), p, len);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot write " + tmp_ + ": " + errno_text(errno));
      p += n;
      len -= static_cast<size_t>(n);
    }
  }
  void commit() {
    if (rename(tmp_.c_str(), path_.c_str()) < 0)
      fail("cannot rename " + tmp_ + " to " + path_ + ": " + errno_text(errno));
    committed_ = true;
  }

 private:
  std::string path_, tmp_;
  Fd fd_;
  bool committed_ = false;
};

constexpr size_t kChunk = 1 << 17;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void decompress_zstd(const std::string& path, Input& in, Output& out) {
  std::unique_ptr<ZSTD_DStream, decltype(&ZSTD_freeDStream)> ds(ZSTD_createDStream(), ZSTD_freeDStream);
  if (!ds) fail("ZSTD_createDStream failed for " + path);
  ZSTD_initDStream(ds.get());
  std::vector<char> ibuf(ZSTD_DStreamInSize()), obuf(ZSTD_DStreamOutSize());
  size_t last = 1;  // 0 once a frame is complete
  bool any = false;
  for (;;) {
    size_t n = in.read(ibuf.data(), ibuf.size());
    if (n == 0) break;
    any = true;
    ZSTD_inBuffer ib{ibuf.data(), n, 0};
    while (ib.pos < ib.size) {
      ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
      last = ZSTD_decompressStream(ds.get(), &ob, &ib);
      if (ZSTD_isError(last)) fail("zstd error in " + path + ": " + ZSTD_getErrorName(last));
      out.write(obuf.data(), ob.pos);
    }
  }
  // Flush what the decoder still holds.
  for (;;) {
    ZSTD_inBuffer ib{nullptr, 0, 0};
    ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
    if (last == 0) break;
    last = ZSTD_decompressStream(ds.get(), &ob, &ib);
    if (ZSTD_isError(last)) fail("zstd error in " + path + ": " + ZSTD_getErrorName(last));
    out.write(obuf.data(), ob.pos);
    if (ob.pos == 0) break;
  }
  if (!any || last != 0) fail("zstd stream in " + path + " is truncated (no complete frame)");
}

void decompress_lz4(const std::string& path, Input& in, Output& out) {
  LZ4F_dctx* raw = nullptr;
  size_t r = LZ4F_createDecompressionContext(&raw, LZ4F_VERSION);
  if (LZ4F_isError(r)) fail("LZ4F_createDecompressionContext failed for " + path);
  std::unique_ptr<LZ4F_dctx, decltype(&LZ4F_freeDecompressionContext)> dctx(raw, LZ4F_freeDecompressionContext);
  std::vector<char> ibuf(kChunk), obuf(4 * kChunk);
  size_t hint = 1;  // 0 once a frame is complete
  bool any = false;
  for (;;) {
    size_t n = in.read(ibuf.data(), ibuf.size());
    if (n == 0) break;
    any = true;
    size_t pos = 0;
    while (pos < n) {
      size_t src = n - pos, dst = obuf.size();
      hint = LZ4F_decompress(dctx.get(), obuf.data(), &dst, ibuf.data() + pos, &src, nullptr);
      if (LZ4F_isError(hint)) fail("lz4 error in " + path + ": " + LZ4F_getErrorName(hint));
      out.write(obuf.data(), dst);
      pos += src;
    }
  }
  // Drain output the decoder holds back for lack of space.
  for (;;) {
    size_t src = 0, dst = obuf.size();
    if (hint == 0) break;
    hint = LZ4F_decompress(dctx.get(), obuf.data(), &dst, nullptr, &src, nullptr);
    if (LZ4F_isError(hint)) fail("lz4 error in " + path + ": " + LZ4F_getErrorName(hint));
    out.write(obuf.data(), dst);
    if (dst == 0) break;
  }
  if (!any || hint != 0) fail("lz4 frame in " + path + " is truncated");
}

void decompress_xz(const std::string& path, Input& in, Output& out) {
  lzma_stream strm = LZMA_STREAM_INIT;
  lzma_ret ret = lzma_stream_decoder(&strm, UINT64_MAX, LZMA_CONCATENATED);
  if (ret != LZMA_OK) fail("lzma_stream_decoder failed for " + path + ": code " + std::to_string(ret));
  std::unique_ptr<lzma_stream, decltype(&lzma_end)> guard(&strm, lzma_end);
  std::vector<uint8_t> ibuf(kChunk), obuf(kChunk);
  lzma_action action = LZMA_RUN;
  for (;;) {
    if (strm.avail_in == 0 && action == LZMA_RUN) {
      strm.next_in = ibuf.data();
      strm.avail_in = in.read(ibuf.data(), ibuf.size());
      if (strm.avail_in == 0) action = LZMA_FINISH;
    }
    strm.next_out = obuf.data();
    strm.avail_out = obuf.size();
    ret = lzma_code(&strm, action);
    out.write(obuf.data(), obuf.size() - strm.avail_out);
    if (ret == LZMA_STREAM_END) return;
    if (ret != LZMA_OK)
      fail("xz error in " + path + ": code " + std::to_string(ret) +
           (ret == LZMA_BUF_ERROR ? " (truncated)" : ""));
  }
}

void copy_plain(Input& in, Output& out) {
  std::vector<char> buf(kChunk);
  for (size_t n; (n = in.read(buf.data(), buf.size())) > 0;) out.write(buf.data(), n);
}

// ---- journal --------------------------------------------------------------

struct Journal {
  sd_journal* j = nullptr;
  ~Journal() { sd_journal_close(j); }
};

std::string field(const std::map<std::string, std::string>& fields, const std::string& name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second;
}

std::optional<uint64_t> parse_u64(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

// Uids that systemd-coredump writes its entries as: root, or the
// systemd-coredump user it drops to.  Any local user can send a look-alike.
bool trusted_uid(const std::string& uid) {
  auto v = parse_u64(uid);
  if (!v) return false;
  if (*v == 0) return true;
  struct passwd* pw = getpwnam("systemd-coredump");
  return pw && pw->pw_uid == *v;
}

std::map<std::string, std::string> read_entry(sd_journal* j, bool with_core, std::string* core) {
  std::map<std::string, std::string> fields;
  const void* data;
  size_t len;
  int r;
  SD_JOURNAL_FOREACH_DATA(j, data, len) {
    std::string kv(static_cast<const char*>(data), len);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string name = kv.substr(0, eq);
    if (name == "COREDUMP") continue;  // fetched below only when needed
    fields.emplace(std::move(name), kv.substr(eq + 1));
  }
  if (with_core && core) {
    r = sd_journal_get_data(j, "COREDUMP", &data, &len);
    if (r >= 0 && len > 9) core->assign(static_cast<const char*>(data) + 9, len - 9);
  }
  return fields;
}

uint64_t usec_since_epoch(system_clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
}

std::string describe_query(pid_t pid, uint64_t min_ts, uint64_t not_before_us) {
  return "MESSAGE_ID=" + std::string(kCoredumpMessageId) + " COREDUMP_PID=" + std::to_string(pid) +
         " COREDUMP_TIMESTAMP>=" + std::to_string(min_ts) + " written at or after " + std::to_string(not_before_us);
}

// Finds the entry; when `core` is not null and the entry carries the core
// in its COREDUMP= field (Storage=journal), stores it there.
std::map<std::string, std::string> find_entry(pid_t pid, system_clock::time_point not_before,
                                              milliseconds timeout, std::string* core) {
  if (pid <= 0) fail("wait_for_coredump_entry: invalid pid " + std::to_string(pid));
  const auto deadline = steady_clock::now() + timeout;
  // COREDUMP_TIMESTAMP is the kernel's %t times 10^6: whole seconds from the
  // coarse clock (ktime_get_real_seconds), which lags CLOCK_REALTIME by up to
  // a tick, so a crash right after a fork at 12.001 s can carry 11 s.  Hence
  // one second of slack here, and the precise check on the time the entry
  // was written (__REALTIME_TIMESTAMP, necessarily after the crash).
  const uint64_t not_before_us = usec_since_epoch(not_before);
  const uint64_t min_ts = (not_before_us / 1000000 - 1) * 1000000;

  // The reader is opened afresh every kReopen while the entry is missing:
  // right after journald (re)starts, a reader has been seen not to notice
  // the entry that journalctl shows (sd_journal_wait never woke for it),
  // as core-timelined's kReseekAfterMs also allows for.
  constexpr auto kReopen = std::chrono::seconds(2);
  Journal jr;
  auto open_reader = [&]() {
    sd_journal_close(jr.j);
    jr.j = nullptr;
    int r = sd_journal_open(&jr.j, SD_JOURNAL_LOCAL_ONLY);
    if (r < 0) fail("pid " + std::to_string(pid) + ": sd_journal_open failed: " + errno_text(-r));
    r = sd_journal_set_data_threshold(jr.j, 0);  // whole fields, COREDUMP= included
    if (r < 0) fail("sd_journal_set_data_threshold: " + errno_text(-r));
    std::string m1 = std::string("MESSAGE_ID=") + kCoredumpMessageId;
    std::string m2 = "COREDUMP_PID=" + std::to_string(pid);
    if ((r = sd_journal_add_match(jr.j, m1.data(), m1.size())) < 0 ||
        (r = sd_journal_add_match(jr.j, m2.data(), m2.size())) < 0)
      fail("sd_journal_add_match: " + errno_text(-r));
    if ((r = sd_journal_seek_head(jr.j)) < 0) fail("sd_journal_seek_head: " + errno_text(-r));
    return steady_clock::now();
  };
  auto opened = open_reader();

  int older = 0, untrusted = 0;
  for (;;) {
    sd_journal* j = jr.j;
    int r;
    while ((r = sd_journal_next(j)) > 0) {
      auto fields = read_entry(j, false, nullptr);
      if (!trusted_uid(field(fields, "_UID"))) {
        ++untrusted;
        continue;
      }
      auto ts = parse_u64(field(fields, "COREDUMP_TIMESTAMP"));
      uint64_t written_us = 0;
      if (sd_journal_get_realtime_usec(j, &written_us) < 0) written_us = 0;
      if (!ts || *ts < min_ts || written_us < not_before_us) {
        ++older;
        continue;
      }
      if (core) read_entry(j, true, core);
      return fields;
    }
    if (r < 0) fail("pid " + std::to_string(pid) + ": sd_journal_next: " + errno_text(-r));
    auto now = steady_clock::now();
    if (now >= deadline) break;
    if (now - opened >= kReopen) {
      older = untrusted = 0;  // counted again from the head
      opened = open_reader();
      continue;
    }
    const auto until = std::min(deadline, opened + kReopen);
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - now).count();
    r = sd_journal_wait(j, static_cast<uint64_t>(left));
    if (r < 0) fail("pid " + std::to_string(pid) + ": sd_journal_wait: " + errno_text(-r));
  }
  std::string msg = "pid " + std::to_string(pid) + ": no systemd-coredump journal entry (" +
                    describe_query(pid, min_ts, not_before_us) + ") within " + std::to_string(timeout.count()) + " ms";
  if (older) msg += "; " + std::to_string(older) + " older entr" + (older == 1 ? "y" : "ies") + " of that pid ignored";
  if (untrusted) msg += "; " + std::to_string(untrusted) + " entr" + (untrusted == 1 ? "y" : "ies") + " not written by systemd-coredump ignored";
  msg += ". Is the pipeline running? (tests/support/pipeline status; journalctl -n 20)";
  fail(msg);
}

// journal_barrier's marker: unique to this process and call.
std::string barrier_token() {
  static unsigned calls = 0;
  return std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            steady_clock::now().time_since_epoch()).count()) +
         "-" + std::to_string(++calls);
}

std::string strip_compression_suffix(const std::string& name) {
  for (const char* s : {".zst", ".lz4", ".xz"})
    if (ends_with(name, s)) return name.substr(0, name.size() - strlen(s));
  return name;
}

std::string ensure_dir(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? default_core_dir() : dir_in;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create core directory " + dir + ": " + ec.message());
  return dir;
}

std::string store_core(pid_t pid, const std::map<std::string, std::string>& fields,
                       const std::string& journal_core, const std::string& output_dir) {
  std::string dir = ensure_dir(output_dir);
  std::string stored = field(fields, "COREDUMP_FILENAME");
  if (!stored.empty()) {
    std::string out = dir + "/" + strip_compression_suffix(std::filesystem::path(stored).filename().string());
    decompress_core_file(stored, out);
    return out;
  }
  if (!journal_core.empty()) {
    std::string out = dir + "/core." + field(fields, "COREDUMP_COMM") + "." + std::to_string(pid) + "." +
                      field(fields, "COREDUMP_TIMESTAMP") + ".journal";
    Output o(out);
    o.write(journal_core.data(), journal_core.size());
    o.commit();
    return out;
  }
  fail("pid " + std::to_string(pid) + ": the systemd-coredump entry has neither COREDUMP_FILENAME nor a COREDUMP " +
       "field (core not stored: larger than ProcessSizeMax/ExternalSizeMax, or Storage=none?)" +
       (fields.count("COREDUMP_TRUNCATED") ? " COREDUMP_TRUNCATED=" + field(fields, "COREDUMP_TRUNCATED") : ""));
}

}  // namespace

std::string default_core_dir() {
  const char* env = getenv("CT_TEST_CORE_DIR");
  return env && *env ? env : "/tmp/core-timeline-test-cores";
}

void decompress_core_file(const std::string& stored_path, const std::string& out_path) {
  Input in(stored_path);
  Output out(out_path);
  if (ends_with(stored_path, ".zst"))
    decompress_zstd(stored_path, in, out);
  else if (ends_with(stored_path, ".lz4"))
    decompress_lz4(stored_path, in, out);
  else if (ends_with(stored_path, ".xz"))
    decompress_xz(stored_path, in, out);
  else
    copy_plain(in, out);
  out.commit();
}

void journal_barrier(milliseconds timeout) {
  const std::string token = barrier_token();
  int r = sd_journal_send("MESSAGE=core-timeline test: journal barrier %s", token.c_str(), "CT_TEST_BARRIER=%s",
                          token.c_str(), nullptr);
  if (r < 0) fail("journal barrier: sd_journal_send: " + errno_text(-r));
  const std::string match = "CT_TEST_BARRIER=" + token;
  const auto deadline = steady_clock::now() + timeout;
  // Reopened every 2 s, as find_entry's reader is (a reader opened right
  // after journald started has been seen never to wake for a new entry).
  for (;;) {
    Journal jr;
    if ((r = sd_journal_open(&jr.j, SD_JOURNAL_LOCAL_ONLY)) < 0)
      fail("journal barrier: sd_journal_open: " + errno_text(-r));
    if ((r = sd_journal_add_match(jr.j, match.data(), match.size())) < 0 || (r = sd_journal_seek_head(jr.j)) < 0)
      fail("journal barrier: " + errno_text(-r));
    const auto reopen = std::min(deadline, steady_clock::now() + std::chrono::seconds(2));
    for (;;) {
      if ((r = sd_journal_next(jr.j)) > 0) return;
      if (r < 0) fail("journal barrier: sd_journal_next: " + errno_text(-r));
      const auto now = steady_clock::now();
      if (now >= reopen) break;
      sd_journal_wait(jr.j, static_cast<uint64_t>(
                                std::chrono::duration_cast<std::chrono::microseconds>(reopen - now).count()));
    }
    if (steady_clock::now() >= deadline)
      fail("journal barrier: the marker entry " + match + " did not show in the journal within " +
           std::to_string(timeout.count()) + " ms. Is journald running? (tests/support/pipeline status)");
  }
}

std::map<std::string, std::string> wait_for_coredump_entry(pid_t pid, system_clock::time_point not_before,
                                                           milliseconds timeout) {
  return find_entry(pid, not_before, timeout, nullptr);
}

std::string fetch_core_for_pid(pid_t pid, system_clock::time_point not_before, const std::string& output_dir,
                               milliseconds timeout, std::map<std::string, std::string>* journal_fields) {
  std::string journal_core;
  auto fields = find_entry(pid, not_before, timeout, &journal_core);
  std::string path = store_core(pid, fields, journal_core, output_dir);
  if (journal_fields) *journal_fields = std::move(fields);
  return path;
}

CrashRun run_and_collect_core(const std::vector<std::string>& argv, const CrashOptions& opts) {
  if (argv.empty()) fail("run_and_collect_core: empty argv");
  const std::string& exe = argv[0];

  char filter[32] = "";
  if (opts.coredump_filter) snprintf(filter, sizeof filter, "0x%x", *opts.coredump_filter);
  ProcessOptions po;
  po.out = Stream::inherit();
  po.err = Stream::inherit();
  po.env = opts.env;
  po.unset_env = opts.unset_env;
  po.timeout = opts.timeout;
  po.in_child = [&filter] {
    // Default dispositions and an empty mask for the signals that make cores.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGQUIT, SIGPIPE})
      signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // RLIMIT_CORE 1 is the one value that stops a piped core (core(5)).
    struct rlimit rl;
    if (getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 1) {
      rl.rlim_cur = rl.rlim_max == 1 ? 0 : rl.rlim_max;
      setrlimit(RLIMIT_CORE, &rl);
    }
    if (filter[0]) {
      int fd = open("/proc/self/coredump_filter", O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, filter, strlen(filter)) < 0) child_failed("cannot write /proc/self/coredump_filter");
      close(fd);
    }
  };

  const auto not_before = system_clock::now();
  const Ran ran = ct::test::run(argv, po);
  CrashRun run;
  run.pid = ran.pid;
  run.wait_status = ran.wait_status;
  const pid_t pid = ran.pid;
  if (ran.timed_out)
    fail("pid " + std::to_string(pid) + " (" + exe + ") did not die within " + std::to_string(opts.timeout.count()) +
         " ms; killed it");

  const int st = run.wait_status;
  if (WIFEXITED(st))
    fail("pid " + std::to_string(pid) + " (" + exe + ") exited with status " + std::to_string(WEXITSTATUS(st)) +
         " instead of crashing");
  if (!WIFSIGNALED(st)) fail("pid " + std::to_string(pid) + ": unexpected wait status " + std::to_string(st));
  if (!WCOREDUMP(st))
    fail("pid " + std::to_string(pid) + " (" + exe + ") was killed by " + signal_name(WTERMSIG(st)) +
         " but the kernel dumped no core (a signal without a core, RLIMIT_CORE 1, not dumpable, or core_pattern "
         "not the systemd-coredump pipe: see tests/support/pipeline status)");

  run.core_path = fetch_core_for_pid(pid, not_before, opts.output_dir, opts.timeout, &run.journal_fields);
  return run;
}

std::vector<std::pair<std::uint64_t, std::string>> coredump_stack(const std::string& message) {
  std::vector<std::pair<std::uint64_t, std::string>> out;
  const std::size_t at = message.find("Stack trace of thread");
  if (at == std::string::npos) return out;
  const std::regex frame_re(R"(^ *#(\d+) +0x([0-9a-f]+) (\S+) )");
  std::size_t pos = message.find('\n', at);
  while (pos != std::string::npos && pos + 1 < message.size()) {
    const std::size_t nl = message.find('\n', pos + 1);
    const std::string l = message.substr(pos + 1, nl == std::string::npos ? std::string::npos : nl - pos - 1);
    pos = nl;
    std::smatch m;
    if (!std::regex_search(l, m, frame_re)) break; /* the next thread, or the end */
    out.emplace_back(std::stoull(m[2].str(), nullptr, 16), m[3].str());
  }
  return out;
}

}  // namespace ct::test
