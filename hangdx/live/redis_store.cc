#include "hangdx/live/redis_store.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <mutex>

#include "hangdx/live/url.h"

namespace hangdx::live {
namespace {

// Finding: HSETNX into the hash and, only when new, RPUSH to the order list.
constexpr const char* kAddFindingScript =
    "if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then "
    "redis.call('RPUSH', KEYS[2], ARGV[2]) return 1 end return 0";

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisStore : public StateStore {
 public:
  RedisStore(Endpoint e, int db, StoreOptions o) : server_(std::move(e)), db_(db), opt_(std::move(o)) {
    prefix_ = "hangdx:" + opt_.job + ":";
  }
  ~RedisStore() override {
    if (ctx_) redisFree(ctx_);
  }

  Status Open() {
    std::lock_guard<std::mutex> lock(mu_);
    HANGDX_RETURN_IF_ERROR(Reconnect());
    HANGDX_ASSIGN_OR_RETURN(Reply r, Command({"PING"}));
    if (r->type != REDIS_REPLY_STATUS || std::string(r->str, r->len) != "PONG")
      return IoError("redis " + Where() + ": PING did not answer PONG");
    return Status::Ok();
  }

  std::string Describe() const override { return "redis " + Where() + " (job " + opt_.job + ")"; }

  Status PutRanks(const std::vector<RankRecord>& records) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t first = 0; first < records.size(); first += 1000) {
      std::vector<std::string> args{"HSET", prefix_ + "ranks"};
      for (size_t i = first; i < std::min(records.size(), first + 1000); ++i) {
        args.push_back(std::to_string(records[i].rank));
        args.push_back(records[i].Encode());
      }
      HANGDX_ASSIGN_OR_RETURN(Reply r, Command(args));
    }
    return Status::Ok();
  }

  StatusOr<std::vector<RankRecord>> LoadRanks() override {
    std::lock_guard<std::mutex> lock(mu_);
    HANGDX_ASSIGN_OR_RETURN(Reply r, Command({"HGETALL", prefix_ + "ranks"}));
    std::vector<RankRecord> out;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      int64_t rank = -1;
      std::string k(r->element[i]->str, r->element[i]->len);
      auto res = std::from_chars(k.data(), k.data() + k.size(), rank);
      RankRecord rec;
      if (res.ec == std::errc() &&
          RankRecord::Decode(rank, std::string(r->element[i + 1]->str, r->element[i + 1]->len), &rec))
        out.push_back(std::move(rec));
    }
    std::sort(out.begin(), out.end(), [](const RankRecord& a, const RankRecord& b) { return a.rank < b.rank; });
    return out;
  }

  Status AppendHistory(const std::string& line) override {
    std::lock_guard<std::mutex> lock(mu_);
    return PushTrimmed(prefix_ + "history", line, opt_.history_max);
  }

  StatusOr<std::vector<std::string>> LoadHistory() override {
    std::lock_guard<std::mutex> lock(mu_);
    return Strings({"LRANGE", prefix_ + "history", "0", "-1"});
  }

  Status AppendReport(Rank rank, const std::string& report, const std::optional<RankRecord>& record) override {
    // One round trip, not four, and shared: every pushed report waits for
    // this before its answer, and the service's threads share one
    // connection, so the writes queued while one is in flight go together
    // in the next (Commit).
    std::string key = prefix_ + "reports:" + std::to_string(rank);
    Write w;
    w.commands = {{"RPUSH", key, report},
                  {"LTRIM", key, std::to_string(-static_cast<int64_t>(opt_.reports_per_rank)), "-1"},
                  {"SADD", prefix_ + "report_ranks", std::to_string(rank)}};
    if (record) w.commands.push_back({"HSET", prefix_ + "ranks", std::to_string(record->rank), record->Encode()});
    return Commit(&w);
  }

  StatusOr<std::vector<std::pair<Rank, std::string>>> LoadReports() override {
    std::lock_guard<std::mutex> lock(mu_);
    HANGDX_ASSIGN_OR_RETURN(std::vector<std::string> ranks, Strings({"SMEMBERS", prefix_ + "report_ranks"}));
    std::vector<Rank> sorted;
    for (const auto& s : ranks) {
      Rank r = -1;
      if (std::from_chars(s.data(), s.data() + s.size(), r).ec == std::errc()) sorted.push_back(r);
    }
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<Rank, std::string>> out;
    for (Rank r : sorted) {
      HANGDX_ASSIGN_OR_RETURN(std::vector<std::string> reports,
                              Strings({"LRANGE", prefix_ + "reports:" + std::to_string(r), "0", "-1"}));
      for (auto& s : reports) out.emplace_back(r, std::move(s));
    }
    return out;
  }

  StatusOr<bool> AddFinding(const std::string& fingerprint, const std::string& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    HANGDX_ASSIGN_OR_RETURN(Reply r, Command({"EVAL", kAddFindingScript, "2", prefix_ + "findings",
                                              prefix_ + "findings_order", fingerprint, record}));
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  }

  StatusOr<std::vector<std::string>> LoadFindings() override {
    std::lock_guard<std::mutex> lock(mu_);
    return Strings({"LRANGE", prefix_ + "findings_order", "0", "-1"});
  }

  StatusOr<bool> MarkStall(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    HANGDX_ASSIGN_OR_RETURN(Reply r, Command({"SADD", prefix_ + "stalls", key}));
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  }

  StatusOr<std::vector<std::string>> LoadStalls() override {
    std::lock_guard<std::mutex> lock(mu_);
    return Strings({"SMEMBERS", prefix_ + "stalls"});
  }

 private:
  std::string Where() const { return server_.host + ":" + std::to_string(server_.port) + "/" + std::to_string(db_); }

  Status Reconnect() {
    if (ctx_) redisFree(ctx_);
    timeval tv{5, 0};
    ctx_ = redisConnectWithTimeout(server_.host.c_str(), server_.port, tv);
    if (!ctx_ || ctx_->err) {
      std::string why = ctx_ ? ctx_->errstr : "out of memory";
      if (ctx_) redisFree(ctx_);
      ctx_ = nullptr;
      return IoError("redis " + Where() + ": " + why);
    }
    redisSetTimeout(ctx_, tv);
    if (db_ != 0) {
      auto* r = static_cast<redisReply*>(redisCommand(ctx_, "SELECT %d", db_));
      bool ok = r && r->type == REDIS_REPLY_STATUS;
      if (r) freeReplyObject(r);
      if (!ok) return IoError("redis " + Where() + ": cannot SELECT database " + std::to_string(db_));
    }
    return Status::Ok();
  }

  // One command; on a broken connection, reconnects once and retries.
  StatusOr<Reply> Command(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!ctx_) HANGDX_RETURN_IF_ERROR(Reconnect());
      Reply r(
          static_cast<redisReply*>(redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data())));
      if (!r) {
        redisFree(ctx_);
        ctx_ = nullptr;
        continue;
      }
      if (r->type == REDIS_REPLY_ERROR) return IoError("redis " + args[0] + ": " + std::string(r->str, r->len));
      return r;
    }
    return IoError("redis " + Where() + ": connection lost (" + args[0] + ")");
  }

  using Commands = std::vector<std::vector<std::string>>;

  // A write waiting for its turn (Commit): its commands, then, once done,
  // their outcome.
  struct Write {
    Commands commands;
    Status result;
    bool done = false;
  };

  // Group commit: `w` is queued; the first writer finding no batch in
  // flight sends every queued write in one pipeline (one round trip) and
  // wakes the others when Redis has answered them all. So N threads
  // storing at once cost about one round trip, not N in a row, and each
  // returns only once Redis holds its own write (its report may then be
  // acknowledged: docs/live.md, section 3). Returns the write's first
  // error reply, or kIo when the connection is lost twice.
  Status Commit(Write* w) {
    std::unique_lock<std::mutex> lock(queue_mu_);
    queue_.push_back(w);
    while (!w->done) {
      if (committing_) {
        queue_cv_.wait(lock);
        continue;
      }
      committing_ = true;
      std::vector<Write*> batch;
      batch.swap(queue_);
      lock.unlock();
      std::vector<const Commands*> groups;
      for (const Write* b : batch) groups.push_back(&b->commands);
      std::vector<Status> results;
      {
        std::lock_guard<std::mutex> io(mu_);
        results = Pipeline(groups);
      }
      lock.lock();
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i]->result = std::move(results[i]);
        batch[i]->done = true;
      }
      committing_ = false;
      queue_cv_.notify_all();
    }
    return w->result;
  }

  // Groups of commands sent together and their replies read together
  // (one round trip); on a broken connection, reconnects once and sends
  // them again. One status per group: its first error reply, or (kIo) the
  // connection's error for every group when it is lost.
  std::vector<Status> Pipeline(const std::vector<const Commands*>& groups) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!ctx_) {
        if (Status st = Reconnect(); !st.ok()) return std::vector<Status>(groups.size(), st);
      }
      for (const Commands* commands : groups)
        for (const auto& args : *commands) {
          std::vector<const char*> argv;
          std::vector<size_t> lens;
          for (const auto& a : args) {
            argv.push_back(a.data());
            lens.push_back(a.size());
          }
          redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data());
        }
      std::vector<Status> results(groups.size());
      bool lost = false;
      for (size_t g = 0; g < groups.size() && !lost; ++g) {
        for (const auto& args : *groups[g]) {
          void* raw = nullptr;
          if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw) {
            lost = true;
            break;
          }
          Reply r(static_cast<redisReply*>(raw));
          if (r->type == REDIS_REPLY_ERROR && results[g].ok())
            results[g] = IoError("redis " + args[0] + ": " + std::string(r->str, r->len));
        }
      }
      if (lost) {
        redisFree(ctx_);
        ctx_ = nullptr;
        continue;
      }
      return results;
    }
    return std::vector<Status>(
        groups.size(), IoError("redis " + Where() + ": connection lost (" + groups.front()->front().front() + ")"));
  }

  StatusOr<std::vector<std::string>> Strings(const std::vector<std::string>& args) {
    HANGDX_ASSIGN_OR_RETURN(Reply r, Command(args));
    std::vector<std::string> out;
    for (size_t i = 0; i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
    return out;
  }

  Status PushTrimmed(const std::string& key, const std::string& value, size_t keep) {
    HANGDX_ASSIGN_OR_RETURN(Reply a, Command({"RPUSH", key, value}));
    if (a->type == REDIS_REPLY_INTEGER && static_cast<size_t>(a->integer) > keep) {
      std::string start = std::to_string(-static_cast<int64_t>(keep));
      HANGDX_ASSIGN_OR_RETURN(Reply b, Command({"LTRIM", key, start, "-1"}));
    }
    return Status::Ok();
  }

  Endpoint server_;
  int db_ = 0;
  StoreOptions opt_;
  std::string prefix_;
  std::mutex mu_;  // guards ctx_: one command or pipeline at a time
  redisContext* ctx_ = nullptr;
  std::mutex queue_mu_;  // guards queue_ and committing_ (Commit)
  std::condition_variable queue_cv_;
  std::vector<Write*> queue_;  // writes waiting for the next pipeline
  bool committing_ = false;    // a pipeline of writes is in flight
};

}  // namespace

StatusOr<std::unique_ptr<StateStore>> NewRedisStore(const std::string& url, const StoreOptions& options) {
  constexpr std::string_view kScheme = "redis://";
  if (url.rfind(kScheme, 0) != 0) return InvalidArgument("--redis wants redis://HOST:PORT[/DB], got " + url);
  std::string rest = url.substr(kScheme.size());
  int db = 0;
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    std::string d = rest.substr(slash + 1);
    if (!d.empty() && std::from_chars(d.data(), d.data() + d.size(), db).ec != std::errc())
      return InvalidArgument("--redis: bad database number in " + url);
    rest.resize(slash);
  }
  HANGDX_ASSIGN_OR_RETURN(Endpoint e, ParseHostPort(rest));
  auto store = std::make_unique<RedisStore>(std::move(e), db, options);
  HANGDX_RETURN_IF_ERROR(store->Open());
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace hangdx::live
