// hangdx/ingest/formats/flight_recorder/flight_recorder.h
// The PyTorch Flight Recorder dump formats: "fr-pickle" and "fr-json",
// dump versions 2.2 to 2.10 (fields read by presence, so later versions
// that only add keys work). One converter serves both: each entry becomes
// an OpRecord, pg_config and pg_status become the rank's pg configs and
// statuses, stack frames the rank's frame table.
//
// Upstream writers: the pickle from torch/csrc/distributed/c10d/
// FlightRecorder.cpp (dump_entries + TraceUtils.h pickle_str, protocol 2;
// torch.distributed's _dump_nccl_trace); the JSON from
// FlightRecorder::dump_json (nlohmann::json; `_dump_fr_trace_json`,
// `_dump_nccl_trace_json`). The two differ: JSON has no frames, pg_status
// values are strings, time_discovered_* are 0 instead of None. Version
// history: docs/flight-recorder.md section 2.7 (a bare list before 2.2 is
// read as entries; `comm_lib_version` replaced `nccl_version` in 2.10).
//
//   DumpBuilder out(path, &diags);
//   if (ParseFlightRecorderPickle(Artifact{data, path, /*rank_hint=*/3}, &out)) ...
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest {

// 100 when `data` begins with a pickle PROTO opcode of protocol 2 to 5,
// else 0. Reads the first two bytes only.
int SniffFlightRecorderPickle(std::string_view data);

// 90 when `data` starts with '{' or '[' and its first 4 KiB hold a key a
// dump has ("entries", "pg_config", "pg_status", "version", ...), else 0.
int SniffFlightRecorderJson(std::string_view data);

// Reads a Flight Recorder pickle (in place, by the pickle machine of
// pickle.h, which executes nothing) into `out` as rank in.rank_hint's
// records, marked SetFromFlightRecorder. Returns false when nothing usable
// was found (refused or malformed pickle, wrong top-level shape, no entry
// readable), after a kError diagnostic with the byte offset where known
// and MarkUnreadable(rank). A bad entry is skipped with a warning; repeats
// are counted. Read by the fast reader (flat_pickle.h), its entries
// straight from their bytes where they are plain (direct_pickle.h), when it knows the
// file's opcodes and structure, as torch writes them, else by the general
// machine (ParseFlightRecorderPickleWithMachine): the same records and
// diagnostics either way.
bool ParseFlightRecorderPickle(const Artifact& in, RecordSink* out);

// The same, with every entry read as values by the fast reader
// (flat_pickle.h), none straight from its bytes (direct_pickle.h): the
// reader before the direct decoder, for tests and benchmarks that compare
// the two.
bool ParseFlightRecorderPickleWithoutDirect(const Artifact& in, RecordSink* out);

// The same, by the general pickle machine alone (pickle.h): every
// pickle's reader before the fast one, and its fallback.
bool ParseFlightRecorderPickleWithMachine(const Artifact& in, RecordSink* out);

// The same for a JSON dump. Byte offsets of JSON syntax errors are reported.
// Parsed by simdjson (ingest/json_tree.h); a text that simdjson refuses or
// that has a key twice in one object is read by
// ParseFlightRecorderJsonWithNlohmann, which says what is wrong, so both
// give the same records and diagnostics for any text.
bool ParseFlightRecorderJson(const Artifact& in, RecordSink* out);

// The same, parsed by nlohmann::json (ingest/json_util.h's ParseJson) into a
// DOM: a fifth of the speed. Errors give the byte offset and nlohmann's
// reason; a repeated key is warned of and its later value used.
bool ParseFlightRecorderJsonWithNlohmann(const Artifact& in, RecordSink* out);

}  // namespace hangdx::ingest
