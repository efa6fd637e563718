// SPDX-License-Identifier: MIT
//
// ctl_query_journal_test - ctl-query's journal source (docs/ctl-query.md,
// "Sources") on real journal files: timeline entries (the names of
// core_timeline/document/journal_entry.h) written in the journal export
// format and fed to the real systemd-journal-remote, which writes the
// journal files sd-journal then reads.  journal-remote keeps the trusted
// fields (_UID, _COMM, _HOSTNAME, _BOOT_ID) as given, so the files hold
// several hosts, several boots and forged senders.  Under CI=true a missing
// systemd-journal-remote fails the tests.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "journal_source.h"
#include "core_timeline/document/document_entry.h"
#include "core_timeline/document/journal_entry.h"
#include "core_timeline/document/names.h"
#include "sigbus.h"

namespace ctlq = core_timeline::ctl_query;
namespace jf = core_timeline::document::journal;
using json = nlohmann::ordered_json;

namespace {

constexpr const char *kJournalRemote = "/lib/systemd/systemd-journal-remote";
constexpr const char *kBootA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1";
constexpr const char *kBootB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2";
constexpr std::uint64_t kT0 = 1796020111000000ull;  // 2026-11-30 06:28:31 UTC

class UtcEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};
const auto *const kUtc = ::testing::AddGlobalTestEnvironment(new UtcEnvironment);

// A timeline document of the shape core-timelined writes (docs/ctl-query.md,
// "The stored document"), with the events named.
json document(unsigned pid, const std::string &comm, const std::string &boot, std::uint64_t ts,
              const std::vector<std::string> &events, const std::string &host = "alpha") {
  json d;
  d["schema_version"] = 1;
  d["status"] = "ok";
  d["exit_code"] = 0;
  d["reason"] = nullptr;
  d["source"] = "core-only";
  d["process"] = {{"pid", pid}, {"comm", comm}, {"exe", "/usr/bin/" + comm}};
  d["crash"] = {{"signal", 11}, {"signal_name", "SIGSEGV"}};
  d["events"] = json::array();
  std::uint64_t seq = 1;
  for (const auto &n : events)
    d["events"].push_back({{"seq", seq++}, {"tid", pid}, {"kind", "USER"}, {"name", n}, {"id", 4096 + seq},
                           {"args", {seq, 0}}, {"location", nullptr}});
  d["events"].push_back({{"seq", seq}, {"tid", pid}, {"kind", "CRASH"}, {"name", "CRASH"}, {"id", 0},
                         {"args", {0, 0}}, {"crash", {{"signal_name", "SIGSEGV"}}}});
  d["coredump"] = {{"journal_cursor", "s=1;i=" + std::to_string(pid)},
                   {"boot_id", boot},
                   {"realtime_usec", ts + 500},
                   {"core_file", nullptr},
                   {"storage", "journal"},
                   {"fields",
                    {{"COREDUMP_PID", std::to_string(pid)},
                     {"COREDUMP_UID", "1000"},
                     {"COREDUMP_GID", "1000"},
                     {"COREDUMP_SIGNAL", "11"},
                     {"COREDUMP_SIGNAL_NAME", "SIGSEGV"},
                     {"COREDUMP_EXE", "/usr/bin/" + comm},
                     {"COREDUMP_COMM", comm},
                     {"COREDUMP_CMDLINE", comm + " --serve"},
                     {"COREDUMP_TIMESTAMP", std::to_string(ts)},
                     {"_BOOT_ID", boot},
                     {"_HOSTNAME", host}}}};
  d["daemon"] = {{"version", "test"}, {"decoded_usec", ts + 1000}, {"duration_ms", 3}};
  d["text"] = "core-timeline: core-only, pid " + std::to_string(pid) + " (" + comm + "), " +
              std::to_string(events.size() + 1) + " events\n";
  return d;
}

using Fields = std::vector<std::pair<std::string, std::string>>;

// The fields of the timeline entry core-timelined logs for `doc`
// (journal_entry.h), sent by root from host `host`.
Fields entry_of(const json &doc, const std::string &host = "alpha", bool with_document = true) {
  const json &f = doc["coredump"]["fields"];
  Fields e{{"MESSAGE_ID", std::string(jf::kTimelineMessageId)},
           {"MESSAGE", "timeline written"},
           {"SYSLOG_IDENTIFIER", std::string(jf::kSyslogIdentifier)},
           {"_UID", "0"},
           {"_TRANSPORT", "journal"},
           {"_COMM", "core-timelined"},
           {"_HOSTNAME", host},
           {"_BOOT_ID", doc["coredump"]["boot_id"].get<std::string>()}};
  for (const char *k : {"COREDUMP_PID", "COREDUMP_UID", "COREDUMP_GID", "COREDUMP_SIGNAL", "COREDUMP_SIGNAL_NAME",
                        "COREDUMP_EXE", "COREDUMP_COMM", "COREDUMP_TIMESTAMP"})
    e.emplace_back(k, f[k].get<std::string>());
  e.emplace_back(std::string(jf::kBootId), doc["coredump"]["boot_id"].get<std::string>());
  e.emplace_back(std::string(jf::kStatus), doc["status"].get<std::string>());
  e.emplace_back(std::string(jf::kSignal), "11");
  e.emplace_back(std::string(jf::kEvents), std::to_string(doc["events"].size()));
  std::set<std::string> names;
  json last;
  for (const auto &ev : doc["events"]) {
    names.insert(ev["name"].get<std::string>());
    if (ev["kind"] != "CRASH") last = ev;
  }
  if (!last.is_null()) e.emplace_back(std::string(jf::kLastEvent), last["name"].get<std::string>());
  for (const auto &n : names) e.emplace_back(std::string(jf::kEventName), n);
  e.emplace_back(std::string(jf::kEventNamesComplete), "1");
  e.emplace_back(std::string(jf::kSchemaVersion), "1");
  e.emplace_back(std::string(jf::kTimelinePath), "/var/lib/systemd/coredump/core." + f["COREDUMP_COMM"].get<std::string>() +
                                                     ".timeline.json");
  if (with_document) {
    const std::string bytes = doc.dump(2) + "\n";
    e.emplace_back(std::string(jf::kDocument), bytes);
    e.emplace_back(std::string(jf::kDocumentBytes), std::to_string(bytes.size()));
  }
  return e;
}

void set(Fields &e, const std::string &k, const std::string &v) {
  for (auto &[name, value] : e)
    if (name == k) {
      value = v;
      return;
    }
  e.emplace_back(k, v);
}

// One entry in the journal export format (systemd's JOURNAL_EXPORT_FORMATS):
// text fields as NAME=value, values with a newline in the binary form.
void append_export(std::string &out, const Fields &e, std::uint64_t realtime, std::uint64_t monotonic,
                   const std::string &boot) {
  out += "__REALTIME_TIMESTAMP=" + std::to_string(realtime) + "\n";
  out += "__MONOTONIC_TIMESTAMP=" + std::to_string(monotonic) + "\n";
  out += "_BOOT_ID=" + boot + "\n";
  for (const auto &[k, v] : e) {
    if (k == "_BOOT_ID") continue;
    if (v.find('\n') == std::string::npos) {
      out += k + "=" + v + "\n";
    } else {
      out += k + "\n";
      std::uint64_t n = v.size();
      for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
      out += v + "\n";
    }
  }
  out += "\n";
}

// A scratch directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ctlq-journal-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }

 private:
  std::string path_;
};

// Writes `export_text` into the journal file `path` through
// systemd-journal-remote; fails the test if that does not work.
void write_journal(const std::string &path, const std::string &export_text) {
  const std::string cmd = std::string(kJournalRemote) + " -o '" + path + "' - 2>/dev/null";
  FILE *p = popen(cmd.c_str(), "w");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(fwrite(export_text.data(), 1, export_text.size(), p), export_text.size());
  ASSERT_EQ(pclose(p), 0) << cmd;
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
}

struct Cli {
  int rc;
  std::string out, err;
};

Cli cli(std::vector<std::string> args) {
  args.insert(args.begin(), "ctl-query");
  std::ostringstream out, err;
  const int rc = ctlq::ctl_query_main(args, out, err, static_cast<std::int64_t>(kT0 + 86400000000ull));
  return Cli{rc, out.str(), err.str()};
}

std::vector<json> json_lines(const std::string &s) {
  std::vector<json> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) v.push_back(json::parse(l));
  return v;
}

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

/* The fleet: a central journal-remote directory with two hosts' files and
 * two boots, plus forged entries. */
class JournalFleet : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(kJournalRemote, X_OK) != 0) return;
    dir_ = new TempDir();
    // Host alpha, boot A: three crashes; boot B: one.
    std::string alpha, beta;
    std::uint64_t mono = 1000;
    auto add = [&](std::string &out, const Fields &e, std::uint64_t ts, const std::string &boot) {
      append_export(out, e, ts + 700, mono++, boot);
    };
    /* Host alpha's entries as core-timelined sends them now: the document
     * in an entry of its own, sent just before by the same process
     * (document_entry.h); host beta's as earlier daemons did, the document
     * in the timeline entry. */
    unsigned sender = 5000;
    auto add_two = [&](std::string &out, Fields e, std::uint64_t ts, const std::string &boot) {
      char id[33];
      std::snprintf(id, sizeof id, "%032x", sender);
      set(e, "_PID", std::to_string(sender++));
      auto pair = jf::split_document(e, id);
      ASSERT_TRUE(pair.document.has_value());
      for (const char *k : {"_UID", "_TRANSPORT", "_COMM", "_HOSTNAME", "_PID", "_SYSTEMD_CGROUP"})
        for (const auto &[name, value] : e)
          if (name == k) pair.document->emplace_back(name, value);
      /* Before it, a document entry with the same id from another process
       * of another user: not its sender's, so never its document. */
      Fields forged = *pair.document;
      set(forged, "_PID", "4999");
      set(forged, "_UID", "1000");
      set(forged, "COREDUMP_UID", "1000");
      set(forged, std::string(jf::kDocument), "{\"status\": \"ok\", \"text\": \"forged\\n\"}\n");
      add(out, forged, ts - 1, boot);
      add(out, *pair.document, ts, boot);
      add(out, pair.timeline, ts, boot);
    };
    docs_.push_back(document(101, "server", kBootA, kT0, {"REQ_PARSE", "BEFORE_DIE"}));
    docs_.push_back(document(102, "worker", kBootA, kT0 + 10000000, {"MALLOC", "FREE"}));
    docs_.push_back(document(103, "server", kBootA, kT0 + 20000000, {"REQ_PARSE", "RELOAD"}));
    docs_.push_back(document(104, "server", kBootB, kT0 + 3600000000ull, {"BEFORE_DIE"}));
    for (std::size_t i = 0; i < 3; ++i) add_two(alpha, entry_of(docs_[i]), kT0 + 10000000 * i, kBootA);
    add_two(alpha, entry_of(docs_[3]), kT0 + 3600000000ull, kBootB);
    // Host beta: one crash, boot B.
    docs_.push_back(document(201, "server", kBootB, kT0 + 3700000000ull, {"REQ_PARSE"}, "beta"));
    add(beta, entry_of(docs_[4], "beta"), kT0 + 3700000000ull, kBootB);
    // Forged: user 1000 claims a crash of root's (COREDUMP_UID 0).
    {
      Fields f = entry_of(document(666, "forged", kBootA, kT0 + 5000000, {"BEFORE_DIE"}));
      set(f, "_UID", "1000");
      set(f, "COREDUMP_UID", "0");
      add(alpha, f, kT0 + 5000000, kBootA);
    }
    // Forged: root's crash, but through syslog (logger(1) can put any text
    // there, never a field of its own choosing).
    {
      Fields f = entry_of(document(667, "forged", kBootA, kT0 + 6000000, {"BEFORE_DIE"}));
      set(f, "_TRANSPORT", "syslog");
      add(alpha, f, kT0 + 6000000, kBootA);
    }
    // Trusted: core-timelined as the crashed user 1000 (its own crash),
    // from the daemon's cgroup.
    {
      docs_.push_back(document(301, "userapp", kBootA, kT0 + 7000000, {"BEFORE_DIE"}));
      Fields f = entry_of(docs_.back());
      set(f, "_UID", "1000");
      set(f, "_SYSTEMD_CGROUP", std::string(jf::kDaemonCgroup));
      add_two(alpha, f, kT0 + 7000000, kBootA);
    }
    std::filesystem::create_directories(dir_->path() + "/remote");
    write_journal(dir_->path() + "/remote/remote-alpha.journal", alpha);
    write_journal(dir_->path() + "/remote/remote-beta.journal", beta);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (access(kJournalRemote, X_OK) != 0) {
      if (const char *ci = getenv("CI"); ci && std::string(ci) == "true")
        GTEST_FAIL() << kJournalRemote << " is missing (packaging/install-build-deps installs systemd-journal-remote)";
      GTEST_SKIP() << kJournalRemote << " is missing";
    }
  }
  static std::string remote() { return dir_->path() + "/remote"; }

  static TempDir *dir_;
  static std::vector<json> docs_;
};
TempDir *JournalFleet::dir_ = nullptr;
std::vector<json> JournalFleet::docs_;

}  // namespace

// The rule itself is document::journal::sender_trust's (daemon_unit_test);
// JournalFleet's forged entries prove ctl-query applies it.


TEST_F(JournalFleet, DirectoryIsDetectedAsAJournal) {
  std::vector<std::string> files;
  EXPECT_TRUE(ctlq::journal_files_in(remote(), &files));
  EXPECT_EQ(files.size(), 2u);
  files.clear();
  EXPECT_FALSE(ctlq::journal_files_in(dir_->path() + "/no-such", &files));
  // A machine-id subdirectory, as journald makes /var/log/journal.
  const std::string nested = dir_->path() + "/nested/0123456789abcdef0123456789abcdef";
  std::filesystem::create_directories(nested);
  std::filesystem::copy_file(remote() + "/remote-beta.journal", nested + "/system.journal");
  files.clear();
  EXPECT_TRUE(ctlq::journal_files_in(dir_->path() + "/nested", &files));
  ASSERT_EQ(files.size(), 1u);
  const Cli c = cli({"-D", dir_->path() + "/nested", "--json", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  ASSERT_EQ(json_lines(c.out).size(), 1u);
  EXPECT_EQ(json_lines(c.out)[0]["pid"], 201);
}

TEST_F(JournalFleet, ListShowsEveryHostWithAHostColumnAndIgnoresForgedEntries) {
  const Cli c = cli({"-D", remote(), "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  const auto l = lines_of(c.out);
  ASSERT_EQ(l.size(), 7u) << c.out;  // header + 6 trusted entries
  EXPECT_EQ(l[0].rfind("TIME", 0), 0u);
  EXPECT_NE(l[0].find(" HOST "), std::string::npos) << l[0];
  EXPECT_NE(c.out.find("beta"), std::string::npos);
  EXPECT_NE(c.out.find("alpha"), std::string::npos);
  EXPECT_EQ(c.out.find("forged"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("userapp"), std::string::npos) << c.out;  // core-timelined as the crashed user
  // The last event from the entry's summary field, not the document.
  EXPECT_NE(l[1].find("BEFORE_DIE"), std::string::npos) << l[1];
  EXPECT_NE(c.err.find("2 journal entries with the timeline MESSAGE_ID ignored"), std::string::npos) << c.err;
}

TEST_F(JournalFleet, OneHostHasNoHostColumnButJsonAlwaysCarriesIt) {
  const Cli c = cli({"--file", remote() + "/remote-alpha.journal", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.out.find("HOST"), std::string::npos) << c.out;
  const Cli j = cli({"--file", remote() + "/remote-beta.journal", "--json", "list"});
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto rows = json_lines(j.out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["host"], "beta");
  EXPECT_EQ(rows[0]["source"], "journal");
  EXPECT_EQ(rows[0]["pid"], 201);
  EXPECT_EQ(rows[0]["events"], 2);
  EXPECT_EQ(rows[0]["status"], "ok");
  EXPECT_EQ(rows[0]["boot_id"], kBootB);
}

TEST_F(JournalFleet, MatchesOnEntryFieldsAndOnTheDocumentOnly) {
  // A pid (index), an executable path (index), status (index).
  auto pids = [](const Cli &c) {
    std::vector<int> v;
    for (const auto &j : json_lines(c.out)) v.push_back(j["pid"].get<int>());
    return v;
  };
  Cli c = cli({"-D", remote(), "--json", "list", "102"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(pids(c), std::vector<int>{102});
  c = cli({"-D", remote(), "--json", "list", "/usr/bin/server", "COREDUMP_PID=101", "COREDUMP_PID=201"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(pids(c), (std::vector<int>{101, 201}));
  c = cli({"-D", remote(), "--json", "list", "status=ok", "worker"});
  EXPECT_EQ(pids(c), std::vector<int>{102});
  // A field only the document has (COREDUMP_CMDLINE): read from the
  // entries' documents.
  c = cli({"-D", remote(), "--json", "list", "COREDUMP_CMDLINE=worker --serve"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(pids(c), std::vector<int>{102});
  c = cli({"-D", remote(), "list", "9999"});
  EXPECT_EQ(c.rc, 1) << c.err;
  EXPECT_NE(c.err.find("no matching timelines"), std::string::npos) << c.err;
  // Forged entries are not found by a match either.
  c = cli({"-D", remote(), "list", "666"});
  EXPECT_EQ(c.rc, 1);
}

TEST_F(JournalFleet, BootAsJournalctlTakesIt) {
  auto pids = [](const Cli &c) {
    std::vector<int> v;
    for (const auto &j : json_lines(c.out)) v.push_back(j["pid"].get<int>());
    return v;
  };
  Cli c = cli({"-D", remote(), "--json", "--boot", kBootA, "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(pids(c), (std::vector<int>{101, 301, 102, 103}));
  // Boot B is the journal's last (by its first entry): -b and -b 0.
  c = cli({"-D", remote(), "--json", "-b", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(pids(c), (std::vector<int>{104, 201}));
  c = cli({"-D", remote(), "--json", "-b", "-1", "list"});  // not -1 = --newest
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(pids(c).size(), 4u);
  c = cli({"-D", remote(), "--json", "--boot=1", "list"});
  EXPECT_EQ(pids(c).size(), 4u);
  c = cli({"-D", remote(), "--json", "-b", std::string(kBootA) + "+1", "list"});
  EXPECT_EQ(pids(c), (std::vector<int>{104, 201}));
  // With a match, both hold.
  c = cli({"-D", remote(), "--json", "-b", "-1", "list", "server"});
  EXPECT_EQ(pids(c), (std::vector<int>{101, 103}));
  c = cli({"-D", remote(), "-b", "-5", "list"});
  EXPECT_EQ(c.rc, 1);
  EXPECT_NE(c.err.find("no such boot"), std::string::npos) << c.err;
  c = cli({"-D", remote(), "--boot=xyz", "list"});
  EXPECT_EQ(c.rc, 2) << c.err;
}

TEST_F(JournalFleet, EventsByNameUseTheIndex) {
  Cli c = cli({"-D", remote(), "--json", "events", "--name", "REQ_PARSE"});
  ASSERT_EQ(c.rc, 0) << c.err;
  std::vector<int> pids;
  for (const auto &j : json_lines(c.out)) {
    EXPECT_EQ(j["event"]["name"], "REQ_PARSE");
    pids.push_back(j["pid"].get<int>());
  }
  EXPECT_EQ(pids, (std::vector<int>{101, 103, 201}));
  c = cli({"-D", remote(), "events", "--name", "NO_SUCH_EVENT"});
  EXPECT_EQ(c.rc, 1) << c.err;
  c = cli({"-D", remote(), "--json", "events", "--kind", "CRASH", "server"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(json_lines(c.out).size(), 4u);
}

TEST_F(JournalFleet, ShowExportAndDiffReadTheEntrysDocument) {
  Cli c = cli({"-D", remote(), "show", "103"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.out, "core-timeline: core-only, pid 103 (server), 3 events\n");
  c = cli({"-D", remote(), "show", "server"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("pid 201 (server)"), std::string::npos) << c.out;  // the newest
  EXPECT_NE(c.err.find("4 timelines match"), std::string::npos) << c.err;
  c = cli({"-D", remote(), "--json", "show", "102"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(json::parse(c.out), docs_[1]);
  // export and diff: the same as from a file with the same document.
  TempDir files;
  const json &d = docs_[1];
  const std::string name = "core.worker.1000." + std::string(kBootA) + ".102." +
                           d["coredump"]["fields"]["COREDUMP_TIMESTAMP"].get<std::string>() + ".timeline.json";
  std::ofstream(files.path() + "/" + name) << d.dump(2) << "\n";
  std::ofstream(files.path() + "/core.server.1000." + std::string(kBootA) + ".101." +
                docs_[0]["coredump"]["fields"]["COREDUMP_TIMESTAMP"].get<std::string>() + ".timeline.json")
      << docs_[0].dump(2) << "\n";
  c = cli({"-D", remote(), "export", "--format=chrome-trace", "102"});
  ASSERT_EQ(c.rc, 0) << c.err;
  const json trace = json::parse(c.out);
  EXPECT_TRUE(trace.contains("traceEvents")) << c.out.substr(0, 200);
  const Cli from_file = cli({"-D", files.path(), "export", "--format=chrome-trace", "102"});
  ASSERT_EQ(from_file.rc, 0) << from_file.err;
  EXPECT_EQ(c.out, from_file.out);
  const Cli diff_file = cli({"-D", files.path(), "--json", "diff", "101", "102"});
  ASSERT_EQ(diff_file.rc, 0) << diff_file.err;
  c = cli({"-D", remote(), "--json", "diff", "101", "102"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("REQ_PARSE"), std::string::npos) << c.out;
  json dj = json::parse(c.out), df = json::parse(diff_file.out);
  // The sides name their source as list --json does: "file" a path (the
  // file the entry names), never words; "source" and "entry_cursor".
  for (const char *side : {"a", "b"}) {
    EXPECT_EQ(dj[side]["file"], std::string("/var/lib/systemd/coredump/core.") + (side[0] == 'a' ? "server" : "worker") +
                                    ".timeline.json")
        << dj[side];
    EXPECT_EQ(dj[side]["source"], "journal");
    EXPECT_TRUE(dj[side]["entry_cursor"].is_string()) << dj[side];
    EXPECT_TRUE(df[side]["file"].get<std::string>().starts_with(files.path() + "/core.")) << df[side];
    EXPECT_EQ(df[side]["source"], "file");
    EXPECT_TRUE(df[side]["entry_cursor"].is_null()) << df[side];
  }
  const Cli text = cli({"-D", remote(), "diff", "101", "102"});
  EXPECT_TRUE(text.out.starts_with("A: timeline the journal entry for /var/lib/systemd/coredump/core.server.timeline.json"))
      << "the text still names the entry: " << text.out;
  // The rest is the same.
  for (json *j : {&dj, &df})
    for (const char *side : {"a", "b"})
      if (j->contains(side) && (*j)[side].is_object())
        for (const char *k : {"file", "source", "entry_cursor"}) (*j)[side].erase(k);
  EXPECT_EQ(dj, df);
}

// Guards against: the last event taking the shape of where the row came
// from: a journal entry's summary (the name alone) when the index decides
// the match, the document's whole event (name and arguments) when a match
// needs the document.  One shape: {"name": N}, and the name in LAST EVENT.
TEST_F(JournalFleet, TheLastEventHasOneShapeForEveryMatchForm) {
  std::optional<json> shape;
  std::optional<std::string> column;
  for (const std::vector<std::string> &match : std::vector<std::vector<std::string>>{
           {"101"}, {"COREDUMP_PID=101"}, {"101", "COREDUMP_CMDLINE=server --serve"}, {"101", "process.comm=server"}}) {
    std::vector<std::string> args{"-D", remote(), "--json", "list"};
    args.insert(args.end(), match.begin(), match.end());
    const Cli js = cli(args);
    ASSERT_EQ(js.rc, 0) << js.err;
    const auto rows = json_lines(js.out);
    ASSERT_EQ(rows.size(), 1u) << js.out;
    EXPECT_EQ(rows[0]["last_event"], (json{{"name", "BEFORE_DIE"}})) << match.back();
    if (!shape) shape = rows[0]["last_event"];
    EXPECT_EQ(rows[0]["last_event"], *shape) << match.back();
    args.erase(args.begin() + 2);
    const auto text = lines_of(cli(args).out);
    ASSERT_EQ(text.size(), 2u);
    const std::string last = text[1].substr(text[0].find("LAST EVENT"));
    EXPECT_EQ(last, "BEFORE_DIE") << text[1];
    if (!column) column = last;
    EXPECT_EQ(last, *column) << match.back();
  }
}

// Guards against: list naming the lane bookkeeping as a crash's last
// event.  A daemon from before is_bookkeeping_event() wrote a LANE_CLAIM
// into CORE_TIMELINE_LAST_EVENT when it came last: such an entry's
// document is read for the event before it; --all names the LANE_CLAIM.
TEST(JournalEntries, AnOlderEntryNamingBookkeepingAsItsLastEventIsReadFromItsDocument) {
  if (access(kJournalRemote, X_OK) != 0) GTEST_SKIP() << kJournalRemote << " is missing";
  TempDir dir;
  json d = document(401, "server", kBootA, kT0, {"REQ_PARSE", "BEFORE_DIE"});
  d["events"].insert(d["events"].end() - 1, json{{"seq", 9}, {"tid", 401}, {"kind", "LANE_CLAIM"},
                                                 {"name", "LANE_CLAIM"}, {"id", 0}, {"args", {65, 0}},
                                                 {"location", nullptr}});
  Fields e = entry_of(d);  // CORE_TIMELINE_LAST_EVENT=LANE_CLAIM, as that daemon wrote it
  bool named = false;
  for (const auto &[k, v] : e) named = named || (k == jf::kLastEvent && v == "LANE_CLAIM");
  ASSERT_TRUE(named);
  std::string out;
  append_export(out, e, kT0 + 700, 1000, kBootA);
  std::filesystem::create_directories(dir.path() + "/remote");
  write_journal(dir.path() + "/remote/remote-alpha.journal", out);
  const Cli list = cli({"-D", dir.path() + "/remote", "--json", "list"});
  ASSERT_EQ(list.rc, 0) << list.err;
  EXPECT_EQ(json_lines(list.out).at(0)["last_event"], (json{{"name", "BEFORE_DIE"}})) << list.out;
  const Cli all = cli({"-D", dir.path() + "/remote", "--all", "--json", "list"});
  ASSERT_EQ(all.rc, 0) << all.err;
  EXPECT_EQ(json_lines(all.out).at(0)["last_event"], (json{{"name", "LANE_CLAIM"}})) << all.out;
}

// The fields of one entry in the journal export format (the first entry
// of `text`), in order: NAME=value lines and the binary form.
Fields parse_export(const std::string &text) {
  Fields f;
  std::size_t at = 0;
  while (at < text.size() && text[at] != '\n') {
    const std::size_t nl = text.find('\n', at);
    const std::string line = text.substr(at, nl - at);
    const auto eq = line.find('=');
    if (eq != std::string::npos) {
      f.emplace_back(line.substr(0, eq), line.substr(eq + 1));
      at = nl + 1;
      continue;
    }
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= std::uint64_t(static_cast<unsigned char>(text[nl + 1 + i])) << (8 * i);
    f.emplace_back(line, text.substr(nl + 9, n));
    at = nl + 9 + n + 1;
  }
  return f;
}

std::string field(const Fields &f, const std::string &name) {
  for (const auto &[k, v] : f)
    if (k == name) return v;
  return {};
}

// Guards against: the layout of today's daemon (a timeline entry without
// its document, the document in an entry of its own) leaving the entries
// earlier daemons logged unread.  The fixture is a real timeline entry
// with its document inside, as core-timelined of the previous layout sent
// it to journald (journalctl -o export); it goes into a journal file
// through systemd-journal-remote beside an entry of the new layout for
// another crash with the same document, and list, show, export and diff
// read both.
TEST(JournalEntries, AnEntryWithItsDocumentInsideAsEarlierDaemonsLoggedItStillReads) {
  if (access(kJournalRemote, X_OK) != 0) GTEST_SKIP() << kJournalRemote << " is missing";
  std::ifstream in(CT_OLD_ENTRY_FIXTURE, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Fields old = parse_export(text);
  const std::string doc_bytes = field(old, std::string(jf::kDocument));
  ASSERT_FALSE(doc_bytes.empty()) << "the fixture carries its document";
  ASSERT_EQ(field(old, std::string(jf::kDocumentId)), "");
  const json doc = json::parse(doc_bytes);
  const std::string pid = field(old, "COREDUMP_PID"), boot = field(old, "_BOOT_ID");
  const auto realtime = std::stoull(field(old, "__REALTIME_TIMESTAMP"));
  Fields entry;
  for (const auto &kv : old)
    if (!kv.first.starts_with("__")) entry.push_back(kv);
  // The same crash once more as today's daemon sends it, as pid + 1.
  Fields now = entry;
  set(now, "COREDUMP_PID", std::to_string(std::stoul(pid) + 1));
  set(now, "_PID", "77");
  auto pair = jf::split_document(now, "00112233445566778899aabbccddeeff");
  ASSERT_TRUE(pair.document.has_value());
  for (const char *k : {"_UID", "_TRANSPORT", "_PID", "_HOSTNAME"}) set(*pair.document, k, field(now, k));
  std::string out;
  append_export(out, entry, realtime, 1000, boot);
  append_export(out, *pair.document, realtime + 10, 1001, boot);
  append_export(out, pair.timeline, realtime + 11, 1002, boot);
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/remote");
  write_journal(dir.path() + "/remote/remote.journal", out);
  const std::string d = dir.path() + "/remote";
  const Cli list = cli({"-D", d, "--json", "list"});
  ASSERT_EQ(list.rc, 0) << list.err;
  const auto rows = json_lines(list.out);
  ASSERT_EQ(rows.size(), 2u) << list.out;
  for (const auto &r : rows) {
    EXPECT_EQ(r["status"], "ok") << r;
    EXPECT_EQ(r["events"], doc["events"].size()) << r;
  }
  std::vector<std::string> shown;
  for (const std::string &p : {pid, std::to_string(std::stoul(pid) + 1)}) {
    const Cli show = cli({"-D", d, "show", p});
    ASSERT_EQ(show.rc, 0) << p << ": " << show.err;
    EXPECT_NE(show.out.find("BEFORE_DIE       arg=1001"), std::string::npos) << show.out;
    shown.push_back(show.out);
    const Cli j = cli({"-D", d, "--json", "show", p});
    ASSERT_EQ(j.rc, 0) << j.err;
    EXPECT_EQ(json::parse(j.out), doc) << p;
  }
  EXPECT_EQ(shown[0], shown[1]) << "the same document shows the same from either layout";
  const Cli e1 = cli({"-D", d, "export", "--format=chrome-trace", pid});
  const Cli e2 = cli({"-D", d, "export", "--format=chrome-trace", std::to_string(std::stoul(pid) + 1)});
  ASSERT_EQ(e1.rc, 0) << e1.err;
  ASSERT_EQ(e2.rc, 0) << e2.err;
  EXPECT_TRUE(json::parse(e1.out).contains("traceEvents"));
  EXPECT_EQ(e1.out, e2.out) << "the same document gives the same export from either layout";
  const Cli diff = cli({"-D", d, "--json", "diff", pid, std::to_string(std::stoul(pid) + 1)});
  ASSERT_EQ(diff.rc, 0) << diff.err;
  const json dj = json::parse(diff.out);
  EXPECT_EQ(dj["a"]["source"], "journal");
  EXPECT_EQ(dj["b"]["source"], "journal");
}

TEST(JournalSources, MachineWithoutMachinedIsAnError) {
  // No systemd-machined runs here, so -M can only be shown to fail
  // cleanly: journalctl -M's path (machined's OpenMachineRootDirectory).
  const Cli c = cli({"-M", "no-such-machine", "list"});
  EXPECT_EQ(c.rc, 4) << c.out << c.err;
  EXPECT_NE(c.err.find("cannot open the journal of machine \"no-such-machine\""), std::string::npos) << c.err;
  const Cli both = cli({"-M", "x", "--file", "/tmp/x.journal", "list"});
  EXPECT_EQ(both.rc, 2) << both.err;
}

// Entries without documents, cut documents, and a crash in both a file and
// the journal.
TEST_F(JournalFleet, CutDocumentsEntriesWithoutDocumentsAndPrecedence) {
  TempDir d;
  const std::string timelines = d.path() + "/timelines";
  std::filesystem::create_directories(timelines);
  std::string text;
  std::uint64_t mono = 1;
  // 1. A cut document: the entry says so, the document's "cut" object too.
  json whole = document(401, "bigapp", kBootA, kT0 + 100, {"A", "B", "C", "D"});
  json cut = whole;
  cut["events"].erase(cut["events"].begin(), cut["events"].begin() + 3);
  // The members document::journal::bound_document() writes.
  cut["cut"] = {{"limit", 2048},     {"document_bytes", 9000}, {"events_total", 5}, {"events_kept", 2},
                {"text_bytes", 100}, {"text_kept_bytes", 100}, {"fields_left_out", json::array()},
                {"kept", json::array()}};
  const std::string whole_path = timelines + "/core.bigapp.1000." + std::string(kBootA) + ".401." +
                                 std::to_string(kT0 + 100) + ".timeline.json";
  Fields e = entry_of(cut);
  set(e, std::string(jf::kDocumentCut), "1");
  set(e, std::string(jf::kTimelinePath), whole_path);
  append_export(text, e, kT0 + 200, mono++, kBootA);
  // 2. No document: the notice of an older core-timelined, naming its file.
  json nodoc = document(402, "olddaemon", kBootA, kT0 + 300, {"X"});
  const std::string nodoc_path = timelines + "/core.olddaemon.1000." + std::string(kBootA) + ".402." +
                                 std::to_string(kT0 + 300) + ".timeline.json";
  Fields n = entry_of(nodoc, "alpha", /*with_document=*/false);
  set(n, std::string(jf::kTimelinePath), nodoc_path);
  append_export(text, n, kT0 + 400, mono++, kBootA);
  // 3. No document and no file.
  Fields gone = entry_of(document(403, "gone", kBootA, kT0 + 500, {"Y"}), "alpha", false);
  set(gone, std::string(jf::kTimelinePath), timelines + "/missing.timeline.json");
  append_export(text, gone, kT0 + 600, mono++, kBootA);
  // 4. The notice core-timelined logs today (daemon/src/daemon.cc report()):
  //    no COREDUMP_* fields, no document; CORE_TIMELINE_PID/_EXE/_UID.
  json notice_doc = document(404, "notice", kBootA, kT0 + 700, {"Z"});
  const std::string notice_path = timelines + "/core.notice.1000." + std::string(kBootA) + ".404." +
                                  std::to_string(kT0 + 700) + ".timeline.json";
  Fields notice{{"MESSAGE_ID", std::string(jf::kTimelineMessageId)},
                {"MESSAGE", "pid 404 (/usr/bin/notice): timeline with 2 events written to " + notice_path},
                {"_UID", "0"},
                {"_TRANSPORT", "journal"},
                {"_COMM", "core-timelined"},
                {"_HOSTNAME", "alpha"},
                {"CORE_TIMELINE_STATUS", "ok"},
                {"CORE_TIMELINE_TIMELINE", notice_path},
                {"CORE_TIMELINE_EXE", "/usr/bin/notice"},
                {"CORE_TIMELINE_UID", "1000"},
                {"CORE_TIMELINE_PID", "404"}};
  append_export(text, notice, kT0 + 800, mono++, kBootA);
  const std::string jdir = d.path() + "/journal";
  std::filesystem::create_directories(jdir);
  write_journal(jdir + "/remote-alpha.journal", text);
  // The whole file of the cut crash, and the file of the no-document one.
  std::ofstream(whole_path) << whole.dump(2) << "\n";
  std::ofstream(nodoc_path) << nodoc.dump(2) << "\n";
  std::ofstream(notice_path) << notice_doc.dump(2) << "\n";

  // The notice: found by its pid, executable and uid; shown from its file.
  Cli n4 = cli({"-D", jdir, "--json", "list", "404"});
  ASSERT_EQ(n4.rc, 0) << n4.err;
  ASSERT_EQ(json_lines(n4.out).size(), 1u) << n4.out;
  EXPECT_EQ(json_lines(n4.out)[0]["exe"], "/usr/bin/notice");
  EXPECT_EQ(json_lines(n4.out)[0]["events"], 2);  // from the file it names
  EXPECT_EQ(json_lines(n4.out)[0]["last_event"]["name"], "Z");
  n4 = cli({"-D", jdir, "--json", "list", "/usr/bin/notice", "COREDUMP_UID=1000"});
  EXPECT_EQ(json_lines(n4.out).size(), 1u) << n4.out << n4.err;
  n4 = cli({"-D", jdir, "show", "404"});
  ASSERT_EQ(n4.rc, 0) << n4.err;
  EXPECT_NE(n4.out.find("pid 404 (notice)"), std::string::npos) << n4.out;
  n4 = cli({"-D", jdir, "list", "404", "notice"});  // COREDUMP_COMM: the notice has none
  EXPECT_EQ(n4.rc, 1) << n4.out;

  // list: from the entries alone (no document read), all three.
  Cli c = cli({"-D", jdir, "--json", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  auto rows = json_lines(c.out);
  ASSERT_EQ(rows.size(), 4u) << c.out;
  EXPECT_EQ(rows[0]["pid"], 401);
  EXPECT_EQ(rows[0]["cut"], true);
  // show of the cut one: the cut document, and a note where the whole is.
  c = cli({"-D", jdir, "show", "401"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.err.find("cut to fit its journal entry"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("2 of 5 events kept, the document cut to at most 2048 bytes of its 9000"), std::string::npos)
      << c.err;
  for (const char *missing : {" - ", " -;", " -)"})  // scalar_text() of a member the cut object lacks
    EXPECT_EQ(c.err.find(missing), std::string::npos) << "a member the cut object does not have:\n" << c.err;
  // The entry came from host alpha, not this machine: its file is there.
  EXPECT_NE(c.err.find("the whole timeline is on host alpha at " + whole_path), std::string::npos) << c.err;
  // show of the entry without a document: the file it names.
  c = cli({"-D", jdir, "--json", "show", "402"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(json::parse(c.out), nodoc);
  c = cli({"-D", jdir, "show", "403"});
  EXPECT_EQ(c.rc, 3) << c.err;
  EXPECT_NE(c.err.find("missing.timeline.json"), std::string::npos) << c.err;
  // events: the cut document's events, the file's for 402; 403 unreadable.
  c = cli({"-D", jdir, "--json", "events", "--kind", "USER"});
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(json_lines(c.out).size(), 3u) << c.out;  // D (cut), X and Z (files)
  EXPECT_NE(c.err.find("1 timeline or directory could not be read"), std::string::npos) << c.err;

  // Both sources: -D on the journal and -D on the timeline files.  The
  // crashes both have are listed once, from the file.
  c = cli({"-D", jdir, "-D", timelines, "--json", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  rows = json_lines(c.out);
  ASSERT_EQ(rows.size(), 4u) << c.out;
  EXPECT_EQ(rows[0]["pid"], 401);
  EXPECT_EQ(rows[0]["source"], "file");
  EXPECT_EQ(rows[0]["events"], 5);
  EXPECT_EQ(rows[1]["source"], "file");
  EXPECT_EQ(rows[2]["source"], "journal");
  EXPECT_EQ(rows[3]["pid"], 404);  // the notice: the same crash by the file it names
  EXPECT_EQ(rows[3]["source"], "file");
  c = cli({"-D", jdir, "-D", timelines, "show", "401"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.err.find("cut"), std::string::npos) << c.err;  // the whole file won
  EXPECT_NE(c.out.find("5 events"), std::string::npos) << c.out;
}

// An entry only its crashed user vouches for (_UID == COREDUMP_UID, not
// core-timelined's cgroup: journal_entry.h sender_trust() kUser) counts
// only when the root-owned timeline file of that very crash backs it
// (journal_source.h corroborated()).  The files here are root's (the test runs as
// root, as CI does) in directories made for each case.
TEST(JournalTrust, UserVouchedEntriesCountOnlyWhenARootOwnedTimelineFileBacksThem) {
  if (access(kJournalRemote, X_OK) != 0) GTEST_FAIL() << kJournalRemote << " is missing";
  ASSERT_EQ(geteuid(), 0u) << "the timeline files must be root's";
  const std::string machine = ctlq::local_machine_id();
  ASSERT_FALSE(machine.empty()) << "no /etc/machine-id";
  TempDir d;
  ASSERT_EQ(chmod(d.path().c_str(), 0755), 0);
  const std::string good = d.path() + "/timelines", open = d.path() + "/open";
  std::filesystem::create_directories(good);
  std::filesystem::create_directories(open);
  ASSERT_EQ(chmod(good.c_str(), 0755), 0);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  std::string text;
  std::uint64_t mono = 1;
  // The user's entry of crash `pid`, naming its timeline in `dir`; with
  // `write_file`, that file is written with the document's bytes plus
  // `extra_bytes` spaces.
  auto entry = [&](unsigned pid, const std::string &dir, bool write_file, long extra_bytes = 0,
                   const std::string &machine_id = "") {
    const std::uint64_t ts = kT0 + pid * 1000000ull;
    json doc = document(pid, "userapp" + std::to_string(pid), kBootA, ts, {"BEFORE_DIE"});
    Fields f = entry_of(doc);
    set(f, "_UID", "1000");
    set(f, "_MACHINE_ID", machine_id.empty() ? machine : machine_id);
    const std::string path = dir + "/" + core_timeline::document::format_timeline_name(
                                             {"userapp" + std::to_string(pid), 1000, kBootA, pid, ts});
    set(f, std::string(jf::kTimelinePath), path);
    if (write_file) {
      std::ofstream(path) << doc.dump(2) << "\n" << std::string(static_cast<std::size_t>(extra_bytes), ' ');
    }
    return std::make_pair(f, ts);
  };
  auto add = [&](const std::pair<Fields, std::uint64_t> &e) { append_export(text, e.first, e.second + 700, mono++, kBootA); };
  add(entry(401, good, true));                              // backed
  auto daemon = entry(402, good, true);                     // core-timelined's cgroup
  set(daemon.first, "_SYSTEMD_CGROUP", std::string(jf::kDaemonCgroup));
  add(daemon);
  add(entry(403, good, false));                             // no file
  add(entry(404, open, true));                              // a directory anyone may write
  add(entry(405, good, true, 1));                           // not the document's size
  add(entry(406, good, true, 0, "0123456789abcdef0123456789abcdef"));  // another machine's entry
  // A later entry of crash 402 by its user, backed by the same file, that
  // tells another story: core-timelined's own entry stays the row.
  auto retold = entry(402, good, false);
  set(retold.first, std::string(jf::kLastEvent), "RETOLD");
  add(retold);
  const std::string jdir = d.path() + "/journal";
  std::filesystem::create_directories(jdir);
  write_journal(jdir + "/user-1000.journal", text);

  Cli c = cli({"-D", jdir, "--json", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  auto rows = json_lines(c.out);
  ASSERT_EQ(rows.size(), 2u) << c.out;
  EXPECT_EQ(rows[0]["pid"], 401);
  EXPECT_EQ(rows[0]["unverified"], false);
  EXPECT_EQ(rows[1]["pid"], 402);
  EXPECT_EQ(rows[1]["last_event"]["name"], "BEFORE_DIE") << "the user's retelling replaced core-timelined's entry";
  EXPECT_NE(c.err.find("4 journal entries left out: only the crashed user vouches for them"), std::string::npos)
      << c.err;

  c = cli({"-D", jdir, "--unverified", "--json", "list"});
  ASSERT_EQ(c.rc, 0) << c.err;
  rows = json_lines(c.out);
  ASSERT_EQ(rows.size(), 6u) << c.out;
  for (const auto &r : rows)
    EXPECT_EQ(r["unverified"], r["pid"].get<unsigned>() >= 403) << r.dump();
  c = cli({"-D", jdir, "--unverified", "list", "403"});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("/usr/bin/userapp403 (unverified)"), std::string::npos) << c.out;

  // Empty only because of them: not "no match" (exit 3), and says why.
  c = cli({"-D", jdir, "list", "404"});
  EXPECT_EQ(c.rc, 3) << c.out << c.err;
  EXPECT_NE(c.err.find("an unverified one may match (--unverified)"), std::string::npos) << c.err;
  c = cli({"-D", jdir, "show", "405"});
  EXPECT_EQ(c.rc, 3) << c.out << c.err;
  c = cli({"-D", jdir, "list", "999"});
  EXPECT_EQ(c.rc, 1) << c.err;
}

// journald of systemd 252 truncates a journal file when it archives it at
// rotation, and sd-journal reads by mmap: a query running then touched a
// page past the new end and ctl-query died of SIGBUS.  Now the pages read
// as zeros while the journal is read (common/sigbus.h), and a scan during
// which that happened fails, saying so, instead of answering from zeros;
// the handler is gone again afterwards (a core ctl-query maps must still
// be a SIGBUS when cut, never zeros).
TEST(JournalTruncation, AFileCutUnderTheScanIsAnErrorNotASigbusNorAnAnswer) {
  TempDir d;
  constexpr unsigned kEntries = 200;
  std::string text;
  std::uint64_t x = 88172645463325252ull;  // xorshift64
  for (unsigned i = 0; i < kEntries; ++i) {
    const std::uint64_t ts = kT0 + i * 1000000ull;
    Fields f = entry_of(document(1000 + i, "padapp", kBootA, ts, {"E"}));
    // 8 KiB of a field no other entry has, so the entries fill > 1 MiB.
    std::string pad;
    while (pad.size() < 8192) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      pad += "0123456789abcdef"[x & 15];
    }
    set(f, "PADDING", pad);
    append_export(text, f, ts + 700, i + 1, kBootA);
  }
  const std::string file = d.path() + "/big.journal";
  ASSERT_NO_FATAL_FAILURE(write_journal(file, text));
  ASSERT_GT(std::filesystem::file_size(file), 1u << 20);
  ctlq::JournalSpec spec;
  spec.kind = ctlq::JournalSpec::Kind::kFiles;
  spec.files = {file};
  auto j = ctlq::Journal::open(spec);
  ASSERT_TRUE(j) << j.error().message;
  struct sigaction before {}, now {};
  ASSERT_EQ(sigaction(SIGBUS, nullptr, &before), 0);  // SIG_DFL, or a sanitizer's
  const std::uint64_t pages = core_timeline::sigbus::zeroed_pages();
  unsigned seen = 0;
  auto r = (*j)->scan({}, [&](ctlq::JournalEntry &&e) {
    EXPECT_EQ(e.get("COREDUMP_PID"), std::to_string(1000 + seen)) << "made up or out of order";
    // Cut the file at 512 KiB, among the entries' objects, while it is mapped.
    if (seen++ == 0) {
      EXPECT_EQ(truncate(file.c_str(), 512 << 10), 0);
    }
  });
  ASSERT_GT(core_timeline::sigbus::zeroed_pages(), pages) << "the scan never reached the cut: the test proves nothing";
  ASSERT_FALSE(r) << "an answer from zeros: " << *r << " entries left out, " << seen << " handed on";
  EXPECT_NE(r.error().message.find("a journal file was truncated while timeline entries were read"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("run the query again"), std::string::npos) << r.error().message;
  EXPECT_LT(seen, kEntries);
  ASSERT_EQ(sigaction(SIGBUS, nullptr, &now), 0);
  EXPECT_TRUE(now.sa_handler == before.sa_handler && now.sa_flags == before.sa_flags)
      << "the handler outlived the scan";
  std::fprintf(stderr, "handed on %u of %u entries, then: %s\n", seen, kEntries, r.error().message.c_str());
}

// Two hosts' journals (-D A -D B), each host's crash with the same boot id
// (containers of one kernel share it), pid and crash time, and each
// timeline entry with the same __REALTIME_TIMESTAMP: two crashes, not one.
// list shows both, and show, events and export read the document of the
// host asked for: the entry itself, never the other host's that
// sd-journal's merged view puts first after a seek to its cursor.
TEST(JournalTwoHosts, EntriesOfEqualTimeFromTwoHostsAreReadByTheirIdentity) {
  if (access(kJournalRemote, X_OK) != 0) GTEST_SKIP() << kJournalRemote << " is missing";
  TempDir d;
  const std::vector<std::pair<std::string, std::string>> hosts{{"alpha", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"},
                                                               {"beta", "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2"}};
  std::map<std::string, json> docs;  // "host/pid" -> its document
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    const auto &[host, machine] = hosts[h];
    std::string upper = host;
    for (char &ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    std::string text;
    // The same crash key on both hosts, and a crash of each host's own
    // (pid 710 + h) at the same time too.
    for (unsigned pid : {700u, 710u + static_cast<unsigned>(h)}) {
      json doc = document(pid, "server", kBootA, kT0, {upper + "_EVENT"}, host);
      doc["coredump"]["fields"]["_MACHINE_ID"] = machine;
      docs[host + "/" + std::to_string(pid)] = doc;
      // Each host's document in a timeline directory of its own, to export
      // from a file too.
      const std::string fdir = d.path() + "/files-" + host + "-" + std::to_string(pid);
      std::filesystem::create_directories(fdir);
      std::ofstream(fdir + "/core.server.1000." + std::string(kBootA) + "." + std::to_string(pid) + "." +
                    std::to_string(kT0) + ".timeline.json")
          << doc.dump(2) << "\n";
      Fields f = entry_of(doc, host);
      set(f, "_MACHINE_ID", machine);
      set(f, std::string(jf::kTimelinePath), "/var/lib/systemd/coredump/core.server." + host + "." + std::to_string(pid) +
                                                 ".timeline.json");
      append_export(text, f, kT0 + 700, 5000 + h * 10 + pid % 10, kBootA);
    }
    std::filesystem::create_directories(d.path() + "/" + host);
    ASSERT_NO_FATAL_FAILURE(write_journal(d.path() + "/" + host + "/remote-" + host + ".journal", text));
  }
  const std::string a = d.path() + "/alpha", b = d.path() + "/beta";
  // list: both crashes of pid 700, one per host.
  Cli c = cli({"-D", a, "-D", b, "--json", "list", "700"});
  ASSERT_EQ(c.rc, 0) << c.err;
  auto rows = json_lines(c.out);
  ASSERT_EQ(rows.size(), 2u) << c.out;
  std::set<std::string> listed_hosts;
  for (const auto &r : rows) listed_hosts.insert(r["host"].get<std::string>());
  EXPECT_EQ(listed_hosts, (std::set<std::string>{"alpha", "beta"}));
  for (const auto &[host, machine] : hosts) {
    std::string upper = host;
    for (char &ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    for (const std::string &pid : {std::string("700"), std::to_string(host == "alpha" ? 710 : 711)}) {
      c = cli({"-D", a, "-D", b, "--json", "show", pid, "_HOSTNAME=" + host});
      ASSERT_EQ(c.rc, 0) << host << " pid " << pid << ": " << c.err;
      EXPECT_EQ(json::parse(c.out), docs[host + "/" + pid]) << host << " pid " << pid;
      c = cli({"-D", a, "-D", b, "export", "--format=chrome-trace", pid, "_HOSTNAME=" + host});
      ASSERT_EQ(c.rc, 0) << host << " pid " << pid << ": " << c.err;
      const Cli from_file =
          cli({"-D", d.path() + "/files-" + host + "-" + pid, "export", "--format=chrome-trace", pid});
      ASSERT_EQ(from_file.rc, 0) << from_file.err;
      EXPECT_EQ(c.out, from_file.out) << host << " pid " << pid;
    }
    c = cli({"-D", a, "-D", b, "--json", "events", "--name", upper + "_EVENT", "_HOSTNAME=" + host});
    ASSERT_EQ(c.rc, 0) << host << ": " << c.err;
    EXPECT_EQ(json_lines(c.out).size(), 2u) << host << ":\n" << c.out;
  }
}

namespace {

// The resident size of this process's mappings of `file` (the Rss lines of
// /proc/self/smaps), in KiB.
std::uint64_t resident_kib_of(const std::string &file) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  std::uint64_t kib = 0;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') != std::string::npos &&
        line.find(' ') > line.find('-')) {
      in = line.size() >= file.size() && line.compare(line.size() - file.size(), file.size(), file) == 0;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      kib += std::stoull(line.substr(4));
    }
  }
  return kib;
}

}  // namespace

// Guards against: the scan keeping mapped every journal page it read
// (sd-journal keeps its mmap windows: ctl-query list's peak resident size
// counted the whole journal beside its rows), and Journal::entry_at(), by
// which show finds list's newest entry again, giving back another entry.
TEST(JournalScan, LetsGoOfThePagesItReadAndFindsAnEntryAgainByItsCursor) {
  if (access(kJournalRemote, X_OK) != 0) GTEST_SKIP() << kJournalRemote << " is missing";
  TempDir d;
  constexpr unsigned kEntries = 6000;  // past one page drop (every 4096 entries) and the last
  std::string text;
  for (unsigned i = 0; i < kEntries; ++i) {
    const std::uint64_t ts = kT0 + i * 1000000ull;
    Fields f = entry_of(document(1000 + i, "padapp", kBootA, ts, {"E"}), "alpha", false);
    std::string pad = std::to_string(i);  // 1 KiB (before compression) no other entry has
    while (pad.size() < 1024) pad += pad;
    set(f, "PADDING", pad);
    append_export(text, f, ts + 700, i + 1, kBootA);
  }
  const std::string file = d.path() + "/pages.journal";
  ASSERT_NO_FATAL_FAILURE(write_journal(file, text));
  ctlq::JournalSpec spec;
  spec.kind = ctlq::JournalSpec::Kind::kFiles;
  spec.files = {file};
  auto j = ctlq::Journal::open(spec);
  ASSERT_TRUE(j) << j.error().message;
  unsigned seen = 0;
  std::uint64_t resident_during = 0;
  std::vector<std::pair<std::string, std::string>> kept;  // cursor, COREDUMP_PID
  auto r = (*j)->scan({}, [&](ctlq::JournalEntry &&e) {
    if (seen == 3000) resident_during = resident_kib_of(file);
    if (seen == 0 || seen == 2999 || seen == kEntries - 1) kept.emplace_back(e.cursor, e.get("COREDUMP_PID"));
    ++seen;
  });
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(seen, kEntries);
  const std::uint64_t resident_after = resident_kib_of(file);
  // 3,000 entries were read since the start (their padding stored
  // compressed): the measure sees their pages (else the check below proves
  // nothing).
  ASSERT_GT(resident_during, 1024u) << "the journal's pages are not seen in /proc/self/smaps";
  EXPECT_LE(resident_after, 64u) << "of " << resident_during << " KiB resident in the middle of the scan";
  ASSERT_EQ(kept.size(), 3u);
  for (const auto &[cursor, pid] : kept) {
    auto e = (*j)->entry_at(cursor);
    ASSERT_TRUE(e) << cursor << ": " << e.error().message;
    EXPECT_EQ(e->cursor, cursor);
    EXPECT_EQ(e->get("COREDUMP_PID"), pid) << cursor;
    EXPECT_FALSE(e->user_vouched) << "root sent it";
  }
  EXPECT_FALSE((*j)->entry_at("s=00000000000000000000000000000000;i=1"));
}
