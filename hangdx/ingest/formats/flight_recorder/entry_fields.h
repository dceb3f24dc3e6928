// hangdx/ingest/formats/flight_recorder/entry_fields.h
// The keys of a Flight Recorder entry that hangdx reads (docs/
// flight-recorder.md section 2.4), shared by the converter
// (flight_recorder.cc) and the direct pickle decoder (direct_pickle.h),
// which must agree on them to give the same records.
#pragma once

#include <string_view>

#include "hangdx/model/job.h"

namespace hangdx::ingest::fr {

// The entry keys the converter reads, gathered in one pass over an entry's
// items instead of one search per key. The integer fields are contiguous
// (kRecordId to kTimeout): the direct decoder reads them alike.
enum Field {
  kProfilingName,
  kRecordId,
  kPgId,
  kCollectiveSeq,
  kP2pSeq,
  kOpId,
  kTimeCreated,
  kTimeStarted,
  kTimeCompleted,
  kTimeout,
  kProcessGroup,
  kInputSizes,
  kOutputSizes,
  kInputDtypes,
  kOutputDtypes,
  kState,
  kRetired,
  kIsP2p,
  kDuration,
  kThreadName,
  kThreadId,
  kFrames,
  kFieldCount
};
static_assert(kFieldCount <= 32, "a field is a bit of a 32-bit mask (DirectEntry)");

// The keys, in the order of Field.
inline constexpr std::string_view kFieldNames[kFieldCount] = {"profiling_name",
                                                              "record_id",
                                                              "pg_id",
                                                              "collective_seq_id",
                                                              "p2p_seq_id",
                                                              "op_id",
                                                              "time_created_ns",
                                                              "time_discovered_started_ns",
                                                              "time_discovered_completed_ns",
                                                              "timeout_ms",
                                                              "process_group",
                                                              "input_sizes",
                                                              "output_sizes",
                                                              "input_dtypes",
                                                              "output_dtypes",
                                                              "state",
                                                              "retired",
                                                              "is_p2p",
                                                              "duration_ms",
                                                              "thread_name",
                                                              "thread_id",
                                                              "frames"};

// The Field named `key`, or -1 for a key hangdx does not read.
int FieldOf(std::string_view key);

// An entry's "state" value; kUnknown for any other text (the converter
// warns of it).
inline model::OpState ParseState(std::string_view s) {
  if (s == "completed") return model::OpState::kCompleted;
  if (s == "started") return model::OpState::kStarted;
  if (s == "scheduled") return model::OpState::kScheduled;
  return model::OpState::kUnknown;
}

}  // namespace hangdx::ingest::fr
