/* SPDX-License-Identifier: MIT */
/* The names of the Analysis's enums, of signals and of si_codes, as the
 * document and the text show them. */
#include <csignal>

#include <fmt/format.h>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/timeline.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

namespace {

/* The name of `v` in `table`, a list of {value, name} pairs. */
template <class E, std::size_t N>
std::string_view name_in(const std::array<std::pair<E, std::string_view>, N> &table, E v) noexcept {
  for (const auto &[value, name] : table)
    if (value == v) return name;
  return "?";
}

}  // namespace

std::string_view verification_name(Verification v) noexcept {
  static constexpr std::array<std::pair<Verification, std::string_view>, 3> kNames{{
      {Verification::kRaw, "raw"},
      {Verification::kVerified, "verified"},
      {Verification::kUnverifiedNoCoreBuildId, "unverified-no-core-buildid"},
  }};
  return name_in(kNames, v);
}

std::string_view mapping_kind_name(MappingKind k) noexcept {
  static constexpr std::array<std::pair<MappingKind, std::string_view>, 3> kNames{{
      {MappingKind::kUnmapped, "unmapped"}, {MappingKind::kFile, "file"}, {MappingKind::kAnonymous, "anonymous"}}};
  return name_in(kNames, k);
}

std::string_view origin_name(Origin o) noexcept {
  static constexpr std::array<std::pair<Origin, std::string_view>, 2> kNames{{{Origin::kCore, "core"}, {Origin::kSidecar, "sidecar"}}};
  return name_in(kNames, o);
}

std::string_view found_by_name(FoundBy f) noexcept {
  static constexpr std::array<std::pair<FoundBy, std::string_view>, 3> kNames{{
      {FoundBy::kNtFile, "nt_file"}, {FoundBy::kMagicScan, "magic_scan"}, {FoundBy::kSidecar, "sidecar"}}};
  return name_in(kNames, f);
}

std::string_view signal_note_name(SignalNote n) noexcept {
  static constexpr std::array<std::pair<SignalNote, std::string_view>, 2> kNames{{
      {SignalNote::kSiginfo, "NT_SIGINFO"}, {SignalNote::kPrstatus, "NT_PRSTATUS"}}};
  return name_in(kNames, n);
}

std::string_view timeline_source_name(TimelineSource s) noexcept {
  static constexpr std::array<std::pair<TimelineSource, std::string_view>, 4> kNames{{
      {TimelineSource::kNone, ""},
      {TimelineSource::kCoreOnly, "core-only"},
      {TimelineSource::kCoreAndSidecar, "core+sidecar"},
      {TimelineSource::kDegradedSidecar, "degraded-sidecar"},
  }};
  return name_in(kNames, s);
}

std::string_view sidecar_status_name(SidecarStatus s) noexcept {
  static constexpr std::array<std::pair<SidecarStatus, std::string_view>, 6> kNames{{
      {SidecarStatus::kNone, ""},
      {SidecarStatus::kIgnored, "ignored"},
      {SidecarStatus::kMerged, "merged"},
      {SidecarStatus::kDegraded, "degraded"},
      {SidecarStatus::kUnusable, "unusable"},
      {SidecarStatus::kRefused, "refused"},
  }};
  return name_in(kNames, s);
}

std::string_view check_name(Check c) noexcept {
  switch (c) {
    case Check::kMatch: return "match";
    case Check::kMismatch: return "mismatch";
    case Check::kUnchecked: return "unchecked";
  }
  return "unchecked";
}

std::string_view stack_state_name(StackState s) noexcept {
  switch (s) {
    case StackState::kNone: return "none";
    case StackState::kComplete: return "complete";
    case StackState::kDepthLimit: return "depth_limit";
    case StackState::kNoUnwindInfo: return "no_unwind_info";
    case StackState::kBadFrame: return "bad_frame";
    case StackState::kLost: return "lost";
    case StackState::kMalformed: return "malformed";
    case StackState::kCut: return "cut";
  }
  return "none";
}

std::string_view ring_state_name(RingReport::State s) noexcept {
  switch (s) {
    case RingReport::State::kValid: return "valid";
    case RingReport::State::kAbsent: return "absent";
    case RingReport::State::kInvalid: return "invalid";
    case RingReport::State::kForeign: return "foreign";
    case RingReport::State::kNotMade: return "not_made";
  }
  return "invalid";
}

std::string_view name_from_name(NameFrom n) noexcept {
  static constexpr std::array<std::pair<NameFrom, std::string_view>, 3> kNames{{
      {NameFrom::kNone, ""}, {NameFrom::kCore, "core"}, {NameFrom::kTlmap, "tlmap"}}};
  return name_in(kNames, n);
}

std::string_view reference_name(TimeBase::Reference r) noexcept {
  static constexpr std::array<std::pair<TimeBase::Reference, std::string_view>, 4> kNames{{
      {TimeBase::Reference::kNone, ""},
      {TimeBase::Reference::kCrash, "crash"},
      {TimeBase::Reference::kNewestEvent, "newest_event"},
      {TimeBase::Reference::kSnapshot, "snapshot"}}};
  return name_in(kNames, r);
}

std::string_view span_state_name(Span::State s) noexcept {
  static constexpr std::array<std::pair<Span::State, std::string_view>, 5> kNames{{
      {Span::State::kOpen, "open"},
      {Span::State::kOpenOrEndLost, "open_or_end_lost"},
      {Span::State::kClosed, "closed"},
      {Span::State::kBeginLost, "begin_lost"},
      {Span::State::kNoBegin, "no_begin"}}};
  return name_in(kNames, s);
}

std::optional<std::array<std::string_view, 2>> Analysis::arg_names_of(const Event &e) const {
  if (e.kind == f::kKindSpanEnd) return std::array<std::string_view, 2>{"token", "begin_timestamp"};
  if (!e.named) return std::nullopt;
  const auto it = names.find(e.id);
  if (it == names.end()) return std::nullopt;
  return std::array<std::string_view, 2>{it->second.arg0, it->second.arg1};
}

/* Linux signal numbers (include/uapi/asm-generic/signal.h; x86-64 and
 * AArch64 agree for 1..31). */
std::string signal_name(int signo) {
  static const char *const kNames[] = {
      nullptr,   "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",  "SIGTRAP", "SIGABRT", "SIGBUS",
      "SIGFPE",  "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM",
      "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG",
      "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPWR",  "SIGSYS"};
  if (signo > 0 && signo < 32) return kNames[signo];
  if (signo >= 34 && signo <= 64) return fmt::format("SIGRTMIN+{}", signo - 34);
  return fmt::format("SIG{}", signo);
}

/* include/uapi/asm-generic/siginfo.h */
std::string si_code_name(int signo, int code) {
  switch (code) {
    case 0: return "SI_USER";
    case 0x80: return "SI_KERNEL";
    case -1: return "SI_QUEUE";
    case -2: return "SI_TIMER";
    case -3: return "SI_MESGQ";
    case -4: return "SI_ASYNCIO";
    case -5: return "SI_SIGIO";
    case -6: return "SI_TKILL";
    default: break;
  }
  static const char *const kSegv[] = {nullptr, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR", "SEGV_PKUERR",
                                      "SEGV_ACCADI", "SEGV_ADIDERR", "SEGV_ADIPERR", "SEGV_MTEAERR",
                                      "SEGV_MTESERR", "SEGV_CPERR"};
  static const char *const kBus[] = {nullptr, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR", "BUS_MCEERR_AR",
                                     "BUS_MCEERR_AO"};
  static const char *const kIll[] = {nullptr, "ILL_ILLOPC", "ILL_ILLOPN", "ILL_ILLADR", "ILL_ILLTRP",
                                     "ILL_PRVOPC", "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK", "ILL_BADIADDR"};
  static const char *const kFpe[] = {nullptr, "FPE_INTDIV", "FPE_INTOVF", "FPE_FLTDIV", "FPE_FLTOVF",
                                     "FPE_FLTUND", "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB", nullptr,
                                     nullptr, nullptr, nullptr, nullptr, "FPE_FLTUNK", "FPE_CONDTRAP"};
  auto pick = [&](const char *const *t, std::size_t n) -> std::string {
    if (code > 0 && static_cast<std::size_t>(code) < n && t[code] != nullptr) return t[code];
    return std::to_string(code);
  };
  switch (signo) {
    case SIGSEGV: return pick(kSegv, std::size(kSegv));
    case SIGBUS: return pick(kBus, std::size(kBus));
    case SIGILL: return pick(kIll, std::size(kIll));
    case SIGFPE: return pick(kFpe, std::size(kFpe));
    default: return std::to_string(code);
  }
}

std::string_view handed_outcome_name(HandedOutcome o) noexcept {
  switch (o) {
    case HandedOutcome::kNotHanded: return "not_handed";
    case HandedOutcome::kCrash: return "crash";
    case HandedOutcome::kRecovered: return "recovered";
    case HandedOutcome::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace core_timeline::reader
