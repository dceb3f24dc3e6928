#include "hangdx/analyze/stacks.h"

#include <algorithm>
#include <map>

#include "hangdx/model/diagnostic_sink.h"

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

// How many outer frames a stack of `frames` frames loses: what its parser
// dropped, and what is past kMaxStackFrames here.
int64_t CutFrames(size_t frames, int64_t parser_dropped) {
  return parser_dropped + static_cast<int64_t>(frames - std::min(frames, kMaxStackFrames));
}

// The path of a stack, outermost frame first: its innermost kMaxStackFrames
// frames (innermost_first[i] labelled by `label`), under a first frame
// naming how many outer frames were cut, if any.
template <typename Frames, typename LabelFn>
std::vector<std::string> PathOf(const Frames& innermost_first, int64_t cut, const LabelFn& label) {
  const size_t keep = std::min(innermost_first.size(), kMaxStackFrames);
  std::vector<std::string> path;
  path.reserve(keep + 1);
  if (cut > 0) path.push_back("[" + std::to_string(cut) + " outer frames cut]");
  for (size_t i = keep; i-- > 0;) path.push_back(label(innermost_first[i]));
  return path;
}

void NoteCut(const model::RankDump& d, const std::string& file, const std::string& thread, size_t frames, int64_t cut,
             model::DiagnosticSink* sink) {
  const int64_t total = static_cast<int64_t>(std::min(frames, kMaxStackFrames)) + cut;
  sink->Add(model::Diagnostic::Severity::kWarning, file,
            "rank " + std::to_string(d.rank) + (thread.empty() ? "" : " " + thread) + ": a stack of " +
                std::to_string(total) + " frames, cut to its innermost " + std::to_string(kMaxStackFrames) +
                "; it merges only with stacks cut by as many frames",
            d.rank);
}

}  // namespace

StackTree MergeStacks(const model::Job& job) {
  StackTree tree;
  for (const auto& g : job.diagnostics)
    if (g.severity != model::Diagnostic::Severity::kInfo) tree.problems.push_back(g);
  tree.unreadable = job.unreadable;
  model::DiagnosticSink sink;  // the stacks' own problems
  Trie trie;
  for (const auto& d : job.dumps) {
    bool any = false, cut = false;
    for (const auto& s : d.stacks) {
      if (s.frames.empty()) continue;
      const int64_t dropped = CutFrames(s.frames.size(), s.frames_dropped);
      trie.Add(PathOf(s.frames, dropped, Label), d.rank);
      if (dropped > 0) NoteCut(d, s.file.empty() ? d.file : s.file, s.thread, s.frames.size(), dropped, &sink);
      cut = cut || dropped > 0;
      any = true;
    }
    if (!any && !d.ops.empty() && !d.ops.back().frames->empty()) {
      const auto& frames = *d.ops.back().frames;
      const int64_t dropped = CutFrames(frames.size(), 0);
      trie.Add(PathOf(frames, dropped, [&d](uint32_t i) { return Label(d.frames[i]); }), d.rank);
      if (dropped > 0) NoteCut(d, d.file, "", frames.size(), dropped, &sink);
      cut = cut || dropped > 0;
      tree.from_flight_recorder.push_back(d.rank);
      any = true;
    }
    if (cut) tree.cut.push_back(d.rank);
    if (!any) tree.without_stack.push_back(d.rank);
  }
  tree.root = trie.ToNode("");
  for (auto& g : sink.Take()) tree.problems.push_back(std::move(g));
  return tree;
}

}  // namespace hangdx::analyze
