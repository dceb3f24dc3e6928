// hangdx/ingest/formats/flight_recorder/flight_recorder.h
// Reader for PyTorch Flight Recorder dumps, pickle and JSON, versions 2.2 to
// 2.10 (fields read by presence, so later versions that only add keys work).
//
// Upstream writers: pickle from torch/csrc/distributed/c10d/FlightRecorder
// (dump_entries + TraceUtils.h::pickle_str, protocol 2); JSON from
// FlightRecorder::dump_json (nlohmann::json; `_dump_fr_trace_json`,
// `_dump_nccl_trace_json`). The two differ: JSON has no frames, pg_status
// values are strings, time_discovered_* are 0 instead of None.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Shares parsed pg member lists between the dumps of one job: every rank's
// dump repeats the same "[0, 1, ..., N-1]" text, parsed once here. Thread-safe.
class RankListCache {
 public:
  // The parsed list for `text` (a pg_config "ranks" string), or nullptr if
  // `parse` fails; `parse` runs at most once per distinct text.
  template <typename Parse>
  std::shared_ptr<const std::vector<model::Rank>> Get(std::string_view text, Parse parse) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = lists_.find(std::string(text));
      if (it != lists_.end()) return it->second;
    }
    std::vector<model::Rank> v;
    if (!parse(text, &v)) return nullptr;
    auto p = std::make_shared<const std::vector<model::Rank>>(std::move(v));
    std::lock_guard<std::mutex> lock(mu_);
    return lists_.emplace(std::string(text), std::move(p)).first->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<model::Rank>>> lists_;
};

// Parses a Flight Recorder pickle held in `data` (read in place, not kept),
// read from `file`, into
// *dump (whose `rank` the caller sets). Returns false when nothing usable was
// found (refused or malformed pickle, wrong top-level shape); every problem,
// fatal or not, is appended to *diags with the file, and for pickle errors
// the byte offset. Partial problems (one bad entry) skip that entry only.
bool ParseFlightRecorderPickle(std::string_view data, const std::string& file, model::RankDump* dump,
                               std::vector<model::Diagnostic>* diags, RankListCache* ranks_cache = nullptr);

// Same for a JSON dump. Byte offsets of JSON syntax errors are reported.
bool ParseFlightRecorderJson(std::string_view data, const std::string& file, model::RankDump* dump,
                             std::vector<model::Diagnostic>* diags, RankListCache* ranks_cache = nullptr);

// Derives OpRecord::completed for every op of *dump from `state`, from
// pg_status last_completed, and for gloo (which never updates `state`) from
// `retired`.
void DeriveCompletion(model::RankDump* dump);

}  // namespace hangdx::ingest
