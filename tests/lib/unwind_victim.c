// SPDX-License-Identifier: MIT
// unwind_victim - a shared object unwind_unit_test loads, has the walker
// index, and unloads again: its code addresses then lie in no mapping,
// while the walker's table still lists the object.
int ct_victim(int x);
int ct_victim(int x) { return x * 3 + 1; }
