/* SPDX-License-Identifier: MIT */
/*
 * keys.h - every member name of the timeline document, spelled once.
 *
 * The timeline document is what core-timeline-read --json prints
 * (docs/timeline-json.md) and what core-timelined stores, that document
 * plus "coredump", "daemon" and "text" (docs/core-timelined.md, "The
 * document"); docs/timeline.schema.json describes both.  Whatever writes or
 * reads a member names it through these constants: the reader's renderer
 * (reader/src/render.cc), the stored document (stored.h), the daemon and
 * ctl-query.  A name is defined once however many objects have it
 * ("truncated" is a member of "core" and of each ring alike).
 *
 * Thread-safety: constants.
 */
#ifndef CORE_TIMELINE_DOCUMENT_KEYS_H
#define CORE_TIMELINE_DOCUMENT_KEYS_H

#include <initializer_list>
#include <string>
#include <string_view>

namespace core_timeline::document::key {

inline constexpr char absence_proves_nothing[] = "absence_proves_nothing";
inline constexpr char address[] = "address";
inline constexpr char age_ns[] = "age_ns";
inline constexpr char agree[] = "agree";
inline constexpr char anon_kb[] = "anon_kb";
inline constexpr char arg[] = "arg";
inline constexpr char arg_names[] = "arg_names";
inline constexpr char args[] = "args";
inline constexpr char as[] = "as";
inline constexpr char begin[] = "begin";
inline constexpr char boot_id[] = "boot_id";
inline constexpr char budget_exhausted[] = "budget_exhausted";
inline constexpr char build_id[] = "build_id";
inline constexpr char build_id_note[] = "build_id_note";
inline constexpr char bytes_present[] = "bytes_present";
inline constexpr char call[] = "call";
inline constexpr char chained[] = "chained";
inline constexpr char handed[] = "handed";
inline constexpr char handed_outcome[] = "handed_outcome";
inline constexpr char handed_note[] = "handed_note";
inline constexpr char clock[] = "clock";
inline constexpr char comm[] = "comm";
inline constexpr char committed[] = "committed";
inline constexpr char compat_flags[] = "compat_flags";
inline constexpr char complete_for_ns[] = "complete_for_ns";
inline constexpr char complete_since_init[] = "complete_since_init";
inline constexpr char compression[] = "compression";
inline constexpr char core[] = "core";
inline constexpr char core_bytes[] = "core_bytes";
inline constexpr char core_end[] = "core_end";
inline constexpr char core_file[] = "core_file";
inline constexpr char coredump[] = "coredump";
inline constexpr char counter_inconsistent[] = "counter_inconsistent";
inline constexpr char counter_reason[] = "counter_reason";
inline constexpr char crash[] = "crash";
inline constexpr char crashed[] = "crashed";
inline constexpr char cut[] = "cut";
inline constexpr char daemon[] = "daemon";
inline constexpr char decoded_usec[] = "decoded_usec";
inline constexpr char decoder[] = "decoder";
inline constexpr char depth[] = "depth";
inline constexpr char detail[] = "detail";
inline constexpr char disagrees_with[] = "disagrees_with";
inline constexpr char document_bytes[] = "document_bytes";
inline constexpr char domain[] = "domain";
inline constexpr char dropped[] = "dropped";
inline constexpr char dumpable[] = "dumpable";
inline constexpr char dumped[] = "dumped";
inline constexpr char duration_ms[] = "duration_ms";
inline constexpr char duration_ns[] = "duration_ns";
inline constexpr char enabled[] = "enabled";
inline constexpr char enabled_sources[] = "enabled_sources";
inline constexpr char end[] = "end";
/* "errno" itself is a macro of <errno.h>. */
inline constexpr char errno_number[] = "errno";
inline constexpr char errno_name[] = "errno_name";
inline constexpr char event[] = "event";
inline constexpr char events[] = "events";
inline constexpr char events_kept[] = "events_kept";
inline constexpr char events_total[] = "events_total";
inline constexpr char exe[] = "exe";
inline constexpr char exit_code[] = "exit_code";
inline constexpr char extra_ends[] = "extra_ends";
inline constexpr char extraction[] = "extraction";
inline constexpr char failure[] = "failure";
inline constexpr char fault_address[] = "fault_address";
inline constexpr char fd[] = "fd";
inline constexpr char fields[] = "fields";
inline constexpr char fields_left_out[] = "fields_left_out";
inline constexpr char file[] = "file";
inline constexpr char file_offset[] = "file_offset";
inline constexpr char first[] = "first";
inline constexpr char first_seq[] = "first_seq";
inline constexpr char flags[] = "flags";
inline constexpr char found_by[] = "found_by";
inline constexpr char frame_address[] = "frame_address";
inline constexpr char frames[] = "frames";
inline constexpr char from[] = "from";
inline constexpr char function[] = "function";
inline constexpr char gid[] = "gid";
inline constexpr char handler[] = "handler";
inline constexpr char handlers_installed[] = "handlers_installed";
inline constexpr char header[] = "header";
inline constexpr char host_pid[] = "host_pid";
inline constexpr char host_tid[] = "host_tid";
inline constexpr char id[] = "id";
inline constexpr char identity[] = "identity";
inline constexpr char in_fd[] = "in_fd";
inline constexpr char in_flight[] = "in_flight";
inline constexpr char index[] = "index";
inline constexpr char init_error[] = "init_error";
inline constexpr char init_error_text[] = "init_error_text";
inline constexpr char inline_bytes[] = "inline_bytes";
inline constexpr char inline_cut[] = "inline_cut";
inline constexpr char inline_text[] = "inline_text";
inline constexpr char input_bytes[] = "input_bytes";
inline constexpr char inside_spans[] = "inside_spans";
inline constexpr char invalid[] = "invalid";
inline constexpr char io[] = "io";
inline constexpr char journal_cursor[] = "journal_cursor";
inline constexpr char kept[] = "kept";
inline constexpr char kept_bytes[] = "kept_bytes";
inline constexpr char kind[] = "kind";
inline constexpr char landlock_abi[] = "landlock_abi";
inline constexpr char lane[] = "lane";
inline constexpr char lane_count[] = "lane_count";
inline constexpr char lanes[] = "lanes";
inline constexpr char lanes_retried[] = "lanes_retried";
inline constexpr char last_seq[] = "last_seq";
inline constexpr char latency_ms[] = "latency_ms";
inline constexpr char limit[] = "limit";
inline constexpr char line[] = "line";
inline constexpr char location[] = "location";
inline constexpr char losses_by_source[] = "losses_by_source";
inline constexpr char machine[] = "machine";
inline constexpr char magic_rejected[] = "magic_rejected";
inline constexpr char mapping[] = "mapping";
inline constexpr char mapping_changed[] = "mapping_changed";
inline constexpr char mapping_size[] = "mapping_size";
inline constexpr char max_rss_kb[] = "max_rss_kb";
inline constexpr char missing[] = "missing";
inline constexpr char mmap_generation[] = "mmap_generation";
inline constexpr char mode[] = "mode";
inline constexpr char module[] = "module";
inline constexpr char monotonic_ns[] = "monotonic_ns";
inline constexpr char name[] = "name";
inline constexpr char name_from[] = "name_from";
inline constexpr char named[] = "named";
inline constexpr char names[] = "names";
inline constexpr char names_capacity[] = "names_capacity";
inline constexpr char names_rejected[] = "names_rejected";
inline constexpr char namespaced[] = "namespaced";
inline constexpr char note[] = "note";
inline constexpr char offset[] = "offset";
inline constexpr char oldest_age_ns[] = "oldest_age_ns";
inline constexpr char open_for_ns[] = "open_for_ns";
inline constexpr char open_spans[] = "open_spans";
inline constexpr char origin[] = "origin";
inline constexpr char overwritten[] = "overwritten";
inline constexpr char owner_name[] = "owner_name";
inline constexpr char owner_tid[] = "owner_tid";
inline constexpr char parent[] = "parent";
inline constexpr char path[] = "path";
inline constexpr char pc[] = "pc";
inline constexpr char peer[] = "peer";
inline constexpr char perms[] = "perms";
inline constexpr char pid[] = "pid";
inline constexpr char pids[] = "pids";
inline constexpr char pointer[] = "pointer";
inline constexpr char ppid[] = "ppid";
inline constexpr char prepared_before_entry[] = "prepared_before_entry";
inline constexpr char process[] = "process";
inline constexpr char process_start_ticks[] = "process_start_ticks";
inline constexpr char protocol[] = "protocol";
inline constexpr char raised_with[] = "raised_with";
inline constexpr char rate_error[] = "rate_error";
inline constexpr char rate_from[] = "rate_from";
inline constexpr char rate_offers[] = "rate_offers";
inline constexpr char reader_status[] = "reader_status";
inline constexpr char realtime_ns[] = "realtime_ns";
inline constexpr char realtime_usec[] = "realtime_usec";
inline constexpr char reason[] = "reason";
inline constexpr char recorder_loaded[] = "recorder_loaded";
inline constexpr char reference[] = "reference";
inline constexpr char reference_event[] = "reference_event";
inline constexpr char refused_file[] = "refused_file";
inline constexpr char region_size[] = "region_size";
inline constexpr char repeated[] = "repeated";
inline constexpr char reraised[] = "reraised";
inline constexpr char reraised_note[] = "reraised_note";
inline constexpr char result[] = "result";
inline constexpr char return_address[] = "return_address";
inline constexpr char ring[] = "ring";
inline constexpr char ring_end[] = "ring_end";
inline constexpr char ring_slot[] = "ring_slot";
inline constexpr char rings[] = "rings";
inline constexpr char run_as[] = "run_as";
inline constexpr char says[] = "says";
inline constexpr char schema_version[] = "schema_version";
inline constexpr char seccomp[] = "seccomp";
inline constexpr char sender_pid[] = "sender_pid";
inline constexpr char seq[] = "seq";
inline constexpr char shared[] = "shared";
inline constexpr char si_code[] = "si_code";
inline constexpr char si_code_name[] = "si_code_name";
inline constexpr char si_code_note[] = "si_code_note";
inline constexpr char si_errno[] = "si_errno";
inline constexpr char si_pid[] = "si_pid";
inline constexpr char sidecar[] = "sidecar";
inline constexpr char signal[] = "signal";
inline constexpr char signal_frame[] = "signal_frame";
inline constexpr char signal_name[] = "signal_name";
inline constexpr char signal_note[] = "signal_note";
inline constexpr char size[] = "size";
inline constexpr char slot[] = "slot";
inline constexpr char slots_absent[] = "slots_absent";
inline constexpr char slots_per_lane[] = "slots_per_lane";
inline constexpr char snapshot[] = "snapshot";
inline constexpr char source[] = "source";
inline constexpr char sp[] = "sp";
inline constexpr char span[] = "span";
inline constexpr char spans[] = "spans";
inline constexpr char sparse[] = "sparse";
inline constexpr char stack[] = "stack";
inline constexpr char start[] = "start";
inline constexpr char start_time[] = "start_time";
inline constexpr char state[] = "state";
inline constexpr char status[] = "status";
inline constexpr char storage[] = "storage";
inline constexpr char stream_error[] = "stream_error";
inline constexpr char stream_truncated[] = "stream_truncated";
inline constexpr char text[] = "text";
inline constexpr char text_bytes[] = "text_bytes";
inline constexpr char text_kept_bytes[] = "text_kept_bytes";
inline constexpr char thread[] = "thread";
inline constexpr char thread_stacks[] = "thread_stacks";
inline constexpr char threads[] = "threads";
inline constexpr char ticks[] = "ticks";
inline constexpr char ticks_per_second[] = "ticks_per_second";
inline constexpr char tid[] = "tid";
inline constexpr char tid_in_core[] = "tid_in_core";
inline constexpr char time[] = "time";
inline constexpr char time_ns[] = "time_ns";
inline constexpr char timed_out[] = "timed_out";
inline constexpr char timestamp[] = "timestamp";
inline constexpr char token[] = "token";
inline constexpr char torn[] = "torn";
inline constexpr char total[] = "total";
inline constexpr char truncated[] = "truncated";
inline constexpr char type[] = "type";
inline constexpr char uid[] = "uid";
inline constexpr char verification[] = "verification";
inline constexpr char verified[] = "verified";
inline constexpr char version[] = "version";
inline constexpr char via_server[] = "via_server";
inline constexpr char wall_clock[] = "wall_clock";
inline constexpr char warnings[] = "warnings";
inline constexpr char windows[] = "windows";
inline constexpr char write_index[] = "write_index";
inline constexpr char writer_version[] = "writer_version";

/* The "cause" section (docs/cause.md). */
inline constexpr char block[] = "block";
inline constexpr char cannot_tell[] = "cannot_tell";
inline constexpr char cause[] = "cause";
inline constexpr char causes[] = "causes";
inline constexpr char message[] = "message";
inline constexpr char pointers[] = "pointers";
inline constexpr char role[] = "role";
inline constexpr char value[] = "value";
inline constexpr char window[] = "window";

/** The dotted path of nested members, dotted({process, pid}) == "process.pid"
 *  (ctl-query's FIELD=VALUE paths, docs/ctl-query.md). */
inline std::string dotted(std::initializer_list<std::string_view> members) {
  std::string s;
  for (std::string_view m : members) {
    if (!s.empty()) s += '.';
    s += m;
  }
  return s;
}

}  // namespace core_timeline::document::key

#endif  // CORE_TIMELINE_DOCUMENT_KEYS_H
