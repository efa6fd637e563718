/* SPDX-License-Identifier: MIT */
#include "text.h"

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/printable.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

namespace core_timeline::ctl_query {

using json = nlohmann::ordered_json;
namespace key = core_timeline::document::key;

namespace {

const json *member(const json &o, const char *key) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(key);
  return it == o.end() ? nullptr : &*it;
}

std::optional<std::uint64_t> u64_of(const json *v) {
  if (v && v->is_number_unsigned()) return v->get<std::uint64_t>();
  if (v && v->is_number_integer() && v->get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(v->get<std::int64_t>());
  return std::nullopt;
}

std::string str_of(const json *v) { return v && v->is_string() ? printable(v->get_ref<const std::string &>()) : "?"; }

std::string dec(const json *v) {
  if (auto u = u64_of(v)) return std::to_string(*u);
  if (v && v->is_number_integer()) return std::to_string(v->get<std::int64_t>());
  return "?";
}

std::string hex(const json *v) {
  if (auto u = u64_of(v)) return fmt::format("{:#x}", *u);
  return "?";
}

/* A signed result stored as the u64 bit pattern (read/write results). */
std::string sdec(const json *v) {
  if (auto u = u64_of(v)) return std::to_string(static_cast<std::int64_t>(*u));
  return dec(v);
}

std::string basename_of(std::string_view p) {
  auto slash = p.rfind('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

}  // namespace

std::string printable(std::string_view s, bool keep_lines) {
  return reader::printable(s, {.keep_lines = keep_lines});
}

void write_printable(std::ostream &out, std::string_view s, bool keep_lines) {
  const reader::PrintableOptions o{.keep_lines = keep_lines};
  if (reader::is_printable(s, o)) out.write(s.data(), static_cast<std::streamsize>(s.size()));
  else out << reader::printable(s, o);
}

std::string scalar_text(const json *v) {
  if (!v || v->is_null()) return "-";
  if (v->is_string()) return printable(v->get_ref<const std::string &>());
  if (v->is_boolean()) return v->get<bool>() ? "true" : "false";
  if (v->is_number_unsigned()) return std::to_string(v->get<std::uint64_t>());
  if (v->is_number_integer()) return std::to_string(v->get<std::int64_t>());
  if (v->is_number_float()) return fmt::format("{}", v->get<double>());
  return "?";
}

std::string event_args_text(const json &e) {
  const json *args = member(e, key::args);
  const json *a0 = args && args->is_array() && args->size() > 0 ? &(*args)[0] : nullptr;
  const json *a1 = args && args->is_array() && args->size() > 1 ? &(*args)[1] : nullptr;
  const json *kindv = member(e, key::kind);
  const std::string kind = kindv && kindv->is_string() ? kindv->get<std::string>() : "";
  const json *id = member(e, key::id);
  /* The names the program gave its arguments (tl_name, or a tlmap), as
   * core-timeline-read prints them: "request_id=41 bytes=512". */
  const json *names = member(e, key::arg_names);
  const auto arg_name = [&](std::size_t i) -> std::string {
    const json *n = names && names->is_array() && names->size() > i ? &(*names)[i] : nullptr;
    return n && n->is_string() && !n->get_ref<const std::string &>().empty() ? printable(n->get_ref<const std::string &>())
                                                                             : std::string();
  };
  const auto user_args = [&](bool one_arg) {
    const std::string n0 = arg_name(0), n1 = arg_name(1);
    std::string s = fmt::format("{}={}", n0.empty() ? "arg" : n0, dec(a0));
    auto v1 = u64_of(a1);
    if (!one_arg && !n1.empty()) s += fmt::format(" {}={}", n1, dec(a1));
    else if (!one_arg && v1 && *v1 != 0) s += fmt::format(" arg1={}", dec(a1));
    return s;
  };
  if (kind == "USER") return user_args(false);
  if (kind == "SPAN_BEGIN") return "begin " + user_args(true);
  if (kind == "SPAN_END") return "end";
  if (kind == "CRASH") {
    const json *c = member(e, key::crash);
    return fmt::format("sig={} code={} addr={}", str_of(c ? member(*c, key::signal_name) : nullptr),
                       str_of(c ? member(*c, key::si_code_name) : nullptr), str_of(c ? member(*c, key::fault_address) : nullptr));
  }
  if (kind == "LANE_CLAIM") return fmt::format("lane={} prev_owner={}", dec(a0), dec(a1));
  if (kind == "MALLOC" || kind == "CALLOC" || kind == "REALLOC")
    return fmt::format("ptr={} size={}", hex(a0), dec(a1));
  if (kind == "FREE") return fmt::format("ptr={}", hex(a0));
  /* The inline bytes as the reader wrote them as a string (inline_text:
   * already escaped by its one escaper, so printable() leaves an honest
   * document's unchanged), "..." after it when they were or may have been
   * cut; nothing when they are not text. */
  const auto inline_arg = [&](std::string_view name) -> std::string {
    const json *t = member(e, key::inline_text);
    if (!t || !t->is_string()) return {};
    const json *cut = member(e, key::inline_cut);
    return fmt::format(" {}=\"{}\"{}", name, printable(t->get_ref<const std::string &>()),
                       cut && cut->is_boolean() && cut->get<bool>() ? "..." : "");
  };
  if (kind == "USER_PTR") return fmt::format("ptr={} len={}{}", hex(a0), dec(a1), inline_arg("text"));
  if (const json *io = member(e, key::io); io && io->is_object()) {
    /* As core-timeline-read writes it: the fd and what made it, the result
     * (an errno by its name), then what the kind adds. */
    const auto text_of = [&](const char *k) -> std::string {
      const json *v = member(*io, k);
      return v && v->is_string() ? printable(v->get_ref<const std::string &>()) : std::string();
    };
    std::string s;
    if (const json *fd = member(*io, key::fd); fd && fd->is_number_integer()) {
      const json *origin = member(*io, key::origin);
      const json *says = origin && origin->is_object() ? member(*origin, key::says) : nullptr;
      s = fmt::format("fd={}{} ", fd->get<std::int64_t>(),
                      says && says->is_string() ? " (" + printable(says->get_ref<const std::string &>()) + ")" : "");
    }
    const std::string err = text_of(key::errno_name);
    s += "result=" + (err.empty() ? sdec(a0) : err);
    if (kind == "OPEN") return s + (text_of(key::flags).empty() ? "" : " flags=" + text_of(key::flags)) + inline_arg("path");
    if (kind == "CONNECT") return s + (text_of(key::peer).empty() ? inline_arg("addr") : " addr=" + text_of(key::peer));
    if (kind == "ACCEPT") return s + (text_of(key::peer).empty() ? "" : " from=" + text_of(key::peer));
    if (kind == "SOCKET") return fmt::format("domain={} type={} {}", text_of(key::domain), text_of(key::type), s);
    if (kind == "CLOSE" || kind == "FSYNC") return s;
    s += " count=" + dec(a1);
    if (const json *off = member(*io, key::offset); off && off->is_number_integer())
      s += fmt::format(" offset={}", off->get<std::int64_t>());
    return s;
  }
  if (kind == "READ" || kind == "WRITE") return fmt::format("fd={} result={} count={}", dec(id), sdec(a0), dec(a1));
  if (kind == "CLOSE") return fmt::format("fd={} result={}", dec(id), sdec(a0));
  if (kind == "OPEN") return fmt::format("result={}{}", sdec(a0), inline_arg("path"));
  if (kind == "CONNECT") return fmt::format("result={}{}", sdec(a0), inline_arg("addr"));
  if (kind == "THREAD_NAME") {
    const json *t = member(e, key::thread);
    return fmt::format("name=\"{}\"", str_of(t));
  }
  return fmt::format("id={} arg0={} arg1={}", hex(id), hex(a0), hex(a1));
}

void print_table(std::ostream &out, const std::vector<std::string> &header, const std::vector<bool> &right,
                 const std::vector<std::vector<std::string>> &cells, bool legend) {
  if (cells.empty()) return;
  const std::size_t columns = header.size();
  std::vector<std::size_t> width(columns, 0);
  for (std::size_t c = 0; c < columns; ++c) width[c] = header[c].size();
  for (const auto &r : cells)
    for (std::size_t c = 0; c < std::min(r.size(), columns); ++c) width[c] = std::max(width[c], r[c].size());
  std::string s;  // one line, its memory kept from line to line
  auto line = [&](const std::vector<std::string> &r) {
    s.clear();
    const std::size_t n = std::min(r.size(), columns);
    for (std::size_t c = 0; c < n; ++c) {
      const bool last = c + 1 == n;
      const bool right_aligned = c < right.size() && right[c];
      const std::size_t pad = width[c] > r[c].size() ? width[c] - r[c].size() : 0;
      if (right_aligned) s.append(pad, ' ');
      s += r[c];
      if (!right_aligned && !last) s.append(pad, ' ');
      if (!last) s += ' ';
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << '\n';
  };
  if (legend) line(header);
  for (const auto &r : cells) line(r);
}

std::string location_text(const json &e) {
  const json *l = member(e, key::location);
  if (!l || !l->is_object()) return "-";
  const json *fn = member(*l, key::function);
  const json *mod = member(*l, key::module);
  std::string s;
  if (fn && fn->is_string()) {
    s = fmt::format("{}+{}", printable(fn->get_ref<const std::string &>()), str_of(member(*l, key::offset)));
    const json *src = member(*l, key::source);
    if (src && src->is_object()) {
      const json *file = member(*src, key::file);
      s += fmt::format(" ({}:{})", file && file->is_string() ? printable(basename_of(file->get<std::string>())) : "?",
                       dec(member(*src, key::line)));
    }
    if (mod && mod->is_string()) s += " in " + printable(basename_of(mod->get<std::string>()));
  } else if (mod && mod->is_string()) {
    s = fmt::format("{}+{}", printable(basename_of(mod->get<std::string>())), str_of(member(*l, key::file_offset)));
  } else {
    s = str_of(member(*l, key::address)) + " (in no file mapping)";
  }
  const json *ver = member(*l, key::verification);
  if (ver && ver->is_string() && *ver == "unverified-no-core-buildid") s += " [UNVERIFIED: no build-id in core]";
  const json *changed = member(*l, key::mapping_changed);
  if (changed && changed->is_boolean() && changed->get<bool>()) s += " [mappings changed since]";
  return s;
}

}  // namespace core_timeline::ctl_query
