/* SPDX-License-Identifier: MIT */
/* stream_parse.cc - parse_streaming() (stored.h): nlohmann's SAX
 * interface (json_sax) driving a tree builder that hands the elements of
 * the named top-level arrays on as they end instead of keeping them. */
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core_timeline/document/stored.h"

namespace core_timeline::document {

namespace {

using reader::Errc;
using reader::Error;

class Builder final : public nlohmann::json_sax<Json> {
 public:
  Builder(std::span<const std::string_view> streamed, const ElementFn &on_element, bool build)
      : streamed_(streamed), on_element_(on_element), build_(build) {}

  Json root;
  std::optional<Error> error;

  bool null() override { return value(Json(nullptr)); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override { return value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(Json(v)); }
  bool number_float(number_float_t v, const string_t &) override { return value(Json(v)); }
  bool string(string_t &v) override { return value(Json(std::move(v))); }
  bool binary(binary_t &) override { return fail("the document holds a binary value"); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t &k) override {
    /* A stored document never repeats a top-level member; one that does
     * could have the events read against one table and the rest against
     * another. */
    if (stack_.size() == 1 && root.contains(k))
      return fail(fmt::format("the document has \"{}\" twice", k));
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string &, const nlohmann::detail::exception &) override {
    return fail("the document is not valid JSON");
  }

 private:
  bool fail(std::string what) {
    if (!error) error = Error{Errc::kBadData, std::move(what)};
    return false;
  }
  /* Whether the next value is an element of a streamed array. */
  bool in_stream() const { return member_ && stack_.size() == 2; }

  /* Where a new value goes: the root, an element being streamed, the
   * open array's end or the open object's member key_ (a repeated key's
   * last value wins, as nlohmann's own parser has it). */
  Json *place(Json &&v) {
    if (stack_.empty()) return &(root = std::move(v));
    if (in_stream()) return &(element_ = std::move(v));
    Json &top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    return &(top[std::move(key_)] = std::move(v));  // key() sets the next
  }
  bool value(Json &&v) {
    if (skipping_ > 0) return true;
    const bool element = in_stream();
    if (!element || build_) place(std::move(v));
    return !element || deliver();
  }
  bool open(Json &&v) {
    if (stack_.size() + skipping_ >= static_cast<std::size_t>(kMaxDepth))
      return fail(fmt::format("the document nests deeper than {} levels", kMaxDepth));
    if (skipping_ > 0 || (in_stream() && !build_)) {
      ++skipping_;
      return true;
    }
    /* An element array gets room for a compact events row (9 or 10
     * values) at once. */
    if (in_stream() && v.is_array()) v.get_ref<Json::array_t &>().reserve(12);
    if (stack_.size() == 1 && v.is_array() && is_streamed(key_)) {
      member_ = key_;  // in_stream() from the array's first element on
      index_ = 0;
    }
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    if (skipping_ > 0) return --skipping_ > 0 || deliver();
    stack_.pop_back();
    if (member_ && stack_.size() == 1) member_.reset();  // the streamed array ended
    else if (in_stream()) return deliver();            // one of its elements did
    return true;
  }
  bool deliver() {
    if (auto why = on_element_(root, *member_, element_, index_++)) return fail(std::move(*why));
    element_ = nullptr;
    return true;
  }
  bool is_streamed(const std::string &k) const {
    for (std::string_view s : streamed_)
      if (s == k) return true;
    return false;
  }

  std::span<const std::string_view> streamed_;
  const ElementFn &on_element_;
  bool build_;                       // else streamed elements are only lexed
  std::size_t skipping_ = 0;         // the open containers of an element not built
  std::vector<Json *> stack_;        // the open containers, outermost first
  std::string key_;                  // the key of the open object's next value
  std::optional<std::string> member_;  // the streamed array being read
  std::size_t index_ = 0;            // the next element's index in it
  Json element_;                     // the element being built
};

}  // namespace

reader::Result<Json> parse_streaming(std::string_view bytes, std::span<const std::string_view> streamed,
                                     const ElementFn &on_element, bool build) noexcept {
  try {
    Builder b(streamed, on_element, build);
    const bool ok = Json::sax_parse(bytes.begin(), bytes.end(), &b);
    if (!ok || b.error) return b.error ? *b.error : Error{Errc::kBadData, "the document is not valid JSON"};
    return std::move(b.root);
  } catch (const std::bad_alloc &) {
    return Error{Errc::kNoMemory, "out of memory while parsing the document"};
  } catch (const std::exception &e) {
    return Error{Errc::kBadData, std::string("the document does not parse: ") + e.what()};
  }
}

}  // namespace core_timeline::document
