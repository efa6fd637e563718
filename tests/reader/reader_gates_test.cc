// SPDX-License-Identifier: MIT
//
// The reader's acceptance gates on REAL kernel cores from the REAL
// systemd-coredump pipeline (tests/support/crash_harness.h): the fixture is
// crash_demo --path=a|b (fixtures/crash_demo.c) and crash_demo_nolib.
// Every JSON document the reader prints here is validated against
// docs/timeline.schema.json.
#include <dirent.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/symbolize.h"
#include "core_timeline/ring_format.h"
#include "crash_harness.h"
#include "test_util.h"

namespace ctr = core_timeline::reader;
namespace fmtx = core_timeline::format;
using json = nlohmann::json;
using ct::test::Ran;

namespace {

const std::string kReader = CT_READER_BIN;
const std::string kDemo = CT_CRASH_DEMO;
const std::string kNolib = CT_CRASH_DEMO_NOLIB;
const std::string kTlmap = CT_TLMAP;

struct Read {
  Ran run;
  json doc;
};

/* Runs core-timeline-read --json ARGS under a 1 GiB address-space limit
 * (memory stays bounded whatever the core says), checks the document
 * against the schema and that its exit_code is the process's. */
Read read_json(std::vector<std::string> args) {
  std::vector<std::string> argv = {kReader, "--json", "--tlmap", kTlmap};
  argv.insert(argv.end(), args.begin(), args.end());
  Read r;
  r.run = ct::test::run(argv, ct::test::address_space_limit(1ull << 30));
  r.doc = json::parse(r.run.out, nullptr, false);
  EXPECT_FALSE(r.doc.is_discarded()) << "not JSON: " << r.run.out << r.run.err;
  if (r.doc.is_discarded()) return r;
  EXPECT_EQ(ct::test::schema_errors(r.run.out), "");
  EXPECT_EQ(r.doc["exit_code"].get<int>(), r.run.exit_code());
  return r;
}

/* (name, args[0] or args[1]) of the events, without lane bookkeeping. */
std::vector<std::string> story(const json &doc) {
  std::vector<std::string> s;
  for (const auto &e : doc["events"]) {
    const std::string kind = e["kind"];
    if (kind == "LANE_CLAIM" || kind == "THREAD_NAME") continue;
    std::string name = e["name"];
    if (kind == "USER") name += "(" + std::to_string(e["args"][0].get<std::uint64_t>()) + ")";
    if (kind == "SPAN_BEGIN") name = "begin " + name + "(" + std::to_string(e["args"][0].get<std::uint64_t>()) + ")";
    if (kind == "MALLOC") name += "(" + std::to_string(e["args"][1].get<std::uint64_t>()) + ")";
    if (kind == "CRASH") name += " " + e["crash"]["signal_name"].get<std::string>();
    s.push_back(name);
  }
  return s;
}

std::string gdb_info_symbol_pc(const std::string &exe, const std::string &core) {
  Ran g = ct::test::run({"/usr/bin/gdb", "-nx", "-batch", "-ex", "info symbol $pc", exe, core});
  std::string line;
  std::size_t at = g.out.find(" in section ");
  if (at == std::string::npos) return "gdb said: " + g.out + g.err;
  std::size_t start = g.out.rfind('\n', at);
  start = start == std::string::npos ? 0 : start + 1;
  return g.out.substr(start, g.out.find('\n', at) - start);
}

std::uint64_t hex_of(const json &v) { return std::stoull(v.get<std::string>(), nullptr, 16); }

std::vector<std::uint8_t> read_file(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

class Gates : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    core_a_ = new ct::test::CrashRun(ct::test::run_and_collect_core({kDemo, "--path=a"}));
    core_b_ = new ct::test::CrashRun(ct::test::run_and_collect_core({kDemo, "--path=b"}));
  }
  static void TearDownTestSuite() {
    delete core_a_;
    delete core_b_;
  }
  static ct::test::CrashRun *core_a_, *core_b_;
};
ct::test::CrashRun *Gates::core_a_ = nullptr;
ct::test::CrashRun *Gates::core_b_ = nullptr;

/* Gate A: the same crashing instruction, two different timelines. */
TEST_F(Gates, A_TwoPathsSameInstructionDifferentTimelines) {
  Read a = read_json({"--core-only", core_a_->core_path, kDemo});
  Read b = read_json({"--core-only", core_b_->core_path, kDemo});
  ASSERT_EQ(a.run.exit_code(), 0) << a.run.err;
  ASSERT_EQ(b.run.exit_code(), 0) << b.run.err;
  EXPECT_EQ(story(a.doc), (std::vector<std::string>{"begin REQUEST(41)", "REQ_PARSE(41)", "FREE", "BEFORE_DIE(1001)", "CRASH SIGSEGV"}));
  EXPECT_EQ(story(b.doc),
            (std::vector<std::string>{"begin RELOAD(7)", "CONFIG_RELOAD(7)", "MALLOC(128)", "BEFORE_DIE(2002)", "CRASH SIGSEGV"}));
  EXPECT_NE(story(a.doc), story(b.doc));
  /* gdb names the same instruction in die() for both. */
  const std::string ga = gdb_info_symbol_pc(kDemo, core_a_->core_path);
  const std::string gb = gdb_info_symbol_pc(kDemo, core_b_->core_path);
  EXPECT_NE(ga.find("die"), std::string::npos) << ga;
  EXPECT_EQ(ga, gb);
  /* The reader agrees: the crash pc is at the same file offset, in die,
   * symbolized against a binary whose build-id the core attests. */
  for (const json *d : {&a.doc, &b.doc}) {
    const json &loc = (*d)["crash"]["location"];
    EXPECT_EQ(loc["function"], "die");
    EXPECT_EQ(loc["verified"], true);
    EXPECT_TRUE((*d)["crash"]["ring_slot"].get<bool>());
    EXPECT_EQ((*d)["rings"][0]["identity"]["pid"]["result"], "match");
    EXPECT_EQ((*d)["rings"][0]["identity"]["build_id"]["result"], "match");
    for (const auto &e : (*d)["events"]) EXPECT_EQ(e["tid"], (*d)["process"]["pid"]);
  }
  EXPECT_EQ(a.doc["crash"]["location"]["file_offset"], b.doc["crash"]["location"]["file_offset"]);
  /* The text form tells them apart too. */
  Ran ta = ct::test::run({kReader, "--core-only", "--tlmap", kTlmap, core_a_->core_path});
  EXPECT_NE(ta.out.find("REQ_PARSE"), std::string::npos) << ta.out;
  EXPECT_NE(ta.out.find("sig=SIGSEGV"), std::string::npos) << ta.out;
  EXPECT_EQ(ta.out.find("CONFIG_RELOAD"), std::string::npos) << ta.out;
}

/* Gate B: the mapping excluded (coredump_filter without bit 1) is "timeline
 * mapping absent" (2); no library at all is "no CTLN mapping found" (1). */
TEST_F(Gates, B_ExcludedMappingAndNoLibrary) {
  ct::test::CrashOptions o;
  o.coredump_filter = 0x31;
  auto ex = ct::test::run_and_collect_core({kDemo, "--path=a"}, o);
  Read r = read_json({ex.core_path});
  EXPECT_EQ(r.run.exit_code(), 2) << r.run.err;
  EXPECT_NE(r.run.err.find("timeline mapping absent"), std::string::npos) << r.run.err;
  EXPECT_NE(r.run.err.find("excluded"), std::string::npos) << r.run.err;
  EXPECT_EQ(r.doc["status"], "mapping_absent");
  EXPECT_TRUE(r.doc["events"].empty());

  auto nolib = ct::test::run_and_collect_core({kNolib, "--path=a"});
  Read n = read_json({nolib.core_path});
  EXPECT_EQ(n.run.exit_code(), 1) << n.run.err;
  EXPECT_NE(n.run.err.find("no CTLN mapping found"), std::string::npos) << n.run.err;
  EXPECT_TRUE(n.doc["events"].empty());
}

/* Gate C: the heap metadata really was corrupted in these cores (the chunk
 * header below the freed/allocated pointer holds the fixture's 0x41 bytes),
 * and the markers were recovered all the same (Gate A). */
TEST_F(Gates, C_MarkersSurviveCorruptedHeap) {
  for (auto *run : {core_a_, core_b_}) {
    Read r = read_json({"--core-only", "--no-symbols", run->core_path});
    ASSERT_EQ(r.run.exit_code(), 0);
    std::uint64_t ptr = 0;
    for (const auto &e : r.doc["events"])
      if (e["kind"] == "FREE" || e["kind"] == "MALLOC") ptr = e["args"][0];
    ASSERT_NE(ptr, 0u);
    auto core = ctr::CoreFile::open(run->core_path);
    ASSERT_TRUE(core);
    auto bytes = core->read_memory(ptr - 8, 8);
    ASSERT_EQ(bytes.size(), 8u) << "chunk header not in the core";
    std::uint64_t word = 0;
    std::memcpy(&word, bytes.data(), 8);
    EXPECT_EQ(word, 0x4141414141414141ull);
    EXPECT_GE(story(r.doc).size(), 4u);
  }
}

/* Gate D: without the crash handlers the pre-crash markers are there and
 * the CRASH event is not (the crash facts come from the core's notes). */
TEST_F(Gates, D_NoHandlersNoCrashSlot) {
  auto run = ct::test::run_and_collect_core({kDemo, "--path=a", "--no-handlers"});
  Read r = read_json({"--core-only", run.core_path, kDemo});
  ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
  EXPECT_EQ(story(r.doc), (std::vector<std::string>{"begin REQUEST(41)", "REQ_PARSE(41)", "FREE", "BEFORE_DIE(1001)"}));
  EXPECT_FALSE(r.doc["crash"]["ring_slot"].get<bool>());
  EXPECT_EQ(r.doc["crash"]["signal_name"], "SIGSEGV");
  EXPECT_EQ(r.doc["crash"]["location"]["function"], "die");
  EXPECT_FALSE(r.doc["rings"][0]["header"]["handlers_installed"].get<bool>());
}

/* The program was rebuilt after it crashed: the file at the path the core
 * names is another build.  Its addresses stay raw, and the reader says
 * why, naming the file and both build-ids (it said "no symbol or file
 * found for this address", and nothing in the text).  Control: with the
 * build that ran at that path, the same core is symbolized, verified. */
TEST_F(Gates, ARebuiltProgramIsNamedWithBothBuildIds) {
  char tmpl[] = "/tmp/ct-rebuilt-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  const std::string exe = dir + "/victim";
  namespace fs = std::filesystem;
  fs::copy_file(CT_REBUILT_VICTIM_1, exe);
  const auto ran = ctr::file_build_id(CT_REBUILT_VICTIM_1);
  const auto rebuilt = ctr::file_build_id(CT_REBUILT_VICTIM_2);
  ASSERT_TRUE(ran && rebuilt);
  ASSERT_NE(*ran, *rebuilt) << "the two builds must differ";
  const std::string want = ctr::hex_bytes(*ran), have = ctr::hex_bytes(*rebuilt);

  const auto run = ct::test::run_and_collect_core({exe});
  const auto mark_of = [](const json &doc) -> json {
    for (const auto &e : doc["events"])
      if (e["id"] == 0x1001) return e["location"];
    return nullptr;
  };
  {
    Read same = read_json({run.core_path});
    ASSERT_EQ(same.run.exit_code(), 0) << same.run.err;
    EXPECT_EQ(same.doc["crash"]["location"]["function"], "victim_die");
    EXPECT_EQ(same.doc["crash"]["location"]["verification"], "verified");
    EXPECT_FALSE(same.doc["crash"]["location"].contains("refused_file"));
    EXPECT_EQ(mark_of(same.doc)["function"], "victim_mark");
  }
  /* Rebuilt: build 2 takes the path (rename, as an install does). */
  fs::copy_file(CT_REBUILT_VICTIM_2, exe + ".new");
  ASSERT_EQ(rename((exe + ".new").c_str(), exe.c_str()), 0);
  const std::string sentence = "the file at " + exe + " has build-id " + have + ", the core wants " + want;
  Read r = read_json({run.core_path});
  ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
  for (const json &loc : {r.doc["crash"]["location"], mark_of(r.doc)}) {
    ASSERT_TRUE(loc.is_object()) << r.doc["events"];
    EXPECT_EQ(loc["verification"], "raw") << loc;
    EXPECT_TRUE(loc["function"].is_null()) << loc;
    EXPECT_EQ(loc["build_id"], want) << loc;
    EXPECT_EQ(loc.value("refused_file", json()), json({{"path", exe}, {"build_id", have}})) << loc;
    EXPECT_EQ(loc.value("note", json()), sentence + ": not used") << loc;
  }
  bool warned = false;
  for (const auto &w : r.doc["warnings"])
    warned |= w.get<std::string>().rfind("BUILD-ID MISMATCH: " + sentence, 0) == 0;
  EXPECT_TRUE(warned) << r.doc["warnings"];
  const Ran text = ct::test::run({kReader, run.core_path});
  EXPECT_EQ(text.exit_code(), 0) << text.err;
  EXPECT_NE(text.out.find(sentence), std::string::npos) << text.out;
}

/* Gate E: cores edited so one slot is torn, the index is inflated, deflated
 * or zeroed, a length exceeds its bounds. */
class GateE : public Gates {
 protected:
  struct Layout {
    std::vector<std::uint8_t> bytes;
    std::uint64_t ring_off = 0;  // file offset of the ring's first byte
    fmtx::RingHeader header{};
    json doc;
  };
  Layout layout() {
    Layout l;
    Read r = read_json({"--core-only", "--no-symbols", core_a_->core_path});
    l.doc = r.doc;
    auto core = ctr::CoreFile::open(core_a_->core_path);
    EXPECT_TRUE(core);
    const std::uint64_t addr = hex_of(r.doc["rings"][0]["address"]);
    const ctr::Segment *seg = core->segment_for(addr);
    EXPECT_NE(seg, nullptr);
    l.ring_off = seg->offset + (addr - seg->vaddr);
    l.bytes = read_file(core_a_->core_path);
    std::memcpy(&l.header, l.bytes.data() + l.ring_off, sizeof l.header);
    return l;
  }
  std::uint64_t lane_desc_off(const Layout &l, std::uint32_t lane) {
    return l.ring_off + l.header.lane_table_offset + std::uint64_t{lane} * fmtx::kLaneDescSize;
  }
  /* Where the event's slot is: in its lane's extent (ring format 3: the
   * lane's first slots, or the part of its source's pool it grew into). */
  std::uint64_t slot_off(const Layout &l, const json &ev) {
    const std::uint64_t seq = ev["seq"];
    const std::uint32_t lane = ev["lane"];
    fmtx::LaneDesc d;
    std::memcpy(&d, l.bytes.data() + lane_desc_off(l, lane), sizeof d);
    const std::uint64_t slots = std::uint64_t{1} << fmtx::extent_log2(d.extent);
    return l.ring_off + l.header.lanes_offset +
           (fmtx::extent_first_slot(d.extent) + (seq - 1) % slots) * fmtx::kSlotSize;
  }
  const json &event(const Layout &l, const std::string &name) {
    for (const auto &e : l.doc["events"])
      if (e["name"] == name) return e;
    ADD_FAILURE() << "no " << name;
    return l.doc["events"][0];
  }
  Read read_edited(const Layout &l, const std::string &stem) {
    const std::string p = ct::test::write_temp(l.bytes, stem);
    Read r = read_json({"--core-only", "--no-symbols", p});
    unlink(p.c_str());
    return r;
  }
};

TEST_F(GateE, TornSlotIsSkippedAndReported) {
  Layout l = layout();
  const json &bd = event(l, "BEFORE_DIE");
  const std::uint64_t seq = bd["seq"];
  std::uint64_t torn = seq | fmtx::kSeqWriting;
  std::memcpy(l.bytes.data() + slot_off(l, bd), &torn, 8);
  Read r = read_edited(l, "torn");
  ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
  EXPECT_EQ(story(r.doc), (std::vector<std::string>{"begin REQUEST(41)", "REQ_PARSE(41)", "FREE", "CRASH SIGSEGV"}));
  ASSERT_EQ(r.doc["rings"][0]["torn"].size(), 1u);
  EXPECT_EQ(r.doc["rings"][0]["torn"][0]["seq"], seq);
  EXPECT_EQ(r.doc["rings"][0]["torn"][0]["kind"], "torn");
  EXPECT_TRUE(r.doc["absence_proves_nothing"].get<bool>());
}

TEST_F(GateE, InflatedDeflatedZeroedIndexFlaggedTimelineIntact) {
  Layout l = layout();
  const std::uint32_t lane = event(l, "BEFORE_DIE")["lane"];
  const std::vector<std::string> want = {"begin REQUEST(41)", "REQ_PARSE(41)", "FREE", "BEFORE_DIE(1001)", "CRASH SIGSEGV"};
  for (std::uint64_t w : {std::uint64_t{1} << 62, std::uint64_t{1000}, std::uint64_t{2}, std::uint64_t{0}}) {
    Layout e = l;
    std::memcpy(e.bytes.data() + lane_desc_off(e, lane) + offsetof(fmtx::LaneDesc, write_index), &w, 8);
    Read r = read_edited(e, "index");
    ASSERT_EQ(r.run.exit_code(), 0) << w << ": " << r.run.err;
    EXPECT_EQ(story(r.doc), want) << "write_index " << w;
    EXPECT_TRUE(r.doc["rings"][0]["counter_inconsistent"].get<bool>()) << "write_index " << w;
    EXPECT_TRUE(r.doc["absence_proves_nothing"].get<bool>());
  }
  Read clean = read_edited(l, "clean");  // control: the unedited core is consistent
  EXPECT_FALSE(clean.doc["rings"][0]["counter_inconsistent"].get<bool>());
  EXPECT_EQ(story(clean.doc), want);
}

TEST_F(GateE, LengthsBeyondTheirBoundsAreRefused) {
  Layout l = layout();
  /* A slot's inline_len beyond the slot: that event is invalid, not shown. */
  {
    Layout e = l;
    const std::uint16_t len = 200;
    std::memcpy(e.bytes.data() + slot_off(e, event(e, "REQ_PARSE")) + offsetof(fmtx::Slot, inline_len), &len, 2);
    Read r = read_edited(e, "inline");
    ASSERT_EQ(r.run.exit_code(), 0);
    EXPECT_EQ(story(r.doc), (std::vector<std::string>{"begin REQUEST(41)", "FREE", "BEFORE_DIE(1001)", "CRASH SIGSEGV"}));
    EXPECT_EQ(r.doc["rings"][0]["torn"][0]["kind"], "invalid");
  }
  /* region_size beyond the segment, with a recomputed CRC: refused (4). */
  {
    Layout e = l;
    fmtx::RingHeader h = e.header;
    h.region_size = std::uint64_t{h.region_size} * 64;
    std::memcpy(e.bytes.data() + e.ring_off, &h, sizeof h);
    const std::uint32_t crc = fmtx::header_crc(e.bytes.data() + e.ring_off);
    std::memcpy(e.bytes.data() + e.ring_off + offsetof(fmtx::RingHeader, header_crc), &crc, 4);
    Read r = read_edited(e, "region");
    EXPECT_EQ(r.run.exit_code(), 4) << r.run.err;
    EXPECT_NE(r.run.err.find("region_size"), std::string::npos) << r.run.err;
    EXPECT_TRUE(r.doc["events"].empty());
  }
  /* slots_per_lane of 2^20 with 4096 lanes (CRC recomputed): refused before
   * any slot offset is used. */
  {
    Layout e = l;
    fmtx::RingHeader h = e.header;
    h.slots_per_lane = 1u << 20;
    h.lane_count = 4096;
    std::memcpy(e.bytes.data() + e.ring_off, &h, sizeof h);
    const std::uint32_t crc = fmtx::header_crc(e.bytes.data() + e.ring_off);
    std::memcpy(e.bytes.data() + e.ring_off + offsetof(fmtx::RingHeader, header_crc), &crc, 4);
    Read r = read_edited(e, "geometry");
    EXPECT_EQ(r.run.exit_code(), 4) << r.run.err;
  }
}

/* The rates a core offers are checked against each other.  A header
 * ticks_per_second edited to half the anchors' rate (CRC recomputed) was
 * used as is, "error at most 0.050%": now the anchors' rate is used and the
 * text and JSON say the header's disagrees.  A header rate that agrees is
 * still used.  A helper-thread anchor edited so that it and the crash
 * anchor give rates a factor two apart: one anchor is wrong, and which
 * cannot be told, so no event gets an age.  The unedited core (control)
 * keeps its rate from the tl_init and crash anchors, with nothing to say. */
TEST_F(GateE, RatesTheCoreOffersAreCheckedAgainstEachOther) {
  Layout l = layout();
  const auto edited = [&](const std::function<void(fmtx::RingHeader &)> &edit) {
    Layout e = l;
    fmtx::RingHeader h = e.header;
    edit(h);
    std::memcpy(e.bytes.data() + e.ring_off, &h, sizeof h);
    const std::uint32_t crc = fmtx::header_crc(e.bytes.data() + e.ring_off);
    std::memcpy(e.bytes.data() + e.ring_off + offsetof(fmtx::RingHeader, header_crc), &crc, 4);
    return e;
  };
  const auto text_of = [](const Layout &e) {
    const std::string p = ct::test::write_temp(e.bytes, "rate-text");
    Ran t = ct::test::run({kReader, "--core-only", "--no-symbols", p});
    unlink(p.c_str());
    std::istringstream in(t.out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("  time: ", 0) == 0) return line;
    return "no time line in: " + t.out;
  };
  /* time.rate_offers, or [] when the document has none. */
  const auto offers = [](const json &t) { return t.contains("rate_offers") ? t["rate_offers"] : json::array(); };
  const auto ages = [](const json &doc) {
    std::vector<json> a;
    for (const auto &ev : doc["events"]) a.push_back(ev["age_ns"]);
    return a;
  };

  /* Control: the unedited core. */
  Read clean = read_edited(l, "rate-clean");
  ASSERT_EQ(clean.run.exit_code(), 0) << clean.run.err;
  const json &ct = clean.doc["time"];
  ASSERT_EQ(ct["rate_from"], "init_and_crash_anchors") << ct;
  ASSERT_TRUE(ct["ticks_per_second"].is_number()) << ct;
  EXPECT_TRUE(ct["note"].is_null()) << ct;
  json one = json::object();
  one["from"] = "init_and_crash_anchors";
  one["ticks_per_second"] = ct["ticks_per_second"];
  one["rate_error"] = ct["rate_error"];
  one["disagrees_with"] = json::array();
  EXPECT_EQ(offers(ct), json::array({one})) << ct;
  const double rate = ct["ticks_per_second"].get<double>();
  const std::string clean_text = text_of(l);
  EXPECT_NE(clean_text.find("from the tl_init and crash anchors (error at most"), std::string::npos) << clean_text;
  EXPECT_EQ(clean_text.find("disagree"), std::string::npos) << clean_text;
  ASSERT_FALSE(ages(clean.doc).empty());
  ASSERT_TRUE(ages(clean.doc).back().is_number());

  /* The header's rate edited to half the anchors': not used. */
  {
    Layout e = edited([&](fmtx::RingHeader &h) { h.ticks_per_second = static_cast<std::uint64_t>(rate / 2); });
    Read r = read_edited(e, "rate-half");
    ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
    const json &t = r.doc["time"];
    EXPECT_EQ(t["rate_from"], "init_and_crash_anchors") << t;
    EXPECT_EQ(t["ticks_per_second"], ct["ticks_per_second"]) << t;
    EXPECT_EQ(t["rate_error"], ct["rate_error"]) << t;
    EXPECT_EQ(ages(r.doc), ages(clean.doc));
    const json o = offers(t);
    ASSERT_EQ(o.size(), 2u) << t;
    EXPECT_EQ(o[0]["from"], "header");
    EXPECT_EQ(o[0]["disagrees_with"], json::array({"init_and_crash_anchors"})) << t;
    EXPECT_EQ(o[1]["disagrees_with"], json::array({"header"})) << t;
    ASSERT_TRUE(t["note"].is_string()) << t;
    EXPECT_NE(t["note"].get<std::string>().find("the ring header's rate, "), std::string::npos) << t;
    EXPECT_NE(t["note"].get<std::string>().find("beyond their bounds: it is not used"), std::string::npos) << t;
    const std::string text = text_of(e);
    EXPECT_NE(text.find("from the tl_init and crash anchors (error at most"), std::string::npos) << text;
    EXPECT_NE(text.find("the ring header's rate, "), std::string::npos) << text;
    EXPECT_NE(text.find("it is not used"), std::string::npos) << text;
  }
  /* The header's rate edited to the anchors' own: it agrees, and is used. */
  {
    Layout e = edited([&](fmtx::RingHeader &h) { h.ticks_per_second = static_cast<std::uint64_t>(rate); });
    Read r = read_edited(e, "rate-same");
    ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
    const json &t = r.doc["time"];
    EXPECT_EQ(t["rate_from"], "header") << t;
    EXPECT_TRUE(t["note"].is_null()) << t;
    const json o = offers(t);
    ASSERT_EQ(o.size(), 2u) << t;
    EXPECT_TRUE(o[0]["disagrees_with"].empty()) << t;
    EXPECT_TRUE(o[1]["disagrees_with"].empty()) << t;
  }
  /* A helper-thread anchor, as far after the crash anchor as that is after
   * tl_init, whose rate is half the crash anchor's: no rate, no ages. */
  {
    Layout e = edited([&](fmtx::RingHeader &h) {
      const std::uint64_t dns = h.crash_monotonic_ns - h.anchor_monotonic_ns;
      const std::uint64_t dt = h.crash_ticks - h.anchor_ticks;
      h.latest_anchor_seq = 2;
      h.latest_monotonic_ns = h.anchor_monotonic_ns + 2 * dns;
      h.latest_realtime_ns = h.anchor_realtime_ns + 2 * dns;
      h.latest_ticks = h.anchor_ticks + dt;
    });
    Read r = read_edited(e, "rate-anchors");
    ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
    const json &t = r.doc["time"];
    EXPECT_TRUE(t["ticks_per_second"].is_null()) << t;
    EXPECT_TRUE(t["rate_from"].is_null()) << t;
    const json o = offers(t);
    ASSERT_EQ(o.size(), 2u) << t;
    EXPECT_EQ(o[0]["from"], "init_and_crash_anchors");
    EXPECT_EQ(o[0]["disagrees_with"], json::array({"init_and_helper_anchors"})) << t;
    ASSERT_TRUE(t["note"].is_string()) << t;
    EXPECT_NE(t["note"].get<std::string>().find("which disagree beyond their bounds"), std::string::npos) << t;
    for (const auto &age : ages(r.doc)) EXPECT_TRUE(age.is_null()) << age;
    const std::string text = text_of(e);
    EXPECT_NE(text.find("time: cannot be told: "), std::string::npos) << text;
    EXPECT_NE(text.find("the tl_init and crash anchors give "), std::string::npos) << text;
    EXPECT_NE(text.find("the tl_init and helper thread's anchors give "), std::string::npos) << text;
  }
}

/* A sidecar of run a next to core b: --core-only ignores it, normal mode
 * refuses it (6); a's own sidecar with core a is accepted (control). */
TEST_F(Gates, ForeignSidecarIsRefused) {
  char tmpl[] = "/tmp/ct-reader-sidecar-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ct::test::CrashOptions o;
  o.env["TL_SIDECAR_DIR"] = dir;
  auto a = ct::test::run_and_collect_core({kDemo, "--path=a"}, o);
  std::string sidecar;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *de = readdir(d))
      if (de->d_name[0] != '.') sidecar = dir + "/" + de->d_name;
    closedir(d);
  }
  ASSERT_FALSE(sidecar.empty()) << "crash_demo left no sidecar in " << dir;

  Read own = read_json({"--sidecar", sidecar, a.core_path});
  EXPECT_EQ(own.run.exit_code(), 0) << own.run.err;
  EXPECT_EQ(own.doc["sidecar"]["status"], "merged") << own.doc["sidecar"];
  EXPECT_EQ(own.doc["source"], "core+sidecar");

  Read ignored = read_json({"--core-only", "--sidecar", sidecar, core_b_->core_path});
  EXPECT_EQ(ignored.run.exit_code(), 0) << ignored.run.err;
  EXPECT_EQ(ignored.doc["sidecar"]["status"], "ignored");
  EXPECT_EQ(story(ignored.doc),
            (std::vector<std::string>{"begin RELOAD(7)", "CONFIG_RELOAD(7)", "MALLOC(128)", "BEFORE_DIE(2002)", "CRASH SIGSEGV"}));

  Read refused = read_json({"--sidecar", sidecar, core_b_->core_path});
  EXPECT_EQ(refused.run.exit_code(), 6) << refused.run.err;
  EXPECT_NE(refused.run.err.find("sidecar identity mismatch"), std::string::npos) << refused.run.err;
  EXPECT_TRUE(refused.doc["events"].empty());

  unlink(sidecar.c_str());
  rmdir(dir.c_str());
}

/* No build-id in the core for the executable: raw addresses and a loud
 * note by default; symbols only with --unverified-symbols, tagged; the
 * timeline itself is recovered either way. */
TEST_F(Gates, NoBuildIdMeansRawAddressesUnlessUnverified) {
  const std::string exe = CT_NOBUILDID_VICTIM;
  auto run = ct::test::run_and_collect_core({exe});
  Read plain = read_json({run.core_path, exe});
  ASSERT_EQ(plain.run.exit_code(), 0) << plain.run.err;
  EXPECT_TRUE(plain.doc["process"]["build_id"].is_null());
  EXPECT_EQ(plain.doc["rings"][0]["identity"]["build_id"]["result"], "unchecked");
  bool loud = false;
  for (const auto &w : plain.doc["warnings"]) loud |= w.get<std::string>().find("NO BUILD-ID") != std::string::npos;
  EXPECT_TRUE(loud) << plain.doc["warnings"];
  const json *mark = nullptr;
  for (const auto &e : plain.doc["events"])
    if (e["id"] == 0x1001) mark = &e;
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ((*mark)["location"]["verification"], "raw");
  EXPECT_TRUE((*mark)["location"]["function"].is_null());
  EXPECT_EQ(plain.doc["crash"]["location"]["verification"], "raw");

  Read unv = read_json({"--unverified-symbols", run.core_path, exe});
  ASSERT_EQ(unv.run.exit_code(), 0) << unv.run.err;
  for (const auto &e : unv.doc["events"])
    if (e["id"] == 0x1001) {
      EXPECT_EQ(e["location"]["verification"], "unverified-no-core-buildid");
      EXPECT_EQ(e["location"]["verified"], false);
      EXPECT_EQ(e["location"]["function"], "victim_mark");
    }
  EXPECT_EQ(unv.doc["crash"]["location"]["function"], "victim_die");
  EXPECT_EQ(unv.doc["crash"]["location"]["verification"], "unverified-no-core-buildid");
  Ran text = ct::test::run({kReader, "--unverified-symbols", run.core_path, exe});
  EXPECT_NE(text.out.find("victim_die+0x0"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("UNVERIFIED"), std::string::npos) << text.out;
}

/* A core truncated by systemd-coredump (a coredump.conf drop-in) gives a
 * clear status, never garbage: cut before the ring, exit 2 "cut off by
 * truncation"; cut inside the ring after lane 0, the timeline with the ring
 * marked truncated.  systemd 252 stores up to MAX(ProcessSizeMax,
 * ExternalSizeMax) bytes (src/coredump/coredump.c, save_external_coredump),
 * so the drop-in lowers both: ProcessSizeMax alone (default ExternalSizeMax
 * 2G) truncates nothing. */
class DropIn {
 public:
  explicit DropIn(std::uint64_t max) {
    made_dir_ = mkdir("/etc/systemd/coredump.conf.d", 0755) == 0;
    std::ofstream(kPath) << "# core-timeline reader_gates_test; removed when the test ends\n[Coredump]\n"
                         << "ProcessSizeMax=" << max << "\nExternalSizeMax=" << max << "\n";
  }
  ~DropIn() {
    unlink(kPath);
    if (made_dir_) rmdir("/etc/systemd/coredump.conf.d");  // leave the machine as found
  }
  static constexpr const char *kPath = "/etc/systemd/coredump.conf.d/zz-ct-reader-gates-test.conf";

 private:
  bool made_dir_ = false;
};

TEST_F(Gates, TruncatedCoresGiveAClearStatus) {
  auto core = ctr::CoreFile::open(core_a_->core_path);
  ASSERT_TRUE(core);
  Read full = read_json({"--core-only", "--no-symbols", core_a_->core_path});
  const std::uint64_t addr = hex_of(full.doc["rings"][0]["address"]);
  const ctr::Segment *seg = core->segment_for(addr);
  ASSERT_NE(seg, nullptr);
  const std::uint64_t ring_off = seg->offset + (addr - seg->vaddr);
  fmtx::RingHeader h;
  std::memcpy(&h, core->bytes().data() + ring_off, sizeof h);
  std::uint64_t notes_end = 0;
  for (const auto &n : core->note_segments()) notes_end = std::max(notes_end, n.offset + n.filesz);
  ASSERT_LT(notes_end, ring_off) << "the ring is not after the notes; cannot cut between them";

  {
    DropIn cut(ring_off - 1);
    auto run = ct::test::run_and_collect_core({kDemo, "--path=a"});
    EXPECT_EQ(run.journal_fields["COREDUMP_TRUNCATED"], "1");
    Read r = read_json({run.core_path});
    EXPECT_EQ(r.run.exit_code(), 2) << r.run.err;
    EXPECT_NE(r.run.err.find("cut off by truncation"), std::string::npos) << r.run.err;
    EXPECT_TRUE(r.doc["core"]["truncated"].get<bool>());
    EXPECT_TRUE(r.doc["events"].empty());
  }
  {
    /* Header, lane table and the lanes up to the first allocation lane:
     * the main thread writes its marks and spans in lane 0 and its FREE in
     * the allocation source's first lane (ring format 3).  Neither has
     * grown (crash_demo writes a handful of events), and the other
     * sources' lanes and the pools, after them, are cut off. */
    const std::uint32_t alloc_lane = h.sources[fmtx::kSourceAlloc].first_lane;
    ASSERT_GE(h.version, 3u) << "lanes split by source since ring format 3";
    ASSERT_GT(alloc_lane, 0u);
    DropIn cut(ring_off + h.lanes_offset + std::uint64_t{alloc_lane + 1} * h.slots_per_lane * fmtx::kSlotSize);
    auto run = ct::test::run_and_collect_core({kDemo, "--path=a"});
    EXPECT_EQ(run.journal_fields["COREDUMP_TRUNCATED"], "1");
    Read r = read_json({"--no-symbols", run.core_path});
    ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
    EXPECT_TRUE(r.doc["rings"][0]["truncated"].get<bool>());
    EXPECT_TRUE(r.doc["absence_proves_nothing"].get<bool>());
    EXPECT_EQ(story(r.doc), (std::vector<std::string>{"begin REQUEST(41)", "REQ_PARSE(41)", "FREE", "BEFORE_DIE(1001)", "CRASH SIGSEGV"}));
  }
}

/* Writes `b` to a temporary file and reads it with --core-only --no-symbols
 * (read_json), and into `text` in text form when given; removes the file. */
Read read_bytes(const std::vector<std::uint8_t> &b, const std::string &stem, std::string *text = nullptr) {
  const std::string p = ct::test::write_temp(b, stem);
  Read r = read_json({"--core-only", "--no-symbols", p});
  if (text != nullptr) *text = ct::test::run({kReader, "--core-only", "--no-symbols", p}).out;
  unlink(p.c_str());
  return r;
}

/* File offset of the header (n_namesz) of the first note named "CORE" of
 * type `type` in the PT_NOTEs of the core `b`; 0 if there is none. */
std::size_t core_note(const std::vector<std::uint8_t> &b, std::uint32_t type) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  for (std::size_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, b.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_NOTE) continue;
    for (std::size_t off = ph.p_offset; off + 12 <= ph.p_offset + ph.p_filesz;) {
      std::uint32_t nh[3];
      std::memcpy(nh, b.data() + off, 12);
      const std::size_t desc = off + 12 + ((nh[0] + 3) & ~3u);
      if (nh[2] == type && nh[0] == 5 && std::memcmp(b.data() + off + 12, "CORE", 5) == 0) return off;
      off = desc + ((nh[1] + 3) & ~3u);
    }
  }
  return 0;
}

/* Gives the note at `header` (core_note) a type no reader knows, as if the
 * kernel had not written it. */
void hide_note(std::vector<std::uint8_t> &b, std::size_t header) {
  const std::uint32_t unknown = 0x7fff0001;
  std::memcpy(b.data() + header + 8, &unknown, 4);
}

/* A core cut off before the segments that could hold a ring shows nothing
 * about libtimeline either way: exit 2, "cannot be told", never exit 1's
 * "did not run with libtimeline".  Cut after the ELF header and the program
 * headers, 6 bytes into the PT_NOTE (`head -c $((0x708+6))` of a crash_demo
 * core with 31 program headers); and, with the notes whole but no NT_FILE
 * (hidden), cut where the ring's bytes start.  Controls: without NT_FILE and
 * uncut, the page scan finds the ring (0); a crash_demo_nolib core cut after
 * its notes keeps its NT_FILE, which lists every mapping and no ring, so
 * "did not run with libtimeline" is what that core shows (1). */
TEST_F(Gates, CutBeforeItsSegmentsCannotTellWhetherLibtimelineRan) {
  const std::vector<std::uint8_t> orig = read_file(core_a_->core_path);
  Elf64_Ehdr eh;
  std::memcpy(&eh, orig.data(), sizeof eh);
  const std::size_t phdrs_end = eh.e_phoff + std::size_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  {
    Read r = read_bytes({orig.begin(), orig.begin() + static_cast<std::ptrdiff_t>(phdrs_end + 6)}, "cut-notes");
    EXPECT_EQ(r.run.exit_code(), 2) << r.run.err;
    EXPECT_EQ(r.run.err, "core-timeline-read: the core is cut off before its notes and segments: whether "
                         "libtimeline was used cannot be told\n");
    EXPECT_EQ(r.doc["status"], "mapping_absent");
    EXPECT_TRUE(r.doc["absence_proves_nothing"].get<bool>());
    EXPECT_TRUE(r.doc["core"]["truncated"].get<bool>());
    EXPECT_TRUE(r.doc["events"].empty());
  }
  auto core = ctr::CoreFile::open(core_a_->core_path);
  ASSERT_TRUE(core);
  const std::uint64_t addr = hex_of(read_bytes(orig, "whole").doc["rings"][0]["address"]);
  const ctr::Segment *seg = core->segment_for(addr);
  ASSERT_NE(seg, nullptr);
  const std::uint64_t ring_off = seg->offset + (addr - seg->vaddr);
  std::vector<std::uint8_t> no_file = orig;
  const std::size_t nt_file = core_note(no_file, NT_FILE);
  ASSERT_NE(nt_file, 0u);
  hide_note(no_file, nt_file);
  {
    Read r = read_bytes(no_file, "no-nt-file");
    ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
    EXPECT_EQ(r.doc["rings"][0]["found_by"], "magic_scan");
  }
  {
    Read r = read_bytes({no_file.begin(), no_file.begin() + static_cast<std::ptrdiff_t>(ring_off)}, "no-nt-file-cut");
    EXPECT_EQ(r.run.exit_code(), 2) << r.run.err;
    EXPECT_NE(r.run.err.find("whether libtimeline was used cannot be told"), std::string::npos) << r.run.err;
    EXPECT_EQ(r.run.err.find("did not run"), std::string::npos) << r.run.err;
    EXPECT_TRUE(r.doc["absence_proves_nothing"].get<bool>());
  }
  auto nolib = ct::test::run_and_collect_core({kNolib, "--path=a"});
  const std::vector<std::uint8_t> nb = read_file(nolib.core_path);
  auto ncore = ctr::CoreFile::open(nolib.core_path);
  ASSERT_TRUE(ncore);
  std::uint64_t notes_end = 0;
  for (const auto &n : ncore->note_segments()) notes_end = std::max(notes_end, n.offset + n.filesz);
  Read n = read_bytes({nb.begin(), nb.begin() + static_cast<std::ptrdiff_t>(notes_end)}, "nolib-cut");
  EXPECT_EQ(n.run.exit_code(), 1) << n.run.err;
  EXPECT_NE(n.run.err.find("did not run with libtimeline"), std::string::npos) << n.run.err;
  EXPECT_TRUE(n.doc["core"]["truncated"].get<bool>());
}

/* A core with no PT_LOAD and no PT_NOTE holds nothing to read: exit 3, not
 * exit 1's "did not run with libtimeline".  Nor does one whose only notes
 * leave out NT_FILE: no memory, and no list of mappings to say where a ring
 * was.  Made from crash_demo's real core: e_phnum 0; every program header
 * PT_NULL; only the PT_LOADs PT_NULL and NT_FILE hidden.  Control: with
 * NT_FILE kept, it lists the ring's mapping, which no PT_LOAD covers (2). */
TEST_F(Gates, NoSegmentsAndNoNotesIsNothingToRead) {
  const std::vector<std::uint8_t> orig = read_file(core_a_->core_path);
  Elf64_Ehdr eh;
  std::memcpy(&eh, orig.data(), sizeof eh);
  auto phdr = [&](std::vector<std::uint8_t> &b, std::size_t i) {
    return reinterpret_cast<Elf64_Phdr *>(b.data() + eh.e_phoff + i * sizeof(Elf64_Phdr));
  };
  std::vector<std::uint8_t> no_phdrs = orig;
  const std::uint16_t zero = 0;
  std::memcpy(no_phdrs.data() + offsetof(Elf64_Ehdr, e_phnum), &zero, 2);
  std::vector<std::uint8_t> all_null = orig, loads_null = orig;
  for (std::size_t i = 0; i < eh.e_phnum; ++i) {
    phdr(all_null, i)->p_type = PT_NULL;
    if (phdr(loads_null, i)->p_type == PT_LOAD) phdr(loads_null, i)->p_type = PT_NULL;
  }
  std::vector<std::uint8_t> loads_null_no_file = loads_null;
  const std::size_t nt_file = core_note(loads_null_no_file, NT_FILE);
  ASSERT_NE(nt_file, 0u);
  hide_note(loads_null_no_file, nt_file);
  for (const auto *b : {&no_phdrs, &all_null, &loads_null_no_file}) {
    Read r = read_bytes(*b, "nothing-to-read");
    EXPECT_EQ(r.run.exit_code(), 3) << r.run.err;
    EXPECT_EQ(r.doc["status"], "core_unreadable");
    EXPECT_NE(r.run.err.find("cannot read the core: "), std::string::npos) << r.run.err;
    EXPECT_NE(r.run.err.find(b == &loads_null_no_file ? "no PT_LOAD program header and no NT_FILE note"
                                                       : "no PT_LOAD and no PT_NOTE program header"),
              std::string::npos) << r.run.err;
    EXPECT_NE(r.run.err.find("not a usable core"), std::string::npos) << r.run.err;
    EXPECT_EQ(r.run.err.find("libtimeline"), std::string::npos) << r.run.err;
    EXPECT_EQ(r.doc["core"]["size"], orig.size());
    EXPECT_EQ(r.doc["core"]["machine"], eh.e_machine);
  }
  Read listed = read_bytes(loads_null, "loads-null");
  EXPECT_EQ(listed.run.exit_code(), 2) << listed.run.err;
  EXPECT_NE(listed.run.err.find("no PT_LOAD segment covers it"), std::string::npos) << listed.run.err;
}

/* The "crash: " line of the text form. */
std::string crash_line(const std::string &text) {
  const std::size_t at = text.find("\ncrash: ");
  if (at == std::string::npos) return "no crash line in: " + text;
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

/* Without NT_SIGINFO the core does not tell the si_code: NT_PRSTATUS's
 * pr_info.si_code is one the kernel leaves 0 (fs/binfmt_elf.c
 * fill_prstatus), which read as a code is SI_USER, "sent with kill()".  The
 * reader says it is unknown, and why.  crash_demo's real core, its
 * NT_SIGINFO hidden; control: with it, SEGV_MAPERR. */
TEST_F(Gates, WithoutSiginfoTheSiCodeIsUnknown) {
  std::vector<std::uint8_t> b = read_file(core_a_->core_path);
  std::string text;
  Read whole = read_bytes(b, "siginfo", &text);
  EXPECT_EQ(whole.doc["crash"]["si_code_name"], "SEGV_MAPERR");
  EXPECT_EQ(whole.doc["crash"]["from"], "NT_SIGINFO");
  EXPECT_FALSE(whole.doc["crash"].contains("si_code_note"));
  EXPECT_NE(crash_line(text).find("crash: SIGSEGV (SEGV_MAPERR)"), std::string::npos) << text;
  const std::size_t siginfo = core_note(b, NT_SIGINFO);
  ASSERT_NE(siginfo, 0u);
  hide_note(b, siginfo);
  Read r = read_bytes(b, "no-siginfo", &text);
  ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
  const json &c = r.doc["crash"];
  EXPECT_EQ(c["from"], "NT_PRSTATUS");
  EXPECT_EQ(c["signal"], 11);
  EXPECT_EQ(c["signal_name"], "SIGSEGV");
  EXPECT_TRUE(c["si_code"].is_null()) << c;
  EXPECT_TRUE(c["si_code_name"].is_null()) << c;
  EXPECT_NE(c.value("si_code_note", "").find("no NT_SIGINFO"), std::string::npos) << c;
  EXPECT_TRUE(c["sender_pid"].is_null()) << c;
  const std::string line = crash_line(text);
  EXPECT_NE(line.find("crash: SIGSEGV (si_code unknown: no NT_SIGINFO)"), std::string::npos) << line;
  EXPECT_EQ(line.find("SI_USER"), std::string::npos) << line;
}

/* A first NT_PRSTATUS with pr_cursig (and pr_info.si_signo) 0 and no
 * NT_SIGINFO records no signal: "no signal recorded", never "SIG0
 * (SI_USER)".  crash_demo's real core so edited. */
TEST_F(Gates, CursigZeroIsNoSignalRecorded) {
  std::vector<std::uint8_t> b = read_file(core_a_->core_path);
  const std::size_t siginfo = core_note(b, NT_SIGINFO), prstatus = core_note(b, NT_PRSTATUS);
  ASSERT_NE(siginfo, 0u);
  ASSERT_NE(prstatus, 0u);
  hide_note(b, siginfo);
  const std::size_t desc = prstatus + 12 + 8;  // after n_namesz, n_descsz, n_type and "CORE\0" padded
  const std::int32_t signo = 0;
  const std::int16_t cursig = 0;
  std::memcpy(b.data() + desc + 0, &signo, 4);    // pr_info.si_signo
  std::memcpy(b.data() + desc + 12, &cursig, 2);  // pr_cursig
  std::string text;
  Read r = read_bytes(b, "cursig-0", &text);
  ASSERT_EQ(r.run.exit_code(), 0) << r.run.err;
  const json &c = r.doc["crash"];
  EXPECT_TRUE(c["signal"].is_null()) << c;
  EXPECT_TRUE(c["signal_name"].is_null()) << c;
  EXPECT_NE(c.value("signal_note", "").find("no signal recorded"), std::string::npos) << c;
  EXPECT_TRUE(c["si_code"].is_null()) << c;
  EXPECT_EQ(c["tid"], r.doc["process"]["threads"][0]);
  const std::string line = crash_line(text);
  EXPECT_EQ(line.rfind("crash: no signal recorded in tid ", 0), 0u) << line;
  EXPECT_EQ(line.find("SIG0"), std::string::npos) << line;
  EXPECT_EQ(line.find("SI_USER"), std::string::npos) << line;
}

/* A core refused as unsupported (32-bit, big-endian) still reports what it
 * is: its real size and e_machine (read in the byte order its header
 * declares), not 0 and 0.  crash_demo's real core made ELFCLASS32 with
 * EM_386, and ELFDATA2MSB with EM_PPC64 written big-endian. */
TEST_F(Gates, UnsupportedCoreReportsItsSizeAndMachine) {
  const std::vector<std::uint8_t> orig = read_file(core_a_->core_path);
  std::vector<std::uint8_t> c32 = orig, msb = orig;
  c32[EI_CLASS] = ELFCLASS32;
  c32[18] = EM_386;
  c32[19] = 0;
  msb[EI_DATA] = ELFDATA2MSB;
  msb[18] = 0;
  msb[19] = EM_PPC64;
  for (const auto &[b, machine, why] : {std::tuple{&c32, EM_386, "not a 64-bit ELF file"},
                                        std::tuple{&msb, EM_PPC64, "not a little-endian ELF file"}}) {
    Read r = read_bytes(*b, "unsupported");
    EXPECT_EQ(r.run.exit_code(), 3) << r.run.err;
    EXPECT_NE(r.run.err.find(why), std::string::npos) << r.run.err;
    EXPECT_EQ(r.doc["core"]["size"], orig.size()) << why;
    EXPECT_EQ(r.doc["core"]["machine"], machine) << why;
  }
}

/* Replaces every NUL-terminated occurrence of `from` in `b` by `to` (of the
 * same length); returns how many. */
int replace_cstr(std::vector<std::uint8_t> &b, const std::string &from, const std::string &to) {
  if (from.size() != to.size()) throw std::runtime_error("replace_cstr: lengths differ");
  const std::string needle = from + '\0';
  int n = 0;
  for (auto it = b.begin();; ++it) {
    it = std::search(it, b.end(), needle.begin(), needle.end());
    if (it == b.end()) break;
    std::copy(to.begin(), to.end(), it);
    ++n;
  }
  return n;
}

/* A path of exactly `len` bytes under `dir`. */
std::string path_of_length(const std::string &dir, std::size_t len) {
  if (dir.size() + 2 > len) return "";
  return dir + "/" + std::string(len - dir.size() - 1, 'x');
}

/* The NT_PRPSINFO of a core (for its pr_uid at 16): offset of its desc
 * (after the 12-byte header and the name "CORE", padded to 8); 0 if none. */
std::size_t prpsinfo_desc(const std::vector<std::uint8_t> &b) {
  const std::size_t note = core_note(b, NT_PRPSINFO);
  return note ? note + 12 + 8 : 0;
}

/* Attack: the core names the files the symbolizer opens.  libdwfl opened
 * every NT_FILE path and every link_map l_name (a string in the dead
 * process's memory) with a plain open(): a FIFO there blocked the
 * symbolizer until its 120 s timeout, a device was opened (a watchdog
 * starts counting when opened), and as root it read files the crashed user
 * could not, showing their symbols.  Now libdwfl sees no notes; files are
 * handed to it only when they are regular, readable by the crashed user
 * (world-readable or theirs), and carry the build-id the core attests. */
TEST_F(Gates, F_SymbolizerOpensOnlyVerifiedFilesTheUserCouldRead) {
  const std::vector<std::uint8_t> orig = read_file(core_a_->core_path);
  auto pc_of = [](const ctr::CoreFile &c) { return c.notes().threads.front().pc; };
  {
    /* Without EXECUTABLE the crash pc is symbolized from the file at its
     * NT_FILE path. */
    auto core = ctr::CoreFile::open(core_a_->core_path);
    ASSERT_TRUE(core);
    const ctr::SymbolQuery q{pc_of(*core), false};
    auto res = ctr::symbolize(*core, std::span(&q, 1), {});
    ASSERT_TRUE(res) << res.error().message;
    ASSERT_TRUE((*res)[0]);
    EXPECT_EQ((*res)[0]->function, "die");
  }
  char tmpl[] = "/tmp/ctXXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  const std::string exe_fifo = path_of_length(dir, kDemo.size());
  if (exe_fifo.empty()) GTEST_SKIP() << kDemo << " is too short a path to replace";
  {
    std::vector<std::uint8_t> b = orig;
    ASSERT_GT(replace_cstr(b, kDemo, exe_fifo), 0);
    ASSERT_EQ(mkfifo(exe_fifo.c_str(), 0644), 0);
    /* libc's link_map name too, if this system's is where we expect it. */
    const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
    const std::string libc_fifo = dir + "/l" + std::string(libc.size() - dir.size() - 2, 'y');
    if (replace_cstr(b, libc, libc_fifo) > 0) {
      ASSERT_EQ(mkfifo(libc_fifo.c_str(), 0644), 0);
    }
    const std::string path = ct::test::write_temp(b, "fifo-core");
    auto core = ctr::CoreFile::open(path);
    ASSERT_TRUE(core);
    const ctr::SymbolQuery q{pc_of(*core), false};
    ctr::SymbolizeOptions so;
    so.timeout_ms = 20000;
    auto res = ctr::symbolize(*core, std::span(&q, 1), so);
    ASSERT_TRUE(res) << res.error().message;
    EXPECT_TRUE(!(*res)[0] || (*res)[0]->function.empty()) << "symbols from a FIFO?";
    Read r = read_json({"--core-only", path});
    EXPECT_EQ(r.run.exit_code(), 0) << r.run.err;
    EXPECT_EQ(r.doc["crash"]["location"]["verified"], false);
    unlink(path.c_str());
    unlink(exe_fifo.c_str());
  }
  {
    /* A copy of the executable only root may read, under a crash of uid
     * 1234: not read.  The same copy world-readable: used. */
    std::vector<std::uint8_t> b = orig;
    ASSERT_GT(replace_cstr(b, kDemo, exe_fifo), 0);
    const std::size_t ps = prpsinfo_desc(b);
    ASSERT_NE(ps, 0u);
    const std::uint32_t uid = 1234;
    std::memcpy(b.data() + ps + 16, &uid, 4);
    const std::vector<std::uint8_t> exe = read_file(kDemo);
    {
      std::ofstream out(exe_fifo, std::ios::binary);
      out.write(reinterpret_cast<const char *>(exe.data()), static_cast<std::streamsize>(exe.size()));
    }
    ASSERT_EQ(chown(exe_fifo.c_str(), 0, 0), 0);
    const std::string path = ct::test::write_temp(b, "uid-core");
    auto core = ctr::CoreFile::open(path);
    ASSERT_TRUE(core);
    ASSERT_EQ(core->notes().process->uid, 1234u);
    const ctr::SymbolQuery q{pc_of(*core), false};
    ASSERT_EQ(chmod(exe_fifo.c_str(), 0600), 0);
    auto hidden = ctr::symbolize(*core, std::span(&q, 1), {});
    ASSERT_TRUE(hidden) << hidden.error().message;
    EXPECT_TRUE(!(*hidden)[0] || (*hidden)[0]->function.empty()) << "a root-only file was read for uid 1234";
    ASSERT_EQ(chmod(exe_fifo.c_str(), 0644), 0);
    auto shown = ctr::symbolize(*core, std::span(&q, 1), {});
    ASSERT_TRUE(shown) << shown.error().message;
    ASSERT_TRUE((*shown)[0]);
    EXPECT_EQ((*shown)[0]->function, "die");
    unlink(path.c_str());
    unlink(exe_fifo.c_str());
  }
}


/* True if a shared object whose name contains `part` is loaded here. */
bool loaded(const std::string &part) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(part) != std::string::npos) return true;
  return false;
}

/* Without DEBUGINFOD_URLS the symbolizer finds a module by build-id in
 * /usr/lib/debug/.build-id/xx/yyyy, as dwfl_build_id_find_elf does, but
 * never loads libdebuginfod: libdwfl dlopens it (and libcurl, and a TLS
 * stack) for any debuginfod question, which cost more than the rest of a
 * read.  In process (isolate = false), so the test sees what was loaded. */
/* The function libdwfl names for the crashing thread's pc, symbolized in
 * this process; "" if none, an error message if symbolize() failed. */
std::string crash_function_in_process(const ctr::CoreFile &core) {
  const ctr::SymbolQuery q{core.notes().threads.front().pc, false};
  ctr::SymbolizeOptions so;
  so.isolate = false;
  auto res = ctr::symbolize(core, std::span(&q, 1), so);
  if (!res) return "symbolize failed: " + res.error().message;
  return (*res)[0] ? (*res)[0]->function : "";
}

TEST_F(Gates, G_BuildIdDirectoryWithoutLoadingDebuginfod) {
  const char *urls = std::getenv("DEBUGINFOD_URLS");
  if (urls != nullptr && *urls != '\0') GTEST_SKIP() << "DEBUGINFOD_URLS is set here: " << urls;
  ASSERT_FALSE(loaded("libdebuginfod")) << "loaded before the test";
  {
    /* The executable at its NT_FILE path, not under .build-id: libdwfl's
     * own lookup by build-id would miss and ask debuginfod. */
    auto core = ctr::CoreFile::open(core_a_->core_path);
    ASSERT_TRUE(core) << core.error().message;
    EXPECT_EQ(crash_function_in_process(*core), "die");
    ASSERT_FALSE(loaded("libdebuginfod")) << "libdebuginfod was loaded without DEBUGINFOD_URLS";
  }
  std::vector<std::uint8_t> b = read_file(core_a_->core_path);
  char tmpl[] = "/tmp/ct-buildid-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  /* The executable's NT_FILE path now names nothing: only the build-id
   * directory can give its file. */
  const std::string gone = path_of_length(dir, kDemo.size());
  ASSERT_FALSE(gone.empty()) << kDemo << " is too short a path to replace";
  ASSERT_GT(replace_cstr(b, kDemo, gone), 0);
  const std::string path = ct::test::write_temp(b, "buildid-core");
  auto core = ctr::CoreFile::open(path);
  ASSERT_TRUE(core) << core.error().message;
  const ctr::Module *exe = core->executable();
  ASSERT_NE(exe, nullptr);
  ASSERT_FALSE(exe->build_id.empty());
  const std::string id = ctr::hex_bytes(exe->build_id);
  const std::string link_dir = "/usr/lib/debug/.build-id/" + id.substr(0, 2);
  const std::string link = link_dir + "/" + id.substr(2);
  ASSERT_FALSE(std::filesystem::exists(link)) << link << " exists already; not touching it";
  std::vector<std::string> made;  // directories this test created, deepest last
  for (std::string d : {std::string("/usr/lib/debug"), std::string("/usr/lib/debug/.build-id"), link_dir})
    if (mkdir(d.c_str(), 0755) == 0) made.push_back(d);
  struct Cleanup {
    std::string dir, link, core;
    std::vector<std::string> made;
    ~Cleanup() {
      unlink(link.c_str());
      for (auto it = made.rbegin(); it != made.rend(); ++it) rmdir(it->c_str());
      unlink(core.c_str());
      std::filesystem::remove_all(dir);
    }
  } cleanup{dir, link, path, made};
  ASSERT_EQ(symlink(kDemo.c_str(), link.c_str()), 0) << std::strerror(errno);
  EXPECT_EQ(crash_function_in_process(*core), "die");
  EXPECT_FALSE(loaded("libdebuginfod")) << "libdebuginfod was loaded without DEBUGINFOD_URLS";
}

}  // namespace
