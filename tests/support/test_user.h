// SPDX-License-Identifier: MIT
//
// test_user.h - a throw-away regular user for the tests that need one
// (a crash of another uid, a decoder dropping to it, its user journal).
//
// TestUser(first_uid, prefix) makes the first free uid of
// [first_uid, first_uid + 100) with a group of the same id, named
// PREFIX-UID, with groupadd/useradd (no home, no user-private group of
// useradd's own), and removes both (userdel, groupdel) when destroyed, on
// every exit path.  `made` is false when no uid could be made.  Each test
// program gives its own range, so programs that run at once never race
// for a uid.  Needs root.  Not thread-safe.
#ifndef CORE_TIMELINE_TESTS_SUPPORT_TEST_USER_H
#define CORE_TIMELINE_TESTS_SUPPORT_TEST_USER_H

#include <grp.h>
#include <pwd.h>
#include <sys/types.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "process.h"

namespace ct::test {

struct TestUser {
  uid_t uid = 0;
  std::string name;
  bool made = false;

  TestUser(uid_t first_uid, const std::string &prefix) {
    for (uid_t u = first_uid; u < first_uid + 100 && !made; ++u) {
      const std::string n = prefix + "-" + std::to_string(u);
      if (getpwuid(u) || getgrgid(u) || getpwnam(n.c_str())) continue;
      if (!run({"/usr/sbin/groupadd", "-g", std::to_string(u), n}).ok()) continue;
      if (!run({"/usr/sbin/useradd", "-M", "-N", "-u", std::to_string(u), "-g", std::to_string(u), n}).ok()) {
        run({"/usr/sbin/groupdel", n});
        continue;
      }
      uid = u;
      name = n;
      made = true;
    }
  }
  ~TestUser() {
    if (!made) return;
    run({"/usr/sbin/userdel", name});
    run({"/usr/sbin/groupdel", name});
  }
  TestUser(const TestUser &) = delete;
  TestUser &operator=(const TestUser &) = delete;

  /** For ProcessOptions::in_child: become this user (uid and gid), with no
   *  supplementary groups; child_failed() if that fails. */
  std::function<void()> become() const {
    const uid_t u = uid;
    return [u] {
      if (setgroups(0, nullptr) != 0 || setresgid(u, u, u) != 0 || setresuid(u, u, u) != 0)
        child_failed("cannot become the test user");
    };
  }
};

}  // namespace ct::test

#endif  // CORE_TIMELINE_TESTS_SUPPORT_TEST_USER_H
