#include "hangdx/live/watcher.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "hangdx/base/rank_set.h"
#include "hangdx/ingest/messages/matcher.h"
#include "hangdx/live/bundle.h"
#include "hangdx/live/first_look.h"
#include "hangdx/live/hooks.h"
#include "hangdx/live/redis_store.h"
#include "hangdx/live/tcp_store.h"
#include "hangdx/pipeline/pipeline.h"
#include "hangdx/report/report.h"

namespace hangdx::live {
namespace {

using json = nlohmann::ordered_json;
using std::chrono::milliseconds;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The CPU seconds the calling thread has used: against the wall time of
// an analysis, it says how much of it was waiting for the shared cores.
double ThreadCpuSecs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// " (0.31 s of this thread's CPU)", the CPU an analysis used since `cpu0`
// (ThreadCpuSecs), for the log line that gives its wall time.
std::string CpuWords(double cpu0) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " (%.2f s of this thread's CPU)", ThreadCpuSecs() - cpu0);
  return buf;
}

// "2025-12-01T08:32:53Z" (RFC 3339, UTC), or the compact "20251201T083253Z".
std::string UtcStamp(bool compact) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Ranks(const std::vector<Rank>& ranks, size_t max = 16) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < max; ++i) {
    if (i) s += ',';
    s += std::to_string(ranks[i]);
  }
  if (ranks.size() > max) s += ",... (" + std::to_string(ranks.size()) + ")";
  return s;
}

// The finding's identity: the same hang found again has the same one.
std::string Fingerprint(const analyze::Finding& f) {
  std::string s =
      std::string(analyze::KindName(f.kind)) + " pg " + f.pg_name + " seq " + std::to_string(f.seq) + " culprits";
  for (Rank r : f.culprit_ranks) {
    s += ' ';
    s += std::to_string(r);
  }
  return s;
}

// Constant-time comparison, so the token cannot be guessed byte by byte.
bool SameToken(const std::string& given, const std::string& want) {
  if (want.empty() || given.size() != want.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ want[i]);
  return diff == 0;
}

HttpResponse JsonResponse(int status, const json& j) { return {status, "application/json", j.dump(1) + "\n"}; }

// pg_config names a pg by name, pg_status by id: gloo keys its default pg
// "" (id "0"); NCCL's pg names are their ids unless the user named them.
std::string PgIdOfName(const std::string& name) { return name.empty() ? "0" : name; }

}  // namespace

namespace {
FanoutOptions ProbeLimits(const WatchOptions& o) {
  FanoutOptions f;
  f.max_response_bytes = o.max_answer_bytes;
  return f;
}

// Why a probe gave nothing usable, as the log says it: "does not answer:
// connection refused" or "gives unusable answers: the body is over N bytes".
std::string FailureWhy(const ProbeReply& r, const Status& parsed) {
  if (r.ok) return "gives unusable answers: " + parsed.message();
  if (r.status) return "gives unusable answers: it answered HTTP " + std::to_string(r.status);
  constexpr std::string_view kBad = "bad response: ";
  if (r.error.rfind(kBad, 0) == 0) {
    std::string why = "gives unusable answers: " + r.error.substr(kBad.size());
    if (why.find("body is over") != std::string::npos) why += " (--max-answer-bytes)";
    return why;
  }
  return "does not answer: " + r.error;
}
}  // namespace

Watcher::Watcher(WatchOptions options)
    : opt_(std::move(options)), prober_(ProbeLimits(opt_)), detector_({opt_.stall_after}), started_(Clock::now()) {}

Watcher::~Watcher() {
  if (server_) server_->Stop();
  std::lock_guard<std::mutex> lock(hooks_mu_);
  for (auto& t : hooks_)
    if (t.joinable()) t.join();
}

Watcher::LogLine::~LogLine() {
  std::lock_guard<std::mutex> lock(*mu_);
  *out_ << buf_.str() << std::flush;
}

Watcher::LogLine Watcher::log() const { return LogLine(opt_.log ? opt_.log : &std::cerr, &log_mu_); }

int64_t Watcher::WallMs(Clock::time_point t) const {
  auto wall = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return wall - std::chrono::duration_cast<milliseconds>(Clock::now() - t).count();
}

Clock::time_point Watcher::FromWallMs(int64_t ms) const {
  auto wall = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return Clock::now() - milliseconds(wall - ms);
}

Status Watcher::Start() {
  using Role = WatchOptions::Role;
  if (opt_.format != "text" && opt_.format != "json") return InvalidArgument("--format must be text or json");
  if (opt_.interval.count() <= 0 || opt_.stall_after.count() <= 0 || opt_.fetch_timeout.count() <= 0)
    return InvalidArgument("--interval, --stall-after and --fetch-timeout must be positive");
  if (opt_.role != Role::kStandalone && opt_.redis.empty())
    return InvalidArgument("--role agent and --role coordinator share their state through --redis URL");
  if (opt_.role != Role::kCoordinator && opt_.store.empty() && opt_.workers.empty() && opt_.listen.empty())
    return InvalidArgument("no workers: give --store HOST:PORT --world-size N, --workers FILE|URL..., or --listen");
  if (!opt_.store.empty() && opt_.world_size < 1) return InvalidArgument("--store needs --world-size N");
  if (!opt_.webhook.empty())
    if (auto e = ParseUrl(opt_.webhook); !e.ok()) return InvalidArgument("--webhook: " + e.status().message());
  StoreOptions so;
  so.job = opt_.job;
  if (opt_.redis.empty()) {
    store_ = NewMemoryStore(so);
  } else {
    HANGDX_ASSIGN_OR_RETURN(store_, NewRedisStore(opt_.redis, so));
  }
  HANGDX_RETURN_IF_ERROR(Resume());
  for (const auto& [rank, url] : opt_.workers) {
    auto e = ParseUrl(url);
    if (!e.ok()) return InvalidArgument("--workers: rank " + std::to_string(rank) + ": " + e.status().message());
    prober_.SetWorker(rank, *e);
    url_of_[rank] = url;
  }
  if (!opt_.listen.empty()) {
    HANGDX_ASSIGN_OR_RETURN(Endpoint at, ParseHostPort(opt_.listen, /*allow_any_port=*/true));
    ServerOptions so2;
    so2.host = at.host;
    so2.port = at.port;
    so2.max_body_bytes = opt_.max_report_bytes;
    HANGDX_ASSIGN_OR_RETURN(server_, HttpServer::Start(
                                         so2, [this](const HttpRequest& r) { return Handle(r); },
                                         [this](const std::string& reason) {
                                           metrics_.Add("hangdx_reports_rejected_total", {{"reason", reason}});
                                         }));
    log() << "hangdx watch: listening on " << at.host << ":" << server_->port()
          << (opt_.token.empty() ? " (no token: anyone who can connect may push)" : "") << "\n";
  }
  Discover(true);
  log() << "hangdx watch: " << prober_.Ranks().size() << " workers"
        << (opt_.store.empty() ? "" : " of " + std::to_string(opt_.world_size) + " in the store " + opt_.store)
        << ", probe every " << Secs(opt_.interval) << " s, stall after " << Secs(opt_.stall_after)
        << " s without progress, state in " << store_->Describe() << "\n";
  // The first analysis would compile the message catalogue (0.07 s of CPU,
  // more on loaded cores): done now, not while a stall is being reported,
  // and after the workers were first read (the service is up meanwhile).
  if (opt_.role != Role::kAgent) (void)ingest::messages::CompiledCatalogue::Builtin();
  return Status::Ok();
}

Status Watcher::Resume() {
  HANGDX_ASSIGN_OR_RETURN(std::vector<RankRecord> ranks, store_->LoadRanks());
  HANGDX_ASSIGN_OR_RETURN(std::vector<std::string> stalls, store_->LoadStalls());
  HANGDX_ASSIGN_OR_RETURN(std::vector<std::string> findings, store_->LoadFindings());
  HANGDX_ASSIGN_OR_RETURN(auto reports, store_->LoadReports());
  HANGDX_ASSIGN_OR_RETURN(std::vector<std::string> history, store_->LoadHistory());
  std::lock_guard<std::mutex> lock(mu_);
  for (const RankRecord& r : ranks) {
    std::vector<PgProgress> pgs;
    if (r.seen_ms > 0 && ParseCompact(r.progress, &pgs))
      detector_.Restore(r.rank, pgs, FromWallMs(r.changed_ms), FromWallMs(r.seen_ms));
    if (!r.url.empty()) url_of_[r.rank] = r.url;
  }
  for (const auto& k : stalls) detector_.MarkReported(k);
  for (const auto& f : findings) {
    json j = json::parse(f, nullptr, false);
    if (j.is_object() && j.contains("fingerprint")) found_.insert(j["fingerprint"].get<std::string>());
  }
  for (const auto& [rank, raw] : reports) {
    auto parsed = ParseReport(raw, 1 << 20);
    if (parsed.ok())
      for (const auto& r : *parsed) board_.Apply(r);
  }
  history_.assign(history.begin(), history.end());
  if (!ranks.empty() || !findings.empty() || !reports.empty())
    log() << "hangdx watch: resumed from " << store_->Describe() << ": " << ranks.size() << " ranks, "
          << findings.size() << " findings, " << reports.size() << " pushed reports, " << stalls.size()
          << " stalls already analysed\n";
  return Status::Ok();
}

void Watcher::Discover(bool first) {
  if (opt_.store.empty() || opt_.role == WatchOptions::Role::kCoordinator) return;
  auto now = Clock::now();
  if (!first && now - last_discovery_ < std::chrono::seconds(1)) return;
  Rank last = opt_.last_rank >= 0 ? std::min(opt_.last_rank, opt_.world_size - 1) : opt_.world_size - 1;
  size_t missing = 0;
  for (Rank r = opt_.first_rank; r <= last; ++r) missing += !prober_.Has(r);
  if (missing == 0) return;
  last_discovery_ = now;
  auto at = ParseHostPort(opt_.store);
  if (!at.ok()) return;
  // Bounded by --duration too: an unreachable store must not hold the end.
  auto left = std::chrono::ceil<milliseconds>(end_ - now);
  auto found = ReadWorkerAddresses(
      *at, last + 1, opt_.store_prefix,
      end_ == Clock::time_point::max() ? opt_.fetch_timeout : std::clamp(left, milliseconds(1), opt_.fetch_timeout));
  if (!found.ok()) {
    if (first) log() << "hangdx watch: " << found.status().message() << " (will retry)\n";
    store_error_ = found.status().message();
    return;
  }
  if (!store_read_ && !first) log() << "hangdx watch: the TCPStore " << opt_.store << " answers now\n";
  store_read_ = true;
  store_error_.clear();
  size_t added = 0;
  for (const auto& [rank, url] : *found) {
    if (rank < opt_.first_rank || prober_.Has(rank)) continue;
    auto e = ParseUrl(url);
    if (!e.ok()) {
      log() << "hangdx watch: the store gives rank " << rank << " the address '" << url << "': " << e.status().message()
            << "\n";
      continue;
    }
    prober_.SetWorker(rank, *e);
    std::lock_guard<std::mutex> lock(mu_);
    url_of_[rank] = url;
    ++added;
  }
  if (added && !first) log() << "hangdx watch: " << added << " more workers registered in the store\n";
}

// Reads one probe answer: its counters, and its member lists when its
// pg_config text was not seen before (every rank of a 10,000-rank job
// sends the same 10,000-number list of the default pg in every answer).
StatusOr<Progress> Watcher::ReadAnswer(std::string_view body) {
  std::string_view config;
  StatusOr<Progress> p = ParseProgress(body, false, &config);
  if (!p.ok() || config.empty()) return p;
  // Most answers repeat the last text: a compare (memcmp speed) is far
  // cheaper than hashing its 59 KB again for every answer.
  if (config != last_config_) {
    if (configs_seen_.size() > 100000) configs_seen_.clear();
    if (configs_seen_.insert(std::hash<std::string_view>{}(config)).second) p->members = ParseMembers(config);
    last_config_.assign(config);
  }
  return p;
}

// Takes rank `rank`'s answer of time `at` into the detector (mu_ held).
void Watcher::Observe(Rank rank, Clock::time_point at, const Progress& p, std::vector<RankRecord>* records) {
  for (const auto& [name, members] : p.members) {
    auto [it, fresh] = members_added_.try_emplace(PgIdOfName(name), 0);
    if (members.empty() || it->second >= members.size()) continue;  // this list was added already
    detector_.AddMembers(it->first, members);
    it->second = members.size();
  }
  detector_.Observe(rank, at, p.pgs);
  // Whether its counters are collective seqs travels with the record: a
  // coordinator, which never probes, may then take a first look from them.
  records->push_back({rank, prober_.Url(rank), FormatCompact(p.pgs), WallMs(at), WallMs(detector_.LastChange(rank)),
                      opt_.agent, prober_.CountsCollectives(rank)});
}

std::vector<Stall> Watcher::ProbeRound() {
  if (prober_.Ranks().empty()) return {};
  auto t0 = Clock::now();
  // Each answer is read and taken into the detector the moment it
  // arrives, at its own time (the counters in it held then; a round of
  // 10,000 takes a second or two), and its body dropped, so a round never
  // holds every body at once (10,000 ranks x 59 KB). The parse is outside
  // the lock (the service answers meanwhile).
  std::map<Rank, Status> unusable;  // 200 answers that are not a Flight Recorder dump
  std::vector<RankRecord> records;
  std::vector<Stall> stalls;
  bool judge = opt_.role != WatchOptions::Role::kAgent;
  auto digest = [&](Rank rank, std::string* body) {
    auto at = Clock::now();
    StatusOr<Progress> p = ReadAnswer(*body);
    body->clear();  // its buffer goes back to the fan-out for the next answers
    if (!p.ok()) {
      unusable.insert_or_assign(rank, p.status());
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    Observe(rank, at, *p, &records);
    // The answer that crosses stall-after declares the stall, not the
    // end of its round: the rest of the round is given up.
    if (judge && stalls.empty() && detector_.Due(at)) stalls = detector_.Check(at);
  };
  std::vector<ProbeReply> replies =
      prober_.Probe(opt_.fetch_timeout, digest, [&] { return !stalls.empty() || TimeUp(); });
  auto now = Clock::now();
  double round_s = Secs(now - t0);
  std::vector<double> latency;
  latency.reserve(replies.size());
  size_t ok = 0, failed = 0;
  std::vector<std::pair<Rank, std::string>> failures;  // first failures, to be said
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const ProbeReply& r : replies) {
      if (!r.ok && r.error == "not answered before the watch ended") continue;  // not the rank's doing
      latency.push_back(r.seconds);
      auto bad = unusable.find(r.rank);
      if (r.ok && bad == unusable.end()) {
        ++ok;
        continue;
      }
      Status why = r.ok ? bad->second : IoError(r.error);
      ++failed;
      detector_.Unanswered(r.rank, now);
      if (failure_said_.insert(r.rank).second) failures.emplace_back(r.rank, FailureWhy(r, why));
    }
    std::sort(latency.begin(), latency.end());
    auto quantile = [&](double q) {
      return latency.empty() ? 0.0 : latency[static_cast<size_t>(q * (latency.size() - 1))];
    };
    ++rounds_;
    last_ok_ = ok;
    last_failed_ = failed;
    last_round_s_ = round_s;
    last_p50_s_ = quantile(0.5);
    last_p99_s_ = quantile(0.99);
    observed_at_ = now;
  }
  SayFailures(failures);
  metrics_.Add("hangdx_probes_total", {}, static_cast<double>(latency.size()));
  metrics_.Add("hangdx_probe_failures_total", {}, static_cast<double>(failed));
  if (stalls.empty()) metrics_.Observe("hangdx_poll_duration_seconds", round_s);  // a cut round is no round's time
  if (auto st = store_->PutRanks(records); !st.ok()) log() << "hangdx watch: state store: " << st.message() << "\n";
  RecordHistory(round_s, ok, failed);
  return stalls;
}

// Each rank's first failure to give a usable answer, said once (a rank
// that never answers is named, not only counted): a line per rank when
// few, else a line per reason with the ranks it applies to.
void Watcher::SayFailures(const std::vector<std::pair<Rank, std::string>>& failures) {
  if (failures.size() <= 8) {
    for (const auto& [rank, why] : failures)
      log() << "hangdx watch: rank " << rank << " (" << prober_.Url(rank) << ") " << why
            << "; it counts as not answering\n";
    return;
  }
  std::map<std::string, std::vector<int64_t>> by_why;
  for (const auto& [rank, why] : failures) by_why[why].push_back(rank);
  size_t lines = 0, rest = 0;
  for (const auto& [why, ranks] : by_why) {
    if (++lines > 8) {
      rest += ranks.size();
      continue;
    }
    std::string which = FormatRanks(ranks);
    if (which.size() > 200) which = which.substr(0, which.rfind(',', 200)) + ",...";
    log() << "hangdx watch: " << Count(static_cast<int64_t>(ranks.size()), "worker", "workers") << " "
          << (why.rfind("does not answer", 0) == 0 ? "do not answer" + why.substr(15)
                                                   : "give unusable answers" + why.substr(22))
          << " (ranks " << which << ")\n";
  }
  if (rest)
    log() << "hangdx watch: and " << Count(static_cast<int64_t>(rest), "worker", "workers")
          << " more fail for other reasons\n";
}

void Watcher::ReadAgents() {
  auto t0 = Clock::now();
  auto records = store_->LoadRanks();
  if (!records.ok()) {
    log() << "hangdx watch: state store: " << records.status().message() << "\n";
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const RankRecord& r : *records) {
    std::vector<PgProgress> pgs;
    if (!r.url.empty() && prober_.Url(r.rank) != r.url) {
      url_of_[r.rank] = r.url;
      if (auto e = ParseUrl(r.url); e.ok()) prober_.SetWorker(r.rank, *e);
    }
    if (r.collectives) prober_.MarkNccl(r.rank);
    if (r.seen_ms > 0 && ParseCompact(r.progress, &pgs))
      detector_.Restore(r.rank, pgs, FromWallMs(r.changed_ms), FromWallMs(r.seen_ms));
  }
  last_ok_ = records->size();
  last_round_s_ = Secs(Clock::now() - t0);
}

void Watcher::RecordHistory(double round_s, size_t ok, size_t failed) {
  auto now = Clock::now();
  json line = {{"t_ms", WallMs(now)}, {"round_s", round_s}, {"answered", ok}, {"unanswered", failed}};
  json pgs = json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const PgState& s : detector_.Pgs(now)) {
    pgs.push_back({{"pg", s.pg},
                   {"members", s.members.size()},
                   {"min_completed", s.min_completed},
                   {"max_enqueued", s.max_enqueued},
                   {"behind", s.behind.size() <= 64 ? json(s.behind) : json(s.behind.size())},
                   {"stalled", s.stalled},
                   {"since_progress_s", Secs(now - s.last_change)}});
  }
  line["pgs"] = std::move(pgs);
  std::vector<Rank> silent = detector_.Silent(now);
  line["silent"] = silent.size() <= 64 ? json(silent) : json(silent.size());
  std::string text = line.dump();
  history_.push_back(text);
  while (history_.size() > 2000) history_.pop_front();
  if (auto st = store_->AppendHistory(text); !st.ok()) log() << "hangdx watch: state store: " << st.message() << "\n";
}

void Watcher::UpdateGauges() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = Clock::now();
  std::set<Rank> known;
  for (const auto& [r, u] : url_of_) known.insert(r);
  for (Rank r : board_.Ranks()) known.insert(r);
  metrics_.Set("hangdx_ranks", static_cast<double>(std::max(known.size(), detector_.ranks_seen())));
  metrics_.Set("hangdx_ranks_silent", static_cast<double>(detector_.Silent(now).size()));
  auto pgs = detector_.Pgs(now);
  metrics_.Set("hangdx_pgs", static_cast<double>(pgs.size()));
  metrics_.Set("hangdx_pgs_stalled",
               static_cast<double>(std::count_if(pgs.begin(), pgs.end(), [](const PgState& s) { return s.stalled; })));
}

int Watcher::Run() {
  using Role = WatchOptions::Role;
  started_ = Clock::now();
  if (opt_.duration.count() > 0) end_ = started_ + opt_.duration;
  auto next = started_;
  bool seen_any = false, silence_said = false;
  while (!stop_) {
    Discover(false);
    std::vector<Stall> stalls;  // declared by an answer in the middle of the round
    if (opt_.role == Role::kCoordinator)
      ReadAgents();
    else
      stalls = ProbeRound();
    if (TimeUp()) break;  // a round cut short proves nothing
    // Silence and progress are judged at the time of the last answers, not
    // after the time it took to read them (10,000 answers take a while).
    auto now = opt_.role == Role::kCoordinator || prober_.Ranks().empty() ? Clock::now() : observed_at_;
    if (opt_.role != Role::kAgent) {
      // A stall declared in the middle of the round is investigated first:
      // the Check over every rank below can wait for it.
      for (const Stall& s : stalls) {
        Investigate(s);
        if (exit_now_) return 1;
      }
      bool gone;
      {
        std::lock_guard<std::mutex> lock(mu_);
        stalls = detector_.Check(now);
        gone = detector_.JobGone(now);
        seen_any = seen_any || detector_.ranks_seen() > 0;
      }
      for (const Stall& s : stalls) {
        Investigate(s);
        if (exit_now_) return 1;
      }
      if (gone && seen_any && board_.Ranks().empty()) {
        log() << "hangdx watch: every rank has stopped answering for " << Secs(opt_.stall_after)
              << " s: the job has ended\n";
        break;
      }
      // Ranks that push are not asked: their silence may be a job that has
      // not started pushing again yet (a restart, a hook started late, a
      // network cut), and the service they push to must stay up for them
      // and for /status. So silence never ends a watch that ranks push to;
      // it is said once per episode (docs/live.md, section 3).
      if (gone && !board_.Ranks().empty() && !silence_said) {
        log() << "hangdx watch: every pushing rank has been silent for " << Secs(opt_.stall_after)
              << " s or more; the job may have ended or paused; the service stays up (--duration or SIGTERM ends "
                 "it)\n";
      }
      silence_said = gone && !board_.Ranks().empty();
    }
    UpdateGauges();
    if (TimeUp()) break;
    next += opt_.interval;
    if (next < Clock::now()) next = Clock::now();  // a round longer than the interval: no catching up
    while (!TimeUp() && Clock::now() < next && !StallMayBeDue())
      std::this_thread::sleep_for(std::min<Clock::duration>(next - Clock::now(), milliseconds(50)));
  }
  UpdateGauges();
  return NeverSeen() ? 2 : 0;
}

// True when a stall may be due now in a watch whose stalls no probe round
// declares (a coordinator, or one that only takes pushed reports): the
// loop then reads and checks at once instead of at the end of its
// interval, up to --interval late. A probing watch declares its stalls at
// the answer that crosses --stall-after (ProbeRound), and asking Due here
// would take that answer's turn. O(1) but when it may be due (Due).
bool Watcher::StallMayBeDue() {
  if (opt_.role == WatchOptions::Role::kAgent) return false;
  if (opt_.role != WatchOptions::Role::kCoordinator && !prober_.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return detector_.Due(Clock::now());
}

// True (and said why) when no rank ever answered or pushed: a watch that
// never saw the job must not end as "watched, no hang".
bool Watcher::NeverSeen() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (detector_.ranks_answered() > 0) return false;
  }
  char took[32];
  std::snprintf(took, sizeof took, "%.1f s", Secs(Clock::now() - started_));
  auto line = log();
  line << "hangdx watch: the job was never seen in " << took << ": ";
  size_t workers = prober_.Ranks().size();
  if (opt_.role == WatchOptions::Role::kCoordinator)
    line << "no agent wrote a rank's progress into " << store_->Describe();
  else if (!opt_.store.empty() && !store_read_)
    line << "the TCPStore " << opt_.store << " never answered (" << store_error_ << ")";
  else if (workers > 0)
    line << "none of its " << Count(static_cast<int64_t>(workers), "worker", "workers")
         << " answered usably (the reasons are above)";
  else if (!opt_.store.empty())
    line << "no rank registered a worker server in the TCPStore " << opt_.store << " (keys " << opt_.store_prefix
         << "/rank<N>: does the job call torch.distributed.debug.start_debug_server()?)";
  else
    // The address bound (":0" asks for a free port), as "listening on" said.
    line << "no rank pushed a report to "
         << (server_ ? opt_.listen.substr(0, opt_.listen.rfind(':')) + ":" + std::to_string(server_->port())
                     : opt_.listen);
  line << "; exit 2\n";
  return true;
}

namespace {

// A probed rank's wait state, written as nlohmann's dump(1) writes it one
// level down (docs/snapshot-format.md): a first look writes 10,000 of them,
// and building a DOM to dump took 0.2 s of it.
std::string ProbedWaitState(const std::vector<PgProgress>& last, int64_t waited_ms, int64_t stall_after_ms,
                            bool progress) {
  std::string op = "not in a collective";
  int64_t seq = -1;
  for (const PgProgress& p : last) {
    if (p.Unfinished()) {
      op = "pg " + p.pg + " op " + std::to_string(p.enqueued) + " enqueued, not completed";
      seq = p.enqueued;
      break;
    }
  }
  std::string s = "{\n  \"current_op\": " + json(op).dump();
  if (seq >= 0) s += ",\n  \"op_seq\": " + std::to_string(seq);
  if (progress) {
    std::map<std::string, const PgProgress*> by_pg;  // key order, as a json object has it
    for (const PgProgress& p : last) by_pg.emplace(p.pg, &p);
    s += ",\n  \"progress\": {";
    for (auto it = by_pg.begin(); it != by_pg.end(); ++it)
      s += std::string(it == by_pg.begin() ? "" : ",") + "\n   " + json(it->first).dump() +
           ": {\n    \"completed\": " + std::to_string(it->second->completed) +
           ",\n    \"enqueued\": " + std::to_string(it->second->enqueued) + "\n   }";
    s += by_pg.empty() ? "}" : "\n  }";
  }
  s += ",\n  \"stall_after_ms\": " + std::to_string(stall_after_ms) +
       ",\n  \"waited_ms\": " + std::to_string(waited_ms) + ",\n  \"waiting_for_ranks\": []\n }";
  return s;
}

}  // namespace

// The bundle's wait_state.json: per rank that gave its Flight Recorder, how
// long it has waited (since its counters last moved) against --stall-after
// (docs/snapshot-format.md, waited_ms and stall_after_ms). That is the time
// evidence a live dump lacks: `hangdx analyze` reads an in-flight op of a
// rank that waited past the threshold as hung. No waiting_for_ranks: who
// waits for whom is the Flight Recorder's to say. A wait state a rank
// pushed is kept, with the same two fields added. The ranks `by_progress`
// (a first look's others: first_look.h) get the same entry with their
// probed counters as "progress", which is all the analysis knows of them.
std::string Watcher::WaitStates(const std::vector<Rank>& with_fr, const std::vector<Rank>& by_progress) {
  auto now = Clock::now();
  using plain = nlohmann::json;  // key-sorted, as the text below is
  plain pushed = plain::parse(board_.WaitSnapshot().empty() ? "{}" : board_.WaitSnapshot(), nullptr, false);
  std::map<std::string, std::string> out;  // rank key -> its wait state's text, one level down
  std::lock_guard<std::mutex> lock(mu_);
  auto waited = [&](Rank r) { return std::chrono::duration_cast<milliseconds>(now - detector_.LastChange(r)).count(); };
  if (pushed.is_object())
    for (auto it = pushed.begin(); it != pushed.end(); ++it) {
      plain w = *it;
      if (!w.contains("waited_ms")) w["waited_ms"] = waited(std::stoll(it.key()));
      if (!w.contains("stall_after_ms")) w["stall_after_ms"] = opt_.stall_after.count();
      std::string text;
      for (char c : w.dump(1)) text += c == '\n' ? std::string("\n ") : std::string(1, c);
      out[it.key()] = std::move(text);
    }
  auto add = [&](Rank rank, bool progress) {
    std::string key = std::to_string(rank);
    if (out.count(key)) return;
    out[key] = ProbedWaitState(detector_.Last(rank), waited(rank), opt_.stall_after.count(), progress);
  };
  for (Rank rank : with_fr) add(rank, false);
  for (Rank rank : by_progress) add(rank, true);
  if (out.empty()) return "";
  std::string text = "{";
  for (const auto& [key, w] : out) text += (text.size() > 1 ? ",\n " : "\n ") + json(key).dump() + ": " + w;
  return text + "\n}\n";
}

// The ranks of `ranks` that push instead of serving and still report;
// those silent for --stall-after are said unanswered in `d` (no file in
// the bundle: the analysis sees a rank without a dump, as for a dead one).
std::vector<Rank> Watcher::PushingRanks(const std::vector<Rank>& ranks, Details* d) {
  std::set<Rank> silent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Rank r : detector_.Silent(Clock::now())) silent.insert(r);
  }
  std::set<Rank> pushed;
  for (Rank r : board_.Ranks()) pushed.insert(r);
  std::vector<Rank> live;
  for (Rank r : ranks) {
    if (prober_.Has(r) || !pushed.count(r)) continue;
    if (silent.count(r)) {
      d->unanswered[r] = "no report for " + std::to_string(static_cast<int>(Secs(opt_.stall_after))) + " s";
      continue;
    }
    live.push_back(r);
  }
  return live;
}

// The ranks of a stall that push instead of serving: their accumulated
// Flight Recorder, and stacks asked for in the answer to their next push.
Details Watcher::CollectPushed(const std::vector<Rank>& ranks) {
  Details d;
  std::vector<Rank> asked = PushingRanks(ranks, &d);
  board_.WantStacks(asked);
  auto deadline = Clock::now() + opt_.fetch_timeout;
  while (Clock::now() < deadline && !stop_) {
    bool waiting = std::any_of(asked.begin(), asked.end(), [this](Rank r) { return board_.Wants(r); });
    if (!waiting) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  for (Rank r : asked) {
    std::string fr = board_.FrJson(r);
    if (!fr.empty()) d.fr[r] = std::move(fr);
    std::string stacks = board_.Stacks(r);
    if (!stacks.empty()) d.stacks[r] = std::move(stacks);
  }
  return d;
}

// The records of `ranks` at hand, for a first look: the probed ones'
// fetched (prober_.Fetch: Flight Recorder and stacks, in one round trip),
// the pushing ones' as their reports add up now, without asking for their
// stacks: that waits for each rank's next report (an interval or more),
// and what decides a hang is in the Flight Recorder. A rank with neither
// is said unanswered.
Details Watcher::RecordsAtHand(const std::vector<Rank>& ranks) {
  std::vector<Rank> probed;
  for (Rank r : ranks)
    if (prober_.Has(r)) probed.push_back(r);
  Details d = prober_.Fetch(probed, opt_.fetch_timeout);
  for (Rank r : PushingRanks(ranks, &d)) {
    std::string fr = board_.FrJson(r);
    if (!fr.empty()) d.fr[r] = std::move(fr);
  }
  SayWithout(ranks, &d);
  return d;
}

// Says in `d` why a rank of `ranks` gave no record when nothing else did.
void Watcher::SayWithout(const std::vector<Rank>& ranks, Details* d) const {
  const char* why = board_.Ranks().empty() ? "no worker address (not registered in the store)"
                                           : "no worker address and no pushed report";
  for (Rank r : ranks)
    if (!d->fr.count(r) && !d->unanswered.count(r)) d->unanswered[r] = why;
}

// Every record of `ranks`, stacks included: the probed ones fetched, the
// pushing ones asked for their stacks and waited for (CollectPushed).
Details Watcher::AllRecords(const std::vector<Rank>& ranks) {
  std::vector<Rank> probed;
  for (Rank r : ranks)
    if (prober_.Has(r)) probed.push_back(r);
  Details d = prober_.Fetch(probed, opt_.fetch_timeout);
  Details pushed = CollectPushed(ranks);
  d.fr.merge(pushed.fr);
  d.stacks.merge(pushed.stacks);
  d.unanswered.merge(pushed.unanswered);
  SayWithout(ranks, &d);
  return d;
}

namespace {

std::vector<Rank> KeysOf(const std::map<Rank, std::string>& m) {
  std::vector<Rank> keys;
  keys.reserve(m.size());
  for (const auto& [r, text] : m) keys.push_back(r);
  return keys;
}

// True when some Flight Recorder answer records a P2P op: then a rank's
// counters may count P2P ops too, and the ranks cannot stand in by them.
bool AnyP2p(const std::map<Rank, std::string>& fr) {
  for (const auto& [r, text] : fr)
    if (text.find("\"is_p2p\":true") != std::string::npos || text.find("\"is_p2p\": true") != std::string::npos)
      return true;
  return false;
}

// The fingerprints of a diagnosis's hang findings (what Report reports).
std::set<std::string> HangPrints(const analyze::Diagnosis& d) {
  std::set<std::string> out;
  for (const auto& f : d.findings)
    if (f.hang && f.severity == analyze::Severity::kError) out.insert(Fingerprint(f));
  return out;
}

std::string JoinPrints(const std::set<std::string>& prints) {
  std::string s;
  for (const auto& p : prints) s += (s.empty() ? "" : "; ") + p;
  return s.empty() ? "no hang" : s;
}

}  // namespace

// The ranks to fetch first (first_look.h), or none: every rank at once.
// Only when the counters of every rank of the stall are the collective
// seqs its entries carry: probed through NCCL's dump (for a coordinator,
// by its agent), or pushed with entries that agree (PushBoard).
std::vector<Rank> Watcher::FirstRanks(const Stall& stall) {
  for (Rank r : stall.ranks)
    if (prober_.Has(r) ? !prober_.CountsCollectives(r) : !board_.CountsCollectives(r)) return {};
  std::map<Rank, std::vector<PgProgress>> last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Rank r : stall.ranks) last[r] = detector_.Last(r);
  }
  return FirstLook(stall,
                   [&](Rank r) -> const std::vector<PgProgress>* {
                     auto it = last.find(r);
                     return it == last.end() ? nullptr : &it->second;
                   },
                   {});
}

// The bundle's contents for `stall` from `d`; `by_progress` ranks enter by
// their counters (WaitStates).
Evidence Watcher::EvidenceOf(const Stall& stall, Details d, const std::vector<Rank>& by_progress,
                             Clock::time_point now) {
  Evidence e;
  e.fr = std::move(d.fr);
  e.stacks = std::move(d.stacks);
  e.unanswered = d.unanswered;
  e.wait_snapshot = WaitStates(KeysOf(e.fr), by_progress);
  json unanswered = json::object();
  for (const auto& [r, why] : d.unanswered) unanswered[std::to_string(r)] = why;
  json trigger = {{"reason", stall.reason == Stall::Reason::kSilentRank ? "silent_rank" : "no_progress"},
                  {"key", stall.key},
                  {"pgs", stall.pgs},
                  {"ranks", stall.ranks.size()},
                  {"behind", stall.behind},
                  {"silent", stall.silent},
                  {"seconds_without_progress", Secs(now - stall.since)},
                  {"stall_after_s", Secs(opt_.stall_after)},
                  {"world_size", opt_.world_size},
                  {"detected_at", UtcStamp(false)},
                  {"unanswered", unanswered}};
  if (!by_progress.empty()) trigger["by_progress"] = by_progress.size();
  e.stall_json = trigger.dump(1);
  std::lock_guard<std::mutex> lock(mu_);
  size_t keep = std::min<size_t>(history_.size(), 500);
  e.history.assign(history_.end() - static_cast<std::ptrdiff_t>(keep), history_.end());
  return e;
}

// The analysis of `hangdx analyze` on `bundle`, nothing more: the time
// evidence (how long each rank has waited, against --stall-after) is in
// the bundle's wait_state.json, so the replay needs no flag but the world
// size (when the highest ranks left no file, as for analyze). Writes its
// reports into the bundle's .watch/ as `name`.txt and .json.
StatusOr<analyze::Diagnosis> Watcher::Analyse(const std::string& bundle, const std::string& name, std::string* replay) {
  pipeline::PipelineOptions p;
  int64_t world = opt_.world_size > 0 ? opt_.world_size : pushed_world_size_.load();
  if (world > 0) p.load.world_size = world;
  *replay = "hangdx analyze " + bundle + (world > 0 ? " --world-size " + std::to_string(world) : "");
  auto diagnosis = pipeline::Diagnose({bundle}, p);
  if (!diagnosis.ok()) {
    log() << "hangdx watch: analysis failed: " << diagnosis.status().message() << "\n";
    return diagnosis;
  }
  for (const char* format : {"text", "json"}) {
    auto text = pipeline::Render(*diagnosis, format);
    if (text.ok())
      (void)WriteTextFile(bundle + "/.watch/" + name + "." + (std::string(format) == "text" ? "txt" : "json"), *text);
  }
  return diagnosis;
}

void Watcher::Investigate(const Stall& stall) {
  auto marked = store_->MarkStall(stall.key);
  if (marked.ok() && !*marked) return;  // a previous watch analysed this episode
  metrics_.Add("hangdx_stalls_total");
  auto now = Clock::now();
  std::string pgs;
  for (const auto& pg : stall.pgs) pgs += (pgs.empty() ? "" : ", ") + pg;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", Secs(now - stall.since));
  std::vector<Rank> first = FirstRanks(stall);
  // Ranks that push take a first look too, whatever the stall's size:
  // their Flight Recorder is on the board already, and only their stacks
  // would have to wait for their next report.
  std::vector<Rank> pushing;
  {
    Details ignored;
    pushing = PushingRanks(stall.ranks, &ignored);
  }
  log() << "hangdx watch: stall: "
        << (stall.reason == Stall::Reason::kSilentRank ? "rank " + Ranks(stall.silent) + " has not answered for "
                                                       : "pg " + pgs + " has not progressed for ")
        << seconds << (stall.behind.empty() ? "" : "; least progressed: rank " + Ranks(stall.behind))
        << "; fetching details from "
        << (first.empty() ? Count(static_cast<int64_t>(stall.ranks.size()), "rank", "ranks")
                          : std::to_string(first.size()) + " of its " + std::to_string(stall.ranks.size()) +
                                " ranks first (the least progressed, and " +
                                std::to_string(FirstLookOptions{}.per_class) + " of each progress class)")
        << "\n";
  if (!first.empty() || !pushing.empty()) {
    InvestigateInTwoSteps(stall, first.empty() ? stall.ranks : first, now);
    return;
  }
  auto t_fetch = Clock::now();
  Details d = AllRecords(stall.ranks);
  Evidence e = EvidenceOf(stall, std::move(d), {}, now);
  auto t_bundle = Clock::now();
  auto bundle = WriteBundle(opt_.out_dir, "stall-" + UtcStamp(true), e);
  if (!bundle.ok()) {
    log() << "hangdx watch: cannot write the evidence bundle: " << bundle.status().message() << "\n";
    return;
  }
  auto t_analysis = Clock::now();
  double cpu0 = ThreadCpuSecs();
  std::string replay;
  auto diagnosis = Analyse(*bundle, "report", &replay);
  auto t_done = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_investigation_ = {{"details_s", Secs(t_bundle - t_fetch)},
                           {"bundle_s", Secs(t_analysis - t_bundle)},
                           {"analysis_s", Secs(t_done - t_analysis)},
                           {"ranks", stall.ranks.size()}};
  }
  log() << "hangdx watch: details of " << stall.ranks.size() << " ranks in " << Secs(t_bundle - t_fetch)
        << " s, bundle in " << Secs(t_analysis - t_bundle) << " s, analysis in " << Secs(t_done - t_analysis) << " s"
        << CpuWords(cpu0) << "\n";
  if (diagnosis.ok()) Report(stall, *diagnosis, *bundle, replay);
}

// A stall in two steps (docs/live.md, 4a): a first look, reported at
// once, then every record, analysed again. The first look is `first`'s
// records at hand (RecordsAtHand: the pushing ranks' without their stacks)
// and the stall's other ranks by their counters (a large stall:
// first_look.h); then the other ranks' records and the pushing ranks'
// stacks complete the bundle (CompleteBundle), so that the bundle is the
// whole evidence and `hangdx analyze BUNDLE` is the finding's replay. A
// finding the whole evidence changes or adds is reported then, and said.
void Watcher::InvestigateInTwoSteps(const Stall& stall, const std::vector<Rank>& first, Clock::time_point now) {
  auto t_fetch = Clock::now();
  Details d = RecordsAtHand(first);
  std::set<Rank> fetched(first.begin(), first.end());
  std::vector<Rank> rest;
  for (Rank r : stall.ranks)
    if (!fetched.count(r)) rest.push_back(r);
  if (!rest.empty() && AnyP2p(d.fr)) {
    log() << "hangdx watch: the first look records P2P ops, which the counters count too: fetching the other "
          << rest.size() << " ranks before the analysis\n";
    Details more = RecordsAtHand(rest);
    d.fr.merge(more.fr);
    d.stacks.merge(more.stacks);
    d.unanswered.merge(more.unanswered);
    rest.clear();
  }
  // The second step: the ranks by their counters, and those whose stacks
  // are still to come (pushing ranks: asked in the answer to their next
  // report).
  std::vector<Rank> second = rest;
  {
    Details ignored;
    for (Rank r : PushingRanks(first, &ignored))
      if (d.fr.count(r)) second.push_back(r);
    std::sort(second.begin(), second.end());
  }
  // A rank that does not answer is a rank without records, as in the whole
  // path; the others stand in by their counters.
  Evidence e = EvidenceOf(stall, std::move(d), rest, now);
  auto t_bundle = Clock::now();
  auto bundle = WriteBundle(opt_.out_dir, "stall-" + UtcStamp(true), e);
  if (!bundle.ok()) {
    log() << "hangdx watch: cannot write the evidence bundle: " << bundle.status().message() << "\n";
    return;
  }
  auto t_analysis = Clock::now();
  double cpu0 = ThreadCpuSecs();
  std::string replay;
  auto quick = Analyse(*bundle, second.empty() ? "report" : "first_report", &replay);
  auto t_done = Clock::now();
  log() << "hangdx watch: first look: details of " << first.size() << " ranks in " << Secs(t_bundle - t_fetch)
        << " s (the other " << rest.size() << " by their progress"
        << (second.size() > rest.size()
                ? ", the stacks of " + std::to_string(second.size() - rest.size()) + " pushing ranks after"
                : "")
        << "), bundle in " << Secs(t_analysis - t_bundle) << " s, analysis in " << Secs(t_done - t_analysis) << " s"
        << CpuWords(cpu0) << "\n";
  if (quick.ok()) Report(stall, *quick, *bundle, replay);
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_investigation_ = {{"first_look_ranks", first.size()},
                           {"details_s", Secs(t_bundle - t_fetch)},
                           {"bundle_s", Secs(t_analysis - t_bundle)},
                           {"analysis_s", Secs(t_done - t_analysis)},
                           {"ranks", stall.ranks.size()}};
  }
  if (second.empty()) return;  // it was the whole evidence
  CompleteBundle(stall, *bundle, std::move(e), rest, second, quick.ok() ? HangPrints(*quick) : std::set<std::string>{});
}

// The second step of InvestigateInTwoSteps: every record of `second` (the
// ranks of `rest`, which the first look knew by their counters, and the
// pushing ranks whose stacks were still to come) into the first look's
// `bundle`, whose evidence `e` was; analysed again and compared with the
// first look's hang findings `was`.
void Watcher::CompleteBundle(const Stall& stall, const std::string& bundle, Evidence e, const std::vector<Rank>& rest,
                             const std::vector<Rank>& second, const std::set<std::string>& was) {
  auto t2_fetch = Clock::now();
  Details more = AllRecords(second);
  for (const auto& [r, why] : e.unanswered) more.unanswered.try_emplace(r, why);
  std::vector<Rank> with_fr = KeysOf(e.fr), still;
  for (Rank r : rest) (more.fr.count(r) ? with_fr : still).push_back(r);
  Evidence all;
  all.fr = std::move(more.fr);
  all.stacks = std::move(more.stacks);
  all.unanswered = more.unanswered;
  all.history = std::move(e.history);
  json trigger = json::parse(e.stall_json);
  json unanswered = json::object();
  for (const auto& [r, why] : more.unanswered) unanswered[std::to_string(r)] = why;
  trigger["unanswered"] = unanswered;
  trigger.erase("by_progress");
  all.stall_json = trigger.dump(1);
  // Ranks that answered the probe and not this: known by their counters still.
  std::sort(with_fr.begin(), with_fr.end());
  all.wait_snapshot = WaitStates(with_fr, still);
  auto t2_bundle = Clock::now();
  if (auto st = WriteInto(bundle, all); !st.ok()) {
    log() << "hangdx watch: cannot complete the evidence bundle: " << st.message() << "\n";
    return;
  }
  all.fr.clear();
  all.stacks.clear();
  auto t2_analysis = Clock::now();
  std::string replay;
  auto whole = Analyse(bundle, "report", &replay);
  auto t2_done = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_investigation_["whole_details_s"] = Secs(t2_bundle - t2_fetch);
    last_investigation_["whole_bundle_s"] = Secs(t2_analysis - t2_bundle);
    last_investigation_["whole_analysis_s"] = Secs(t2_done - t2_analysis);
  }
  if (!whole.ok()) return;
  std::set<std::string> now_prints = HangPrints(*whole);
  auto line = log();
  line << "hangdx watch: every rank's records: details of " << second.size()
       << (second.size() > rest.size() ? " ranks (with the pushing ranks' stacks)" : " more ranks") << " in "
       << Secs(t2_bundle - t2_fetch) << " s, bundle in " << Secs(t2_analysis - t2_bundle) << " s, analysis in "
       << Secs(t2_done - t2_analysis) << " s: ";
  if (was == now_prints) {
    line << "the same finding (" << JoinPrints(now_prints) << ")\n";
    return;
  }
  line << "the finding changes: " << JoinPrints(was) << " -> " << JoinPrints(now_prints) << "\n";
  Report(stall, *whole, bundle, replay);
}

bool Watcher::Report(const Stall& stall, const analyze::Diagnosis& d, const std::string& bundle,
                     const std::string& replay) {
  std::vector<const analyze::Finding*> hangs;
  for (const auto& f : d.findings)
    if (f.hang && f.severity == analyze::Severity::kError) hangs.push_back(&f);
  if (hangs.empty()) {
    log() << "hangdx watch: the analysis finds no hang: " << d.verdict << " (bundle " << bundle << ")\n";
    return false;
  }
  auto now = Clock::now();
  double detection_s = Secs(now - stall.since);
  json doc = report::ToJson(d);
  std::vector<json> fresh;
  for (const analyze::Finding* f : hangs) {
    std::string fp = Fingerprint(*f);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!found_.insert(fp).second) continue;
    }
    json record = {
        {"fingerprint", fp},
        {"found_at", UtcStamp(false)},
        {"detection_seconds", detection_s},
        {"job", opt_.job},
        {"bundle", bundle},
        {"replay", replay},
        {"stall", {{"pgs", stall.pgs}, {"silent", stall.silent}, {"behind", stall.behind}, {"key", stall.key}}},
        {"finding", report::FindingToJson(*f)},
        {"report", doc}};
    auto added = store_->AddFinding(fp, record.dump());
    if (added.ok() && !*added) continue;  // a previous watch reported it
    metrics_.Add("hangdx_findings_total", {{"kind", analyze::KindName(f->kind)}});
    fresh.push_back(std::move(record));
  }
  if (fresh.empty()) {
    log() << "hangdx watch: the same finding as reported before; not repeated\n";
    return false;
  }
  metrics_.Set("hangdx_stall_detection_seconds", detection_s);
  auto rendered = pipeline::Render(d, opt_.format);
  std::ostream& out = opt_.out ? *opt_.out : std::cout;
  if (rendered.ok()) out << *rendered << std::flush;
  const json& first = fresh.front()["finding"];
  log() << "hangdx watch: FINDING " << first["kind"].get<std::string>() << " (culprit rank "
        << Ranks(first["culprit_ranks"].get<std::vector<Rank>>()) << ") " << detection_s
        << " s after the last progress; evidence: " << bundle << "; replay: " << replay << "\n";
  RunHooks(fresh.front().dump());
  if (opt_.exit_on_finding) exit_now_ = true;
  return true;
}

void Watcher::RunHooks(const std::string& record_json) {
  if (opt_.hook_command.empty() && opt_.webhook.empty()) return;
  std::lock_guard<std::mutex> lock(hooks_mu_);
  hooks_.emplace_back([this, record_json] {
    json record = json::parse(record_json);
    if (!opt_.hook_command.empty()) {
      auto rc = RunHookCommand(opt_.hook_command, record, milliseconds(60000));
      if (!rc.ok())
        log() << "hangdx watch: hook: " << rc.status().message() << "\n";
      else if (*rc != 0)
        log() << "hangdx watch: hook exited with " << *rc << "\n";
    }
    if (!opt_.webhook.empty()) {
      auto st = PostWebhook(opt_.webhook, record, opt_.job, milliseconds(10000));
      if (!st.ok()) log() << "hangdx watch: " << st.message() << "\n";
    }
  });
}

HttpResponse Watcher::Handle(const HttpRequest& req) {
  HttpResponse res = Route(req);
  std::string reason = HttpServer::RejectReason(res.status);
  if (!reason.empty()) metrics_.Add("hangdx_reports_rejected_total", {{"reason", reason}});
  return res;
}

HttpResponse Watcher::Route(const HttpRequest& req) {
  if (!opt_.token.empty() && !SameToken(req.Header("Authorization"), "Bearer " + opt_.token))
    return JsonResponse(401, {{"error", "missing or wrong token (Authorization: Bearer TOKEN)"}});
  if (req.method == "POST" && (req.path == "/v1/report" || req.path == "/report")) return HandleReport(req);
  if (req.method == "GET" && req.path == "/findings") return Findings();
  if (req.method == "GET" && req.path == "/status") return Status_();
  if (req.method == "GET" && req.path == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Render()};
  if (req.method == "GET" && req.path == "/healthz") return {200, "text/plain", "ok\n"};
  return JsonResponse(
      404, {{"error", "no such endpoint: " + req.method + " " + req.path},
            {"endpoints", {"POST /v1/report", "GET /findings", "GET /status", "GET /metrics", "GET /healthz"}}});
}

HttpResponse Watcher::HandleReport(const HttpRequest& req) {
  if (req.body.size() > opt_.max_report_bytes)
    return JsonResponse(413, {{"error", "report over " + std::to_string(opt_.max_report_bytes) + " bytes"}});
  auto reports = ParseReport(req.body, 100000);
  if (!reports.ok()) return JsonResponse(400, {{"error", reports.status().message()}});
  bool want = false, duplicate = false;
  for (const PushReport& r : *reports) {
    std::string raw = reports->size() == 1 ? req.body : json{{std::to_string(r.rank), *r.wait}}.dump();
    // Taken in, then stored with the rank's new record in one write, and
    // only then acknowledged: a report answered 200 survives a watch killed
    // right after (--redis). One that could not be stored is answered 503
    // and sent again; the board then knows it and the resend is stored
    // only (a duplicate).
    std::optional<RankRecord> record;
    if (board_.Apply(r)) {
      auto now = Clock::now();
      std::vector<PgProgress> pgs = board_.ProgressOf(r.rank);
      bool config = r.fr && r.fr->contains("pg_config");
      std::lock_guard<std::mutex> lock(mu_);
      // Member lists when they come (torch's 10,000-rank list is 59 KB),
      // or from the board a resumed watch rebuilt, once per rank.
      if (config || members_from_.insert(r.rank).second)
        for (const auto& [name, members] : board_.MembersOf(r.rank))
          if (!members.empty()) detector_.AddMembers(PgIdOfName(name), members);
      detector_.Observe(r.rank, now, pgs);
      record =
          RankRecord{r.rank, "", FormatCompact(pgs), WallMs(now), WallMs(detector_.LastChange(r.rank)), opt_.agent};
    } else {
      duplicate = true;
    }
    if (auto st = store_->AppendReport(r.rank, raw, record); !st.ok())
      return JsonResponse(503, {{"error", "cannot store the report: " + st.message()}});
    if (!record) continue;
    metrics_.Add("hangdx_reports_total");
    want = want || board_.Wants(r.rank);
    if (r.world_size > 0 && r.world_size <= (int64_t{1} << 24)) {
      int64_t seen = pushed_world_size_.load();
      while (r.world_size > seen && !pushed_world_size_.compare_exchange_weak(seen, r.world_size)) {
      }
      NoteWorldPushed(r.rank, r.world_size);
    }
  }
  json answer = {{"ok", true}};
  if (duplicate) answer["duplicate"] = true;
  if (want) answer["want"] = json::array({"stacks"});
  return JsonResponse(200, answer);
}

// Ranks of one job push one world size; two sizes mean two jobs sharing
// a watch (a wrong --listen address in one of them) or a rank restarted
// with another size. The largest is used; each new disagreeing size is
// logged once and /status lists them, so the mix is not silent.
void Watcher::NoteWorldPushed(Rank rank, int64_t world) {
  std::string others;
  int64_t largest = world;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (worlds_pushed_.count(world)) return;
    if (worlds_pushed_.size() == 8) {
      ++worlds_pushed_more_;
      return;
    }
    worlds_pushed_.insert(world);
    if (worlds_pushed_.size() < 2) return;
    for (int64_t w : worlds_pushed_)
      if (w != world) others += (others.empty() ? "" : ", ") + std::to_string(w);
    largest = *worlds_pushed_.rbegin();
  }
  log() << "hangdx watch: rank " << rank << " reports a world of " << world << " ranks, other ranks " << others
        << ": two jobs pushing to one watch? The largest, " << largest << ", is used\n";
}

HttpResponse Watcher::Findings() const {
  auto records = store_->LoadFindings();
  if (!records.ok()) return JsonResponse(503, {{"error", records.status().message()}});
  json list = json::array();
  for (const auto& r : *records) {
    json j = json::parse(r, nullptr, false);
    if (!j.is_discarded()) list.push_back(std::move(j));
  }
  return JsonResponse(200, {{"findings", std::move(list)}});
}

HttpResponse Watcher::Status_() const {
  auto now = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  const char* role = opt_.role == WatchOptions::Role::kAgent         ? "agent"
                     : opt_.role == WatchOptions::Role::kCoordinator ? "coordinator"
                                                                     : "standalone";
  std::vector<Rank> silent = detector_.Silent(now);
  json pgs = json::array();
  for (const PgState& s : detector_.Pgs(now)) {
    pgs.push_back({{"pg", s.pg},
                   {"members", s.members.size()},
                   {"min_completed", s.min_completed},
                   {"max_completed", s.max_completed},
                   {"max_enqueued", s.max_enqueued},
                   {"behind", s.behind.size() <= 1000 ? json(s.behind) : json(s.behind.size())},
                   {"unfinished", s.unfinished},
                   {"stalled", s.stalled},
                   {"seconds_since_progress", Secs(now - s.last_change)}});
  }
  std::set<Rank> known;
  for (const auto& [r, u] : url_of_) known.insert(r);
  for (Rank r : board_.Ranks()) known.insert(r);
  json j = {{"role", role},
            {"job", opt_.job},
            {"uptime_s", Secs(now - started_)},
            {"world_size", opt_.world_size > 0 ? opt_.world_size : pushed_world_size_.load()},
            {"world_size_from", opt_.world_size > 0           ? "--world-size"
                                : pushed_world_size_.load() > 0 ? "reports"
                                                                : "unknown"},
            {"ranks", std::max(known.size(), detector_.ranks_seen())},
            {"ranks_seen", detector_.ranks_seen()},
            {"ranks_silent", silent.size() <= 1000 ? json(silent) : json(silent.size())},
            {"last_round",
             {{"seconds", last_round_s_},
              {"answered", last_ok_},
              {"unanswered", last_failed_},
              {"latency_p50_s", last_p50_s_},
              {"latency_p99_s", last_p99_s_}}},
            {"last_investigation", last_investigation_},
            {"pgs", std::move(pgs)},
            {"findings", found_.size()},
            {"state", store_->Describe()}};
  if (worlds_pushed_.size() > 1) {
    j["world_sizes_pushed"] = json(std::vector<int64_t>(worlds_pushed_.begin(), worlds_pushed_.end()));
    if (worlds_pushed_more_) j["world_sizes_pushed_more"] = worlds_pushed_more_;
  }
  return JsonResponse(200, j);
}

}  // namespace hangdx::live
