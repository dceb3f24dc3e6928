// hangdx/base/key_value_rows.h
// The data files hangdx compiles in (the known-bug signatures, and the same
// layout as the message catalogue's rows) are rows of `key value` lines:
// rows are separated by blank lines, a line starting with `#` is a comment,
// the key is the first word and the value the rest of the line (verbatim,
// leading blanks dropped; a key alone has an empty value).
//
//   Status s = ReadKeyValueRows(text, [&](const KeyValueLine& l) -> Status {
//     if (l.starts_row && l.key != "bug") return InvalidArgument("...");
//     ...
//   }, [&] { return CloseRow(); });
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "hangdx/base/status.h"

namespace hangdx {

// One `key value` line of a row.
struct KeyValueLine {
  std::string_view key, value;
  int64_t line = 0;         // 1-based line number in the text
  bool starts_row = false;  // the first line of its row
};

// Calls `on_line` for each key-value line of `text` and `on_row_end` after
// the last line of each row (at the blank line that ends it, or at the end
// of the text). Returns the first error either returns, else Ok. A '\r'
// before a line's '\n' is dropped.
Status ReadKeyValueRows(std::string_view text, const std::function<Status(const KeyValueLine&)>& on_line,
                        const std::function<Status()>& on_row_end);

}  // namespace hangdx
