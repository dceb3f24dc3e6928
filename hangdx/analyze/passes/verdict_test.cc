#include "hangdx/analyze/passes/verdict.h"

#include <gtest/gtest.h>

#include "hangdx/analyze/checks/check_testing.h"
#include "hangdx/model/testing/job_builder.h"

namespace hangdx::analyze {
namespace {

using model::testing::JobBuilder;
using testing::MakeFinding;

std::string VerdictOf(const model::Job& job, std::vector<Finding> findings, bool* hang = nullptr) {
  RankAnalysis a = BuildRankAnalysis(job, {});
  Diagnosis out;
  out.findings = std::move(findings);
  VerdictPass(a, nullptr, &out);
  if (hang) *hang = out.hang;
  return out.verdict;
}

TEST(VerdictPass, TheFirstFindingSaysWhatAndWhomToLookAt) {
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Build();
  Finding f = MakeFinding(Kind::kCollectiveMismatch, {2});
  f.summary = "ranks disagree";
  bool hang = false;
  EXPECT_EQ(VerdictOf(job, {f}, &hang), "HANG (mismatch): ranks disagree. Look first at rank 2.");
  EXPECT_TRUE(hang);
  f.hang = false;  // PyTorch raised it
  EXPECT_EQ(VerdictOf(job, {f}), "ERROR (mismatch, raised; no hang): ranks disagree. Look first at rank 2.");
  Finding w = MakeFinding(Kind::kStraggler, {}, Severity::kWarning);
  w.summary = "slow";
  EXPECT_EQ(VerdictOf(job, {w}, &hang), "WARNING: slow.");
  EXPECT_FALSE(hang);
  Finding local = MakeFinding(Kind::kMissingRank, {5});
  local.summary = "waits";
  local.ranks_are_pg_local = true;
  local.pg_name = "g";
  job.unreadable[1] = "trace_1: truncated";
  EXPECT_EQ(VerdictOf(job, {local}),
            "HANG: waits. Look first at rank 5 of pg g. (The dumps of rank 1 could not be read.)");
}

TEST(VerdictPass, ACrashNoRankCouldBeGivenIsNamedBesideTheFinding) {
  // The tester's folder: rank logs of ranks 0-2 and worker.log, a traceback
  // ending in "RuntimeError: CUDA error: ..." under a name with no number.
  model::Job job = JobBuilder().Steps(0, "0", 1, 1).Build();
  model::FileRead read;
  read.file = "worker.log";
  read.messages.push_back({"torch.cuda.error", "crash", "", 1});
  job.file_reads.push_back(read);
  Finding f = MakeFinding(Kind::kMissingRank, {3});
  f.summary = "ranks 0-2 wait for rank 3";
  EXPECT_EQ(VerdictOf(job, {f}),
            "HANG: ranks 0-2 wait for rank 3. Look first at rank 3. (worker.log holds a crash (torch.cuda.error) that "
            "names no rank: if it is a culprit's, that rank crashed; pass --rank worker.log=RANK.)");
  // Placed (its rank known, or a rank's dump came from it): nothing to add.
  job.file_reads[0].rank = 3;
  EXPECT_EQ(VerdictOf(job, {f}), "HANG: ranks 0-2 wait for rank 3. Look first at rank 3.");
}

// A file read with messages hangdx knows but no rank to place them on.
model::Job Rankless(const std::string& id, const std::string& event, int64_t count) {
  model::Job job;
  model::FileRead read;
  read.file = "job.log";
  read.messages.push_back({id, event, "what it proves", count});
  job.file_reads.push_back(read);
  return job;
}

TEST(VerdictPass, ALoneRanklessStallWarningIsNoHang) {
  // gpustack#3888: one vLLM shared-memory warning, no rank.
  EXPECT_EQ(VerdictOf(Rankless("vllm.shm.no_block_v3", "stall", 1), {}),
            "No hang found: job.log holds vllm.shm.no_block_v3 (stall), a lone stall warning that names no rank; by "
            "itself it is not a hang.");
  // A version line claims no hang: the file was read (detectron2#4730: NCCL's
  // set-up lines of a job that ran, only slowly), so no hang, with what to
  // collect, not "no usable input" (exit 2).
  EXPECT_EQ(VerdictOf(Rankless("nccl.version", "info", 3), {}),
            "No hang found: job.log holds nccl.version (info), and nothing read claims a hang or names a rank hangdx "
            "can place; a healthy job's log looks the same, so if the job is stuck, collect its Flight Recorder dumps "
            "or stacks.");
  // The same warning repeated, or a timeout, cannot be placed: no usable input.
  EXPECT_EQ(VerdictOf(Rankless("vllm.shm.no_block_v3", "stall", 4), {}),
            "No usable input: job.log holds vllm.shm.no_block_v3 (stall), but names no rank hangdx can place it on: "
            "pass --rank job.log=RANK if the file is one rank's.");
  // A version line before the lone warning does not become the one named.
  model::Job info_first = Rankless("nccl.version", "info", 1);
  info_first.file_reads[0].messages.push_back({"vllm.shm.no_block_v3", "stall", "", 1});
  EXPECT_EQ(VerdictOf(info_first, {}).rfind("No hang found: job.log holds vllm.shm.no_block_v3 (stall), ", 0), 0u);
  model::Job both = Rankless("vllm.shm.no_block_v3", "stall", 1);
  both.file_reads[0].messages.push_back({"hccl.fftsplus_task_timeout", "timeout", "", 1});
  EXPECT_EQ(VerdictOf(both, {}).rfind("No usable input: job.log holds hccl.fftsplus_task_timeout (timeout), ", 0), 0u);
}

TEST(VerdictPass, LogsThatRecordNoCollectiveDoNotClaimTheyMatch) {
  // dmlcloud#61: rank 0's one line is c10d's "process group has NOT been
  // destroyed" at exit; "every pg's recorded collectives match" would claim
  // collectives that were never seen.
  model::Job job;
  model::RankDump d;
  d.rank = 0;
  d.file = "rank0.log";
  model::LogEvent ended;
  ended.kind = model::LogEvent::Kind::kExit;
  ended.message_id = "torch.c10d.pg_not_destroyed";
  d.events.push_back(ended);
  job.dumps.push_back(d);
  EXPECT_EQ(VerdictOf(job, {}),
            "No hang found: what was read of rank 0 records no collective and claims no hang; rank 0 shut down in "
            "order (torch.c10d.pg_not_destroyed).");
  // A peer lost is a claim: then only what is known is said.
  model::LogEvent lost;
  lost.kind = model::LogEvent::Kind::kPeerLost;
  job.dumps[0].events.push_back(lost);
  EXPECT_EQ(VerdictOf(job, {}),
            "No hang found: what was read of rank 0 records no collective; rank 0 shut down in order "
            "(torch.c10d.pg_not_destroyed).");
}

// The fresh-user tester's tri_cycle stacks: every rank in all_reduce (three
// sub-groups in a cycle), stacks only. Was "records no collective".
TEST(VerdictPass, StacksAllInOneCollectiveAreUndecidedNotNoCollective) {
  model::testing::JobBuilder b;
  for (int r = 0; r < 3; ++r) b.Stack(r, {"all_reduce", "step"});
  std::string v = VerdictOf(b.Build(), {});
  EXPECT_EQ(v.rfind("Undecided: ranks 0-2, every rank with a stack, are in all_reduce and none elsewhere; stacks "
                    "name no pg",
                    0),
            0u)
      << v;
  model::testing::JobBuilder two_ops;
  two_ops.Stack(0, {"all_reduce", "step"}).Stack(1, {"save", "step"});
  EXPECT_EQ(VerdictOf(two_ops.Build(), {}).rfind("No hang found", 0), 0u);
}

TEST(VerdictPass, NoFindingNamesTheRankThatIssuedFewerCollectives) {
  // NCCL INFO enqueue lines of 3 ranks (scheduled ops, no completion): ranks
  // 0-1 issued seqs 1-7, rank 2 stopped after 5. No hang is proven; the note
  // names rank 2. A lag of one (a rank a step ahead) says nothing.
  auto job = [](int64_t last2) {
    JobBuilder b("nccl");
    for (int r = 0; r < 3; ++r)
      for (int64_t s = 1; s <= (r == 2 ? last2 : 7); ++s) b.Coll(r, "0", s, "all_reduce", /*done=*/false);
    return b.Build();
  };
  std::string v = VerdictOf(job(5), {});
  EXPECT_NE(v.find(" Some are still in progress. Rank 2 issued fewer collectives of pg 0 (default_pg) than the "
                   "others (last seq 5, others up to 7): if the job is stuck, look at it first."),
            std::string::npos)
      << v;
  EXPECT_EQ(VerdictOf(job(6), {}).find("issued fewer"), std::string::npos);
}

TEST(VerdictPass, NoFindingSaysWhatWasSeen) {
  EXPECT_EQ(VerdictOf(model::Job(), {}),
            "No usable input: no dump, log, stack dump or snapshot that names a rank could be read.");
  JobBuilder b;  // gloo
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 3);
  // pg 0 is ranks 0-1 of a world of 3: nothing pending, rank 2 silent.
  EXPECT_EQ(VerdictOf(b.Members("0", {0, 1}).World(3).Build(), {}),
            "No hang found: every process group's recorded collectives match on all 2 ranks seen. (gloo records no "
            "P2P op in the Flight Recorder: if the job uses send/recv, a deadlock there does not show here; read the "
            "ranks' stderr or stacks.) No dump from rank 2.");
  JobBuilder n("nccl");
  for (int r = 0; r < 2; ++r) n.Steps(r, "0", 1, 3).Coll(r, "0", 4, "all_reduce", false);
  EXPECT_EQ(VerdictOf(n.Build(), {}),
            "No hang found: every process group's recorded collectives match on all 2 ranks seen. Some are still in "
            "progress.");
}

TEST(VerdictPass, NoHangFoundSaysWhenTheFilesReadHaveWarnings) {
  // Tester F15: a negative seq in a used dump was warned about at the end
  // while the verdict said a plain "No hang found".
  JobBuilder b("nccl");
  for (int r = 0; r < 2; ++r) b.Steps(r, "0", 1, 3);
  model::Job job = b.Members("0", {0, 1}).Build();
  job.dumps[1].file = "fr_trace_rank_1";
  job.diagnostics.push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kWarning, "fr_trace_rank_1",
                                                  "record 0: collective_seq_id -5 of pg '' is negative"));
  // About a file no record was taken from: not counted.
  job.diagnostics.push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kWarning, "other.json", "ignored"));
  job.diagnostics.push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kInfo, "fr_trace_rank_1", "a note"));
  EXPECT_EQ(VerdictOf(job, {}),
            "No hang found: every process group's recorded collectives match on all 2 ranks seen. 1 warning is "
            "about the files read (see the end): fix what they name before trusting this.");
  // A file whose timeout could not be placed (its rank out of range) counts
  // too (tester3 W); one that only logged progress does not.
  model::FileRead timeout_file, progress_file;
  timeout_file.file = "other.log";
  timeout_file.messages.push_back({"torch.nccl.watchdog_timeout", "timeout", "", 1});
  progress_file.file = "steps.log";
  progress_file.messages.push_back({"tensorflow.hooks.step_counter", "progress", "", 1});
  job.file_reads = {timeout_file, progress_file};
  job.diagnostics.push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kWarning, "other.log",
                                                  "rank 99999999999 is out of range (0 to 16777215)"));
  job.diagnostics.push_back(model::MakeDiagnostic(model::Diagnostic::Severity::kWarning, "steps.log", "odd"));
  EXPECT_EQ(VerdictOf(job, {}),
            "No hang found: every process group's recorded collectives match on all 2 ranks seen. 2 warnings are "
            "about the files read (see the end): fix what they name before trusting this.");
}

}  // namespace
}  // namespace hangdx::analyze
