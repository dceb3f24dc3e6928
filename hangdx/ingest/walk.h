// hangdx/ingest/walk.h
// Which inputs the paths a user gives stand for. A folder is searched
// recursively; whatever the search meets is either a file to read or an
// entry that says what it was and why it is not read, so that nothing a
// crashed job left in a shared folder disappears without a word:
//
//   - a symlink to a folder is followed, once: a folder reached again (a
//     symlink loop such as real/back -> ../top, or a folder given twice) is
//     noted and not read again;
//   - a regular file reached twice (a symlink or hard link to it) is read
//     once;
//   - a dangling symlink, a symlink loop (a -> b -> a), a FIFO, a socket, a
//     device: skipped, each with what it was;
//   - a folder that cannot be listed (permission denied): unreadable;
//   - names starting with '.' are not read; one note per folder counts them.
//
//   model::DiagnosticSink notes;
//   std::vector<WalkEntry> inputs = WalkInputs({"dumps/"}, &notes);
//   for (const WalkEntry& e : inputs) if (e.kind == WalkEntry::Kind::kFile) Read(e.path);
//
// Entries come in a deterministic order: each given path in turn, a
// folder's entries sorted by name, depth first.
#pragma once

#include <string>
#include <vector>

#include "hangdx/model/diagnostic_sink.h"

namespace hangdx::ingest {

// One input the walk found.
struct WalkEntry {
  enum class Kind {
    kFile,        // a regular file (maybe through a symlink): read it
    kAgain,       // a folder or file already reached by another path: not read twice
    kSkipped,     // nothing hangdx reads: a dangling symlink, a FIFO, ...
    kUnreadable,  // there is something, but it cannot be read: a folder that cannot be listed, ...
  };
  std::string path;  // as reached from a given path ("dumps/linked/rank_3")
  Kind kind = Kind::kFile;
  // For the kinds but kFile: what it was and why it is not read, for
  // its diagnostic ("a FIFO (named pipe): not read; hangdx reads regular files").
  std::string why;
};

// Walks every path of `paths` that exists (the caller reports those that
// do not) and returns its inputs. Notes that are no input (hidden entries,
// an empty folder, a folder listed only in part) go to *notes. Never fails.
std::vector<WalkEntry> WalkInputs(const std::vector<std::string>& paths, model::DiagnosticSink* notes);

}  // namespace hangdx::ingest
