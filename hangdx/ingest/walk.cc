#include "hangdx/ingest/walk.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

namespace hangdx::ingest {
namespace fs = std::filesystem;
using Sev = model::Diagnostic::Severity;
using Kind = WalkEntry::Kind;

namespace {

// "a FIFO (named pipe)": what a file that is neither a folder nor a
// regular file is, from its stat mode.
std::string SpecialFileWords(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a character device";
  return "not a regular file";
}

// The target a symlink names, as written in it ("../real"), or "?".
std::string LinkTarget(const fs::path& p) {
  std::error_code ec;
  fs::path t = fs::read_symlink(p, ec);
  return ec ? std::string("?") : t.string();
}

// One walk over the given paths: remembers the folders and files already
// reached (by device and inode), so that a symlink loop ends and nothing is
// read twice.
class Walker {
 public:
  Walker(std::vector<WalkEntry>* out, model::DiagnosticSink* notes) : out_(out), notes_(notes) {}

  // Classifies `p` as named (it may be a symlink); walks a folder.
  void Visit(const fs::path& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) {
      Add(p, Kind::kUnreadable, std::string("cannot be looked at: ") + std::strerror(errno));
      return;
    }
    std::string via;
    if (S_ISLNK(st.st_mode)) {
      std::string target = LinkTarget(p);
      if (::stat(p.c_str(), &st) != 0) {
        int e = errno;
        if (e == ELOOP)
          Add(p, Kind::kSkipped, "a symlink loop (-> " + target + ", which leads back to itself): not followed");
        else if (e == ENOENT)
          Add(p, Kind::kSkipped, "a dangling symlink (-> " + target + ", which does not exist): nothing to read");
        else
          Add(p, Kind::kUnreadable, "a symlink (-> " + target + ") that cannot be followed: " + std::strerror(e));
        return;
      }
      via = " (a symlink to " + target + ")";
    }
    std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    if (S_ISDIR(st.st_mode)) {
      auto [it, fresh] = folders_.emplace(id, p.string());
      if (!fresh) {
        Add(p, Kind::kAgain,
            "the folder " + it->second + via + ", already read (a symlink loop, or given twice): not read again");
        return;
      }
      List(p);
      return;
    }
    if (S_ISREG(st.st_mode)) {
      auto [it, fresh] = files_.emplace(id, p.string());
      if (!fresh) {
        Add(p, Kind::kAgain, "the same file as " + it->second + via + " (a symlink or hard link to it): read once");
        return;
      }
      Add(p, Kind::kFile, "");
      return;
    }
    Add(p, Kind::kSkipped, SpecialFileWords(st.st_mode) + via + ": not read; hangdx reads regular files");
  }

 private:
  // Visits the entries of folder `dir` in name order; names starting with
  // '.' are counted in a note, not read.
  void List(const fs::path& dir) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      Add(dir, Kind::kUnreadable, "a folder that cannot be listed: " + ec.message() + "; what it holds is not read");
      return;
    }
    std::vector<fs::path> names;
    size_t hidden = 0;
    for (fs::directory_iterator end; it != end; it.increment(ec)) {
      if (ec) break;
      std::string name = it->path().filename().string();
      if (!name.empty() && name[0] == '.') {
        ++hidden;
        continue;
      }
      names.push_back(it->path());
    }
    if (ec) notes_->Add(Sev::kWarning, dir.string(), "cannot list folder completely: " + ec.message());
    if (hidden > 0)
      notes_->Add(Sev::kInfo, dir.string(),
                  std::to_string(hidden) + " hidden " + (hidden == 1 ? "entry" : "entries") +
                      " (names starting with '.') not read");
    if (names.empty() && hidden == 0 && !ec) notes_->Add(Sev::kWarning, dir.string(), "folder holds no files");
    std::sort(names.begin(), names.end());
    for (const fs::path& n : names) Visit(n);
  }

  void Add(const fs::path& p, Kind kind, std::string why) { out_->push_back({p.string(), kind, std::move(why)}); }

  std::vector<WalkEntry>* out_;
  model::DiagnosticSink* notes_;
  std::map<std::pair<dev_t, ino_t>, std::string> folders_, files_;  // reached so far -> path first reached by
};

}  // namespace

std::vector<WalkEntry> WalkInputs(const std::vector<std::string>& paths, model::DiagnosticSink* notes) {
  std::vector<WalkEntry> out;
  Walker walker(&out, notes);
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::exists(p, ec)) walker.Visit(p);
  }
  return out;
}

}  // namespace hangdx::ingest
