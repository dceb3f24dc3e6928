#include "hangdx/ingest/load.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iterator>
#include <map>
#include <new>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "hangdx/base/mapped_file.h"
#include "hangdx/base/memory_reserve.h"
#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/compact.h"
#include "hangdx/ingest/formats.h"
#include "hangdx/ingest/merge.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/ingest/walk.h"

namespace hangdx::ingest {
namespace fs = std::filesystem;
using model::Diagnostic;
using Sev = Diagnostic::Severity;

// A file's name without its folder and a known extension.
std::string BaseName(const std::string& path) {
  std::string base = fs::path(path).filename().string();
  for (const char* ext : {".pkl", ".pickle", ".json", ".txt", ".log", ".bin"}) {
    size_t n = std::strlen(ext);
    if (base.size() > n && base.compare(base.size() - n, n, ext) == 0) {
      base.resize(base.size() - n);
      break;
    }
  }
  return base;
}

// Whether base[at, at + n) is n digits whose value lies in [lo, hi].
bool DigitsIn(const std::string& base, size_t at, size_t n, int lo, int hi) {
  if (at + n > base.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(base[i]))) return false;
    v = v * 10 + (base[i] - '0');
  }
  return v >= lo && v <= hi;
}

// The length of the date (and time) that starts at base[at], 0 if none:
// YYYY-MM-DD (or _ .), YYYYMMDD, each optionally followed by a time
// (HH-MM-SS, HH:MM:SS, HHMMSS after - _ T or a space). Only at a digit
// run's start.
size_t DateAt(const std::string& base, size_t at) {
  if (at > 0 && std::isdigit(static_cast<unsigned char>(base[at - 1]))) return 0;
  if (!DigitsIn(base, at, 4, 1970, 2099)) return 0;
  size_t end = 0;
  char sep = at + 4 < base.size() ? base[at + 4] : 0;
  if ((sep == '-' || sep == '_' || sep == '.') && DigitsIn(base, at + 5, 2, 1, 12) && at + 7 < base.size() &&
      base[at + 7] == sep && DigitsIn(base, at + 8, 2, 1, 31))
    end = at + 10;
  else if (DigitsIn(base, at + 4, 2, 1, 12) && DigitsIn(base, at + 6, 2, 1, 31))
    end = at + 8;
  if (!end || (end < base.size() && std::isdigit(static_cast<unsigned char>(base[end])))) return 0;
  char t = end < base.size() ? base[end] : 0;
  if (t == '-' || t == '_' || t == 'T' || t == ' ') {
    size_t h = end + 1;
    if (DigitsIn(base, h, 2, 0, 23) && h + 2 < base.size() && (base[h + 2] == '-' || base[h + 2] == ':') &&
        DigitsIn(base, h + 3, 2, 0, 59) && h + 5 < base.size() && base[h + 5] == base[h + 2] &&
        DigitsIn(base, h + 6, 2, 0, 60))
      end = h + 8;
    else if (DigitsIn(base, h, 2, 0, 23) && DigitsIn(base, h + 2, 2, 0, 59) && DigitsIn(base, h + 4, 2, 0, 60) &&
             !(h + 6 < base.size() && std::isdigit(static_cast<unsigned char>(base[h + 6]))))
      end = h + 6;
  }
  return end - at;
}

// `base` with the digits of dates and times replaced by '#': a file named
// for the day it was written ("train-2026-12-04.log", "job_20261204-101500")
// does not carry its rank there (the fresh-user tester's date-stamped log
// was taken as rank 4 and grew the world past the one the dumps record).
std::string WithoutDates(std::string base) {
  for (size_t at = 0; at < base.size(); ++at) {
    size_t n = DateAt(base, at);
    for (size_t i = at; i < at + n; ++i)
      if (std::isdigit(static_cast<unsigned char>(base[i]))) base[i] = '#';
    if (n) at += n - 1;
  }
  return base;
}

// The number a file name labels as the rank: the digits right after the
// last "rank" (any case; "rank3", "rank_3", "rank-3", "rank=3"), -1 when
// there is none. A label beats position: in "rank2.20250101T120020" (a
// collector's timestamp suffix) the rank is 2, not the last number.
int64_t LabeledRank(const std::string& path) {
  std::string base = fs::path(path).filename().string();
  std::string lower(base.size(), ' ');
  for (size_t i = 0; i < base.size(); ++i)
    lower[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(base[i])));
  for (size_t at = lower.rfind("rank"); at != std::string::npos;
       at = at ? lower.rfind("rank", at - 1) : std::string::npos) {
    size_t i = at + 4;
    if (i < base.size() && (base[i] == '_' || base[i] == '-' || base[i] == '=')) ++i;
    size_t j = i;
    while (j < base.size() && std::isdigit(static_cast<unsigned char>(base[j]))) ++j;
    if (j > i && j - i <= 9) return std::stoll(base.substr(i, j - i));
  }
  return -1;
}

int64_t RankFromFileName(const std::string& path) {
  if (int64_t r = LabeledRank(path); r >= 0) return r;
  std::string base = WithoutDates(BaseName(path));
  size_t end = base.size();
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(base[begin - 1]))) --begin;
  if (begin == end || end - begin > 9) return -1;
  return std::stoll(base.substr(begin, end - begin));
}

// The digit runs of a file name (extension removed), e.g.
// "trace_rank_3_attempt_1" -> {3, 1}.
std::vector<int64_t> DigitRuns(const std::string& path) {
  std::string base = WithoutDates(BaseName(path));
  std::vector<int64_t> runs;
  for (size_t i = 0; i < base.size();) {
    if (!std::isdigit(static_cast<unsigned char>(base[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < base.size() && std::isdigit(static_cast<unsigned char>(base[j]))) ++j;
    runs.push_back(j - i <= 9 ? std::stoll(base.substr(i, j - i)) : -1);
    i = j;
  }
  return runs;
}

namespace {

// torchrun --log-dir D (torch/distributed/elastic/multiprocessing/api.py,
// DefaultLogsSpecs.reify, torch 2.2-2.13): D/<run_id>_<random>/attempt_<N>/
// <local_rank>/{stdout,stderr}.log and error.json. The local rank, and the
// run folder (what is above attempt_<N>), of such a path; -1 otherwise.
int64_t TorchrunLocalRank(const fs::path& p, std::string* run) {
  fs::path dir = p.parent_path(), attempt = dir.parent_path();
  std::string local = dir.filename().string(), a = attempt.filename().string();
  if (local.empty() || local.size() > 6 || a.rfind("attempt_", 0) != 0 || a.size() == 8) return -1;
  for (char c : local)
    if (c < '0' || c > '9') return -1;
  for (char c : a.substr(8))
    if (c < '0' || c > '9') return -1;
  *run = attempt.parent_path().string();
  return std::stoll(local);
}

// Files of a torchrun --log-dir layout whose names give no rank get their
// local rank as the rank when every such file is under one run folder (one
// agent); with several agents the local ranks repeat and say nothing of the
// global ones. The local rank is the global one on the first node only
// (torchrun numbers ranks node-major): one node's folder of a multi-node
// job is misread. It is a hint: the [rankN]: prefixes and torchrun's own
// summary, where a file has them, name the rank first.
void TorchrunLogDirRanks(const std::vector<std::string>& files, std::vector<int64_t>* ranks) {
  std::set<std::string> runs;
  std::vector<std::pair<size_t, int64_t>> local;
  for (size_t i = 0; i < files.size(); ++i) {
    if ((*ranks)[i] >= 0) continue;
    std::string run;
    int64_t l = TorchrunLocalRank(fs::path(files[i]), &run);
    if (l < 0) continue;
    runs.insert(run);
    local.emplace_back(i, l);
  }
  if (runs.size() != 1) return;
  for (auto [i, l] : local) (*ranks)[i] = l;
}

}  // namespace

std::vector<int64_t> InferRanks(const std::vector<std::string>& files) {
  std::vector<int64_t> ranks(files.size());
  for (size_t i = 0; i < files.size(); ++i) ranks[i] = RankFromFileName(files[i]);
  TorchrunLogDirRanks(files, &ranks);
  // Per folder: if the files' last numbers collide ("rank_0_attempt_1",
  // "rank_1_attempt_1") but another position tells them apart, that
  // position is the rank.
  std::map<std::string, std::vector<size_t>> by_dir;
  for (size_t i = 0; i < files.size(); ++i) by_dir[fs::path(files[i]).parent_path().string()].push_back(i);
  for (const auto& [dir, idx] : by_dir) {
    if (idx.size() < 2) continue;
    bool all_labeled = true;
    for (size_t i : idx) all_labeled = all_labeled && LabeledRank(files[i]) >= 0;
    if (all_labeled) continue;  // the names say which number is the rank
    std::vector<std::vector<int64_t>> runs;
    for (size_t i : idx) runs.push_back(DigitRuns(files[i]));
    size_t n = runs[0].size();
    bool same_shape = n > 0;
    for (const auto& r : runs) same_shape = same_shape && r.size() == n;
    if (!same_shape) continue;
    auto distinct_at = [&](size_t pos) {
      std::set<int64_t> seen;
      for (const auto& r : runs)
        if (r[pos] < 0 || !seen.insert(r[pos]).second) return false;
      return true;
    };
    if (distinct_at(n - 1)) continue;
    for (size_t pos = n - 1; pos-- > 0;) {
      if (!distinct_at(pos)) continue;
      for (size_t k = 0; k < idx.size(); ++k) ranks[idx[k]] = runs[k][pos];
      break;
    }
  }
  return ranks;
}

namespace {

constexpr size_t kMaxJobWideEvents = 100000;  // a hostile report cannot grow the list without bound

// What reading one file gave: its records, or why there are none.
struct FileResult {
  std::string path;
  uint64_t bytes = 0;
  ArtifactResult::Outcome outcome = ArtifactResult::Outcome::kUsed;
  bool empty = false;            // skipped as empty (ArtifactResult::empty)
  int64_t unreadable_rank = -1;  // the rank a dump that could not be used belongs to
  bool fr_pickle = false;        // a Flight Recorder pickle (it carries stack frames; JSON dumps do not)
  std::vector<model::RankDump> dumps;
  std::vector<model::DeviceJob> device;  // device snapshots and schedules
  model::FileRead read;                  // what ingest made of it (Job::file_reads)
  model::DiagnosticSink diags;
  bool out_of_memory = false;  // reading it ran out of memory (LoadOneGuarded); diagnosed when merged
};

// The size of `path` in bytes, 0 when it cannot be told.
uint64_t FileBytes(const std::string& path) {
  std::error_code ec;
  uint64_t n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

// "path: why" from the file layer -> "why" (the diagnostic names the file).
std::string WithoutPath(const std::string& msg, const std::string& path) {
  return msg.rfind(path + ": ", 0) == 0 ? msg.substr(path.size() + 2) : msg;
}

// Maps `path` and reads it with the formats it is in (ReadArtifact). A
// file that shrank while it was read (MappedFile::shrank: a log rotated
// with copytruncate under a live job) read zeros past its new end: what it
// gave is dropped and one error says why.
void LoadOne(const std::string& path, int64_t rank_hint, const LoadOptions& opt, RankListCache* cache,
             FileResult* res) {
  res->path = path;
  res->read.file = path;
  StatusOr<MappedFile> file = MappedFile::Open(path, opt.max_file_bytes);
  if (!file.ok()) {
    res->diags.Add(Sev::kError, path, WithoutPath(file.status().message(), path));
    res->outcome = ArtifactResult::Outcome::kUnreadable;
    res->unreadable_rank = rank_hint;
    return;
  }
  res->bytes = file->data().size();
  model::DiagnosticSink parse_diags;  // kept only when the file stayed whole
  DumpBuilder::StreamCut cut;         // a log's records are cut as they come (DumpBuilder::StreamCut)
  cut.on = opt.compact;
  cut.head = static_cast<size_t>(std::max(0, opt.log_head));
  cut.tail = static_cast<size_t>(std::max(0, opt.log_tail));
  cut.fr_tail = opt.compact_tail;  // a Flight Recorder dump's cut, as CompactDump's below
  DumpBuilder out(path, &parse_diags, std::move(cut));
  ArtifactResult read = ReadArtifact(Artifact{file->data(), path, rank_hint, cache}, &out);
  DumpBuilder::Result got = out.Finish();
  if (file->shrank()) {
    res->diags.Add(Sev::kError, path,
                   "the file shrank while it was read (truncated or rotated under hangdx, e.g. by copytruncate): "
                   "what it gave is dropped; read it again once it is complete",
                   rank_hint);
    res->outcome = ArtifactResult::Outcome::kUnreadable;
    res->unreadable_rank = rank_hint >= 0 ? rank_hint : got.dumps.size() == 1 ? got.dumps[0].rank : -1;
    return;
  }
  res->diags.Merge(std::move(parse_diags));
  res->outcome = read.outcome;
  res->empty = read.empty;
  res->read = std::move(got.read);
  res->read.file = path;
  res->read.bytes = res->bytes;
  res->read.rank = rank_hint >= 0 ? rank_hint : got.dumps.size() == 1 ? got.dumps[0].rank : -1;
  res->fr_pickle = read.format && read.format->name == kFrPickle;
  if (read.outcome == ArtifactResult::Outcome::kUnreadable) {
    // The rank the parser read from it, else its name's (an empty dump).
    res->unreadable_rank = got.unreadable_rank >= 0 ? got.unreadable_rank : rank_hint;
    return;  // what an unusable file gave in part is not used
  }
  res->dumps = std::move(got.dumps);
  res->device = std::move(got.device);
  if (opt.compact)
    for (auto& d : res->dumps)
      if (d.from_flight_recorder) CompactDump(&d, CompactOptions{.tail = opt.compact_tail});
}

// LoadOne, with running out of memory on one file (std::bad_alloc, or a
// container asked to grow past its limits) turned into that file's error:
// what it gave in part is freed and dropped, the other files are read.
void LoadOneGuarded(const std::string& path, int64_t rank_hint, const LoadOptions& opt, RankListCache* cache,
                    FileResult* res) {
  try {
    LoadOne(path, rank_hint, opt, cache, res);
    return;
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  *res = FileResult();    // frees what the file gave in part
  RefillMemoryReserve();  // for the next file that runs out
  res->outcome = ArtifactResult::Outcome::kUnreadable;
  res->unreadable_rank = rank_hint;
  res->out_of_memory = true;
  try {
    res->path = path;
  } catch (const std::bad_alloc&) {
    // The merge names the file from its index (LoadJob's files[i]).
  }
}

// The rank each input's name suggests (InferRanks over the files to read,
// so that a FIFO or a dangling link in a folder does not change how its
// files' names are read), or what --rank says; -1 for what is not read.
// `path` made absolute and resolved (symlinks, "..", "./"), so that two
// spellings of one file compare equal; lexically normalised when it cannot
// be resolved.
std::string PathKey(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  if (ec) return path;
  fs::path canon = fs::weakly_canonical(abs, ec);
  return (ec ? abs.lexically_normal() : canon).string();
}

// --rank's files by PathKey: `--rank $PWD/d/f=0` names d/f given as "d"
// (the fresh-user tester's "--rank names a file that is not among the
// inputs" for a file that was).
std::map<std::string, int64_t> RankOfByKey(const LoadOptions& opt) {
  std::map<std::string, int64_t> out;
  for (const auto& [path, rank] : opt.rank_of) out.emplace(PathKey(path), rank);
  return out;
}

// `*given` gets the inputs whose rank --rank gave.
std::vector<int64_t> RankHints(const std::vector<WalkEntry>& inputs, const LoadOptions& opt,
                               std::set<std::string>* given) {
  std::vector<std::string> readable;
  for (const WalkEntry& e : inputs)
    if (e.kind == WalkEntry::Kind::kFile) readable.push_back(e.path);
  std::vector<int64_t> inferred = InferRanks(readable);
  std::vector<int64_t> hints(inputs.size(), -1);
  std::map<std::string, int64_t> rank_of = RankOfByKey(opt);
  for (size_t i = 0, k = 0; i < inputs.size(); ++i) {
    if (inputs[i].kind != WalkEntry::Kind::kFile) continue;
    auto it = rank_of.empty() ? rank_of.end() : rank_of.find(PathKey(inputs[i].path));
    hints[i] = it != rank_of.end() ? it->second : inferred[k];
    if (it != rank_of.end()) given->insert(inputs[i].path);
    ++k;
  }
  return hints;
}

// The result of an input the walk found but that is not read: skipped
// (info for one already read by another path, a warning otherwise) or
// unreadable (an error), with what it was.
void NotRead(const WalkEntry& e, FileResult* res) {
  res->path = e.path;
  bool unreadable = e.kind == WalkEntry::Kind::kUnreadable;
  res->outcome = unreadable ? ArtifactResult::Outcome::kUnreadable : ArtifactResult::Outcome::kSkipped;
  Sev sev = unreadable ? Sev::kError : e.kind == WalkEntry::Kind::kAgain ? Sev::kInfo : Sev::kWarning;
  res->diags.Add(sev, e.path, e.why);
}

// Which of two folders' Flight Recorder dumps a merge keeps, decided at the
// first rank both hold and kept for every other one: folders A/ and B/ of
// two runs (or two jobs) are not mixed rank by rank into a job that never
// ran (the fresh-user tester's mixed2: an invented mismatch whose evidence
// cited two scripts). Keyed by the two folders, in order.
using FolderChoice = std::map<std::pair<std::string, std::string>, std::string>;

// The folder `file` lies in, as given ("" for a bare name).
std::string FolderOf(const std::string& file) { return fs::path(file).parent_path().string(); }

// Merges a second artifact of the same rank into *have: live wait states,
// stacks and log events add up; of two Flight Recorder dumps the one with
// more entries is kept (the pickle on a tie: it carries stack frames);
// -- unless --rank gave one of them that rank and not the other: the user's
// word wins over a file's name (`given`: the files --rank placed); of two
// folders' dumps, the folder chosen at the first rank both hold (*folders);
// otherwise ops merge by (pg, seq) (MergeRankOps), the Flight Recorder dump
// (else the artifact with more ops) being the base. `*have_pickle` says
// whether *have's base is a Flight Recorder pickle (updated), `d_pickle`
// the same of `d`.
void MergeRank(model::RankDump* have, bool* have_pickle, model::RankDump d, bool d_pickle,
               const std::set<std::string>& given, FolderChoice* folders, model::DiagnosticSink* diags,
               size_t* duplicates) {
  auto absorb_extras = [](model::RankDump* into, model::RankDump& from) {
    if (from.wait && !into->wait) into->wait = std::move(from.wait);
    for (auto& s : from.stacks) into->stacks.push_back(std::move(s));
    for (auto& e : from.events) into->events.push_back(std::move(e));
    for (auto& t : from.device_tasks) into->device_tasks.push_back(std::move(t));
    into->extra_files.push_back(from.file);
    for (auto& f : from.extra_files) into->extra_files.push_back(std::move(f));
  };
  bool have_fr = have->from_flight_recorder;
  bool d_fr = d.from_flight_recorder;
  bool take = false;
  if (have_fr && d_fr) {
    ++*duplicates;
    // Entries of the dump itself, not records merged into it from logs.
    size_t own = std::count_if(have->ops.begin(), have->ops.end(), [](const auto& op) { return op.source < 0; });
    take = d.ops.size() > own || (d.ops.size() == own && d_pickle && !*have_pickle);
    bool have_given = given.count(have->file) > 0, d_given = given.count(d.file) > 0;
    std::string have_dir = FolderOf(have->file), d_dir = FolderOf(d.file);
    std::string why;
    if (have_given != d_given) {
      take = d_given;
      why = " (its rank given by --rank)";
    } else if (have_dir != d_dir) {
      auto key = std::minmax(have_dir, d_dir);
      auto [it, first] = folders->try_emplace({key.first, key.second}, take ? d_dir : have_dir);
      take = it->second == d_dir;
      // A pickle and a JSON dump of as many entries are one run's two
      // formats (testdata/torch/*/pickle and json): nothing to ask.
      bool one_run = d_pickle != *have_pickle && d.ops.size() == own;
      if (!one_run)
        why = std::string(" (") + (first ? "" : "as for the other ranks; ") + "the folders " + key.first + " and " +
              key.second + " both hold dumps: two runs or two jobs? Their dumps are not mixed)";
    }
    diags->Add(Sev::kWarning, take ? have->file : d.file,
               "rank " + std::to_string(d.rank) + " has two Flight Recorder dumps; using " +
                   (take ? d.file : have->file) + why + " and ignoring this one",
               d.rank);
    if (take) {
      // Keep the other dump's extras, drop its entries.
      model::RankDump old = std::move(*have);
      *have = std::move(d);
      *have_pickle = d_pickle;
      // Its own entries go; records merged into it from logs stay (below).
      std::erase_if(old.ops, [](const model::OpRecord& op) { return op.source < 0; });
      have->stacks.insert(have->stacks.end(), old.stacks.begin(), old.stacks.end());
      have->events.insert(have->events.end(), old.events.begin(), old.events.end());
      have->device_tasks.insert(have->device_tasks.end(), old.device_tasks.begin(), old.device_tasks.end());
      if (!have->wait) have->wait = std::move(old.wait);
      have->extra_files.insert(have->extra_files.end(), old.extra_files.begin(), old.extra_files.end());
      MergeRankOps(have, old, diags);
    }
    return;
  }
  if (d_fr || (d.ops.size() > have->ops.size() && !have_fr)) {
    // The richer record becomes the base; the other one's extras join it.
    std::swap(*have, d);
    *have_pickle = d_pickle;
  }
  absorb_extras(have, d);
  // The same (pg, seq) from two sources is one op; ops only in d join.
  MergeRankOps(have, d, diags);
}

// A record set of no known rank (a file no name, prefix or --rank places)
// may hold a job-wide report: lines that name global ranks as culprits or
// as ready (the Flight Recorder analyzer's "missing ranks: {3, 4}"): those
// are true whoever printed them, so they join Job::job_events. True when
// `d` held nothing else (its file then needs no --rank).
bool TakeJobWideEvents(model::RankDump* d, std::vector<model::LogEvent>* job_events) {
  if (d->from_flight_recorder) return false;
  bool other = !d->ops.empty() || !d->stacks.empty() || d->wait || !d->device_tasks.empty();
  size_t taken = 0;
  for (auto& e : d->events) {
    if (e.ranks_pg_local || (e.ranks.empty() && e.ready_ranks.empty())) {
      other = true;
      continue;
    }
    if (job_events->size() < kMaxJobWideEvents) job_events->push_back(std::move(e));
    ++taken;
  }
  return taken > 0 && !other;
}

// A rank's dump while files are merged, and whether its base is a Flight
// Recorder pickle (MergeRank's `have_pickle`).
struct RankEntry {
  model::RankDump dump;
  bool pickle = false;
};

// The ranks' dumps while files are merged, in file order. Ranks mostly
// come in ascending order (one snapshot of every rank, files named by
// rank): a rank above every one placed before goes at the end of a vector,
// with no search and no tree node, and a file of such ranks as a block (a
// 100,000-rank snapshot spent a fifth of its run moving dumps into a map);
// the few others wait in a map.
class DumpsByRank {
 public:
  // A rank's dump and its pickle flag.
  struct Slot {
    model::RankDump* dump = nullptr;
    bool* pickle = nullptr;
  };

  // The dump placed for `d->rank`, or an empty Slot after placing `*d`
  // (moved from) as the rank's first. The Slot is valid until the next
  // placement.
  Slot FindOrPlace(model::RankDump* d, bool pickle) {
    model::Rank r = d->rank;
    if (in_order_.empty() || r > in_order_.back().rank) {
      in_order_.push_back(std::move(*d));
      in_order_pickle_.push_back(pickle);
      return {};
    }
    auto at = std::lower_bound(in_order_.begin(), in_order_.end(), r,
                               [](const model::RankDump& x, model::Rank v) { return x.rank < v; });
    if (at != in_order_.end() && at->rank == r)
      return {&*at, &in_order_pickle_[static_cast<size_t>(at - in_order_.begin())]};
    auto [it, fresh] = late_.try_emplace(r);
    if (!fresh) return {&it->second.dump, &it->second.pickle};
    it->second = RankEntry{std::move(*d), pickle};
    return {};
  }

  // Places every dump of `*ds` (ascending by rank, as a file's are) when
  // the lowest is a rank (>= 0) above every rank placed; false, nothing
  // done, otherwise. Ranks in the map are below the vector's last, so
  // these are new.
  bool PlaceAll(std::vector<model::RankDump>* ds, bool pickle) {
    if (ds->empty() || ds->front().rank < 0 || (!in_order_.empty() && ds->front().rank <= in_order_.back().rank))
      return false;
    if (in_order_.empty()) {
      in_order_ = std::move(*ds);
    } else {
      in_order_.insert(in_order_.end(), std::make_move_iterator(ds->begin()), std::make_move_iterator(ds->end()));
    }
    in_order_pickle_.resize(in_order_.size(), pickle);
    ds->clear();
    return true;
  }

  // Every dump, ascending by rank; leaves this empty.
  std::vector<model::RankDump> Take() {
    if (late_.empty()) return std::move(in_order_);
    std::vector<model::RankDump> out;
    out.reserve(in_order_.size() + late_.size());
    auto late = late_.begin();
    for (auto& d : in_order_) {
      for (; late != late_.end() && late->first < d.rank; ++late) out.push_back(std::move(late->second.dump));
      out.push_back(std::move(d));
    }
    for (; late != late_.end(); ++late) out.push_back(std::move(late->second.dump));
    in_order_.clear();
    late_.clear();
    return out;
  }

 private:
  std::vector<model::RankDump> in_order_;  // ascending by rank
  std::deque<bool> in_order_pickle_;       // per in_order_ dump (a deque: its elements are addressable bools)
  std::map<model::Rank, RankEntry> late_;  // ranks below in_order_'s last when they came
};

}  // namespace

StatusOr<model::Job> LoadJob(const std::vector<std::string>& paths, const LoadOptions& opt) {
  if (opt.world_size == 0 || opt.world_size > model::kMaxRank)
    return InvalidArgument("world size " + std::to_string(opt.world_size) + " is out of range (1 to " +
                           std::to_string(model::kMaxRank) + ")");
  for (const auto& [path, rank] : opt.rank_of)
    if (rank < 0 || rank >= model::kMaxRank)
      return InvalidArgument("rank " + std::to_string(rank) + " given for " + path + " is out of range (0 to " +
                             std::to_string(model::kMaxRank - 1) + ")");
  model::Job job;
  job.world_size = opt.world_size;
  model::DiagnosticSink diags;
  size_t missing = 0;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      diags.Add(Sev::kError, p, "no such file or folder");  // the others are still worth reading
      ++missing;
    }
  }
  if (missing == paths.size()) return NotFound(paths.front() + ": no such file or folder");
  // Every input counts, also what is not read (a FIFO, a dangling symlink,
  // a folder that cannot be listed): its FileResult says what it was.
  std::vector<WalkEntry> inputs = WalkInputs(paths, &diags);
  std::vector<std::string> files;
  for (const WalkEntry& e : inputs) files.push_back(e.path);
  if (!opt.rank_of.empty()) {
    std::set<std::string> keys;
    for (const auto& f : files) keys.insert(PathKey(f));
    for (const auto& [path, rank] : opt.rank_of)
      if (!keys.count(PathKey(path))) diags.Add(Sev::kWarning, path, "--rank names a file that is not among the inputs");
  }
  std::set<std::string> given;  // files placed by --rank
  FolderChoice folders;         // MergeRank's choices between two folders' dumps
  std::vector<int64_t> hints = RankHints(inputs, opt, &given);
  job.files = files;
  std::vector<FileResult> results(files.size());
  int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(files.size())));
  RankListCache cache;
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      if (inputs[i].kind == WalkEntry::Kind::kFile)
        LoadOneGuarded(files[i], hints[i], opt, &cache, &results[i]);
      else
        NotRead(inputs[i], &results[i]);
      uint64_t b = bytes.fetch_add(results[i].bytes) + results[i].bytes;
      size_t d = done.fetch_add(1) + 1;
      if (opt.progress) opt.progress(d, files.size(), b);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no memory or thread left for another: the ones started (and this one) read the rest
    }
  }
  worker();
  for (auto& t : pool) t.join();
  // Merge in file order (deterministic whatever the thread count).
  DumpsByRank by_rank;
  job.inputs.files = files.size();
  for (size_t i = 0; i < results.size(); ++i) {
    FileResult& r = results[i];
    if (r.out_of_memory)
      r.diags.Add(Sev::kError, files[i],
                  "ran out of memory while reading this file (" + std::to_string(FileBytes(files[i])) +
                      " bytes): what it gave is dropped; give hangdx more memory, or fewer files at once",
                  r.unreadable_rank);
    diags.Merge(std::move(r.diags));
    switch (r.outcome) {
      case ArtifactResult::Outcome::kUsed: {
        // Used only if some record of it reaches the analysis: a dump whose
        // rank nothing tells is dropped below, and a log naming nothing of a
        // known rank gives none ("1 used" then "No usable input" before).
        bool placed = !r.device.empty();
        for (const auto& d : r.dumps) placed = placed || d.rank >= 0;
        ++(placed ? job.inputs.used : job.inputs.unplaced);
        break;
      }
      case ArtifactResult::Outcome::kSkipped:
        ++job.inputs.skipped;
        if (r.empty) ++job.inputs.empty;
        break;
      case ArtifactResult::Outcome::kUnreadable:
        ++job.inputs.unreadable;
        if (r.unreadable_rank >= 0 && !job.unreadable.count(r.unreadable_rank))
          job.unreadable[r.unreadable_rank] = files[i];
        break;
    }
    for (auto& dj : r.device) job.device.push_back(std::move(dj));
    job.file_reads.push_back(std::move(r.read));
    if (by_rank.PlaceAll(&r.dumps, r.fr_pickle)) continue;
    for (auto& d : r.dumps) {
      if (d.rank < 0 && TakeJobWideEvents(&d, &job.job_events)) continue;
      if (d.rank < 0) {
        if (d.from_flight_recorder)
          diags.Add(
              Sev::kError, d.file,
              "cannot tell which rank this dump belongs to: its name does not end in a rank number; pass --rank " +
                  d.file + "=RANK");
        else
          diags.Add(Sev::kWarning, d.file,
                    "cannot tell which rank this artifact belongs to; pass --rank " + d.file + "=RANK");
        continue;
      }
      DumpsByRank::Slot have = by_rank.FindOrPlace(&d, r.fr_pickle);
      if (!have.dump) continue;  // the rank's first dump: placed
      // Merging matches records one by one: a cut dump is made whole first,
      // unless the other artifact brings no records to match (a rank's
      // stacks, its wait state): that merge only adds, and reading every
      // dump's file again for it was half of a 10,000-rank analysis.
      bool only_extras = !d.from_flight_recorder && d.ops.empty();
      bool onto_extras = !have.dump->from_flight_recorder && have.dump->ops.empty();
      if (!only_extras && !onto_extras) {
        ExpandDump(have.dump, &diags, &cache);
        ExpandDump(&d, &diags, &cache);
      }
      MergeRank(have.dump, have.pickle, std::move(d), r.fr_pickle, given, &folders, &diags, &job.inputs.duplicates);
    }
  }
  job.dumps = by_rank.Take();
  // A rank's log may hold the error that ended an op its Flight Recorder
  // dump, taken a moment before, shows pending: one op, seen by both.
  for (auto& d : job.dumps) {
    if (d.events.empty() || OpsEndedByLogs(d).empty()) continue;
    if (d.history && !ExpandDump(&d, &diags, &cache)) continue;  // its history would still show it pending
    EndOpsEndedByLogs(&d, &diags);
  }
  if (!job.unreadable.empty())
    for (const auto& d : job.dumps) job.unreadable.erase(d.rank);  // another artifact of the rank was readable
  job.diagnostics = diags.Take();
  return job;
}

}  // namespace hangdx::ingest
