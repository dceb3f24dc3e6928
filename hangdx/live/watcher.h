// hangdx/live/watcher.h
// Watcher: the engine of `hangdx watch`. It keeps a running job's wait
// state in view and names a hang within seconds of it happening:
//
//  1. finds the workers: from the job's TCPStore (keys debug_server/rank<N>
//     that torch.distributed.debug.start_debug_server() writes), from a
//     list of URLs, or from the ranks that push reports to its service;
//  2. every `interval`, probes each worker's progress (per pg, the last
//     enqueued / completed seq: prober.h) and feeds a StallDetector;
//  3. on a stall (a pg with an unfinished seq and no member advancing for
//     `stall_after`, or a rank silent that long while others answer),
//     fetches the full Flight Recorder and dump_traceback of the ranks
//     involved, writes an evidence bundle (bundle.h) and runs on it the
//     analysis of `hangdx analyze` (pipeline::Diagnose), which is what
//     makes `hangdx analyze BUNDLE` give the same finding;
//  4. reports each hang finding once: the analyze report on `out` (text or
//     the JSON document), the record in the state store, the hook.
//
// Roles: standalone (all of it), agent (1-2 for the ranks of one node, into
// the Redis state store), coordinator (3-4 from what the agents wrote).
//
//   WatchOptions o;
//   o.workers = {{0, "http://node0:41873"}, {1, "http://node1:40011"}};
//   Watcher w(o);
//   HANGDX_RETURN_IF_ERROR(w.Start());
//   int code = w.Run();  // 0 nothing found, 1 a finding (with exit_on_finding), 2 failure
//
// Run() is one thread; Handle() (the HTTP service) may be called from
// others at the same time; Stop() from anywhere (a signal thread).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "hangdx/analyze/diagnosis.h"
#include "hangdx/base/status.h"
#include "hangdx/live/bundle.h"
#include "hangdx/live/http_server.h"
#include "hangdx/live/metrics.h"
#include "hangdx/live/prober.h"
#include "hangdx/live/push.h"
#include "hangdx/live/stall_detector.h"
#include "hangdx/live/state_store.h"

namespace hangdx::live {

struct WatchOptions {
  enum class Role { kStandalone, kAgent, kCoordinator };
  Role role = Role::kStandalone;

  // Workers: a TCPStore "HOST:PORT" with the world size, and/or URLs.
  std::string store;
  int64_t world_size = -1;
  std::string store_prefix = "debug_server";
  std::map<Rank, std::string> workers;
  Rank first_rank = 0, last_rank = -1;  // only these ranks (an agent's node); -1: no bound

  std::chrono::milliseconds interval{2000}, stall_after{30000}, fetch_timeout{5000};
  std::chrono::milliseconds duration{0};  // 0: until stopped
  // A worker's answer over this is unusable (the request fails and the
  // rank counts as not answering): an endless body costs no more.
  size_t max_answer_bytes = size_t{64} << 20;

  std::string out_dir = "hangdx-watch";  // evidence bundles go under it
  std::string format = "text";           // of the reports on `out`: "text" or "json"
  bool exit_on_finding = false;
  std::string hook_command, webhook;

  // The service: pushed reports, /findings, /status, /metrics.
  std::string listen;  // "HOST:PORT"; "" for none
  std::string token;   // required as "Authorization: Bearer TOKEN" when not ""
  size_t max_report_bytes = size_t{16} << 20;

  std::string redis;  // "redis://HOST:PORT[/DB]"; "" keeps state in memory
  std::string job = "default";
  std::string agent;  // this agent's name (the host name by default)

  std::ostream* out = nullptr;  // reports (default std::cout)
  std::ostream* log = nullptr;  // progress lines (default std::cerr)
};

class Watcher {
 public:
  explicit Watcher(WatchOptions options);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // Opens the state store (resuming what it holds), starts the service and
  // reads the workers list. Errors: kInvalidArgument (bad options), kIo
  // (the store, the listen address, the TCPStore unreachable).
  Status Start();
  // Watches until `duration`, Stop(), a finding with exit_on_finding, or
  // the end of the job (every probed rank silent for stall_after; never
  // when ranks push: docs/live.md, section 3). Returns the exit code: 0
  // nothing found (or findings without exit_on_finding), 1 a hang found
  // with exit_on_finding, 2 the job was never seen (no worker answered, no
  // rank pushed, the TCPStore never answered; the reason is logged).
  int Run();
  void Stop() { stop_ = true; }

  // The HTTP service, as a plain function: POST /v1/report, GET /findings,
  // /status, /metrics, /healthz.
  HttpResponse Handle(const HttpRequest& request);
  // The bound service port (0 without --listen).
  int port() const { return server_ ? server_->port() : 0; }
  const Metrics& metrics() const { return metrics_; }

 private:
  void Discover(bool first);
  // One probe of every worker; returns the stalls declared by an answer
  // in the middle of the round (the round then ends there).
  std::vector<Stall> ProbeRound();
  StatusOr<Progress> ReadAnswer(std::string_view body);
  void Observe(Rank rank, Clock::time_point at, const Progress& p, std::vector<RankRecord>* records);
  void SayFailures(const std::vector<std::pair<Rank, std::string>>& failures);
  bool TimeUp() const { return stop_ || Clock::now() >= end_; }
  bool NeverSeen();
  void ReadAgents();
  void Investigate(const Stall& stall);
  void InvestigateInTwoSteps(const Stall& stall, const std::vector<Rank>& first, Clock::time_point now);
  void CompleteBundle(const Stall& stall, const std::string& bundle, Evidence e, const std::vector<Rank>& rest,
                      const std::vector<Rank>& second, const std::set<std::string>& was);
  std::vector<Rank> FirstRanks(const Stall& stall);
  Evidence EvidenceOf(const Stall& stall, Details d, const std::vector<Rank>& by_progress, Clock::time_point now);
  StatusOr<analyze::Diagnosis> Analyse(const std::string& bundle, const std::string& name, std::string* replay);
  std::vector<Rank> PushingRanks(const std::vector<Rank>& ranks, Details* d);
  Details CollectPushed(const std::vector<Rank>& ranks);
  Details RecordsAtHand(const std::vector<Rank>& ranks);
  Details AllRecords(const std::vector<Rank>& ranks);
  void SayWithout(const std::vector<Rank>& ranks, Details* d) const;
  bool StallMayBeDue();
  std::string WaitStates(const std::vector<Rank>& with_fr, const std::vector<Rank>& by_progress);
  bool Report(const Stall& stall, const analyze::Diagnosis& d, const std::string& bundle, const std::string& replay);
  void RecordHistory(double round_s, size_t ok, size_t failed);
  void UpdateGauges();
  Status Resume();
  HttpResponse Route(const HttpRequest& request);
  HttpResponse HandleReport(const HttpRequest& request);
  HttpResponse Status_() const;
  HttpResponse Findings() const;
  // Notes that `rank` pushed world size `world` (1 .. 2^24); logs a size
  // that disagrees with those pushed before. Takes mu_.
  void NoteWorldPushed(Rank rank, int64_t world);
  void RunHooks(const std::string& record_json);
  int64_t WallMs(Clock::time_point t) const;
  Clock::time_point FromWallMs(int64_t ms) const;
  // One log line: collected, then written whole under a lock (hooks log
  // from their own threads).
  class LogLine {
   public:
    LogLine(std::ostream* out, std::mutex* mu) : out_(out), mu_(mu) {}
    LogLine(LogLine&&) = default;
    ~LogLine();
    template <typename T>
    LogLine& operator<<(const T& v) {
      buf_ << v;
      return *this;
    }

   private:
    std::ostringstream buf_;
    std::ostream* out_;
    std::mutex* mu_;
  };
  LogLine log() const;

  WatchOptions opt_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<HttpServer> server_;
  Prober prober_;
  PushBoard board_;
  Metrics metrics_;
  mutable std::mutex mu_;  // guards detector_, history_, url_of_, found_ and the counters below
  StallDetector detector_;
  std::deque<std::string> history_;
  std::map<Rank, std::string> url_of_;                // every known worker address (coordinator: from the agents)
  std::set<std::string> found_;                       // fingerprints reported
  std::unordered_set<size_t> configs_seen_;           // hashes of the pg_config texts parsed (probe thread only)
  std::string last_config_;                           // the last pg_config text seen (probe thread only)
  Clock::time_point observed_at_;                     // when the last probe round's answers came
  std::map<std::string, size_t> members_added_;       // pg id -> size of the largest member list added
  std::unordered_set<Rank> members_from_;             // pushing ranks whose member lists were added
  std::set<Rank> failure_said_;                       // ranks whose failure to answer was logged (probe thread only)
  std::string store_error_;                           // why the TCPStore did not answer, "" once it did
  bool store_read_ = false;                           // the TCPStore answered once
  Clock::time_point end_ = Clock::time_point::max();  // --duration
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> pushed_world_size_{-1};  // the largest world size a pushing rank sent
  std::set<int64_t> worlds_pushed_;             // the distinct world sizes pushed, at most 8 (guarded by mu_)
  int64_t worlds_pushed_more_ = 0;              // reports naming a ninth or later distinct size
  bool exit_now_ = false;
  size_t last_ok_ = 0, last_failed_ = 0, rounds_ = 0;
  double last_round_s_ = 0, last_p50_s_ = 0, last_p99_s_ = 0;
  nlohmann::ordered_json last_investigation_ = nlohmann::ordered_json::object();  // timings of the last stall
  Clock::time_point started_, last_discovery_;
  std::mutex hooks_mu_;
  mutable std::mutex log_mu_;
  std::vector<std::thread> hooks_;
};

}  // namespace hangdx::live
