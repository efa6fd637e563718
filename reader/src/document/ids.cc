/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/ids.h"

#include <algorithm>
#include <set>

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/number.h"

namespace core_timeline::document {

namespace {

using Json = nlohmann::ordered_json;

/* The values after "NAME:" on the line of `status` that begins with it. */
std::optional<std::vector<std::uint64_t>> line_values(std::string_view status, std::string_view name) {
  std::size_t at = 0;
  while (at < status.size()) {
    const std::size_t nl = status.find('\n', at);
    std::string_view line = status.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? status.size() : nl + 1;
    if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ':') continue;
    line.remove_prefix(name.size() + 1);
    std::vector<std::uint64_t> v;
    while (!line.empty()) {
      const std::size_t start = line.find_first_not_of(" \t");
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      const std::size_t end = std::min(line.find_first_of(" \t"), line.size());
      const auto n = reader::parse_unsigned(line.substr(0, end));
      if (!n || v.size() == 32) return std::vector<std::uint64_t>{};
      v.push_back(*n);
      line.remove_prefix(end);
    }
    return v;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> u64(const Json *v) {
  if (!v) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  if (v->is_number_integer() && v->get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v->get<std::int64_t>());
  return std::nullopt;
}

const Json *member(const Json *o, const char *k) {
  if (!o || !o->is_object()) return nullptr;
  const auto it = o->find(k);
  return it == o->end() ? nullptr : &*it;
}

std::optional<std::uint64_t> field_number(const std::map<std::string, std::string> &fields, const char *name) {
  const auto it = fields.find(name);
  return it == fields.end() ? std::nullopt : reader::parse_unsigned(it->second);
}

}  // namespace

std::vector<std::uint64_t> namespace_pids(std::string_view proc_status) {
  if (auto v = line_values(proc_status, "NStgid")) return *v;
  if (auto v = line_values(proc_status, "NSpid")) return *v;
  return {};
}

std::optional<std::uint64_t> host_tid_of(const ProcessIds &ids, std::uint64_t tid) {
  if (ids.namespaced == false) return tid;
  if (ids.pid && tid == *ids.pid && ids.host_pid) return ids.host_pid;
  return std::nullopt;
}

ProcessIds process_ids(const std::map<std::string, std::string> &fields, const Json *reader) {
  ProcessIds ids;
  ids.host_pid = field_number(fields, "COREDUMP_PID");
  const Json *process = member(reader, key::process);
  ids.pid = u64(member(process, key::pid));
  std::vector<std::uint64_t> ns;
  if (const auto it = fields.find("COREDUMP_PROC_STATUS"); it != fields.end()) ns = namespace_pids(it->second);
  /* NStgid is believed only when it agrees with both pids it can be
   * checked against. */
  const bool ns_ok = !ns.empty() && (!ids.host_pid || ns.front() == *ids.host_pid) && (!ids.pid || ns.back() == *ids.pid);
  if (ns_ok) {
    if (!ids.pid) ids.pid = ns.back();
    ids.namespaced = ns.size() > 1;
    ids.from = "COREDUMP_PROC_STATUS NStgid";
  } else if (ids.host_pid && ids.pid && *ids.host_pid != *ids.pid) {
    ids.namespaced = true;
    ids.from = "COREDUMP_PID differs from the core's pid";
  }
  std::set<std::uint64_t> tids;
  if (const Json *t = member(process, key::threads); t && t->is_array())
    for (const Json &v : *t)
      if (auto n = u64(&v)) tids.insert(*n);
  if (const Json *t = member(reader, key::threads); t && t->is_array())
    for (const Json &th : *t)
      if (auto n = u64(member(&th, key::tid))) tids.insert(*n);
  if (auto n = u64(member(member(reader, key::crash), key::tid))) tids.insert(*n);
  for (std::uint64_t tid : tids) ids.threads.push_back(ThreadIds{tid, host_tid_of(ids, tid)});
  return ids;
}

Json ids_json(const ProcessIds &ids) {
  const auto opt = [](const std::optional<std::uint64_t> &v) { return v ? Json(*v) : Json(nullptr); };
  Json threads = Json::array();
  for (const ThreadIds &t : ids.threads) threads.push_back({{key::tid, t.tid}, {key::host_tid, opt(t.host_tid)}});
  return {
      {key::host_pid, opt(ids.host_pid)},
      {key::pid, opt(ids.pid)},
      {key::namespaced, ids.namespaced ? Json(*ids.namespaced) : Json(nullptr)},
      {key::from, ids.from.empty() ? Json(nullptr) : Json(ids.from)},
      {key::threads, std::move(threads)},
  };
}

std::optional<int> dumpable(const std::map<std::string, std::string> &fields) {
  const auto v = field_number(fields, "COREDUMP_DUMPABLE");
  if (!v || *v > 2) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace core_timeline::document
