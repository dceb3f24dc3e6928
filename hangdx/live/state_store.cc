#include "hangdx/live/state_store.h"

#include <charconv>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace hangdx::live {
namespace {

class MemoryStore : public StateStore {
 public:
  explicit MemoryStore(StoreOptions o) : opt_(std::move(o)) {}

  std::string Describe() const override { return "memory"; }

  Status PutRanks(const std::vector<RankRecord>& records) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& r : records) ranks_[r.rank] = r;
    return Status::Ok();
  }
  StatusOr<std::vector<RankRecord>> LoadRanks() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<RankRecord> out;
    for (const auto& [r, rec] : ranks_) out.push_back(rec);
    return out;
  }
  Status AppendHistory(const std::string& line) override {
    std::lock_guard<std::mutex> lock(mu_);
    history_.push_back(line);
    while (history_.size() > opt_.history_max) history_.pop_front();
    return Status::Ok();
  }
  StatusOr<std::vector<std::string>> LoadHistory() override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::vector<std::string>(history_.begin(), history_.end());
  }
  Status AppendReport(Rank rank, const std::string& report, const std::optional<RankRecord>& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (record) ranks_[record->rank] = *record;
    auto& q = reports_[rank];
    q.push_back(report);
    while (q.size() > opt_.reports_per_rank) q.pop_front();
    return Status::Ok();
  }
  StatusOr<std::vector<std::pair<Rank, std::string>>> LoadReports() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<Rank, std::string>> out;
    for (const auto& [r, q] : reports_)
      for (const auto& s : q) out.emplace_back(r, s);
    return out;
  }
  StatusOr<bool> AddFinding(const std::string& fingerprint, const std::string& record) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!finding_keys_.insert(fingerprint).second) return false;
    findings_.push_back(record);
    return true;
  }
  StatusOr<std::vector<std::string>> LoadFindings() override {
    std::lock_guard<std::mutex> lock(mu_);
    return findings_;
  }
  StatusOr<bool> MarkStall(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return stalls_.insert(key).second;
  }
  StatusOr<std::vector<std::string>> LoadStalls() override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::vector<std::string>(stalls_.begin(), stalls_.end());
  }

 private:
  StoreOptions opt_;
  std::mutex mu_;
  std::map<Rank, RankRecord> ranks_;
  std::deque<std::string> history_;
  std::map<Rank, std::deque<std::string>> reports_;
  std::set<std::string> finding_keys_, stalls_;
  std::vector<std::string> findings_;
};

bool ToInt(std::string_view s, int64_t* v) {
  auto res = std::from_chars(s.data(), s.data() + s.size(), *v);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

}  // namespace

std::string RankRecord::Encode() const {
  return url + "\t" + progress + "\t" + std::to_string(seen_ms) + "\t" + std::to_string(changed_ms) + "\t" + agent +
         (collectives ? "\tc" : "");
}

bool RankRecord::Decode(Rank rank, const std::string& text, RankRecord* out) {
  std::vector<std::string_view> f;
  std::string_view s = text;
  for (size_t tab; (tab = s.find('\t')) != std::string_view::npos; s.remove_prefix(tab + 1))
    f.push_back(s.substr(0, tab));
  f.push_back(s);
  if (f.size() != 5 && !(f.size() == 6 && f[5] == "c")) return false;
  RankRecord r;
  r.collectives = f.size() == 6;
  r.rank = rank;
  r.url = std::string(f[0]);
  r.progress = std::string(f[1]);
  r.agent = std::string(f[4]);
  if (!ToInt(f[2], &r.seen_ms) || !ToInt(f[3], &r.changed_ms)) return false;
  *out = std::move(r);
  return true;
}

std::unique_ptr<StateStore> NewMemoryStore(const StoreOptions& options) {
  return std::make_unique<MemoryStore>(options);
}

}  // namespace hangdx::live
