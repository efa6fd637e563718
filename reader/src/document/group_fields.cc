/* SPDX-License-Identifier: MIT */
/*
 * group_fields.cc - a document's group signature into the timeline
 * entry's fields (group_keys.h).
 */
#include "core_timeline/document/group_keys.h"

namespace core_timeline::document::journal {

void group_entry_fields(const nlohmann::ordered_json &doc, std::vector<std::pair<std::string, std::string>> *out) {
  if (!doc.is_object()) return;
  const auto g = doc.find(group_key::group);
  if (g == doc.end() || !g->is_object()) return;
  const auto str = [&](const char *k) -> const std::string * {
    const auto it = g->find(k);
    return it != g->end() && it->is_string() ? it->get_ptr<const std::string *>() : nullptr;
  };
  const std::string *id = str(group_key::id);
  if (!id) return;
  out->emplace_back(std::string(kGroup), *id);
  const std::pair<std::string_view, const char *> more[] = {{kGroupStack, group_key::stack_id},
                                                            {kGroupHistory, group_key::history_id},
                                                            {kGroupWords, group_key::words},
                                                            {kGroupStackWords, group_key::stack_words},
                                                            {kGroupBasis, group_key::basis}};
  for (const auto &[field, k] : more)
    if (const std::string *v = str(k)) out->emplace_back(std::string(field), *v);
}

}  // namespace core_timeline::document::journal
