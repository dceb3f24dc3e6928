#include "hangdx/analyze/stacks.h"

#include <algorithm>
#include <map>

namespace hangdx::analyze {
namespace {

std::string Label(const model::Frame& f) {
  if (f.filename.empty()) return f.name;
  return f.name + " (" + f.filename + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ")";
}

// A mutable trie; children by label, turned into StackNodes at the end.
struct Trie {
  std::vector<model::Rank> ranks;
  std::map<std::string, Trie> kids;

  void Add(const std::vector<std::string>& path, model::Rank r) {
    Trie* t = this;
    t->ranks.push_back(r);
    for (const auto& label : path) {
      t = &t->kids[label];
      t->ranks.push_back(r);
    }
  }

  StackNode ToNode(std::string frame) {
    StackNode n;
    n.frame = std::move(frame);
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    n.ranks = std::move(ranks);
    for (auto& [label, kid] : kids) n.children.push_back(kid.ToNode(label));
    std::stable_sort(n.children.begin(), n.children.end(), [](const StackNode& a, const StackNode& b) {
      if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
      return a.ranks.front() < b.ranks.front();
    });
    return n;
  }
};

}  // namespace

StackTree MergeStacks(const model::Job& job) {
  StackTree tree;
  for (const auto& g : job.diagnostics)
    if (g.severity != model::Diagnostic::Severity::kInfo) tree.problems.push_back(g);
  tree.unreadable = job.unreadable;
  Trie trie;
  for (const auto& d : job.dumps) {
    bool any = false;
    for (const auto& s : d.stacks) {
      if (s.frames.empty()) continue;
      std::vector<std::string> path;
      for (auto it = s.frames.rbegin(); it != s.frames.rend(); ++it) path.push_back(Label(*it));
      trie.Add(path, d.rank);
      any = true;
    }
    if (!any && !d.ops.empty() && !d.ops.back().frames->empty()) {
      const auto& frames = *d.ops.back().frames;
      std::vector<std::string> path;
      for (auto it = frames.rbegin(); it != frames.rend(); ++it) path.push_back(Label(d.frames[*it]));
      trie.Add(path, d.rank);
      tree.from_flight_recorder.push_back(d.rank);
      any = true;
    }
    if (!any) tree.without_stack.push_back(d.rank);
  }
  tree.root = trie.ToNode("");
  return tree;
}

}  // namespace hangdx::analyze
