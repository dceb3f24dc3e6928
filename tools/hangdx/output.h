// tools/hangdx/output.h
// Where a subcommand's output goes: stdout or the file of -o.
#pragma once

#include <string>

namespace hangdx::tools {

// Writes `text` to stdout ("" or "-") or to the file `output`; 0, or 2 when
// it cannot be written (a full disk, a closed pipe, an unwritable file),
// said on stderr.
int WriteOut(const std::string& text, const std::string& output);

}  // namespace hangdx::tools
