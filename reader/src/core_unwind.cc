/* SPDX-License-Identifier: MIT */
#include "core_unwind.h"

#include <elf.h>
#include <gelf.h>

#include <fmt/format.h>

namespace core_timeline::reader::detail {

namespace {

struct Walk {
  UnwoundThread *thread = nullptr;
  std::uint32_t max = 0;
  unsigned sp_regno = 0;
  bool has_sp_regno = false;
  bool hit_limit = false;
};

int on_frame(Dwfl_Frame *state, void *arg) {
  auto *w = static_cast<Walk *>(arg);
  if (w->thread->frames.size() >= w->max) {
    w->hit_limit = true;
    return DWARF_CB_ABORT;
  }
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
  UnwoundFrame f;
  f.pc = pc;
  f.activation = activation;
  Dwarf_Word sp = 0;
  if (w->has_sp_regno && dwfl_frame_reg(state, w->sp_regno, &sp) == 0) f.sp = sp;
  w->thread->frames.push_back(std::move(f));
  return DWARF_CB_OK;
}

}  // namespace

std::string unwind_core_threads(Dwfl *dwfl, const CoreFile &core, const UnwindRequest &req,
                                std::vector<UnwoundThread> &out, Elf **elf_out) {
  *elf_out = nullptr;
  const auto &threads = core.notes().threads;
  if (threads.empty()) return "the core has no NT_PRSTATUS note";
  Elf *elf = nullptr;
  if (core.fd() >= 0) {
    elf = elf_begin(core.fd(), ELF_C_READ_MMAP, nullptr);
  } else {
    const auto bytes = core.bytes();
    /* elf_memory's image is only read with ELF_C_READ (libelf's default
     * for it). */
    elf = elf_memory(const_cast<char *>(reinterpret_cast<const char *>(bytes.data())), bytes.size());
  }
  if (elf == nullptr) return fmt::format("libelf cannot read the core: {}", elf_errmsg(-1));
  *elf_out = elf;
  if (dwfl_core_file_attach(dwfl, elf) < 0) return fmt::format("dwfl_core_file_attach: {}", dwfl_errmsg(-1));
  Walk w;
  w.max = req.max_frames;
  switch (core.machine()) {
    case EM_X86_64: w.sp_regno = 7, w.has_sp_regno = true; break;
    case EM_AARCH64: w.sp_regno = 31, w.has_sp_regno = true; break;
    default: break;
  }
  for (std::size_t i = 0; i < threads.size(); ++i) {
    if (i == 0 ? !req.crashed_thread : !req.all_threads) continue;
    UnwoundThread t;
    t.tid = threads[i].tid;
    w.thread = &t;
    w.hit_limit = false;
    const int rc = dwfl_getthread_frames(dwfl, static_cast<pid_t>(t.tid), on_frame, &w);
    if (w.hit_limit) t.end = fmt::format("depth limit ({} frames)", w.max);
    else if (rc != 0) {
      const int e = dwfl_errno();
      t.end = e != 0 ? dwfl_errmsg(e) : "the unwinder stopped";
    }
    out.push_back(std::move(t));
  }
  return {};
}

}  // namespace core_timeline::reader::detail
