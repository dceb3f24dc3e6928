#include "hangdx/sim/simulate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace hangdx::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Example(const std::string& name) { return std::string(HANGDX_SOURCE_DIR) + "/examples/" + name; }

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(LoadSchedule, Errors) {
  EXPECT_EQ(LoadSchedule("/nonexistent/schedule.json").status().code(), Status::Code::kNotFound);
  auto junk = LoadSchedule(WriteTemp("junk.json", "not json at all"));
  ASSERT_FALSE(junk.ok());
  EXPECT_THAT(junk.status().message(), HasSubstr("not a usable hangdx schedule"));
  // A skipped op would make the simulation lie: refused, with its JSON path.
  auto bad = LoadSchedule(WriteTemp("bad.json", R"({"hangdx_schedule": 1, "ranks": [{"rank": 0, "threads": [
      {"name": "main", "ops": [{"op": "wait", "stream": "s"}]}]}]})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("has problems"));
  EXPECT_THAT(bad.status().message(), HasSubstr("ranks[0].threads[0].ops[0]"));
  // 30 bad ops: 20 listed, then one line for the rest (the diagnostic sink's cap).
  std::string ops;
  for (int i = 0; i < 30; ++i) ops += std::string(i ? "," : "") + R"({"op": "wait", "stream": "s"})";
  auto many = LoadSchedule(WriteTemp("many.json", R"({"hangdx_schedule": 1, "ranks": [{"rank": 0, "threads": [
      {"name": "main", "ops": [)" + ops + "]}]}]}"));
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("ops[19]"));
  EXPECT_THAT(many.status().message(), ::testing::Not(HasSubstr("ops[20]")));
  EXPECT_THAT(many.status().message(), ::testing::EndsWith("\n  10 more problems in this file not shown"));
}

// A pg member with no program is a note: its peers wait for it for ever.
TEST(LoadSchedule, MemberWithoutProgramIsANote) {
  model::DiagnosticSink sink;
  auto job = LoadSchedule(WriteTemp("member.json", R"({"hangdx_schedule": 1, "pgs": {"tp": [0, 1]}, "ranks": [
      {"rank": 0, "threads": [{"name": "main", "ops": [{"op": "collective", "pg": "tp", "stream": "s"}]}]}]})"),
                          &sink);
  ASSERT_TRUE(job.ok()) << job.status().message();
  std::vector<model::Diagnostic> notes = sink.Take();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0].message, HasSubstr("rank 1 is a member but not in \"ranks\""));
  auto rep = Simulate(*job, {});
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(ExitCode(*rep), 1);
  EXPECT_THAT(RenderText(*rep), HasSubstr("waits for rank 1: it has not issued its tp seq 0 collective"));
}

// Op and thread names come from the schedule: a control character in one
// never reaches the terminal.
TEST(Simulate, TextHasNoControlCharacters) {
  auto job = LoadSchedule(WriteTemp("evil.json", R"({"hangdx_schedule": 1, "pgs": {"tp": [0, 1]}, "ranks": [
      {"rank": 0, "threads": [{"name": "m\u001b[2J", "ops": [{"op": "collective", "name": "x\ny", "pg": "tp",
       "stream": "s"}]}]}]})"));
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto rep = Simulate(*job, {});
  ASSERT_TRUE(rep.ok());
  std::string text = RenderText(*rep);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("thread m?[2J issues x?y"));
}

TEST(Simulate, DeadlockTextAndJson) {
  auto job = LoadSchedule(Example("p2p-send-send/deadlock.json"));
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto rep = Simulate(*job, {});
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(ExitCode(*rep), 1);
  std::string text = RenderText(*rep);
  EXPECT_THAT(text, StartsWith("DEADLOCK (task queue mode off): an interleaving of "));
  EXPECT_THAT(text, HasSubstr("\nWitness order (20 transitions from the start):\n"));
  EXPECT_THAT(text, HasSubstr("\n  p2p_cycle: "));
  EXPECT_THAT(text, HasSubstr("\nfix: on odd ranks, post each recv before its paired send (pair by parity): no "
                              "deadlock"));
  EXPECT_THAT(text, HasSubstr("\n  tried: task queue mode per_device (now off): still deadlocks\n"));
  auto j = nlohmann::json::parse(RenderJson(*rep));
  EXPECT_EQ(j["hangdx_simulate"], 1);
  EXPECT_EQ(j["deadlock"], true);
  EXPECT_EQ(j["witness"].size(), 20u);
  EXPECT_EQ(j["witness"][0]["kind"], "issue");
  EXPECT_EQ(j["findings"][0]["kind"], "p2p_cycle");
  EXPECT_EQ(j["stuck"]["ranks"][0]["streams"][1]["tasks"][0]["op"], "send_activations [send to 1 (pp seq 0)]");
  int passing = 0;
  for (const auto& f : j["fixes"]) passing += f["passes"].get<bool>();
  EXPECT_EQ(passing, 1);
}

TEST(Simulate, NoDeadlockAndBound) {
  auto job = LoadSchedule(Example("task-queue/fixed.json"));
  ASSERT_TRUE(job.ok());
  auto rep = Simulate(*job, {});
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(ExitCode(*rep), 0);
  EXPECT_THAT(RenderText(*rep), StartsWith("NO DEADLOCK (task queue mode per_stream): every interleaving of "));
  SimulateOptions small;
  small.explore.max_states = 5;
  auto cut = Simulate(*job, small);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(ExitCode(*cut), 0);
  EXPECT_THAT(RenderText(*cut), StartsWith("NO DEADLOCK FOUND WITHIN THE BOUND (task queue mode per_stream): explored "
                                           "5 states in "));
  EXPECT_THAT(RenderText(*cut), HasSubstr("bound reached (max states 5): no deadlock found within the bound"));
  EXPECT_EQ(nlohmann::json::parse(RenderJson(*cut))["bound_reached"], true);
}

TEST(Simulate, NoFixesWhenAsked) {
  auto job = LoadSchedule(Example("task-queue/deadlock.json"));
  ASSERT_TRUE(job.ok());
  SimulateOptions o;
  o.search_fixes = false;
  auto rep = Simulate(*job, o);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(ExitCode(*rep), 1);
  EXPECT_TRUE(rep->fixes.empty());
  EXPECT_THAT(RenderText(*rep), ::testing::Not(HasSubstr("Fix search")));
}

// A snapshot simulates from its state. In p2p_cycle both sends have started
// and both recvs sit behind them: stuck at once (1 state, no transition).
// Nothing is pending, so no candidate changes anything: the report says
// nothing was tried, not that the tried candidates failed.
TEST(Simulate, SnapshotFromItsStateNothingTried) {
  auto job = LoadSchedule(std::string(HANGDX_SOURCE_DIR) + "/testdata/device/p2p_cycle.json");
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto rep = Simulate(*job, {});
  ASSERT_TRUE(rep.ok());
  EXPECT_TRUE(rep->result.deadlock);
  EXPECT_EQ(rep->result.states, 1);
  EXPECT_TRUE(rep->result.witness.empty());
  EXPECT_TRUE(rep->fixes_searched);
  EXPECT_TRUE(rep->fixes.empty());
  EXPECT_EQ(rep->fixes_untried, 0);
  std::string text = RenderText(*rep);
  EXPECT_THAT(text, HasSubstr("  nothing tried: no candidate change applies"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("no fix found among the candidates")));
  EXPECT_EQ(ExitCode(*rep), 1);
}

// A fix search with no time left tries nothing and says why.
TEST(Simulate, FixSearchOutOfTime) {
  auto job = LoadSchedule(Example("p2p-send-send/deadlock.json"));
  ASSERT_TRUE(job.ok()) << job.status().message();
  ExploreResult found;
  {
    auto r = Explore(*job);
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->deadlock);
    found = *r;
  }
  ExploreOptions none;
  none.max_seconds = 0;
  int untried = 0;
  std::vector<FixTrial> trials = SearchFixes(*job, found, none, &untried);
  EXPECT_TRUE(trials.empty());
  // Queue modes per_device and per_stream, then parity: 3 candidates.
  EXPECT_EQ(untried, 3);
}

}  // namespace
}  // namespace hangdx::sim
