/* SPDX-License-Identifier: MIT */
/* stack_fixture_lib.c - the shared library stack_fixture's stacks pass
 * through (mode shlib): lib_call -> lib_inner -> the callback. */
#define NOIPA __attribute__((noipa))
NOIPA static int lib_inner(int (*cb)(int), int x) { return cb(x + 1) + 1; }
NOIPA int stack_fixture_lib_call(int (*cb)(int), int x) { return lib_inner(cb, x * 2) + 1; }
