// SPDX-License-Identifier: MIT
//
// leaves.h - every scalar of a JSON document with its dotted path, as
// ctl-query's FIELD=VALUE takes them (daemon/ctl-query/match.h): object
// members by name, array elements by decimal index, a value as its string
// or, for other scalars, its JSON text.  Members whose names hold a '.'
// cannot be named by a dotted path and are left out.
#ifndef CORE_TIMELINE_TESTS_CTL_QUERY_LEAVES_H
#define CORE_TIMELINE_TESTS_CTL_QUERY_LEAVES_H

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ct::test::ctlq {

inline void collect_leaves(const nlohmann::ordered_json &v, const std::string &path,
                           std::vector<std::pair<std::string, std::string>> &out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it.key().find('.') == std::string::npos)
        collect_leaves(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) collect_leaves(v[i], path + "." + std::to_string(i), out);
  } else {
    out.emplace_back(path, v.is_string() ? v.get<std::string>() : v.dump());
  }
}

/** The "PATH=VALUE" matches of every scalar of `doc`. */
inline std::vector<std::string> leaf_matches(const nlohmann::ordered_json &doc) {
  std::vector<std::pair<std::string, std::string>> leaves;
  collect_leaves(doc, "", leaves);
  std::vector<std::string> m;
  for (const auto &[p, v] : leaves) m.push_back(p + "=" + v);
  return m;
}

}  // namespace ct::test::ctlq

#endif
