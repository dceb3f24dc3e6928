#include "hangdx/live/metrics.h"

#include <cmath>
#include <cstdio>

namespace hangdx::live {
namespace {

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Label values escaped as the exposition format wants: \\ \" \n.
std::string Escape(const std::string& v) {
  std::string s;
  for (char c : v) {
    if (c == '\\' || c == '"') s += '\\';
    if (c == '\n') {
      s += "\\n";
      continue;
    }
    s += c;
  }
  return s;
}

}  // namespace

Metrics::Metrics() {
  Declare("hangdx_build_info", Type::kGauge, "hangdx version (always 1)");
  Set("hangdx_build_info", 1, {{"version", "0.1.0"}});
  Declare("hangdx_ranks", Type::kGauge, "Ranks the watch knows of (discovered, probed or pushing)");
  Declare("hangdx_ranks_silent", Type::kGauge, "Ranks that answered before and have not answered for --stall-after");
  Declare("hangdx_pgs", Type::kGauge, "Process groups seen");
  Declare("hangdx_pgs_stalled", Type::kGauge, "Process groups with an unfinished op and no progress for --stall-after");
  Declare("hangdx_findings_total", Type::kCounter, "Hang findings reported, by kind");
  Declare("hangdx_stalls_total", Type::kCounter, "Stalls detected (each analysed once)");
  Declare("hangdx_stall_detection_seconds", Type::kGauge,
          "For the last finding: seconds from the last progress of the stalled process groups to the finding");
  Declare("hangdx_poll_duration_seconds", Type::kHistogram, "Duration of one probe round over every worker",
          {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30});
  Declare("hangdx_probes_total", Type::kCounter, "Probe requests sent to workers");
  Declare("hangdx_probe_failures_total", Type::kCounter, "Probe requests without a usable answer");
  Declare("hangdx_reports_total", Type::kCounter, "Reports pushed by ranks and accepted");
  Declare("hangdx_reports_rejected_total", Type::kCounter, "Requests refused by the service, by reason");
}

void Metrics::Declare(const std::string& name, Type type, const std::string& help, std::vector<double> buckets) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.bounds = std::move(buckets);
  f.counts.assign(f.bounds.size(), 0);
}

std::string Metrics::LabelText(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ',';
    s += labels[i].first + "=\"" + Escape(labels[i].second) + "\"";
  }
  return s + "}";
}

void Metrics::Add(const std::string& name, const Labels& labels, double by) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.series[LabelText(labels)] += by;
}

void Metrics::Set(const std::string& name, double value, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) it->second.series[LabelText(labels)] = value;
}

void Metrics::Observe(const std::string& name, double value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  Family& f = it->second;
  for (size_t i = 0; i < f.bounds.size(); ++i)
    if (value <= f.bounds[i]) {
      ++f.counts[i];
      break;
    }
  f.sum += value;
  ++f.count;
}

double Metrics::Get(const std::string& name, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0;
  auto s = it->second.series.find(LabelText(labels));
  return s == it->second.series.end() ? 0 : s->second;
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kGauge ? "gauge" : "histogram";
    out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + type + "\n";
    if (f.type == Type::kHistogram) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f.bounds.size(); ++i) {
        cumulative += f.counts[i];
        out += name + "_bucket{le=\"" + Number(f.bounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
      }
      out += name + "_bucket{le=\"+Inf\"} " + std::to_string(f.count) + "\n";
      out += name + "_sum " + Number(f.sum) + "\n" + name + "_count " + std::to_string(f.count) + "\n";
      continue;
    }
    if (f.series.empty() && f.type == Type::kGauge) out += name + " 0\n";
    if (f.series.empty() && f.type == Type::kCounter && name != "hangdx_findings_total" &&
        name != "hangdx_reports_rejected_total")
      out += name + " 0\n";
    for (const auto& [labels, v] : f.series) out += name + labels + " " + Number(v) + "\n";
  }
  return out;
}

}  // namespace hangdx::live
