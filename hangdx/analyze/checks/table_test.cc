// The check and pass tables: the run order the docs describe.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "hangdx/analyze/checks/check.h"
#include "hangdx/analyze/passes/pass.h"

namespace hangdx::analyze {
namespace {

TEST(CheckTable, IdsAreUniqueAndInRunOrder) {
  std::vector<std::string> ids;
  for (const Check& c : Checks()) {
    ids.push_back(c.id);
    EXPECT_NE(c.run, nullptr) << c.id;
    EXPECT_NE(std::string(c.what), "") << c.id;
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"cycle", "collective_mismatch", "reported_mismatch", "missing_rank",
                                           "crashed_rank", "lost_peer", "store_wait", "named_culprit", "unreadable",
                                           "pg_creation_order", "stall", "stack_sites", "pg_local_wait",
                                           "snapshot_root", "known_bug", "latent_order", "device_level"}));
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
}

TEST(CheckTable, ScopesSayWhichPassesReadTheFindings) {
  for (const Check& c : Checks()) {
    Scope want = std::string(c.id) == "latent_order"   ? Scope::kHistory
                 : std::string(c.id) == "device_level" ? Scope::kDevice
                                                       : Scope::kWaitState;
    EXPECT_EQ(c.scope, want) << c.id;
  }
}

TEST(PassTable, RunOrder) {
  std::vector<std::string> ids;
  for (const Pass& p : Passes()) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"named_culprit_agreement", "unnamed_crash", "causes", "unexplained_timeout",
                                           "cascades", "device_meets_rank", "order", "verdict"}));
}

}  // namespace
}  // namespace hangdx::analyze
