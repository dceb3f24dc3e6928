#include "hangdx/ingest/formats/messages/attribution.h"

#include <gtest/gtest.h>

#include "hangdx/ingest/formats/messages/messages.h"

namespace hangdx::ingest::messages_format {
namespace {

// The attribution of each recognized message of `text` (a file whose name
// says `hint`), as the messages format makes it.
std::vector<Recognized> Scan(const std::string& text, int64_t hint = -1) {
  return ScanMessages(Artifact{text, "f.log", hint});
}

// Lines from the rows' examples (hangdx/ingest/messages/data).
constexpr const char* kStore =
    "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
    "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)";

TEST(Attribution, LauncherPrefixBeatsTheFileName) {
  // A message that names no rank of its own (the store-based barrier's
  // names its global rank, which beats both: below).
  std::string shm = "No available shared memory broadcast block found in 60 second.";
  auto r = Scan("[rank5]:" + shm + "\n", 2);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 5);
  EXPECT_STREQ(r[0].who.how, "launcher prefix");
  r = Scan(shm + "\n", 2);
  EXPECT_EQ(r[0].who.rank, 2);
  EXPECT_STREQ(r[0].who.how, "file name");
  EXPECT_EQ(Scan(shm + "\n")[0].who.rank, -1);  // never invented
  // _store_based_barrier is passed the global rank (distributed_c10d.py).
  r = Scan(std::string("[rank5]:") + kStore + "\n", 2);
  EXPECT_EQ(r[0].who.rank, 3);
  EXPECT_STREQ(r[0].who.how, "the rank the message names");
}

TEST(Attribution, C10dPrefixIsGlobalOnlyInTheDefaultPg) {
  std::string dflt =
      "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: "
      "808, last enqueued NCCL work: 811, last completed NCCL work: 807.\n";
  auto r = Scan(dflt);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 1);
  EXPECT_TRUE(r[0].who.pg_default);
  // PG 2's "Rank 7" is a rank inside that pg: the file name decides, or nothing.
  std::string sub =
      "[PG ID 2 PG GUID 9 Rank 7] Exception (either an error or timeout) detected by watchdog at work: 4486, last "
      "enqueued NCCL work: 4489, last completed NCCL work: 4485.\n";
  r = Scan(sub);
  EXPECT_EQ(r[0].who.rank, -1);
  EXPECT_EQ(r[0].who.pg, "9");
  EXPECT_EQ(r[0].who.pg_rank, 7);
  EXPECT_EQ(r[0].who.pg_id, 2);
  EXPECT_EQ(Scan(sub, 97)[0].who.rank, 97);
}

TEST(Attribution, AMessageAboutAnotherProcessBelongsToIt) {
  // horovodrun prints it, about process 3 (= rank 3 in static runs).
  auto r = Scan("[1,0]<stderr>:Process 3 exit with status code 137.\n");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 3);
  EXPECT_STREQ(r[0].who.how, "the rank the message names");
}

TEST(Attribution, ServingGroupIndicesAreGlobalOnlyInATpOnlyFile) {
  std::string died =
      "(EngineCore_0 pid=271) ERROR 08-25 12:24:19 [multiproc_executor.py:146] Worker proc VllmWorker-1 died "
      "unexpectedly, shutting down executor.\n";
  std::string tp = "(VllmWorker TP0 pid=405) INFO 08-25 12:24:19 [multiproc_executor.py:520] Parent process exited\n";
  // testdata/public/vllm23582: TP indices and EngineCore_0 (DP 0): the
  // worker index of engine 0 is its global rank (was -1: "a DP tag").
  auto r = Scan(tp + died);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 1);
  // Engine 1 in the file: worker 1 is engine 0's or engine 1's, not known.
  std::string dp1 = "(EngineCore_1 pid=272) INFO 08-25 12:24:18 [core.py:70] Initializing a V1 LLM engine\n";
  r = Scan(tp + dp1 + died);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, -1);
  std::string shm =
      "(Worker_TP1 pid=78023) INFO 10-22 09:43:49 [shm_broadcast.py:466] No available shared memory "
      "broadcast block found in 60 second.\n";
  std::string died_plain =
      "ERROR 07-09 10:01:02 [multiproc_executor.py:140] Worker proc VllmWorker-2 died unexpectedly, shutting down "
      "executor.\n";
  r = Scan(shm + died_plain);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].who.rank, 1);
  EXPECT_STREQ(r[0].who.how, "TP index of a TP-only file");
  EXPECT_EQ(r[1].who.rank, 2);
}

TEST(Attribution, VllmsRankAssignmentLinePlacesItsProcessesOtherLines) {
  // The tester's finding 3: a DP engine's worker (DP1 TP1) is not placeable
  // by its indices (DP > 0: the TP index is not the global rank), but its
  // process said which rank it is, under the same pid, before its tag was
  // renamed (vllm/distributed/parallel_state.py).
  std::string shm = "No available shared memory broadcast block found in 60 second.";
  std::string text =
      "(Worker pid=9100) INFO 07-08 01:30:22 [parallel_state.py:1923] rank 3 in world size 4 is assigned as DP rank "
      "1, PP rank 0, PCP rank 0, TP rank 1, EP rank 3, EPLB rank N/A\n"
      "(Worker_DP1_TP1 pid=9100) WARNING 07-08 01:31:22 [shm_broadcast.py:466] " +
      shm +
      "\n"
      "(Worker_DP1_TP0 pid=9101) WARNING 07-08 01:31:22 [shm_broadcast.py:466] " +
      shm + "\n";
  auto r = Scan(text);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].who.rank, 3);  // the assignment line itself: its `rank` capture
  EXPECT_EQ(r[1].who.rank, 3);
  EXPECT_STREQ(r[1].who.how, "vLLM's rank assignment line of its process");
  EXPECT_EQ(r[2].who.rank, -1);  // pid 9101 said nothing: DP1 TP0 is not a global rank
}

TEST(Attribution, TheTorchrunAgentsLinesAreNotRankZeros) {
  // The tester's finding 1: ranks 0 and 2 were SIGTERMed before they wrote
  // anything, rank 1's lines are prefixed; the agent's unprefixed lines made
  // rank 0 look present and never arrived.
  std::string shm = "No available shared memory broadcast block found in 60 second.";
  std::string text = "[rank1]:" + shm + "\n[rank2]:" + shm +
                     "\nW1128 21:12:50.210000 3139541 site-packages/torch/distributed/elastic/multiprocessing/"
                     "api.py:900] Sending process 3139620 closing signal SIGTERM\n" +
                     shm + "\n";
  auto r = Scan(text);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[2].match.row->id, "torch.elastic.closing_signal");
  EXPECT_NE(r[2].who.rank, 0);
  EXPECT_EQ(r[3].who.rank, 0);  // a rank's own unprefixed line still is rank 0's
}

TEST(Attribution, TorchrunsFailureSummaryMapsItsLocalRanks) {
  // The tester's finding 2: `torchrun --tee 3` prefixes each worker's lines
  // with `[default<local rank>]:`; the failure summary at the end says which
  // global rank each failed local rank is (here one node: the same numbers;
  // on the second node of a job local 2 would be, say, 6).
  std::string shm = "No available shared memory broadcast block found in 60 second.";
  std::string summary =
      "Failures:\n[1]:\n  time      : 2026-12-02_03:45:33\n  host      : node1\n  rank      : 6 (local_rank: 2)\n"
      "  exitcode  : -6 (pid: 4343)\n";
  auto r = Scan("[default2]:" + shm + "\n[default1]:" + shm + "\n" + summary);
  ASSERT_GE(r.size(), 2u);
  EXPECT_EQ(r[0].who.rank, 6);
  EXPECT_STREQ(r[0].who.how, "torchrun's failure summary of its local rank");
  EXPECT_EQ(r[1].who.rank, -1);  // local rank 1 is in no summary: not guessed
  // Two consoles in one file that give local rank 2 two global ranks: none.
  std::string other = "[2]:\n  rank      : 2 (local_rank: 2)\n";
  r = Scan("[default2]:" + shm + "\n" + summary + other);
  EXPECT_EQ(r[0].who.rank, -1);
}

TEST(Attribution, TheAgentsClosingSignalIsAboutTheWorkerOfThatPid) {
  // testdata/torch/torchrun_sigkill/combined.log, shortened: the agent
  // SIGTERMs pid 5676 before the summary says pid 5676 is rank 1 (its
  // "exitcode" line follows its "rank" line). A pid the summary does not
  // list stays unplaced, whatever the file's name says.
  std::string text =
      "W1202 13:21:17.505000 5673 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 5676 "
      "closing signal SIGTERM\n"
      "W1202 13:21:17.505000 5673 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 9999 "
      "closing signal SIGTERM\n"
      "Failures:\n[1]:\n  time      : 2026-12-02_13:21:17\n  host      : localhost\n"
      "  rank      : 1 (local_rank: 1)\n  exitcode  : -15 (pid: 5676)  (SIGTERM)\n  error_file: <N/A>\n"
      "  traceback : Signal 15 (SIGTERM) received by PID 5676\n";
  auto r = Scan(text, 0);
  ASSERT_GE(r.size(), 3u);
  EXPECT_EQ(r[0].match.row->id, "torch.elastic.closing_signal");
  EXPECT_EQ(r[0].who.rank, 1);
  EXPECT_STREQ(r[0].who.how, "torchrun's failure summary of its pid");
  EXPECT_EQ(r[1].who.rank, -1);  // pid 9999: no entry, and not the file's rank 0
  EXPECT_EQ(r[2].match.row->id, "torch.elastic.child_failed_failure");
  EXPECT_EQ(r[2].who.rank, 1);
  EXPECT_STREQ(r[2].who.how, "the rank the message names");
}

TEST(Attribution, CombinedLogs) {
  std::string shm = "No available shared memory broadcast block found in 60 second.";
  // Ranks 1..2 prefixed, the launcher's rank 0 unprefixed.
  auto r = Scan("[rank1]:" + shm + "\n[rank2]:" + shm + "\n" + shm + "\n", 7);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2].who.rank, 0);
  // Ranks 2 and 5 prefixed: the unprefixed line is nobody's, and the file
  // name's number is not one rank's.
  r = Scan("[rank2]:" + shm + "\n[rank5]:" + shm + "\n" + shm + "\n", 7);
  EXPECT_EQ(r[2].who.rank, -1);
}

// NCCL_DEBUG_FILE=%h.%p: node01.32621.log holds pid 32621's lines, so the
// name's number is a pid and gives no rank; another number still does.
TEST(Attribution, AFileNamedByThePidOfItsNcclLinesGivesNoRank) {
  const std::string init =
      "node01:32621:32621 [3] NCCL INFO comm 0x7f3a2c000000 rank 3 nranks 4 cudaDev 3 nvmlDev 3 busId 1000 commId "
      "0x5a1c2e3d4f506172 - Init COMPLETE\n";
  auto r = Scan(init, 32621);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, -1);
  r = Scan(init, 2);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 2);
  EXPECT_STREQ(r[0].who.how, "file name");
}

// Ray raises ActorDiedError in the caller: in a file named as rank 0's, the
// death of an actor the message does not place is not rank 0's; a verl
// worker's name (..._0:3) places it.
TEST(Attribution, ADeathOfAnotherProcessIsNotThePrintersUnlessItNamesARank) {
  const std::string head =
      "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
      "\tclass_name: RayTrainWorker\n"
      "\tpid: 4242\n";
  const std::string tail =
      "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
      "Worker unexpectedly exits with a connection error code 2. End of file.\n";
  auto r = Scan(head + tail, 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, -1);
  r = Scan(head + "\tname: 07GxnAWorkerDict_0:3\n" + tail, 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 3);
  EXPECT_STREQ(r[0].who.how, "the rank the message names");
}

TEST(Attribution, IndentedLinesCarryThePrefixOfTheLineTheyContinue) {
  // c10d's desync report (testdata/public/pytorch152623): only its first line is prefixed.
  std::string report =
      "[rank3]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 "
      "milliseconds before timing out.\n"
      "[rank3]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 3\n"
      "         - [3] Timeout at collective: ALLREDUCE, #315\n"
      "             [7] finished collective #182, but didn't join collective #183 (count from 1)\n"
      "not indented\n";
  auto r = Scan(report);
  ASSERT_GE(r.size(), 3u);
  const Recognized& culprit = r.back();
  EXPECT_EQ(culprit.match.row->id, "torch.desync.finished_not_joined");
  EXPECT_EQ(culprit.who.rank, 3);
  // Its pg is the timeout's (the default pg): the named ranks are global.
  EXPECT_EQ(culprit.who.pg, "0");
  EXPECT_FALSE(culprit.who.ranks_pg_local);
  EXPECT_EQ(culprit.who.ranks, std::vector<int64_t>{7});
}

TEST(Attribution, LauncherAgentRanksAreNotProcessRanks) {
  auto r = Scan(
      "torch.distributed.DistStoreError: Timed out waiting on barrier on rank 0, for key prefix: "
      "torchelastic/agent/terminal_state (world_size=4, missing_ranks=[2, 3], timeout=300)\n",
      1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].who.ranks.empty());
  EXPECT_FALSE(r[0].who.ranks_usable);
}

// Horovod's stall inspector runs on the coordinator only (the rows' `printer
// 0`): an unprefixed report is rank 0's; a prefix still says who printed.
TEST(Attribution, ACoordinatorOnlyReportIsRankZeros) {
  std::string report =
      "[2019-04-13 13:53:31.851506: W horovod/common/operations.cc:588] HorovodBroadcast_global_step_0 [missing "
      "ranks: 1]\n";
  auto r = Scan(report);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].match.row->printer, 0);
  EXPECT_EQ(r[0].who.rank, 0);
  EXPECT_STREQ(r[0].who.how, "the only rank that prints it");
  r = Scan("[1,2]<stderr>:" + report);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].who.rank, 2);
}

}  // namespace
}  // namespace hangdx::ingest::messages_format
