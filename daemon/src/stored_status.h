/* SPDX-License-Identifier: MIT */
/*
 * stored_status.h - the status of a stored timeline (docs/core-timelined.md,
 * "Statuses") is the document module's (core_timeline/document/status.h):
 * the reader's statuses and the daemon's own, for cores it could not hand
 * to the reader or whose decoding failed.  The daemon never stores "usage".
 *
 * Thread-safety: pure functions.
 */
#ifndef CORE_TIMELINE_DAEMON_STORED_STATUS_H
#define CORE_TIMELINE_DAEMON_STORED_STATUS_H

#include "core_timeline/document/status.h"

namespace core_timeline::daemon {

using Status = core_timeline::document::Status;
using core_timeline::document::parse_status;
using core_timeline::document::status_name;

}  // namespace core_timeline::daemon

#endif  // CORE_TIMELINE_DAEMON_STORED_STATUS_H
