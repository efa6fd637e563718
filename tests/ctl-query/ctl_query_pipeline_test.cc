// SPDX-License-Identifier: MIT
//
// ctl_query_pipeline_test - the ctl-query binary on timelines of real
// crashes (docs/ctl-query.md).
//
// Four real crashes go through the real pipeline (journald, the
// systemd-coredump socket): crash_demo --path=a, crash_demo --path=b,
// crash_demo_nolib (status no_ring) and crash_demo --path=a with
// coredump_filter 0x31 (status mapping_absent), each in its own second.
// Their cores are decoded by the real core-timeline-read and wrapped into
// the documents core-timelined is specified to write (test_timelines.h: a
// test helper, not the daemon).  Every expectation below is derived from
// those documents and from the fixture's documented behaviour
// (fixtures/crash_demo.c: path a records BEFORE_DIE(1001), path b
// BEFORE_DIE(2002)), never from a stored output.
//
// Needs root (the stored cores; setuid to nobody for the permission test).
#include <grp.h>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "crash_harness.h"
#include "test_timelines.h"

namespace {

using json = nlohmann::ordered_json;
using ct::test::ctlq::TestTimeline;
namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string &s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string make_temp_dir(const char *what) {
  std::string tmpl = std::string("/tmp/ctlq-") + what + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  chmod(tmpl.c_str(), 0755);
  return tmpl;
}

// Removes a directory made by make_temp_dir() when the test ends, also
// when an assertion ends it early.
struct RemoveAtExit {
  std::string path;
  ~RemoveAtExit() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Local time as "YYYY-MM-DD HH:MM:SS" (what --since takes).
std::string local_time(std::uint64_t usec) {
  time_t t = static_cast<time_t>(usec / 1000000);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// As list prints it (coredumpctl's format).
std::string list_time(std::uint64_t usec) {
  time_t t = static_cast<time_t>(usec / 1000000);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%a %Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

class CtlQuery : public ::testing::Test {
 protected:
  // In crash order (and so in time order).
  enum Which { kPathA = 0, kPathB = 1, kNoLib = 2, kAbsent = 3 };

  static void SetUpTestSuite() {
    try {
      dir_ = make_temp_dir("docs");
      struct Spec {
        std::vector<std::string> argv;
        std::optional<unsigned> filter;
      };
      const std::vector<Spec> specs = {{{CT_CRASH_DEMO, "--path=a"}, std::nullopt},
                                       {{CT_CRASH_DEMO, "--path=b"}, std::nullopt},
                                       {{CT_CRASH_DEMO_NOLIB, "--path=a"}, std::nullopt},
                                       {{CT_CRASH_DEMO, "--path=a"}, 0x31u}};
      std::uint64_t last_second = 0;
      for (const auto &s : specs) {
        // Each crash in its own second of COREDUMP_TIMESTAMP (whole seconds
        // from a clock that may lag by a tick), so time order is certain.
        while (static_cast<std::uint64_t>(time(nullptr)) < last_second + 2)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a wait on the clock itself
        ct::test::CrashOptions opts;
        opts.coredump_filter = s.filter;
        ct::test::CrashRun run = ct::test::run_and_collect_core(s.argv, opts);
        TestTimeline t = ct::test::ctlq::build_test_timeline(run, CT_READER_BIN, CT_TLMAP);
        ct::test::ctlq::write_test_timeline(dir_, t);
        last_second = std::stoull(run.journal_fields.at("COREDUMP_TIMESTAMP")) / 1000000;
        timelines_.push_back(std::move(t));
      }
    } catch (const std::exception &e) {
      setup_error_ = e.what();
    }
  }

  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    if (!setup_error_.empty()) GTEST_FAIL() << "setting up the crashes failed: " << setup_error_;
    ASSERT_EQ(timelines_.size(), 4u);
  }

  static const json &doc(Which w) { return timelines_[w].document; }
  static std::string field(Which w, const char *name) {
    return doc(w)["coredump"]["fields"].value(name, std::string());
  }
  static std::string pid(Which w) { return field(w, "COREDUMP_PID"); }
  static std::uint64_t crash_usec(Which w) { return std::stoull(field(w, "COREDUMP_TIMESTAMP")); }

  // ctl-query -D <the documents> ARGS...
  static ct::test::Ran query(std::vector<std::string> args, const std::function<void()> &in_child = {}) {
    args.insert(args.begin(), {CT_CTL_QUERY, "-D", dir_});
    ct::test::ProcessOptions o;
    o.in_child = in_child;
    return ct::test::run(args, o);
  }

  // The data lines of a list or events output (without the header).
  static std::vector<std::string> rows(const ct::test::Ran &r) {
    auto l = lines_of(r.out);
    if (!l.empty() && l[0].rfind("TIME", 0) == 0) l.erase(l.begin());
    return l;
  }

  // Which crashes a list output shows, by pid, in output order.
  static std::vector<Which> listed(const ct::test::Ran &r) {
    std::vector<Which> out;
    for (const auto &line : rows(r)) {
      std::istringstream in(line);
      std::string w[6];  // "Mon 2026-11-30 06:25:26 UTC PID ..."
      for (auto &x : w) in >> x;
      for (Which k : {kPathA, kPathB, kNoLib, kAbsent})
        if (w[4] == pid(k)) out.push_back(k);
    }
    return out;
  }

  static inline std::string dir_;
  static inline std::vector<TestTimeline> timelines_;
  static inline std::string setup_error_;
};

TEST_F(CtlQuery, TheDocumentsAreWhatTheReaderFound) {
  // The four crashes give the four statuses the test is built on.
  EXPECT_EQ(doc(kPathA)["status"], "ok");
  EXPECT_EQ(doc(kPathB)["status"], "ok");
  EXPECT_EQ(doc(kNoLib)["status"], "no_ring");
  EXPECT_EQ(doc(kAbsent)["status"], "mapping_absent");
  for (Which w : {kPathA, kPathB, kNoLib, kAbsent}) {
    EXPECT_TRUE(doc(w)["coredump"]["realtime_usec"].is_number_unsigned());
    EXPECT_TRUE(doc(w)["text"].is_string());
    EXPECT_FALSE(pid(w).empty());
  }
}

TEST_F(CtlQuery, ListShowsOneLinePerCrashInTimeOrder) {
  ct::test::Ran r = query({"list"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto l = lines_of(r.out);
  ASSERT_EQ(l.size(), 5u) << r.out;
  for (const char *col : {"TIME", "PID", "UID", "SIG", "EXE", "STATUS", "EVENTS", "LAST EVENT"})
    EXPECT_TRUE(contains(l[0], col)) << l[0];
  EXPECT_EQ(listed(r), (std::vector<Which>{kPathA, kPathB, kNoLib, kAbsent}));
  for (Which w : {kPathA, kPathB, kNoLib, kAbsent}) {
    const std::string &line = l[1 + w];
    EXPECT_EQ(line.rfind(list_time(crash_usec(w)), 0), 0u) << line;
    EXPECT_TRUE(contains(line, " " + field(w, "COREDUMP_UID") + " ")) << line;
    EXPECT_TRUE(contains(line, " " + field(w, "COREDUMP_SIGNAL_NAME") + " ")) << line;
    EXPECT_TRUE(contains(line, " " + field(w, "COREDUMP_EXE") + " ")) << line;
    EXPECT_TRUE(contains(line, " " + doc(w)["status"].get<std::string>() + " ")) << line;
    EXPECT_TRUE(contains(line, " " + std::to_string(doc(w)["events"].size()) + " ")) << line;
  }
  // The last event before the crash, from the ring: its name.
  EXPECT_TRUE(l[1 + kPathA].ends_with(" BEFORE_DIE")) << l[1 + kPathA];
  EXPECT_TRUE(l[1 + kPathB].ends_with(" BEFORE_DIE")) << l[1 + kPathB];
  EXPECT_EQ(l[1 + kNoLib].substr(l[1 + kNoLib].size() - 2), " -") << l[1 + kNoLib];
  // --no-legend drops the header only.
  ct::test::Ran bare = query({"list", "--no-legend"});
  EXPECT_EQ(lines_of(bare.out), std::vector<std::string>(l.begin() + 1, l.end()));
}

TEST_F(CtlQuery, ListJsonIsOneObjectPerLine) {
  ct::test::Ran r = query({"--json", "list"});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  auto l = lines_of(r.out);
  ASSERT_EQ(l.size(), 4u) << r.out;
  for (Which w : {kPathA, kPathB, kNoLib, kAbsent}) {
    json j = json::parse(l[w]);
    EXPECT_EQ(std::to_string(j["pid"].get<std::uint64_t>()), pid(w));
    EXPECT_EQ(std::to_string(j["uid"].get<std::uint64_t>()), field(w, "COREDUMP_UID"));
    EXPECT_EQ(j["signal_name"], field(w, "COREDUMP_SIGNAL_NAME"));
    EXPECT_EQ(j["exe"], field(w, "COREDUMP_EXE"));
    EXPECT_EQ(j["status"], doc(w)["status"]);
    EXPECT_EQ(j["events"], doc(w)["events"].size());
    EXPECT_EQ(j["time_usec"], crash_usec(w));
    EXPECT_EQ(j["realtime_usec"], doc(w)["coredump"]["realtime_usec"]);
    EXPECT_EQ(j["journal_cursor"], doc(w)["coredump"]["journal_cursor"]);
    EXPECT_EQ(j["file"], dir_ + "/" + timelines_[w].file_name);
  }
  // The last event, in the one shape a journal entry can give too: its name.
  json a = json::parse(l[kPathA]);
  EXPECT_EQ(a["last_event"], (json{{"name", "BEFORE_DIE"}}));
  EXPECT_TRUE(json::parse(l[kNoLib])["last_event"].is_null());
}

TEST_F(CtlQuery, ShowPrintsTheStoredTextOfTheNewestMatch) {
  ct::test::Ran a = query({"--all", "show", pid(kPathA)});
  ASSERT_EQ(a.exit_code(), 0) << a.err;
  EXPECT_EQ(a.out, doc(kPathA)["text"].get<std::string>());
  EXPECT_TRUE(contains(a.out, "BEFORE_DIE")) << a.out;
  EXPECT_TRUE(contains(a.out, "code=1001")) << a.out;
  EXPECT_FALSE(contains(a.out, "code=2002")) << a.out;

  // No match argument: the newest of all, and a note that others match.
  ct::test::Ran newest = query({"show"});
  ASSERT_EQ(newest.exit_code(), 0) << newest.err;
  EXPECT_EQ(newest.out, doc(kAbsent)["text"].get<std::string>());
  EXPECT_TRUE(contains(newest.err, "4 timelines match; showing the newest")) << newest.err;

  // crash_demo matches a, b and the mapping-absent one: the newest wins.
  ct::test::Ran by_comm = query({"show", "crash_demo"});
  EXPECT_EQ(by_comm.out, doc(kAbsent)["text"].get<std::string>());
  ct::test::Ran ok_only = query({"--all", "show", "status=ok"});
  EXPECT_EQ(ok_only.out, doc(kPathB)["text"].get<std::string>());

  // --json: the stored document.
  ct::test::Ran js = query({"show", "--json", pid(kPathB)});
  ASSERT_EQ(js.exit_code(), 0) << js.err;
  EXPECT_EQ(json::parse(js.out), doc(kPathB));

  ct::test::Ran none = query({"show", "1"});
  EXPECT_EQ(none.exit_code(), 1);
  EXPECT_EQ(none.out, "");
  EXPECT_TRUE(contains(none.err, "no matching timelines")) << none.err;
}

// Guards against: show printing the ring's bookkeeping (LANE_CLAIM) among
// the program's events, or hiding it without a word; show without the
// reader's view options; events printing the crash's time for every event.
// The view of a stored timeline is what core-timeline-read prints for its
// core with the same options.
TEST_F(CtlQuery, ShowLeavesOutBookkeepingAndTakesTheReadersViewOptions) {
  const json &d = doc(kPathA);
  const std::string &text = d["text"].get_ref<const std::string &>();
  std::size_t claims = 0;
  for (const auto &e : d["events"]) claims += e["kind"] == "LANE_CLAIM";
  ASSERT_GT(claims, 0u) << "crash_demo's threads claim their lanes";
  ASSERT_TRUE(contains(text, "LANE_CLAIM"));
  ct::test::Ran shown = query({"show", pid(kPathA)});
  ASSERT_EQ(shown.exit_code(), 0) << shown.err;
  EXPECT_FALSE(contains(shown.out, "LANE_CLAIM       lane=")) << shown.out;
  EXPECT_TRUE(contains(shown.out, "\nshown: " + std::to_string(d["events"].size() - claims) + " of " +
                                      std::to_string(d["events"].size()) + " events: " + std::to_string(claims) +
                                      " LANE_CLAIM left out, the ring's own bookkeeping (--all shows them)\n"))
      << shown.out;
  // Every other line of the stored text, in its order.
  std::vector<std::string> kept;
  for (const auto &line : lines_of(text))
    if (!contains(line, "LANE_CLAIM       lane=")) kept.push_back(line);
  std::vector<std::string> got = lines_of(shown.out);
  std::erase_if(got, [](const std::string &l) { return l.starts_with("shown: "); });
  EXPECT_EQ(got, kept);

  // The reader's view options, as core-timeline-read has them, on the core.
  const std::string &core = timelines_[kPathA].crash.core_path;
  for (const std::vector<std::string> &view :
       std::vector<std::vector<std::string>>{{"--wall-clock"}, {"--by-thread"}, {"--wall-clock", "--by-thread"}}) {
    std::vector<std::string> reader{CT_READER_BIN, "--tlmap", CT_TLMAP};
    reader.insert(reader.end(), view.begin(), view.end());
    reader.push_back(core);
    const ct::test::Ran want = ct::test::run(reader);
    ASSERT_EQ(want.exit_code(), 0) << want.err;
    std::vector<std::string> args{"--all", "show"};
    args.insert(args.end(), view.begin(), view.end());
    args.push_back(pid(kPathA));
    const ct::test::Ran got_view = query(args);
    ASSERT_EQ(got_view.exit_code(), 0) << got_view.err;
    EXPECT_EQ(got_view.out, want.out) << view.back();
  }
  // A thread, and the last N events.
  const json &last = d["events"][d["events"].size() - 1];
  const std::string tid = std::to_string(last["tid"].get<std::uint64_t>());
  ct::test::Ran tail = query({"show", "--tid", tid, "-n", "1", pid(kPathA)});
  ASSERT_EQ(tail.exit_code(), 0) << tail.err;
  EXPECT_TRUE(contains(tail.out, "\nshown: 1 of " + std::to_string(d["events"].size()) + " events: tid " + tid +
                                     " only; the last 1; "))
      << tail.out;
  std::size_t event_lines = 0;
  for (const auto &line : lines_of(tail.out))  // "  -0.275ms tid T ...", not "  tid T" (open spans) nor "crash: ..."
    event_lines += line.starts_with(" ") && !line.starts_with("  tid ") && contains(line, " tid " + tid + " ");
  EXPECT_EQ(event_lines, 1u) << tail.out;
  EXPECT_TRUE(contains(tail.out, " CRASH ")) << tail.out;

  // events: each event's own time, to the microsecond.
  ct::test::Ran ev = query({"--all", "events", pid(kPathA)});
  auto l = rows(ev);
  ASSERT_EQ(l.size(), d["events"].size()) << ev.out;
  for (std::size_t i = 0; i < l.size(); ++i) {
    const json &t = d["events"][i]["time_ns"];
    ASSERT_TRUE(t.is_number_integer()) << "crash_demo's events are placed in time: " << d["events"][i];
    const std::uint64_t usec = t.get<std::uint64_t>() / 1000;
    char frac[16];
    snprintf(frac, sizeof frac, ".%06llu", static_cast<unsigned long long>(usec % 1000000));
    std::string want = list_time(usec);
    want.insert(want.rfind(' '), frac);
    EXPECT_TRUE(l[i].starts_with(want + " ")) << l[i] << " does not start with " << want;
  }
}

TEST_F(CtlQuery, EventsFindsEventsAcrossTimelines) {
  ct::test::Ran one = query({"events", "--name", "BEFORE_DIE", "--arg", "1001"});
  ASSERT_EQ(one.exit_code(), 0) << one.err;
  auto l = rows(one);
  ASSERT_EQ(l.size(), 1u) << one.out;
  for (const std::string &s : {pid(kPathA), field(kPathA, "COREDUMP_EXE"), std::string("BEFORE_DIE"),
                               std::string("code=1001"), std::string("path_a+"), std::string("crash_demo.c:")})
    EXPECT_TRUE(contains(l[0], s)) << "missing " << s << " in " << l[0];
  for (const char *col : {"TIME", "PID", "EXE", "TID", "EVENT", "ARGS", "LOCATION"})
    EXPECT_TRUE(contains(lines_of(one.out)[0], col));

  // Both paths, in time order; the same with the id in hex.
  ct::test::Ran both = query({"events", "--name", "BEFORE_DIE"});
  l = rows(both);
  ASSERT_EQ(l.size(), 2u) << both.out;
  EXPECT_TRUE(contains(l[0], "code=1001") && contains(l[0], " " + pid(kPathA) + " ")) << l[0];
  EXPECT_TRUE(contains(l[1], "code=2002") && contains(l[1], " " + pid(kPathB) + " ")) << l[1];
  std::uint64_t id = 0;
  for (const auto &e : doc(kPathA)["events"])
    if (e["name"] == "BEFORE_DIE") id = e["id"];
  ASSERT_NE(id, 0u);
  ct::test::Ran by_id = query({"events", "--kind", "USER", "--id", "0x" + [&] {
                                 std::ostringstream h;
                                 h << std::hex << id;
                                 return h.str();
                               }()});
  EXPECT_EQ(rows(by_id).size(), 2u) << by_id.out;

  ct::test::Ran js = query({"--json", "events", "--name", "BEFORE_DIE"});
  auto jl = lines_of(js.out);
  ASSERT_EQ(jl.size(), 2u);
  json first = json::parse(jl[0]), second = json::parse(jl[1]);
  EXPECT_EQ(first["event"]["args"][0], 1001);
  EXPECT_EQ(second["event"]["args"][0], 2002);
  EXPECT_EQ(std::to_string(second["pid"].get<std::uint64_t>()), pid(kPathB));
  EXPECT_EQ(first["file"], dir_ + "/" + timelines_[kPathA].file_name);

  // One CRASH event per timeline that holds a ring.
  EXPECT_EQ(rows(query({"events", "--kind", "CRASH"})).size(), 2u);
  // The events of one timeline: as many as it stores, but for the ring's
  // own bookkeeping (its LANE_CLAIMs), which --all shows.
  std::size_t bookkeeping = 0;
  for (const auto &e : doc(kPathB)["events"]) bookkeeping += e["kind"] == "LANE_CLAIM";
  ASSERT_GT(bookkeeping, 0u) << "crash_demo's threads claim their lanes";
  ct::test::Ran b = query({"events", pid(kPathB)});
  EXPECT_EQ(rows(b).size(), doc(kPathB)["events"].size() - bookkeeping);
  EXPECT_FALSE(contains(b.out, "LANE_CLAIM")) << b.out;
  EXPECT_TRUE(contains(b.err, std::to_string(bookkeeping) + " bookkeeping events (LANE_CLAIM, STACK: the ring's own) "
                              "that match were left out; --all shows them"))
      << b.err;
  EXPECT_EQ(rows(query({"--all", "events", pid(kPathB)})).size(), doc(kPathB)["events"].size());

  ct::test::Ran none = query({"events", "--name", "BEFORE_DIE", "--arg", "3003"});
  EXPECT_EQ(none.exit_code(), 1);
  EXPECT_EQ(none.out, "");
}

TEST_F(CtlQuery, MatchesAsCoredumpctlTakesThem) {
  EXPECT_EQ(listed(query({"list", pid(kPathB)})), (std::vector<Which>{kPathB}));
  // Same field: either; different fields: both.
  EXPECT_EQ(listed(query({"list", pid(kPathB), pid(kPathA)})), (std::vector<Which>{kPathA, kPathB}));
  EXPECT_EQ(query({"list", pid(kPathA), field(kNoLib, "COREDUMP_COMM")}).exit_code(), 1);
  // A path is the executable.
  EXPECT_EQ(listed(query({"list", CT_CRASH_DEMO})), (std::vector<Which>{kPathA, kPathB, kAbsent}));
  EXPECT_EQ(listed(query({"list", CT_CRASH_DEMO_NOLIB})), (std::vector<Which>{kNoLib}));
  // ... relative to the current directory.
  const fs::path exe(CT_CRASH_DEMO);
  const std::string bin_dir = exe.parent_path().string();
  ct::test::Ran rel = query({"list", "./" + exe.filename().string()}, [bin_dir] {
    if (chdir(bin_dir.c_str()) != 0) _exit(126);
  });
  EXPECT_EQ(listed(rel), (std::vector<Which>{kPathA, kPathB, kAbsent})) << rel.err;
  // Anything else is the command name (truncated by the kernel to 15).
  EXPECT_EQ(listed(query({"list", "crash_demo"})), (std::vector<Which>{kPathA, kPathB, kAbsent}));
  EXPECT_EQ(listed(query({"list", field(kNoLib, "COREDUMP_COMM")})), (std::vector<Which>{kNoLib}));
  EXPECT_EQ(query({"list", "crash_dem"}).exit_code(), 1);
  // FIELD=VALUE: a journal field, or a value of the document.
  EXPECT_EQ(listed(query({"list", "COREDUMP_SIGNAL_NAME=SIGSEGV"})).size(), 4u);
  EXPECT_EQ(listed(query({"list", "COREDUMP_PID=" + pid(kNoLib)})), (std::vector<Which>{kNoLib}));
  EXPECT_EQ(listed(query({"list", "_BOOT_ID=" + field(kPathA, "_BOOT_ID")})).size(), 4u);
  EXPECT_EQ(listed(query({"list", "status=no_ring"})), (std::vector<Which>{kNoLib}));
  EXPECT_EQ(listed(query({"list", "status=mapping_absent"})), (std::vector<Which>{kAbsent}));
  EXPECT_EQ(listed(query({"list", "status=ok", "crash_demo"})), (std::vector<Which>{kPathA, kPathB}));
  EXPECT_EQ(listed(query({"list", "COREDUMP_CMDLINE=" + field(kPathB, "COREDUMP_CMDLINE")})),
            (std::vector<Which>{kPathB}));
  ct::test::Ran none = query({"list", "COREDUMP_PID=1"});
  EXPECT_EQ(none.exit_code(), 1);
  EXPECT_EQ(none.out, "");
}

TEST_F(CtlQuery, SinceAndUntilSelectByCrashTime) {
  EXPECT_EQ(listed(query({"list", "--since", local_time(crash_usec(kPathB))})),
            (std::vector<Which>{kPathB, kNoLib, kAbsent}));
  EXPECT_EQ(listed(query({"list", "--until", local_time(crash_usec(kPathA))})), (std::vector<Which>{kPathA}));
  EXPECT_EQ(listed(query({"list", "-S", local_time(crash_usec(kPathA)), "-U", local_time(crash_usec(kPathB))})),
            (std::vector<Which>{kPathA, kPathB}));
  // A time copied from list's own output.
  EXPECT_EQ(listed(query({"list", "--since", list_time(crash_usec(kAbsent))})), (std::vector<Which>{kAbsent}));
  EXPECT_EQ(listed(query({"list", "--since", "@" + std::to_string(crash_usec(kNoLib) / 1000000)})),
            (std::vector<Which>{kNoLib, kAbsent}));
  // Relative and named times: the crashes happened minutes ago at most.
  EXPECT_EQ(listed(query({"list", "--since", "-1h"})).size(), 4u);
  EXPECT_EQ(listed(query({"list", "--since", "yesterday"})).size(), 4u);
  EXPECT_EQ(query({"list", "--until", "yesterday"}).exit_code(), 1);
  EXPECT_EQ(query({"list", "--until", "-1h"}).exit_code(), 1);
  // "today": those at or after local midnight (all, unless the test ran
  // across midnight).
  time_t now = time(nullptr);
  struct tm tm {};
  localtime_r(&now, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  tm.tm_isdst = -1;
  const std::uint64_t midnight = static_cast<std::uint64_t>(mktime(&tm)) * 1000000;
  std::vector<Which> today;
  for (Which w : {kPathA, kPathB, kNoLib, kAbsent})
    if (crash_usec(w) >= midnight) today.push_back(w);
  ct::test::Ran t = query({"list", "--since", "today"});
  EXPECT_EQ(listed(t), today);
  // Events take the same times.
  EXPECT_EQ(rows(query({"events", "--name", "BEFORE_DIE", "--since", local_time(crash_usec(kPathB))})).size(),
            1u);
}

TEST_F(CtlQuery, ReverseAndLimitsAsCoredumpctl) {
  EXPECT_EQ(listed(query({"list", "-r"})), (std::vector<Which>{kAbsent, kNoLib, kPathB, kPathA}));
  // -n without -r: the oldest N, oldest first (coredumpctl reads from the head).
  EXPECT_EQ(listed(query({"list", "-n", "2"})), (std::vector<Which>{kPathA, kPathB}));
  EXPECT_EQ(listed(query({"list", "-r", "-n", "2"})), (std::vector<Which>{kAbsent, kNoLib}));
  EXPECT_EQ(listed(query({"list", "-1"})), (std::vector<Which>{kAbsent}));
  EXPECT_EQ(listed(query({"-1", "list", "crash_demo", "status=ok"})), (std::vector<Which>{kPathB}));
  // On events, -n and -1 count event lines.
  auto l = rows(query({"events", "--name", "BEFORE_DIE", "-1"}));
  ASSERT_EQ(l.size(), 1u);
  EXPECT_TRUE(contains(l[0], "code=2002")) << l[0];
  l = rows(query({"--all", "events", pid(kPathA), "-n", "2"}));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_TRUE(contains(l[0], doc(kPathA)["events"][0]["name"].get<std::string>())) << l[0];
}

TEST_F(CtlQuery, DirectoryOption) {
  const std::string other = make_temp_dir("other");
  RemoveAtExit cleanup{other};
  // A timeline copied from another machine under any name is still read.
  {
    std::ofstream o(other + "/copied.timeline.json");
    o << doc(kPathB).dump(2);
  }
  ct::test::Ran two = ct::test::run({CT_CTL_QUERY, "-D", dir_, "-D", other, "--json", "list",
                                                   pid(kPathB)});
  ASSERT_EQ(two.exit_code(), 0) << two.err;
  // The copy is the same crash (machine, boot, pid, time): one row, whose
  // file is one of the two.
  auto l = lines_of(two.out);
  ASSERT_EQ(l.size(), 1u) << two.out;
  const std::string file = json::parse(l[0])["file"].get<std::string>();
  EXPECT_TRUE(file == other + "/copied.timeline.json" || file.rfind(dir_ + "/", 0) == 0) << file;
  ct::test::Ran only_other = ct::test::run({CT_CTL_QUERY, "-D", other, "list"});
  EXPECT_EQ(rows(only_other).size(), 1u);

  ct::test::Ran missing = ct::test::run({CT_CTL_QUERY, "-D", other + "/missing", "list"});
  EXPECT_EQ(missing.exit_code(), 4);
  EXPECT_TRUE(contains(missing.err, other + "/missing: cannot open the directory")) << missing.err;

  fs::remove(other + "/copied.timeline.json");
  ct::test::Ran empty = ct::test::run({CT_CTL_QUERY, "-D", other, "list"});
  EXPECT_EQ(empty.exit_code(), 1);
  EXPECT_TRUE(contains(empty.err, "no timelines found")) << empty.err;
}

TEST_F(CtlQuery, AnUnprivilegedUserSeesTheirOwnAndIsToldOfOthers) {
  ASSERT_EQ(geteuid(), 0u) << "this test drops from root to nobody";
  const struct passwd *nobody = getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  // One timeline nobody may read (here by owning it; core-timelined
  // copies the core's root owner and the ACL systemd-coredump gives the
  // crashed user, which ctl_query_daemon_test covers), one only root may.
  const std::string d = make_temp_dir("perm");
  RemoveAtExit cleanup{d};
  const std::string mine = ct::test::ctlq::write_test_timeline(d, timelines_[kPathA], 0640);
  const std::string theirs = ct::test::ctlq::write_test_timeline(d, timelines_[kPathB], 0640);
  ASSERT_EQ(chown(mine.c_str(), uid, gid), 0);
  auto as_nobody = [uid, gid] {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
  };
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {CT_CTL_QUERY, "-D", d});
    ct::test::ProcessOptions o;
    o.in_child = as_nobody;
    return ct::test::run(args, o);
  };

  ct::test::Ran r = run({"list"});
  ASSERT_NE(r.exit_code(), 126) << "could not become nobody";
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  auto l = rows(r);
  ASSERT_EQ(l.size(), 1u) << r.out;
  EXPECT_TRUE(contains(l[0], " " + pid(kPathA) + " ")) << l[0];
  EXPECT_FALSE(contains(r.out, pid(kPathB)));
  EXPECT_TRUE(contains(r.err, "ctl-query: " + theirs + ": permission denied")) << r.err;
  EXPECT_TRUE(contains(r.err, "1 timeline or directory could not be read (1 another user's)")) << r.err;
  EXPECT_TRUE(contains(r.err, "by its name: another user's crash")) << r.err;
  EXPECT_FALSE(contains(r.err, mine)) << r.err;

  // Asking for the other user's crash: not "no match" (1) but 3.
  ct::test::Ran other = run({"list", pid(kPathB)});
  EXPECT_EQ(other.exit_code(), 3) << other.out << other.err;
  EXPECT_TRUE(contains(other.err, theirs + ": permission denied")) << other.err;
  EXPECT_FALSE(contains(other.err, "no matching timelines")) << other.err;
  // Asking for one's own: its name rules the other out, nothing to report.
  ct::test::Ran own = run({"list", pid(kPathA)});
  EXPECT_EQ(own.exit_code(), 0);
  EXPECT_EQ(own.err, "");
  // show and events read what they may and say what they may not.
  ct::test::Ran show = run({"--all", "show"});
  EXPECT_EQ(show.exit_code(), 0) << show.err;
  EXPECT_EQ(show.out, doc(kPathA)["text"].get<std::string>());
  EXPECT_TRUE(contains(show.err, "permission denied")) << show.err;
  ct::test::Ran ev = run({"events", "--name", "BEFORE_DIE"});
  EXPECT_EQ(rows(ev).size(), 1u) << ev.out;
  EXPECT_TRUE(contains(ev.err, "permission denied")) << ev.err;

  // Root reads both.
  ct::test::Ran root = ct::test::run({CT_CTL_QUERY, "-D", d, "list"});
  EXPECT_EQ(rows(root).size(), 2u);
  EXPECT_EQ(root.err, "");
}

TEST_F(CtlQuery, MalformedAndHugeDocumentsAreReportedAndSkipped) {
  const std::string d = make_temp_dir("bad");
  RemoveAtExit cleanup{d};
  ct::test::ctlq::write_test_timeline(d, timelines_[kPathA]);
  // b's document cut in half (a copy interrupted), under b's name.
  const std::string b = doc(kPathB).dump(2);
  {
    std::ofstream o(d + "/" + timelines_[kPathB].file_name);
    o << b.substr(0, b.size() / 2);
  }
  {
    std::ofstream o(d + "/array.timeline.json");
    o << "[]";
  }
  {
    std::ofstream o(d + "/deep.timeline.json");
    o << "{\"status\":" << std::string(1 << 20, '[') << std::string(1 << 20, ']') << "}";
  }
  {
    std::ofstream o(d + "/garbage.timeline.json", std::ios::binary);
    for (int i = 0; i < 4096; ++i) o.put(static_cast<char>((i * 131 + 7) & 0xff));
  }
  {
    std::ofstream o(d + "/huge.timeline.json");  // 1 GiB, sparse: never read
  }
  fs::resize_file(d + "/huge.timeline.json", 1ull << 30);
  fs::create_symlink(timelines_[kPathA].file_name, d + "/link.timeline.json");

  ct::test::Ran r = ct::test::run({CT_CTL_QUERY, "-D", d, "list"});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(listed(r), (std::vector<Which>{kPathA}));
  for (const std::string &s : {timelines_[kPathB].file_name + ": malformed: ",
                               std::string("array.timeline.json: malformed: the document is not a JSON object"),
                               std::string("deep.timeline.json: malformed: nested deeper than 64 levels"),
                               std::string("garbage.timeline.json: malformed: "),
                               std::string("huge.timeline.json: too large (1073741824 bytes"),
                               std::string("link.timeline.json: is a symbolic link, not followed"),
                               std::string("6 timelines or directories could not be read")})
    EXPECT_TRUE(contains(r.err, s)) << "missing \"" << s << "\" in:\n" << r.err;
  // Only the cut-off document could be b's: "cannot tell", never "no match".
  ct::test::Ran b_only = ct::test::run({CT_CTL_QUERY, "-D", d, "list", pid(kPathB)});
  EXPECT_EQ(b_only.exit_code(), 3) << b_only.err;
  // show validates the whole document before printing it.
  ct::test::Ran show_b = ct::test::run({CT_CTL_QUERY, "-D", d, "show", "--json", pid(kPathA)});
  EXPECT_EQ(show_b.exit_code(), 0) << show_b.err;
  EXPECT_EQ(json::parse(show_b.out), doc(kPathA));
}

// Not a time limit (the machine may be busy): the time is printed and
// recorded (ctest --output-on-failure / the XML report), and the test checks
// that every timeline is listed and that a pid match does not open them all.
TEST_F(CtlQuery, TenThousandTimelines) {
  constexpr int kCount = 10000;
  const std::string d = make_temp_dir("scale");
  RemoveAtExit cleanup{d};
  json copy = doc(kPathA);
  const std::uint64_t base = crash_usec(kPathA) - 20000ull * 1000000;
  const std::string boot = field(kPathA, "_BOOT_ID");
  std::uint64_t bytes = 0;
  for (int i = 0; i < kCount; ++i) {
    const std::uint64_t usec = base + static_cast<std::uint64_t>(i) * 1000000;
    const std::string p = std::to_string(1000000 + i);
    copy["coredump"]["fields"]["COREDUMP_PID"] = p;
    copy["coredump"]["fields"]["COREDUMP_TIMESTAMP"] = std::to_string(usec);
    copy["coredump"]["realtime_usec"] = usec + 250000;
    const std::string text = copy.dump(2, ' ', false, json::error_handler_t::replace);
    bytes += text.size();
    std::ofstream o(d + "/core.crash_demo.0." + boot + "." + p + "." + std::to_string(usec) + ".timeline.json");
    o << text;
  }
  auto timed = [&](std::vector<std::string> args, ct::test::Ran &out) {
    args.insert(args.begin(), {CT_CTL_QUERY, "-D", d});
    struct rusage before {}, after {};
    getrusage(RUSAGE_CHILDREN, &before);
    const auto t0 = std::chrono::steady_clock::now();
    out = ct::test::run(args);
    const auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    getrusage(RUSAGE_CHILDREN, &after);
    const double cpu = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
                       (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
                       (after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
                       (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
    std::ostringstream s;
    s.precision(3);
    s << std::fixed << wall << " s wall, " << cpu << " s CPU";
    return s.str();
  };
  ct::test::Ran list, one, events;
  const std::string t_list = timed({"list"}, list);
  const std::string t_one = timed({"list", std::to_string(1000000 + kCount / 2)}, one);
  const std::string t_events = timed({"events", "--name", "BEFORE_DIE", "--arg", "1001", "-1"}, events);
  std::cout << "[ ctl-query ] " << kCount << " timelines (" << bytes / kCount << " bytes each, " << bytes / 1000000
            << " MB): list " << t_list << "; list PID " << t_one << "; events --name --arg -1 " << t_events << "\n";
  RecordProperty("list_10000", t_list);
  RecordProperty("list_pid_10000", t_one);
  RecordProperty("events_10000", t_events);

  EXPECT_EQ(list.exit_code(), 0) << list.err;
  EXPECT_EQ(list.err, "");
  EXPECT_EQ(rows(list).size(), static_cast<std::size_t>(kCount));
  EXPECT_EQ(one.exit_code(), 0) << one.err;
  EXPECT_EQ(rows(one).size(), 1u);
  EXPECT_EQ(events.exit_code(), 0) << events.err;
  ASSERT_EQ(rows(events).size(), 1u);
  EXPECT_TRUE(contains(rows(events)[0], std::to_string(1000000 + kCount - 1))) << rows(events)[0];
}

}  // namespace
