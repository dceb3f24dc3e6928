#include "hangdx/ingest/formats/device_json/device_json.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "hangdx/ingest/json_util.h"

namespace hangdx::ingest {
namespace {

using json = nlohmann::json;
using model::DevOp;
using model::OpId;
using model::Rank;
using Sev = model::Diagnostic::Severity;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxRank = int64_t{1} << 24;
constexpr int64_t kMaxSeq = int64_t{1} << 53;
constexpr int64_t kMaxCapacity = int64_t{1} << 20;
constexpr size_t kMaxName = 4096;

// The byte offset where JSON nesting first exceeds kMaxDepth, or -1.
int64_t TooDeep(std::string_view data) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < data.size(); ++i) {
    char c = data[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return static_cast<int64_t>(i);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return -1;
}

bool KindFromString(const std::string& s, DevOp::Kind* kind) {
  static const std::pair<const char*, DevOp::Kind> kKinds[] = {
      {"compute", DevOp::Kind::kCompute},       {"record", DevOp::Kind::kRecord}, {"wait", DevOp::Kind::kWait},
      {"collective", DevOp::Kind::kCollective}, {"send", DevOp::Kind::kSend},     {"recv", DevOp::Kind::kRecv},
      {"host_sync", DevOp::Kind::kHostSync}};
  for (const auto& [name, k] : kKinds) {
    if (s == name) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// Reads one document. Ops are numbered as they are read; references to op
// ids (queues, streams, holders, blocked_on) are resolved once every op is
// known.
class Reader {
 public:
  // Reads into *out; diagnostics go to *sink.
  Reader(const std::string& file, model::DeviceJob* out, RecordSink* sink) : file_(file), out_(out), sink_(sink) {}

  bool Read(const json& doc);

 private:
  struct ThreadInfo {
    size_t rank_index;      // into out_->ranks
    size_t thread_index;    // into DeviceRank::threads
    std::string path;       // "ranks[0].threads[1]"
    std::vector<OpId> ops;  // per JSON position; -1 where the op was skipped
    int64_t issued = 0;
    bool issued_given = false;
    OpId blocked_on = -1;
  };

  // A problem at JSON path `path` ("ranks[1].threads[0].ops[4]"); the
  // sink caps how many a hostile file leaves in the report.
  void Warn(const std::string& path, const std::string& msg, Rank rank = -1) {
    sink_->Diag(Sev::kWarning, path.empty() ? msg : path + ": " + msg, rank);
  }
  // Reads an integer in [lo, hi]; false (with a diagnostic) otherwise.
  bool Int(const json& v, const std::string& path, int64_t lo, int64_t hi, int64_t* out, Rank rank = -1) {
    bool ok = false;
    int64_t x = 0;
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      ok = u <= static_cast<uint64_t>(hi);
      x = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      x = v.get<int64_t>();
      ok = true;
    }
    if (ok && x >= lo && x <= hi) {
      *out = x;
      return true;
    }
    Warn(path, "want an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + Short(v), rank);
    return false;
  }
  bool Str(const json& v, const std::string& path, std::string* out, Rank rank = -1) {
    if (v.is_string() && v.get_ref<const std::string&>().size() <= kMaxName) {
      *out = v.get<std::string>();
      return true;
    }
    Warn(path, "want a string (at most 4096 bytes), got " + Short(v), rank);
    return false;
  }
  static std::string Short(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return s;
  }
  // The op a reference names, or -1 (with a diagnostic).
  OpId Lookup(const json& v, const std::string& path, Rank rank) {
    std::string id;
    if (!Str(v, path, &id, rank)) return -1;
    auto it = ids_.find(id);
    if (it == ids_.end()) {
      Warn(path, "\"" + id + "\" names no op; ignored", rank);
      return -1;
    }
    return it->second;
  }

  void ReadRankNumbers(const json& ranks);
  void ReadPgs(const json& pgs);
  void ReadRank(const json& r, size_t index);
  void ReadOp(const json& v, const std::string& path, Rank rank, const std::string& thread, size_t pos,
              ThreadInfo* info);
  // Where a snapshot says rank entry `index`'s ops are: the ops its threads
  // block on, its task queues, its streams, its pools' holders.
  void ReadPlacement(const json& r, size_t index);
  void ReadBlockedOn(const json& r, Rank rank, const std::string& path);
  void ReadQueues(const json& qs, Rank rank, const std::string& path, model::DeviceRank* dr);
  void ReadStreams(const json& ss, Rank rank, const std::string& path, model::DeviceRank* dr);
  void ReadHolders(const json& pools, Rank rank, const std::string& path, model::DeviceRank* dr);
  // True when op `id` (>= 0) is one of `rank`'s (a diagnostic at `p` otherwise).
  bool Own(OpId id, const std::string& p, Rank rank);
  // Marks op `id` queued or on a stream; false (with a diagnostic at `p`)
  // when it already is.
  bool Place(OpId id, const std::string& p, Rank rank);
  void Finish();

  const std::string& file_;
  model::DeviceJob* out_;
  RecordSink* sink_;
  bool snapshot_ = false;
  std::vector<Rank> rank_of_entry_;  // per entry of "ranks": its rank, -1 when skipped
  std::set<Rank> ranks_;
  std::map<std::string, OpId> ids_;
  std::vector<std::string> op_ids_;  // per op
  std::vector<ThreadInfo> threads_;
  std::vector<bool> referenced_;             // per op: in a queue, on a stream, held, blocked on
  std::vector<bool> placed_;                 // per op: in a queue or on a stream
  std::map<Rank, size_t> rank_index_;        // rank -> index into out_->ranks
  std::map<std::string, size_t> thread_at_;  // JSON path of a thread -> index into threads_
  std::set<std::string> unknown_keys_;
};

bool Reader::Read(const json& doc) {
  out_->origin = file_;
  snapshot_ = doc.contains("hangdx_snapshot");
  const char* marker = snapshot_ ? "hangdx_snapshot" : "hangdx_schedule";
  if (doc.contains("hangdx_snapshot") && doc.contains("hangdx_schedule"))
    Warn("", "both \"hangdx_snapshot\" and \"hangdx_schedule\": read as a snapshot");
  int64_t version = 0;
  if (Int(doc[marker], marker, 0, kMaxSeq, &version) && version != 1)
    Warn(marker, "format version " + std::to_string(version) + " is not 1 (the one this hangdx reads); read as 1");
  static const std::set<std::string> kTop = {"hangdx_schedule", "hangdx_snapshot", "task_queue", "pgs",
                                             "ranks",           "recorded_events", "comment"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!kTop.count(it.key())) Warn("", "unknown key \"" + it.key() + "\"; ignored");
  if (auto it = doc.find("task_queue"); it != doc.end()) {
    std::string mode;
    if (Str(*it, "task_queue", &mode)) {
      if (mode == "off")
        out_->queue_mode = model::QueueMode::kOff;
      else if (mode == "per_device")
        out_->queue_mode = model::QueueMode::kPerDevice;
      else if (mode == "per_stream")
        out_->queue_mode = model::QueueMode::kPerStream;
      else
        Warn("task_queue", "must be one of \"off\", \"per_device\", \"per_stream\"; read as \"off\"");
    }
  }
  auto ranks = doc.find("ranks");
  if (ranks == doc.end() || !ranks->is_array()) {
    Warn("ranks", "missing or not an array: nothing to read");
    return false;
  }
  ReadRankNumbers(*ranks);
  if (auto it = doc.find("pgs"); it != doc.end()) ReadPgs(*it);
  for (size_t i = 0; i < ranks->size(); ++i)
    if (rank_of_entry_[i] >= 0) ReadRank((*ranks)[i], i);
  referenced_.assign(out_->ops.size(), false);
  placed_.assign(out_->ops.size(), false);
  for (size_t i = 0; i < ranks->size(); ++i)
    if (rank_of_entry_[i] >= 0) ReadPlacement((*ranks)[i], i);
  if (auto it = doc.find("recorded_events"); it != doc.end()) {
    if (!snapshot_) {
      Warn("recorded_events", "only a snapshot records events; ignored in a schedule");
    } else if (!it->is_array()) {
      Warn("recorded_events", "want an array of event names");
    } else {
      for (size_t i = 0; i < it->size(); ++i) {
        std::string e;
        if (Str((*it)[i], "recorded_events[" + std::to_string(i) + "]", &e)) out_->recorded_events.push_back(e);
      }
    }
  }
  Finish();
  return !out_->ranks.empty();
}

void Reader::ReadRankNumbers(const json& ranks) {
  rank_of_entry_.assign(ranks.size(), -1);
  for (size_t i = 0; i < ranks.size(); ++i) {
    std::string path = "ranks[" + std::to_string(i) + "]";
    const json& r = ranks[i];
    if (!r.is_object()) {
      Warn(path, "want an object {\"rank\": N, \"threads\": [...]}; skipped");
      continue;
    }
    auto it = r.find("rank");
    int64_t rank = -1;
    if (it == r.end()) {
      Warn(path, "no \"rank\"; skipped");
      continue;
    }
    if (!Int(*it, path + ".rank", 0, kMaxRank - 1, &rank)) continue;
    if (!ranks_.insert(rank).second) {
      Warn(path, "rank " + std::to_string(rank) + " is listed twice; this entry is skipped", rank);
      continue;
    }
    rank_of_entry_[i] = rank;
  }
}

void Reader::ReadPgs(const json& pgs) {
  if (!pgs.is_object()) {
    Warn("pgs", "want an object {\"<pg>\": [ranks]}; ignored");
    return;
  }
  for (auto it = pgs.begin(); it != pgs.end(); ++it) {
    std::string path = "pgs." + it.key();
    if (!it->is_array()) {
      Warn(path, "want an array of ranks; pg skipped");
      continue;
    }
    std::vector<Rank> members;
    for (size_t i = 0; i < it->size(); ++i) {
      int64_t r;
      std::string p = path + "[" + std::to_string(i) + "]";
      if (!Int((*it)[i], p, 0, kMaxRank - 1, &r)) continue;
      if (!ranks_.count(r))
        Warn(p,
             "rank " + std::to_string(r) +
                 " is a member but not in \"ranks\": ops that need it wait for a "
                 "rank with no data",
             r);
      members.push_back(r);
    }
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    out_->pgs[it.key()] = std::move(members);
  }
}

void Reader::ReadRank(const json& r, size_t index) {
  const Rank rank = rank_of_entry_[index];
  const std::string path = "ranks[" + std::to_string(index) + "]";
  static const std::set<std::string> kKeys = {"rank", "pools", "threads", "queues", "streams", "comment"};
  for (auto it = r.begin(); it != r.end(); ++it)
    if (!kKeys.count(it.key())) Warn(path, "unknown key \"" + it.key() + "\"; ignored", rank);
  model::DeviceRank dr;
  dr.rank = rank;
  if (auto it = r.find("pools"); it != r.end()) {
    if (!it->is_array()) Warn(path + ".pools", "want an array; ignored", rank);
    for (size_t i = 0; it->is_array() && i < it->size(); ++i) {
      std::string p = path + ".pools[" + std::to_string(i) + "]";
      const json& v = (*it)[i];
      model::Pool pool;
      if (!v.is_object() || !v.contains("name") || !Str(v["name"], p + ".name", &pool.name, rank)) {
        if (!v.is_object() || !v.contains("name")) Warn(p, "want {\"name\": str, \"capacity\": N}; skipped", rank);
        continue;
      }
      int64_t cap = 1;
      if (v.contains("capacity") && !Int(v["capacity"], p + ".capacity", 1, kMaxCapacity, &cap, rank)) cap = 1;
      pool.capacity = static_cast<int>(cap);
      if (std::any_of(dr.pools.begin(), dr.pools.end(), [&](const model::Pool& x) { return x.name == pool.name; })) {
        Warn(p, "pool \"" + pool.name + "\" is declared twice; skipped", rank);
        continue;
      }
      dr.pools.push_back(std::move(pool));
    }
  }
  const size_t rank_index = out_->ranks.size();
  rank_index_[rank] = rank_index;
  out_->ranks.push_back(std::move(dr));
  auto threads = r.find("threads");
  if (threads == r.end() || !threads->is_array()) {
    if (threads != r.end()) Warn(path + ".threads", "want an array; ignored", rank);
    return;
  }
  std::set<std::string> names;
  for (size_t t = 0; t < threads->size(); ++t) {
    std::string tp = path + ".threads[" + std::to_string(t) + "]";
    const json& tv = (*threads)[t];
    if (!tv.is_object()) {
      Warn(tp, "want an object {\"name\": str, \"ops\": [...]}; skipped", rank);
      continue;
    }
    model::HostThread ht;
    ht.name = "thread" + std::to_string(t);
    if (auto n = tv.find("name"); n != tv.end()) Str(*n, tp + ".name", &ht.name, rank);
    if (!names.insert(ht.name).second) {
      Warn(tp, "thread \"" + ht.name + "\" is listed twice; skipped", rank);
      continue;
    }
    ThreadInfo info;
    info.rank_index = rank_index;
    info.thread_index = out_->ranks[rank_index].threads.size();
    info.path = tp;
    out_->ranks[rank_index].threads.push_back(ht);
    for (auto it = tv.begin(); it != tv.end(); ++it)
      if (it.key() != "name" && it.key() != "ops" && it.key() != "issued" && it.key() != "blocked_on" &&
          it.key() != "comment")
        Warn(tp, "unknown key \"" + it.key() + "\"; ignored", rank);
    if (auto ops = tv.find("ops"); ops != tv.end()) {
      if (!ops->is_array()) Warn(tp + ".ops", "want an array; ignored", rank);
      for (size_t i = 0; ops->is_array() && i < ops->size(); ++i)
        ReadOp((*ops)[i], tp + ".ops[" + std::to_string(i) + "]", rank, ht.name, i, &info);
    }
    if (auto it = tv.find("issued"); it != tv.end()) {
      if (!snapshot_) {
        Warn(tp + ".issued", "only a snapshot issues ops; ignored in a schedule", rank);
      } else if (Int(*it, tp + ".issued", 0, kMaxSeq, &info.issued, rank)) {
        info.issued_given = true;
        if (info.issued > static_cast<int64_t>(info.ops.size())) {
          Warn(tp + ".issued",
               "is " + std::to_string(info.issued) + " but the thread has " + std::to_string(info.ops.size()) +
                   " ops; read as all issued",
               rank);
          info.issued = static_cast<int64_t>(info.ops.size());
        }
      }
    }
    thread_at_[tp] = threads_.size();
    threads_.push_back(std::move(info));
  }
}

void Reader::ReadOp(const json& v, const std::string& path, Rank rank, const std::string& thread, size_t pos,
                    ThreadInfo* info) {
  info->ops.push_back(-1);
  if (!v.is_object()) {
    Warn(path, "want an object {\"op\": kind, ...}; skipped", rank);
    return;
  }
  static const std::set<std::string> kKeys = {"op",   "name",     "stream", "event", "pg",     "peer",
                                              "pool", "blocking", "id",     "seq",   "comment"};
  for (auto it = v.begin(); it != v.end(); ++it)
    if (!kKeys.count(it.key()) && unknown_keys_.insert(it.key()).second)
      Warn(path, "unknown key \"" + it.key() + "\"; ignored (reported once per file)", rank);
  DevOp op;
  op.rank = rank;
  op.thread = thread;
  op.source = path;
  auto k = v.find("op");
  if (k == v.end() || !k->is_string() || !KindFromString(k->get<std::string>(), &op.kind)) {
    Warn(path,
         "\"op\" must be one of \"compute\", \"record\", \"wait\", \"collective\", \"send\", \"recv\", "
         "\"host_sync\"" +
             (k == v.end() ? std::string("; it is missing") : ", not " + Short(*k)) + "; op skipped",
         rank);
    return;
  }
  auto str = [&](const char* key, std::string* out) {
    auto it = v.find(key);
    return it != v.end() && Str(*it, path + "." + key, out, rank);
  };
  str("name", &op.name);
  str("stream", &op.stream);
  str("event", &op.event);
  str("pg", &op.pg);
  str("pool", &op.pool);
  if (auto it = v.find("blocking"); it != v.end()) {
    if (it->is_boolean())
      op.host_blocking = it->get<bool>();
    else
      Warn(path + ".blocking", "want true or false; read as false", rank);
  }
  if (auto it = v.find("seq"); it != v.end()) {
    int64_t s;
    if (Int(*it, path + ".seq", 0, kMaxSeq, &s, rank)) op.seq = s;
  }
  const char* kind_name = model::DevOpKindName(op.kind);
  auto skip = [&](const std::string& why) { Warn(path, std::string(kind_name) + " " + why + "; op skipped", rank); };
  switch (op.kind) {
    case DevOp::Kind::kRecord:
    case DevOp::Kind::kWait:
      if (op.event.empty()) return skip("needs an \"event\"");
      if (op.name.empty()) op.name = std::string(kind_name) + " " + op.event;
      break;
    case DevOp::Kind::kHostSync:
      if (op.event.empty() && op.stream.empty()) return skip("needs an \"event\" or a \"stream\" to wait for");
      if (!op.pool.empty()) {
        Warn(path + ".pool", "a host_sync runs on no stream and takes no pool unit; ignored", rank);
        op.pool.clear();
      }
      if (op.name.empty()) op.name = "host_sync " + (op.event.empty() ? op.stream : op.event);
      break;
    case DevOp::Kind::kCollective:
    case DevOp::Kind::kSend:
    case DevOp::Kind::kRecv: {
      if (op.pg.empty()) return skip("needs a \"pg\"");
      auto pg = out_->pgs.find(op.pg);
      if (pg == out_->pgs.end()) return skip("names pg \"" + op.pg + "\", which \"pgs\" does not list");
      if (!std::binary_search(pg->second.begin(), pg->second.end(), rank))
        return skip("on pg \"" + op.pg + "\", which rank " + std::to_string(rank) + " is not a member of");
      if (op.kind == DevOp::Kind::kCollective) {
        if (op.name.empty()) op.name = "collective";
        break;
      }
      auto p = v.find("peer");
      int64_t peer = -1;
      if (p != v.end() && !(op.kind == DevOp::Kind::kRecv && p->is_number_integer() && p->get<int64_t>() == -1)) {
        if (!Int(*p, path + ".peer", 0, kMaxRank - 1, &peer, rank)) return skip("has a bad \"peer\"");
        if (!ranks_.count(peer)) return skip("peer " + std::to_string(peer) + " is not a rank in \"ranks\"");
        if (peer == rank) return skip("peer is its own rank");
        if (!std::binary_search(pg->second.begin(), pg->second.end(), peer))
          return skip("peer " + std::to_string(peer) + " is not a member of pg \"" + op.pg + "\"");
      }
      if (op.kind == DevOp::Kind::kSend && peer < 0) return skip("needs a \"peer\"");
      op.peer = peer;
      if (op.name.empty()) op.name = kind_name;
      break;
    }
    case DevOp::Kind::kCompute:
      if (op.name.empty()) op.name = "compute";
      break;
  }
  if (op.kind != DevOp::Kind::kHostSync && op.stream.empty()) op.stream = "default";
  if (!op.pool.empty()) {
    auto& pools = out_->ranks[info->rank_index].pools;
    if (std::none_of(pools.begin(), pools.end(), [&](const model::Pool& x) { return x.name == op.pool; })) {
      Warn(path + ".pool", "pool \"" + op.pool + "\" is not declared in this rank's \"pools\"; read as capacity 1",
           rank);
      model::Pool pool;
      pool.name = op.pool;
      pools.push_back(std::move(pool));
    }
  }
  std::string id = std::to_string(rank) + "/" + thread + "/" + std::to_string(pos);
  if (auto it = v.find("id"); it != v.end()) {
    std::string given;
    if (Str(*it, path + ".id", &given, rank) && !given.empty()) id = given;
  }
  if (ids_.count(id)) {
    Warn(path + ".id", "id \"" + id + "\" is already used by " + out_->ops[ids_[id]].source + "; op skipped", rank);
    return;
  }
  OpId oid = static_cast<OpId>(out_->ops.size());
  ids_[id] = oid;
  op_ids_.push_back(id);
  out_->ops.push_back(std::move(op));
  out_->ranks[info->rank_index].threads[info->thread_index].pending.push_back(oid);  // sorted out in Finish()
  info->ops.back() = oid;
}

bool Reader::Own(OpId id, const std::string& p, Rank rank) {
  if (id < 0) return false;
  if (out_->ops[id].rank != rank) {
    Warn(p,
         "op \"" + op_ids_[id] + "\" belongs to rank " + std::to_string(out_->ops[id].rank) + ", not this one; ignored",
         rank);
    return false;
  }
  return true;
}

bool Reader::Place(OpId id, const std::string& p, Rank rank) {
  if (placed_[id]) {
    Warn(p, "op \"" + op_ids_[id] + "\" is already in a queue or on a stream; ignored here", rank);
    return false;
  }
  placed_[id] = referenced_[id] = true;
  return true;
}

void Reader::ReadPlacement(const json& r, size_t index) {
  const Rank rank = rank_of_entry_[index];
  const std::string path = "ranks[" + std::to_string(index) + "]";
  model::DeviceRank* dr = &out_->ranks[rank_index_.at(rank)];
  // Only a snapshot places ops; a schedule that does is told so.
  auto present = [&](const char* key) {
    if (!r.contains(key)) return false;
    if (snapshot_) return true;
    Warn(path + "." + key, "only a snapshot has this; ignored in a schedule", rank);
    return false;
  };
  if (snapshot_) ReadBlockedOn(r, rank, path);
  if (present("queues")) ReadQueues(r["queues"], rank, path, dr);
  if (present("streams")) ReadStreams(r["streams"], rank, path, dr);
  if (auto pools = r.find("pools"); pools != r.end() && pools->is_array()) ReadHolders(*pools, rank, path, dr);
}

void Reader::ReadBlockedOn(const json& r, Rank rank, const std::string& path) {
  auto threads = r.find("threads");
  for (size_t t = 0; threads != r.end() && threads->is_array() && t < threads->size(); ++t) {
    const json& tv = (*threads)[t];
    if (!tv.is_object() || !tv.contains("blocked_on")) continue;
    std::string tp = path + ".threads[" + std::to_string(t) + "]", p = tp + ".blocked_on";
    auto at = thread_at_.find(tp);
    if (at == thread_at_.end()) continue;
    ThreadInfo* ti = &threads_[at->second];
    OpId id = tv.at("blocked_on").is_null() ? -1 : Lookup(tv.at("blocked_on"), p, rank);
    if (!Own(id, p, rank)) continue;
    const DevOp& op = out_->ops[id];
    if (!op.host_blocking && op.kind != DevOp::Kind::kHostSync)
      Warn(p, "op \"" + op_ids_[id] + "\" is not host-blocking; the thread is read as blocked on it anyway", rank);
    ti->blocked_on = id;
    referenced_[id] = true;
  }
}

void Reader::ReadQueues(const json& qs, Rank rank, const std::string& path, model::DeviceRank* dr) {
  if (!qs.is_array()) Warn(path + ".queues", "want an array; ignored", rank);
  for (size_t i = 0; qs.is_array() && i < qs.size(); ++i) {
    std::string p = path + ".queues[" + std::to_string(i) + "]";
    const json& qv = qs[i];
    if (!qv.is_object()) {
      Warn(p, "want an object {\"name\", \"entries\", \"dispatching\"}; skipped", rank);
      continue;
    }
    model::TaskQueue q;
    q.name = out_->queue_mode == model::QueueMode::kPerDevice ? "device" : "";
    if (auto n = qv.find("name"); n != qv.end()) Str(*n, p + ".name", &q.name, rank);
    if (out_->queue_mode == model::QueueMode::kOff)
      Warn(p, "\"task_queue\" is \"off\" but this rank lists a queue; its entries are read as queued anyway", rank);
    if (auto e = qv.find("entries"); e != qv.end()) {
      if (!e->is_array()) Warn(p + ".entries", "want an array of op ids; ignored", rank);
      for (size_t j = 0; e->is_array() && j < e->size(); ++j) {
        std::string ep = p + ".entries[" + std::to_string(j) + "]";
        OpId id = Lookup((*e)[j], ep, rank);
        if (!Own(id, ep, rank)) continue;
        if (out_->ops[id].kind == DevOp::Kind::kHostSync) {
          Warn(ep, "a host_sync never enters a queue (it blocks its thread); ignored here", rank);
          continue;
        }
        if (Place(id, ep, rank)) q.entries.push_back(id);
      }
    }
    if (auto d = qv.find("dispatching"); d != qv.end() && !d->is_null()) {
      OpId id = Lookup(*d, p + ".dispatching", rank);
      if (Own(id, p + ".dispatching", rank)) {
        q.dispatching = id;
        referenced_[id] = true;
      }
    }
    dr->queues.push_back(std::move(q));
  }
}

void Reader::ReadStreams(const json& ss, Rank rank, const std::string& path, model::DeviceRank* dr) {
  if (!ss.is_array()) Warn(path + ".streams", "want an array; ignored", rank);
  for (size_t i = 0; ss.is_array() && i < ss.size(); ++i) {
    std::string p = path + ".streams[" + std::to_string(i) + "]";
    const json& sv = ss[i];
    model::Stream s;
    if (!sv.is_object() || !sv.contains("name") || !Str(sv["name"], p + ".name", &s.name, rank)) {
      if (!sv.is_object() || !sv.contains("name")) Warn(p, "want {\"name\": str, \"tasks\": [ids]}; skipped", rank);
      continue;
    }
    if (auto h = sv.find("head_started"); h != sv.end()) {
      if (h->is_boolean())
        s.head_started = h->get<bool>();
      else
        Warn(p + ".head_started", "want true or false; read as false", rank);
    }
    if (auto tk = sv.find("tasks"); tk != sv.end()) {
      if (!tk->is_array()) Warn(p + ".tasks", "want an array of op ids; ignored", rank);
      for (size_t j = 0; tk->is_array() && j < tk->size(); ++j) {
        std::string tp = p + ".tasks[" + std::to_string(j) + "]";
        OpId id = Lookup((*tk)[j], tp, rank);
        if (!Own(id, tp, rank)) continue;
        if (out_->ops[id].kind == DevOp::Kind::kHostSync) {
          Warn(tp, "a host_sync never reaches a stream; ignored here", rank);
          continue;
        }
        if (out_->ops[id].stream != s.name)
          Warn(tp, "op \"" + op_ids_[id] + "\" targets stream \"" + out_->ops[id].stream + "\"; read as on this one",
               rank);
        if (Place(id, tp, rank)) s.tasks.push_back(id);
      }
    }
    if (s.tasks.empty()) s.head_started = false;
    dr->streams.push_back(std::move(s));
  }
}

void Reader::ReadHolders(const json& pools, Rank rank, const std::string& path, model::DeviceRank* dr) {
  for (size_t i = 0; i < pools.size(); ++i) {
    const json& pv = pools[i];
    if (!pv.is_object() || !pv.contains("holders")) continue;
    std::string p = path + ".pools[" + std::to_string(i) + "].holders";
    if (!snapshot_) {
      Warn(p, "only a snapshot has holders; ignored in a schedule", rank);
      continue;
    }
    if (!pv.contains("name") || !pv["name"].is_string()) continue;
    std::string name = pv["name"].get<std::string>();
    auto pool = std::find_if(dr->pools.begin(), dr->pools.end(), [&](const model::Pool& x) { return x.name == name; });
    if (pool == dr->pools.end()) continue;
    const json& hs = pv["holders"];
    if (!hs.is_array()) {
      Warn(p, "want an array of op ids; ignored", rank);
      continue;
    }
    for (size_t j = 0; j < hs.size(); ++j) {
      std::string hp = p + "[" + std::to_string(j) + "]";
      OpId id = Lookup(hs[j], hp, rank);
      if (!Own(id, hp, rank)) continue;
      if (out_->ops[id].pool != name)
        Warn(hp, "op \"" + op_ids_[id] + "\" does not use pool \"" + name + "\"; read as holding a unit anyway", rank);
      if (std::find(pool->holders.begin(), pool->holders.end(), id) != pool->holders.end()) continue;
      pool->holders.push_back(id);
      referenced_[id] = true;
    }
  }
}

void Reader::Finish() {
  const size_t n = out_->ops.size();
  // A started head with a pool holds a unit even when "holders" omits it.
  for (auto& dr : out_->ranks) {
    for (const auto& s : dr.streams) {
      if (!s.head_started || s.tasks.empty()) continue;
      OpId head = s.tasks.front();
      const std::string& pool_name = out_->ops[head].pool;
      if (pool_name.empty()) continue;
      for (auto& pool : dr.pools)
        if (pool.name == pool_name && std::find(pool.holders.begin(), pool.holders.end(), head) == pool.holders.end())
          pool.holders.push_back(head);
    }
    for (const auto& pool : dr.pools)
      if (static_cast<int64_t>(pool.holders.size()) > pool.capacity)
        Warn("",
             "rank " + std::to_string(dr.rank) + ": pool \"" + pool.name + "\" has " +
                 std::to_string(pool.holders.size()) + " holders but capacity " + std::to_string(pool.capacity),
             dr.rank);
  }
  // Issued: ops a snapshot places are issued, whatever "issued" says.
  for (size_t t = 0; t < threads_.size(); ++t) {
    ThreadInfo& info = threads_[t];
    int64_t last = -1;
    for (size_t i = 0; i < info.ops.size(); ++i)
      if (info.ops[i] >= 0 && referenced_[info.ops[i]]) last = static_cast<int64_t>(i);
    if (last >= info.issued) {
      if (info.issued_given)
        Warn(info.path + ".issued", "is " + std::to_string(info.issued) + " but op " + std::to_string(last) +
                                        " is already issued (queued, on a stream or blocking); read as " +
                                        std::to_string(last + 1));
      info.issued = last + 1;
    }
  }
  out_->finished.assign(n, false);
  for (size_t t = 0; t < threads_.size(); ++t) {
    const ThreadInfo& info = threads_[t];
    model::HostThread& ht = out_->ranks[info.rank_index].threads[info.thread_index];
    ht.pending.clear();
    ht.blocked_on = info.blocked_on;
    for (size_t i = 0; i < info.ops.size(); ++i) {
      OpId id = info.ops[i];
      if (id < 0) continue;
      if (static_cast<int64_t>(i) >= info.issued)
        ht.pending.push_back(id);
      else if (!referenced_[id])
        out_->finished[id] = true;
    }
  }
  // A finished record has recorded its event.
  for (size_t i = 0; i < n; ++i)
    if (out_->finished[i] && out_->ops[i].kind == DevOp::Kind::kRecord)
      out_->recorded_events.push_back(out_->ops[i].event);
  std::sort(out_->recorded_events.begin(), out_->recorded_events.end());
  out_->recorded_events.erase(std::unique(out_->recorded_events.begin(), out_->recorded_events.end()),
                              out_->recorded_events.end());
  std::sort(out_->ranks.begin(), out_->ranks.end(),
            [](const model::DeviceRank& a, const model::DeviceRank& b) { return a.rank < b.rank; });
  out_->Number();
}

}  // namespace

int SniffDeviceJson(std::string_view data) {
  size_t i = 0;
  while (i < data.size() && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t')) ++i;
  if (i >= data.size() || data[i] != '{') return 0;
  std::string_view head = data.substr(i, 65536);
  for (std::string_view key : {"\"hangdx_schedule\"", "\"hangdx_snapshot\""}) {
    size_t at = head.find(key);
    if (at == std::string_view::npos) continue;
    size_t j = at + key.size();
    while (j < head.size() && (head[j] == ' ' || head[j] == '\n' || head[j] == '\r' || head[j] == '\t')) ++j;
    if (j < head.size() && head[j] == ':') return 100;
  }
  return 0;
}

bool ParseDeviceJson(const Artifact& in, RecordSink* out) {
  auto fail = [&](std::string msg, int64_t offset = -1) {
    out->Diag(Sev::kError, std::move(msg), -1, offset);
    return false;
  };
  if (int64_t at = TooDeep(in.data); at >= 0)
    return fail(
        "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels at byte " + std::to_string(at) + "; not read",
        at);
  json doc;
  std::string error;
  int64_t offset = -1;
  JsonDuplicates dups;
  if (!ParseJson(in.data, &doc, &error, &offset, &dups)) return fail(std::move(error), offset);
  WarnDuplicateKeys(dups, -1, out);
  if (!doc.is_object() || (!doc.contains("hangdx_schedule") && !doc.contains("hangdx_snapshot")))
    return fail(
        "not a device schedule or snapshot: want {\"hangdx_schedule\": 1, ...} or {\"hangdx_snapshot\": 1, ...}");
  model::DeviceJob job;
  job.origin = in.path;
  Reader reader(in.path, &job, out);
  if (!reader.Read(doc)) return fail("no usable rank in this schedule or snapshot");
  out->AddDeviceJob(std::move(job));
  return true;
}

bool ReadDeviceJob(std::string_view data, const std::string& file, model::DeviceJob* out,
                   model::DiagnosticSink* diags) {
  DumpBuilder sink(file, diags);
  bool ok = ParseDeviceJson(Artifact{data, file}, &sink);
  DumpBuilder::Result r = sink.Finish();
  *out = r.device.empty() ? model::DeviceJob() : std::move(r.device.front());
  out->origin = file;
  return ok;
}

}  // namespace hangdx::ingest
