// hangdx/base/file.h
// Reading input files whole, with a size cap so a hostile or huge file
// cannot exhaust memory.
#pragma once

#include <cstdint>
#include <string>

#include "hangdx/base/status.h"

namespace hangdx {

// Reads the file at `path` into memory. Errors: kNotFound if it does not
// exist, kIo if it cannot be read, kInvalidArgument if it is larger than
// `max_bytes` (the message gives its size and the cap).
StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes = uint64_t{4} << 30);

}  // namespace hangdx
