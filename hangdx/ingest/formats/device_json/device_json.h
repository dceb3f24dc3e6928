// hangdx/ingest/formats/device_json/device_json.h
// Reader for the native device-level format (docs/snapshot-format.md): one
// JSON format with two top-level markers,
//
//   {"hangdx_schedule": 1, ...}   programs only, nothing issued (the input
//                                 of `hangdx simulate`);
//   {"hangdx_snapshot": 1, ...}   the same plus a state part-way through
//                                 (issued counts, queues, streams, pool
//                                 holders, recorded events).
//
// into a model::DeviceJob (hangdx/model/device.h):
//
//   model::DeviceJob job;
//   std::vector<model::Diagnostic> diags;
//   if (ParseDeviceJson(text, "snap.json", &job, &diags)) analyze::AnalyzeDevice(job);
//
// Bad parts (an unknown op kind, a wait without an event, a peer that is
// not a rank, duplicate ids, an id that names no op, numbers out of range,
// nesting deeper than 64) become diagnostics that name the file and the
// JSON path ("ranks[1].threads[0].ops[4]: ..."); the reader skips them and
// goes on. Never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hangdx/model/device.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// True when `data` begins (after white space) with a JSON object that has a
// top-level "hangdx_schedule" or "hangdx_snapshot" key within its first
// 64 KiB. Cheap: no full parse.
bool LooksLikeDeviceJson(std::string_view data);

// Parses a schedule or snapshot read from `file` into `*out` (replacing its
// content; out->origin = file). Ops get their ids' order: rank by rank (as
// listed), thread by thread, in program order; DevOp::source is the op's
// JSON path. Numbers seqs (DeviceJob::Number). Appends data problems to
// `diags`; returns false when nothing usable was found (not JSON, no marker,
// no rank).
bool ParseDeviceJson(std::string_view data, const std::string& file, model::DeviceJob* out,
                     std::vector<model::Diagnostic>* diags);

}  // namespace hangdx::ingest
