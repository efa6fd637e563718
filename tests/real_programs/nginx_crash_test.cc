// SPDX-License-Identifier: MIT
// nginx_crash_test - Debian's nginx-light (a master and two workers,
// loopback only) under libtimeline-io.so: curl asks for a URI no other
// request uses, the worker that served it (its pid from the access log) is
// killed with SIGSEGV, and its core comes through the real systemd-coredump
// pipeline (tests/support/crash_harness.h).  The worker's timeline must
// show, in order: the ACCEPT of the connection, the RECV of the request on
// the fd the reader ties to that accept, the OPEN of the URI's file, and the
// response written to the same fd.
//
// The workers are forked from the master after tl_init: each has a ring of
// its own from the fork on, so the listening socket, made before, has no
// origin in a worker's window; the accepted one has.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/compact.h"
#include "core_timeline/reader/render.h"
#include "core_timeline/ring_format.h"
#include "crash_harness.h"
#include "schema_check.h"
#include "process.h"

namespace {

namespace fmt = core_timeline::format;
namespace rd = core_timeline::reader;
using namespace std::chrono_literals;

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/* A port on 127.0.0.1 that was free a moment ago. */
int free_port() {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sin;
  if (s < 0 || bind(s, reinterpret_cast<sockaddr *>(&sin), sizeof sin) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr *>(&sin), &len) != 0)
    throw std::runtime_error("no free port on 127.0.0.1");
  close(s);
  return ntohs(sin.sin_port);
}

/* curl's HTTP status for `url` ("000" when it could not connect). */
std::string http_status(const std::string &url) {
  ct::test::ProcessOptions o;
  o.err = ct::test::Stream::null();
  o.timeout = 30s;
  return ct::test::run({CT_CURL, "-s", "-o", "/dev/null", "-w", "%{http_code}", url}, o).out;
}

/* nginx's master, stopped (SIGQUIT, a graceful stop) when the test ends. */
struct Nginx {
  pid_t master = -1;
  void stop() {
    if (master <= 0) return;
    kill(master, SIGQUIT);
    int status;
    waitpid(master, &status, 0);
    master = -1;
  }
  ~Nginx() { stop(); }
};

bool is_io(const rd::Event &e) { return e.kind >= fmt::kKindIoFirst && e.kind <= fmt::kKindIoLast; }

TEST(NginxCrash, WorkerTimelineShowsTheAcceptRequestFileAndResponseInOrder) {
  char dir_template[] = "/tmp/ct-nginx-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template, www = dir + "/www";
  chmod(dir.c_str(), 0755);
  std::filesystem::create_directory(www);
  const std::string name = "ct-" + std::to_string(getpid()) + ".html", file = www + "/" + name;
  std::ofstream(file) << "core-timeline\n";
  const int port = free_port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::ofstream(dir + "/nginx.conf")
      << "user root;\nworker_processes 2;\npid " << dir << "/nginx.pid;\nerror_log " << dir << "/error.log;\n"
      << "events { worker_connections 64; }\n"
      << "http {\n  log_format ct '$pid $request_uri $status';\n  access_log " << dir << "/access.log ct;\n"
      << "  server { listen 127.0.0.1:" << port << "; root " << www << "; }\n}\n";

  ct::test::ProcessOptions o;
  o.env["LD_PRELOAD"] = std::string(CT_LIBTIMELINE_SO) + " " + CT_PRELOAD_IO_SO;
  o.out = ct::test::Stream::file(dir + "/stdout");
  o.err = ct::test::Stream::file(dir + "/stderr");
  const auto not_before = std::chrono::system_clock::now();
  Nginx nginx;
  nginx.master = ct::test::spawn({CT_NGINX, "-c", dir + "/nginx.conf", "-p", dir, "-g", "daemon off;"}, o);
  ASSERT_TRUE(ct::test::wait_until([&] { return http_status(base + "/ready") == "404"; }, 60s))
      << "nginx did not answer on " << base << ": " << read_file(dir + "/error.log") << read_file(dir + "/stderr");
  ASSERT_EQ(http_status(base + "/" + name), "200") << read_file(dir + "/error.log");

  /* The worker that served it: "PID /URI STATUS" in the access log. */
  pid_t worker = 0;
  ASSERT_TRUE(ct::test::wait_until(
      [&] {
        std::istringstream log(read_file(dir + "/access.log"));
        std::string pid, uri, status;
        while (log >> pid >> uri >> status)
          if (uri == "/" + name) worker = std::stoi(pid);
        return worker > 0;
      },
      30s))
      << read_file(dir + "/access.log");
  ASSERT_EQ(kill(worker, SIGSEGV), 0);
  const std::string core = ct::test::fetch_core_for_pid(worker, not_before, "", 60s);

  rd::ReadOptions ro;
  ro.core_only = true;
  ro.symbolize = false;
  const rd::Analysis a = rd::analyze_file(core, ro);
  ASSERT_EQ(a.status, rd::Status::kOk) << a.reason;
  /* Both documents of this real program's timeline are what the schema says. */
  EXPECT_EQ(ct::test::schema_errors_of(rd::render_compact(a), CT_SCHEMA_PATH), "") << "the compact document";
  EXPECT_EQ(ct::test::schema_errors_of(rd::render_json(a), CT_SCHEMA_PATH), "") << "the full document";
  const std::string text = rd::render_text(a);

  /* The OPEN of the file, then around it the connection's events. */
  std::optional<std::size_t> open;
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const auto path = rd::event_inline_text(a, a.events[i]);
    if (a.events[i].kind == fmt::kKindOpen && path && *path == file && rd::io_result(a.events[i]) >= 0) open = i;
  }
  ASSERT_TRUE(open) << "no OPEN of " << file << ":\n" << text;
  /* The latest RECV with bytes before the OPEN, on an fd tied to an ACCEPT. */
  std::optional<std::size_t> recv;
  for (std::size_t i = 0; i < *open; ++i) {
    const rd::Event &e = a.events[i];
    if (e.kind == fmt::kKindRecv && rd::io_result(e) > 0 && e.fd_state == rd::FdOrigin::kFound &&
        a.events[e.fd_origin].kind == fmt::kKindAccept)
      recv = i;
  }
  ASSERT_TRUE(recv) << "no RECV of the request on an accepted fd before the OPEN:\n" << text;
  const std::uint32_t accept = a.events[*recv].fd_origin;
  const std::int64_t fd = rd::io_result(a.events[accept]);
  EXPECT_LT(accept, *recv);
  const auto doc = rd::to_json(a);
  ASSERT_EQ(doc["events"].size(), a.events.size());
  EXPECT_EQ(doc["events"][accept]["io"]["peer"].get<std::string>().substr(0, 10), "127.0.0.1:") << text;
  /* The response: a write to the same connection after the OPEN. */
  std::optional<std::size_t> response;
  for (std::size_t i = *open + 1; i < a.events.size() && !response; ++i) {
    const rd::Event &e = a.events[i];
    const bool sends = e.kind == fmt::kKindWrite || e.kind == fmt::kKindSend || e.kind == fmt::kKindSendfile;
    if (sends && is_io(e) && rd::io_fd(e) == fd && rd::io_result(e) > 0 && e.fd_origin == accept) response = i;
  }
  EXPECT_TRUE(response) << "no response written to fd " << fd << " after the OPEN:\n" << text;
  const std::string accepted = "fd=" + std::to_string(fd) + " (accepted from 127.0.0.1:";
  EXPECT_NE(text.find(accepted), std::string::npos) << text;

  nginx.stop();
  std::filesystem::remove_all(dir);
  if (!HasFailure()) unlink(core.c_str()); /* kept when a check failed */
}

}  // namespace
