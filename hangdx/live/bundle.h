// hangdx/live/bundle.h
// The evidence bundle `hangdx watch` writes when a job stalls: a folder
// that `hangdx analyze BUNDLE` reads back to the same finding, because the
// watch's own analysis is exactly that call on that folder.
//
//   BUNDLE/fr/rank_<N>.json       the Flight Recorder JSON rank N answered (as sent)
//   BUNDLE/stacks/rank_<N>.txt    its dump_traceback answer (faulthandler text)
//   BUNDLE/wait_state.json        pushed wait states, when ranks pushed any
//   BUNDLE/.watch/stall.json      what triggered: pgs, since, silent and unanswered ranks
//   BUNDLE/.watch/probes.jsonl    the probe history up to the stall (one JSON line per round)
//   BUNDLE/.watch/report.txt, report.json   the report (written after the analysis)
//
// The loader skips names that begin with "." (hangdx/ingest/load.cc), so
// .watch/ is there for people and tools, not read as input. A rank that
// did not answer has no file in fr/: the analysis sees a rank without a
// dump (dead, or wedged), which is what the silence means.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/model/job.h"

namespace hangdx::live {

struct Evidence {
  std::map<model::Rank, std::string> fr;          // rank -> Flight Recorder JSON
  std::map<model::Rank, std::string> stacks;      // rank -> traceback text
  std::map<model::Rank, std::string> unanswered;  // rank -> why ("no answer within 5 s")
  std::string wait_snapshot;                      // a wait snapshot document, "" for none
  std::vector<std::string> history;               // probe-history lines
  std::string stall_json;                         // the trigger, one JSON document
};

// Writes `evidence` into a new folder `root`/`name` (made unique with a
// suffix if it exists). Returns the folder. Errors (kIo): a file cannot be
// written.
StatusOr<std::string> WriteBundle(const std::string& root, const std::string& name, const Evidence& evidence);

// Writes `evidence` into the existing bundle `dir`: its files are added,
// replacing those of the same names (the second step of a stall, which
// completes the first look's bundle). Errors (kIo).
Status WriteInto(const std::string& dir, const Evidence& evidence);

// Writes `text` into `path` (replacing it). Errors (kIo).
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace hangdx::live
