/* SPDX-License-Identifier: MIT */
/* The LTTng-UST probe for lttng_tp.h, built into bench_overhead. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "lttng_tp.h"
