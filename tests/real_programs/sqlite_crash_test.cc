// SPDX-License-Identifier: MIT
// sqlite_crash_test - Debian's sqlite3 under libtimeline-io.so, killed with
// SIGSEGV in the middle of a transaction, through the real systemd-coredump
// pipeline (tests/support/crash_harness.h).  SQLite reads and writes its
// database with pread64 and pwrite64 (os_unix.c); the timeline read from
// the core must show them, on the fd the reader ties to the OPEN of the
// database file, named by its path, and the write to the rollback journal
// that was under way when the process died.
//
// sqlite3 runs each argument after the database as SQL or a dot-command;
// the last, `.shell kill -SEGV $PPID`, is run by system(3), whose shell's
// parent is sqlite3: it dies waiting for the shell, its transaction open.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "crash_harness.h"
#include "schema_check.h"

namespace {

namespace fmt = core_timeline::format;
namespace rd = core_timeline::reader;

/* Whether `e` is an OPEN of `path` that gave an fd. */
bool is_open_of(const rd::Analysis &a, const rd::Event &e, const std::string &path) {
  const auto text = rd::event_inline_text(a, e);
  return e.kind == fmt::kKindOpen && text && *text == path && rd::io_result(e) >= 0;
}

/* The lines of `text` that contain `needle`. */
std::string lines_with(const std::string &text, const std::string &needle) {
  std::string out;
  for (std::size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
    const std::string line = text.substr(at, nl - at + 1);
    if (line.find(needle) != std::string::npos) out += line;
  }
  return out;
}

TEST(SqliteCrash, TimelineShowsThePreadAndPwriteOfTheDatabaseNamedByItsPath) {
  char dir_template[] = "/tmp/ct-sqlite-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template, db = dir + "/t.db";
  ct::test::CrashOptions opts;
  opts.env["LD_PRELOAD"] = std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_IO_SO;
  opts.timeout = std::chrono::seconds(60);
  ct::test::CrashRun run = ct::test::run_and_collect_core(
      {CT_SQLITE3, db, "create table t(a, b);", "insert into t values(1, randomblob(3000));",
       "begin; update t set a = 2; insert into t values(3, 'x');", ".shell kill -SEGV $PPID"},
      opts);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WIFSIGNALED(run.wait_status)) << "status " << run.wait_status;
  EXPECT_EQ(WTERMSIG(run.wait_status), SIGSEGV);

  rd::ReadOptions ro;
  ro.core_only = true;
  ro.symbolize = false;
  const rd::Analysis a = rd::analyze_file(run.core_path, ro);
  ASSERT_EQ(a.status, rd::Status::kOk) << a.reason;
  /* Both documents of this real program's timeline are what the schema says. */
  EXPECT_EQ(ct::test::schema_errors_of(rd::render_compact(a), CT_SCHEMA_PATH), "") << "the compact document";
  EXPECT_EQ(ct::test::schema_errors_of(rd::render_json(a), CT_SCHEMA_PATH), "") << "the full document";
  const std::string text = rd::render_text(a);

  /* The database's OPEN, and the reads and writes the reader ties to it. */
  std::optional<std::int64_t> db_fd;
  std::size_t preads = 0, pwrites = 0;
  std::optional<std::size_t> last_io;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const rd::Event &e = a.events[i];
    if (is_open_of(a, e, db)) db_fd = rd::io_result(e);
    if (e.kind >= fmt::kKindIoFirst && e.kind <= fmt::kKindIoLast) last_io = i;
    if (e.kind != fmt::kKindPread && e.kind != fmt::kKindPwrite) continue;
    if (!db_fd || rd::io_fd(e) != db_fd) continue;
    ASSERT_EQ(e.fd_state, rd::FdOrigin::kFound) << "seq " << e.seq;
    EXPECT_TRUE(is_open_of(a, a.events[e.fd_origin], db)) << "seq " << e.seq << " tied to another event";
    (e.kind == fmt::kKindPread ? preads : pwrites)++;
  }
  ASSERT_TRUE(db_fd) << "no OPEN of " << db << " in the timeline:\n" << text;
  EXPECT_GT(preads, 0u) << "no PREAD of the database:\n" << text;
  EXPECT_GT(pwrites, 0u) << "no PWRITE of the database:\n" << text;

  /* As a person reads them: the fd named by the database's path. */
  const std::string named = "fd=" + std::to_string(*db_fd) + " (" + db + ")";
  EXPECT_NE(lines_with(text, " PREAD ").find(named), std::string::npos) << text;
  EXPECT_NE(lines_with(text, " PWRITE ").find(named + " result=4096 count=4096 offset="), std::string::npos) << text;

  /* The transaction was under way: the last I/O before the crash wrote the
   * rollback journal. */
  ASSERT_TRUE(last_io);
  const rd::Event &last = a.events[*last_io];
  EXPECT_EQ(last.kind, fmt::kKindPwrite) << text;
  ASSERT_EQ(last.fd_state, rd::FdOrigin::kFound) << text;
  EXPECT_TRUE(is_open_of(a, a.events[last.fd_origin], db + "-journal")) << text;

  /* The JSON names the origin too. */
  const auto doc = rd::to_json(a);
  bool says = false;
  for (const auto &e : doc["events"])
    if (e["kind"] == "PWRITE" && e["io"]["fd"] == *db_fd) says |= e["io"]["origin"]["says"] == db;
  EXPECT_TRUE(says) << "no PWRITE whose io.origin.says is " << db;

  if (!HasFailure()) unlink(run.core_path.c_str()); /* kept when a check failed */
}

}  // namespace
