// SPDX-License-Identifier: MIT
// python_crash_test - Debian's /usr/bin/python3 under libtimeline-io.so runs
// a small socket server: it listens on 127.0.0.1 (port 0, the port it got
// printed on stdout), accepts one connection, receives one line (a line no
// other run sends) and crashes through ctypes (`ctypes.string_at(0)`: libc
// reads address 0, SIGSEGV).  Its core comes through the
// real systemd-coredump pipeline (tests/support/crash_harness.h).  The
// crashing thread's timeline must show the ACCEPT of the connection (peer
// 127.0.0.1), then the RECVs of the request on the fd the reader ties to
// that accept (CPython's socket.recv calls recv(2), glibc's recv the
// recvfrom system call), whose results add up to the line's length, and a
// SIGSEGV CRASH after them.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "crash_harness.h"
#include "schema_check.h"
#include "process.h"
#include "test_files.h"

namespace {

namespace fmt = core_timeline::format;
namespace rd = core_timeline::reader;
using namespace std::chrono_literals;

/* The server: the port on the first line of stdout, then the request read up
 * to its newline, then the crash. */
constexpr const char kServer[] = R"(import ctypes, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
request = b""
while not request.endswith(b"\n"):
    got = c.recv(4096)
    if not got:
        sys.exit("connection closed before the newline")
    request += got
ctypes.string_at(0)
)";

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/* A directory under /tmp, removed with what is in it on every path out. */
struct TempDir : ct::test::TempDir {
  TempDir() : ct::test::TempDir("ct-python") {}
};

/* The python process: killed and reaped if the test leaves before it died. */
struct Child {
  pid_t pid = -1;
  std::optional<int> status;
  bool reaped() {
    int st;
    if (!status && waitpid(pid, &st, WNOHANG) == pid) status = st;
    return status.has_value();
  }
  ~Child() {
    if (pid > 0 && !reaped()) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

/* Connect to 127.0.0.1:port and send `line` in one write. */
void send_request(int port, const std::string &line, Fd &client) {
  client.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client.fd, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(static_cast<std::uint16_t>(port));
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(client.fd, reinterpret_cast<sockaddr *>(&sin), sizeof sin), 0) << "port " << port;
  ASSERT_EQ(send(client.fd, line.data(), line.size(), MSG_NOSIGNAL), static_cast<ssize_t>(line.size()));
}

TEST(PythonCrash, CrashingThreadShowsTheAcceptThenTheRecvOfTheRequest) {
  TempDir dir;
  const std::string script = dir.path + "/server.py", out = dir.path + "/stdout", err = dir.path + "/stderr";
  std::ofstream(script) << kServer;
  const std::string request = "CRASH-ME-" + std::to_string(getpid()) + "-" + std::to_string(std::random_device{}()) + "\n";

  ct::test::ProcessOptions o;
  o.env["LD_PRELOAD"] = std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_IO_SO;
  o.out = ct::test::Stream::file(out);
  o.err = ct::test::Stream::file(err);
  o.in_child = [] {
    /* Default dispositions and an empty mask for the crash, as the harness's
     * own children get. */
    signal(SIGSEGV, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
  };
  const auto not_before = std::chrono::system_clock::now();
  Child py;
  py.pid = ct::test::spawn({CT_PYTHON3, "-I", script}, o);

  /* The port: a whole first line on stdout (or the process died first). */
  int port = 0;
  ASSERT_TRUE(ct::test::wait_until(
      [&] {
        const std::string s = read_file(out);
        if (s.find('\n') != std::string::npos) port = std::stoi(s);
        return port > 0 || py.reaped();
      },
      60s))
      << "no port from python: " << read_file(err);
  ASSERT_GT(port, 0) << "python ended without a port: " << read_file(err);

  Fd client;
  ASSERT_NO_FATAL_FAILURE(send_request(port, request, client));
  ASSERT_TRUE(ct::test::wait_until([&] { return py.reaped(); }, 60s)) << "python did not crash";
  ASSERT_TRUE(WIFSIGNALED(*py.status)) << "status " << *py.status << ": " << read_file(err);
  EXPECT_EQ(WTERMSIG(*py.status), SIGSEGV);
  const std::string core = ct::test::fetch_core_for_pid(py.pid, not_before, "", 60s);

  rd::ReadOptions ro;
  ro.core_only = true;
  ro.symbolize = false;
  const rd::Analysis a = rd::analyze_file(core, ro);
  ASSERT_EQ(a.status, rd::Status::kOk) << a.reason;
  /* Both documents of this real program's timeline are what the schema says. */
  EXPECT_EQ(ct::test::schema_errors_of(rd::render_compact(a), CT_SCHEMA_PATH), "") << "the compact document";
  EXPECT_EQ(ct::test::schema_errors_of(rd::render_json(a), CT_SCHEMA_PATH), "") << "the full document";
  const std::string text = rd::render_text(a);
  ASSERT_TRUE(a.crash) << text;
  EXPECT_EQ(a.crash->signo, SIGSEGV) << text;
  const std::uint32_t tid = a.crash->tid;

  /* On the crashing thread: the RECVs tied to an ACCEPT, and the CRASH. */
  std::optional<std::uint32_t> accept;
  std::optional<std::size_t> first_recv, crash;
  std::int64_t received = 0;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const rd::Event &e = a.events[i];
    if (e.tid != tid) continue;
    if (e.kind == fmt::kKindCrash) crash = i;
    if (e.kind != fmt::kKindRecv || e.fd_state != rd::FdOrigin::kFound ||
        a.events[e.fd_origin].kind != fmt::kKindAccept)
      continue;
    EXPECT_TRUE(!accept || *accept == e.fd_origin) << "RECVs on two accepted fds:\n" << text;
    accept = e.fd_origin;
    if (!first_recv) first_recv = i;
    if (rd::io_result(e) > 0) received += rd::io_result(e);
  }
  ASSERT_TRUE(first_recv) << "no RECV on an accepted fd on thread " << tid << ":\n" << text;
  EXPECT_EQ(received, static_cast<std::int64_t>(request.size())) << text;
  EXPECT_LT(*accept, *first_recv);
  EXPECT_EQ(a.events[*accept].tid, tid) << text;

  /* The accepted connection came from 127.0.0.1, as the JSON and the text say. */
  const auto doc = rd::to_json(a);
  ASSERT_EQ(doc["events"].size(), a.events.size());
  EXPECT_EQ(doc["events"][*accept]["io"]["peer"].get<std::string>().substr(0, 10), "127.0.0.1:") << text;
  const std::int64_t fd = rd::io_result(a.events[*accept]);
  EXPECT_NE(text.find("fd=" + std::to_string(fd) + " (accepted from 127.0.0.1:"), std::string::npos) << text;

  /* The CRASH came after, and says SIGSEGV. */
  ASSERT_TRUE(crash) << "no CRASH event on thread " << tid << ":\n" << text;
  EXPECT_GT(*crash, *first_recv);
  const rd::CrashSlot *slot = a.crash_of(a.events[*crash]);
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->signo, SIGSEGV) << text;
  EXPECT_EQ(slot->fault_address, 0u) << text;

  if (!HasFailure()) unlink(core.c_str()); /* kept when a check failed */
}

}  // namespace
