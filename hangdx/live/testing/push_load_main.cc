// hangdx_push_load: many ranks pushing reports to `hangdx watch --listen`
// at once, for the load benchmark (bench/live_bench.py). Each round every
// rank pushes one report (hangdx/live/push.h): its pg_status and the
// Flight Recorder entry of its new seq (and the previous one, now
// completed), so the watch sees a job that progresses one all_reduce per
// round. With --hang-rank R --hang-after S, from S seconds on rank R stops
// entering the next seq and the others wait in it: a missing rank.
//
//   hangdx_push_load --url http://127.0.0.1:9300 --ranks 10000 --seconds 20
//                    [--connections 64] [--token T] [--hang-rank R --hang-after S]
//
// Prints one JSON line: reports sent, accepted (answered 200), accepted per
// second before the hang (all of the run without one), p50 / p99 latency
// of the accepted ones (seconds), the time the hang began (CLOCK_MONOTONIC
// ns, 0 for none).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hangdx/live/fanout.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string Entry(int64_t seq, bool retired) {
  return "{\"collective_seq_id\":" + std::to_string(seq) +
         ",\"input_dtypes\":[\"Float\"],\"input_sizes\":[[1024]],\"is_p2p\":false,\"op_id\":" + std::to_string(seq) +
         ",\"output_dtypes\":[\"Float\"],\"output_sizes\":[[1024]],\"p2p_seq_id\":0,\"pg_id\":0,"
         "\"process_group\":[\"0\",\"default_pg\"],\"profiling_name\":\"gloo:all_reduce\",\"record_id\":" +
         std::to_string(seq - 1) + ",\"retired\":" + (retired ? "true" : "false") + ",\"state\":\"" +
         (retired ? "completed" : "scheduled") +
         "\",\"thread_id\":\"1\",\"thread_name\":\"main\",\"time_created_ns\":" +
         std::to_string(1700000000000000000 + seq) +
         ",\"time_discovered_completed_ns\":0,\"time_discovered_started_ns\":0,\"timeout_ms\":600000}";
}

std::string Report(int rank, int world, int64_t seq, int64_t enq, int64_t comp, bool stacks) {
  std::string s = "{\"hangdx_report\":1,\"rank\":" + std::to_string(rank) + ",\"pid\":" + std::to_string(1000 + rank) +
                  ",\"seq\":" + std::to_string(seq) + ",\"world_size\":" + std::to_string(world) +
                  ",\"fr\":{\"version\":\"2.10\",\"pg_status\":{\"0\":{\"last_enqueued_collective\":\"" +
                  std::to_string(enq) + "\",\"last_started_collective\":\"-1\",\"last_completed_collective\":\"" +
                  std::to_string(comp) + "\"}}";
  if (seq == 1) s += ",\"pg_config\":{\"\":{\"desc\":\"\",\"name\":\"\",\"ranks\":\"\"}}";
  // The last two entries: a rank that stopped sends its last one completed.
  s += ",\"entries\":[";
  if (enq > 1) s += Entry(enq - 1, true) + ",";
  s += Entry(enq, enq <= comp) + "]";
  s += "}";
  // As the hook does when the watch asked for stacks ({"want": ["stacks"]}).
  if (stacks)
    s += ",\"stacks\":\"Thread 0x00007f0000000001 (most recent call first):\\n  File \\\"train.py\\\", line " +
         std::to_string(100 + (enq > comp ? 1 : 0)) + " in main\\n\"";
  return s + "}";
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, token;
  int ranks = 1000, connections = 64, hang_rank = -1;
  double seconds = 10, hang_after = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--url")
      url = v;
    else if (k == "--ranks")
      ranks = std::atoi(v.c_str());
    else if (k == "--seconds")
      seconds = std::atof(v.c_str());
    else if (k == "--connections")
      connections = std::atoi(v.c_str());
    else if (k == "--token")
      token = v;
    else if (k == "--hang-rank")
      hang_rank = std::atoi(v.c_str());
    else if (k == "--hang-after")
      hang_after = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "hangdx_push_load: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  auto endpoint = hangdx::live::ParseUrl(url);
  if (!endpoint.ok() || ranks < 1 || connections < 1) {
    std::fprintf(stderr, "usage: hangdx_push_load --url http://HOST:PORT --ranks N --seconds S [--connections C]\n");
    return 2;
  }
  hangdx::live::HttpFanout fan;
  for (int c = 0; c < connections; ++c) fan.AddEndpoint(*endpoint);
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(seconds);
  std::vector<double> latency;
  std::vector<char> want_stacks(static_cast<size_t>(ranks), 0);
  uint64_t sent = 0, accepted = 0, steady = 0;  // steady: accepted before the hang
  double steady_s = 0;
  int64_t hang_ns = 0, hung_at = -1;
  for (int64_t round = 1; Clock::now() < deadline; ++round) {
    bool hung = hang_rank >= 0 && hang_after >= 0 && Clock::now() - start >= std::chrono::duration<double>(hang_after);
    if (hung && hung_at < 0) {
      hung_at = round - 1;  // the last seq every rank completed
      steady = accepted;
      steady_s = std::chrono::duration<double>(Clock::now() - start).count();
      hang_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    }
    std::vector<hangdx::live::HttpCall> calls;
    calls.reserve(ranks);
    for (int r = 0; r < ranks; ++r) {
      int64_t enq = round, comp = round - 1;  // each rank waits in this round's all_reduce
      if (hung) {
        enq = r == hang_rank ? hung_at : hung_at + 1;
        comp = hung_at;
      }
      hangdx::live::HttpCall call(static_cast<size_t>(r % connections), "POST", "/v1/report",
                                  Report(r, ranks, round, enq, comp, want_stacks[r]));
      call.headers.emplace_back("Content-Type", "application/json");
      if (!token.empty()) call.headers.emplace_back("Authorization", "Bearer " + token);
      calls.push_back(std::move(call));
    }
    std::vector<hangdx::live::HttpReply> replies = fan.Run(calls, std::chrono::seconds(10));
    if (std::none_of(replies.begin(), replies.end(), [](const auto& r) { return r.status == 200; })) {
      sent += replies.size();
      break;  // the watch is gone (it exits on its finding)
    }
    for (size_t r = 0; r < replies.size(); ++r) {
      const hangdx::live::HttpReply& reply = replies[r];
      want_stacks[r] = reply.body.find("\"stacks\"") != std::string::npos;
      ++sent;
      if (reply.status != 200) continue;  // after the watch has exited on its finding, say
      ++accepted;
      latency.push_back(reply.seconds);
    }
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  if (hung_at < 0) steady = accepted, steady_s = elapsed;
  std::sort(latency.begin(), latency.end());
  auto q = [&](double p) { return latency.empty() ? 0.0 : latency[static_cast<size_t>(p * (latency.size() - 1))]; };
  std::printf(
      "{\"reports\": %llu, \"accepted\": %llu, \"seconds\": %.3f, \"per_second\": %.0f, \"p50_s\": %.5f, "
      "\"p99_s\": %.5f, \"hang_ns\": %lld}\n",
      static_cast<unsigned long long>(sent), static_cast<unsigned long long>(accepted), elapsed,
      steady_s > 0 ? steady / steady_s : 0.0, q(0.5), q(0.99), static_cast<long long>(hang_ns));
  return 0;
}
