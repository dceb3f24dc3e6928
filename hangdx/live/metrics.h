// hangdx/live/metrics.h
// Metrics of `hangdx watch`, rendered in the Prometheus text exposition
// format (version 0.0.4) for GET /metrics. Names follow the Prometheus
// conventions: the application prefix "hangdx_", base units (_seconds),
// _total for counters. Labels have bounded values (a finding kind, a
// rejection reason), never a rank: 100,000 ranks must not make 100,000
// series.
//
//   Metrics m;
//   m.Add("hangdx_findings_total", {{"kind", "missing_rank"}});
//   m.Observe("hangdx_poll_duration_seconds", 0.12);
//   std::string text = m.Render();
//
// Every name used must be declared first (Declare): its type and help
// line are part of the output. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hangdx::live {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  // The metrics of `hangdx watch` (see docs/live.md), declared.
  Metrics();

  // Declares `name`; a histogram gets `buckets` (upper bounds, ascending).
  void Declare(const std::string& name, Type type, const std::string& help, std::vector<double> buckets = {});
  void Add(const std::string& name, const Labels& labels = {}, double by = 1);
  void Set(const std::string& name, double value, const Labels& labels = {});
  void Observe(const std::string& name, double value);
  // The current value of a counter or gauge series (0 when never set).
  double Get(const std::string& name, const Labels& labels = {}) const;
  // The text exposition format, families in name order.
  std::string Render() const;

 private:
  struct Family {
    Type type = Type::kCounter;
    std::string help;
    std::map<std::string, double> series;  // rendered label set -> value
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket, not cumulative
    double sum = 0;
    uint64_t count = 0;
  };
  static std::string LabelText(const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace hangdx::live
