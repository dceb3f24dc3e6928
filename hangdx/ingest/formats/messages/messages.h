// hangdx/ingest/formats/messages/messages.h
// The catalogue's text format, `messages`: every line of a text file goes
// through the message catalogue's matcher (hangdx/ingest/messages: one row
// per message wording of PyTorch c10d 1.8-2.13, NCCL/RCCL, HCCL/torch_npu,
// Horovod, DeepSpeed, Megatron, vLLM, SGLang, Ray, torchtitan, each quoted
// from the producer's source; docs/field-messages.md lists them), and each
// recognized message becomes evidence: the handler of its event kind
// (handlers.h) records it for the rank it belongs to (attribution.h).
//
// One reader per message: a row with `reader <format>` (catalogue.h) is
// turned into records by that format's own parser when that format reads
// the file (its sniff accepts it); this format then only recognizes it (it
// counts in model::FileRead). When the owner does not read the file, this
// format handles the row itself.
//
// Upstream: the producers' sources cited in each row (`source`); the line
// prefixes peeled before matching are logs::PeelPrefixes'.
//
//   if (SniffMessages(in.data) > 0) ParseMessages(in, &sink);
//   for (const Recognized& r : ScanMessages(in)) std::cout << r.match.row->id;
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/formats/messages/attribution.h"
#include "hangdx/ingest/messages/matcher.h"
#include "hangdx/ingest/record_sink.h"

namespace hangdx::ingest {

// 40 when some row's anchor occurs in `data` (one RE2::Set scan that stops
// at the first), else 0.
int SniffMessages(std::string_view data);

// Reads every line of `in` through the catalogue into `out`: the records
// of the handlers, the file's model::FileRead (the rows matched, how often), and one diagnostic per row whose messages
// named no rank. Returns false when no line was a known message (the sniff saw an anchor, but no row's pattern
// matched): then nothing was recorded.
bool ParseMessages(const Artifact& in, RecordSink* out);

// For a text file no format recognized: the producer it looks most like and
// what was not understood, one sentence ("looks like NCCL output: line 3
// holds ': opCount' of the NCCL message nccl.coll_enqueue, but not in a
// wording hangdx knows: '...'"); "" when it resembles none.
std::string NearMiss(std::string_view data);

// One recognized message of ScanMessages.
struct Recognized {
  messages::MessageMatch match;
  messages_format::Attribution who;
  // Which reader turns it into records in this file: "messages", or the
  // row's reader when that format reads the file.
  std::string reader;
};

// Every recognized message of `in`, in file order, with its captures, its
// attribution and its reader (`hangdx messages FILE`). `lines` (if given)
// receives the number of lines read.
std::vector<Recognized> ScanMessages(const Artifact& in, int64_t* lines = nullptr);

}  // namespace hangdx::ingest
