/* SPDX-License-Identifier: MIT */
/* parts.cc - see parts.h. */
#include "parts.h"

#include <spdlog/spdlog.h>

namespace core_timeline::daemon {

Result<Parts> make_parts(const Options &o) {
  Parts p;
  auto store = FileStore::open(o.state_dir, o.output_dir);
  if (!store) return std::move(store).error();
  if (!store->warning().empty()) spdlog::warn("{}", store->warning());
  p.store = std::make_unique<FileStore>(std::move(*store));
  auto j = o.journal_directory.empty() ? Journal::open() : Journal::open_directory(o.journal_directory);
  if (!j) return std::move(j).error();
  p.entries = std::make_unique<Journal>(std::move(*j));
  p.extractor = std::make_unique<StreamExtractor>(o.keep_whole_below, o.max_kept);
  p.decoder = std::make_unique<ChildDecoder>(DecodeLimits{o.decode_timeout_ms, o.memory_limit});
  return p;
}

}  // namespace core_timeline::daemon
