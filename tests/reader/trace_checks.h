// SPDX-License-Identifier: MIT
// trace_checks.h - what the tests hold an export to (tests only):
//
//  - tef_errors(): the Trace Event Format rules a viewer relies on
//    (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
//    every event has ph, ts, pid, tid and name; "B" matched by its "E" on
//    the same pid/tid, in order; "X" with a dur >= 0; "i" with a scope;
//    a thread_name metadata event for every pid/tid an event uses;
//  - babeltrace2_events(): babeltrace2's text output of a CTF trace,
//    parsed back into events (time, name, tid, thread name, fields).
#ifndef CORE_TIMELINE_TESTS_READER_TRACE_CHECKS_H
#define CORE_TIMELINE_TESTS_READER_TRACE_CHECKS_H

#include <unistd.h>

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ct::test {

/** The rules above, one line per event that breaks one; "" when none. */
inline std::string tef_errors(const nlohmann::json &doc) {
  std::ostringstream bad;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return "no traceEvents array\n";
  if (doc.value("displayTimeUnit", "") != "ns") bad << "displayTimeUnit is not \"ns\"\n";
  std::set<std::pair<std::uint64_t, std::uint64_t>> used, named;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::string>> open;
  std::size_t i = 0;
  for (const auto &e : doc["traceEvents"]) {
    const std::string at = "event " + std::to_string(i++) + " " + e.dump() + ": ";
    for (const char *k : {"ph", "name"})
      if (!e.contains(k) || !e[k].is_string()) bad << at << "no string " << k << "\n";
    for (const char *k : {"ts", "pid", "tid"})
      if (!e.contains(k) || !e[k].is_number()) bad << at << "no number " << k << "\n";
    if (!e.contains("ph") || !e["ph"].is_string() || !e.contains("pid") || !e.contains("tid")) continue;
    const std::string ph = e["ph"];
    const auto track = std::pair{e["pid"].get<std::uint64_t>(), e["tid"].get<std::uint64_t>()};
    if (ph == "M") {
      if (!e.contains("args") || !e["args"].is_object()) bad << at << "metadata without args\n";
      if (e.value("name", "") == "thread_name") named.insert(track);
      continue;
    }
    used.insert(track);
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) bad << at << "X without dur >= 0\n";
    } else if (ph == "B") {
      open[track].push_back(e.value("name", ""));
    } else if (ph == "E") {
      auto &stack = open[track];
      if (stack.empty()) bad << at << "E without its B on the same pid/tid\n";
      else stack.pop_back();
    } else if (ph == "i" || ph == "I") {
      const std::string s = e.value("s", "t");
      if (s != "t" && s != "p" && s != "g") bad << at << "instant scope is not t, p or g\n";
    } else {
      bad << at << "phase " << ph << " is not one this exporter writes\n";
    }
  }
  for (const auto &[track, stack] : open)
    for (const auto &name : stack) bad << "B " << name << " on " << track.first << "/" << track.second << " never ended\n";
  for (const auto &track : used)
    if (!named.count(track)) bad << "no thread_name metadata for pid " << track.first << " tid " << track.second << "\n";
  return bad.str();
}

/** One event as babeltrace2 prints it (sink.text.pretty, --clock-seconds,
 *  --no-delta). */
struct BtEvent {
  std::string time;                 /**< "1796159938.848685810" */
  std::int64_t ns = 0;              /**< that, in ns */
  std::string name;
  std::uint64_t tid = 0;
  std::string thread_name;
  std::vector<std::pair<std::string, std::string>> fields;  /**< values as
                                                                 printed */
  std::string line;
};

/* "k = v, k = "s, with, commas", k = [ [0] = 1, [1] = "x" ], ..." into
 * pairs (strings keep their quotes, arrays their brackets). */
inline std::vector<std::pair<std::string, std::string>> bt_fields(const std::string &s) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t p = 0;
  while (p < s.size()) {
    while (p < s.size() && (s[p] == ' ' || s[p] == ',')) ++p;
    const std::size_t eq = s.find(" = ", p);
    if (eq == std::string::npos) break;
    std::string k = s.substr(p, eq - p);
    p = eq + 3;
    std::string v;
    if (p < s.size() && s[p] == '[') {
      /* An array, to its matching bracket, skipping quoted strings. */
      int depth = 0;
      bool quoted = false;
      for (; p < s.size(); ++p) {
        const char c = s[p];
        v += c;
        if (quoted) {
          if (c == '\\' && p + 1 < s.size()) v += s[++p];
          else if (c == '"') quoted = false;
        } else if (c == '"') {
          quoted = true;
        } else if (c == '[') {
          ++depth;
        } else if (c == ']' && --depth == 0) {
          ++p;
          break;
        }
      }
    } else if (p < s.size() && s[p] == '"') {
      v += s[p++];
      while (p < s.size() && s[p] != '"') {
        if (s[p] == '\\' && p + 1 < s.size()) v += s[p++];
        v += s[p++];
      }
      if (p < s.size()) v += s[p++];
    } else {
      while (p < s.size() && s[p] != ',') v += s[p++];
      while (!v.empty() && v.back() == ' ') v.pop_back();
    }
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}

/** Parses babeltrace2's output lines "[SECONDS.NS] TRACE NAME: { tid = N,
 *  thread_name = "..." }, { FIELDS }"; a line that does not parse is put
 *  into *bad. */
inline std::vector<BtEvent> babeltrace2_events(const std::string &out, std::string *bad) {
  std::vector<BtEvent> events;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    BtEvent e;
    e.line = line;
    const std::size_t close = line.find("] ");
    const std::size_t ctx = line.find(": { tid = ");
    const std::size_t tn = line.find(", thread_name = \"", ctx == std::string::npos ? 0 : ctx);
    const std::size_t end_ctx = line.find("\" }, { ", tn == std::string::npos ? 0 : tn);
    if (line[0] != '[' || close == std::string::npos || ctx == std::string::npos || tn == std::string::npos ||
        end_ctx == std::string::npos || line.size() < 2 || line.substr(line.size() - 2) != " }") {
      *bad += "unparsed: " + line + "\n";
      continue;
    }
    e.time = line.substr(1, close - 1);
    const std::size_t dot = e.time.find('.');
    e.ns = std::stoll(e.time.substr(0, dot)) * 1000000000LL + std::stoll(e.time.substr(dot + 1));
    const std::size_t name_end = ctx;
    const std::size_t name_start = line.rfind(' ', name_end - 1) + 1;
    e.name = line.substr(name_start, name_end - name_start);
    e.tid = std::stoull(line.substr(ctx + 10, tn - ctx - 10));
    e.thread_name = line.substr(tn + 17, end_ctx - tn - 17);
    e.fields = bt_fields(line.substr(end_ctx + 7, line.size() - 2 - end_ctx - 7));
    events.push_back(std::move(e));
  }
  return events;
}

/** The path of babeltrace2, or "" when it is not installed. */
inline std::string babeltrace2_path() {
  for (const char *p : {"/usr/bin/babeltrace2", "/usr/local/bin/babeltrace2"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_READER_TRACE_CHECKS_H
