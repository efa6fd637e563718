/* SPDX-License-Identifier: MIT */
/*
 * decode.h - decoding a core in an isolated child process.
 *
 * Why a child, and why exec.  The reader library (ct::reader) and libdwfl
 * parse the core, which is untrusted: a core can make them crash, loop or
 * allocate without bound.  None of that may reach the daemon, so each core
 * is decoded in a child with a wall-clock limit (the daemon SIGKILLs the
 * child's process group when it passes) and RLIMIT_AS.  The child comes
 * from the daemon's own binary exec'd again - once, as the decoder server
 * below, or per core (/proc/self/exe --decode-child) when there is no
 * server - rather than from a fork of the daemon that calls the library:
 *  - a fork would inherit the daemon's address space - sd-journal maps
 *    journal files, tens to hundreds of MiB - so RLIMIT_AS would bound
 *    something unpredictable; after exec the limit means "the decoder's own
 *    memory";
 *  - nothing of the daemon's state (journal descriptors, spdlog, blocked
 *    signals) leaks into code that runs on hostile input;
 *  - one decode yields the document from the Analysis, and the daemon does not
 *    depend on finding another binary on disk.  /proc/self/exe still works
 *    while a package upgrade replaces the file.
 * Whose rights.  The decoder does not run as root: before it opens
 * anything it drops to the credentials the daemon chose for the crash
 * (DecodeRequest::credentials, DecoderUsers): the crashed process's
 * COREDUMP_UID and COREDUMP_GID, or for a crash of root or of a system
 * user the dedicated user kDecoderUser (made by the package's sysusers.d
 * file), or, where that user does not exist, nobody - never root - with
 * no supplementary groups (credentials.h become()), as systemd-coredump
 * drops before it analyses a core (systemd 252 src/coredump/coredump.c
 * change_uid_gid(); src/basic/capability-util.c drop_privileges() clears
 * the supplementary groups too).  Groups are cleared rather than set to
 * the user's (getgrouplist(3)): the entry does not say which groups the
 * process had, NSS in the daemon per crash can block on a network
 * directory, and fewer rights can only cost symbols of a file readable
 * through a group, which the timeline then says.  So it reads what
 * that user could read, and /usr/lib/debug (world-readable); the core is
 * the descriptor it was given (fd 3), which it never reopens by path.
 * Dropping resets the dumpable flag and the parent-death signal
 * (kernel/cred.c commit_creds()), so it sets both again after.
 * Then, before it reads the core, the child confines itself (sandbox.h:
 * Landlock and a seccomp filter, which refuses any further set*id): no
 * writing, creating or removing files, no changing their metadata, no
 * exec, no sockets, nothing done to another process; and it sets
 * RLIMIT_DATA to RLIMIT_AS less the core's size.
 * The child also sets PR_SET_DUMPABLE 0 and RLIMIT_CORE 1, so a decoder that
 * crashes does not itself produce a core (and a journal entry, and a decode,
 * and a crash...), and PR_SET_PDEATHSIG SIGKILL, so it dies with the daemon.
 *
 * The decoder server.  exec'ing the daemon's binary costs about 1.5 ms
 * here (loading and relocating its libraries; docs/performance.md), ten
 * times what decoding a small core takes.  So the daemon execs it once, at
 * its start, as a server (`core-timelined --decoder-server`, DecoderServer),
 * which never reads a core.  For each core the server clones itself with
 * CLONE_PARENT (clone(2)): the decoder is a fresh copy of the server's
 * pristine state - nothing of an earlier core can reach it - and the
 * daemon's own child, which run_decoder waits for, times out and kills as
 * one it forked.  It then runs exactly what --decode-child runs after exec,
 * under the same limits (RLIMIT_AS: the server's libraries count as an
 * exec'd decoder's do).  If the server is gone or does not answer within
 * 2 s, run_decoder forks and execs as above and says so in
 * DecodeResult::server_failure.
 *
 * Protocol.  The child gets the core on fd 3 (read-only), writes to stdout
 *   "CTD1 <json bytes> <text bytes> <reader exit code> <VmHWM kB> <RssAnon kB> <Landlock ABI> <seccomp 0|1>
 *    <uid> <gid>\n"   (one line: its real, effective and saved uid and gid after the drop)
 *   <json> <text>
 * and exits 0.  A uid or gid other than the one asked for is a failure.  <json> is write_compact() of the Analysis
 * (core_timeline/reader/compact.h) - exactly what `core-timeline-read --format=compact CORE` prints - with the
 * core's path shown as the display name given (not /proc/self/fd/3), and <text> is empty: readers render the
 * text from the document.  Anything else is a failure.
 * The child writes it as it is made (write_compact), after
 * counting them for the header, so it never holds them whole; output over
 * the daemon's 256 MiB (a ring of several million events) it does
 * not write at all (it stops counting there), and exits 123 saying so.
 *
 * debuginfod.  A decoder symbolizes as core-timeline-read does, so with
 * DEBUGINFOD_URLS in its environment (the daemon's, decoder_environment())
 * it asks those servers for debug info (symbolize.h), within its sandbox
 * (sandbox.h: TCP connect to the ports the URLs name, writing beneath
 * its cache).  prepare_debuginfod() sets, in the daemon's own
 * environment before any decoder is started, the cache (when none is set)
 * and CORE_TIMELINED_DEBUGINFOD_TIMEOUT_MS, the budget of all debuginfod
 * questions of one core (--debuginfod-timeout), which the decoder reads.
 * Each decoding uid has a cache of its own, DEBUGINFOD_CACHE_PATH/UID
 * (debuginfod_cache_for()): a cache shared by decoders of different users
 * would let one user's hostile core plant files that another user's
 * decoder then takes for debug info (the build-id check limits what a
 * planted file can claim, not what it makes the reader parse).  The
 * daemon makes that directory before the decoder starts, owned by root,
 * mode 0700 with an ACL giving that uid rwx (files.h acl_user_dir(); root owns
 * it, so no CAP_CHOWN is needed and the decoder cannot loosen its mode),
 * and the decoder points DEBUGINFOD_CACHE_PATH at it after the drop.
 *
 * Thread-safety: run_decoder forks; call it from a single-threaded process
 * (the daemon is one).
 */
#ifndef CORE_TIMELINE_DAEMON_DECODE_H
#define CORE_TIMELINE_DAEMON_DECODE_H

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <sys/types.h>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core_timeline/document/stored.h"

#include "util.h"

namespace core_timeline::daemon {

/** The decoder's debuginfod budget in ms, in its environment. */
inline constexpr char kDebuginfodTimeoutEnv[] = "CORE_TIMELINED_DEBUGINFOD_TIMEOUT_MS";

/**
 * Before the first decoder (setenv: call while single-threaded): puts
 * kDebuginfodTimeoutEnv = `budget_ms` in this process's environment, and
 * with DEBUGINFOD_URLS set and DEBUGINFOD_CACHE_PATH not, sets the cache to
 * $CACHE_DIRECTORY/debuginfod_client (systemd's CacheDirectory=, its
 * first entry) or else STATE_DIR/debuginfod_client.  Returns a line for
 * the log saying what decoders will do ("" without DEBUGINFOD_URLS).
 */
std::string prepare_debuginfod(const std::string &state_dir, std::uint64_t budget_ms, std::uint64_t decode_timeout_ms);

/** The dedicated user that decodes crashes of root and of system users
 *  (units/core-timeline.sysusers, installed as
 *  /usr/lib/sysusers.d/core-timeline.conf). */
inline constexpr char kDecoderUser[] = "core-timeline-decoder";

/** Why a decoder runs with the credentials it has. */
enum class DecoderAs {
  kCrashedUser,    /**< COREDUMP_UID and COREDUMP_GID: a user above 999 */
  kDedicatedUser,  /**< kDecoderUser: the crash was root's or a system user's */
  kFallbackUser,   /**< nobody (65534:65534): as kDedicatedUser, but that user
                        does not exist (a build-tree run) */
};
/** "crashed_user", "dedicated_user", "fallback_user" (the document's
 *  daemon.decoder.run_as.as). */
std::string_view decoder_as_name(DecoderAs as) noexcept;

/** The credentials of one decoder: never uid or gid 0 as chosen by
 *  DecoderUsers (a crash of a user whose primary group is 0 keeps gid 0:
 *  that process could read what the group can). */
struct DecoderCredentials {
  uid_t uid = 65534;
  gid_t gid = 65534;
  DecoderAs as = DecoderAs::kFallbackUser;
  bool operator==(const DecoderCredentials &) const = default;
};

/**
 * Whom the daemon's decoders run as (decode.h, "Whose rights").  Plain
 * value; for_crash() is pure.
 */
class DecoderUsers {
 public:
  /** uid and gid of nobody, the fallback. */
  static constexpr uid_t kNobody = 65534;
  /** kDecoderUser looked up with getpwnam(3) (NSS: call at start, not
   *  per crash); a user of uid or gid 0 is taken as missing. */
  static DecoderUsers lookup();
  /** With `dedicated` as the dedicated user's uid and gid (nullopt: none,
   *  so the fallback), for tests. */
  explicit DecoderUsers(std::optional<std::pair<uid_t, gid_t>> dedicated) : dedicated_(dedicated) {}
  bool has_dedicated() const noexcept { return dedicated_.has_value(); }
  /** For a crash of COREDUMP_UID `uid` and COREDUMP_GID `gid` (nullopt:
   *  missing or malformed): that uid and gid when the uid is not a system
   *  uid (credentials.h is_system_uid()), with nobody's group 65534 when
   *  the gid is missing or not a valid gid; else the dedicated user, or
   *  nobody when it does not exist. */
  DecoderCredentials for_crash(std::uint64_t uid, std::optional<std::uint64_t> gid) const;

 private:
  std::optional<std::pair<uid_t, gid_t>> dedicated_;
};

/** A decoder's debuginfod cache: `base`/UID (decode.h, "debuginfod"). */
std::string debuginfod_cache_for(const std::string &base, uid_t uid);

/** A test build's probe (CT_TEST_HOOKS: core-timelined-test-hooks,
 *  tests/daemon/decoder_probe.cc), called in each decoder after the drop
 *  and the confinement, before the core is read; the lines it returns
 *  become warnings of the timeline.  Null, and never set, in
 *  core-timelined. */
using DecoderProbe = std::vector<std::string> (*)();
void set_decoder_probe(DecoderProbe probe) noexcept;

struct DecodeLimits {
  std::uint64_t timeout_ms = 30000;     /**< wall clock, then SIGKILL */
  /** RLIMIT_AS of the child is this plus the core's size (the core is
   *  mapped whole by the reader). */
  std::uint64_t memory_limit = 1ull << 30;
};

struct DecodeRequest {
  int core_fd = -1;                     /**< the extracted core */
  std::uint64_t core_size = 0;
  std::string display_name;             /**< shown as the core's path */
  std::optional<std::string> tlmap;     /**< --tlmap for the reader */
  std::string self_exe = "/proc/self/exe";
  /** Whom the decoder runs as (DecoderUsers::for_crash()); the default,
   *  nobody, is what a request nobody chose for gets. */
  DecoderCredentials credentials;
};

struct DecodeResult {
  bool decoded = false;                 /**< document and text are valid */
  core_timeline::document::ReaderDocument document; /**< the reader's --json document */
  std::string text;                     /**< the reader's text output */
  int exit_code = -1;                   /**< the reader's exit code 0..8 */
  std::string failure;                  /**< why not decoded (one line) */
  bool timed_out = false;
  bool out_of_memory = false;
  std::uint64_t max_rss_kb = 0;         /**< the decoder's peak RSS after exec
                                             (VmHWM); 0 if it failed.  It
                                             includes the pages of the mapped
                                             core the reader touched. */
  std::uint64_t anon_kb = 0;            /**< its anonymous RSS at the end
                                             (RssAnon): its own allocations */
  double duration_ms = 0;
  std::size_t output_bytes = 0;         /**< bytes the child wrote to stdout */
  bool via_server = false;              /**< started by the decoder server */
  int landlock_abi = 0;                 /**< the Landlock ABI the decoder confined
                                             itself with (sandbox.h); 0: it
                                             was not confined */
  bool seccomp = false;                 /**< the decoder's seccomp filter was in
                                             place (sandbox.h) */
  bool died_by_signal = false;          /**< a signal the daemon did not send */
  std::string server_failure;           /**< why the server was not used ("" if
                                             it was, or none was given) */
  /** The credentials the decoder was given; when decoded, the decoder
   *  confirmed them (its getresuid/getresgid after the drop). */
  DecoderCredentials credentials;
};

/**
 * The decoder server (above): a child process started once; spawn() asks
 * it for one decoder.  Move-only; destroying it closes the server's socket,
 * on which it exits (it is killed if it has not within 100 ms), and reaps
 * it.  Not thread-safe; call from the single-threaded daemon.
 */
class DecoderServer {
 public:
  /** A server is replaced by a fresh exec after this many decoders, and
   *  after any decoder that died by a signal: clones share its address
   *  space layout and stack canary, which exec re-randomizes, so a hostile
   *  core probing a reader bug crash after crash meets a new layout as it
   *  would with exec per core. */
  static constexpr unsigned kRenewEvery = 64;

  /** Forks and execs `self_exe --decoder-server`.  Errors: socketpair or
   *  fork failed (an exec failure shows at the first spawn()). */
  static Result<DecoderServer> start(const std::string &self_exe = "/proc/self/exe");
  DecoderServer() = default;
  DecoderServer(DecoderServer &&o) noexcept;
  DecoderServer &operator=(DecoderServer &&o) noexcept;
  ~DecoderServer();

  bool running() const noexcept { return sock_.valid(); }
  pid_t pid() const noexcept { return pid_; }
  /**
   * Starts a decoder for `req` (its core_fd, display_name, tlmap) with
   * stdout `out_w`, stderr `err_w` and RLIMIT_AS `as_limit`; returns its
   * pid, a child of the caller.  The decoder waits, before it touches
   * anything, for a byte the caller sends only once the server's answer
   * is read and the pid is confirmed as its own child (waitid(2)); so when
   * the answer is lost, a decoder the server made anyway exits at once,
   * having written nothing, and is reaped with the server.  Errors:
   *  - EINVAL, E2BIG: a NUL byte in, or too long, a request (nothing sent);
   *  - the errno of the server's clone(2): the server is still running;
   *  - ENOTCONN (not running), EPIPE (gone), ETIMEDOUT (no answer within
   *    2 s), EPROTO (an answer that is not a pid of a child of ours): the
   *    server is stopped and reaped, with any decoder it made for this
   *    request, and running() is false.
   * Renews the server first (stop, start) after kRenewEvery decoders.
   */
  Result<pid_t> spawn(const DecodeRequest &req, std::uint64_t as_limit, int out_w, int err_w);
  /** Stops this server and starts a new one from the same executable. */
  Result<void> renew();
  /** Closes the socket and reaps the server, and any child of the caller
   *  that is neither a running decoder (DecoderRun) nor a server: a
   *  decoder made for a request whose answer was lost. */
  void stop() noexcept;

 private:
  Fd sock_;
  pid_t pid_ = -1;
  std::string self_exe_;
  unsigned spawned_ = 0;
};

/**
 * One decoder child in flight: run_decoder() is start() then finish(), and
 * the daemon may do other work in between (prepared.h: it extracts the next
 * core while this one decodes).  Move-only; destroying a run that was not
 * finished kills and reaps its child.
 */
class DecoderRun {
 public:
  /** Starts a decoder for `req` (through `server` when given and running,
   *  else by fork and exec); its wall-clock limit runs from now.  The
   *  caller may close req.core_fd once this returns.  Errors: pipes or
   *  fork failed. */
  static Result<DecoderRun> start(const DecodeRequest &req, const DecodeLimits &limits, DecoderServer *server);
  /** Waits for the child and reads its output: the rest of run_decoder. */
  Result<DecodeResult> finish(const std::function<bool()> &keep_going);
  DecoderRun(DecoderRun &&o) noexcept;
  DecoderRun &operator=(DecoderRun &&) = delete;
  ~DecoderRun();

 private:
  DecoderRun() = default;
  pid_t pid_ = -1;
  Fd pidfd_, out_r_, err_r_;
  std::uint64_t start_ = 0;
  DecodeLimits limits_;
  std::string self_exe_;
  DecodeResult res_;
};

/**
 * Runs the decoder child on `req` within `limits`, through `server` if it
 * is given and running, else by fork and exec.  `keep_going` is called
 * at least once a second while waiting (watchdog pings; returning false
 * kills the child and returns an Error of err ECANCELED).  Errors are only
 * failures to start (pipe, fork) or cancellation; everything the child does
 * wrong is a DecodeResult with decoded == false.
 */
Result<DecodeResult> run_decoder(const DecodeRequest &req, const DecodeLimits &limits,
                                 const std::function<bool()> &keep_going, DecoderServer *server = nullptr);

/**
 * Decoding an extracted core: one of the four parts of the daemon
 * (parts.h).  start() begins decoding `req` (its core_fd, core_size,
 * display_name and tlmap; the caller may close core_fd once it returns)
 * and returns the decode in flight, so the daemon can do other work
 * meanwhile; Run::finish() waits for its result, calling `keep_going` at
 * least once a second (false: the decoder is killed, ECANCELED).
 * Destroying a Run that was not finished kills its decoder.  Errors of
 * start(): the decoder could not be started (pipes, fork); of finish():
 * cancellation only - everything a decoder does wrong is a DecodeResult
 * with decoded == false.  Thread-safety: one thread.
 */
class Decoder {
 public:
  class Run {
   public:
    virtual ~Run() = default;
    virtual Result<DecodeResult> finish(const std::function<bool()> &keep_going) = 0;
  };
  virtual ~Decoder() = default;
  /** Readies what the first core needs (the decoder server); never fails
   *  the caller. */
  virtual void warm_up() {}
  virtual Result<std::unique_ptr<Run>> start(const DecodeRequest &req) = 0;
};

/**
 * core-timelined's Decoder: each core in a child of its own as above,
 * within `limits`, made by a DecoderServer exec'd from `self_exe` (by
 * warm_up(), and again at most every kServerRetryMs once it has failed)
 * or, without one, by fork and exec of `self_exe`.  After a decoder that
 * died by a signal the server is renewed.  What becomes of the server is
 * logged (spdlog): it does not fail a decode.
 */
class ChildDecoder final : public Decoder {
 public:
  static constexpr std::uint64_t kServerRetryMs = 10000;

  explicit ChildDecoder(DecodeLimits limits, std::string self_exe = "/proc/self/exe");
  void warm_up() override;
  /** req.self_exe is replaced by this decoder's. */
  Result<std::unique_ptr<Run>> start(const DecodeRequest &req) override;
  const DecoderServer &server() const noexcept { return server_; }

 private:
  class ChildRun;
  void start_server();
  /** After a decode: says why the server was not used, renews it after a
   *  decoder that died by a signal. */
  void after(const DecodeResult &result);

  DecodeLimits limits_;
  std::string self_exe_;
  DecoderServer server_;
  std::uint64_t server_started_ = 0;
};

/** main() of `core-timelined --decode-child UID GID NAME [TLMAP]` (see
 *  above): drops to UID and GID, then decodes the core on fd 3. */
int decoder_child_main(int argc, char **argv);

/** main() of `core-timelined --decoder-server` (socket on fd 3). */
int decoder_server_main(int argc, char **argv);

/**
 * In a decoder, with the core on fd 3 and RLIMIT_AS set: sets RLIMIT_DATA
 * to RLIMIT_AS less the core's size (st_size), the decoder's own memory
 * (heap, private writable mappings; setrlimit(2)).  The core's size is the
 * crashed user's choice (zeros compress to nothing and are kept sparse),
 * and the reader maps it read-only, which RLIMIT_DATA does not count; so
 * the room RLIMIT_AS leaves for the core cannot be spent on anything else.
 * Leaves a lower hard RLIMIT_DATA as it is; does nothing without a finite
 * RLIMIT_AS or a file on fd 3.  Called by the decoder before it reads the
 * core.
 */
void limit_own_memory();

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_DECODE_H
