// SPDX-License-Identifier: MIT
// cause_test - the cause section (docs/cause.md) of real crashes, through
// the real systemd-coredump pipeline (tests/support/crash_harness.h):
// cause_victim's modes under libtimeline-alloc.so and libtimeline-io.so,
// each read from its core by ct::reader with symbols (libdwfl), and the
// controls that must give no cause: crash_demo's NULL dereference, and a
// use after free without the wrappers.  The exports carry the cause
// (docs/export.md, "The cause"): core-timeline-read --format=chrome-trace
// and --format=ctf on the cores, the CTF read back by babeltrace2; and
// through the real core-timelined, ctl-query info and export of the stored
// documents (when the build has the daemon).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "crash_harness.h"
#include "daemon_harness.h"
#include "process.h"
#include "test_util.h"

namespace {

namespace fmt = core_timeline::format;
namespace rd = core_timeline::reader;

struct Read {
  rd::Analysis a;
  std::string text;
  nlohmann::ordered_json doc;
  std::string core;
};

/* Crashes argv with `signo` and reads its core (symbols on). */
Read crash(const std::vector<std::string> &argv, int signo, bool wrappers = true,
           std::map<std::string, std::string> env = {}, bool symbolize = true) {
  ct::test::CrashOptions opts;
  opts.env = std::move(env);
  if (wrappers)
    opts.env["LD_PRELOAD"] = std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_ALLOC_SO + " " + CT_PRELOAD_IO_SO;
  else
    opts.unset_env.push_back("LD_PRELOAD");
  opts.timeout = std::chrono::seconds(60);
  ct::test::CrashRun run = ct::test::run_and_collect_core(argv, opts);
  EXPECT_TRUE(WIFSIGNALED(run.wait_status)) << "status " << run.wait_status;
  EXPECT_EQ(WTERMSIG(run.wait_status), signo);
  rd::ReadOptions ro;
  ro.core_only = true;
  ro.symbolize = symbolize;
  Read r{rd::analyze_file(run.core_path, ro), {}, {}, run.core_path};
  r.text = rd::render_text(r.a);
  const std::string json = rd::render_json(r.a);
  EXPECT_EQ(ct::test::schema_errors(json), "") << "docs/timeline.schema.json, with its \"cause\"";
  r.doc = nlohmann::ordered_json::parse(json);
  return r;
}

Read victim(const std::string &mode, int signo, std::map<std::string, std::string> env = {}) {
  return crash({CT_CAUSE_VICTIM, mode}, signo, true, std::move(env));
}

const rd::Cause *find(const rd::Analysis &a, rd::CauseKind k) {
  if (!a.cause) return nullptr;
  for (const auto &c : a.cause->causes)
    if (c.kind == k) return &c;
  return nullptr;
}

/* The event a claim cites in `role`, or nullptr. */
const rd::Event *cited(const rd::Analysis &a, const rd::Cause &c, const std::string &role) {
  for (const auto &e : c.events)
    if (e.role == role) return &a.events[e.event];
  return nullptr;
}

std::string function_of(const rd::Analysis &a, const rd::Event &e) {
  const rd::Location *l = a.location_of(e);
  return l == nullptr ? std::string() : l->function;
}

std::string cannot_tell(const rd::Analysis &a) {
  std::string s;
  if (a.cause)
    for (const auto &t : a.cause->cannot_tell) s += t + "\n";
  return s;
}

void done(const Read &r, bool failed) {
  if (!failed) unlink(r.core.c_str()); /* kept when a check failed */
}

/* What the exports of a core (or of a stored timeline) say: the
 * chrome-trace document, and babeltrace2's print of the CTF trace with
 * the trace's metadata file. */
struct Exported {
  nlohmann::ordered_json chrome;
  std::string babeltrace, metadata;
};

/* `command` (core-timeline-read CORE, or ctl-query ... export MATCH) run
 * with --format=chrome-trace and --format=ctf --output DIR, the CTF read by
 * the real babeltrace2. */
Exported exported(const std::vector<std::string> &before, const std::vector<std::string> &after) {
  Exported x;
  std::vector<std::string> chrome = before;
  chrome.push_back("--format=chrome-trace");
  chrome.insert(chrome.end(), after.begin(), after.end());
  const ct::test::Ran c = ct::test::run(chrome);
  EXPECT_EQ(c.exit_code(), 0) << c.err;
  x.chrome = nlohmann::ordered_json::parse(c.out, nullptr, false);
  EXPECT_TRUE(x.chrome.is_object()) << c.out.substr(0, 2000);
  std::string dir = "/tmp/cause-ctf-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp";
    return x;
  }
  std::vector<std::string> ctf = before;
  ctf.insert(ctf.end(), {"--format=ctf", "--output", dir + "/trace"});
  ctf.insert(ctf.end(), after.begin(), after.end());
  const ct::test::Ran t = ct::test::run(ctf);
  EXPECT_EQ(t.exit_code(), 0) << t.err;
  const ct::test::Ran bt = ct::test::run({"/usr/bin/babeltrace2", dir + "/trace"});
  EXPECT_EQ(bt.exit_code(), 0) << bt.err;
  x.babeltrace = bt.out;
  x.metadata = ct::test::read_text(dir + "/trace/metadata");
  std::filesystem::remove_all(dir);
  return x;
}

Exported exported_core(const Read &r) { return exported({CT_READER_BIN}, {r.core}); }

/* The chrome-trace export's CAUSE instants. */
std::vector<nlohmann::ordered_json> cause_instants(const nlohmann::ordered_json &trace) {
  std::vector<nlohmann::ordered_json> v;
  if (trace.contains("traceEvents"))
    for (const auto &e : trace["traceEvents"])
      if (e.value("cat", "") == "CAUSE") v.push_back(e);
  return v;
}

/* The exports carry the document's cause (docs/export.md, "The cause"):
 * a chrome-trace instant at the crash, process-scoped, on the crashing
 * thread's track, with the first claim's kind and words and every claim,
 * and otherData.cause; a CAUSE event per claim in the crashing thread's
 * CTF stream, printed by babeltrace2, and env.cause_N. */
void expect_cause_exported(const Exported &x, const nlohmann::ordered_json &cause, std::uint64_t crash_tid) {
  ASSERT_TRUE(cause.is_object());
  const auto &first = cause["causes"][0];
  const auto instants = cause_instants(x.chrome);
  ASSERT_EQ(instants.size(), 1u) << x.chrome["traceEvents"].dump().substr(0, 3000);
  const auto &i = instants[0];
  EXPECT_EQ(i["name"], "cause: " + first["kind"].get<std::string>());
  EXPECT_EQ(i["ph"], "i");
  EXPECT_EQ(i["s"], "p");
  EXPECT_EQ(i["tid"], crash_tid);
  EXPECT_EQ(i["args"]["kind"], first["kind"]);
  EXPECT_EQ(i["args"]["says"], first["says"]);
  EXPECT_EQ(i["args"]["relies_on"], first["window"]);
  ASSERT_EQ(i["args"]["causes"].size(), cause["causes"].size());
  for (std::size_t n = 0; n < cause["causes"].size(); ++n) {
    EXPECT_EQ(i["args"]["causes"][n]["kind"], cause["causes"][n]["kind"]);
    EXPECT_EQ(i["args"]["causes"][n]["says"], cause["causes"][n]["says"]);
  }
  EXPECT_EQ(i["args"]["cannot_tell"], cause["cannot_tell"]);
  /* At the crash: the CRASH instant's time. */
  for (const auto &e : x.chrome["traceEvents"]) {
    if (e.value("cat", "") == "CRASH" && e["tid"] == crash_tid) {
      EXPECT_EQ(e["ts"], i["ts"]) << e.dump();
    }
  }
  EXPECT_EQ(x.chrome["otherData"]["cause"]["causes"], i["args"]["causes"]);
  /* CTF: babeltrace2 prints one CAUSE event per claim and cannot_tell
   * line, in order, after the CRASH; the metadata's env names them. */
  const std::size_t crash_at = x.babeltrace.find(" CRASH: ");
  ASSERT_NE(crash_at, std::string::npos) << x.babeltrace;
  std::size_t at = crash_at;
  for (std::size_t n = 0; n < cause["causes"].size(); ++n) {
    const auto &c = cause["causes"][n];
    const std::string kind = "kind = \"" + c["kind"].get<std::string>() + "\"";
    at = x.babeltrace.find(" CAUSE: ", at);
    ASSERT_NE(at, std::string::npos) << "claim " << n << "\n" << x.babeltrace;
    const std::string line = x.babeltrace.substr(at, x.babeltrace.find('\n', at) - at);
    EXPECT_NE(line.find(kind), std::string::npos) << line;
    /* babeltrace2 prints the string as it is, up to the first quote of
     * an abort message's own. */
    const std::string says = c["says"].get<std::string>();
    EXPECT_NE(line.find("says = \"" + says.substr(0, says.find('"'))), std::string::npos) << line;
    EXPECT_NE(x.metadata.find("cause_" + std::to_string(n) + "_kind = \"" + c["kind"].get<std::string>() + "\";"),
              std::string::npos)
        << x.metadata;
    ++at;
  }
}

/* No cause: nothing of it in either export. */
void expect_no_cause_exported(const Exported &x) {
  EXPECT_TRUE(cause_instants(x.chrome).empty()) << x.chrome.dump().substr(0, 3000);
  EXPECT_FALSE(x.chrome["otherData"].contains("cause")) << x.chrome["otherData"].dump();
  EXPECT_EQ(x.babeltrace.find(" CAUSE: "), std::string::npos) << x.babeltrace;
  EXPECT_NE(x.babeltrace.find(" CRASH: "), std::string::npos) << x.babeltrace;
  EXPECT_EQ(x.metadata.find("\tcause_"), std::string::npos) << x.metadata;
  EXPECT_EQ(x.metadata.find("name = \"CAUSE\""), std::string::npos) << x.metadata;
}

TEST(Cause, UseAfterFreeNamesTheBlockItsAllocationAndItsFree) {
  const Read r = victim("uaf", SIGSEGV);
  ASSERT_EQ(r.a.status, rd::Status::kOk) << r.a.reason;
  const rd::Cause *c = find(r.a, rd::CauseKind::kUseAfterFree);
  ASSERT_NE(c, nullptr) << r.text;
  EXPECT_EQ(c->block_size, 24u) << c->text;  // struct handler
  ASSERT_FALSE(c->pointers.empty());
  EXPECT_NE(c->pointers[0].name, "fault_address") << "the call jumped to tcache's pointer, not into the block";
  EXPECT_GE(c->pointers[0].value, *c->block);
  EXPECT_LT(c->pointers[0].value, *c->block + 24);
  const rd::Event *alloc = cited(r.a, *c, "allocation");
  const rd::Event *free = cited(r.a, *c, "free");
  ASSERT_TRUE(alloc && free);
  EXPECT_EQ(alloc->kind, fmt::kKindMalloc);
  EXPECT_EQ(alloc->arg0, *c->block);
  EXPECT_EQ(free->kind, fmt::kKindFree);
  EXPECT_EQ(free->arg0, *c->block);
  EXPECT_EQ(function_of(r.a, *alloc), "make_handler") << c->text;
  EXPECT_EQ(function_of(r.a, *free), "release") << c->text;
  EXPECT_NE(c->window.find("allocations are complete since tl_init"), std::string::npos) << c->window;
  EXPECT_NE(r.text.find("cause: use after free: " + c->pointers[0].name + "="), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("24-byte block allocated at make_handler+"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("  relies on: allocations are complete since tl_init"), std::string::npos) << r.text;
  const auto &j = r.doc["cause"]["causes"][0];
  EXPECT_EQ(j["kind"], "use_after_free") << r.doc["cause"].dump(2);
  EXPECT_EQ(j["block"]["size"], 24);
  EXPECT_EQ(j["events"][0]["role"], "allocation");
  EXPECT_EQ(j["events"][0]["kind"], "MALLOC");
  EXPECT_EQ(j["events"][1]["role"], "free");
  expect_cause_exported(exported_core(r), r.doc["cause"], r.a.crash->tid);
  done(r, HasFailure());
}

TEST(Cause, UseAfterFreeOfABlockReallocMovedAway) {
  const Read r = victim("uaf_realloc", SIGSEGV);
  const rd::Cause *c = find(r.a, rd::CauseKind::kUseAfterFree);
  ASSERT_NE(c, nullptr) << r.text;
  EXPECT_EQ(c->block_size, 24u);
  const rd::Event *free = cited(r.a, *c, "free");
  ASSERT_NE(free, nullptr);
  EXPECT_EQ(free->kind, fmt::kKindRealloc) << c->text;
  EXPECT_NE(free->arg0, *c->block) << "realloc moved the block";
  done(r, HasFailure());
}

TEST(Cause, DoubleFreeWithGlibcsAbortMessage) {
  const Read r = victim("double_free", SIGABRT);
  ASSERT_TRUE(r.a.cause) << r.text;
  const rd::Cause *m = find(r.a, rd::CauseKind::kAbortMessage);
  ASSERT_NE(m, nullptr) << r.text;
  EXPECT_EQ(*m->message, "free(): double free detected in tcache 2\n");
  EXPECT_EQ(r.a.cause->causes[0].kind, rd::CauseKind::kAbortMessage) << "the core's own word first";
  const rd::Cause *d = find(r.a, rd::CauseKind::kDoubleFree);
  ASSERT_NE(d, nullptr) << r.text;
  EXPECT_EQ(d->block_size, 40u);
  const rd::Event *first = cited(r.a, *d, "first_free");
  const rd::Event *second = cited(r.a, *d, "second_free");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->arg0, second->arg0);
  EXPECT_EQ(second->tid, r.a.crash->tid);
  EXPECT_TRUE(d->text.ends_with("; glibc aborted in it: \"free(): double free detected in tcache 2\""))
      << d->text;
  EXPECT_NE(r.text.find("cause: abort message: free(): double free detected in tcache 2\n"), std::string::npos)
      << r.text;
  EXPECT_EQ(r.doc["cause"]["causes"][0]["message"], "free(): double free detected in tcache 2\n");
  EXPECT_EQ(r.doc["cause"]["causes"][0]["window"], nullptr) << "the core alone";
  const Exported x = exported_core(r);
  expect_cause_exported(x, r.doc["cause"], r.a.crash->tid);
  EXPECT_NE(x.babeltrace.find("kind = \"double_free\""), std::string::npos) << x.babeltrace;
  /* The same lookup of __abort_msg in the reader's own process. */
  rd::ReadOptions here;
  here.core_only = true;
  here.isolate_symbolizer = false;
  const rd::Analysis b = rd::analyze_file(r.core, here);
  const rd::Cause *bm = find(b, rd::CauseKind::kAbortMessage);
  ASSERT_NE(bm, nullptr) << rd::render_text(b);
  EXPECT_EQ(bm->message, m->message);
  done(r, HasFailure());
}

TEST(Cause, CoreCutOffInsideTheRingClaimsNoAbsence) {
  const Read r = victim("double_free", SIGABRT);
  ASSERT_NE(find(r.a, rd::CauseKind::kDoubleFree), nullptr) << r.text;
  /* The same core cut off halfway into the ring (its lanes are there, its
   * pools not): the slots it lacks may hold an allocation between the two
   * frees. */
  ASSERT_FALSE(r.a.rings.empty());
  auto core = rd::CoreFile::open(r.core);
  ASSERT_TRUE(core) << core.error().message;
  const rd::Segment *seg = core->segment_for(r.a.rings[0].address);
  ASSERT_NE(seg, nullptr);
  const std::string cut = r.core + ".cut";
  std::filesystem::copy_file(r.core, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, seg->offset + (r.a.rings[0].address - seg->vaddr) + r.a.rings[0].mapping_size / 2);
  rd::ReadOptions ro;
  ro.core_only = true;
  const rd::Analysis b = rd::analyze_file(cut, ro);
  const std::string text = rd::render_text(b);
  EXPECT_EQ(find(b, rd::CauseKind::kDoubleFree), nullptr) << text;
  EXPECT_NE(cannot_tell(b).find("whether it was allocated again between cannot be told: "), std::string::npos) << text;
  EXPECT_NE(cannot_tell(b).find("the core is cut off inside the ring"), std::string::npos) << text;
  std::filesystem::remove(cut);
  done(r, HasFailure());
}

TEST(Cause, DoubleFreeWithoutSymbolsSaysTheAbortMessageWasNotLookedFor) {
  const Read r = crash({CT_CAUSE_VICTIM, "double_free"}, SIGABRT, true, {}, false);
  EXPECT_NE(find(r.a, rd::CauseKind::kDoubleFree), nullptr) << r.text;
  EXPECT_EQ(find(r.a, rd::CauseKind::kAbortMessage), nullptr) << r.text;
  EXPECT_NE(cannot_tell(r.a).find("the abort message was not looked for"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cause cannot be told: the abort message was not looked for"), std::string::npos) << r.text;
  done(r, HasFailure());
}

TEST(Cause, InvalidFreeIntoTheMiddleOfALiveBlock) {
  const Read r = victim("invalid_free", SIGABRT);
  const rd::Cause *m = find(r.a, rd::CauseKind::kAbortMessage);
  ASSERT_NE(m, nullptr) << r.text;
  EXPECT_EQ(*m->message, "free(): invalid pointer\n");
  const rd::Cause *c = find(r.a, rd::CauseKind::kInvalidFree);
  ASSERT_NE(c, nullptr) << r.text;
  EXPECT_EQ(c->block_size, 64u);
  EXPECT_EQ(c->offset, 16);
  EXPECT_EQ(find(r.a, rd::CauseKind::kDoubleFree), nullptr);
  done(r, HasFailure());
}

TEST(Cause, FailedAssertQuotesTheAssertion) {
  const Read r = victim("assert", SIGABRT);
  const rd::Cause *m = find(r.a, rd::CauseKind::kAbortMessage);
  ASSERT_NE(m, nullptr) << r.text;
  EXPECT_NE(m->message->find("cause_victim.c:"), std::string::npos) << *m->message;
  EXPECT_NE(m->message->find("failed_assert: Assertion `queued > 0 && \"the queue must not be empty\"' failed."),
            std::string::npos)
      << *m->message;
  ASSERT_TRUE(r.a.cause);
  EXPECT_EQ(r.a.cause->causes.size(), 1u) << r.text << "\nnothing but the message: no heap or fd evidence";
  EXPECT_NE(r.text.find("cause: abort message: "), std::string::npos) << r.text;
  done(r, HasFailure());
}

TEST(Cause, OverflowPastTheEndOfAHeapBlock) {
  const Read r = victim("overflow", SIGSEGV);
  const rd::Cause *c = find(r.a, rd::CauseKind::kOverflowHint);
  ASSERT_NE(c, nullptr) << r.text;
  EXPECT_EQ(c->block_size, 100000u);
  ASSERT_EQ(c->pointers.size(), 1u);
  EXPECT_EQ(c->pointers[0].name, "fault_address");
  EXPECT_EQ(c->pointers[0].value, *r.a.crash->fault_address);
  EXPECT_GE(*c->offset, 100000);
  const rd::Event *alloc = cited(r.a, *c, "allocation");
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->arg1, 100000u);
  EXPECT_EQ(find(r.a, rd::CauseKind::kUseAfterFree), nullptr) << r.text;
  EXPECT_NE(r.text.find("cause: overflow hint: the fault address"), std::string::npos) << r.text;
  done(r, HasFailure());
}

TEST(Cause, WriteToAClosedFdNamesTheClose) {
  const Read r = victim("closed_fd", SIGABRT);
  const rd::Cause *c = find(r.a, rd::CauseKind::kBadFd);
  ASSERT_NE(c, nullptr) << r.text;
  const rd::Event *use = cited(r.a, *c, "use");
  const rd::Event *close = cited(r.a, *c, "close");
  ASSERT_TRUE(use && close) << c->text;
  EXPECT_EQ(use->kind, fmt::kKindWrite);
  EXPECT_EQ(close->kind, fmt::kKindClose);
  EXPECT_EQ(static_cast<std::int32_t>(close->id), *c->fd);
  EXPECT_EQ(function_of(r.a, *close), "closed_fd");
  EXPECT_NE(c->text.find("and no recorded call opened it again"), std::string::npos) << c->text;
  EXPECT_NE(c->window.find("I/O are complete since tl_init"), std::string::npos) << c->window;
  /* abort() without a message: said, not guessed. */
  EXPECT_EQ(find(r.a, rd::CauseKind::kAbortMessage), nullptr);
  EXPECT_NE(cannot_tell(r.a).find("glibc set no abort message"), std::string::npos) << r.text;
  EXPECT_EQ(r.doc["cause"]["causes"][0]["kind"], "bad_fd");
  EXPECT_EQ(r.doc["cause"]["causes"][0]["fd"], *c->fd);
  done(r, HasFailure());
}

TEST(Cause, SecondCloseOfAnFdAndTheAssertionAboutIt) {
  const Read r = victim("double_close", SIGABRT);
  const rd::Cause *c = find(r.a, rd::CauseKind::kBadFd);
  ASSERT_NE(c, nullptr) << r.text;
  const rd::Event *use = cited(r.a, *c, "use");
  const rd::Event *close = cited(r.a, *c, "close");
  ASSERT_TRUE(use && close) << c->text;
  EXPECT_EQ(use->kind, fmt::kKindClose);
  EXPECT_LT(close->seq, use->seq);
  const rd::Cause *m = find(r.a, rd::CauseKind::kAbortMessage);
  ASSERT_NE(m, nullptr) << r.text;
  EXPECT_NE(m->message->find("Assertion `second == 0' failed."), std::string::npos) << *m->message;
  done(r, HasFailure());
}

TEST(Cause, FreeBeforeTheAllocationWindowIsNotClaimedButSaid) {
  /* Fixed lanes of 64 slots (no pool to grow into): the free is overwritten. */
  const Read r = victim("uaf_old", SIGSEGV, {{"TL_SLOTS", "64"}});
  ASSERT_EQ(r.a.status, rd::Status::kOk) << r.a.reason;
  const rd::SourceWindow *w = nullptr;
  for (const auto &x : r.a.windows)
    if (x.source == fmt::kSourceAlloc) w = &x;
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->complete_since_init) << "the victim's loop must overwrite the free";
  /* The handler's block (24 bytes) is not claimed; a register may still
   * hold one of the loop's freed 200-byte blocks, which is a claim of its
   * own. */
  for (const auto &c : r.a.cause ? r.a.cause->causes : std::vector<rd::Cause>{})
    EXPECT_NE(c.block_size, 24u) << c.text;
  const std::string says = cannot_tell(r.a);
  /* With the window's own words: "allocations before -0.081ms are not
   * known; ...", or, when the ring gives no clock rate, "allocations: not
   * complete (N overwritten, from when cannot be told)". */
  EXPECT_NE(says.find("at no block the allocation window knows; " + rd::absence_text(*w) + ": "), std::string::npos)
      << r.text;
  EXPECT_NE(says.find("a block allocated or freed before that cannot be seen"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("cause cannot be told: "), std::string::npos) << r.text;
  done(r, HasFailure());
}

TEST(Cause, CrashDemoNullDereferenceHasNoCause) {
  for (const char *path : {"--path=a", "--path=b"}) {
    const Read r = crash({CT_CRASH_DEMO, path}, SIGSEGV, false);
    ASSERT_EQ(r.a.status, rd::Status::kOk) << r.a.reason;
    EXPECT_FALSE(r.a.cause) << path << "\n" << r.text;
    EXPECT_EQ(r.text.find("cause"), std::string::npos) << r.text;
    EXPECT_TRUE(r.doc["cause"].is_null());
    expect_no_cause_exported(exported_core(r));
    done(r, HasFailure());
  }
}

TEST(Cause, UseAfterFreeWithoutTheWrappersHasNoCause) {
  const Read r = crash({CT_CAUSE_VICTIM, "uaf"}, SIGSEGV, false);
  EXPECT_EQ(r.a.status, rd::Status::kNoRing) << r.a.reason;
  EXPECT_FALSE(r.a.cause) << r.text;
  EXPECT_TRUE(r.doc["cause"].is_null());
  done(r, HasFailure());
}

#ifdef CT_DAEMON
/* The lines of `text` that begin with one of `prefixes`. */
std::vector<std::string> lines_starting(const std::string &text, const std::vector<std::string> &prefixes) {
  std::vector<std::string> v;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    for (const auto &p : prefixes)
      if (line.rfind(p, 0) == 0) {
        v.push_back(line);
        break;
      }
    at = end + 1;
  }
  return v;
}

/* A crash stored by the real core-timelined (a daemon of the test's own,
 * writing into a directory of its own), then ctl-query -D on it: info
 * prints the cause section's lines as show's text has them, and export
 * carries the cause as core-timeline-read's export of a core does; a
 * crash without one (crash_demo) gets none of it. */
TEST(CauseStored, CtlQueryInfoAndExportOfTheDaemonsDocument) {
  ASSERT_EQ(geteuid(), 0u) << "core-timelined reads every crash: root";
  std::string root = "/tmp/cause-daemon-XXXXXX";
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  std::filesystem::permissions(root, std::filesystem::perms(0755));
  std::ofstream(root + "/empty.conf").flush();
  ct::test::DaemonHarness::Options opts;
  opts.binary = CT_DAEMON;
  opts.root = root;
  opts.log_target = "stderr";
  opts.config = root + "/empty.conf";
  ct::test::DaemonHarness daemon(opts);
  daemon.start();
  const std::string wrappers = std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_ALLOC_SO + " " + CT_PRELOAD_IO_SO;
  struct Case {
    std::vector<std::string> argv;
    int signo;
    bool wrappers;
    const char *kind;  // a claim the stored cause must make; nullptr: no cause
  };
  const std::vector<Case> cases = {{{CT_CAUSE_VICTIM, "uaf"}, SIGSEGV, true, "use_after_free"},
                                   {{CT_CAUSE_VICTIM, "double_free"}, SIGABRT, true, "double_free"},
                                   {{CT_CRASH_DEMO, "--path=a"}, SIGSEGV, false, nullptr}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.argv[0] + " " + c.argv[1]);
    ct::test::ProcessOptions o;
    o.out = ct::test::Stream::null();
    o.err = ct::test::Stream::null();
    if (c.wrappers) o.env["LD_PRELOAD"] = wrappers;
    else o.unset_env.push_back("LD_PRELOAD");
    o.in_child = [] {
      const struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
      setrlimit(RLIMIT_CORE, &unlimited);
    };
    const ct::test::Ran ran = ct::test::run(c.argv, o);
    ASSERT_TRUE(WIFSIGNALED(ran.wait_status) && WTERMSIG(ran.wait_status) == c.signo) << ran.wait_status;
    const auto t = daemon.wait_timeline(ran.pid, std::chrono::seconds(60));
    ASSERT_TRUE(t) << "no timeline of pid " << ran.pid << "\n" << daemon.log_tail();
    const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(ct::test::read_text(t->path));
    const std::string pid = std::to_string(ran.pid);
    const ct::test::Ran info = ct::test::run({CT_CTL_QUERY, "-D", daemon.output_dir(), "info", pid});
    ASSERT_EQ(info.exit_code(), 0) << info.err;
    const ct::test::Ran show = ct::test::run({CT_CTL_QUERY, "-D", daemon.output_dir(), "show", pid});
    ASSERT_EQ(show.exit_code(), 0) << show.err;
    const std::string in16(16, ' ');
    const auto shown = lines_starting(show.out, {"cause: ", "  relies on: ", "cause cannot be told: "});
    const auto in_info =
        lines_starting(info.out, {in16 + "cause: ", in16 + "  relies on: ", in16 + "cause cannot be told: "});
    const Exported x = exported({CT_CTL_QUERY, "-D", daemon.output_dir(), "export"}, {pid});
    if (!c.kind) {
      EXPECT_TRUE(doc["cause"].is_null()) << doc["cause"].dump();
      EXPECT_TRUE(shown.empty()) << show.out;
      EXPECT_TRUE(in_info.empty()) << info.out;
      expect_no_cause_exported(x);
      continue;
    }
    ASSERT_TRUE(doc["cause"].is_object()) << doc.dump().substr(0, 2000);
    bool claimed = false;
    for (const auto &claim : doc["cause"]["causes"]) claimed = claimed || claim["kind"] == c.kind;
    EXPECT_TRUE(claimed) << doc["cause"].dump(2);
    /* info: show's cause lines, each 16 spaces in, in order. */
    ASSERT_FALSE(shown.empty()) << show.out;
    std::size_t at = 0;
    for (const auto &line : shown) {
      at = info.out.find("\n" + std::string(16, ' ') + line + "\n", at);
      EXPECT_NE(at, std::string::npos) << "info lacks: " << line << "\n" << info.out;
      if (at == std::string::npos) break;
    }
    EXPECT_EQ(in_info.size(), shown.size()) << info.out;
    EXPECT_NE(info.out.find(std::string(16, ' ') + "cause: " + (c.signo == SIGSEGV ? "use after free: " : "")),
              std::string::npos)
        << info.out;
    expect_cause_exported(x, doc["cause"], doc["crash"]["tid"].get<std::uint64_t>());
  }
  daemon.stop();
  std::filesystem::remove_all(root);
}
#endif

}  // namespace
