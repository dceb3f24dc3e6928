#include "hangdx/ingest/compact.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "hangdx/base/mapped_file.h"
#include "hangdx/ingest/formats.h"
#include "hangdx/model/history.h"

namespace hangdx::ingest {
namespace {

using model::OpRecord;

// Moves the strings and values of `op` (from another interner) into `in`.
// The op name and backend are views into the profiling name: they stay so.
void Rehome(OpRecord* op, model::Interner* in) {
  auto str = [&](std::string_view v) { return v.empty() ? std::string_view() : in->Str(v); };
  std::string_view old_name = op->profiling_name;
  std::string_view name = str(old_name);
  auto inside = [&](std::string_view v) {
    if (!v.empty() && v.data() >= old_name.data() && v.data() + v.size() <= old_name.data() + old_name.size())
      return name.substr(v.data() - old_name.data(), v.size());
    return str(v);
  };
  op->op = inside(op->op);
  op->backend = inside(op->backend);
  op->profiling_name = name;
  op->pg_name = str(op->pg_name);
  op->pg_desc = str(op->pg_desc);
  op->thread_name = str(op->thread_name);
  op->thread_id = str(op->thread_id);
  op->input_sizes = in->InternCopy(*op->input_sizes);
  op->output_sizes = in->InternCopy(*op->output_sizes);
  op->input_dtypes = in->InternCopy(*op->input_dtypes);
  op->output_dtypes = in->InternCopy(*op->output_dtypes);
  op->frames = in->InternCopy(*op->frames);
}

// The record at position `pos` of dump `d` (whole or cut), null when it
// holds none there.
const OpRecord* AtPos(const model::RankDump& d, uint32_t pos) {
  if (d.op_pos.empty()) return pos < d.ops.size() ? &d.ops[pos] : nullptr;
  auto it = std::lower_bound(d.op_pos.begin(), d.op_pos.end(), pos);
  return it != d.op_pos.end() && *it == pos ? &d.ops[it - d.op_pos.begin()] : nullptr;
}

// A log's record read back gets the completion that a cross-rank pass
// gave the history after the cut (HistoryPg::completed_below), as the
// records it held got it then.
void MarkCompletedByHistory(const model::RankDump& d, OpRecord* op) {
  if (!d.history || op->is_p2p || op->collective_seq < 0 || op->completed || op->state != model::OpState::kScheduled)
    return;
  int pg = d.history->FindPg(op->pg_name);
  if (pg < 0 || op->collective_seq >= d.history->pgs()[pg].completed_below) return;
  op->completed = op->retired = true;
  op->state = model::OpState::kCompleted;
}

// Dump d's file read again, holding at least the records at `want`
// (sorted) and those d holds (their strings in another interner), or false
// with *why when the file no longer holds the records d was cut from.
// `cache` (may be null) is shared by the dumps read back together: their
// pg_config text and lists are parsed once. A log's streamed records
// (RecordSink::StreamOps) are cut again as they come, so that reading
// back a few records of a 10 GB log holds a few records.
bool Reread(const model::RankDump& d, const std::vector<uint32_t>& want, RankListCache* cache, model::RankDump* got,
            std::string* why) {
  StatusOr<MappedFile> file = MappedFile::Open(d.file);
  if (!file.ok()) {
    *why = file.status().message();
    return false;
  }
  DumpBuilder::StreamCut cut;
  cut.on = true;
  cut.keep_rank = d.rank;
  cut.keep = want;
  if (!d.op_pos.empty()) {
    cut.keep.insert(cut.keep.end(), d.op_pos.begin(), d.op_pos.end());
    std::sort(cut.keep.begin(), cut.keep.end());
    cut.keep.erase(std::unique(cut.keep.begin(), cut.keep.end()), cut.keep.end());
  }
  model::DiagnosticSink ignored;  // reported when the file was first read
  DumpBuilder out(d.file, &ignored, std::move(cut));
  ReadArtifact(Artifact{file->data(), d.file, d.rank, cache}, &out);
  DumpBuilder::Result read = out.Finish();
  auto it = std::find_if(read.dumps.begin(), read.dumps.end(), [&](const auto& x) { return x.rank == d.rank; });
  auto entries = [](const model::RankDump& x) { return x.history ? x.history->entries() : x.ops.size(); };
  bool same =
      !file->shrank() && it != read.dumps.end() && entries(*it) == entries(d) && it->frames.size() == d.frames.size();
  for (size_t i = 0; same && i < d.ops.size(); ++i) {
    const OpRecord* now = AtPos(*it, d.op_pos.empty() ? static_cast<uint32_t>(i) : d.op_pos[i]);
    same = now && now->record_id == d.ops[i].record_id && now->collective_seq == d.ops[i].collective_seq &&
           now->pg_name == d.ops[i].pg_name;
  }
  if (!same) {
    *why = "the file changed since it was read";
    return false;
  }
  *got = std::move(*it);
  return true;
}

// Inserts the records at `want` (sorted, unique) that *d does not hold.
bool AddRecords(model::RankDump* d, const std::vector<uint32_t>& want, RankListCache* cache, std::string* why) {
  model::RankDump all;
  if (!Reread(*d, want, cache, &all, why)) return false;
  std::vector<uint32_t> pos = d->op_pos;
  if (pos.empty())
    for (uint32_t i = 0; i < d->ops.size(); ++i) pos.push_back(i);
  std::vector<OpRecord> ops;
  std::vector<uint32_t> op_pos;
  ops.reserve(d->ops.size() + want.size());
  size_t k = 0;
  for (size_t i = 0; i <= d->ops.size(); ++i) {
    uint32_t until = i < d->ops.size() ? pos[i] : UINT32_MAX;
    for (; k < want.size() && want[k] < until; ++k) {
      const OpRecord* got = AtPos(all, want[k]);
      if (!got) continue;
      OpRecord op = *got;
      Rehome(&op, d->interner.get());
      MarkCompletedByHistory(*d, &op);
      ops.push_back(op);
      op_pos.push_back(want[k]);
    }
    if (k < want.size() && want[k] == until) ++k;  // held already
    if (i < d->ops.size()) {
      ops.push_back(d->ops[i]);
      op_pos.push_back(pos[i]);
    }
  }
  d->ops = std::move(ops);
  d->op_pos = std::move(op_pos);
  return true;
}

}  // namespace

void CompactDump(model::RankDump* d, const CompactOptions& options) {
  const size_t n = d->ops.size();
  if (d->history || n < options.min_ops || n == 0 || n > UINT32_MAX) return;
  auto history = std::make_shared<const model::OpHistory>(model::OpHistory::Build(d->ops));
  std::vector<char> keep(n, 0);
  keep[n - 1] = 1;  // the rank's last op: where it is
  for (size_t i = n; i-- > 0;)
    if (d->ops[i].completed) {
      keep[i] = 1;  // its last completed op
      break;
    }
  int pg = -1;
  std::string_view pg_name;
  for (size_t i = 0; i < n; ++i) {
    const OpRecord& op = d->ops[i];
    if (op.is_p2p || op.collective_seq < 0 || !op.completed) {
      keep[i] = 1;
      continue;
    }
    if (pg < 0 || (pg_name.data() != op.pg_name.data() && pg_name != op.pg_name)) {
      pg = history->FindPg(op.pg_name);
      pg_name = op.pg_name;
    }
    if (op.collective_seq > history->pgs()[pg].last_seq - options.tail) keep[i] = 1;
  }
  std::vector<OpRecord> ops;
  std::vector<uint32_t> pos;
  for (size_t i = 0; i < n; ++i)
    if (keep[i]) {
      ops.push_back(d->ops[i]);
      pos.push_back(static_cast<uint32_t>(i));
    }
  d->ops = std::move(ops);  // frees the records not kept
  d->op_pos = std::move(pos);
  d->history = std::move(history);
}

void ReadBack(model::Job* job, const std::vector<std::vector<uint32_t>>& needed, int threads) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < needed.size() && i < job->dumps.size(); ++i)
    if (!needed[i].empty() && job->dumps[i].history) todo.push_back(i);
  if (todo.empty()) return;
  std::vector<std::string> why(todo.size());
  RankListCache cache;  // every rank of a job repeats the same pg_config
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t t; (t = next.fetch_add(1)) < todo.size();) {
      std::vector<uint32_t> want = needed[todo[t]];
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      if (!AddRecords(&job->dumps[todo[t]], want, &cache, &why[t]) && why[t].empty()) why[t] = "cannot read it";
    }
  };
  threads = std::max(1, std::min<int>(threads, static_cast<int>(todo.size())));
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  for (size_t t = 0; t < todo.size(); ++t) {
    if (why[t].empty()) continue;
    const model::RankDump& d = job->dumps[todo[t]];
    job->diagnostics.push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kError, d.file,
                                                     "cannot read records back for the analysis (" + why[t] +
                                                         "): findings about rank " + std::to_string(d.rank) +
                                                         " may miss some of its ops",
                                                     d.rank));
  }
}

bool ExpandDump(model::RankDump* d, model::DiagnosticSink* diags, RankListCache* cache) {
  if (!d->history) return true;
  std::vector<uint32_t> all(d->history->entries());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  std::string why;
  if (!AddRecords(d, all, cache, &why)) {
    diags->Add(model::Diagnostic::Severity::kError, d->file,
               "cannot read its records back to merge them with another file of rank " + std::to_string(d->rank) +
                   " (" + why + ")",
               d->rank);
    return false;
  }
  d->history.reset();
  d->op_pos.clear();
  return true;
}

}  // namespace hangdx::ingest
