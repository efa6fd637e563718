// SPDX-License-Identifier: MIT
//
// daemon_journal_test - core-timelined driven from journal files and real
// cores, without the system's crash pipeline: the binary, and the daemon
// in this process from its parts.
//
// The inputs are a real core of `crash_demo --path=a` and its real
// systemd-coredump journal entry, made once through the pipeline and
// committed (fixtures/cores/make-cores).  Each test edits that entry in
// journal export format, turns it into a journal file with the real
// systemd-journal-remote (`-o FILE -`), lays the core out as
// systemd-coredump would, and runs the real daemon binary over the
// directory (--journal-directory, --once), in a scratch directory of its
// own.  So the daemon's journal reading, trust rules, extraction of each
// compression, Storage=journal, store and cursor run as in production; only
// the kernel's and systemd-coredump's part is replaced by their recorded
// output.  daemon_pipeline_test keeps the end-to-end path.
//
// The DaemonInProcess tests build the Daemon in this process from its
// parts (daemon/src/parts.h) over the same inputs, with a Store that
// records its calls and can make an fsync fail (EIO), the one thing a real
// disk here cannot be made to do.
//
// Needs root (the daemon's decoder sandbox and chown of the timeline) and
// systemd-journal-remote, zstd, lz4 and xz (packaging/install-build-deps).
#include <pwd.h>
#include <sys/xattr.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "core_timeline/reader/compact.h"
#include "daemon.h"
#include "journal.h"
#include "parts.h"
#include "sigbus.h"

#include "daemon_harness.h"
#include "schema_check.h"
#include "process.h"
#include "test_files.h"

namespace ctd = core_timeline::daemon;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr const char kJournalRemote[] = "/lib/systemd/systemd-journal-remote";

using ct::test::slurp;

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// ---- journal export format (systemd's docs/JOURNAL_EXPORT_FORMATS.md) ----
// An entry is lines "NAME=VALUE\n", or for a value that is not text
// "NAME\n", a little-endian 64-bit length, the bytes and "\n"; a blank line
// ends the entry.  A field may repeat.

struct Field {
  std::string name, value;
};
using Entry = std::vector<Field>;

std::vector<Entry> parse_export(const std::string &s) {
  std::vector<Entry> entries(1);
  std::size_t p = 0;
  while (p < s.size()) {
    const std::size_t nl = s.find('\n', p);
    if (nl == std::string::npos) throw std::runtime_error("export: a line without its newline");
    const std::string line = s.substr(p, nl - p);
    p = nl + 1;
    if (line.empty()) {
      if (!entries.back().empty()) entries.emplace_back();
      continue;
    }
    if (const auto eq = line.find('='); eq != std::string::npos) {
      entries.back().push_back({line.substr(0, eq), line.substr(eq + 1)});
      continue;
    }
    if (p + 8 > s.size()) throw std::runtime_error("export: a binary field without its length");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(s[p + static_cast<std::size_t>(i)]);
    p += 8;
    if (n > s.size() - p) throw std::runtime_error("export: a binary field longer than the file");
    entries.back().push_back({line, s.substr(p, n)});
    p += n + 1;
  }
  if (entries.back().empty()) entries.pop_back();
  return entries;
}

std::string to_export(const std::vector<Entry> &entries) {
  std::string out;
  for (const auto &e : entries) {
    for (const auto &[name, value] : e) {
      if (value.find('\n') == std::string::npos && value.find('\0') == std::string::npos) {
        out += name + "=" + value + "\n";
        continue;
      }
      out += name + "\n";
      std::uint64_t n = value.size();
      for (int i = 0; i < 8; ++i, n >>= 8) out += static_cast<char>(n & 0xff);
      out += value + "\n";
    }
    out += "\n";
  }
  return out;
}

std::string get(const Entry &e, const std::string &name) {
  for (const auto &f : e)
    if (f.name == name) return f.value;
  return "";
}

void set(Entry &e, const std::string &name, const std::string &value) {
  for (auto &f : e)
    if (f.name == name) {
      f.value = value;
      return;
    }
  e.push_back({name, value});
}

void erase_field(Entry &e, const std::string &name) {
  std::erase_if(e, [&](const Field &f) { return f.name == name; });
}

// ---- running things ----------------------------------------------------------

// Runs argv with stdin from `input` (a file, or /dev/null) and stdout and
// stderr captured together, or stdout written to `output_path`.
ct::test::Ran run(const std::vector<std::string> &argv, const std::string &input = "/dev/null",
                  const std::string &output_path = "") {
  ct::test::ProcessOptions o;
  o.in = ct::test::Stream::file(input);
  if (!output_path.empty()) o.out = ct::test::Stream::file(output_path);
  o.err = output_path.empty() ? ct::test::Stream::to_stdout() : ct::test::Stream::capture();
  return ct::test::run(argv, o);
}

// What it printed, stdout and stderr.
std::string output_of(const ct::test::Ran &r) { return r.out + r.err; }

// A scratch tree: journal/ (journal files), coredump/ (cores), out/
// (timelines next to cores, --output-dir), state/ (cursor, timelines of
// Storage=journal cores).
class Scratch {
 public:
  Scratch() {
    char tmpl[] = "/var/tmp/ct-daemon-journal-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
    for (const char *d : {"journal", "coredump", "out", "state"}) fs::create_directories(root_ + "/" + d);
    fs::permissions(root_, fs::perms(0755));
    spit(path("empty.conf"), "");  // not the machine's configuration
    ct::test::DaemonHarness::Options o;
    o.binary = CT_DAEMON_BIN;
    o.root = root_;
    o.first_start = "all";
    o.log_target = "stderr";
    o.log_level = "debug";
    o.tlmap_dir = CT_TLMAP_DIR;
    o.config = path("empty.conf");
    daemon_.emplace(o);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string path(const std::string &sub) const { return root_ + "/" + sub; }

  // The entries, as one more journal file (systemd-journal-remote).
  void add_journal(const std::vector<Entry> &entries) {
    const std::string exp = path("entries.export"), file = path("journal/" + std::to_string(files_++) + ".journal");
    spit(exp, to_export(entries));
    const auto r = run({kJournalRemote, "-o", file, "-"}, exp);
    ASSERT_TRUE(r.ok()) << "systemd-journal-remote: " << output_of(r);
    ASSERT_TRUE(fs::exists(file)) << output_of(r);
  }

  // core-timelined --once over journal/; its log is kept in log().
  ct::test::Ran run_daemon(const std::map<std::string, std::string> &env = {}) {
    return daemon_->run_once({"--journal-directory", path("journal"), "--coredump-dir", path("coredump")}, env);
  }
  const std::string &state_dir() const { return daemon_->state_dir(); }
  // The daemon binary's log, then what in-process runs noted.
  std::string log() const { return daemon_->log() + noted_log_; }
  void note_log(const std::string &more) { noted_log_ += more; }

  // The timelines written, by file name.
  std::vector<std::string> timelines() const {
    std::vector<std::string> names;
    for (const auto &d : daemon_->timeline_dirs()) {
      if (!fs::exists(d)) continue;
      for (const auto &e : fs::directory_iterator(d))
        if (e.path().filename().string().ends_with(".timeline.json")) names.push_back(e.path().string());
    }
    return names;
  }

 private:
  std::string root_;
  int files_ = 0;
  std::optional<ct::test::DaemonHarness> daemon_;
  std::string noted_log_;
};

// The committed entry, sent as this machine's systemd-coredump would send
// it: as its "systemd-coredump" user, whose uid differs between machines
// (the crash was root's; entry.h), or as root where there is none.
Entry fixture_entry() {
  auto entries = parse_export(slurp(CT_FIXTURE_CORES "/crash_demo-a.export"));
  if (entries.size() != 1) throw std::runtime_error("crash_demo-a.export: not one entry");
  Entry e = entries.front();
  const struct passwd *pw = getpwnam("systemd-coredump");
  set(e, "_UID", std::to_string(pw ? pw->pw_uid : 0));
  set(e, "_GID", std::to_string(pw ? pw->pw_gid : 0));
  return e;
}

// The core, uncompressed (zstd -d) into the scratch tree; its path.
std::string fixture_core_file(Scratch &s) {
  const std::string out = s.path("core.raw");
  const auto r = run({"/usr/bin/zstd", "-d", "-q", "-f", CT_FIXTURE_CORES "/crash_demo-a.core.zst", "-o", out});
  if (!r.ok()) throw std::runtime_error("zstd -d: " + output_of(r));
  return out;
}

// The fixture's core stored as systemd-coredump would with `suffix` (".zst",
// ".lz4", ".xz" or "" for none) in the scratch coredump directory, and the
// entry naming it there.  Returns the entry.
Entry stored_crash(Scratch &s, const std::string &suffix) {
  Entry e = fixture_entry();
  std::string name = fs::path(get(e, "COREDUMP_FILENAME")).filename().string();
  if (name.ends_with(".zst")) name.resize(name.size() - 4);
  name += suffix;
  const std::string dest = s.path("coredump/" + name);
  const std::string raw = fixture_core_file(s);
  ct::test::Ran r;
  if (suffix == ".zst") r = run({"/usr/bin/zstd", "-q", "-f", raw, "-o", dest});
  else if (suffix == ".lz4") r = run({"/usr/bin/lz4", "-q", "-f", raw, dest});
  else if (suffix == ".xz") r = run({"/usr/bin/xz", "-q", "-c", raw}, "/dev/null", dest);
  else r = run({"/bin/cp", raw, dest});
  if (!r.ok()) throw std::runtime_error("storing the core as " + dest + ": " + output_of(r));
  set(e, "COREDUMP_FILENAME", dest);
  return e;
}

// The crash `first` of pid `pid` instead: the same fields and a copy of its
// core, named for that pid, beside it.
Entry crash_of_pid(const Entry &first, const std::string &pid) {
  Entry e = first;
  std::string file = get(first, "COREDUMP_FILENAME");
  const std::string old_pid = "." + get(first, "COREDUMP_PID") + ".";
  file.replace(file.rfind(old_pid), old_pid.size(), "." + pid + ".");
  fs::copy_file(get(first, "COREDUMP_FILENAME"), file, fs::copy_options::overwrite_existing);
  set(e, "COREDUMP_PID", pid);
  set(e, "COREDUMP_FILENAME", file);
  return e;
}

// The stored document at `path`, once it is checked against
// docs/timeline.schema.json (Debian's python3-jsonschema): every document a
// test here reads is a real one the daemon stored.
json read_json(const std::string &path) {
  EXPECT_EQ(ct::test::schema_errors_of_file(path, CT_SCHEMA_PATH), "") << path << " does not match docs/timeline.schema.json";
  return json::parse(slurp(path));
}

// A stored document's events as the full document has them (objects): a
// compact document's (schema_version 7) made again from it.
json events_of(const json &doc) {
  if (!core_timeline::reader::is_compact(doc)) return doc.value("events", json::array());
  json out = json::array();
  auto a = core_timeline::reader::analysis_of_compact(doc);
  EXPECT_TRUE(a.ok()) << a.error().message;
  if (a)
    for (const auto &e : a->events) out.push_back(core_timeline::reader::full_event(*a, e));
  return out;
}

// The a-path's last user event, as the tlmap names it.
bool has_before_die_1001(const json &doc) {
  for (const auto &ev : events_of(doc))
    if (ev.value("name", "") == "BEFORE_DIE" && ev.contains("args") && ev["args"].is_array() && !ev["args"].empty() &&
        ev["args"][0] == 1001)
      return true;
  return false;
}

// The a-path as docs/design.md states it, every event but the lane claims:
// REQ_PARSE(41), FREE, BEFORE_DIE(1001), CRASH.
std::vector<std::string> a_path_events(const json &doc) {
  std::vector<std::string> out;
  for (const auto &ev : events_of(doc)) {
    const std::string name = ev.value("name", "");
    if (name == "LANE_CLAIM") continue;
    const bool user = ev.value("kind", "") == "USER";
    out.push_back(user && ev.contains("args") && !ev["args"].empty() ? name + "/" + ev["args"][0].dump() : name);
  }
  return out;
}

// ---- tests ------------------------------------------------------------------

// Guards against: an extraction path (zstd, lz4, xz, uncompressed) that only
// the real pipeline's default, zstd, ever exercised.
TEST(DaemonFromJournalFiles, EachCompressionOfAStoredCoreGivesItsTimeline) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  for (const std::string suffix : {".zst", ".lz4", ".xz", ""}) {
    SCOPED_TRACE("core stored as '" + suffix + "'");
    Scratch s;
    Entry e = stored_crash(s, suffix);
    ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
    ASSERT_TRUE(s.run_daemon().ok()) << s.log();
    const auto tl = s.timelines();
    ASSERT_EQ(tl.size(), 1u) << s.log();
    std::string core_name = fs::path(get(e, "COREDUMP_FILENAME")).filename().string();
    if (!suffix.empty()) core_name.resize(core_name.size() - suffix.size());
    EXPECT_EQ(fs::path(tl[0]).filename().string(), core_name + ".timeline.json");
    const json doc = read_json(tl[0]);
    EXPECT_EQ(doc["status"], "ok") << doc.dump(2).substr(0, 2000);
    EXPECT_TRUE(has_before_die_1001(doc)) << doc["text"];
    EXPECT_EQ(doc["coredump"]["storage"], "external");
    EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], get(e, "COREDUMP_PID"));
    EXPECT_EQ(doc["daemon"]["extraction"]["compression"],
              suffix == ".zst" ? "zstd" : suffix == ".lz4" ? "lz4" : suffix == ".xz" ? "xz" : "none");
  }
}

// Guards against: a core named by its entry but gone (vacuumed, removed)
// being skipped in silence, or failing the daemon.
TEST(DaemonFromJournalFiles, ACoreThatIsGoneIsCoreMissing) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  Entry e = stored_crash(s, ".zst");
  fs::remove(get(e, "COREDUMP_FILENAME"));
  ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  const auto tl = s.timelines();
  ASSERT_EQ(tl.size(), 1u) << s.log();
  const json doc = read_json(tl[0]);
  EXPECT_EQ(doc["status"], "core_missing");
  EXPECT_NE(doc["reason"].get<std::string>().find("is gone"), std::string::npos) << doc["reason"];
  EXPECT_FALSE(doc.contains("events"));
  // Where there is no core to put it next to, it goes to the state directory.
  EXPECT_NE(tl[0].find("/state/timelines/"), std::string::npos) << tl[0];
  EXPECT_EQ(doc["coredump"]["storage"], "external");
  EXPECT_EQ(doc["coredump"]["core_file"], get(e, "COREDUMP_FILENAME"));
}

// Guards against: a cursor saved past an entry whose timeline's directory
// could not be fsynced (EIO: the disk lost a write), or a daemon that
// retries that in a loop logging an error each turn.  The binary, with the
// fault injected by LD_PRELOAD (fail_fsync.c), over private journal files:
// no other entry comes before this one.  It stops with status 1; the
// restart without the fault makes the timeline durable and saves the cursor.
TEST(DaemonFromJournalFiles, ATimelineDirectoryThatCannotBeFsyncedSavesNoCursorAndStops) {
#if defined(__SANITIZE_ADDRESS__)
  // An ASan program refuses to start when a library is preloaded before
  // libasan ("ASan runtime does not come first in initial library list").
  // The DaemonInProcess tests make fsync fail without a preload.
  GTEST_SKIP() << "an LD_PRELOAD of a library without ASan stops an ASan daemon at start";
#endif
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  Entry e = stored_crash(s, ".zst");
  fs::remove(get(e, "COREDUMP_FILENAME"));  // core_missing: its timeline goes to state/timelines
  ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
  const auto faulty = s.run_daemon({{"LD_PRELOAD", CT_FAIL_FSYNC}, {"CT_FAIL_FSYNC_SUFFIX", "/state/timelines"}});
  EXPECT_EQ(faulty.exit_code(), 1) << s.log();
  EXPECT_FALSE(fs::exists(s.state_dir() + "/cursor"))
      << "the journal cursor was saved although the directory of its timeline could not be fsynced";
  const std::string log = s.log();
  std::size_t errors = 0;
  for (std::size_t at = 0; (at = log.find("cannot fsync", at)) != std::string::npos; ++at) ++errors;
  EXPECT_GE(errors, 1u) << log;
  EXPECT_LE(errors, 5u) << "the failed fsync was retried in a loop:\n" << log;

  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  const auto tl = s.timelines();
  ASSERT_EQ(tl.size(), 1u) << s.log();
  EXPECT_EQ(read_json(tl[0])["status"], "core_missing");
  EXPECT_TRUE(fs::exists(s.state_dir() + "/cursor")) << s.log();
}

// Guards against: Storage=journal (the core in the entry's COREDUMP= field,
// no file) being handled only where a test machine is configured for it.
TEST(DaemonFromJournalFiles, StorageJournalReadsTheCoreFromTheEntry) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  Entry e = fixture_entry();
  erase_field(e, "COREDUMP_FILENAME");
  e.push_back({"COREDUMP", slurp(fixture_core_file(s))});
  ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  const auto tl = s.timelines();
  ASSERT_EQ(tl.size(), 1u) << s.log();
  EXPECT_NE(tl[0].find("/state/timelines/"), std::string::npos) << tl[0];
  // Named as systemd-coredump would have named the file.
  EXPECT_EQ(fs::path(tl[0]).filename().string(), "core.crash_demo.0." + get(e, "_BOOT_ID") + "." +
                                                     get(e, "COREDUMP_PID") + "." + get(e, "COREDUMP_TIMESTAMP") +
                                                     ".timeline.json");
  const json doc = read_json(tl[0]);
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_EQ(doc["coredump"]["storage"], "journal");
  EXPECT_TRUE(doc["coredump"]["core_file"].is_null());
  EXPECT_TRUE(has_before_die_1001(doc)) << doc["text"];
  EXPECT_EQ(a_path_events(doc), (std::vector<std::string>{"REQ_PARSE/41", "FREE", "BEFORE_DIE/1001", "CRASH"}))
      << doc["text"];
  EXPECT_FALSE(doc["coredump"]["fields"].contains("COREDUMP")) << "the core itself is not copied into the document";
}

// Guards against: an entry that its sender could forge, or that is
// malformed, leaving a timeline (entry.h's trust rules), while a good entry
// beside them still gets its own.
TEST(DaemonFromJournalFiles, ForgedAndMalformedEntriesPlantNothing) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry good = stored_crash(s, ".zst");
  std::vector<Entry> entries;
  auto variant = [&](const std::string &pid, auto &&edit) {
    Entry e = crash_of_pid(good, pid);
    edit(e);
    entries.push_back(e);
  };
  // A regular user (uid 1000) speaking of root's crash.
  variant("4001", [](Entry &e) { set(e, "_UID", "1000"); });
  // Not written by journald's native protocol (_TRANSPORT=stdout: a service's output).
  variant("4002", [](Entry &e) { set(e, "_TRANSPORT", "stdout"); });
  // A pid that is not a number.
  variant("4003", [](Entry &e) { set(e, "COREDUMP_PID", "40x3"); });
  // A core file outside the coredump directory.
  variant("4004", [](Entry &e) { set(e, "COREDUMP_FILENAME", "/etc/shadow"); });
  // A second MESSAGE_ID (systemd-coredump --backtrace run by a user).
  variant("4005", [](Entry &e) { e.push_back({"MESSAGE_ID", "1f4e0a44a88649939aaea34fc6da8c95"}); });
  // A core file name that is not the one systemd-coredump gives this crash.
  variant("4006", [](Entry &e) {
    std::string f = get(e, "COREDUMP_FILENAME");
    f.replace(f.rfind("core."), 5, "kore.");
    set(e, "COREDUMP_FILENAME", f);
  });
  entries.push_back(good);
  ASSERT_NO_FATAL_FAILURE(s.add_journal(entries));
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  const auto tl = s.timelines();
  ASSERT_EQ(tl.size(), 1u) << s.log();
  EXPECT_EQ(read_json(tl[0])["coredump"]["fields"]["COREDUMP_PID"], get(good, "COREDUMP_PID")) << s.log();
  EXPECT_EQ(read_json(tl[0])["status"], "ok");
  // Each for its own reason (entry.cc's words).
  for (const char *why : {"written by _UID=1000 about a crash of COREDUMP_UID=0", "_TRANSPORT=stdout, not 'journal'",
                          "COREDUMP_PID='40x3' is not a decimal number", "COREDUMP_FILENAME=/etc/shadow is outside",
                          "MESSAGE_ID occurs 2 times", "/kore.crash_demo."})
    EXPECT_NE(s.log().find(why), std::string::npos) << why << "\n" << s.log();
}

// ---- entries only the crashed user vouches for -----------------------------

constexpr const char kUser[] = "1234";
constexpr const char kCoredumpCgroup[] =
    "/system.slice/system-systemd\\x2dcoredump.slice/systemd-coredump@0-3251-0.service";

// The crash `root_crash` (the fixture's, stored) as uid 1234's instead, of
// pid `pid`, as systemd-coredump sends it: having dropped to that user
// (coredump.c change_uid_gid()), so _UID is 1234.  Its core is a copy
// named for that uid and pid, root-owned like every file this test makes,
// with systemd-coredump's user.coredump.* xattrs (fix_xattr()) when
// `xattrs`; with `stored` false it has no core file at all.
Entry user_crash(const Entry &root_crash, const std::string &pid, bool stored, bool xattrs) {
  Entry e = root_crash;
  std::string file = get(root_crash, "COREDUMP_FILENAME");
  const std::string old_part = ".0." + get(root_crash, "_BOOT_ID") + "." + get(root_crash, "COREDUMP_PID") + ".";
  file.replace(file.rfind(old_part), old_part.size(), std::string(".") + kUser + "." + get(root_crash, "_BOOT_ID") +
                                                          "." + pid + ".");
  set(e, "COREDUMP_PID", pid);
  set(e, "COREDUMP_UID", kUser);
  set(e, "COREDUMP_GID", kUser);
  set(e, "_UID", kUser);
  set(e, "_GID", kUser);
  set(e, "COREDUMP_FILENAME", file);
  if (!stored) return e;
  fs::copy_file(get(root_crash, "COREDUMP_FILENAME"), file, fs::copy_options::overwrite_existing);
  if (!xattrs) return e;
  for (const auto &[x, f] : std::vector<std::pair<std::string, std::string>>{
           {"user.coredump.pid", "COREDUMP_PID"}, {"user.coredump.uid", "COREDUMP_UID"},
           {"user.coredump.gid", "COREDUMP_GID"}, {"user.coredump.signal", "COREDUMP_SIGNAL"},
           {"user.coredump.timestamp", "COREDUMP_TIMESTAMP"}, {"user.coredump.comm", "COREDUMP_COMM"},
           {"user.coredump.exe", "COREDUMP_EXE"}}) {
    const std::string v = get(e, f);
    if (setxattr(file.c_str(), x.c_str(), v.data(), v.size(), 0) != 0)
      throw std::runtime_error("setxattr " + x + " on " + file + ": " + std::strerror(errno));
  }
  return e;
}

// The same crash with its core in the entry (Storage=journal), sent from
// the cgroup `cgroup` (none if empty).
Entry user_crash_in_journal(Scratch &s, const Entry &root_crash, const std::string &pid, const std::string &cgroup) {
  Entry e = user_crash(root_crash, pid, false, false);
  erase_field(e, "COREDUMP_FILENAME");
  e.push_back({"COREDUMP", slurp(fixture_core_file(s))});
  if (!cgroup.empty()) set(e, "_SYSTEMD_CGROUP", cgroup);
  return e;
}

// Guards against: a forged entry - an entry only its
// user vouches for, about a core that does not exist or that systemd-coredump
// did not mark, planting a record (a core_missing timeline) - and against
// such entries blocking the cursor or being retried, while root's and
// systemd-coredump's entries keep today's rules (a gone core is still
// core_missing) and the user's genuine crash is still stored.  PID 1 is not
// systemd here, so no cgroup vouches for the Storage=journal entry.
TEST(DaemonFromJournalFiles, AnEntryOnlyItsUserVouchesForIsStoredOnlyWhenItsCoreCorroboratesIt) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry root_crash = stored_crash(s, ".zst");
  const Entry genuine = user_crash(root_crash, "5001", true, true);
  const Entry no_xattrs = user_crash(root_crash, "5002", true, false);
  const Entry no_core = user_crash(root_crash, "5003", false, false);
  const Entry in_journal = user_crash_in_journal(s, root_crash, "5004", kCoredumpCgroup);
  Entry root_gone = crash_of_pid(root_crash, "5005");
  fs::remove(get(root_gone, "COREDUMP_FILENAME"));
  ASSERT_NO_FATAL_FAILURE(s.add_journal({genuine, no_xattrs, no_core, in_journal, root_gone}));
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  std::map<std::string, std::string> status_of_pid;
  for (const auto &t : s.timelines()) {
    const json doc = read_json(t);
    status_of_pid[doc["coredump"]["fields"]["COREDUMP_PID"]] = doc["status"];
  }
  EXPECT_EQ(status_of_pid, (std::map<std::string, std::string>{{"5001", "ok"}, {"5005", "core_missing"}})) << s.log();
  const std::string log = s.log();
  for (const std::string why : {"pid 5002 (/work/main/build/bin/crash_demo) of uid 1234: only that user vouches",
                                "the core has no user.coredump.pid", "pid 5003 (", "pid 5004 (", "PID 1 is not systemd"})
    EXPECT_NE(log.find(why), std::string::npos) << why << "\n" << log;
  // A core that is gone is said to be gone first (the vacuum, most
  // likely), not as a suspected forgery.
  const auto at5003 = log.find("not storing the crash of pid 5003 (");
  ASSERT_NE(at5003, std::string::npos) << log;
  const std::string line5003 = log.substr(at5003, log.find('\n', at5003) - at5003);
  EXPECT_NE(line5003.find("of uid 1234: its core "), std::string::npos) << line5003;
  EXPECT_NE(line5003.find(" cannot be opened: it is gone (removed or vacuumed before it could be read"),
            std::string::npos)
      << line5003;
  EXPECT_EQ(line5003.find("nothing corroborates"), std::string::npos) << line5003;
  // All five done: the cursor is past the last one, nothing is retried.
  ASSERT_TRUE(fs::exists(s.path("state/cursor"))) << log;
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  EXPECT_EQ(s.log().find("pid 5003 (", log.size()), std::string::npos) << "an unverified entry was retried";
}

// Guards against: a restart that redoes what was done (a second timeline,
// or one written over), or skips what came after the saved cursor.
TEST(DaemonFromJournalFiles, TheCursorIsSavedAndARestartGoesOnAfterIt) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry first = stored_crash(s, ".zst");
  ASSERT_NO_FATAL_FAILURE(s.add_journal({first}));
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  ASSERT_EQ(s.timelines().size(), 1u) << s.log();
  ASSERT_TRUE(fs::exists(s.path("state/cursor"))) << s.log();
  const std::string first_timeline = s.timelines()[0];
  // Gone: a redo of the first entry would write it again.
  fs::remove(first_timeline);

  // A later crash, in a later journal file.
  Entry second = first;
  std::string file = get(first, "COREDUMP_FILENAME");
  const std::string old_pid = "." + get(first, "COREDUMP_PID") + ".";
  file.replace(file.rfind(old_pid), old_pid.size(), ".4100.");
  fs::copy_file(get(first, "COREDUMP_FILENAME"), file);
  set(second, "COREDUMP_PID", "4100");
  set(second, "COREDUMP_FILENAME", file);
  set(second, "__REALTIME_TIMESTAMP", std::to_string(std::stoull(get(first, "__REALTIME_TIMESTAMP")) + 1000000));
  set(second, "__MONOTONIC_TIMESTAMP", std::to_string(std::stoull(get(first, "__MONOTONIC_TIMESTAMP")) + 1000000));
  ASSERT_NO_FATAL_FAILURE(s.add_journal({second}));
  ASSERT_TRUE(s.run_daemon().ok()) << s.log();
  const auto tl = s.timelines();
  ASSERT_EQ(tl.size(), 1u) << s.log();
  EXPECT_NE(tl[0], first_timeline);
  EXPECT_EQ(read_json(tl[0])["coredump"]["fields"]["COREDUMP_PID"], "4100");
}

// ---- the Daemon in this process, through its parts (daemon/src/parts.h) ----
// The same journal files, cores and directories as above, but the Daemon
// is built here from parts the test chooses: a Journal over the scratch
// journal, the real extractor, the real decoder (the daemon's binary
// exec'd, as /proc/self/exe would be in core-timelined), and a Store that
// records what it is asked, or whose fsync fails where asked (a disk that
// lost a write cannot be had here; everything else is real).

// What a RecordingStore makes fail with EIO, as fsync(2) does after a
// writeback error: the fsync of a timeline whose path contains `file`, of
// the directory `dir` (when not empty), and with `cursor` the cursor's save.
struct Faults {
  std::string file, dir;
  bool cursor = false;
};

// A FileStore that records each call, in order ("write NAME", "sync_file
// NAME", "sync_directory DIR", "save_cursor"), and fails as `faults` say.
class RecordingStore : public ctd::FileStore {
 public:
  RecordingStore(ctd::FileStore base, Faults faults) : ctd::FileStore(std::move(base)), faults_(std::move(faults)) {}

  ctd::Result<ctd::WriteOutcome> write_timeline(int dirfd, const std::string &dir, const std::string &name,
                                                std::string_view data, const ctd::FileOwner &owner,
                                                std::string *acl_warning, ctd::Fd *unsynced) override {
    calls.push_back("write " + name);
    return FileStore::write_timeline(dirfd, dir, name, data, owner, acl_warning, unsynced);
  }
  ctd::Result<void> sync_file(int fd, const std::string &path) override {
    calls.push_back("sync_file " + fs::path(path).filename().string());
    if (!faults_.file.empty() && path.find(faults_.file) != std::string::npos)
      return ctd::errno_error(EIO, "cannot fsync the timeline " + path);
    return FileStore::sync_file(fd, path);
  }
  ctd::Result<void> sync_directory(const std::string &dir) override {
    calls.push_back("sync_directory " + dir);
    if (!faults_.dir.empty() && dir == faults_.dir) return ctd::errno_error(EIO, "cannot fsync " + dir);
    return FileStore::sync_directory(dir);
  }
  ctd::Result<void> save_cursor(const std::string &cursor) override {
    calls.push_back("save_cursor");
    if (faults_.cursor) return ctd::errno_error(EIO, "cannot fsync " + timelines_path() + "/../cursor.new");
    return FileStore::save_cursor(cursor);
  }

  std::vector<std::string> calls;

 private:
  Faults faults_;
};

// What one in-process run of the Daemon did.
struct InProcessRun {
  int status = -1;
  std::string log;                  // "LEVEL: message" lines (spdlog)
  std::vector<std::string> calls;   // the store's (RecordingStore)
};

// Runs a Daemon (--once, --first-start all) over the scratch tree, with a
// RecordingStore failing as `faults` say; its log is kept in s.log() too.
InProcessRun run_in_process(Scratch &s, const Faults &faults = {},
                            const ctd::TrustPolicy &policy = ctd::default_trust_policy()) {
  ctd::Options o;
  o.config = s.path("empty.conf");
  o.coredump_dir = s.path("coredump");
  o.output_dir = s.path("out");
  o.state_dir = s.path("state");
  o.first_start = ctd::FirstStart::kAll;
  o.tlmap_dir = CT_TLMAP_DIR;
  o.once = true;
  o.journal_directory = s.path("journal");

  auto log = std::make_shared<std::ostringstream>();
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(*log);
  sink->set_pattern("%l: %v");
  auto logger = std::make_shared<spdlog::logger>("in-process", sink);
  logger->set_level(spdlog::level::debug);
  spdlog::set_default_logger(logger);

  InProcessRun out;
  ctd::Parts parts;
  auto journal = ctd::Journal::open_directory(o.journal_directory);
  auto files = ctd::FileStore::open(o.state_dir, o.output_dir);
  if (!journal || !files) {
    ADD_FAILURE() << (journal ? files.error().message : journal.error().message);
    return out;
  }
  parts.entries = std::make_unique<ctd::Journal>(std::move(*journal));
  parts.extractor = std::make_unique<ctd::StreamExtractor>(o.keep_whole_below, o.max_kept);
  parts.decoder = std::make_unique<ctd::ChildDecoder>(ctd::DecodeLimits{o.decode_timeout_ms, o.memory_limit},
                                                      CT_DAEMON_BIN);
  auto store = std::make_unique<RecordingStore>(std::move(*files), faults);
  RecordingStore *seen = store.get();
  parts.store = std::move(store);
  {
    ctd::Daemon d(o, policy, std::move(parts));
    out.status = d.run();
    out.calls = seen->calls;
  }
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(""));  // no sinks: `log` goes now
  out.log = log->str();
  s.note_log(out.log);
  return out;
}

// The Daemon's log lines at `level` ("error", "warning", ...) that contain `part`.
std::size_t log_lines(const std::string &log, const std::string &level, const std::string &part) {
  std::istringstream in(log);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);)
    n += line.starts_with(level + ": ") && line.find(part) != std::string::npos;
  return n;
}

std::string cursor_of(Scratch &s) {
  std::string c = slurp(s.path("state/cursor"));
  while (!c.empty() && c.back() == '\n') c.pop_back();
  return c;
}

// A crash like `first` but of pid `pid`, one second later, with its core
// beside the first's.
Entry later_crash(const Entry &first, const std::string &pid) {
  Entry e = crash_of_pid(first, pid);
  set(e, "__REALTIME_TIMESTAMP", std::to_string(std::stoull(get(first, "__REALTIME_TIMESTAMP")) + 1000000));
  set(e, "__MONOTONIC_TIMESTAMP", std::to_string(std::stoull(get(first, "__MONOTONIC_TIMESTAMP")) + 1000000));
  return e;
}

std::string timeline_name_of(const Entry &e) {
  std::string n = fs::path(get(e, "COREDUMP_FILENAME")).filename().string();
  if (n.ends_with(".zst")) n.resize(n.size() - 4);
  return n + ".timeline.json";
}

// Guards against: the parts not making a whole daemon - an entry read from
// journal files through the EntrySource, its core extracted and decoded by
// the real parts, its timeline stored - and against the store's steps
// coming in an order that could let the cursor pass a timeline that is not
// durable (the timeline's fsync, then its directory's, then the cursor).
TEST(DaemonInProcess, AnEntryFromJournalFilesBecomesADurableTimelineBeforeTheCursorPassesIt) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry e = stored_crash(s, ".zst");
  ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
  const InProcessRun r = run_in_process(s);
  ASSERT_EQ(r.status, 0) << r.log;
  const std::string name = timeline_name_of(e);
  ASSERT_TRUE(fs::exists(s.path("out/" + name))) << r.log;
  ASSERT_EQ(s.timelines().size(), 1u) << r.log;
  const json doc = read_json(s.path("out/" + name));
  EXPECT_EQ(doc["status"], "ok") << doc.dump(2).substr(0, 2000);
  EXPECT_TRUE(has_before_die_1001(doc)) << doc["text"];
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], get(e, "COREDUMP_PID"));
  EXPECT_EQ(doc["daemon"]["extraction"]["compression"], "zstd");
  EXPECT_EQ(doc["daemon"]["decoder"]["failure"], nullptr);
  EXPECT_EQ(cursor_of(s), doc["coredump"]["journal_cursor"]) << "the cursor saved is not this entry's";
  EXPECT_EQ(r.calls, (std::vector<std::string>{"write " + name, "sync_file " + name,
                                               "sync_directory " + s.path("out"), "save_cursor"}));
}

// Guards against: a timeline whose fsync fails (the disk lost it) staying
// named, the failure passing quietly, the fsync being retried (a second one
// may report success for data that never reached the disk), or the cursor
// moving past its entry - and against the restart not redoing it
// (docs/core-timelined.md, "Never lose or repeat a crash", step 3).
TEST(DaemonInProcess, TimelineWhoseFsyncFailsIsRemovedTheCursorStaysAndTheRestartRedoesIt) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry first = stored_crash(s, ".zst");
  ASSERT_NO_FATAL_FAILURE(s.add_journal({first}));
  ASSERT_EQ(run_in_process(s).status, 0) << s.log();
  const std::string first_cursor = cursor_of(s);
  ASSERT_FALSE(first_cursor.empty());

  const Entry second = later_crash(first, "4200");
  const std::string name = timeline_name_of(second);
  ASSERT_NO_FATAL_FAILURE(s.add_journal({second}));
  const InProcessRun failed = run_in_process(s, {.file = name, .dir = "", .cursor = false});
  EXPECT_EQ(failed.status, 1) << "a daemon that lost a timeline must stop with an error\n" << failed.log;
  EXPECT_EQ(log_lines(failed.log, "error", "cannot fsync the timeline " + s.path("out/" + name)), 1u) << failed.log;
  EXPECT_EQ(log_lines(failed.log, "error", "removed it and stopping without saving the journal cursor"), 1u)
      << failed.log;
  EXPECT_FALSE(fs::exists(s.path("out/" + name))) << "a timeline that may not be on disk stayed named";
  EXPECT_EQ(cursor_of(s), first_cursor) << "the cursor went past the entry whose timeline was lost";
  EXPECT_EQ(std::count(failed.calls.begin(), failed.calls.end(), "sync_file " + name), 1) << "fsync retried";
  EXPECT_EQ(std::count(failed.calls.begin(), failed.calls.end(), "save_cursor"), 0);

  const InProcessRun again = run_in_process(s);
  ASSERT_EQ(again.status, 0) << again.log;
  ASSERT_TRUE(fs::exists(s.path("out/" + name))) << again.log;
  const json doc = read_json(s.path("out/" + name));
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], "4200");
  EXPECT_EQ(cursor_of(s), doc["coredump"]["journal_cursor"]);
  EXPECT_EQ(s.timelines().size(), 2u) << "the first crash's timeline, and the redone one";
}

// Guards against: the cursor (here the first start's: none saved yet)
// being saved although the directory naming a timeline could not be
// fsynced, the failure passing quietly or retried, and the restart writing
// a second timeline for the crash instead of fsyncing the one it finds -
// next to the core, and in the state directory (a core that is gone).
TEST(DaemonInProcess, DirectoryWhoseFsyncFailsSavesNoCursorAndTheRestartSyncsWhatItFinds) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  for (const bool core_gone : {false, true}) {
    SCOPED_TRACE(core_gone ? "timeline in the state directory (core gone)" : "timeline next to the core");
    Scratch s;
    const Entry e = stored_crash(s, ".zst");
    if (core_gone) fs::remove(get(e, "COREDUMP_FILENAME"));
    ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
    const std::string dir = s.path(core_gone ? "state/timelines" : "out");
    const InProcessRun failed = run_in_process(s, {.file = "", .dir = dir, .cursor = false});
    EXPECT_EQ(failed.status, 1) << failed.log;
    EXPECT_EQ(log_lines(failed.log, "error", "cannot fsync " + dir + ": "), 1u) << failed.log;
    EXPECT_EQ(log_lines(failed.log, "error", "stopping without saving the journal cursor"), 1u) << failed.log;
    EXPECT_FALSE(fs::exists(s.path("state/cursor"))) << "cursor saved past a timeline whose name may be lost";
    EXPECT_EQ(std::count(failed.calls.begin(), failed.calls.end(), "sync_directory " + dir), 1) << "fsync retried";
    EXPECT_EQ(std::count(failed.calls.begin(), failed.calls.end(), "save_cursor"), 0);

    const InProcessRun again = run_in_process(s);
    ASSERT_EQ(again.status, 0) << again.log;
    const auto tl = s.timelines();
    ASSERT_EQ(tl.size(), 1u) << again.log;
    EXPECT_EQ(fs::path(tl[0]).parent_path().string(), dir);
    EXPECT_EQ(read_json(tl[0])["status"], core_gone ? "core_missing" : "ok");
    EXPECT_EQ(log_lines(again.log, "info", "its timeline already exists; skipping entry"), 1u) << again.log;
    const std::string name = fs::path(tl[0]).filename().string();
    EXPECT_EQ(again.calls, (std::vector<std::string>{"sync_file " + name, "sync_directory " + dir, "save_cursor"}))
        << "the timeline found is not made durable before the cursor passes it";
    EXPECT_EQ(cursor_of(s), read_json(tl[0])["coredump"]["journal_cursor"]);
  }
}

// Guards against: a cursor that cannot be saved (its file's fsync fails)
// passing quietly, stopping the daemon although its timelines are durable,
// or making the restart write a second timeline for an entry it redoes.
TEST(DaemonInProcess, CursorThatCannotBeSavedIsAnErrorAndTheRestartSkipsWhatWasWritten) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry e = stored_crash(s, ".zst");
  ASSERT_NO_FATAL_FAILURE(s.add_journal({e}));
  const InProcessRun failed = run_in_process(s, {.file = "", .dir = "", .cursor = true});
  EXPECT_EQ(failed.status, 0) << "the timeline is durable: nothing is lost by going on\n" << failed.log;
  EXPECT_EQ(log_lines(failed.log, "error", "cannot save the journal cursor: "), 1u) << failed.log;
  EXPECT_FALSE(fs::exists(s.path("state/cursor")));
  const std::string name = timeline_name_of(e);
  ASSERT_TRUE(fs::exists(s.path("out/" + name))) << failed.log;
  const std::string first = slurp(s.path("out/" + name));

  const InProcessRun again = run_in_process(s);
  ASSERT_EQ(again.status, 0) << again.log;
  EXPECT_EQ(log_lines(again.log, "info", "its timeline already exists; skipping entry"), 1u) << again.log;
  EXPECT_EQ(s.timelines().size(), 1u);
  EXPECT_EQ(slurp(s.path("out/" + name)), first) << "the timeline was written again";
  EXPECT_EQ(cursor_of(s), read_json(s.path("out/" + name))["coredump"]["journal_cursor"]);
}


// Guards against: the one corroboration of an entry without a core file
// (Storage=journal) not reaching the daemon: with PID 1 systemd (the
// policy says so; this machine's PID 1 is not), the user's entry sent from
// a systemd-coredump@.service instance is stored, one sent from anywhere
// else (a user's own scope) or with no cgroup recorded is not.
TEST(DaemonInProcess, StorageJournalEntryOfTheUserCountsOnlyFromASystemdCoredumpInstance) {
  ASSERT_EQ(geteuid(), 0u) << "needs root";
  Scratch s;
  const Entry root_crash = stored_crash(s, ".zst");
  ASSERT_NO_FATAL_FAILURE(s.add_journal(
      {user_crash_in_journal(s, root_crash, "5101", kCoredumpCgroup),
       user_crash_in_journal(s, root_crash, "5102", "/user.slice/user-1234.slice/user@1234.service/app.slice/f.scope"),
       user_crash_in_journal(s, root_crash, "5103", "")}));
  auto policy = ctd::default_trust_policy();
  policy.systemd_pid1 = true;
  const InProcessRun r = run_in_process(s, {}, policy);
  ASSERT_EQ(r.status, 0) << r.log;
  const auto tl = s.timelines();
  ASSERT_EQ(tl.size(), 1u) << r.log;
  const json doc = read_json(tl[0]);
  EXPECT_EQ(doc["coredump"]["fields"]["COREDUMP_PID"], "5101");
  EXPECT_EQ(doc["coredump"]["storage"], "journal");
  EXPECT_EQ(doc["status"], "ok");
  // The unverified ones are done too (their reasons are log::event()s,
  // which an in-process Daemon does not log: the binary's test above reads
  // them): the cursor is past them all.
  EXPECT_EQ(std::count(r.calls.begin(), r.calls.end(), "save_cursor"), 1) << r.log;
  EXPECT_TRUE(fs::exists(s.path("state/cursor")));
}

// Guards against: core-timelined dying of SIGBUS when a journal file is
// truncated under sd-journal's mapping, as journald of systemd 252 does when
// it archives a file at rotation (a CI run of DaemonPipeline.JournalRotation
// found the daemon's core: SIGBUS in libsystemd, under Journal::next).
// With the handler (sigbus.h) the pages past the new end read as zeros, the
// Journal opens the files again and reads on after the last entry it
// returned, and what is gone is gone: no entry is made up.
TEST(JournalReader, AFileTruncatedUnderTheReaderIsOpenedAgainNotASigbus) {
  ASSERT_TRUE(core_timeline::sigbus::install());
  Scratch s;
  // Entries with 8 KiB of a field no other has and no compressor shrinks,
  // so that their objects fill about 1.6 MiB of the file.
  constexpr int kEntries = 200;
  std::vector<Entry> entries;
  std::uint64_t x = 88172645463325252ull;  // xorshift64
  for (int i = 0; i < kEntries; ++i) {
    Entry e = fixture_entry();
    set(e, "COREDUMP_PID", std::to_string(1000 + i));
    std::string pad;
    while (pad.size() < 8192) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      pad += "0123456789abcdef"[x & 15];
    }
    set(e, "PADDING", pad);
    entries.push_back(e);
  }
  ASSERT_NO_FATAL_FAILURE(s.add_journal(entries));
  const std::string file = s.path("journal/0.journal");
  ASSERT_GT(fs::file_size(file), 1u << 20);
  auto j = ctd::Journal::open_directory(s.path("journal"));
  ASSERT_TRUE(j) << j.error().message;
  ASSERT_TRUE(j->seek_head());
  ctd::RawEntry raw;
  std::string warning;
  auto first = j->next(raw, warning);
  ASSERT_TRUE(first && *first);
  EXPECT_EQ(raw.single("COREDUMP_PID").value_or(""), "1000");
  const std::uint64_t pages = core_timeline::sigbus::zeroed_pages();
  // Cut the file at 512 KiB, among the entries' objects, while it is mapped.
  ASSERT_EQ(truncate(file.c_str(), 512 << 10), 0);
  int read = 1;
  std::string error;
  for (;;) {
    auto n = j->next(raw, warning);
    if (!n) {
      error = n.error().message;
      break;
    }
    if (!*n) break;
    EXPECT_EQ(raw.single("COREDUMP_PID").value_or(""), std::to_string(1000 + read)) << "made up or out of order";
    ++read;
  }
  EXPECT_GT(core_timeline::sigbus::zeroed_pages(), pages) << "the read never reached the cut: the test proves nothing";
  EXPECT_LT(read, kEntries) << error;
  std::fprintf(stderr, "read %d of %d entries, then: %s\n", read, kEntries, error.empty() ? "the end" : error.c_str());
}

}  // namespace
