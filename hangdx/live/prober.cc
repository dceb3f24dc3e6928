#include "hangdx/live/prober.h"

namespace hangdx::live {

void Prober::SetWorker(Rank rank, const Endpoint& endpoint) {
  auto it = workers_.find(rank);
  if (it != workers_.end() && it->second.address == endpoint) return;
  Worker w;
  w.address = endpoint;
  w.endpoint = fan_.AddEndpoint(endpoint);
  workers_[rank] = w;
}

void Prober::MarkNccl(Rank rank) {
  auto it = workers_.find(rank);
  if (it != workers_.end() && it->second.kind == Kind::kUnknown) it->second.kind = Kind::kNccl;
}

std::vector<Rank> Prober::Ranks() const {
  std::vector<Rank> out;
  for (const auto& [r, w] : workers_) out.push_back(r);
  return out;
}

std::string Prober::Url(Rank rank) const {
  auto it = workers_.find(rank);
  return it == workers_.end() ? "" : it->second.address.Url();
}

std::string Prober::ProbePath(const Worker& w) const {
  return w.kind == Kind::kNccl ? "/handler/dump_nccl_trace_json?includecollectives=false" : "/handler/fr_trace_json";
}

std::string Prober::DetailPath(const Worker& w) const {
  return w.kind == Kind::kNccl ? "/handler/dump_nccl_trace_json?includecollectives=true&onlyactive=false"
                               : "/handler/fr_trace_json";
}

std::vector<ProbeReply> Prober::Probe(std::chrono::milliseconds timeout, const Digest& digest,
                                      const HttpFanout::GiveUp& give_up) {
  std::vector<HttpCall> calls;
  std::vector<std::pair<Rank, bool>> what;  // rank, is the handler list
  calls.reserve(workers_.size());
  for (const auto& [rank, w] : workers_) {
    if (w.kind == Kind::kUnknown) {
      calls.emplace_back(w.endpoint, "GET", "/handler/");
      what.emplace_back(rank, true);
    }
    calls.emplace_back(w.endpoint, "POST", ProbePath(w));
    what.emplace_back(rank, false);
  }
  HttpFanout::OnReply on_reply;
  if (digest)
    on_reply = [&](size_t i, HttpReply* r) {
      if (!what[i].second && r->status == 200) digest(what[i].first, &r->body);
    };
  std::vector<HttpReply> replies = fan_.Run(calls, timeout, on_reply, give_up);
  std::vector<ProbeReply> out;
  out.reserve(workers_.size());
  for (size_t i = 0; i < replies.size(); ++i) {
    auto [rank, is_list] = what[i];
    Worker& w = workers_[rank];
    HttpReply& r = replies[i];
    if (is_list) {
      if (r.status == 200)
        w.kind = r.body.find("\"dump_nccl_trace_json\"") != std::string::npos ? Kind::kNccl : Kind::kGeneric;
      continue;
    }
    // A server without the NCCL handler after all (404): fall back.
    if (r.status == 404 && w.kind == Kind::kNccl) w.kind = Kind::kGeneric;
    ProbeReply p;
    p.rank = rank;
    p.status = r.status;
    p.ok = r.status == 200;
    p.seconds = r.seconds;
    if (p.ok) {
      p.body = std::move(r.body);
    } else {
      p.error = r.status ? "answered HTTP " + std::to_string(r.status) : r.error;
    }
    out.push_back(std::move(p));
  }
  return out;
}

Details Prober::Fetch(const std::vector<Rank>& ranks, std::chrono::milliseconds timeout) {
  std::vector<HttpCall> calls;
  std::vector<std::pair<Rank, bool>> what;  // rank, is the traceback
  for (Rank r : ranks) {
    auto it = workers_.find(r);
    if (it == workers_.end()) continue;
    calls.emplace_back(it->second.endpoint, "POST", DetailPath(it->second));
    what.emplace_back(r, false);
    calls.emplace_back(it->second.endpoint, "POST", "/handler/dump_traceback");
    what.emplace_back(r, true);
  }
  Details d;
  std::vector<HttpReply> replies = fan_.Run(calls, timeout);
  for (size_t i = 0; i < replies.size(); ++i) {
    auto [rank, stacks] = what[i];
    HttpReply& r = replies[i];
    if (r.status == 200) {
      (stacks ? d.stacks : d.fr)[rank] = std::move(r.body);
    } else if (!stacks) {
      d.unanswered[rank] = r.status ? "answered HTTP " + std::to_string(r.status) : r.error;
    }
  }
  for (Rank r : ranks)
    if (!workers_.count(r)) d.unanswered[r] = "no worker address (not registered in the store)";
  return d;
}

}  // namespace hangdx::live
