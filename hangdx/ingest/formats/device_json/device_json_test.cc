#include "hangdx/ingest/formats/device_json/device_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hangdx::ingest {
namespace {

using model::DevOp;
using ::testing::HasSubstr;

// ReadDeviceJob with the diagnostics as a list.
bool Read(std::string_view data, const std::string& file, model::DeviceJob* job,
          std::vector<model::Diagnostic>* diags) {
  model::DiagnosticSink sink;
  bool ok = ReadDeviceJob(data, file, job, &sink);
  for (auto& d : sink.Take()) diags->push_back(std::move(d));
  return ok;
}

std::string AllMessages(const std::vector<model::Diagnostic>& diags) {
  std::string s;
  for (const auto& d : diags) s += d.file + ": " + d.message + "\n";
  return s;
}

// The op with default id "<rank>/<thread>/<index>": found by rank, thread
// and name through the job (ids are not kept in the model).
model::OpId Find(const model::DeviceJob& job, model::Rank rank, const std::string& name) {
  for (size_t i = 0; i < job.ops.size(); ++i)
    if (job.ops[i].rank == rank && job.ops[i].name == name) return static_cast<model::OpId>(i);
  return -1;
}

constexpr char kSchedule[] = R"({"hangdx_schedule": 1, "task_queue": "per_device",
  "pgs": {"tp": [0, 1], "pp": [0, 1]},
  "ranks": [
    {"rank": 1, "threads": [{"name": "main", "ops": [
       {"op": "collective", "name": "all_reduce", "pg": "tp", "stream": "comm"},
       {"op": "recv", "pg": "pp", "stream": "comm"}]}]},
    {"rank": 0, "pools": [{"name": "aicpu", "capacity": 2}],
     "threads": [{"name": "main", "ops": [
       {"op": "compute", "name": "matmul", "stream": "compute"},
       {"op": "record", "event": "e1", "stream": "compute"},
       {"op": "wait", "event": "e1", "stream": "comm"},
       {"op": "collective", "name": "all_reduce", "pg": "tp", "stream": "comm", "pool": "aicpu"},
       {"op": "send", "peer": 1, "pg": "pp", "stream": "comm", "blocking": true},
       {"op": "host_sync", "event": "e1"},
       {"op": "host_sync", "stream": "comm"},
       {"op": "collective", "name": "all_reduce", "pg": "tp"}]}]}]})";

TEST(DeviceJson, ReadsASchedule) {
  EXPECT_TRUE(0 < SniffDeviceJson(kSchedule));
  model::DeviceJob job;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Read(kSchedule, "s.json", &job, &diags)) << AllMessages(diags);
  EXPECT_TRUE(diags.empty()) << AllMessages(diags);
  EXPECT_EQ(job.origin, "s.json");
  EXPECT_EQ(job.queue_mode, model::QueueMode::kPerDevice);
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ranks[0].rank, 0);  // sorted
  EXPECT_EQ(job.ranks[1].rank, 1);
  EXPECT_EQ(job.pgs.at("tp"), (std::vector<model::Rank>{0, 1}));
  ASSERT_EQ(job.ops.size(), 10u);
  EXPECT_EQ(job.finished, std::vector<bool>(10, false));
  const model::DeviceRank& r0 = job.ranks[0];
  ASSERT_EQ(r0.threads.size(), 1u);
  EXPECT_EQ(r0.threads[0].pending.size(), 8u);
  EXPECT_EQ(r0.pools[0].capacity, 2);
  const DevOp& rec = job.ops[r0.threads[0].pending[1]];
  EXPECT_EQ(rec.kind, DevOp::Kind::kRecord);
  EXPECT_EQ(rec.name, "record e1");
  EXPECT_EQ(rec.source, "ranks[1].threads[0].ops[1]");
  const DevOp& send = job.ops[r0.threads[0].pending[4]];
  EXPECT_EQ(send.kind, DevOp::Kind::kSend);
  EXPECT_EQ(send.peer, 1);
  EXPECT_TRUE(send.host_blocking);
  EXPECT_EQ(send.seq, 0);
  const DevOp& ar0 = job.ops[r0.threads[0].pending[3]];
  EXPECT_EQ(ar0.pool, "aicpu");
  EXPECT_EQ(ar0.seq, 0);
  EXPECT_EQ(job.ops[r0.threads[0].pending[7]].seq, 1);
  EXPECT_EQ(job.ops[r0.threads[0].pending[7]].stream, "default");
  EXPECT_EQ(job.ops[r0.threads[0].pending[6]].stream, "comm");
  EXPECT_EQ(job.ops[r0.threads[0].pending[6]].kind, DevOp::Kind::kHostSync);
  const DevOp& recv = job.ops[job.ranks[1].threads[0].pending[1]];
  EXPECT_EQ(recv.peer, -1);  // any source
  EXPECT_EQ(recv.name, "recv");
  EXPECT_TRUE(job.recorded_events.empty());
}

// A snapshot: issued ops that sit nowhere are finished, the rest pending;
// ids resolve; finished records count as recorded.
TEST(DeviceJson, ReadsASnapshot) {
  constexpr char kSnap[] = R"({"hangdx_snapshot": 1,
    "pgs": {"tp": [0, 1]},
    "ranks": [
      {"rank": 0, "pools": [{"name": "aicpu", "capacity": 1, "holders": ["ar"]}],
       "threads": [{"name": "main", "issued": 4, "blocked_on": "sync", "ops": [
         {"op": "record", "event": "e0", "stream": "compute"},
         {"op": "collective", "name": "all_reduce", "pg": "tp", "stream": "comm", "pool": "aicpu", "id": "ar"},
         {"op": "wait", "event": "e9", "stream": "comm"},
         {"op": "host_sync", "event": "e9", "id": "sync"},
         {"op": "compute", "name": "later", "stream": "compute"}]}],
       "streams": [{"name": "comm", "tasks": ["ar", "0/main/2"], "head_started": true}]},
      {"rank": 1, "threads": [{"name": "main", "ops": [
         {"op": "collective", "name": "all_reduce", "pg": "tp", "stream": "comm"}]}]}],
    "recorded_events": ["e5"]})";
  EXPECT_TRUE(0 < SniffDeviceJson(kSnap));
  model::DeviceJob job;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Read(kSnap, "snap.json", &job, &diags)) << AllMessages(diags);
  EXPECT_TRUE(diags.empty()) << AllMessages(diags);
  model::OpId rec = Find(job, 0, "record e0"), ar = Find(job, 0, "all_reduce"), wait = Find(job, 0, "wait e9"),
              sync = Find(job, 0, "host_sync e9"), later = Find(job, 0, "later");
  EXPECT_TRUE(job.finished[rec]);
  EXPECT_FALSE(job.finished[ar]);
  EXPECT_FALSE(job.finished[wait]);
  EXPECT_FALSE(job.finished[sync]);
  EXPECT_FALSE(job.finished[later]);
  const model::DeviceRank& r0 = job.ranks[0];
  EXPECT_EQ(r0.threads[0].blocked_on, sync);
  EXPECT_EQ(r0.threads[0].pending, std::vector<model::OpId>{later});
  ASSERT_EQ(r0.streams.size(), 1u);
  EXPECT_EQ(r0.streams[0].tasks, (std::vector<model::OpId>{ar, wait}));
  EXPECT_TRUE(r0.streams[0].head_started);
  EXPECT_EQ(r0.pools[0].holders, std::vector<model::OpId>{ar});
  EXPECT_EQ(job.recorded_events, (std::vector<std::string>{"e0", "e5"}));
  EXPECT_EQ(job.ranks[1].threads[0].pending.size(), 1u);
}

TEST(DeviceJson, BadPartsAreSkippedWithTheirPath) {
  constexpr char kBad[] = R"({"hangdx_snapshot": 1,
    "pgs": {"tp": [0, 1, 7]},
    "ranks": [
      {"rank": 0, "threads": [{"name": "main", "issued": 1, "ops": [
         {"op": "launch"},
         {"op": "wait", "stream": "s"},
         {"op": "send", "peer": 5, "pg": "tp"},
         {"op": "compute", "id": "x"},
         {"op": "compute", "id": "x"},
         {"op": "collective", "pg": "tp", "seq": 1e400},
         "not an object",
         {"op": "recv", "peer": 99999999999999999999999, "pg": "tp"}]}],
       "streams": [{"name": "default", "tasks": ["nope"]}]},
      {"rank": 0},
      {"rank": 1, "threads": [{"ops": [{"op": "compute"}]}]}]})";
  model::DeviceJob job;
  std::vector<model::Diagnostic> diags;
  bool ok = Read(kBad, "bad.json", &job, &diags);
  std::string all = AllMessages(diags);
  // 1e400 does not parse at all: the whole file is unreadable, said once.
  EXPECT_FALSE(ok);
  EXPECT_THAT(all, HasSubstr("bad.json: unreadable JSON"));

  std::string fixed = kBad;
  fixed.replace(fixed.find("1e400"), 5, "-3");
  diags.clear();
  ASSERT_TRUE(Read(fixed, "bad.json", &job, &diags));
  all = AllMessages(diags);
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[0]: \"op\" must be one of \"compute\""));
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[1]: wait needs an \"event\"; op skipped"));
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[2]: send peer 5 is not a rank in \"ranks\""));
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[4].id: id \"x\" is already used by ranks[0].threads[0].ops[3]"));
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[5].seq: want an integer from 0"));
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[6]: want an object"));
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].ops[7].peer: want an integer"));
  EXPECT_THAT(all, HasSubstr("ranks[0].streams[0].tasks[0]: \"nope\" names no op"));
  EXPECT_THAT(all, HasSubstr("ranks[1]: rank 0 is listed twice"));
  EXPECT_THAT(all, HasSubstr("pgs.tp[2]: rank 7 is a member but not in \"ranks\""));
  for (const auto& d : diags) EXPECT_EQ(d.file, "bad.json");
  // What is good is kept: op 3 ("x"), the collective (its bad seq dropped),
  // and rank 1's compute with its default thread name.
  ASSERT_EQ(job.ranks.size(), 2u);
  EXPECT_EQ(job.ops.size(), 3u);
  EXPECT_EQ(job.ranks[1].threads[0].name, "thread0");
  EXPECT_EQ(job.pgs.at("tp"), (std::vector<model::Rank>{0, 1, 7}));
  // issued = 1: ops[0] was skipped, so nothing of rank 0 is finished.
  EXPECT_EQ(std::count(job.finished.begin(), job.finished.end(), true), 0);
}

TEST(DeviceJson, RejectsWhatIsNotOneOfUs) {
  model::DeviceJob job;
  std::vector<model::Diagnostic> diags;
  EXPECT_FALSE(0 < SniffDeviceJson(R"({"0": {"current_op": "x"}})"));
  EXPECT_FALSE(0 < SniffDeviceJson(R"(["hangdx_schedule"])"));
  EXPECT_FALSE(0 < SniffDeviceJson(""));
  EXPECT_FALSE(Read("[1, 2]", "a.json", &job, &diags));
  EXPECT_FALSE(Read(R"({"hangdx_schedule": 1})", "b.json", &job, &diags));
  EXPECT_FALSE(Read(R"({"hangdx_schedule": 1, "ranks": [)", "c.json", &job, &diags));
  std::string deep = R"({"hangdx_schedule": 1, "x": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_TRUE(0 < SniffDeviceJson(deep));
  EXPECT_FALSE(Read(deep, "d.json", &job, &diags));
  std::string all = AllMessages(diags);
  EXPECT_THAT(all, HasSubstr("b.json: ranks: missing or not an array"));
  EXPECT_THAT(all, HasSubstr("c.json: unreadable JSON at byte"));
  EXPECT_THAT(all, HasSubstr("d.json: JSON nested deeper than 64 levels"));
}

// Fields only a snapshot has are ignored (with a note) in a schedule.
TEST(DeviceJson, ScheduleIgnoresSnapshotFields) {
  constexpr char kS[] = R"({"hangdx_schedule": 1, "ranks": [{"rank": 0,
     "threads": [{"name": "main", "issued": 1, "ops": [{"op": "compute"}]}],
     "streams": [{"name": "default", "tasks": ["0/main/0"]}]}], "recorded_events": ["e"]})";
  model::DeviceJob job;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Read(kS, "s.json", &job, &diags));
  std::string all = AllMessages(diags);
  EXPECT_THAT(all, HasSubstr("ranks[0].threads[0].issued: only a snapshot issues ops"));
  EXPECT_THAT(all, HasSubstr("ranks[0].streams: only a snapshot has this"));
  EXPECT_THAT(all, HasSubstr("recorded_events: only a snapshot records events"));
  EXPECT_EQ(job.ranks[0].threads[0].pending.size(), 1u);
  EXPECT_TRUE(job.ranks[0].streams.empty());
  EXPECT_TRUE(job.recorded_events.empty());
}

}  // namespace
}  // namespace hangdx::ingest
