#include "hangdx/live/bundle.h"

#include <filesystem>
#include <fstream>

namespace hangdx::live {

namespace fs = std::filesystem;

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) return IoError("cannot write " + path);
  return Status::Ok();
}

StatusOr<std::string> WriteBundle(const std::string& root, const std::string& name, const Evidence& e) {
  std::error_code ec;
  fs::create_directories(root, ec);
  fs::path dir = fs::path(root) / name;
  for (int i = 2; fs::exists(dir, ec); ++i) dir = fs::path(root) / (name + "-" + std::to_string(i));
  for (const char* sub : {"fr", "stacks", ".watch"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) return IoError("cannot create " + (dir / sub).string() + ": " + ec.message());
  }
  HANGDX_RETURN_IF_ERROR(WriteInto(dir.string(), e));
  return dir.string();
}

Status WriteInto(const std::string& bundle, const Evidence& e) {
  fs::path dir(bundle);
  for (const auto& [rank, text] : e.fr)
    HANGDX_RETURN_IF_ERROR(WriteTextFile((dir / "fr" / ("rank_" + std::to_string(rank) + ".json")).string(), text));
  for (const auto& [rank, text] : e.stacks)
    HANGDX_RETURN_IF_ERROR(WriteTextFile((dir / "stacks" / ("rank_" + std::to_string(rank) + ".txt")).string(), text));
  if (!e.wait_snapshot.empty())
    HANGDX_RETURN_IF_ERROR(WriteTextFile((dir / "wait_state.json").string(), e.wait_snapshot));
  std::string history;
  for (const auto& line : e.history) history += line + "\n";
  HANGDX_RETURN_IF_ERROR(WriteTextFile((dir / ".watch" / "probes.jsonl").string(), history));
  HANGDX_RETURN_IF_ERROR(WriteTextFile((dir / ".watch" / "stall.json").string(), e.stall_json + "\n"));
  return Status::Ok();
}

}  // namespace hangdx::live
