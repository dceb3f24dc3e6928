// tools/hangdx/watch_main.cc: flags of `hangdx watch` into WatchOptions,
// then Watcher::Start and Run (hangdx/live/watcher.h). docs/live.md is the
// manual.
#include "tools/hangdx/watch_main.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "hangdx/live/tcp_store.h"
#include "hangdx/live/watcher.h"

namespace hangdx::tools {
namespace {

using live::WatchOptions;
using std::chrono::milliseconds;

milliseconds Ms(double seconds) { return milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5)); }

// --workers: each argument an http:// URL (the next rank) or a file of
// them, one per line, line N being rank N; a line "RANK URL" names its
// rank (an agent's file of its node's ranks); '#' starts a comment.
Status ReadWorkers(const std::vector<std::string>& args, std::map<int64_t, std::string>* out) {
  constexpr int64_t kMaxRanks = int64_t{1} << 24;  // the ranks a report may carry (docs/live.md)
  int64_t next = 0;
  auto add = [&](const std::string& text, const std::string& where) -> Status {
    std::istringstream in(text);
    std::string a, b;
    in >> a >> b;
    if (a.empty() || a[0] == '#') return Status::Ok();
    if (!b.empty() && b[0] != '#') {
      try {
        next = std::stoll(a);
      } catch (...) {
        return InvalidArgument(where + ": want URL or RANK URL, got '" + text + "'");
      }
      a = b;
    }
    if (next < 0 || next >= kMaxRanks)
      return InvalidArgument(where + ": rank " + std::to_string(next) + " is outside 0.." +
                             std::to_string(kMaxRanks - 1) + " in '" + text + "'");
    (*out)[next++] = a;
    return Status::Ok();
  };
  for (const auto& arg : args) {
    if (arg.rfind("http://", 0) == 0 || arg.rfind("https://", 0) == 0) {
      HANGDX_RETURN_IF_ERROR(add(arg, "--workers"));
      continue;
    }
    std::ifstream f(arg);
    if (!f) return NotFound("--workers: cannot read " + arg);
    std::string line;
    for (int n = 1; std::getline(f, line); ++n) HANGDX_RETURN_IF_ERROR(add(line, arg + ":" + std::to_string(n)));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("--token-file: cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  if (t.empty()) return InvalidArgument("--token-file: " + path + " is empty");
  return t;
}

// --list-workers: what the store says, one "RANK URL" line per rank.
int ListWorkers(const WatchOptions& o) {
  auto at = live::ParseHostPort(o.store);
  if (!at.ok()) {
    std::cerr << "hangdx watch: --store: " << at.status().message() << "\n";
    return 2;
  }
  auto found = live::ReadWorkerAddresses(*at, o.world_size, o.store_prefix, o.fetch_timeout);
  if (!found.ok()) {
    std::cerr << "hangdx watch: " << found.status().message() << "\n";
    return 2;
  }
  for (const auto& [rank, url] : *found) std::cout << rank << " " << url << "\n";
  if (static_cast<int64_t>(found->size()) < o.world_size)
    std::cerr << "hangdx watch: " << o.world_size - static_cast<int64_t>(found->size())
              << " ranks have not registered a worker server\n";
  return 0;
}

}  // namespace

int WatchMain(int argc, char** argv) {
  CLI::App app{"hangdx watch: names a hang of a running job within seconds (docs/live.md)", "hangdx watch"};
  WatchOptions o;
  std::vector<std::string> workers;
  std::string token_file, role = "standalone", ranks;
  double interval = 2, stall_after = 30, fetch_timeout = 5, duration = 0;
  bool list_workers = false;
  app.add_option("--store", o.store, "The job's TCPStore HOST:PORT (MASTER_ADDR:MASTER_PORT); read, never written");
  app.add_option("--world-size", o.world_size, "Ranks in the job (with --store)")->check(CLI::Range(1, 1 << 24));
  app.add_option("--store-prefix", o.store_prefix, "Key prefix of the worker addresses in the store");
  app.add_option("--workers", workers,
                 "http://HOST:PORT of each rank in rank order, or FILEs of them (line N: rank N)");
  app.add_option("--ranks", ranks, "FIRST-LAST: watch only these ranks (an agent's node)");
  app.add_option("--interval", interval, "Seconds between progress probes")->check(CLI::PositiveNumber);
  app.add_option("--stall-after", stall_after, "Seconds without progress that make a stall")
      ->check(CLI::PositiveNumber);
  app.add_option("--fetch-timeout", fetch_timeout, "Seconds a worker has to answer")->check(CLI::PositiveNumber);
  app.add_option("--duration", duration, "End the watch after this many seconds (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--out", o.out_dir, "Folder for the evidence bundles");
  app.add_option("--format", o.format, "Reports on stdout")->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--exit-on-finding", o.exit_on_finding, "Print the first hang finding's report and exit 1");
  app.add_option("--hook-command", o.hook_command, "Run this (sh -c) on each finding, the record on stdin");
  app.add_option("--webhook", o.webhook, "POST each finding to this URL as an Alertmanager webhook");
  app.add_option("--listen", o.listen, "HOST:PORT of the service: pushed reports, /findings, /status, /metrics");
  app.add_option("--token-file", token_file, "File with the token clients must send (Authorization: Bearer)");
  app.add_option("--max-report-bytes", o.max_report_bytes, "Larger pushed reports get 413");
  app.add_option("--max-answer-bytes", o.max_answer_bytes,
                 "A worker's answer larger than this is unusable (default 64 MiB)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 34));
  app.add_option("--redis", o.redis, "redis://HOST:PORT[/DB]: keep the state in Redis (resume after a restart)");
  app.add_option("--job", o.job, "Job name: namespaces the Redis keys");
  app.add_option("--role", role, "standalone, agent (probes, writes Redis) or coordinator (reads Redis)")
      ->check(CLI::IsMember({"standalone", "agent", "coordinator"}));
  app.add_option("--agent-name", o.agent, "This agent's name (default: the host name)");
  app.add_flag("--list-workers", list_workers, "Print the workers the store lists and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  o.interval = Ms(interval);
  o.stall_after = Ms(stall_after);
  o.fetch_timeout = Ms(fetch_timeout);
  o.duration = Ms(duration);
  o.role = role == "agent"         ? WatchOptions::Role::kAgent
           : role == "coordinator" ? WatchOptions::Role::kCoordinator
                                   : WatchOptions::Role::kStandalone;
  if (o.agent.empty()) {
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    o.agent = host;
  }
  if (!ranks.empty()) {
    size_t dash = ranks.find('-');
    try {
      o.first_rank = std::stoll(ranks.substr(0, dash));
      o.last_rank = dash == std::string::npos ? o.first_rank : std::stoll(ranks.substr(dash + 1));
    } catch (...) {
      std::cerr << "hangdx watch: --ranks wants FIRST-LAST, got '" << ranks << "'\n";
      return 2;
    }
  }
  if (list_workers) return ListWorkers(o);
  if (auto st = ReadWorkers(workers, &o.workers); !st.ok()) {
    std::cerr << "hangdx watch: " << st.message() << "\n";
    return 2;
  }
  for (auto it = o.workers.begin(); it != o.workers.end();)
    it = it->first < o.first_rank || (o.last_rank >= 0 && it->first > o.last_rank) ? o.workers.erase(it) : ++it;
  if (!token_file.empty()) {
    auto t = ReadToken(token_file);
    if (!t.ok()) {
      std::cerr << "hangdx watch: " << t.status().message() << "\n";
      return 2;
    }
    o.token = *t;
  }
  // SIGINT and SIGTERM end the watch cleanly (the service stops, hooks
  // finish); a thread waits for them so no handler runs on a busy thread.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  live::Watcher watcher(o);
  if (auto st = watcher.Start(); !st.ok()) {
    std::cerr << "hangdx watch: " << st.message() << "\n";
    return 2;
  }
  std::thread([&watcher, sigs] {
    int sig = 0;
    sigwait(&sigs, &sig);
    watcher.Stop();
  }).detach();
  return watcher.Run();
}

}  // namespace hangdx::tools
