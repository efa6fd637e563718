/* SPDX-License-Identifier: MIT */
/*
 * analyze.h - the timeline of a core: find every ring, validate it, check
 * it belongs to the dead process, merge its lanes, name and place events.
 *
 * This is the reader library's main entry point (ct::reader), used by
 * core-timeline-read, the daemon and ctl-query:
 *
 *     FileFacts facts;
 *     auto core = CoreFile::open(path, &facts);  // or CoreFile::from_bytes
 *     Analysis a = core ? analyze(*core, opts) : analysis_of_error(path, core.error(), facts);
 *     write_text(a, file_output(stdout));         // render.h; render_text(a)
 *     write_json(a, file_output(stdout));         //   and render_json(a) give strings
 *     return exit_code(a.status);
 *
 * analyze() never throws and never fails as a whole: what it could not do
 * is in `status`, `reason` and `warnings`.  Facts and their sources:
 *  - rings: NT_FILE entries for /memfd:core-timeline* (memfd_create(2); the
 *    kernel lists them as "/memfd:NAME (deleted)"), other memfds whose bytes
 *    validate, and every page-aligned "CTLN" in the dumped PT_LOAD bytes
 *    whose header validates (ring.h).
 *  - process: NT_PRPSINFO (pid, comm, args), NT_AUXV AT_PHDR -> the
 *    executable's NT_FILE mapping -> its NT_GNU_BUILD_ID in the dumped first
 *    page (coredump_filter bit 4, "ELF headers", on by default; core(5)).
 *  - crash: NT_SIGINFO and the first NT_PRSTATUS (the thread that took the
 *    signal; fs/binfmt_elf.c); none in a live snapshot (its CORE-TIMELINE
 *    note, live.h), whose ages are relative to the snapshot's time and
 *    whose slots caught mid-write are in flight, not torn.
 *
 * Memory: 152 bytes per event (Event), plus what events share (Event: one
 * Location per call site, not per event), plus the pages of the mapped
 * core it reads - the ring's, all of them.  A ring's events are held once:
 * decoded straight into Analysis::events (decode_ring's RingEventSink),
 * never also as RingEvents, and sorted in place.
 *
 * Thread-safety: analyze() only reads the CoreFile; several analyses may run
 * at once.  With symbolization isolated (default) it forks (symbolize.h).
 */
#ifndef CORE_TIMELINE_READER_ANALYZE_H
#define CORE_TIMELINE_READER_ANALYZE_H

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core_timeline/document/status.h"
#include "core_timeline/reader/cause.h"
#include "core_timeline/reader/elf_core.h"
#include "core_timeline/reader/group.h"
#include "core_timeline/reader/result.h"
#include "core_timeline/reader/ring.h"
#include "core_timeline/reader/tlmap.h"

namespace core_timeline::reader {

/** The outcome: the document's status (core_timeline/document/status.h),
 *  one of those core-timeline-read gives (document::is_reader_status()),
 *  with its exit code (exit_code(), 0..8) and its name ("ok", "no_ring",
 *  ...: status_name()). */
using Status = document::Status;
using document::exit_code;
using document::status_name;

struct ReadOptions {
  bool core_only = false;                   /**< ignore any sidecar */
  std::optional<std::string> sidecar_path;  /**< --sidecar */
  std::optional<std::string> executable;    /**< EXECUTABLE */
  bool unverified_symbols = false;          /**< --unverified-symbols */
  bool symbolize = true;                    /**< false: no libdwfl at all */
  bool isolate_symbolizer = true;           /**< see symbolize.h */
  /** All debuginfod questions of one read together, in ms
   *  (--debuginfod-timeout; SymbolizeOptions::debuginfod_timeout_ms). */
  int debuginfod_timeout_ms = 5000;
  const TlMap *tlmap = nullptr;             /**< names for user ids */
  /** Unwind the crashing thread from the core with libdwfl (needs
   *  `symbolize`); CrashFacts::stack. */
  bool unwind = true;
  /** Unwind every thread of the core too (--all-threads):
   *  Analysis::thread_stacks. */
  bool all_threads = false;
};

enum class Check { kMatch, kMismatch, kUnchecked };
std::string_view check_name(Check c) noexcept;  /* "match", ... */

struct IdentityCheck {
  Check result = Check::kUnchecked;
  std::string detail;
};

/* The closed sets of the Analysis; each name function gives the word the
 * JSON document and the text use (docs/timeline-json.md). */

/** How far a Location's symbols can be trusted: "raw" (no symbols: see
 *  its note), "verified" (from a file whose build-id equals the core's),
 *  "unverified-no-core-buildid" (--unverified-symbols). */
enum class Verification { kRaw, kVerified, kUnverifiedNoCoreBuildId };
std::string_view verification_name(Verification v) noexcept;

/** What an address points into: "file", "anonymous", "unmapped". */
enum class MappingKind { kUnmapped, kFile, kAnonymous };
std::string_view mapping_kind_name(MappingKind k) noexcept;

/** Where an event was read: "core" (the ring in the core) or "sidecar". */
enum class Origin : std::uint8_t { kCore, kSidecar };
std::string_view origin_name(Origin o) noexcept;

/** How a ring was found: "nt_file" (its memfd in NT_FILE), "magic_scan"
 *  (the "CTLN" magic in a writable segment), "sidecar". */
enum class FoundBy { kNtFile, kMagicScan, kSidecar };
std::string_view found_by_name(FoundBy f) noexcept;

/** The note the crash's signal facts come from: "NT_SIGINFO" or
 *  "NT_PRSTATUS". */
enum class SignalNote { kSiginfo, kPrstatus };
std::string_view signal_note_name(SignalNote n) noexcept;

/** What the timeline was made from: none (no timeline), "core-only",
 *  "core+sidecar", "degraded-sidecar". */
enum class TimelineSource { kNone, kCoreOnly, kCoreAndSidecar, kDegradedSidecar };
std::string_view timeline_source_name(TimelineSource s) noexcept;

/** What became of a sidecar: none given (""), "ignored", "merged",
 *  "degraded", "unusable", "refused". */
enum class SidecarStatus { kNone, kIgnored, kMerged, kDegraded, kUnusable, kRefused };
std::string_view sidecar_status_name(SidecarStatus s) noexcept;

/** Where a code address lies, from the core; plus symbols when verified. */
struct Location {
  std::uint64_t address = 0;
  bool in_module = false;        /**< inside a file mapping (NT_FILE) */
  std::string module;            /**< that mapping's path (untrusted bytes) */
  std::vector<std::uint8_t> build_id; /**< the module's build-id per the core */
  std::uint64_t file_offset = 0; /**< (address - mapping start) + its offset */
  std::string function;          /**< "" when not symbolized */
  std::uint64_t function_offset = 0;
  std::string source_file;
  int line = 0;
  Verification verification = Verification::kRaw;
  std::string note;
  /** The module's file found at `module` but not used: it does not carry
   *  `build_id` (refused_build_id is its own, empty when it has none);
   *  "" when no file was refused. */
  std::string refused_file;
  std::vector<std::uint8_t> refused_build_id;
  bool mapping_changed = false;  /**< the event's mmap_generation and the
                                      ring's at the crash are both known
                                      (non-zero) and differ */
};

/** What an address (a pointer argument) points into, from the core. */
struct AddressMapping {
  MappingKind kind = MappingKind::kUnmapped;
  std::string path;         /**< for kFile (untrusted bytes) */
  std::string note;         /**< e.g. "stack of tid 7124" */
  std::uint64_t start = 0, end = 0;
  std::string perms;        /**< "rwx" letters from p_flags, '-' if absent */
  bool dumped = false;      /**< its bytes are in the core */
};

/** What became of a fault handed to the program's own handler (a CRASH
 *  event with kCrashHanded), judged from the ring and the core
 *  (Analyzer::judge_handed):
 *  - kRecovered: its thread recorded a later CRASH event, so it went on
 *    past that handler (libtimeline writes no CRASH event for a signal that
 *    arrives inside it);
 *  - kCrash: the thread's last CRASH event, and the core's fatal signal
 *    (NT_SIGINFO, the first NT_PRSTATUS) is on that thread and is its
 *    signal or one libtimeline handles (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
 *    SIGABRT): the handler ended the process (re-raised, abort(), faulted
 *    itself, or returned and the fault repeated);
 *  - kUnknown: cannot be told: a live snapshot or no core signal, the
 *    fatal signal on another thread (this one may have recovered or still
 *    been in the handler), or a signal libtimeline does not handle.
 *  Later events of other kinds on the thread prove nothing: the program's
 *  handler itself may record them (tl_mark, the allocation wrappers). */
enum class HandedOutcome : std::uint8_t { kNotHanded, kCrash, kRecovered, kUnknown };
std::string_view handed_outcome_name(HandedOutcome o) noexcept;

/** The CRASH slot's payload (ring_format.h kKindCrash / CrashInfo). */
struct CrashSlot {
  std::int32_t signo = 0;
  std::string signal_name;
  std::int32_t si_code = 0;
  std::string si_code_name;
  std::int32_t si_errno = 0;
  std::int32_t sender_pid = 0;  /**< si_pid (named apart from <signal.h> macros) */
  std::uint32_t sender_uid = 0;
  std::uint64_t fault_address = 0;
  std::uint64_t sp = 0;
  std::uint32_t handler_flags = 0;
  bool chained = false;
  bool repeated = false;
  /** kCrashHanded: written before the signal was handed to the program's
   *  own handler, which may have recovered (handed_outcome says). */
  bool handed = false;
  HandedOutcome handed_outcome = HandedOutcome::kNotHanded;
  std::string handed_note;  /**< what handed_outcome rests on; "" if not handed */
};

/** Where an event's name came from: "core" (the ring's name table, from
 *  tl_name), "tlmap" (--tlmap, which overrides the core's), or none. */
enum class NameFrom : std::uint8_t { kNone, kCore, kTlmap };
std::string_view name_from_name(NameFrom n) noexcept;

/** The name of one user id, and of its two arguments ("" when unnamed). */
struct EventName {
  std::string name, arg0, arg1;
  NameFrom from = NameFrom::kNone;
};

/** How an I/O event's fd was tied to its origin (Event::fd_origin):
 *  "found"; "not_in_window" (no event that made it is in the window: made
 *  before it, before tl_init, or by a call the I/O wrappers do not record,
 *  such as dup2, pipe or an fd passed in a message); "closed" (the window's
 *  latest event about it is a CLOSE: what made it again was not recorded). */
enum class FdOrigin : std::uint8_t { kNone, kFound, kNotInWindow, kClosed };
std::string_view fd_origin_name(FdOrigin o) noexcept;

/** An index in one of the Analysis's tables (strings, locations,
 *  mappings, crash_slots); kNoIndex: none. */
inline constexpr std::uint32_t kNoIndex = UINT32_MAX;

/** How an event's stack walk ended (format::StackEnd), or why its stack
 *  cannot be shown. */
enum class StackState : std::uint8_t {
  kNone = 0,        /**< no stack was recorded */
  kComplete = 1,    /**< the chain ended (a return address of 0) */
  kDepthLimit = 2,  /**< the depth asked for was reached */
  kNoUnwindInfo = 3,/**< the next frame had no .sframe and no frame pointer */
  kBadFrame = 4,    /**< the walk met an impossible frame and stopped */
  kLost = 5,        /**< its frames were in the slot after it, which the ring
                         no longer holds */
  kMalformed = 6,   /**< the slot's stack byte is inconsistent (untrusted) */
  kCut = 7,         /**< (ring format 5) the walk went on in STACK slots of
                         its chain that the ring no longer holds: the
                         frames are its first ones (or, for a STACK event
                         whose host is gone, those from its arg1 on) */
};
/** "complete", "depth_limit", "no_unwind_info", "bad_frame", "lost",
 *  "malformed", "cut", "none". */
std::string_view stack_state_name(StackState s) noexcept;

/**
 * One event of the timeline.  Compact (152 bytes, pinned in analyze.cc's static_assert), because a ring holds up
 * to millions of them: what many events share is kept once in the
 * Analysis's tables and named here by index, and read through the
 * Analysis (thread_of, name_of, location_of, ...):
 *  - the thread, kind and display names: Analysis::strings;
 *  - the Location of a return address: Analysis::locations, one per
 *    distinct (address, CRASH or not, mapping_changed);
 *  - the AddressMapping of a pointer argument: Analysis::mappings, one per
 *    distinct mapping (and whether the address is dumped);
 *  - the CRASH slot's payload: Analysis::crash_slots;
 *  - the inline bytes: Analysis::inline_data[inline_at, + inline_len).
 */
struct Event {
  std::uint32_t ring = 0;
  std::uint32_t lane = 0;
  std::uint64_t seq = 0;
  std::uint32_t tid = 0;
  std::uint16_t kind = 0;
  std::uint8_t inline_len = 0;   /**< inline bytes (<= 64) */
  bool tid_in_core = false;      /**< tid has an NT_PRSTATUS in the core */
  /** The thread's name (strings; 0: none), from THREAD_NAME events or the
   *  lane owner name (untrusted). */
  std::uint32_t thread = 0;
  /** USER, MALLOC, ..., KIND_<n> (strings). */
  std::uint32_t kind_name = 0;
  /** Display name (strings): .tlmap or core name, "id=0x..." for unnamed
   *  user ids, else the kind name. */
  std::uint32_t name = 0;
  std::uint32_t id = 0;
  bool named = false;            /**< name came from the core or a .tlmap */
  NameFrom name_from = NameFrom::kNone;  /**< Analysis::names holds the
                                      argument names of a named id */
  Origin source = Origin::kCore;
  /** Where return_address lies (locations), or kNoIndex: none (no return
   *  address, and not a CRASH event). */
  std::uint32_t location = kNoIndex;
  std::uint64_t arg0 = 0, arg1 = 0;
  std::uint64_t timestamp = 0;   /**< slot clock ticks */
  std::optional<std::int64_t> realtime_ns;  /**< CLOCK_REALTIME, ns */
  /** ns from the time reference (the CRASH event, else the newest event;
   *  Analysis::time), negative before it; nullopt when this event cannot be
   *  placed in time (Analysis::time.note, or no timestamp). */
  std::optional<std::int64_t> age_ns;
  /** For SPAN_BEGIN and SPAN_END: the index in Analysis::spans. */
  std::optional<std::uint32_t> span;
  std::uint64_t return_address = 0;
  /** What a pointer argument points into (mappings), or kNoIndex. */
  std::uint32_t pointer = kNoIndex;
  /** Kind CRASH: its payload (crash_slots), else kNoIndex. */
  std::uint32_t crash = kNoIndex;
  std::uint64_t inline_at = 0;   /**< offset in Analysis::inline_data */
  /** Its stack (ring format 4): stack_depth frames, Analysis::frames
   *  [frames_at, + stack_depth), each an index in locations; the frames
   *  are the callers beyond return_address, innermost first: at most
   *  8, or (ring format 5, a chain of STACK slots) format::
   *  kMaxChainedStackDepth. */
  std::uint32_t frames_at = 0;
  std::uint8_t stack_depth = 0;
  StackState stack = StackState::kNone;
  /** Whether the fd an I/O event used (io_fd()) was tied to the event that
   *  made it (fd_origin); kNone for an event that uses no fd. */
  FdOrigin fd_state = FdOrigin::kNone;
  /** With kFound: the OPEN, ACCEPT, SOCKET, DUP or CONNECT that made or named
   *  the fd (index in events); with kClosed: the CLOSE of it after which
   *  nothing recorded made it again; else kNoIndex. */
  std::uint32_t fd_origin = kNoIndex;
};

/** The fd an I/O event used: `id` for the kinds whose id is an fd (READ,
 *  WRITE, CONNECT, CLOSE, ACCEPT's listening socket, RECV, SEND, PREAD,
 *  PWRITE, SENDFILE's out fd, FSYNC, DUP's old fd), nullopt for OPEN and
 *  SOCKET (whose fd is their result) and every other kind. */
std::optional<std::int32_t> io_fd(const Event &e) noexcept;
/** The fd an event made (OPEN, ACCEPT, SOCKET, DUP with a result >= 0), or
 *  named (CONNECT that succeeded or is in progress), else nullopt. */
std::optional<std::int32_t> fd_made(const Event &e) noexcept;
/** An I/O event's result (arg0) as the signed value the call returned. */
inline std::int64_t io_result(const Event &e) noexcept { return static_cast<std::int64_t>(e.arg0); }
/** The errno of a result that is -errno (-4095..-1, the kernel's range of
 *  error returns), else 0. */
int result_errno(std::int64_t result) noexcept;
/** "ENOENT" for an errno (strerrorname_np(3), glibc 2.32), "errno N" for
 *  a number it does not name. */
std::string errno_name(int e);

struct RingReport {
  /** kNotMade: a ring-less header (libtimeline loaded, tl_init failed). */
  enum class State { kValid, kAbsent, kInvalid, kForeign, kNotMade };
  std::uint32_t index = 0;
  FoundBy found_by = FoundBy::kNtFile;
  std::uint64_t address = 0;
  std::uint64_t mapping_size = 0;
  std::string mapping_name;      /**< NT_FILE path, "" if none */
  State state = State::kInvalid;
  std::string reason;            /**< why absent/invalid/foreign */
  std::optional<DecodedRing> ring;
  IdentityCheck pid, build_id, start_time;
};
std::string_view ring_state_name(RingReport::State s) noexcept;

/** Where a frame of the crash stack was found: "ring" (the crash
 *  handler's walk, in the CRASH event), "core" (the reader's unwind of the
 *  core with libdwfl), "ring+core" (both, the same address). */
enum class FrameFrom : std::uint8_t { kRing, kCore, kBoth };
std::string_view frame_from_name(FrameFrom f) noexcept;

/** One frame of a stack unwound from the core, or of the crash stack. */
struct StackFrame {
  Location location;        /**< its pc (frame 0 and frames after a signal
                                 frame) or return address */
  FrameFrom from = FrameFrom::kCore;
  /** The kernel's signal frame: the frame whose return address the kernel
   *  set to the signal trampoline (x86-64: glibc's __restore_rt); the
   *  frame after it is the one the signal interrupted. */
  bool signal_frame = false;
};

/** A thread's stack unwound from the core (NT_PRSTATUS registers and the
 *  dumped stack, libdwfl's unwinder), innermost first. */
struct ThreadStack {
  std::uint32_t tid = 0;
  bool crashed = false;     /**< the thread that took the signal */
  std::vector<StackFrame> frames;
  /** Why the unwind stopped: "" at the outermost frame, "depth limit (N
   *  frames)", or libdwfl's message. */
  std::string end;
};

/** The whole stack of the crashing thread: the CRASH event's walk (ring)
 *  and the core's unwind, merged.  Where both hold a frame at the same
 *  place with the same address it is one frame ("ring+core"); the frames
 *  above the interrupted one that only the core holds (the program's own
 *  handler, the trampoline) are "core"; past the first frame where they
 *  differ, or where one ends, the longer of the two goes on, its frames
 *  named by their source, and `note` says so. */
struct CrashStack {
  std::vector<StackFrame> frames;
  std::string core_end;     /**< ThreadStack::end of the core's unwind;
                                 "not unwound: WHY" when there is none */
  std::string ring_end;     /**< the CRASH walk's end (stack_state_name),
                                 "" without a CRASH event with a stack */
  std::uint32_t agree = 0;  /**< frames both sources hold ("ring+core") */
  std::string note;         /**< where and why they differ; "" if not */
};

/** A fault the program's own handler caught and then re-raised (the fatal
 *  signal was sent by the process itself: SI_USER, SI_TKILL or SI_QUEUE
 *  with the crashed pid as sender), read from the kernel's signal frame on
 *  the crashing thread's stack: its siginfo and ucontext (x86-64: struct
 *  rt_sigframe, arch/x86/include/asm/sigframe.h), bounds-checked against
 *  the core's dumped bytes.  The frame is found where the core's unwind
 *  passes through the signal trampoline, and believed only when its saved
 *  rip and rsp are the interrupted frame's. */
struct ReraisedFault {
  std::int32_t signo = 0;
  std::string signal_name;
  std::int32_t si_code = 0;
  std::string si_code_name;
  std::optional<std::uint64_t> fault_address;  /**< si_addr, when si_code says so */
  std::optional<std::int32_t> sender_pid;      /**< when si_code <= 0 */
  std::uint64_t pc = 0, sp = 0;                /**< uc_mcontext's rip, rsp */
  std::uint64_t frame_address = 0;             /**< of the ucontext */
  Location location;                           /**< of pc */
  std::optional<Location> handler;             /**< the frame the signal
                                                    entered (its handler) */
  std::string raised_with;   /**< "kill()", "tgkill()" (raise() uses it),
                                  "sigqueue()": from the fatal si_code */
  /** The crashing thread's CRASH event is this fault, recorded chained
   *  (kCrashChained) at this pc: the handler the signal entered was
   *  libtimeline's, which called the program's (libtimeline-signal.so).
   *  In the text only; the JSON has it as the CRASH event itself. */
  bool recorded = false;
};

struct CrashFacts {
  std::int32_t signo = 0;        /**< 0: no signal recorded (signal_note) */
  std::string signal_name;       /**< "" when signo is 0 */
  std::string signal_note;       /**< why there is no signal, "" if there is */
  /** NT_SIGINFO's si_code; unknown without NT_SIGINFO: NT_PRSTATUS's
   *  pr_info.si_code is not the signal's (the kernel leaves it 0). */
  std::optional<std::int32_t> si_code;
  std::string si_code_name;      /**< "" when si_code is unknown */
  std::string si_code_note;      /**< why si_code is unknown, "" if known */
  std::optional<std::uint64_t> fault_address;  /**< when si_code says so */
  std::optional<std::int32_t> sender_pid;      /**< SI_USER, SI_TKILL, ... */
  std::uint32_t tid = 0;
  bool has_regs = false;
  std::uint64_t pc = 0, sp = 0;
  std::optional<Location> location;            /**< of pc */
  bool ring_slot = false;        /**< a CRASH event is in a ring */
  /** Spans the crashing thread had begun and not ended (open or
   *  open_or_end_lost), outermost first; indices in Analysis::spans. */
  std::vector<std::uint32_t> inside_spans;
  SignalNote source = SignalNote::kPrstatus;
  /** The crashing thread's whole stack (ReadOptions::unwind); nullopt
   *  when the core was not unwound (no registers, no symbolizer). */
  std::optional<CrashStack> stack;
  /** The original fault, when the program's own handler re-raised it. */
  std::optional<ReraisedFault> reraised;
  /** What the core shows of a fatal signal the process sent itself when
   *  no signal frame tells the fault it answered; "" otherwise. */
  std::string reraised_note;
};

struct ProcessFacts {
  std::optional<std::uint32_t> pid;   /**< NT_PRPSINFO */
  std::uint32_t ppid = 0, uid = 0;
  std::string comm, args;
  std::string exe;                    /**< NT_FILE path of the executable */
  std::string exe_rule;               /**< how it was picked */
  std::vector<std::uint8_t> build_id; /**< of the executable, from the core */
  std::string build_id_note;          /**< why it is empty */
  std::vector<std::uint32_t> threads; /**< tids with an NT_PRSTATUS */
};

/** The time base of a timeline: what ages are relative to, and the slot
 *  clock's rate (ring.h SlotClock; docs/ring-format.md, "Time"). */
struct TimeBase {
  /** kSnapshot: the time a live snapshot was taken (Analysis::snapshot),
   *  which is no event. */
  enum class Reference { kNone, kCrash, kNewestEvent, kSnapshot };
  Reference reference = Reference::kNone;
  std::optional<std::size_t> reference_event;  /**< index in events; none
                                                    for kSnapshot */
  /** The ring whose clock places the reference (index in rings): the
   *  reference event's, or for kSnapshot the first valid ring's. */
  std::optional<std::uint32_t> reference_ring;
  std::uint64_t reference_ticks = 0;
  SlotClock::Rate rate_from = SlotClock::Rate::kUnknown;
  double ticks_per_second = 0;   /**< 0: unknown */
  std::optional<double> rate_error;  /**< relative bound, see SlotClock */
  /** Every rate the reference ring offers, checked against each other
   *  (SlotClock::offers). */
  std::vector<SlotClock::Offer> rate_offers;
  bool wall_clock = false;       /**< realtime_ns is known for events */
  std::string note;              /**< why events cannot be placed in time,
                                      or what limits it; "" if nothing */
};
std::string_view reference_name(TimeBase::Reference r) noexcept;  /* "crash", "newest_event", "snapshot", "" */

/** One span (tl_span_begin .. tl_span_end), from its begin, its end, or
 *  both.  States: "open" (begun, no end, and no event that could be its end
 *  was lost), "open_or_end_lost" (begun, no end found, but events that
 *  could hold its end were lost: see note), "closed", "begin_lost" (an end
 *  whose begin was overwritten or torn: never shown as a fresh span),
 *  "no_begin" (an end whose token names no begin of this ring, and no
 *  lost one: no slot of the ring, a sequence its lane never reached, or a
 *  slot that holds another event; note says which). */
struct Span {
  enum class State { kOpen, kOpenOrEndLost, kClosed, kBeginLost, kNoBegin };
  State state = State::kOpen;
  std::uint32_t ring = 0;
  std::uint64_t token = 0;
  std::uint32_t id = 0;          /**< 0 with begin_lost or no_begin when
                                      the ender could not read it */
  bool id_known = true;
  std::uint64_t arg = 0;         /**< the begin's arg (0 if begin lost) */
  std::optional<std::size_t> begin, end;  /**< indices in events */
  std::uint32_t tid = 0;         /**< the begin's thread (the end's when
                                      there is no begin) */
  std::uint32_t end_tid = 0;
  std::optional<std::int64_t> duration_ns;   /**< closed, or begin_lost with
                                                  the begin's time known */
  std::optional<std::int64_t> open_for_ns;   /**< open: time from its begin
                                                  to the time reference */
  std::optional<std::uint32_t> parent;       /**< enclosing span of the same
                                                  thread, index in spans */
  std::uint32_t depth = 0;       /**< 0: outermost in its thread */
  std::uint32_t extra_ends = 0;  /**< ends after the first (ended twice) */
  std::string note;
};
std::string_view span_state_name(Span::State s) noexcept;

/** A thread's line at the crash: the spans it still had open. */
struct ThreadSummary {
  std::uint32_t tid = 0;
  std::string name;
  std::uint64_t events = 0;
  bool crashed = false;          /**< the thread that took the signal */
  std::vector<std::uint32_t> open_spans;  /**< indices in spans, outermost
                                             first */
};

/**
 * How far back one source's evidence reaches: user marks and spans, the
 * allocation wrappers' events, the I/O wrappers' (format::Source).  Lost
 * events are older than their lane's oldest surviving event, so the
 * source is complete after the newest such boundary over the lanes that
 * lost events and may hold the source: in a version-3 ring a lane holds
 * one source; in a version-1 or -2 ring every lane may hold any, so one
 * lane's losses bound every source (losses_by_source false).  Dropped
 * events (no lane could be had) have no time: with any, nothing is
 * complete.  Torn, invalid and missing slots are holes inside the window.
 * Times are ages: nanoseconds before the time reference (TimeBase).
 */
struct SourceWindow {
  std::uint32_t source = 0;           /**< format::Source */
  std::string name;                   /**< "user", "alloc", "io" */
  std::uint64_t events = 0;           /**< its events in the timeline */
  std::uint64_t overwritten = 0;      /**< in lanes that may hold it */
  std::uint64_t dropped = 0;          /**< this source's, or (v1, v2)
                                           the ring's */
  std::uint64_t torn = 0;             /**< torn, invalid or missing slots
                                           in lanes that may hold it */
  bool losses_by_source = false;      /**< lanes hold one source (v3) */
  std::optional<std::int64_t> oldest_age_ns;  /**< its oldest surviving
                                                   event's age */
  /** Complete (nothing overwritten or dropped) for this long before the
   *  reference, in ns (positive): from the newest loss boundary, or from
   *  tl_init when nothing was lost.  nullopt: cannot be told (no rate, dropped events,
   *  or a boundary without a timestamp). */
  std::optional<std::int64_t> complete_for_ns;
  bool complete_since_init = false;   /**< nothing lost since tl_init */
  bool lost = false;                  /**< overwritten or dropped > 0 */
  /** Whether its recorder was loaded when the ring was made (v3's
   *  kSourcePresent; user marks always); nullopt for v1 and v2 rings. */
  std::optional<bool> recorder_loaded;
  bool enabled = true;                /**< its TL_SOURCE_* bit was set in
                                           the last tl_set_enabled() */
};

struct MagicMiss {
  std::uint64_t address = 0;
  std::string reason;
};

struct Analysis {
  Status status = Status::kCoreUnreadable;
  std::string reason;            /**< one line for stderr when status != ok */
  TimelineSource source = TimelineSource::kNone;
  std::string core_path;
  std::uint64_t core_size = 0;
  bool core_truncated = false;
  std::uint16_t machine = 0;
  ProcessFacts process;
  /** A live snapshot (the core's CORE-TIMELINE note, live.h): the process
   *  was running, so there is no crash (`crash` stays empty) and ages are
   *  relative to the snapshot's time. */
  std::optional<LiveSnapshotNote> snapshot;
  std::optional<CrashFacts> crash;
  /** A probable cause and its evidence (cause.h, docs/cause.md); nullopt
   *  when the evidence supports none and leaves nothing undecided. */
  std::optional<CauseReport> cause;
  std::vector<RingReport> rings; /**< a valid ring's events are in `events`,
                                     not in its DecodedRing */
  std::vector<Event> events;     /**< merged order (docs/timeline-json.md) */
  /* What events share, by index (Event). */
  std::vector<std::string> strings{std::string()};  /**< distinct; [0] is "" */
  std::vector<Location> locations;
  std::vector<AddressMapping> mappings;
  std::vector<CrashSlot> crash_slots;
  std::vector<std::uint8_t> inline_data;
  /** Events' stack frames, as indices in locations (Event::frames_at). */
  std::vector<std::uint32_t> frames;
  TimeBase time;
  std::vector<Span> spans;       /**< by begin (or lost begin's end) order */
  std::vector<ThreadSummary> threads;  /**< by first event */
  /** One per source (user, alloc, io) when there is a valid ring. */
  std::vector<SourceWindow> windows;
  /** Names of user ids: the core's name table, overridden by --tlmap. */
  std::map<std::uint32_t, EventName> names;
  std::vector<MagicMiss> magic_rejected;  /**< "CTLN" that did not validate */
  std::uint64_t magic_rejected_total = 0;
  std::optional<std::string> sidecar_path;
  SidecarStatus sidecar_status = SidecarStatus::kNone;
  std::string sidecar_detail;
  /** True when events were dropped, overwritten, torn, lost to truncation
   *  or a counter is inconsistent, or when a cut-off core cannot tell
   *  whether there was a ring: then the absence of an event proves
   *  nothing. */
  bool absence_proves_nothing = false;
  std::vector<std::string> warnings;
  /** The other threads' stacks unwound from the core (ReadOptions::
   *  all_threads), in NT_PRSTATUS order; the crashing thread's is
   *  crash->stack. */
  std::vector<ThreadStack> thread_stacks;
  /** Which crashes are the same bug (group.h); nullopt without crash facts. */
  std::optional<GroupSignature> group;

  /* An event's parts from the tables above. */
  std::string_view thread_of(const Event &e) const { return strings[e.thread]; }
  std::string_view kind_name_of(const Event &e) const { return strings[e.kind_name]; }
  std::string_view name_of(const Event &e) const { return strings[e.name]; }
  const Location *location_of(const Event &e) const {
    return e.location == kNoIndex ? nullptr : &locations[e.location];
  }
  const AddressMapping *pointer_of(const Event &e) const {
    return e.pointer == kNoIndex ? nullptr : &mappings[e.pointer];
  }
  const CrashSlot *crash_of(const Event &e) const { return e.crash == kNoIndex ? nullptr : &crash_slots[e.crash]; }
  std::span<const std::uint8_t> inline_bytes_of(const Event &e) const {
    return {inline_data.data() + e.inline_at, e.inline_len};
  }
  /** The event's stack frames (indices in locations), innermost first. */
  std::span<const std::uint32_t> frames_of(const Event &e) const {
    return {frames.data() + e.frames_at, e.stack_depth};
  }
  /** The names of the event's two arguments ("" where a name is not
   *  given), or nullopt when it has none: a SPAN_END's are its own, "token"
   *  and "begin_timestamp" (the begin's slot-clock ticks, as the ender read
   *  them), whatever its span's name; a named id's are those of `names`. */
  std::optional<std::array<std::string_view, 2>> arg_names_of(const Event &e) const;
};

/** Finds the rings of an opened core as analyze() does (NT_FILE memfd
 *  mappings; validated "CTLN" headers at the start of other mappings NT_FILE
 *  lists, or on any page when the core has no NT_FILE) and validates their
 *  headers, but decodes no slot: a kValid report's `ring` is empty and its
 *  identity is unchecked.  Cost: O(NT_FILE entries) reads of a few bytes
 *  and one header CRC per candidate, independent of the core's size; O(core
 *  size) without NT_FILE.  Throws std::bad_alloc only. */
std::vector<RingReport> locate_rings(const CoreFile &core);

/** Analyzes an opened core.  Never throws. */
Analysis analyze(const CoreFile &core, const ReadOptions &options) noexcept;

/** CoreFile::open(path), then analyze(); an unreadable core gives status
 *  kCoreUnreadable with the reason.  Never throws. */
Analysis analyze_file(const std::string &path, const ReadOptions &options) noexcept;

/** The Analysis for a core that could not be opened (status
 *  kCoreUnreadable, reason from `error`; core_size and machine from
 *  `facts`, what CoreFile::open() told of a file it refused). */
Analysis analysis_of_error(const std::string &path, const Error &error, const FileFacts &facts = {});

/** Signal name ("SIGSEGV") for Linux signal numbers, or "SIG<n>". */
std::string signal_name(int signo);
/** si_code name for a signal ("SEGV_MAPERR", "SI_USER"), or the number. */
std::string si_code_name(int signo, int code);

}  // namespace core_timeline::reader

#endif  // CORE_TIMELINE_READER_ANALYZE_H
