// Compiled as C++17 with -pedantic-errors: timeline.h, and timeline.hpp over it.
#include <core_timeline/timeline.h>
#include <core_timeline/timeline.hpp>

#include <utility>

TL_NAME(0x1001, "REQ_PARSE request_id bytes");

int header_check_cxx();
int header_check_cxx() {
  tl_options o{};
  o.size = sizeof o;
  tl_mark2(1, 2, 3);
  core_timeline::ScopedThreadName name("checker");
  core_timeline::Span outer(0x1001, 7);
  core_timeline::Span moved = std::move(outer);
  moved.end();
  const uint64_t token = core_timeline::Span(0x1002).release();
  tl_span_end(token);
  return static_cast<int>(o.size + TL_SOURCE_ALL + moved.token());
}
