// SPDX-License-Identifier: MIT
//
// gdb's `timeline` command (reader/gdb/timeline.py) in the REAL gdb, in
// batch mode, on REAL kernel cores from the REAL systemd-coredump pipeline
// (tests/support/crash_harness.h):
//   - gdb EXE CORE of crash_demo (libtimeline.a: the module is sourced),
//     text and --json, the options, the reader's failures as gdb errors;
//   - the auto-load stub of an installed tree, run by gdb itself when it
//     loads libtimeline.so.1 from a core of gdb_crash_demo_shared, and the
//     stub's name against the real file name of the installed library;
//   - coredumpctl debug PID;
//   - a live process stopped at a breakpoint (core-timeline-read --pid).
// Every check that output is "the timeline" compares with what
// core-timeline-read itself prints: the command has no decoder of its own.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "crash_harness.h"
#include "process.h"
#include "test_files.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kGdb = CT_GDB;
const std::string kCoredumpctl = CT_COREDUMPCTL;
const std::string kModule = CT_GDB_MODULE;
const std::string kReader = CT_READER_BIN;
const std::string kDemo = CT_CRASH_DEMO;
const std::string kNolib = CT_CRASH_DEMO_NOLIB;
const std::string kShared = CT_CRASH_DEMO_SHARED;

#define SKIP_WITHOUT_GDB()                                                                        \
  do {                                                                                            \
    if (kGdb.empty())                                                                             \
      GTEST_SKIP() << "gdb not found when configuring (packaging/install-build-deps installs it); " \
                      "the timeline command runs inside gdb";                                     \
  } while (0)

using ct::test::slurp;

// The environment of every gdb run: no debuginfod look-ups (no network), no
// CORE_TIMELINE_READ, and unless `installed_reader` the reader of this
// build found as a user's is when the module is not installed beside it:
// on PATH (its directory first).  With `installed_reader` PATH holds no
// reader at all: the module must find the one installed beside it.
ct::test::ProcessOptions gdb_options(bool installed_reader = false) {
  ct::test::ProcessOptions o;
  o.in = ct::test::Stream::null();
  o.unset_env = {"DEBUGINFOD_URLS", "CORE_TIMELINE_READ"};
  const char *path = std::getenv("PATH");
  o.env["PATH"] = installed_reader ? "/nonexistent"
                                   : fs::path(kReader).parent_path().string() + ":" + (path ? path : "/usr/bin:/bin");
  o.timeout = std::chrono::minutes(3);
  return o;
}

// gdb -nx -batch, the module sourced first (-iex), then each -ex command.
ct::test::Ran gdb_batch(const std::vector<std::string> &commands, const std::vector<std::string> &files,
                        const ct::test::ProcessOptions &o = gdb_options()) {
  std::vector<std::string> argv = {kGdb, "-nx", "-batch", "-iex", "source " + kModule};
  for (const auto &c : commands) argv.insert(argv.end(), {"-ex", c});
  argv.insert(argv.end(), files.begin(), files.end());
  return ct::test::run(argv, o);
}

std::string reader_text(const std::vector<std::string> &args) {
  std::vector<std::string> argv = {kReader};
  argv.insert(argv.end(), args.begin(), args.end());
  const ct::test::Ran r = ct::test::run(argv);
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  return r.out;
}

// The JSON document in gdb's stdout: from the first line that is "{" to the
// end (gdb's own lines about the core come before it).
json json_in(const std::string &out) {
  const auto at = out.find("\n{\n");
  if (at == std::string::npos) return json::value_t::discarded;
  return json::parse(out.substr(at + 1), nullptr, false);
}

class GdbCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (kGdb.empty()) return;
    demo_a_ = ct::test::run_and_collect_core({kDemo, "--path=a"});
  }
  static ct::test::CrashRun demo_a_;
};
ct::test::CrashRun GdbCommand::demo_a_;

// gdb EXE CORE on a program linked with libtimeline.a: the module is
// sourced (there is no libtimeline.so.1 objfile to auto-load from), and
// `timeline` prints the reader's timeline of the core gdb has open, with the
// executable gdb loaded, byte for byte.
TEST_F(GdbCommand, TextTimelineOfTheCoreGdbHasOpen) {
  SKIP_WITHOUT_GDB();
  const auto r = gdb_batch({"info sharedlibrary", "timeline"}, {kDemo, demo_a_.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("libtimeline.so"), std::string::npos) << "crash_demo is not static:\n" << r.out;
  const std::string expected = reader_text({demo_a_.core_path, kDemo});
  ASSERT_NE(expected, "");
  EXPECT_NE(r.out.find(expected), std::string::npos) << "gdb printed:\n" << r.out << "\nthe reader:\n" << expected;
  EXPECT_NE(r.out.find("core-timeline: core-only, pid " + std::to_string(demo_a_.pid) + " (crash_demo)"),
            std::string::npos)
      << r.out;
  for (const char *s : {"open spans at the crash:", "REQUEST request_id=41", "REQ_PARSE        request_id=41",
                        "FREE             ptr=", "BEFORE_DIE       code=1001", "CRASH            sig=SIGSEGV",
                        "crash: SIGSEGV (SEGV_MAPERR) addr=0x0", "(crash_demo.c:"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
}

TEST_F(GdbCommand, JsonDocumentParses) {
  SKIP_WITHOUT_GDB();
  const auto r = gdb_batch({"timeline --json --wall-clock"}, {kDemo, demo_a_.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.out << r.err;
  const json doc = json_in(r.out);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_EQ(doc["exit_code"], 0);
  EXPECT_EQ(doc["process"]["pid"], demo_a_.pid) << doc["process"].dump();
  std::vector<std::string> names;
  for (const auto &e : doc["events"]) names.push_back(e["name"]);
  for (const char *n : {"REQ_PARSE", "FREE", "BEFORE_DIE", "CRASH"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n << " missing from " << doc["events"].dump();
}

// The options reach the reader: the same output as the reader's own with them.
TEST_F(GdbCommand, OptionsArePassedToTheReader) {
  SKIP_WITHOUT_GDB();
  const auto r = gdb_batch({"timeline --by-thread --no-symbols"}, {kDemo, demo_a_.core_path});
  ASSERT_EQ(r.exit_code(), 0) << r.out << r.err;
  const std::string expected = reader_text({"--by-thread", "--no-symbols", demo_a_.core_path, kDemo});
  EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("thread " + std::to_string(demo_a_.pid) + " (crash_demo): "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("(crash_demo.c:"), std::string::npos) << "symbolized despite --no-symbols:\n" << r.out;
}

// Words the command refuses before running the reader, and an option the
// reader refuses (its usage error, exit 7, as a gdb error).
TEST_F(GdbCommand, BadArgumentsAreGdbErrors) {
  SKIP_WITHOUT_GDB();
  struct Case {
    std::string command, says;
  } cases[] = {
      {"timeline other.core", "timeline: unexpected argument 'other.core'"},
      {"timeline --tlmap", "timeline: --tlmap needs a value"},
      {"timeline --pid 1", "timeline: --pid comes from gdb"},
      {"timeline --no-such-option", "The following argument was not expected: --no-such-option"},
      {"timeline --no-such-option", "core-timeline-read failed (its stderr is above) (exit 7: usage error"},
      {"timeline --tlmap /nonexistent/tlmap", "core-timeline-read: --tlmap: "},
  };
  for (const auto &c : cases) {
    const auto r = gdb_batch({c.command}, {kDemo, demo_a_.core_path});
    EXPECT_NE(r.exit_code(), 0) << c.command << ": gdb -batch ends non-zero when its last command failed";
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.command << ": " << r.err;
    EXPECT_EQ(r.out.find("REQ_PARSE"), std::string::npos) << c.command << ": " << r.out;
  }
}

// --save keeps a live process's snapshot as a core file: on a core gdb has
// open it is refused with a sentence about that (the reader's own "--save
// requires --pid" would name an option the command refuses), and nothing
// is written.  --force alone too.
TEST_F(GdbCommand, SaveOnACoreIsRefusedSayingWhy) {
  SKIP_WITHOUT_GDB();
  char tmpl[] = "/tmp/ct-gdb-save-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, file = dir + "/copy.core";
  const std::string save = "timeline: --save keeps the snapshot of a live process as a core file; gdb has the core " +
                           demo_a_.core_path + " open, which is such a file already (copy it to keep it)";
  struct Case {
    std::string command, says;
  } cases[] = {
      {"timeline --save " + file, save},
      {"timeline --json --save=" + file + " --force", save},
      {"timeline --force", "timeline: --force lets --save replace its FILE, and --save is for a live process; gdb "
                           "has the core " + demo_a_.core_path + " open"},
  };
  for (const auto &c : cases) {
    const auto r = gdb_batch({c.command, "print $_timeline_exit"}, {kDemo, demo_a_.core_path});
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.command << ": " << r.err;
    EXPECT_EQ(r.err.find("requires"), std::string::npos) << c.command << ": " << r.err;
    EXPECT_EQ(r.out.find("REQ_PARSE"), std::string::npos) << c.command << ": " << r.out;
    EXPECT_NE(r.out.find("$1 = void"), std::string::npos) << c.command << ": the reader ran: " << r.out;
    EXPECT_FALSE(fs::exists(file)) << c.command;
  }
  fs::remove_all(dir);
}

// $CORE_TIMELINE_READ, when set, is the reader run, whatever PATH holds; one
// that is not an executable file is a gdb error naming it.  Without it and
// with no reader on PATH or beside the module, the error says where the
// command looked.
TEST_F(GdbCommand, CoreTimelineReadNamesTheReader) {
  SKIP_WITHOUT_GDB();
  auto o = gdb_options(/*installed_reader=*/true);  // PATH=/nonexistent
  o.env["CORE_TIMELINE_READ"] = kReader;
  const auto set = gdb_batch({"timeline"}, {kDemo, demo_a_.core_path}, o);
  ASSERT_EQ(set.exit_code(), 0) << set.out << set.err;
  EXPECT_NE(set.out.find(reader_text({demo_a_.core_path, kDemo})), std::string::npos) << set.out;
  o.env["CORE_TIMELINE_READ"] = "/nonexistent/core-timeline-read";
  const auto bad = gdb_batch({"timeline"}, {kDemo, demo_a_.core_path}, o);
  EXPECT_NE(bad.exit_code(), 0);
  EXPECT_NE(bad.err.find("timeline: CORE_TIMELINE_READ=/nonexistent/core-timeline-read is not an executable file"),
            std::string::npos)
      << bad.err;
  const auto none = gdb_batch({"timeline"}, {kDemo, demo_a_.core_path}, gdb_options(/*installed_reader=*/true));
  EXPECT_NE(none.exit_code(), 0);
  EXPECT_NE(none.err.find("timeline: core-timeline-read not found (not at "), std::string::npos) << none.err;
}

// The executable gdb has loaded is the one the reader checks against the
// core: another program's is refused (exit 5), shown as a gdb error with the
// reader's reason, and $_timeline_exit says 5.
TEST_F(GdbCommand, TheExecutableGdbLoadedIsPassedAndChecked) {
  SKIP_WITHOUT_GDB();
  const auto r = gdb_batch({"timeline", "print $_timeline_exit"}, {kNolib, demo_a_.core_path});
  EXPECT_NE(r.err.find("core-timeline-read: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(exit 5: the executable was refused: its build-id does not match the core)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("$1 = 5"), std::string::npos) << r.out;
}

// A core of a program without libtimeline: the reader's exit 1 and reason.
TEST_F(GdbCommand, NoLibtimelineIsAGdbErrorWithTheReadersReason) {
  SKIP_WITHOUT_GDB();
  const auto nolib = ct::test::run_and_collect_core({kNolib, "--path=a"});
  const auto r = gdb_batch({"timeline"}, {kNolib, nolib.core_path});
  EXPECT_NE(r.exit_code(), 0);
  EXPECT_NE(r.err.find("no CTLN mapping"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(exit 1: no CTLN mapping found: the process did not use libtimeline)"), std::string::npos)
      << r.err;
}

// Nothing to read: gdb with an executable only.
TEST_F(GdbCommand, WithoutACoreOrAProcessItSaysWhat) {
  SKIP_WITHOUT_GDB();
  const auto r = gdb_batch({"timeline"}, {kDemo});
  EXPECT_NE(r.exit_code(), 0);
  EXPECT_NE(r.err.find("timeline: no core file and no process"), std::string::npos) << r.err;
}

TEST_F(GdbCommand, HelpTimeline) {
  SKIP_WITHOUT_GDB();
  const auto r = gdb_batch({"help timeline"}, {});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  for (const char *s : {"Print the libtimeline timeline of the core or process gdb debugs.", "--tlmap FILE",
                        "core-timeline-read --pid PID", "$_timeline_exit"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out;
}

// A tree installed with `cmake --install --prefix DIR`: gdb, told that
// DIR/share/gdb/auto-load is its scripts-directory and DIR its safe-path,
// runs the stub by itself when it loads DIR/.../libtimeline.so.1 from the
// core of a process that loaded it, and the installed module runs the
// installed reader (beside it in DIR/bin; CORE_TIMELINE_READ unset).
// Without those settings `timeline` is not defined: the stub did it.
class GdbAutoLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GDB();
    char tmpl[] = "/tmp/ct-gdb-install-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = fs::canonical(tmpl);  // gdb looks up the library's realpath
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }
  // cmake --install of this build; DESTDIR when not empty.
  void install(const std::string &prefix, const std::string &destdir) {
    ct::test::ProcessOptions o;
    o.err = ct::test::Stream::to_stdout();
    if (!destdir.empty()) o.env["DESTDIR"] = destdir;
    const auto r = ct::test::run({CT_CMAKE, "--install", CT_BUILD_DIR, "--prefix", prefix}, o);
    ASSERT_EQ(r.exit_code(), 0) << r.out;
  }
  // The one libtimeline.so.1 under `dir`.
  static fs::path find_soname(const fs::path &dir) {
    for (const auto &e : fs::recursive_directory_iterator(dir))
      if (e.path().filename() == "libtimeline.so.1") return e.path();
    return {};
  }
  fs::path root_;
};

TEST_F(GdbAutoLoad, GdbLoadsTheStubWithLibtimelineSo1) {
  // Staged with DESTDIR, then moved into place (as a package is unpacked),
  // so that nothing is written outside root_ even if this build was
  // configured with an absolute install directory.
  const fs::path prefix = root_ / "usr";
  const fs::path stage = root_ / "stage";
  ASSERT_NO_FATAL_FAILURE(install(prefix, stage));
  fs::rename(stage.string() + prefix.string(), prefix);
  const fs::path soname = find_soname(prefix);
  ASSERT_FALSE(soname.empty()) << "no libtimeline.so.1 installed under " << prefix;
  const fs::path real = fs::canonical(soname);
  EXPECT_EQ(real.filename(), std::string("libtimeline.so.") + CT_LIB_VERSION);
  const fs::path scripts = prefix / "share/gdb/auto-load";
  const fs::path stub = scripts.string() + real.string() + "-gdb.py";
  ASSERT_TRUE(fs::exists(stub)) << stub << " missing: gdb would look for it";
  EXPECT_NE(slurp(stub).find((prefix / "share/core-timeline/gdb/timeline.py").string()), std::string::npos)
      << slurp(stub);

  ct::test::CrashOptions co;
  co.env["LD_LIBRARY_PATH"] = soname.parent_path().string();
  const auto crash = ct::test::run_and_collect_core({kShared, "--path=b"}, co);
  auto o = gdb_options(/*installed_reader=*/true);
  o.env["PATH"] = "/nonexistent";  // the reader comes from the install tree, not PATH

  const auto on = ct::test::run({kGdb, "-nx", "-batch", "-iex", "set auto-load scripts-directory " + scripts.string(),
                                 "-iex", "set auto-load safe-path " + root_.string(), "-ex",
                                 "info auto-load python-scripts", "-ex", "timeline", kShared, crash.core_path},
                                o);
  ASSERT_EQ(on.exit_code(), 0) << on.out << on.err;
  const auto listed = on.out.find(stub.string() + " \n");  // "Yes     <stub> "
  ASSERT_NE(listed, std::string::npos) << "info auto-load python-scripts does not list " << stub << ":\n" << on.out;
  const auto line = on.out.rfind('\n', listed) + 1;
  EXPECT_EQ(on.out.substr(line, 4), "Yes ") << on.out.substr(line, listed - line);
  const std::string expected = reader_text({crash.core_path, kShared});
  EXPECT_NE(on.out.find(expected), std::string::npos) << "gdb printed:\n" << on.out << "\nthe reader:\n" << expected;
  for (const char *s : {"CONFIG_RELOAD    generation=7", "BEFORE_DIE       code=2002", "crash: SIGSEGV"})
    EXPECT_NE(on.out.find(s), std::string::npos) << s << " missing from\n" << on.out;

  EXPECT_FALSE(fs::exists(prefix / "share/core-timeline/gdb/__pycache__"))
      << "the stub let Python write bytecode into the package's directory";

  const auto off = ct::test::run({kGdb, "-nx", "-batch", "-ex", "timeline", kShared, crash.core_path}, o);
  EXPECT_NE(off.err.find("Undefined command: \"timeline\""), std::string::npos) << off.out << off.err;
}

// The documented path for a program linked with libtimeline.a, as a user
// of an installed tree types it (docs/gdb.md, docs/using.md "In gdb"): gdb EXE
// CORE, then `source <prefix>/share/core-timeline/gdb/timeline.py`, then
// `timeline`, with CORE_TIMELINE_READ unset and no reader on PATH: the
// module, run by gdb's `source` (which leaves it no __file__), finds the
// reader installed beside it in <prefix>/bin.
TEST_F(GdbAutoLoad, SourcedInstalledModuleRunsTheReaderBesideIt) {
  const fs::path prefix = root_ / "usr";
  const fs::path stage = root_ / "stage";
  ASSERT_NO_FATAL_FAILURE(install(prefix, stage));
  fs::rename(stage.string() + prefix.string(), prefix);
  const fs::path module = prefix / "share/core-timeline/gdb/timeline.py";
  ASSERT_TRUE(fs::exists(module)) << module;
  ASSERT_TRUE(fs::exists(prefix / "bin/core-timeline-read"));

  const auto crash = ct::test::run_and_collect_core({kDemo, "--path=a"});
  const auto r = ct::test::run({kGdb, "-nx", "-batch", "-ex", "source " + module.string(), "-ex", "timeline",
                                "-ex", "print $_timeline_exit", kDemo, crash.core_path},
                               gdb_options(/*installed_reader=*/true));
  ASSERT_EQ(r.exit_code(), 0) << r.out << r.err;
  EXPECT_EQ(r.err.find("Python Exception"), std::string::npos) << r.err;
  const std::string expected = reader_text({crash.core_path, kDemo});
  EXPECT_NE(r.out.find(expected), std::string::npos) << "gdb printed:\n" << r.out << "\nthe reader:\n" << expected;
  EXPECT_NE(r.out.find("$1 = 0"), std::string::npos) << r.out;
}

// The .deb's layout (prefix /usr, DESTDIR): the stub's path under
// /usr/share/gdb/auto-load (gdb's default scripts-directory and safe-path
// on Debian) is the real file name libtimeline.so.1 resolves to, and it
// names the module where that is installed.
TEST_F(GdbAutoLoad, PackagedStubMatchesTheRealLibraryName) {
  ASSERT_NO_FATAL_FAILURE(install("/usr", root_.string()));
  const fs::path soname = find_soname(root_);
  ASSERT_FALSE(soname.empty());
  const fs::path real = fs::canonical(soname);
  const std::string inside = real.string().substr(root_.string().size());  // /usr/lib/.../libtimeline.so.V
  ASSERT_EQ(inside.rfind("/usr/", 0), 0u) << inside;
  const fs::path stub = root_.string() + "/usr/share/gdb/auto-load" + inside + "-gdb.py";
  ASSERT_TRUE(fs::exists(stub)) << stub << " missing";
  EXPECT_NE(slurp(stub).find("\"/usr/share/core-timeline/gdb/timeline.py\""), std::string::npos) << slurp(stub);
  EXPECT_TRUE(fs::exists(root_ / "usr/share/core-timeline/gdb/timeline.py"));
  const auto safe = ct::test::run({kGdb, "-nx", "-batch", "-ex", "show auto-load safe-path"});
  EXPECT_NE(safe.out.find("$datadir/auto-load"), std::string::npos) << safe.out;
  const auto datadir = ct::test::run({kGdb, "-nx", "-batch", "-ex", "show data-directory"});
  EXPECT_NE(datadir.out.find("\"/usr/share/gdb\""), std::string::npos) << datadir.out;
}

// coredumpctl debug PID (systemd 252: --debugger-arguments=, split like a
// shell's words): the core coredumpctl decompressed for gdb, read by the
// command.
TEST_F(GdbCommand, CoredumpctlDebug) {
  SKIP_WITHOUT_GDB();
  if (kCoredumpctl.empty()) GTEST_SKIP() << "coredumpctl not found when configuring (systemd-coredump installs it)";
  auto o = gdb_options();
  const auto r = ct::test::run({kCoredumpctl, "debug", "--debugger=" + kGdb,
                                "--debugger-arguments=-nx -batch -iex 'source " + kModule + "' -ex timeline",
                                std::to_string(demo_a_.pid)},
                               o);
  ASSERT_EQ(r.exit_code(), 0) << r.out << r.err;
  for (const char *s : {"core-timeline: core-only, pid ", "REQ_PARSE        request_id=41",
                        "BEFORE_DIE       code=1001", "crash: SIGSEGV (SEGV_MAPERR) addr=0x0"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out << r.err;
  EXPECT_NE(r.out.find("pid " + std::to_string(demo_a_.pid) + " (crash_demo)"), std::string::npos) << r.out;
}

// Live processes (no crash, no core): gdb runs the program itself.
//
// A live process stopped at a breakpoint in die(), before the crash: the
// events recorded so far, read from its memory (core-timeline-read --pid,
// with the executable gdb loaded), byte for byte what the reader prints of
// a snapshot saved from the same stop (--save, read back), less the line
// that says when the snapshot was taken.
TEST(GdbLive, ProcessAtABreakpoint) {
  SKIP_WITHOUT_GDB();
  char tmpl[] = "/tmp/ct-gdb-live-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, saved = dir + "/snapshot.core";
  const auto r = ct::test::run({kGdb, "-nx", "-batch", "-iex", "source " + kModule, "-ex", "break die", "-ex", "run",
                                "-ex", "timeline --save " + saved, "-ex", "print $_timeline_exit", "-ex", "kill",
                                "--args", kDemo, "--path=a"},
                               gdb_options());
  ASSERT_EQ(r.exit_code(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Breakpoint 1, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("core-timeline: live snapshot of pid "), std::string::npos) << r.out;
  for (const char *s : {"REQUEST          begin request_id=41", "REQ_PARSE        request_id=41",
                        "FREE             ptr=", "BEFORE_DIE       code=1001", "(crash_demo.c:87) in crash_demo",
                        "$1 = 0"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " missing from\n" << r.out << r.err;
  EXPECT_EQ(r.out.find("CRASH            sig="), std::string::npos) << "no crash yet:\n" << r.out;
  EXPECT_EQ(r.out.find("\ncrash: "), std::string::npos) << "no crash yet:\n" << r.out;

  // The snapshot gdb's command saved, read by the reader itself: the same
  // events (each line after the headline and the time line).
  std::string expected = reader_text({saved, kDemo});
  fs::remove_all(dir);
  const auto events = expected.find("open spans");
  ASSERT_NE(events, std::string::npos) << expected;
  EXPECT_NE(r.out.find(expected.substr(events)), std::string::npos)
      << "gdb printed:\n" << r.out << "\nthe reader, of the saved snapshot:\n" << expected;
}

// A live process whose ring the reader cannot find: the process gdb runs
// is crash_demo_nolib, stopped in die().  The reader's reason and exit 1.
TEST(GdbLive, ProcessWithoutLibtimeline) {
  SKIP_WITHOUT_GDB();
  const auto r = ct::test::run({kGdb, "-nx", "-batch", "-iex", "source " + kModule, "-ex", "break die", "-ex", "run",
                                "-ex", "timeline", "-ex", "print $_timeline_exit", "-ex", "kill", "--args", kNolib,
                                "--path=a"},
                               gdb_options());
  EXPECT_NE(r.out.find("Breakpoint 1, "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("core-timeline-read: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(exit 1: no CTLN mapping found"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("$1 = 1"), std::string::npos) << r.out;
}

}  // namespace
