// hangdx/analyze/groups.h
// Step 2 of the rank-level analysis (analyze/rank_analysis.h): process groups
// as resolved across ranks. A pg is identified per rank by its name and
// member set: the same name with different ranks on different ranks
// (`split_group`, PyTorch's testBuildDB case) is two groups. Members come
// from the dump's pg_config; a default pg without one is the world; gloo
// dumps record no members, so the members of its other pgs are the ranks
// whose dumps record the pg (`inferred`).
//
//   GroupTable groups = GroupTable::Resolve(job, world, &diags);
//   int gi = groups.GroupOf(dump, op.pg_name);   // -1: the op's pg is not known
//   const Group& g = groups[gi];                 // members, each member's collectives by seq
//
// Each member's ops are indexed: collectives as (seq, op index) sorted by
// seq, P2P ops in recording order. Immutable after Resolve().
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hangdx/analyze/world.h"
#include "hangdx/model/diagnostic_sink.h"
#include "hangdx/model/history.h"
#include "hangdx/model/job.h"
#include "hangdx/model/name_index.h"

namespace hangdx::analyze {

// True for a pg description a user gave (new_group(group_desc=...)): not
// empty, not torch's defaults ("undefined", "default_pg"), not one a log
// parser made up ("NCCL communicator of 8 ranks", "HCCL group ..."). Equal
// user descriptions name one logical group; equal made-up ones mean nothing.
bool UserDescription(const std::string& desc);

// A process group as resolved across ranks.
struct Group {
  std::string name, desc;
  std::vector<model::Rank> members;  // global ranks, ascending
  model::SharedRanks member_list;    // the same list, shared (identity speeds up group lookup)
  bool inferred = false;             // members not recorded: inferred (gloo)
  // How many members it has: members.size(), or more when `inferred` and a
  // dump says more (model::PgConfig::size, the largest): the others left no
  // record, and which ranks they are is unknown.
  int64_t size = 0;
  std::vector<const model::RankDump*> dump;                     // per member; nullptr = no dump
  std::vector<std::vector<std::pair<int64_t, uint32_t>>> coll;  // per member: (seq, op index) by seq
  std::vector<std::vector<uint32_t>> p2p;                       // per member: P2P op indices

  // The index of rank r in `members`, -1 when it is not a member.
  int MemberIndex(model::Rank r) const {
    auto it = std::lower_bound(members.begin(), members.end(), r);
    return it != members.end() && *it == r ? static_cast<int>(it - members.begin()) : -1;
  }
  // The dump of member r (nullptr: none). r must be a member.
  const model::RankDump* DumpOf(model::Rank r) const { return dump[MemberIndex(r)]; }
  // "pg 0 (default_pg)"; a long description (a parser's note) is left out,
  // and an empty name is "pg ''" ("members of pg  are in" read as a typo).
  std::string Label() const {
    bool show = !desc.empty() && desc != "undefined" && desc.size() <= 32;
    return "pg " + (name.empty() ? "''" : name) + (show ? " (" + desc + ")" : "");
  }
};

class GroupTable {
 public:
  // Resolves the groups of `job` (dumps sorted by rank; the table keeps
  // pointers into it). A dump recording a pg whose members exclude it gets a
  // warning in `diags` (once per op), and those ops are left out. The pgs a
  // dump records come from its history (`histories`, one per dump, as
  // model::Histories gives them; built here when omitted), so a dump whose
  // records ingest cut down resolves as the complete one would; the ops
  // indexed are the records it kept. Never fails.
  static GroupTable Resolve(const model::Job& job, const World& world, model::DiagnosticSink* diags,
                            std::vector<std::shared_ptr<const model::OpHistory>> histories = {});

  int size() const { return static_cast<int>(groups_.size()); }
  const Group& operator[](int gi) const { return groups_[gi]; }
  const std::vector<Group>& all() const { return groups_; }

  // The group of pg `name` as dump `d` (an element of the job's dumps)
  // records it, -1 when unknown. O(1) (model::NameIndex): it runs once per
  // op, and a dump may record thousands of pgs.
  int GroupOf(const model::RankDump& d, std::string_view name) const;

  // True when dump `d` shows that its rank is a member of no pg but the
  // default one: gloo (torch 2.13) keys its one pg_config entry '' and lists
  // the world there until the rank creates the backend of a new_group it is
  // a member of, which writes '[]' over it; a non-member creates none
  // (testdata/torch/README.md; h_sub: rank 2, in neither new_group([0, 1]),
  // still lists [0, 1, 2]). Also false when `d` records a pg other than the
  // default one, or the list is not the world of `world_size` ranks.
  bool InNoSubGroup(const model::RankDump& d, int64_t world_size) const;

  // The history of dump `d` (an element of the job's dumps): every op it
  // recorded, also those ingest did not keep.
  const model::OpHistory& HistoryOf(const model::RankDump& d) const { return *histories_[&d - dumps_]; }
  const std::vector<std::shared_ptr<const model::OpHistory>>& histories() const { return histories_; }

 private:
  // One group per (name, member list); member lists shared between dumps
  // compare by address, others by value, once per list: a list is then
  // known by its address (`interned_`). A first look of `hangdx watch` at
  // 10,000 ranks has two lists of the same 10,000 ranks (the Flight
  // Recorder dumps' pg_config and the wait states' world), and comparing
  // them by value for each of 10,000 dumps was 15% of its analysis.
  int Intern(const std::string& name, const std::string& desc, const model::SharedRanks& members, bool inferred);
  const model::SharedRanks& WorldRanks(int64_t size);
  void IndexOps(const model::Job& job, model::DiagnosticSink* diags);

  const model::RankDump* dumps_ = nullptr;  // job.dumps.data()
  std::vector<Group> groups_;
  std::map<std::string, std::vector<int>> by_name_;
  // (name, the address of a member list interned) -> its group; the lists
  // are kept, so that no other list takes one of these addresses.
  std::map<std::pair<std::string, const std::vector<model::Rank>*>, int> interned_;
  std::vector<model::SharedRanks> interned_lists_;
  std::vector<model::NameIndex> per_dump_;                          // per dump: pg name -> group
  std::vector<std::shared_ptr<const model::OpHistory>> histories_;  // per dump
  model::SharedRanks world_ranks_;
};

}  // namespace hangdx::analyze
