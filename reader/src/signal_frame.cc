/* SPDX-License-Identifier: MIT */
#include "signal_frame.h"

#include <elf.h>

#include <fmt/format.h>

#include "core_timeline/reader/cursor.h"

namespace core_timeline::reader::detail {

namespace {

/* x86-64's signal frame (arch/x86/include/asm/sigframe.h struct
 * rt_sigframe; uapi asm/ucontext.h, asm/sigcontext.h, asm-generic/
 * siginfo.h).  At the handler's entry rsp points at pretcode, the return
 * address (the trampoline); once the trampoline's frame is unwound to, its
 * rsp is just past it, at uc. */
constexpr std::uint64_t kUcMcontext = 40;          /* uc_flags, uc_link, uc_stack (24) */
constexpr std::uint64_t kMcRbp = kUcMcontext + 80;  /* r8..r15, rdi, rsi, then rbp */
constexpr std::uint64_t kMcRsp = kUcMcontext + 120;
constexpr std::uint64_t kMcRip = kUcMcontext + 128;
constexpr std::uint64_t kUcSize = 304;             /* + sigcontext (256), uc_sigmask (8) */
constexpr std::uint64_t kSiginfoSize = 128;

Result<SignalFrame> decode_x86_64(const CoreFile &core, std::uint64_t uc) {
  const std::vector<std::uint8_t> bytes = core.copy_memory(uc, kUcSize + kSiginfoSize);
  Cursor c(bytes, uc, "signal frame");
  SignalFrame f;
  f.ucontext = uc;
  CT_TRY_VOID(c.seek(kMcRbp, "uc_mcontext.rbp"));
  CT_TRY(rbp, c.u64("uc_mcontext.rbp"));
  CT_TRY_VOID(c.seek(kMcRsp, "uc_mcontext.rsp"));
  CT_TRY(rsp, c.u64("uc_mcontext.rsp"));
  CT_TRY(rip, c.u64("uc_mcontext.rip"));
  CT_TRY_VOID(c.seek(kUcSize, "siginfo"));
  CT_TRY(signo, c.i32("si_signo"));
  CT_TRY(err, c.i32("si_errno"));
  CT_TRY(code, c.i32("si_code"));
  CT_TRY_VOID(c.skip(4, "siginfo padding"));
  /* The union: si_addr for faults, (si_pid, si_uid) for kill and tkill. */
  CT_TRY(addr, c.u64("si_addr"));
  f.rbp = rbp;
  f.rsp = rsp;
  f.rip = rip;
  f.signo = signo;
  f.err = err;
  f.code = code;
  f.addr = addr;
  f.pid = static_cast<std::int32_t>(addr & 0xffffffffu);
  f.uid = static_cast<std::uint32_t>(addr >> 32);
  if (signo < 1 || signo > 64) return c.error_at(kUcSize, Errc::kBadData, "si_signo", fmt::format("{} is no signal", signo));
  return f;
}

}  // namespace

std::optional<SignalFrame> read_signal_frame(const CoreFile &core, std::span<const UnwoundFrame> frames,
                                             std::string &why) {
  why.clear();
  for (std::size_t i = 1; i + 1 < frames.size(); ++i) {
    if (!frames[i].activation || !frames[i + 1].activation) continue;
    if (core.machine() != EM_X86_64) {
      why = "a signal frame is on the stack, but its layout is read on x86-64 only";
      return std::nullopt;
    }
    if (!frames[i].sp) {
      why = fmt::format("the signal frame of frame #{} has no known stack pointer", i);
      return std::nullopt;
    }
    auto f = decode_x86_64(core, *frames[i].sp);
    if (!f) {
      why = f.error().message;
      return std::nullopt;
    }
    if (f->rip != frames[i + 1].pc || (frames[i + 1].sp && f->rsp != *frames[i + 1].sp)) {
      why = fmt::format("the signal frame at {} saved rip={:#x} rsp={:#x}, not the interrupted frame's pc={:#x} "
                        "sp={}: not believed", hex(f->ucontext), f->rip, f->rsp, frames[i + 1].pc,
                        frames[i + 1].sp ? hex(*frames[i + 1].sp) : std::string("unknown"));
      return std::nullopt;
    }
    f->trampoline = i;
    return *std::move(f);
  }
  return std::nullopt;
}

MergedStack merge_stacks(std::span<const std::uint64_t> ring, std::span<const UnwoundFrame> core,
                         bool core_complete) {
  MergedStack m;
  std::optional<std::size_t> start;
  if (!ring.empty())
    for (std::size_t j = 0; j < core.size(); ++j)
      if (core[j].activation && core[j].pc == ring[0]) {
        start = j;
        break;
      }
  if (!start) {
    for (std::size_t j = 0; j < core.size(); ++j) m.frames.push_back({FrameFrom::kCore, j});
    if (!ring.empty() && !core.empty() && !core_complete) {
      /* The core's unwind stopped early, maybe above the frame the CRASH
       * event was taken in (a signal handler's code without CFI): the
       * event's own walk is all there is below. */
      for (std::size_t k = 0; k < ring.size(); ++k) m.frames.push_back({FrameFrom::kRing, k});
      m.note = fmt::format("the core's unwind stopped after {} frames without reaching the CRASH event's pc {}: the "
                           "CRASH event's walk follows its frames",
                           core.size(), hex(ring[0]));
    } else if (!ring.empty() && !core.empty())
      m.note = fmt::format("the CRASH event's pc {} is no frame of the core's unwind: the two cannot be lined up, "
                           "the core's is shown (the CRASH event keeps its own walk)", hex(ring[0]));
    else if (core.empty())
      for (std::size_t k = 0; k < ring.size(); ++k) m.frames.push_back({FrameFrom::kRing, k});
    return m;
  }
  for (std::size_t j = 0; j < *start; ++j) m.frames.push_back({FrameFrom::kCore, j});
  std::size_t k = 0;
  while (k < ring.size() && *start + k < core.size() && core[*start + k].pc == ring[k]) {
    m.frames.push_back({FrameFrom::kBoth, *start + k});
    ++k;
  }
  m.agree = static_cast<std::uint32_t>(k);
  const std::size_t core_left = core.size() - (*start + k), ring_left = ring.size() - k;
  const bool differ = core_left > 0 && ring_left > 0;
  if (core_left >= ring_left) {
    for (std::size_t j = *start + k; j < core.size(); ++j) m.frames.push_back({FrameFrom::kCore, j});
  } else {
    for (std::size_t r = k; r < ring.size(); ++r) m.frames.push_back({FrameFrom::kRing, r});
  }
  if (differ)
    m.note = fmt::format("the CRASH event's walk and the core's unwind differ from frame #{} ({} there, {} in the "
                         "core): the deeper, the {}'s, is shown past it", *start + k, hex(ring[k]),
                         hex(core[*start + k].pc), core_left >= ring_left ? "core" : "ring");
  return m;
}

std::string no_crash_event_text(const CrashFacts &c, std::optional<bool> installed) {
  std::string why;
  if (installed && !*installed)
    why = "libtimeline's crash handlers were not installed (the ring's header says so: tl_options.install_handlers "
          "was off)";
  else if (c.reraised)
    why = fmt::format("the program's own handler{} caught the original {} and re-raised it{}, so libtimeline's "
                      "crash handler, {}, did not record it: the program's replaced it, or it did not run",
                      c.reraised->handler && !c.reraised->handler->function.empty()
                          ? fmt::format(" ({})", c.reraised->handler->function)
                          : std::string(),
                      c.reraised->signal_name, c.reraised->raised_with.empty() ? "" : " with " + c.reraised->raised_with,
                      installed ? "installed at tl_init" : "whether installed or not");
  else if (installed)
    why = "libtimeline's crash handlers were installed at tl_init (the ring's header says so) and did not record "
          "this crash: another handler replaced them, the signal cannot be caught, or the handler did not run "
          "(the core cannot tell which)";
  else
    why = "libtimeline's crash handler did not record this crash; whether it was installed cannot be told";
  return fmt::format("no CRASH event in the ring: {}; the crash facts shown come from the core", why);
}

std::string_view frame_from_name_impl(FrameFrom f) noexcept {
  switch (f) {
    case FrameFrom::kRing: return "ring";
    case FrameFrom::kCore: return "core";
    case FrameFrom::kBoth: return "ring+core";
  }
  return "core";
}

}  // namespace core_timeline::reader::detail

namespace core_timeline::reader {
std::string_view frame_from_name(FrameFrom f) noexcept { return detail::frame_from_name_impl(f); }
}  // namespace core_timeline::reader
