#include "hangdx/live/first_look.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hangdx/pipeline/pipeline.h"

namespace hangdx::live {
namespace {

namespace fs = std::filesystem;

// A stall of `n` ranks on pg "0" where every rank enqueued seq 12 and
// completed 11, but `behind`, which completed 11 and enqueued nothing more.
struct Job {
  Stall stall;
  std::map<Rank, std::vector<PgProgress>> progress;
};

Job StalledJob(int n, std::vector<Rank> behind) {
  Job j;
  j.stall.pgs = {"0"};
  j.stall.behind = behind;
  for (Rank r = 0; r < n; ++r) {
    j.stall.ranks.push_back(r);
    bool late = std::find(behind.begin(), behind.end(), r) != behind.end();
    j.progress[r] = {PgProgress{"0", late ? 11 : 12, -1, 11}};
  }
  return j;
}

std::vector<Rank> Look(const Job& j, FirstLookOptions o = {}) {
  return FirstLook(
      j.stall,
      [&](Rank r) -> const std::vector<PgProgress>* {
        auto it = j.progress.find(r);
        return it == j.progress.end() ? nullptr : &it->second;
      },
      o);
}

TEST(FirstLook, TheLeastProgressedAndASampleOfEachClass) {
  Job j = StalledJob(1000, {333});
  EXPECT_EQ(Look(j), (std::vector<Rank>{0, 1, 2, 3, 333}));
  j.progress[500] = {PgProgress{"0", 12, -1, 11}, PgProgress{"1", 3, -1, 3}};  // a class of its own
  EXPECT_EQ(Look(j), (std::vector<Rank>{0, 1, 2, 3, 333, 500}));
  j.stall.silent = {777};
  EXPECT_EQ(Look(j), (std::vector<Rank>{0, 1, 2, 3, 333, 500, 777}));
}

TEST(FirstLook, EveryRankWhenThereIsNoShortcut) {
  EXPECT_TRUE(Look(StalledJob(64, {3})).empty());   // small: everyone
  EXPECT_TRUE(Look(StalledJob(1000, {})).empty());  // nobody behind: the ops must be compared
  Job many = StalledJob(1000, {});
  for (Rank r = 0; r < 300; ++r) many.stall.behind.push_back(r);
  EXPECT_TRUE(Look(many).empty());  // over max_ranks
  Job unknown = StalledJob(1000, {333});
  unknown.progress.erase(900);
  EXPECT_TRUE(Look(unknown).empty());  // a rank whose counters are unknown
  Job silent = StalledJob(1000, {333});
  silent.stall.reason = Stall::Reason::kSilentRank;
  EXPECT_TRUE(Look(silent).empty());
}

// A Flight Recorder JSON of an NCCL rank (the shape of torch's
// FlightRecorder::dump_json and of hangdx_fake_workers): all_reduce seqs
// 1..enqueued of the default pg of `n` ranks, those up to `completed`
// completed; rank `odd` calls broadcast at its last seq.
std::string FrJson(int n, Rank rank, int64_t enqueued, int64_t completed, Rank odd = -1) {
  using json = nlohmann::ordered_json;
  json entries = json::array();
  for (int64_t seq = 1; seq <= enqueued; ++seq) {
    bool done = seq <= completed;
    entries.push_back({{"collective_seq_id", seq},
                       {"input_dtypes", {"Float"}},
                       {"input_sizes", {{1024}}},
                       {"is_p2p", false},
                       {"op_id", seq},
                       {"output_dtypes", {"Float"}},
                       {"output_sizes", {{1024}}},
                       {"p2p_seq_id", 0},
                       {"pg_id", 0},
                       {"process_group", {"0", "default_pg"}},
                       {"profiling_name", rank == odd && seq == enqueued ? "nccl:broadcast" : "nccl:all_reduce"},
                       {"record_id", seq - 1},
                       {"retired", done},
                       {"state", done ? "completed" : "started"},
                       {"time_created_ns", 1700000000000000000 + seq * 1000000},
                       {"timeout_ms", 600000}});
  }
  std::string members = "[";
  for (int r = 0; r < n; ++r) members += (r ? ", " : "") + std::to_string(r);
  members += "]";
  json doc = {{"comm_lib_version", "2.21.5"},
              {"entries", entries},
              {"pg_config", {{"0", {{"desc", "default_pg"}, {"ranks", members}}}}},
              {"pg_status",
               {{"0",
                 {{"last_completed_collective", std::to_string(completed)},
                  {"last_enqueued_collective", std::to_string(enqueued)},
                  {"last_started_collective", std::to_string(enqueued)}}}}},
              {"version", "2.10"}};
  return doc.dump();
}

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// kind, culprits, pg, seq of each hang finding of the folder's analysis.
std::vector<std::string> Hangs(const fs::path& dir) {
  auto d = pipeline::Diagnose({dir.string()}, {});
  EXPECT_TRUE(d.ok());
  std::vector<std::string> out;
  if (!d.ok()) return out;
  for (const auto& f : d->findings) {
    if (!f.hang) continue;
    std::string s = std::string(analyze::KindName(f.kind)) + " pg " + f.pg_name + " seq " + std::to_string(f.seq);
    for (Rank r : f.culprit_ranks) s += " " + std::to_string(r);
    out.push_back(s);
  }
  return out;
}

// The same job as a bundle of every rank's records, and as a first look's
// (the ranks FirstLook names in full, the others by their counters in
// wait_state.json, as the watch writes it): the same hang findings.
void ExpectSameFinding(int n, Rank late, Rank odd, const std::string& want) {
  fs::path root = fs::temp_directory_path() / ("hangdx_first_look_" + std::to_string(::getpid()) + "_" +
                                               std::to_string(late) + "_" + std::to_string(odd));
  fs::remove_all(root);
  Job j = StalledJob(n, late >= 0 ? std::vector<Rank>{late} : std::vector<Rank>{});
  std::vector<Rank> first = Look(j, {.whole_up_to = 8});
  if (late >= 0) ASSERT_FALSE(first.empty());
  nlohmann::ordered_json whole = nlohmann::ordered_json::object(), quick = nlohmann::ordered_json::object();
  for (Rank r = 0; r < n; ++r) {
    const PgProgress& p = j.progress[r].front();
    std::string fr = FrJson(n, r, p.enqueued, p.completed, odd);
    nlohmann::ordered_json w = {{"current_op", "pg 0 op 12 enqueued, not completed"},
                                {"waiting_for_ranks", nlohmann::ordered_json::array()},
                                {"op_seq", p.enqueued},
                                {"waited_ms", 9000},
                                {"stall_after_ms", 5000}};
    Write(root / "whole" / "fr" / ("rank_" + std::to_string(r) + ".json"), fr);
    whole[std::to_string(r)] = w;
    if (std::find(first.begin(), first.end(), r) != first.end()) {
      Write(root / "quick" / "fr" / ("rank_" + std::to_string(r) + ".json"), fr);
    } else {
      w["progress"] = {{"0", {{"enqueued", p.enqueued}, {"completed", p.completed}}}};
    }
    quick[std::to_string(r)] = w;
  }
  Write(root / "whole" / "wait_state.json", whole.dump(1));
  Write(root / "quick" / "wait_state.json", quick.dump(1));
  std::vector<std::string> hangs = Hangs(root / "whole");
  ASSERT_EQ(hangs, std::vector<std::string>{want});
  EXPECT_EQ(Hangs(root / "quick"), hangs);
  fs::remove_all(root);
}

TEST(FirstLook, RanksByTheirCountersGiveTheFindingOfTheWholeEvidence) {
  ExpectSameFinding(40, 17, -1, "missing_rank pg 0 seq 12 17");
}

TEST(FirstLook, ARankByItsCountersAgreesWithAnyOpAndHidesNoMismatchOfTheOthers) {
  // Rank 0 is known by its counters alone (a first look without rank 0):
  // the mismatch of ranks that say what they called is still found.
  fs::path root = fs::temp_directory_path() / ("hangdx_first_look_mm_" + std::to_string(::getpid()));
  fs::remove_all(root);
  nlohmann::ordered_json wait = nlohmann::ordered_json::object();
  for (Rank r = 0; r < 4; ++r) {
    nlohmann::ordered_json w = {{"current_op", "pg 0 op 12 enqueued, not completed"},
                                {"waiting_for_ranks", nlohmann::ordered_json::array()},
                                {"op_seq", 12},
                                {"waited_ms", 9000},
                                {"stall_after_ms", 5000}};
    if (r == 0)
      w["progress"] = {{"0", {{"enqueued", 12}, {"completed", 11}}}};
    else
      Write(root / "fr" / ("rank_" + std::to_string(r) + ".json"), FrJson(4, r, 12, 11, /*odd=*/3));
    wait[std::to_string(r)] = w;
  }
  Write(root / "wait_state.json", wait.dump(1));
  EXPECT_EQ(Hangs(root), std::vector<std::string>{"collective_mismatch pg 0 seq 12 3"});
  // Without the odd rank, the unknown op of rank 0 is no mismatch.
  fs::remove(root / "fr" / "rank_3.json");
  wait["3"]["progress"] = {{"0", {{"enqueued", 12}, {"completed", 11}}}};
  Write(root / "wait_state.json", wait.dump(1));
  for (const std::string& h : Hangs(root)) EXPECT_EQ(h.find("collective_mismatch"), std::string::npos) << h;
  fs::remove_all(root);
}

}  // namespace
}  // namespace hangdx::live
