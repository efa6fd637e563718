/* SPDX-License-Identifier: MIT */
/* LTTng-UST tracepoint provider for bench_overhead: the same event as
 * tl_mark2 (an id and two integers), recorded by a snapshot session. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER core_timeline_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(CORE_TIMELINE_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define CORE_TIMELINE_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    core_timeline_bench, mark,
    LTTNG_UST_TP_ARGS(uint32_t, id, uint64_t, arg0, uint64_t, arg1),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint32_t, id, id)
                            lttng_ust_field_integer(uint64_t, arg0, arg0)
                                lttng_ust_field_integer(uint64_t, arg1, arg1)))

#endif

#include <lttng/tracepoint-event.h>
