// hangdx/ingest/explain.h
// "Why didn't hangdx read my log?": for each file, every line the message
// catalogue recognizes, with its row, its captures and whose rank it is
// (and why), or, for a file with no known message, the producer it looks
// like and what was not understood. What `hangdx messages FILE...` prints.
//
//   StatusOr<std::string> text = ExplainMessages({"logs/"}, LoadOptions{});
#pragma once

#include <string>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/ingest/load.h"

namespace hangdx::ingest {

// Explains every file of `paths` (files or folders, as LoadJob takes them;
// ranks from the file names or options.rank_of). Binary and JSON files are
// named with the format that reads them, not scanned. Errors (kNotFound)
// only when no path exists.
StatusOr<std::string> ExplainMessages(const std::vector<std::string>& paths, const LoadOptions& options);

}  // namespace hangdx::ingest
