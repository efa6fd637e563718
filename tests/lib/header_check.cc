// Compiled as C++17 with -pedantic-errors.
#include <core_timeline/timeline.h>

int header_check_cxx();
int header_check_cxx() {
  tl_options o{};
  o.size = sizeof o;
  tl_mark2(1, 2, 3);
  return static_cast<int>(o.size + TL_SOURCE_ALL);
}
