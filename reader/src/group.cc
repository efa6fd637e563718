/* SPDX-License-Identifier: MIT */
/*
 * group.cc - the group signature of a crash (group.h; docs/grouping.md).
 */
#include "core_timeline/reader/group.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <set>

#include <fmt/format.h>

#include "core_timeline/reader/analyze.h"
#include "core_timeline/reader/printable.h"
#include "core_timeline/ring_format.h"

namespace core_timeline::reader {

namespace f = core_timeline::format;

namespace {

/* Frames at the top of a stack that only say how the signal was raised:
 * the function that called them is where the program decided to die. */
bool raising_frame(std::string_view name) {
  static const std::set<std::string_view> names{
      "raise",        "abort",          "__GI_raise",          "__GI_abort",
      "pthread_kill", "__pthread_kill", "__pthread_kill_implementation", "__pthread_kill_internal",
      "__assert_fail", "__assert_fail_base", "__libc_message", "__fortify_fail",
      "__stack_chk_fail", "__chk_fail",  "malloc_printerr",     "gsignal",
      "tgkill",       "kill"};
  return names.count(name) > 0;
}

/* Frames past which a stack says nothing of the bug: the C library's start
 * of the process or of a thread. */
bool outer_frame(std::string_view name) {
  static const std::set<std::string_view> names{"__libc_start_call_main", "__libc_start_main", "_start",
                                                "start_thread", "clone", "clone3"};
  return names.count(name) > 0;
}

std::string join(const std::vector<std::string> &v, std::string_view sep) {
  std::string s;
  for (const auto &x : v) s += (s.empty() ? "" : std::string(sep)) + x;
  return s;
}

/* The crashing thread's frames, innermost first, as group_frame_name()s. */
std::vector<std::string> stack_part(const CrashFacts &c) {
  std::vector<std::string> all;
  if (c.stack && !c.stack->frames.empty()) {
    const auto &fr = c.stack->frames;
    std::size_t start = 0;
    for (std::size_t i = 0; i < fr.size(); ++i)
      if (fr[i].signal_frame) start = i + 1;
    for (std::size_t i = start; i < fr.size(); ++i) all.push_back(group_frame_name(fr[i].location));
  } else if (c.location) {
    all.push_back(group_frame_name(*c.location));
  }
  std::size_t i = 0;
  while (i + 1 < all.size() && raising_frame(all[i])) ++i;
  std::vector<std::string> out;
  for (; i < all.size() && out.size() < kGroupFrames; ++i) {
    if (outer_frame(all[i]) && !out.empty()) break;
    out.push_back(all[i]);
    if (all[i] == "main") break;
  }
  return out;
}

/* A user event's or span's name as the Analysis gives it. */
std::string name_at(const Analysis &a, std::size_t event) { return std::string(a.name_of(a.events[event])); }

struct History {
  std::vector<std::string> spans, events;
};

History history_part(const Analysis &a, const CrashFacts &c) {
  History h;
  std::set<std::uint32_t> open(c.inside_spans.begin(), c.inside_spans.end());
  for (std::uint32_t s : c.inside_spans)
    if (s < a.spans.size() && a.spans[s].begin && *a.spans[s].begin < a.events.size())
      h.spans.push_back(name_at(a, *a.spans[s].begin));
  for (std::size_t i = a.events.size(); i > 0 && h.events.size() < kGroupLastEvents; --i) {
    const Event &e = a.events[i - 1];
    if (e.tid != c.tid) continue;
    const bool mark = e.kind == f::kKindUser || e.kind == f::kKindUserPtr;
    const bool left_span = e.kind == f::kKindSpanBegin && !(e.span && open.count(*e.span));
    if (!mark && !left_span) continue;
    std::string name = name_at(a, i - 1);
    if (h.events.empty() || h.events.back() != name) h.events.push_back(std::move(name));  // a run counts once
  }
  std::reverse(h.events.begin(), h.events.end());
  return h;
}

/* The open spans in words, outermost first: all of them up to
 * kGroupWordSpans, else the two outermost and the two innermost around how
 * many were left out, so that deep nesting (a recursion inside a span)
 * keeps the line short.  The ids hash every one. */
std::string span_words(const std::vector<std::string> &s) {
  if (s.size() <= kGroupWordSpans) return join(s, " > ");
  return join({s[0], s[1]}, " > ") + fmt::format(" > ({} more) > ", s.size() - 4) +
         join({s[s.size() - 2], s[s.size() - 1]}, " > ");
}

}  // namespace

std::string group_hash(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 || len < 8)
    return std::string(16, '0');  // libcrypto failed: the same for every text, never a false split
  std::string s;
  for (unsigned i = 0; i < 8; ++i) s += fmt::format("{:02x}", md[i]);
  return s;
}

std::string group_frame_name(const Location &l) {
  if (!l.function.empty()) {
    const auto at = l.function.find('@');
    return at == std::string::npos || at == 0 ? l.function : l.function.substr(0, at);
  }
  if (!l.in_module || l.module.empty()) return "??";
  const auto slash = l.module.rfind('/');
  return "?? (" + (slash == std::string::npos ? l.module : l.module.substr(slash + 1)) + ")";
}

GroupSignature make_signature(std::string signal, std::vector<std::string> frames,
                              std::vector<std::string> open_spans, std::vector<std::string> last_events,
                              bool history, std::string note) {
  GroupSignature g;
  g.signal = std::move(signal);
  g.frames = std::move(frames);
  g.history_used = history;
  g.note = std::move(note);
  if (history) {
    g.open_spans = std::move(open_spans);
    g.last_events = std::move(last_events);
  }
  /* Each name on a line of its own: names hold no '\n' that could join
   * two (the reader's names are single-line; a '\n' would still only
   * change the id, never merge two parts). */
  const std::string rule = fmt::format("core-timeline group rule {}\n", kGroupRule);
  const std::string stack = "signal " + g.signal + "\nframes\n" + join(g.frames, "\n");
  const std::string hist = "spans\n" + join(g.open_spans, "\n") + "\nevents\n" + join(g.last_events, "\n");
  g.stack_id = group_hash(rule + "stack\n" + stack);
  std::vector<std::string> calls;
  for (const auto &fr : g.frames) calls.push_back(fr.starts_with("??") ? fr : fr + "()");
  g.stack_words = g.signal + (calls.empty() ? std::string(" (no stack)") : " in " + join(calls, " <- "));
  if (!history) {
    g.id = g.stack_id;
    g.words = g.stack_words;
    return g;
  }
  g.history_id = group_hash(rule + "history\n" + hist);
  g.id = group_hash(rule + "group\n" + stack + "\n" + hist);
  g.words = g.stack_words;
  if (!g.open_spans.empty()) g.words += " inside " + span_words(g.open_spans);
  if (!g.last_events.empty()) g.words += ", after " + join(g.last_events, ", ");
  return g;
}

std::optional<GroupSignature> group_signature(const Analysis &a) {
  if (!a.crash || a.snapshot) return std::nullopt;
  const CrashFacts &c = *a.crash;
  std::string signal = c.reraised ? c.reraised->signal_name : c.signal_name;
  if (signal.empty()) signal = "no signal";
  std::vector<std::string> frames = stack_part(c);
  History h;
  std::string note;
  if (a.status != Status::kOk) {
    note = fmt::format("no usable history ({}): grouped by the stack alone", status_name(a.status));
  } else {
    h = history_part(a, c);
    if (h.spans.empty() && h.events.empty())
      note = "no user event or open span on the crashing thread: grouped by the stack alone";
  }
  const bool history = note.empty();
  if (frames.empty())
    note += std::string(note.empty() ? "" : "; ") + "the crash stack is not known (no symbols or unwind)";
  return make_signature(std::move(signal), std::move(frames), std::move(h.spans), std::move(h.events), history,
                        std::move(note));
}

std::string group_text(const GroupSignature &g) {
  std::string s = fmt::format("group: {} {}\n  stack alone: {} {}\n", g.id, printable(g.words), g.stack_id,
                              printable(g.stack_words));
  if (!g.note.empty()) s += "  " + printable(g.note) + "\n";
  return s;
}

}  // namespace core_timeline::reader
