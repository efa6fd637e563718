/* SPDX-License-Identifier: MIT */
/* Event ids of retention_crasher, shared with the test that reads its cores. */
#ifndef CORE_TIMELINE_TESTS_RETENTION_IDS_H
#define CORE_TIMELINE_TESTS_RETENTION_IDS_H
#define RETENTION_MARK 0x7101u   /* marks N: one per mark, arg = its index */
#define RETENTION_ONCE 0x7102u   /* mark-then-allocs: the one mark, arg 42 */
#define RETENTION_THREAD 0x7103u /* threads N: one per thread, arg = its index */
#endif
