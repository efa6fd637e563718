// SPDX-License-Identifier: MIT
// cause_test - the cause section (docs/cause.md) of real crashes, through
// the real systemd-coredump pipeline (tests/support/crash_harness.h):
// cause_victim's modes under libtimeline-alloc.so and libtimeline-io.so,
// each read from its core by ct::reader with symbols (libdwfl), and the
// controls that must give no cause: crash_demo's NULL dereference, and a
// use after free without the wrappers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "crash_harness.h"
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

}  // namespace
