// The scenarios of PyTorch's test_fr_analysis.py (flight-recorder.md §4):
// FlightRecorderEventTest.test_match_one_event and test_all_events.
#include "hangdx/analyze/match.h"

#include <gtest/gtest.h>

namespace hangdx::analyze {
namespace {

model::Interner& Pool() {
  static model::Interner pool;
  return pool;
}

model::OpRecord Event(const std::string& op, std::vector<model::Shape> in, std::vector<model::Shape> out,
                      const std::string& state = "scheduled", std::string in_dtype = "float32",
                      std::string out_dtype = "float32") {
  model::OpRecord e;
  e.profiling_name = Pool().Str("nccl:" + op);
  model::ParseProfilingName(&e);
  e.input_sizes = Pool().Intern(std::move(in));
  e.output_sizes = Pool().Intern(std::move(out));
  e.input_dtypes = Pool().Intern(model::Dtypes{in_dtype});
  e.output_dtypes = Pool().Intern(model::Dtypes{out_dtype});
  e.state = state == "completed" ? model::OpState::kCompleted : model::OpState::kScheduled;
  return e;
}

TEST(MatchOps, PyTorchMatchOneEvent) {
  auto ar = Event("all_reduce", {{4, 4}}, {{4, 4}});
  EXPECT_EQ(MatchOps(ar, ar), MatchState::kFullyMatched);                                       // 1
  EXPECT_EQ(MatchOps(ar, Event("all_gather", {{4, 4}}, {{4, 4}})), MatchState::kTypeMismatch);  // 2
  auto a2a = Event("all_to_all", {{4, 4}}, {{4, 4}});
  EXPECT_EQ(MatchOps(a2a, a2a), MatchState::kUndecided);                                        // 3
  EXPECT_EQ(MatchOps(ar, Event("all_reduce", {{5, 4}}, {{4, 4}})), MatchState::kSizeMismatch);  // 4
  EXPECT_EQ(MatchOps(ar, Event("all_reduce", {{4, 4}}, {{5, 4}})), MatchState::kSizeMismatch);  // 5
  auto bad = Event("all_reduce", {{4, 4}}, {{5, 4}});
  EXPECT_EQ(MatchOps(bad, bad), MatchState::kSizeMismatch);  // 6
  EXPECT_EQ(MatchOps(ar, Event("all_reduce", {{4, 4}}, {{4, 4}}, "completed")),
            MatchState::kStateMismatch);  // 7
  EXPECT_EQ(MatchOps(Event("all_reduce", {{4, 4}}, {{4, 4}}, "completed", "float32", "float16"),
                     Event("all_reduce", {{4, 4}}, {{4, 4}}, "completed")),
            MatchState::kDtypeMismatch);  // 8
  auto gather = Event("gather", {{4, 4}}, {{4, 4}, {4, 4}}, "completed");
  EXPECT_EQ(MatchOps(gather, Event("gather", {{4, 4}}, {{}}, "completed", "float32", "")),
            MatchState::kFullyMatched);  // 9
  EXPECT_EQ(MatchOps(gather, Event("gather", {{4, 4}}, {{4, 4}}, "completed", "float32", "")),
            MatchState::kFullyMatched);  // 10
}

TEST(MatchOps, PyTorchAllEvents) {
  for (const char* op : {"broadcast",
                         "_broadcast_oop",
                         "reduce",
                         "_reduce_oop",
                         "all_gather",
                         "all_gather_single",
                         "all_reduce",
                         "_all_gather_base",
                         "all_gather_into_tensor_coalesced",
                         "reduce_scatter",
                         "reduce_scatter_tensor_coalesced",
                         "_reduce_scatter_base",
                         "gather",
                         "scatter",
                         "all_to_all",
                         "all_to_all_single",
                         "all_reduce_barrier",
                         "barrier",
                         "allreduce_coalesced",
                         "ALLGATHER_coalesced",
                         "REDUCE_SCATTER_coalesced"}) {
    std::string name = op;
    std::vector<model::Shape> out = {{4, 4}};
    if (name.find("reduce_scatter") != std::string::npos || name.find("REDUCE_SCATTER") != std::string::npos)
      out = {{8}};
    if (name.find("all_gather") != std::string::npos || name.find("ALLGATHER") != std::string::npos) out = {{32}};
    auto e = Event(name, {{4, 4}}, out);
    EXPECT_EQ(MatchOps(e, e), IsAllToAll(name) ? MatchState::kUndecided : MatchState::kFullyMatched) << name;
  }
}

TEST(MatchOps, SendRecvPair) {
  model::OpRecord s, r;
  s.profiling_name = "nccl:send 0->1";
  r.profiling_name = "nccl:recv 1<-0";
  model::ParseProfilingName(&s);
  model::ParseProfilingName(&r);
  s.input_sizes = Pool().Intern(model::Shapes{{10}});
  r.output_sizes = Pool().Intern(model::Shapes{{10}});
  EXPECT_EQ(MatchOps(s, r), MatchState::kFullyMatched);
  EXPECT_EQ(MatchOps(r, s), MatchState::kFullyMatched);  // symmetric, unlike fr_trace
  r.output_sizes = Pool().Intern(model::Shapes{{11}});
  EXPECT_EQ(MatchOps(s, r), MatchState::kSizeMismatch);
}

TEST(Signature, EqualWhenRanksAgree) {
  auto a = Event("all_reduce", {{4, 4}}, {{4, 4}});
  auto b = Event("all_reduce", {{4, 4}}, {{4, 4}}, "completed");
  EXPECT_EQ(Signature(a), Signature(b));  // state is not part of agreement
  EXPECT_NE(Signature(a), Signature(Event("all_reduce", {{4, 5}}, {{4, 5}})));
  EXPECT_NE(Signature(a), Signature(Event("all_reduce", {{4, 4}}, {{4, 4}}, "scheduled", "float16", "float16")));
  // Gather outputs exist on the root only; scatter inputs likewise.
  EXPECT_EQ(Signature(Event("gather", {{4}}, {{4}, {4}})), Signature(Event("gather", {{4}}, {{}})));
}

}  // namespace
}  // namespace hangdx::analyze
