/* SPDX-License-Identifier: MIT */
#include "view.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core_timeline/document/group_keys.h"
#include "core_timeline/document/keys.h"
#include "core_timeline/document/stored.h"
#include "core_timeline/reader/cause.h"
#include "core_timeline/reader/render.h"
#include "text.h"

namespace core_timeline::ctl_query {

using json = nlohmann::ordered_json;
namespace key = core_timeline::document::key;

namespace {

/* The width of the time column of an event line: the age's, and the
 * wall-clock time's (reader render.cc event_line()). */
constexpr std::size_t kAgeWidth = 12, kWallWidth = 22;

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> v;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    v.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return v;
}

Error misaligned(std::string what) {
  return Error{Errc::kBadData, "the stored text does not line up with the document's events: " + std::move(what)};
}

}  // namespace

ViewEvent ViewEvent::of(const json &e) {
  ViewEvent v;
  if (!e.is_object()) return v;
  if (auto k = e.find(key::kind); k != e.end() && k->is_string()) v.kind = k->get<std::string>();
  if (auto n = e.find(key::name); n != e.end() && n->is_string()) v.name = n->get<std::string>();
  if (auto t = e.find(key::tid); t != e.end() && t->is_number_unsigned()) v.tid = t->get<std::uint64_t>();
  if (auto t = e.find(key::time_ns); t != e.end() && t->is_number_integer()) v.time_ns = t->get<std::int64_t>();
  if (auto s = e.find(key::stack); s != e.end() && s->is_object()) {
    const auto f = s->find(key::frames);
    v.stack_lines = (f != s->end() && f->is_array() ? f->size() : 0) + 1;
  }
  v.bookkeeping = core_timeline::document::is_bookkeeping_event(e);
  return v;
}

namespace {

/* A frame list's lines in the text: one a frame, then the summary line and
 * the note's line (render.cc crash_stack_text, and the thread stacks). */
std::size_t frames_of(const json &stack) {
  const auto f = stack.find(key::frames);
  return f != stack.end() && f->is_array() ? f->size() : 0;
}

bool non_empty_string(const json &o, const char *k) {
  const auto v = o.find(k);
  return v != o.end() && v->is_string() && !v->get_ref<const std::string &>().empty();
}

}  // namespace

void ViewInput::take_crash(const json *c, const json *thread_stacks) {
  crash = c != nullptr && c->is_object();
  crash_tid.reset();
  crash_stack_lines = 0;
  after_crash_lines = 0;
  if (crash) {
    if (auto t = c->find(key::tid); t != c->end() && t->is_number_unsigned()) crash_tid = t->get<std::uint64_t>();
    if (auto s = c->find(key::stack); s != c->end() && s->is_object())
      crash_stack_lines = frames_of(*s) + 1 + (non_empty_string(*s, key::note) ? 1 : 0);
    if (auto r = c->find(key::reraised); r != c->end() && r->is_object()) ++after_crash_lines;
    if (non_empty_string(*c, key::reraised_note)) ++after_crash_lines;
  }
  if (thread_stacks != nullptr && thread_stacks->is_array())
    for (const json &t : *thread_stacks)
      if (t.is_object()) after_crash_lines += 1 + frames_of(t) + 1;
}

void ViewInput::take_cause(const json *cause) {
  if (cause == nullptr || !cause->is_object()) return;
  if (auto c = cause->find(key::causes); c != cause->end() && c->is_array()) {
    std::size_t shown = 0;
    for (const json &x : *c) {
      if (shown == reader::kMaxCauseLines) break;
      ++shown;
      ++after_crash_lines;
      if (x.is_object() && non_empty_string(x, key::window)) ++after_crash_lines;
    }
    if (c->size() > reader::kMaxCauseLines) ++after_crash_lines;
  }
  if (auto t = cause->find(key::cannot_tell); t != cause->end() && t->is_array()) after_crash_lines += t->size();
}

void ViewInput::take_group(const json *group) {
  namespace gk = core_timeline::document::group_key;
  if (group == nullptr || !group->is_object()) return;
  after_crash_lines += 2 + (non_empty_string(*group, gk::note) ? 1 : 0);
}

Result<std::string> view_text(const ViewInput &in, const ViewOptions &o) {
  const std::vector<std::string_view> lines = lines_of(in.text);
  /* The CRASH event of the crashing thread carries the crash's whole
   * stack in place of its own walk; without one, the stack follows the
   * "crash:" line, under a line of its own. */
  std::vector<std::size_t> stack_lines(in.events.size());
  bool stack_placed = false;
  for (std::size_t i = 0; i < in.events.size(); ++i) {
    const ViewEvent &e = in.events[i];
    stack_lines[i] = e.stack_lines;
    if (in.crash_stack_lines != 0 && e.kind == "CRASH" && e.tid && e.tid == in.crash_tid) {
      stack_lines[i] = in.crash_stack_lines;
      stack_placed = true;
    }
  }
  std::size_t event_lines = 0;
  for (const std::size_t n : stack_lines) event_lines += 1 + n;
  const std::size_t crash_footer =
      in.crash ? 1 + in.after_crash_lines + (in.crash_stack_lines != 0 && !stack_placed ? 1 + in.crash_stack_lines : 0)
               : 0;
  const std::size_t footer = crash_footer + in.warnings;
  if (lines.size() < 1 + event_lines + footer)
    return misaligned(fmt::format("{} lines, fewer than a headline, {} event lines and {} crash and warning lines",
                                  lines.size(), event_lines, footer));
  const std::size_t header = lines.size() - event_lines - footer;
  const std::size_t footer_at = header + event_lines;
  if (in.crash && !lines[footer_at].starts_with("crash: "))
    return misaligned(fmt::format("line {} is not the \"crash:\" line", footer_at + 1));
  for (std::size_t w = 0; w < in.warnings; ++w)
    if (!lines[footer_at + crash_footer + w].starts_with("warning: "))
      return misaligned(fmt::format("line {} is not a \"warning:\" line", footer_at + crash_footer + w + 1));
  /* Each event's first line, checked: "AGE tid TID THREAD NAME ARGS". */
  std::vector<std::size_t> at(in.events.size());
  std::string tid, name;  // what event i's line holds
  for (std::size_t i = 0, line = header; i < in.events.size(); line += 1 + stack_lines[i], ++i) {
    at[i] = line;
    const std::string_view l = lines[line];
    tid.assign(" tid ");
    if (in.events[i].tid) fmt::format_to(std::back_inserter(tid), "{} ", *in.events[i].tid);
    else tid += "? ";
    ((name.assign(" ")) += printable(in.events[i].name)) += ' ';
    const auto t = l.find(tid);
    if (t == std::string_view::npos || l.find(name, t) == std::string_view::npos)
      return misaligned(fmt::format("line {} is not event {} (tid {}, {})", line + 1, i,
                                    in.events[i].tid ? std::to_string(*in.events[i].tid) : "?",
                                    printable(in.events[i].name)));
  }

  /* Which events are shown. */
  std::vector<std::size_t> kept;
  std::map<std::string, std::size_t> left_out;  // bookkeeping, by kind
  for (std::size_t i = 0; i < in.events.size(); ++i) {
    const ViewEvent &e = in.events[i];
    if (!o.all && e.bookkeeping) {
      ++left_out[e.kind];
      continue;
    }
    if (o.tid && e.tid != o.tid) continue;
    kept.push_back(i);
  }
  const bool cut_to_last = o.last && kept.size() > *o.last;
  if (cut_to_last) kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(*o.last));

  std::string out;
  out.reserve(in.text.size());
  for (std::size_t l = 0; l < header; ++l) (out += lines[l]) += '\n';
  if (kept.size() != in.events.size()) {
    std::vector<std::string> why;
    if (o.tid) why.push_back(fmt::format("tid {} only", *o.tid));
    if (cut_to_last) why.push_back(fmt::format("the last {}", *o.last));
    if (!left_out.empty()) {
      std::string kinds;
      for (const auto &[kind, n] : left_out) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", n, printable(kind));
      why.push_back(kinds + " left out, the ring's own bookkeeping (--all shows them)");
    }
    out += fmt::format("shown: {} of {} events", kept.size(), in.events.size());
    for (std::size_t w = 0; w < why.size(); ++w) (out += w ? "; " : ": ") += why[w];
    out += '\n';
  }
  const auto emit = [&](std::size_t i) {
    const std::size_t first = at[i];
    if (!o.wall_clock) {
      for (std::size_t l = first; l <= first + stack_lines[i]; ++l) (out += lines[l]) += '\n';
      return;
    }
    const std::string_view l = lines[first];
    const std::string when = in.events[i].time_ns ? reader::format_wall_clock(*in.events[i].time_ns) : "?";
    out += fmt::format("{:>{}}", when, kWallWidth);
    (out += l.substr(l.find(" tid "))) += '\n';
    for (std::size_t s = first + 1; s <= first + stack_lines[i]; ++s)
      ((out += std::string(kWallWidth - kAgeWidth, ' ')) += lines[s]) += '\n';
  };
  if (!o.by_thread) {
    for (std::size_t i : kept) emit(i);
  } else {
    /* As the reader groups them: per thread in "threads" order, each
     * thread's events in the merged order; an event of no listed thread
     * is in no group. */
    const bool everything = kept.size() == in.events.size();
    for (const ViewThread &t : in.threads) {
      std::vector<std::size_t> mine;
      for (std::size_t i : kept)
        if (in.events[i].tid == t.tid) mine.push_back(i);
      if (mine.empty() && !everything) continue;
      out += fmt::format("thread {} ({}): {} events\n", t.tid, t.name.empty() ? std::string("-") : printable(t.name),
                         mine.size());
      for (std::size_t i : mine) emit(i);
    }
  }
  for (std::size_t l = footer_at; l < lines.size(); ++l) (out += lines[l]) += '\n';
  return out;
}

}  // namespace core_timeline::ctl_query
