// SPDX-License-Identifier: MIT
//
// The timeline's edges on REAL cores from the REAL systemd-coredump
// pipeline (tests/support/crash_harness.h), each a crash of edge_crasher
// (tests/crashers/edge_crasher.c), read by the real core-timeline-read and,
// for the CTF export, the real babeltrace2:
//  - arguments named like the chrome-trace export's own keys (id, kind,
//    state, ends; lane and seq through a --tlmap): no key is written twice,
//    and each argument's value is kept under its renamed key;
//  - a process named with an ESC byte: the exports write its name escaped
//    as thread names are, so no viewer and no terminal receives it raw;
//  - span tokens that name no begin, in a ring that lost nothing: such an
//    end is "no_begin", never "begin_lost"; a SPAN_END's arguments are its
//    token and begin_timestamp, not its span's argument names;
//  - 10,000 nested spans open at the crash: the headline and the crash
//    line stay short, and the JSON lists every span.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "test_util.h"
#include "trace_checks.h"

using json = nlohmann::json;
using ct::test::Ran;
namespace fs = std::filesystem;

namespace {

const std::string kReader = CT_READER_BIN;
const std::string kCrasher = CT_EDGE_CRASHER;

bool has(const std::string &h, const std::string &n) { return h.find(n) != std::string::npos; }

Ran read(const std::vector<std::string> &args) {
  std::vector<std::string> argv{kReader};
  argv.insert(argv.end(), args.begin(), args.end());
  return ct::test::run(argv, ct::test::address_space_limit(1ull << 30));
}

json read_json(const std::string &core, bool validate = true) {
  const Ran r = read({"--json", core});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  if (validate) {
    EXPECT_EQ(ct::test::schema_errors(r.out), "");
  }
  return json::parse(r.out);
}

std::string scratch_dir(const std::string &name) {
  const char *base = std::getenv("CT_TEST_CORE_DIR");
  fs::path p = fs::path(base ? base : "/tmp") / ("edge-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p.string();
}

/* Every key that occurs twice in one object of `text` (nlohmann's parse
 * keeps only the last of them, as most parsers do). */
std::vector<std::string> duplicate_keys(const std::string &text) {
  std::vector<std::set<std::string>> open;
  std::vector<std::string> dups;
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json &parsed) {
    if (ev == json::parse_event_t::object_start) open.emplace_back();
    else if (ev == json::parse_event_t::object_end) open.pop_back();
    else if (ev == json::parse_event_t::key && !open.back().insert(parsed.get<std::string>()).second)
      dups.push_back(parsed.get<std::string>());
    return true;
  };
  const json parsed = json::parse(text, cb);
  if (parsed.is_discarded()) dups.push_back("(not JSON)");
  return dups;
}

/* The ring lost nothing: no drop, no overwritten, torn, invalid or
 * missing slot in any lane. */
std::string losses(const json &doc) {
  std::ostringstream s;
  for (const auto &ring : doc["rings"]) {
    if (ring["dropped"].is_number() && ring["dropped"] != 0) s << "dropped " << ring["dropped"] << "; ";
    for (const auto &l : ring["lanes"])
      for (const char *k : {"overwritten", "torn", "invalid", "missing"})
        if (l[k] != 0) s << "lane " << l["lane"] << " " << k << " " << l[k] << "; ";
  }
  return s.str();
}

std::string babeltrace2(const std::string &dir, std::string *err = nullptr) {
  const Ran r = ct::test::run({ct::test::babeltrace2_path(), "--clock-seconds", "--no-delta", dir});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  if (err) *err = r.err;
  return r.out;
}

// Guards against: an argument named like one of the chrome-trace export's
// own keys written beside it under the same key, so that a viewer keeps
// one value and the user's is lost.
TEST(EdgeGates, ArgumentsNamedLikeTheExportsKeysKeepTheirValuesUnderKeysOfTheirOwn) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({kCrasher, "args"});
  const std::string map = ct::test::write_temp(
      [] {
        const std::string m = "0x7003 MAPPED lane seq\n";
        return std::vector<std::uint8_t>(m.begin(), m.end());
      }(),
      "tlmap");
  const Ran r = read({"--tlmap", map, "--format=chrome-trace", run.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(duplicate_keys(r.out), std::vector<std::string>{});
  const json trace = json::parse(r.out);
  EXPECT_EQ(ct::test::tef_errors(trace), "");
  std::map<std::string, json> by_name;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] != "M") by_name[e["name"]] = e;
  ASSERT_TRUE(by_name.count("CLASH") && by_name.count("SPANX") && by_name.count("MAPPED")) << r.out;
  const json &clash = by_name["CLASH"]["args"];
  EXPECT_EQ(clash["id_arg"], 11) << clash.dump();
  EXPECT_EQ(clash["kind_arg"], 12) << clash.dump();
  EXPECT_EQ(clash["id"], 0x7001) << clash.dump();
  EXPECT_EQ(clash["kind"], "USER") << clash.dump();
  const json &span = by_name["SPANX"]["args"];
  EXPECT_EQ(span["state_arg"], 13) << span.dump();
  EXPECT_EQ(span["ends_arg"], 0) << span.dump();
  EXPECT_EQ(span["state"], "open") << span.dump();
  EXPECT_TRUE(span["ends"].is_string()) << span.dump();
  const json &mapped = by_name["MAPPED"]["args"];
  EXPECT_EQ(mapped["lane_arg"], 15) << mapped.dump();
  EXPECT_EQ(mapped["seq_arg"], 16) << mapped.dump();
  EXPECT_EQ(mapped["lane"], by_name["CLASH"]["args"]["lane"]) << mapped.dump();
  EXPECT_EQ(mapped["seq"].get<std::uint64_t>(), clash["seq"].get<std::uint64_t>() + 2) << mapped.dump();
  unlink(map.c_str());
}

// Guards against: a process name's control bytes reaching a viewer or a
// terminal raw (babeltrace2 prints env.procname on every line: an ESC
// there clears the screen).
TEST(EdgeGates, AProcessNameWithAnEscapeIsWrittenEscapedByBothExports) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({kCrasher, "comm"});
  const json doc = read_json(run.core_path);
  ASSERT_EQ(doc["process"]["comm"], "ev\x1b[2Jil") << "the core's own name, the input of this test";
  const std::string escaped = "ev\\x1b[2Jil";

  const Ran r = read({"--format=chrome-trace", run.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const json trace = json::parse(r.out);
  EXPECT_EQ(trace["otherData"]["comm"], escaped);
  bool named = false;
  for (const auto &e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], escaped);
      named = true;
    }
  EXPECT_TRUE(named);
  EXPECT_FALSE(has(r.out, "\\u001b")) << "no ESC in any string of the trace";

  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it)";
  const std::string dir = scratch_dir("ctf-comm");
  const Ran c = read({"--format=ctf", "--output", dir, run.core_path});
  ASSERT_EQ(c.exit_code(), 0) << c.err;
  std::string err;
  const std::string out = babeltrace2(dir, &err);
  EXPECT_FALSE(has(out + err, "\x1b")) << "babeltrace2 printed a raw ESC";
  EXPECT_TRUE(has(out, escaped)) << out;
  const std::string metadata = ct::test::slurp(dir + "/metadata");
  EXPECT_FALSE(has(metadata, "\\033")) << "env.procname holds the ESC byte itself";
  fs::remove_all(dir);
}

// Guards against: an end whose token names no begin of a ring that lost
// nothing reported as "begin lost" (a loss that did not happen), and a
// SPAN_END's token and begin timestamp shown under its span's argument
// names.
TEST(EdgeGates, ATokenThatNamesNoBeginIsNotABeginLostAndAnEndsArgumentsAreItsOwn) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({kCrasher, "tokens"});
  const json doc = read_json(run.core_path);
  ASSERT_EQ(losses(doc), "") << "the ring must have lost nothing";
  std::map<std::string, std::string> note_of;  // state of each begin-less span, by note
  std::uint64_t closed = 0;
  for (const auto &sp : doc["spans"]) {
    EXPECT_NE(sp["state"], "begin_lost") << sp.dump();
    if (sp["state"] == "closed") ++closed;
    if (sp["state"] == "no_begin") note_of[sp["note"]] = sp["token"];
  }
  EXPECT_EQ(closed, 1u) << "REQ";
  EXPECT_EQ(note_of.size(), 3u) << doc["spans"].dump();
  std::vector<std::string> notes;
  for (const auto &[n, t] : note_of) notes.push_back(n);
  const auto any = [&](const std::string &part) {
    return std::any_of(notes.begin(), notes.end(), [&](const std::string &n) { return has(n, part); });
  };
  EXPECT_TRUE(any("which holds a USER event, not a span's begin")) << doc["spans"].dump();
  EXPECT_TRUE(any("which the lane never reached")) << doc["spans"].dump();
  EXPECT_TRUE(any("names no slot of this ring")) << doc["spans"].dump();
  std::size_t ends = 0;
  for (const auto &e : doc["events"]) {
    if (e["kind"] != "SPAN_END") continue;
    ++ends;
    EXPECT_EQ(e["arg_names"], json::array({"token", "begin_timestamp"})) << e.dump();
    const json &sp = doc["spans"][e["span"].get<std::size_t>()];
    EXPECT_EQ(e["args"][0].get<std::uint64_t>(), std::stoull(sp["token"].get<std::string>(), nullptr, 16));
  }
  EXPECT_EQ(ends, 4u);

  const std::string text = read({run.core_path}).out;
  EXPECT_FALSE(has(text, "begin lost")) << text;
  std::size_t not_a_span = 0;
  for (std::size_t at = 0; (at = text.find("end (not a span of this ring: its token ", at)) != std::string::npos; ++at)
    ++not_a_span;
  EXPECT_EQ(not_a_span, 3u) << text;

  const Ran r = read({"--format=chrome-trace", run.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  const json trace = json::parse(r.out);
  std::size_t instants = 0;
  for (const auto &e : trace["traceEvents"]) {
    if (e["ph"] == "M" || e.value("cat", "") != "SPAN_END") continue;
    ++instants;
    EXPECT_EQ(e["ph"], "i") << e.dump();
    EXPECT_EQ(e["args"]["state"], "no_begin") << e.dump();
    EXPECT_TRUE(e["args"].contains("token") && e["args"].contains("begin_timestamp")) << e.dump();
    EXPECT_FALSE(e["args"].contains("request_id")) << e.dump();
  }
  EXPECT_EQ(instants, 3u) << "REQ's end is its slice's end; the three others are instants";

  if (ct::test::babeltrace2_path().empty())
    GTEST_SKIP() << "babeltrace2 is not installed (packaging/install-build-deps installs it)";
  const std::string dir = scratch_dir("ctf-tokens");
  ASSERT_EQ(read({"--format=ctf", "--output", dir, run.core_path}).exit_code(), 0);
  std::string bad;
  const auto bt = ct::test::babeltrace2_events(babeltrace2(dir), &bad);
  EXPECT_EQ(bad, "");
  std::size_t bt_ends = 0, bt_no_begin = 0, req = 0;
  for (const auto &b : bt) {
    std::map<std::string, std::string> f(b.fields.begin(), b.fields.end());
    if (!f.count("span_state")) continue;
    if (b.name == "REQ" && req++ == 0) {  // REQ's begin, then its end
      EXPECT_EQ(f["request_id"], "5") << b.line;
      continue;
    }
    ++bt_ends;
    EXPECT_TRUE(f.count("token") && f.count("begin_timestamp")) << b.line;
    EXPECT_FALSE(f.count("request_id")) << b.line;
    if (f["span_state"] == "\"no_begin\"") ++bt_no_begin;
  }
  EXPECT_EQ(bt_ends, 4u);
  EXPECT_EQ(bt_no_begin, 3u);
  fs::remove_all(dir);
}

// Guards against: one line of hundreds of kilobytes (10,000 nested spans,
// every one of them in the headline and in the crash line).
TEST(EdgeGates, TenThousandNestedSpansKeepTheHeadlineShortAndTheJsonWhole) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({kCrasher, "nested", "10000"});
  const json doc = read_json(run.core_path, /*validate=*/false);
  ASSERT_EQ(losses(doc), "") << "every span's begin is in the ring";
  ASSERT_TRUE(doc["crash"].is_object());
  EXPECT_EQ(doc["crash"]["inside_spans"].size(), 10000u);
  std::size_t open = 0;
  for (const auto &t : doc["threads"])
    if (t["crashed"] == true) open = t["open_spans"].size();
  EXPECT_EQ(open, 10000u);

  const std::string text = read({run.core_path}).out;
  std::istringstream in(text);
  std::string headline, crash;
  std::size_t longest = 0;
  for (std::string line, prev; std::getline(in, line); prev = line) {
    longest = std::max(longest, line.size());
    if (prev == "open spans at the crash:") headline = line;
    if (line.rfind("crash: ", 0) == 0) crash = line;
  }
  EXPECT_LE(longest, 1024u) << "a line of " << longest << " bytes";
  for (const std::string &line : {headline, crash}) {
    SCOPED_TRACE(line.substr(0, 2048));
    EXPECT_TRUE(has(line, "DEPTH level=0 (open ")) << "the outermost span";
    EXPECT_TRUE(has(line, " > ... 9992 more spans ... > ")) << "how many are left out";
    EXPECT_TRUE(has(line, "DEPTH level=9999 (open ")) << "the innermost span, where it crashed";
  }
  EXPECT_TRUE(has(headline, "<- crashed inside"));
}


// Guards against: a budget kept by a source that records nothing while
// the sources that do record overwrite their events, or given whole to
// the first of them.  edge_crasher lend writes 600 MALLOCs and 600 READs
// and no user mark into pools of 256 (user), 128 (alloc) and 128 (io)
// slots: the allocation and the I/O lanes each spend their own pool, then
// take a second segment of 128 slots from the user pool (split lanes,
// ring format 6) and keep 256 events each, and the text says what the
// user pool lent.  The reader decodes both segments from the core, in
// order, losses counted.
TEST(EdgeGates, AnIdleSourcesPoolIsLentToTheLanesThatWrite) {
  const ct::test::CrashRun run = ct::test::run_and_collect_core({kCrasher, "lend"});
  const json doc = read_json(run.core_path);
  std::map<std::string, std::uint64_t> kinds;
  std::map<std::string, std::vector<std::uint64_t>> numbers;
  for (const auto &e : doc["events"]) {
    kinds[e["kind"].get<std::string>()]++;
    if (e["kind"] == "MALLOC" || e["kind"] == "READ")
      numbers[e["kind"].get<std::string>()].push_back(e["args"][0].get<std::uint64_t>());
  }
  EXPECT_EQ(kinds["MALLOC"], 256u) << "the allocation lane: its own pool and a segment lent";
  EXPECT_EQ(kinds["READ"], 256u) << "the I/O lane: its own pool and a segment lent";
  for (const auto &[kind, n] : numbers) {
    std::vector<std::uint64_t> sorted = n;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_FALSE(sorted.empty());
    EXPECT_EQ(sorted.front(), 600u - 256u) << kind;
    EXPECT_EQ(sorted.back(), 599u) << kind;
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << kind << ": an event twice";
  }
  std::map<std::string, json> windows;
  for (const auto &w : doc["windows"]) windows[w["source"].get<std::string>()] = w;
  for (const char *source : {"alloc", "io"}) {
    EXPECT_EQ(windows[source]["events"], 256) << windows[source].dump();
    EXPECT_EQ(windows[source]["overwritten"], 601 - 256) << "LANE_CLAIM and 600 events, 256 kept";
    EXPECT_EQ(windows[source]["dropped"], 0);
  }
  for (const auto &ring : doc["rings"])
    for (const auto &l : ring["lanes"]) {
      EXPECT_EQ(l["torn"], 0) << l.dump();
      EXPECT_EQ(l["invalid"], 0) << l.dump();
    }
  const std::string text = read({run.core_path}).out;
  EXPECT_TRUE(has(text, "pools 256/128/128 slots (user/alloc/io; user lent 256 to other sources' lanes)"))
      << text.substr(0, 2048);
}

}  // namespace
