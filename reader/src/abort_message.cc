/* SPDX-License-Identifier: MIT */
/*
 * abort_message.cc - glibc's abort message from a core (abort_message.h).
 * Every byte read here is the dead process's, so untrusted: the pointer,
 * the size and the message are read from the core's dumped bytes through
 * a bounds-checked Cursor and kept within fixed limits.
 */
#include "abort_message.h"

#include <fmt/format.h>

#include <span>
#include <vector>

#include "core_timeline/reader/cursor.h"

namespace core_timeline::reader::detail {

namespace {

/* glibc rounds the struct's mmap up to pages; a larger size is not its. */
constexpr std::uint64_t kMaxAbortStruct = 1u << 20;
constexpr std::uint64_t kHeader = 4; /* unsigned int size */

/* The libc module of the core (NT_FILE name "libc.so.6", "libc-2.31.so"),
 * else nullptr (a static executable has its own copy, found too). */
const Module *libc_module(const CoreFile &core) {
  for (const Module &m : core.modules()) {
    const std::size_t slash = m.name.rfind('/');
    const std::string_view base = std::string_view(m.name).substr(slash == std::string::npos ? 0 : slash + 1);
    if (base.starts_with("libc.so") || base.starts_with("libc-")) return &m;
  }
  return nullptr;
}

/* Reads the struct at `buffer` into out.message (or out.note). */
void read_struct(const CoreFile &core, std::uint64_t buffer, AbortMessage &out) {
  const std::vector<std::uint8_t> head = core.copy_memory(buffer, kHeader);
  Cursor hc(head, buffer, "struct abort_msg_s");
  const auto size = hc.u32("size");
  if (!size) {
    out.note = fmt::format("__abort_msg points to {:#x}, which is not in the core", buffer);
    return;
  }
  if (*size <= kHeader || *size > kMaxAbortStruct) {
    out.note = fmt::format("__abort_msg points to {:#x}, whose size {} is not one glibc writes", buffer, *size);
    return;
  }
  const std::uint64_t want = std::min<std::uint64_t>(*size - kHeader, kMaxAbortMessage);
  const std::vector<std::uint8_t> body = core.copy_memory(buffer + kHeader, want);
  Cursor c(body, buffer + kHeader, "abort message");
  if (const auto text = c.cstring("msg")) {
    out.message = std::string(*text);
    return;
  }
  if (body.empty()) {
    out.note = fmt::format("the abort message at {:#x} is not in the core", buffer + kHeader);
    return;
  }
  /* No NUL in what was read: a longer message (cut at the limit), or the
   * dump ends inside it. */
  out.message = std::string(reinterpret_cast<const char *>(body.data()), body.size());
  out.cut = true;
}

}  // namespace

AbortMessage read_abort_message(const CoreFile &core, const SymbolizeOptions &options) {
  AbortMessage out;
  const Module *libc = libc_module(core);
  if (libc != nullptr && libc->build_id.empty() && !options.unverified) {
    out.note = fmt::format("__abort_msg cannot be found: the core attests no build-id for {} ({}), so no file can be "
                           "verified to be the one that ran (--unverified-symbols uses it anyway)",
                           libc->name, libc->build_id_note);
    return out;
  }
  const std::string prefix = libc == nullptr ? std::string() : libc->name.substr(libc->name.rfind('/') + 1);
  const auto found = find_symbol(core, "__abort_msg", prefix, options);
  if (!found) {
    out.note = fmt::format("__abort_msg cannot be found: {}", found.error().message);
    return out;
  }
  if (!*found) {
    out.note = libc == nullptr ? "__abort_msg cannot be found: the core maps no libc, and no module's symbol table "
                                 "has it"
                               : fmt::format("__abort_msg cannot be found: no symbol table of {} was found that has it",
                                             libc->name);
    return out;
  }
  const NamedSymbol &sym = **found;
  /* By name: libc's .bss may lie past its last file mapping. */
  const Module *owner = nullptr;
  for (const Module &m : core.modules())
    if (owner == nullptr && m.name == sym.module) owner = &m;
  const std::vector<std::uint8_t> attested = owner != nullptr ? owner->build_id : std::vector<std::uint8_t>();
  if (attested.empty() ? !options.unverified : sym.file_build_id != attested) {
    out.note = attested.empty()
                   ? fmt::format("__abort_msg cannot be trusted: the core has no build-id for {} to check {} against "
                                 "(--unverified-symbols uses it anyway)", sym.module, sym.module_file)
                   : fmt::format("__abort_msg cannot be found: {} is not the {} that ran (build-id {}, the core's {})",
                                 sym.module_file, sym.module, hex_bytes(sym.file_build_id), hex_bytes(attested));
    return out;
  }
  out.variable = sym.address;
  const std::vector<std::uint8_t> ptr = core.copy_memory(sym.address, 8);
  Cursor pc(ptr, sym.address, "__abort_msg");
  const auto value = pc.u64("pointer");
  if (!value) {
    out.note = fmt::format("__abort_msg at {:#x} is not in the core", sym.address);
    return out;
  }
  out.buffer = *value;
  if (*value == 0) {
    out.note = "glibc set no abort message (abort() was called without one, or raise(SIGABRT))";
    return out;
  }
  read_struct(core, *value, out);
  return out;
}

}  // namespace core_timeline::reader::detail
