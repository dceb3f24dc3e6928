#include "hangdx/base/file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hangdx {

StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return InvalidArgument(path + ": " + std::to_string(st.st_size) + " bytes is over the limit of " +
                           std::to_string(max_bytes));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return IoError(path + ": " + std::strerror(errno));
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t n = data.empty() ? 0 : std::fread(data.data(), 1, data.size(), f);
  bool err = std::ferror(f);
  std::fclose(f);
  if (err) return IoError(path + ": read failed");
  data.resize(n);
  return data;
}

}  // namespace hangdx
