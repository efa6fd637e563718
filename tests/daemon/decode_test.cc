// SPDX-License-Identifier: MIT
//
// decode_test.cc (daemon_unit_test): the isolated decoder: its limits, users,
// cache, output and server (decode.h).

#include "daemon_unit_support.h"
#include "core_timeline/reader/compact.h"

// The room RLIMIT_AS leaves for the core (memory limit + the core's size)
// cannot be spent on the decoder's own memory: a core of 8 GiB of zeros
// (kept sparse, the crashed user's choice) buys no heap.
TEST(DecoderLimits, CoreSizeBuysTheDecoderNoMemoryOfItsOwn) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space at start: an ASan build's decoders get no RLIMIT_AS "
                  "(daemon/src/decode.cc, kLimitAddressSpace), and this process none it could test";
#endif
  TempDir dir;
  const std::string core = dir.path + "/sparse-core";
  constexpr rlim_t kCore = 8ull << 30, kOwn = 256ull << 20;
  {
    const int fd = open(core.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kCore)), 0);
    close(fd);
  }
  const pid_t p = fork();
  ASSERT_GE(p, 0);
  if (p == 0) {
    const int fd = open(core.c_str(), O_RDONLY);
    if (fd < 0 || dup2(fd, 3) < 0) _exit(10);
    const rlimit as{kCore + kOwn, kCore + kOwn};
    if (setrlimit(RLIMIT_AS, &as) < 0) _exit(11);
    ctd::limit_own_memory();
    rlimit data{};
    if (getrlimit(RLIMIT_DATA, &data) < 0 || data.rlim_cur != kOwn) _exit(12);
    // The core still maps whole, read-only, as the reader maps it.
    if (mmap(nullptr, kCore, PROT_READ, MAP_PRIVATE, 3, 0) == MAP_FAILED) _exit(13);
    // Within the limit: fine.  Beyond it (though RLIMIT_AS would allow
    // it without the core's mapping): refused.
    void *small = malloc(kOwn / 4);
    if (!small) _exit(14);
    void *big = malloc(2 * kOwn);
    _exit(big ? 15 : 0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(p, &st, 0), p);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "10-11: setup, 12: RLIMIT_DATA not the memory limit, 13: the core did not map, "
                                   "14: the decoder's own memory refused, 15: more than its own memory allowed";
}

// ---- the isolated decoder ---------------------------------------------------

namespace {

ctd::DecodeRequest request_for(int fd, std::uint64_t size) {
  ctd::DecodeRequest r;
  r.core_fd = fd;
  r.core_size = size;
  r.display_name = "/var/lib/systemd/coredump/core.test";
  r.self_exe = CT_DAEMON_BIN;
  return r;
}

// A FIFO `name` in `dir` that a decoder, which runs as nobody here
// (request_for), may open for reading: the directory 0755, the FIFO 0644.
std::string reachable_fifo(const TempDir &dir, const std::string &name) {
  const std::string fifo = dir.path + "/" + name;
  EXPECT_EQ(chmod(dir.path.c_str(), 0755), 0);
  EXPECT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  return fifo;
}

// The children of this process (/proc/self/task/TID/children, proc(5)).
std::vector<pid_t> my_children() {
  std::vector<pid_t> out;
  std::ifstream f("/proc/self/task/" + std::to_string(gettid()) + "/children");
  pid_t p;
  while (f >> p) out.push_back(p);
  return out;
}

}  // namespace

// Each decoder test runs twice: decoders started by fork and exec, and by
// the decoder server (decode.h), which must behave the same.
class Decoder : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto s = ctd::DecoderServer::start(CT_DAEMON_BIN);
      ASSERT_TRUE(s) << s.error().message;
      server_ = std::move(*s);
    }
  }
  ctd::DecoderServer *server() { return GetParam() ? &server_ : nullptr; }
  // The decoders among this process's children (not the server).
  std::vector<pid_t> decoders() {
    std::vector<pid_t> out;
    for (pid_t p : my_children())
      if (p != server_.pid()) out.push_back(p);
    return out;
  }
  ctd::Result<ctd::DecodeResult> decode(const ctd::DecodeRequest &req, const ctd::DecodeLimits &limits,
                                   const std::function<bool()> &keep_going) {
    auto r = ctd::run_decoder(req, limits, keep_going, server());
    if (r) {
      EXPECT_EQ(r->server_failure, "");
    }
    return r;
  }
  ctd::DecoderServer server_;
};
INSTANTIATE_TEST_SUITE_P(ExecOrServer, Decoder, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &p) { return p.param ? "Server" : "ForkExec"; });

TEST_P(Decoder, NotACoreIsDecodedAsCoreUnreadableWithTheRealPathShown) {
  TempDir dir;
  write_bytes(dir.path + "/notacore", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/notacore").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto r = decode(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->decoded) << r->failure;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->document.tree["status"], "core_unreadable");
  EXPECT_EQ(r->document.summary.status, ctd::Status::kCoreUnreadable);
  EXPECT_EQ(r->document.tree["core"]["path"], "/var/lib/systemd/coredump/core.test");
  EXPECT_EQ(r->document.tree.dump().find("/proc/self/fd"), std::string::npos) << r->document.tree.dump();
  EXPECT_GT(r->max_rss_kb, 0u);
  // This machine kind's kernel has Landlock (ABI 7 measured): a decoder
  // that did not confine itself is a failure, not a skip.
  EXPECT_GE(r->landlock_abi, 1);
  EXPECT_TRUE(r->seccomp);
  EXPECT_TRUE(decoders().empty()) << "the decoder was not reaped";
}

// decode.h, "Whose rights": a decoder runs as the uid and gid it is given,
// with no groups, reads the core through fd 3 although that uid could not
// open the file (root's, in a 0700 directory), confirms its credentials,
// and refuses to decode as root.
TEST_P(Decoder, RunsAsTheUserItIsGivenReadsFd3AndNeverDecodesAsRoot) {
  TempDir dir;
  write_bytes(dir.path + "/notacore", std::vector<std::uint8_t>(100, 'x'));
  ASSERT_EQ(chmod((dir.path + "/notacore").c_str(), 0600), 0);
  int fd = open((dir.path + "/notacore").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto req = request_for(fd, 100);
  req.credentials = {47321, 47322, ctd::DecoderAs::kCrashedUser};
  auto r = decode(req, ctd::DecodeLimits{}, [] { return true; });
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->decoded) << r->failure;
  EXPECT_EQ(r->credentials, req.credentials);
  // It read the bytes (no ELF magic), it did not fail to open them.
  EXPECT_EQ(r->document.tree["status"], "core_unreadable");
  EXPECT_EQ(r->document.tree.dump().find("cannot open"), std::string::npos) << r->document.tree.dump();
  EXPECT_EQ(r->document.tree.dump().find("Permission denied"), std::string::npos) << r->document.tree.dump();

  req.credentials = {0, 0, ctd::DecoderAs::kCrashedUser};
  r = decode(req, ctd::DecodeLimits{}, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_NE(r->failure.find("refusing to decode as root"), std::string::npos) << r->failure;
  EXPECT_TRUE(decoders().empty()) << "the decoder was not reaped";
}

TEST(DecoderUsers, UsersDecodeAsThemselvesRootAndSystemUsersAsTheDedicatedUserNeverAsRoot) {
  using A = ctd::DecoderAs;
  using C = ctd::DecoderCredentials;
  const ctd::DecoderUsers with(std::make_pair(uid_t{990}, gid_t{991})), without(std::nullopt);
  EXPECT_EQ(with.for_crash(1000, 1000), (C{1000, 1000, A::kCrashedUser}));
  EXPECT_EQ(with.for_crash(47100, 100), (C{47100, 100, A::kCrashedUser}));
  EXPECT_EQ(with.for_crash(1000, 0), (C{1000, 0, A::kCrashedUser})) << "the process's own primary group";
  EXPECT_EQ(with.for_crash(1000, std::nullopt), (C{1000, 65534, A::kCrashedUser}));
  EXPECT_EQ(with.for_crash(1000, 0xffffffffull), (C{1000, 65534, A::kCrashedUser}));
  EXPECT_EQ(without.for_crash(1000, 1000), (C{1000, 1000, A::kCrashedUser}));
  for (std::uint64_t uid : {0ull, 1ull, 995ull, 999ull, 65534ull, 0xffffffffull, 1ull << 40}) {
    EXPECT_EQ(with.for_crash(uid, 5), (C{990, 991, A::kDedicatedUser})) << uid;
    EXPECT_EQ(without.for_crash(uid, 5), (C{65534, 65534, A::kFallbackUser})) << uid;
  }
  EXPECT_EQ(ctd::decoder_as_name(A::kCrashedUser), "crashed_user");
  EXPECT_EQ(ctd::decoder_as_name(A::kDedicatedUser), "dedicated_user");
  EXPECT_EQ(ctd::decoder_as_name(A::kFallbackUser), "fallback_user");
}

// decode.h, "debuginfod": each decoding uid gets a cache directory of its
// own, root's 0700 with an ACL for that uid, under a base any decoder may
// traverse and none may list.
TEST(DecoderCache, EachDecodingUidHasItsOwnCacheOnlyItMayUse) {
  TempDir dir;
  ASSERT_EQ(chmod(dir.path.c_str(), 0755), 0);
  const std::string base = dir.path + "/debuginfod_client";
  ASSERT_EQ(setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1), 0);
  ASSERT_EQ(setenv("DEBUGINFOD_CACHE_PATH", base.c_str(), 1), 0);
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto req = request_for(fd, 100);
  for (uid_t uid : {47331u, 47332u}) {
    req.credentials = {uid, uid, ctd::DecoderAs::kCrashedUser};
    auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [] { return true; }, nullptr);
    ASSERT_TRUE(r && r->decoded) << (r ? r->failure : r.error().message);
  }
  close(fd);
  unsetenv("DEBUGINFOD_URLS");
  unsetenv("DEBUGINFOD_CACHE_PATH");
  struct stat st;
  ASSERT_EQ(stat(base.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  for (uid_t uid : {47331u, 47332u}) {
    const std::string own = ctd::debuginfod_cache_for(base, uid);
    EXPECT_EQ(own, base + "/" + std::to_string(uid));
    ASSERT_EQ(stat(own.c_str(), &st), 0) << own;
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 0007, 0u) << "others get nothing";
    char acl[128];
    const ssize_t n = getxattr(own.c_str(), "system.posix_acl_access", acl, sizeof acl);
    ASSERT_GT(n, 0) << own << " has no ACL";
    EXPECT_EQ(std::string(acl, static_cast<std::size_t>(n)), ctd::acl_user_dir(uid));
    // As that uid it may create a file there; as the other uid, not.
    for (uid_t as : {47331u, 47332u}) {
      const pid_t p = fork();
      if (p == 0) {
        if (setgroups(0, nullptr) < 0 || setresgid(as, as, as) < 0 || setresuid(as, as, as) < 0) _exit(3);
        const int f = open((own + "/probe").c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        _exit(f >= 0 ? 0 : errno == EACCES ? 1 : 2);
      }
      int w = 0;
      ASSERT_EQ(waitpid(p, &w, 0), p);
      EXPECT_EQ(WEXITSTATUS(w), as == uid ? 0 : 1) << "uid " << as << " in " << own;
    }
  }
}

TEST_P(Decoder, HungDecoderIsKilledAtTheTimeout) {
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // A FIFO without a writer as the event names file: the decoder's open of
  // it never returns, a decoder that never finishes.  (The daemon itself
  // passes only regular files, Daemon::tlmap_for.)
  const std::string fifo = reachable_fifo(dir, "names.tlmap");
  auto req = request_for(fd, 100);
  req.tlmap = fifo;
  ctd::DecodeLimits limits;
  limits.timeout_ms = 300;
  auto r = decode(req, limits, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_TRUE(r->timed_out);
  EXPECT_NE(r->failure.find("did not finish within 300 ms"), std::string::npos) << r->failure;
  EXPECT_TRUE(decoders().empty()) << "the killed decoder was not reaped";
}

// A decoder that was taken over writes what it likes within the protocol:
// JSON nested 200000 deep is 400 KB, far below kMaxOutput, and parses
// (nlohmann's parser keeps its own stack), but copying or dumping it
// recurses once per level.  It must be refused as undecodable, not crash
// the daemon - which would then redo the same entry after every restart.
TEST(DecoderOutput, DeeplyNestedJsonIsUndecodableNotFatal) {
  TempDir dir;
  const int depth = 200000;
  const std::string json = "{\"status\":\"ok\",\"x\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  std::ofstream(dir.path + "/out", std::ios::binary)
      << "CTD1 " << json.size() << " 0 0 0 0 7 1 65534 65534\n" << json;
  const std::string fake = dir.path + "/fake-decoder";
  std::ofstream(fake) << "#!/bin/sh\nexec cat " << dir.path << "/out\n";
  ASSERT_EQ(chmod(fake.c_str(), 0755), 0);
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  auto decode_and_write = [&] {
        const rlimit no_core{1, 1};  // should it crash: no core into the shared pipeline (core(5))
        setrlimit(RLIMIT_CORE, &no_core);
        const int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
        auto req = request_for(fd, 100);
        req.self_exe = fake;
        auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [] { return true; }, nullptr);
        if (!r) _exit(2);
        ctd::CoredumpEntry e;
        e.pid = 1;
        ctd::DocumentParts p;
        p.entry = &e;
        p.verdict = r->decoded ? ctd::judge(e, *r, std::nullopt) : ctd::Verdict{ctd::Status::kUndecodable, r->failure, std::nullopt};
        p.decoded = &*r;
        const std::string text = ctd::serialize(ctd::build_document(p));
        _exit(r->decoded ? 4 : 0);
  };
  EXPECT_EXIT(decode_and_write(), ::testing::ExitedWithCode(0), "");
}

TEST_P(Decoder, MemoryLimitTooSmallMakesItUndecodableNotFatal) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space at start: an ASan build's decoders get no RLIMIT_AS "
                  "(daemon/src/decode.cc, kLimitAddressSpace), and this process none it could test";
#endif
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ctd::DecodeLimits limits;
  limits.memory_limit = 4 << 20;  // the decoder's libraries alone need more
  auto r = decode(request_for(fd, 100), limits, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_FALSE(r->failure.empty());
  if (GetParam()) {
    EXPECT_NE(r->failure.find("below the decoder's own size"), std::string::npos) << r->failure;
    EXPECT_TRUE(r->out_of_memory) << r->failure;
  }
}

// A core with a full ring of `lanes` x `slots` events (full_ring), on a
// descriptor; its size in *size.
int big_ring_core(const TempDir &dir, std::uint32_t lanes, std::uint32_t slots, std::uint64_t *size) {
  ct::test::RingBuilder ring = ct::test::full_ring(lanes, slots);
  const std::vector<std::uint8_t> core = ct::test::standard_core(ring).build();
  write_bytes(dir.path + "/big", core);
  *size = core.size();
  return open((dir.path + "/big").c_str(), O_RDONLY | O_CLOEXEC);
}

// The decoder decodes a big ring within its own memory
// (RLIMIT_DATA: the memory limit; decode.h), because the document and the
// text are written as they are made, never held whole.  These 65536 events
// make 72 MB of JSON and text; held whole, with the tree the JSON was
// dumped from, they took the decoder to a VmHWM of 520 MB, and under this
// test's 96 MiB it ran out of memory (status core_unreadable, "out of
// memory while reading the core"); now its VmHWM is 25 MB.
TEST_P(Decoder, BigRingDecodesWithinTheMemoryLimit) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a timeline of tens of MB takes an ASan decoder past the decode timeout on a loaded machine, and "
                  "its memory bound needs the RLIMIT_AS an ASan build does not set (decode.cc, kLimitAddressSpace)";
#endif
  TempDir dir;
  std::uint64_t size = 0;
  const int fd = big_ring_core(dir, 16, 4096, &size);
  ASSERT_GE(fd, 0);
  ctd::DecodeLimits limits;
  limits.memory_limit = 96 << 20;
  auto r = decode(request_for(fd, size), limits, [] { return true; });
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_TRUE(r->decoded) << r->failure;
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->document.summary.event_count, 16u * 4096u);
  /* The compact document: the text is not sent, but made from it. */
  EXPECT_TRUE(r->text.empty());
  auto a = core_timeline::reader::analysis_of_compact(r->document.tree);
  ASSERT_TRUE(a.ok()) << a.error().message;
  const std::string text = core_timeline::reader::render_text(*a);
  EXPECT_NE(text.find("core-timeline: core-only, pid 4242 (victim), 65536 events"), std::string::npos)
      << text.substr(0, 200);
  std::printf("decoder: %llu kB VmHWM, %llu kB RssAnon, %zu bytes of output\n",
              static_cast<unsigned long long>(r->max_rss_kb), static_cast<unsigned long long>(r->anon_kb),
              r->output_bytes);
}

// A timeline of 327680 events, which as the full document (some 1.2 KiB
// an event) was larger than the daemon reads from a decoder (kMaxOutput,
// 256 MiB) and was not written, is written as the compact document (some
// 40 bytes an event), within ctl-query's default --max-size (64 MiB).
TEST(DecoderOutput, TimelineOfARingOfMoreThan220000EventsIsWritten) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a timeline of tens of MB takes an ASan decoder past the decode timeout on a loaded machine, and "
                  "its memory bound needs the RLIMIT_AS an ASan build does not set (decode.cc, kLimitAddressSpace)";
#endif
  TempDir dir;
  std::uint64_t size = 0;
  const int fd = big_ring_core(dir, 20, 16384, &size);
  ASSERT_GE(fd, 0);
  auto r = ctd::run_decoder(request_for(fd, size), ctd::DecodeLimits{}, [] { return true; }, nullptr);
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->decoded) << r->failure;
  EXPECT_FALSE(r->out_of_memory) << r->failure;
  EXPECT_FALSE(r->timed_out) << r->failure;
  EXPECT_EQ(r->document.summary.event_count, 327680u);
  EXPECT_LT(r->output_bytes, 64u << 20) << "within ctl-query's default --max-size";
  std::printf("327680 events: %zu bytes of output\n", r->output_bytes);
}

TEST_P(Decoder, CancelKillsTheChild) {
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto r = decode(request_for(fd, 100), ctd::DecodeLimits{}, [this] {
    for (pid_t p : decoders()) kill(p, SIGSTOP);
    return false;
  });
  close(fd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().sys_errno, ECANCELED);
  EXPECT_TRUE(decoders().empty());
}

// The server never holds a core: after decoders ran through it, it has its
// four descriptors (stdin, stdout, stderr on /dev/null or the log, and its
// socket) and nothing of the cores; each decoder starts from that state.
TEST(DecoderServer, HoldsNoCoreAndWhenGoneTheDecoderIsForkedAndExecd) {
  auto s = ctd::DecoderServer::start(CT_DAEMON_BIN);
  ASSERT_TRUE(s) << s.error().message;
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  for (int i = 0; i < 3; ++i) {
    int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto r = ctd::run_decoder(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; }, &*s);
    close(fd);
    ASSERT_TRUE(r && r->decoded) << (r ? r->failure : r.error().message);
    EXPECT_EQ(r->server_failure, "");
  }
  std::set<int> fds;
  for (const auto &e : fs::directory_iterator("/proc/" + std::to_string(s->pid()) + "/fd"))
    fds.insert(std::stoi(e.path().filename().string()));
  EXPECT_EQ(fds, (std::set<int>{0, 1, 2, 3}));
  for (const auto &e : fs::directory_iterator("/proc/" + std::to_string(s->pid()) + "/fd"))
    EXPECT_EQ(fs::read_symlink(e.path()).string().find(dir.path), std::string::npos) << e.path();

  // Killed: the next decoder is forked and exec'd, and says why.
  const pid_t server_pid = s->pid();
  kill(server_pid, SIGKILL);
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  auto r = ctd::run_decoder(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; }, &*s);
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->decoded) << r->failure;
  EXPECT_NE(r->server_failure, "");
  EXPECT_FALSE(s->running());
  EXPECT_EQ(kill(server_pid, 0), -1) << "the dead server was not reaped";
}

// Clones share the server's address space layout: it is replaced by a
// fresh exec every kRenewEvery decoders, and renew() replaces it at once
// (the daemon calls it when a decoder died by a signal, which
// died_by_signal tells apart from the daemon's own kill).
TEST(DecoderServer, RenewedEveryKRenewEveryDecodersAndOnDemand) {
  auto s = ctd::DecoderServer::start(CT_DAEMON_BIN);
  ASSERT_TRUE(s) << s.error().message;
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  std::set<pid_t> servers{s->pid()};
  for (unsigned i = 0; i <= ctd::DecoderServer::kRenewEvery; ++i) {
    int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
    auto r = ctd::run_decoder(request_for(fd, 100), ctd::DecodeLimits{}, [] { return true; }, &*s);
    close(fd);
    ASSERT_TRUE(r && r->decoded && r->via_server) << (r ? r->failure + r->server_failure : r.error().message);
    EXPECT_FALSE(r->died_by_signal);
    servers.insert(s->pid());
  }
  EXPECT_EQ(servers.size(), 2u) << "one renewal after " << ctd::DecoderServer::kRenewEvery << " decoders";

  // A decoder killed by a signal the daemon did not send.
  int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
  auto req = request_for(fd, 100);
  const std::string fifo = reachable_fifo(dir, "names.tlmap");  // holds the decoder until killed
  req.tlmap = fifo;
  const pid_t server = s->pid();
#if defined(__SANITIZE_ADDRESS__)
  // ASan takes a SIGSEGV for its own report and exits 1; it leaves SIGILL
  // alone (handle_sigill=0).
  constexpr int kSignal = SIGILL;
  const char *const kSignalName = "SIGILL";
#else
  constexpr int kSignal = SIGSEGV;
  const char *const kSignalName = "SIGSEGV";
#endif
  auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [&] {
    for (pid_t p : my_children())
      if (p != server) kill(p, kSignal);
    return true;
  }, &*s);
  close(fd);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->decoded);
  EXPECT_TRUE(r->died_by_signal);
  EXPECT_NE(r->failure.find(kSignalName), std::string::npos) << r->failure;
  ASSERT_TRUE(s->renew());
  EXPECT_NE(s->pid(), server);
  EXPECT_EQ(kill(server, 0), -1) << "the old server was not reaped";
}

// A server that cloned a decoder and never answered, or answered a pid
// that is not ours, or 0: the daemon decodes by fork and exec with pipes of
// its own (the server's decoder wrote garbage into the old ones), gives up
// on the server, and leaves no child behind.
TEST(DecoderServer, BrokenAnswersFallBackToForkAndExecAndLeaveNoChild) {
  TempDir dir;
  write_bytes(dir.path + "/c", std::vector<std::uint8_t>(100, 'x'));
  for (const char *mode : {"lost-answer", "wrong-pid", "zero"}) {
    SCOPED_TRACE(mode);
    setenv("CT_MISBEHAVE", mode, 1);
    auto s = ctd::DecoderServer::start(CT_MISBEHAVING_SERVER);
    unsetenv("CT_MISBEHAVE");
    ASSERT_TRUE(s) << s.error().message;
    int fd = open((dir.path + "/c").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto req = request_for(fd, 100);
    auto r = ctd::run_decoder(req, ctd::DecodeLimits{}, [] { return true; }, &*s);
    close(fd);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_FALSE(r->via_server);
    EXPECT_NE(r->server_failure, "");
    ASSERT_TRUE(r->decoded) << r->failure;
    EXPECT_EQ(r->document.summary.status, ctd::Status::kCoreUnreadable);
    EXPECT_FALSE(s->running());
    EXPECT_TRUE(my_children().empty()) << "a child of the broken server's is left";
  }
}
