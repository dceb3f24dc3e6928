#include "bench_job.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hangdx::bench {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string GeneratedDump(int entries, bool json) {
  const char* env = std::getenv("HANGDX_BENCH_DIR");
  std::string root = env && *env ? env : "/tmp/hangdx-bench";
  std::string dir = root + "/gbench_r1024_e" + std::to_string(entries);
  std::string file = dir + "/nccl_trace_rank_0" + (json ? ".json" : "");
  if (!std::filesystem::exists(file)) {
    std::string cmd = "python3 '" HANGDX_SOURCE_DIR "/scripts/synth/gen_dumps.py' --ranks 1024 --entries " +
                      std::to_string(entries) + " --pgs 3 --fault none --format both --only 0 -q --out '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) return "";
  }
  return std::filesystem::exists(file) ? file : "";
}

std::string GeneratedNcclLog(int mb) {
  const char* env = std::getenv("HANGDX_BENCH_DIR");
  std::string root = env && *env ? env : "/tmp/hangdx-bench";
  std::string file = root + "/nccl_info_" + std::to_string(mb) + "mb_rank3.log";
  if (!std::filesystem::exists(file)) {
    std::filesystem::create_directories(root);
    std::string cmd = "python3 '" HANGDX_SOURCE_DIR "/scripts/synth/gen_nccl_log.py' --mb " + std::to_string(mb) +
                      " -o '" + file + "'";
    if (std::system(cmd.c_str()) != 0) return "";
  }
  return std::filesystem::exists(file) ? file : "";
}

}  // namespace hangdx::bench
