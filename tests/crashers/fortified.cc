// SPDX-License-Identifier: MIT
// The half of preload_victim built with -O2 -D_FORTIFY_SOURCE=2, as Debian
// builds its packages: glibc's headers turn these calls into __read_chk and
// __open_2, which libtimeline-io.so must record too.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload_victim.h"

namespace {
/* Not constants, so the fortified inlines cannot check them at compile time
 * and call the checking functions instead. */
volatile int g_flags = O_RDONLY | O_CLOEXEC;       /* open() becomes __open_2 */
volatile size_t g_count = kFortifiedReadBytes;     /* read() becomes __read_chk */
}

extern "C" ssize_t read_fortified(int fd) {
  char buf[kFortifiedReadBytes];
  return read(fd, buf, g_count);
}

extern "C" int open_fortified(const char *path) { return open(path, g_flags); }

extern "C" ssize_t recv_fortified(int fd) {
  char buf[kFortifiedReadBytes];
  return recv(fd, buf, g_count, 0);
}

extern "C" ssize_t recvfrom_fortified(int fd) {
  char buf[kFortifiedReadBytes];
  return recvfrom(fd, buf, g_count, 0, nullptr, nullptr);
}

extern "C" ssize_t pread_fortified(int fd, long offset) {
  char buf[kFortifiedReadBytes];
  return pread(fd, buf, g_count, offset);
}

extern "C" ssize_t pread64_fortified(int fd, long offset) {
  char buf[kFortifiedReadBytes];
  return pread64(fd, buf, g_count, offset);
}
