#include "hangdx/model/diagnostic_sink.h"

#include <algorithm>

namespace hangdx::model {

void DiagnosticSink::Add(Diagnostic d) {
  auto key = std::make_pair(d.file, d.message);
  auto it = index_.find(key);
  if (it != index_.end()) {
    Item& have = items_[it->second];
    ++have.times;
    have.d.severity = std::max(have.d.severity, d.severity);
    return;
  }
  int& kept = kept_[d.file];
  if (kept >= cap_) {
    ++dropped_[d.file];
    auto [w, fresh] = worst_dropped_.try_emplace(d.file, d.severity);
    if (!fresh) w->second = std::max(w->second, d.severity);
    return;
  }
  ++kept;
  index_.emplace(std::move(key), items_.size());
  items_.push_back(Item{std::move(d), 1});
}

void DiagnosticSink::Merge(DiagnosticSink&& other) {
  for (auto& item : other.items_) {
    for (int64_t i = 0; i < item.times; ++i) Add(item.d);
  }
  for (const auto& [file, n] : other.dropped_) {
    dropped_[file] += n;
    auto [w, fresh] = worst_dropped_.try_emplace(file, other.worst_dropped_[file]);
    if (!fresh) w->second = std::max(w->second, other.worst_dropped_[file]);
  }
  other = DiagnosticSink(other.cap_);
}

int64_t DiagnosticSink::Dropped(const std::string& file) const {
  auto it = dropped_.find(file);
  return it == dropped_.end() ? 0 : it->second;
}

std::vector<Diagnostic> DiagnosticSink::Take() {
  std::vector<Diagnostic> out;
  out.reserve(items_.size() + dropped_.size());
  for (auto& item : items_) {
    if (item.times > 1) item.d.message += " (" + std::to_string(item.times) + " times)";
    out.push_back(std::move(item.d));
  }
  for (const auto& [file, n] : dropped_) {
    out.push_back(MakeDiagnostic(worst_dropped_[file], file,
                                 std::to_string(n) + " more problems in this file not shown"));
  }
  *this = DiagnosticSink(cap_);
  return out;
}

}  // namespace hangdx::model
