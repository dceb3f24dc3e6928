// hangdx/ingest/artifact.h
// Artifact: one input file as a format's parser sees it (its bytes, its
// path, the rank its name suggests), and RankListCache, which the files of
// one job share.
//
//   Artifact in{data, "dumps/nccl_trace_rank_3", /*rank_hint=*/3};
//   DumpBuilder out(in.path, &diags);
//   ParseFlightRecorderPickle(in, &out);
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Shares parsed pg member lists between the dumps of one job: every rank's
// Flight Recorder dump repeats the same "[0, 1, ..., N-1]" text, parsed
// once here, and the same pg_config object around it, whose JSON text is
// lexed once here (a 10,000-rank job's answers are 59 KB of pg_config
// each: lexing it again per rank was 45% of the analysis). Thread-safe.
class RankListCache {
 public:
  // The pg_config object parsed from exactly `text`, nullptr when no dump
  // of this job has stored it (or the cache is full).
  std::shared_ptr<const nlohmann::json> Config(std::string_view text) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = configs_.find(std::string(text));
    return it == configs_.end() ? nullptr : it->second;
  }
  // Keeps `config`, parsed from `text`, for the other dumps; at most 256
  // texts and 256 MiB of them (a folder of distinct configs costs no more).
  void KeepConfig(std::string_view text, std::shared_ptr<const nlohmann::json> config) {
    std::lock_guard<std::mutex> lock(mu_);
    if (configs_.size() >= 256 || config_bytes_ + text.size() > (size_t{256} << 20)) return;
    if (configs_.emplace(std::string(text), std::move(config)).second) config_bytes_ += text.size();
  }

  // Returns the parsed list for `text` (a pg_config "ranks" string), or
  // nullptr if `parse(text, &list)` fails; `parse` runs at most once per
  // distinct text (twice at worst when two threads race on a new text).
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
  std::unordered_map<std::string, std::shared_ptr<const nlohmann::json>> configs_;
  size_t config_bytes_ = 0;
};

// What a parser reads: a view of the file's bytes (for a text format, the
// decoded text: see logs::DecodeText) and where they came from. Cheap to
// copy; `data` must outlive the parse.
struct Artifact {
  std::string_view data;
  std::string path;                     // as the user gave it; diagnostics and records name it
  int64_t rank_hint = -1;               // the rank its file name or --rank says (InferRanks), -1 unknown
  RankListCache* rank_lists = nullptr;  // shared by the files of one job; may be null
};

}  // namespace hangdx::ingest
