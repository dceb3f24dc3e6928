// hangdx_fake_workers: a fleet of fake torch worker servers on loopback
// (fake_workers.h), driven from stdin. For the load benchmark and the
// watch end-to-end tests.
//
//   hangdx_fake_workers --ranks 10000 --out workers.txt [--backend nccl|gloo]
//                       [--step SECONDS] [--entries N] [--keepalive N]
//                       [--base-port P] [--serve FROM:TO] [--start-ns NS]
//
// Writes one URL per served rank and line to --out (rank order), prints
// "ready N" on stdout, then reads commands, one per line, and answers each
// with a line: "hang R", "kill R", "wedge R", "mismatch R", "slow R
// SECONDS" (-> "ok"; each may end in "@NS", the CLOCK_MONOTONIC time of the
// fault, so that the processes of one split job agree), "served" (-> the
// requests answered so far), "quit".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "hangdx/live/testing/fake_workers.h"

int main(int argc, char** argv) {
  hangdx::live::testing::FakeWorkerOptions opt;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--ranks")
      opt.ranks = std::atoi(v.c_str());
    else if (k == "--out")
      out = v;
    else if (k == "--backend")
      opt.backend = v;
    else if (k == "--step")
      opt.step_seconds = std::atof(v.c_str());
    else if (k == "--entries")
      opt.entries = std::atoi(v.c_str());
    else if (k == "--keepalive")
      opt.keepalive_max = std::atoi(v.c_str());
    else if (k == "--base-port")
      opt.base_port = std::atoi(v.c_str());
    else if (k == "--start-ns")
      opt.start_ns = std::atoll(v.c_str());
    else if (k == "--serve" && v.find(':') != std::string::npos) {
      opt.serve_from = std::atoi(v.substr(0, v.find(':')).c_str());
      opt.serve_to = std::atoi(v.substr(v.find(':') + 1).c_str());
    } else {
      std::cerr << "hangdx_fake_workers: unknown option " << k << "\n";
      return 2;
    }
  }
  if (out.empty() || opt.ranks < 1 || (opt.backend != "nccl" && opt.backend != "gloo")) {
    std::cerr << "usage: hangdx_fake_workers --ranks N --out FILE [--backend nccl|gloo] [--step S] [--entries N] "
                 "[--keepalive N]\n";
    return 2;
  }
  hangdx::live::testing::FakeWorkers fleet(opt);
  if (auto st = fleet.Start(); !st.ok()) {
    std::cerr << "hangdx_fake_workers: " << st.message() << "\n";
    return 1;
  }
  {
    std::ofstream f(out);
    for (const auto& u : fleet.Urls()) f << u << "\n";
  }
  std::cout << "ready " << opt.ranks << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    int64_t at = 0;
    if (size_t atpos = line.find('@'); atpos != std::string::npos) {
      at = std::atoll(line.c_str() + atpos + 1);
      line.resize(atpos);
    }
    std::istringstream in(line);
    std::string cmd;
    int rank = -1;
    double seconds = 0;
    in >> cmd >> rank >> seconds;
    if (cmd == "quit") break;
    if (cmd == "served") {
      std::cout << fleet.served() << std::endl;
      continue;
    }
    if (cmd == "hang")
      fleet.Hang(rank, at);
    else if (cmd == "kill")
      fleet.Kill(rank, at);
    else if (cmd == "wedge")
      fleet.Wedge(rank, at);
    else if (cmd == "mismatch")
      fleet.Mismatch(rank, at);
    else if (cmd == "slow")
      fleet.Slow(rank, seconds, at);
    else {
      std::cout << "error: unknown command " << cmd << std::endl;
      continue;
    }
    std::cout << "ok" << std::endl;
  }
  fleet.Stop();
  return 0;
}
