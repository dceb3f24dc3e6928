// hangdx/ingest/formats/device_json/device_json.h
// The "device-json" format, hangdx's native device-level format
// (docs/snapshot-format.md): one JSON format with two top-level markers,
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
//   model::DiagnosticSink diags;
//   if (ReadDeviceJob(text, "snap.json", &job, &diags)) analyze::AnalyzeDevice(job);
//
// Bad parts (an unknown op kind, a wait without an event, a peer that is
// not a rank, duplicate ids, an id that names no op, numbers out of range,
// nesting deeper than 64) become diagnostics that name the file and the
// JSON path ("ranks[1].threads[0].ops[4]: ..."); the reader skips them and
// goes on. Never throws. Upstream: written by hand, by hangdx's own tools
// and by device watchdogs following docs/snapshot-format.md (version 1).
#pragma once

#include <string>
#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/device.h"
#include "hangdx/model/diagnostic_sink.h"

namespace hangdx::ingest {

// 100 when `data` begins (after white space) with a JSON object that has a
// top-level "hangdx_schedule" or "hangdx_snapshot" key within its first
// 64 KiB, else 0. Cheap: no full parse.
int SniffDeviceJson(std::string_view data);

// Reads a schedule or snapshot into one model::DeviceJob added to `out`
// (origin = in.path). Ops get their ids' order: rank by rank (as listed),
// thread by thread, in program order; DevOp::source is the op's JSON path.
// Numbers seqs (DeviceJob::Number). Returns false (with a kError
// diagnostic, nothing added) when nothing usable was found: not JSON,
// nested too deep, no marker, no usable rank.
bool ParseDeviceJson(const Artifact& in, RecordSink* out);

// The same for a caller that wants the job itself (hangdx simulate): reads
// `data`, named `file`, into *out (replaced; empty but for origin when
// unusable), diagnostics into *diags. Returns ParseDeviceJson's verdict.
bool ReadDeviceJob(std::string_view data, const std::string& file, model::DeviceJob* out, model::DiagnosticSink* diags);

}  // namespace hangdx::ingest
