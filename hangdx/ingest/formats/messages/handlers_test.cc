#include "hangdx/ingest/formats/messages/handlers.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/formats/messages/messages.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest::messages_format {
namespace {

using Kind = model::LogEvent::Kind;

// The messages format on `text` (a file of rank `hint`).
DumpBuilder::Result Read(const std::string& text, int64_t hint = -1) {
  return ParseForTest(ParseMessages, text, hint, nullptr, "f.log");
}

const model::RankDump* DumpOf(const DumpBuilder::Result& r, int64_t rank) {
  for (const auto& d : r.dumps)
    if (d.rank == rank) return &d;
  return nullptr;
}

const model::LogEvent* EventOf(const DumpBuilder::Result& r, int64_t rank, const std::string& id) {
  const model::RankDump* d = DumpOf(r, rank);
  if (d == nullptr) return nullptr;
  for (const auto& e : d->events)
    if (e.message_id == id) return &e;
  return nullptr;
}

// Lines from the rows' examples and instances (hangdx/ingest/messages/data).
TEST(Handlers, TimeoutTakesItsPgFromTheStatusLineAfterIt) {
  // torch_npu's blocking-wait timeout names no pg; the status line of the
  // same rank and seq does.
  std::string text =
      "[rank0]:[E612 09:47:56.859970564 compiler_depend.ts:1060] [Rank 0] Work WorkHCCL(SeqNum=42, OpType=ALLREDUCE, "
      "NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) timed out in blocking wait (TORCH_HCCL_BLOCKING_WAIT=1 or "
      "HCCL_BLOCKING_WAIT=1).\n";
  DumpBuilder::Result r = Read(text);
  const model::LogEvent* e = EventOf(r, 0, "torch_npu.blocking_wait_timeout");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kTimeout);
  EXPECT_EQ(e->seq, 42);
  EXPECT_EQ(e->timeout_ms, 600000);
  // "[Rank 0]" is c10d's prefix of the default pg (1.x-2.1 style): the op is known.
  const model::RankDump* d = DumpOf(r, 0);
  ASSERT_EQ(d->ops.size(), 1u);
  EXPECT_EQ(d->ops[0].collective_seq, 42);
  EXPECT_EQ(d->ops[0].pg_name, "0");
  EXPECT_EQ(d->ops[0].op, "all_reduce");
  EXPECT_EQ(d->ops[0].state, model::OpState::kStarted);
  EXPECT_FALSE(d->ops[0].completed);
  EXPECT_EQ(d->ops[0].timeout_ms, 600000);
  EXPECT_EQ((*d->ops[0].input_sizes)[0], model::Shape{1024});
}

TEST(Handlers, AStoreBasedBarrierWaitIsAnOpOfItsOwnPg) {
  // c10d's store-based barrier (init_process_group / new_group): 3 of a
  // world of 4 check in, rank 2 never does. Each waiting rank gets one op
  // (seq 0) of the pg its key names, of 4 members; a timeout ends
  // it (retired), a wait does not. The waiting line repeats: one op a rank.
  std::string wait =
      "INFO:root:Waiting in store based barrier to initialize process group for rank: 0, key: "
      "store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)\n";
  std::string text = wait + wait;
  text +=
      "RuntimeError: Timed out initializing process group in store based barrier on rank: 1, for key: "
      "store_based_barrier_key:1 (world_size=4, worker_count=3, timeout=0:30:00)\n";
  DumpBuilder::Result r = Read(text);
  ASSERT_EQ(r.dumps.size(), 2u);
  for (int64_t rank : {0, 1}) {
    const model::RankDump* d = DumpOf(r, rank);
    ASSERT_NE(d, nullptr) << rank;
    ASSERT_EQ(d->ops.size(), 1u) << rank;
    EXPECT_EQ(d->ops[0].pg_name, "store_based_barrier_key:1");
    EXPECT_EQ(d->ops[0].op, "barrier");
    EXPECT_EQ(d->ops[0].collective_seq, 0);
    EXPECT_FALSE(d->ops[0].completed);
    EXPECT_EQ(d->ops[0].retired, rank == 1) << rank;  // rank 1 timed out
    auto cfg = d->pg_config.find("store_based_barrier_key:1");
    ASSERT_NE(cfg, d->pg_config.end());
    EXPECT_FALSE(cfg->second.ranks_known);  // its size only: the analysis believes it as far as any size
    EXPECT_EQ(cfg->second.size, 4);
  }
  EXPECT_EQ(EventOf(r, 0, "torch.c10d.store_barrier_waiting")->kind, Kind::kStall);
}

TEST(Handlers, StatusLinesSetThePgStatusOfTheirPgId) {
  DumpBuilder::Result r = Read(
      "[rank7]:[E419 10:42:28.861967180 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 9 Rank 7] Exception (either an "
      "error or timeout) detected by watchdog at work: 4486, last enqueued NCCL work: 4489, last completed NCCL "
      "work: 4485.\n");
  const model::RankDump* d = DumpOf(r, 7);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->pg_status.count(2), 1u);
  EXPECT_EQ(d->pg_status.at(2).last_enqueued, 4489);
  EXPECT_EQ(d->pg_status.at(2).last_completed, 4485);
}

TEST(Handlers, CulpritsNamedByThePrinter) {
  // monitored_barrier: pg rank 0 of the gloo pg names the missing ranks,
  // ranks of that pg (NVIDIA/nccl#849). Its "[Rank 0]" names no PG, which
  // hangdx reads as the default pg (as c10d's 1.x prefixes): global ranks.
  DumpBuilder::Result r =
      Read("RuntimeError: [Rank 0]: Ranks 4, 5, 6, 7 failed to pass monitoredBarrier in 2000000 ms\n", 0);
  const model::LogEvent* e = EventOf(r, 0, "torch.gloo.monitored_barrier_ranks_failed");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kCulprit);
  EXPECT_EQ(e->ranks, (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_FALSE(e->ranks_pg_local);
  EXPECT_EQ(e->timeout_ms, 2000000);
  // A pg named by the prefix keeps them inside it.
  r = Read("[PG ID 3 PG GUID 5 Rank 1] remote error detected from rank: 5\n", 9);
  e = EventOf(r, 9, "torch.nccl.remote_error_detected");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->ranks, std::vector<int64_t>{5});
  EXPECT_TRUE(e->ranks_pg_local);
  EXPECT_EQ(e->pg, "5");
}

TEST(Handlers, AReportOfNoRankThatNamesGlobalRanksIsKeptAtRankMinusOne) {
  // fr_trace's report is printed offline: nobody's, but its ranks are global.
  std::string report =
      "Not all ranks joining collective: sequence number: 31117\ninternal record id: 31116\ngroup info: "
      "0:default_pg\ncollective: nccl:all_reduce\nmissing ranks: {3, 4, 5, 6, 7}\ninput sizes: [[1571911]]\noutput "
      "sizes: [[1571911]]\nworld size: 8\nexpected ranks: {0, 1, 2, 3, 4, 5, 6, 7}\ncollective state: "
      "scheduled\ncollective stack trace:\n";
  DumpBuilder::Result r = Read(report);
  const model::LogEvent* e = EventOf(r, -1, "torch.fr.not_all_joining_v3");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kCulprit);
  EXPECT_EQ(e->ranks, (std::vector<int64_t>{3, 4, 5, 6, 7}));
  EXPECT_FALSE(e->ranks_pg_local);
  EXPECT_EQ(e->seq, 31117);
  EXPECT_EQ(e->pg, "0");
}

TEST(Handlers, AMessageOfNoRankIsCountedNotInvented) {
  DumpBuilder::Result r = Read("No available shared memory broadcast block found in 60 second.\n");
  EXPECT_TRUE(r.dumps.empty());
  ASSERT_EQ(r.read.messages.size(), 1u);
  EXPECT_EQ(r.read.messages[0].message_id, "vllm.shm.no_block_v2");
  EXPECT_EQ(r.read.messages[0].event, "stall");
  EXPECT_EQ(r.read.messages[0].count, 1);
  // The same from a TP-only vLLM file: the TP index is the rank.
  r = Read(
      "(Worker_TP1 pid=78023) INFO 10-22 09:43:49 [shm_broadcast.py:466] No available shared memory broadcast "
      "block found in 60 second.\n");
  const model::LogEvent* e = EventOf(r, 1, "vllm.shm.no_block_v2");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kStall);
  EXPECT_EQ(e->waited_ms, 60000);
}

TEST(Handlers, ExitsPeersAndSettings) {
  DumpBuilder::Result r = Read("Process 3 exit with status code 137.\n");
  const model::LogEvent* e = EventOf(r, 3, "horovod.runner.process_exit");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kExit);
  EXPECT_EQ(e->exit_code, 137);
  r = Read(
      "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:554] Connection closed by peer "
      "[10.0.0.2]:41234. This is typically caused by a remote worker crashing.\n",
      1);
  e = EventOf(r, 1, "torch.gloo.connection_closed_v2");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kPeerLost);
  EXPECT_EQ(e->peer_addr, "[10.0.0.2]:41234");
  r = Read("node01:4711:4711 [0] NCCL INFO Launch mode Group/CGMD\n", 2);
  e = EventOf(r, 2, "nccl.launch_mode");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kind, Kind::kConfig);
  EXPECT_EQ(e->value, "Group/CGMD");
}

// testdata/torch/torchrun_exit0/combined.log, the lines the messages
// format reads (torch 2.13, 4 local workers): rank 3 printed only its start
// line and is not in the summary, which lists the stopped ranks 0 and 1.
std::string Exit0Console() {
  std::string entry = "  error_file: <N/A>\n  traceback : Signal 15 (SIGTERM) received by PID ";
  return "[default3]:rank 3/4 pid 6723 started\n"
         "W1202 13:24:27.333000 6718 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 6720 "
         "closing signal SIGTERM\n"
         "W1202 13:24:27.334000 6718 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 6721 "
         "closing signal SIGTERM\n"
         "============================================================\ntrain.py FAILED\n"
         "------------------------------------------------------------\nFailures:\n"
         "[1]:\n  time      : 2026-12-02_13:24:27\n  host      : localhost\n  rank      : 0 (local_rank: 0)\n"
         "  exitcode  : -15 (pid: 6720)  (SIGTERM)\n" +
         entry + "6720\n" +
         "[2]:\n  time      : 2026-12-02_13:24:27\n  host      : localhost\n  rank      : 1 (local_rank: 1)\n"
         "  exitcode  : -15 (pid: 6721)  (SIGTERM)\n" +
         entry + "6721\n" +
         "------------------------------------------------------------\nRoot Cause (first observed failure):\n"
         "[0]:\n  time      : 2026-12-02_13:24:27\n  host      : localhost\n  rank      : 2 (local_rank: 2)\n"
         "  exitcode  : 1 (pid: 6722) \n  error_file: <N/A>\n"
         "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
         "============================================================\n";
}

TEST(Handlers, TorchrunsFailureSummaryGivesEveryEntryItsExit) {
  DumpBuilder::Result r = Read(Exit0Console());
  using Role = model::LogEvent::ExitRole;
  // The root cause: rank 2, exit code 1, the first observed failure.
  const model::LogEvent* root = EventOf(r, 2, "torch.elastic.child_failed_root_cause");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->kind, Kind::kExit);
  EXPECT_EQ(root->exit_code, 1);
  EXPECT_EQ(root->exit_role, Role::kFirstFailure);
  // Every other entry: ranks 0 and 1, -15, SIGTERM (15), no role of their own.
  for (int64_t rank : {0, 1}) {
    const model::LogEvent* e = EventOf(r, rank, "torch.elastic.child_failed_failure");
    ASSERT_NE(e, nullptr) << rank;
    EXPECT_EQ(e->exit_code, -15);
    EXPECT_EQ(e->signal, 15);
    EXPECT_EQ(e->exit_role, Role::kNone);
    // The agent's closing signal to its pid (6720 + rank) is that rank's.
    const model::LogEvent* stop = EventOf(r, rank, "torch.elastic.closing_signal");
    ASSERT_NE(stop, nullptr) << rank;
    EXPECT_EQ(stop->exit_role, Role::kStopped);
  }
  // Local rank 3 (its [default3]: prefix) is not listed by a summary that
  // lists stopped workers: it exited 0, and it is global rank 0 + 3.
  const model::LogEvent* ended = EventOf(r, 3, "torch.elastic.child_failed_failure");
  ASSERT_NE(ended, nullptr);
  EXPECT_EQ(ended->exit_role, Role::kEndedInOrder);
  EXPECT_EQ(ended->exit_code, 0);
}

TEST(Handlers, AnEntrysErrorFileTracebackStaysInTheEntry) {
  // A worker decorated with @record: its error file's py_callstack is the
  // entry's traceback, each line indented by two spaces (_format_failure);
  // the entry after it is read on its own.
  std::string text =
      "Failures:\n[1]:\n  time      : 2026-09-07_13:02:58\n  host      : node02\n  rank      : 5 (local_rank: 1)\n"
      "  exitcode  : 1 (pid: 14690) \n  error_file: /tmp/torchelastic_abc/none_x/attempt_0/1/error.json\n"
      "  traceback : Traceback (most recent call last):\n"
      "    File \"/home/user/train.py\", line 16, in main\n      dist.barrier()\n"
      "  RuntimeError: Detected mismatch between collectives on ranks.\n"
      "[2]:\n  time      : 2026-09-07_13:02:58\n  host      : node02\n  rank      : 6 (local_rank: 2)\n"
      "  exitcode  : -15 (pid: 14691)  (SIGTERM)\n  error_file: <N/A>\n"
      "  traceback : Signal 15 (SIGTERM) received by PID 14691\n";
  DumpBuilder::Result r = Read(text);
  const model::LogEvent* first = EventOf(r, 5, "torch.elastic.child_failed_failure");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->exit_code, 1);
  const model::LogEvent* second = EventOf(r, 6, "torch.elastic.child_failed_failure");
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->exit_code, -15);
  EXPECT_EQ(second->signal, 15);
}

TEST(Handlers, ASummaryOfFailedWorkersOnlySaysNothingOfTheOthers) {
  // Up to 2.8 (and whenever the agent stopped nobody) the summary lists only
  // workers that failed by themselves: a missing local rank may have been
  // stopped, not ended in order. Without the closing-signal lines the -15
  // entries are not known to be stopped ones.
  std::string text = Exit0Console();
  for (size_t at; (at = text.find("Sending process")) != std::string::npos;) text.replace(at, 15, "Sending proxess");
  DumpBuilder::Result r = Read(text);
  EXPECT_EQ(EventOf(r, 3, "torch.elastic.child_failed_failure"), nullptr);
  EXPECT_NE(EventOf(r, 2, "torch.elastic.child_failed_root_cause"), nullptr);
}

TEST(Handlers, InitGivesTheDefaultPgsMembers) {
  DumpBuilder::Result r = Read(
      "(RayTrainWorker pid=615, ip=10.72.7.6) 2024-05-01 10:00:00,000\tINFO config.py:84 -- Setting up process group "
      "for: env:// [rank=5, world_size=8]\n");
  const model::RankDump* d = DumpOf(r, 5);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->pg_config.count("0"), 1u);
  EXPECT_EQ(d->pg_config.at("0").ranks.size(), 8u);
}

TEST(Handlers, AnEventRepeatedInAnExceptionCountsOnce) {
  std::string line = "Process 3 exit with status code 137.\n";
  DumpBuilder::Result r = Read(line + line);
  ASSERT_NE(DumpOf(r, 3), nullptr);
  EXPECT_EQ(DumpOf(r, 3)->events.size(), 1u);
  EXPECT_EQ(r.read.messages[0].count, 2);
}

// The line's timestamp, as the job system wrote it in front of the message.
TEST(Handlers, AnEventCarriesItsLinesTime) {
  DumpBuilder::Result r = Read("2024-01-01T00:00:01.5Z Process 3 exit with status code 137.\n");
  const model::LogEvent* e = EventOf(r, 3, "horovod.runner.process_exit");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->time_ns, 1704067201500000000);
  r = Read("Process 3 exit with status code 137.\n");
  ASSERT_NE(EventOf(r, 3, "horovod.runner.process_exit"), nullptr);
  EXPECT_EQ(EventOf(r, 3, "horovod.runner.process_exit")->time_ns, 0);
}

}  // namespace
}  // namespace hangdx::ingest::messages_format
