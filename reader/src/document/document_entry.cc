/* SPDX-License-Identifier: MIT */
#include "core_timeline/document/document_entry.h"

#include <algorithm>
#include <utility>

namespace core_timeline::document::journal {

bool is_document_id(std::string_view id) noexcept {
  return id.size() == 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

EntryPair split_document(Fields fields, std::string_view id) {
  EntryPair out;
  const auto doc = std::find_if(fields.begin(), fields.end(), [](const auto &kv) { return kv.first == kDocument; });
  if (doc == fields.end() || !is_document_id(id)) {
    out.timeline = std::move(fields);
    return out;
  }
  Fields d;
  d.emplace_back("MESSAGE_ID", std::string(kDocumentMessageId));
  d.emplace_back(std::string(kDocumentId), std::string(id));
  for (const std::string_view k : kDocumentEntryCopies)
    if (const auto it = std::find_if(fields.begin(), fields.end(), [k](const auto &kv) { return kv.first == k; });
        it != fields.end())
      d.emplace_back(it->first, it->second);
  d.emplace_back(std::move(*doc));
  fields.erase(doc);
  fields.emplace_back(std::string(kDocumentId), std::string(id));
  out.timeline = std::move(fields);
  out.document = std::move(d);
  return out;
}

}  // namespace core_timeline::document::journal
