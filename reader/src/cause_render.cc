/* SPDX-License-Identifier: MIT */
/*
 * cause_render.cc - the cause section as text and JSON (cause_render.h).
 */
#include "cause_render.h"

#include <fmt/format.h>

#include "core_timeline/document/keys.h"
#include "core_timeline/reader/export.h"

namespace core_timeline::reader::detail {

namespace key = core_timeline::document::key;
using json = nlohmann::ordered_json;

std::string cause_text(const Analysis &a) {
  if (!a.cause) return {};
  /* The lines of export.h cause_lines(), which ctl-query info and the
   * exports use on a stored document: one wording. */
  ExportCause c;
  for (const auto &x : a.cause->causes) c.causes.push_back({std::string(cause_kind_name(x.kind)), x.text, x.window});
  c.cannot_tell = a.cause->cannot_tell;
  return cause_lines(c);
}

namespace {

json cited_json(const Analysis &a, const CitedEvent &c) {
  const Event &e = a.events[c.event];
  return {{key::role, c.role}, {key::ring, e.ring}, {key::lane, e.lane}, {key::seq, e.seq}, {key::tid, e.tid},
          {key::kind, a.kind_name_of(e)}, {key::age_ns, e.age_ns ? json(*e.age_ns) : json(nullptr)}};
}

json one_json(const Analysis &a, const Cause &c) {
  json pointers = json::array();
  for (const auto &p : c.pointers) pointers.push_back({{key::name, p.name}, {key::value, fmt::format("{:#x}", p.value)}});
  json events = json::array();
  for (const auto &e : c.events) events.push_back(cited_json(a, e));
  json j;
  j[key::kind] = std::string(cause_kind_name(c.kind));
  j[key::says] = c.text;
  j[key::window] = c.window.empty() ? json(nullptr) : json(c.window);
  j[key::pointers] = std::move(pointers);
  j[key::block] = c.block ? json{{key::address, fmt::format("{:#x}", *c.block)},
                                 {key::size, c.block_size ? json(*c.block_size) : json(nullptr)},
                                 {key::offset, c.offset ? json(*c.offset) : json(nullptr)}}
                          : json(nullptr);
  j[key::fd] = c.fd ? json(*c.fd) : json(nullptr);
  j[key::message] = c.message ? json(*c.message) : json(nullptr);
  j[key::events] = std::move(events);
  return j;
}

}  // namespace

json cause_json(const Analysis &a) {
  if (!a.cause) return nullptr;
  json causes = json::array();
  for (const auto &c : a.cause->causes) causes.push_back(one_json(a, c));
  return {{key::causes, std::move(causes)}, {key::cannot_tell, a.cause->cannot_tell}};
}

}  // namespace core_timeline::reader::detail
