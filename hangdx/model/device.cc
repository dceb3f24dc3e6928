#include "hangdx/model/device.h"

#include <algorithm>
#include <tuple>

namespace hangdx::model {

const char* DevOpKindName(DevOp::Kind kind) {
  switch (kind) {
    case DevOp::Kind::kCompute:
      return "compute";
    case DevOp::Kind::kRecord:
      return "record";
    case DevOp::Kind::kWait:
      return "wait";
    case DevOp::Kind::kCollective:
      return "collective";
    case DevOp::Kind::kSend:
      return "send";
    case DevOp::Kind::kRecv:
      return "recv";
    case DevOp::Kind::kHostSync:
      return "host_sync";
  }
  return "unknown";
}

const char* QueueModeName(QueueMode mode) {
  switch (mode) {
    case QueueMode::kOff:
      return "off";
    case QueueMode::kPerDevice:
      return "per_device";
    case QueueMode::kPerStream:
      return "per_stream";
  }
  return "unknown";
}

DeviceRank* DeviceJob::FindRank(Rank r) {
  return const_cast<DeviceRank*>(static_cast<const DeviceJob*>(this)->FindRank(r));
}

const DeviceRank* DeviceJob::FindRank(Rank r) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), r, [](const DeviceRank& d, Rank x) { return d.rank < x; });
  return it != ranks.end() && it->rank == r ? &*it : nullptr;
}

void DeviceJob::Number() {
  // Counter key: (pg, a, b, kind class). Collectives: (pg, rank, -2, 0);
  // sends a -> b: (pg, a, b, 1); recvs at b from a (a = -1: any source):
  // (pg, a, b, 2).
  using Key = std::tuple<std::string, Rank, Rank, int>;
  auto key_of = [](const DevOp& op, Key* key) {
    switch (op.kind) {
      case DevOp::Kind::kCollective:
        *key = Key(op.pg, op.rank, -2, 0);
        return true;
      case DevOp::Kind::kSend:
        *key = Key(op.pg, op.rank, op.peer, 1);
        return true;
      case DevOp::Kind::kRecv:
        *key = Key(op.pg, op.peer < 0 ? -1 : op.peer, op.rank, 2);
        return true;
      default:
        return false;
    }
  };
  std::map<Key, int64_t> next;
  Key key;
  for (const DevOp& op : ops) {
    if (op.seq >= 0 && key_of(op, &key)) {
      int64_t& n = next[key];
      n = std::max(n, op.seq + 1);
    }
  }
  std::vector<bool> done(ops.size(), false);
  auto number = [&](OpId id) {
    if (id < 0 || static_cast<size_t>(id) >= ops.size() || done[id]) return;
    done[id] = true;
    DevOp& op = ops[id];
    if (op.seq >= 0 || !key_of(op, &key)) return;
    op.seq = next[key]++;
  };
  // Finished ops came first (in the order they are listed), then what sits
  // on streams, in queues, and what threads have yet to issue.
  for (size_t i = 0; i < ops.size() && i < finished.size(); ++i) {
    if (finished[i]) number(static_cast<OpId>(i));
  }
  for (const DeviceRank& r : ranks) {
    for (const Stream& s : r.streams) {
      for (OpId id : s.tasks) number(id);
    }
  }
  for (const DeviceRank& r : ranks) {
    for (const TaskQueue& q : r.queues) {
      if (q.dispatching >= 0) number(q.dispatching);
      for (OpId id : q.entries) number(id);
    }
  }
  for (const DeviceRank& r : ranks) {
    for (const HostThread& t : r.threads) {
      if (t.blocked_on >= 0) number(t.blocked_on);
      for (OpId id : t.pending) number(id);
    }
  }
}

}  // namespace hangdx::model
