/* Compiled as C99 with -pedantic-errors: the public header must stay C. */
#include <core_timeline/timeline.h>

int header_check_c(void);
int header_check_c(void) {
  struct tl_options o = {0};
  o.size = sizeof o;
  tl_mark(1, 2);
  return (int)o.size + (int)TL_SOURCE_ALL;
}
