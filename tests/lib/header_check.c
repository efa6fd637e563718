/* Compiled as C99 with -pedantic-errors: the public header must stay C. */
#include <core_timeline/timeline.h>

/* TL_NAME at file scope, with its semicolon, is valid ISO C. */
TL_NAME(0x1001, "REQ_PARSE request_id bytes");
TL_NAME(0x1002, "CONFIG_RELOAD");

int header_check_c(void);
int header_check_c(void) {
  struct tl_options o = {0};
  uint64_t token;
  o.size = sizeof o;
  o.names = 16;
  tl_mark(1, 2);
  token = tl_span_begin(3, 4);
  tl_span_end(token);
  return (int)o.size + (int)TL_SOURCE_ALL + tl_name(5, "FIVE");
}
