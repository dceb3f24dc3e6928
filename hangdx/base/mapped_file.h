// hangdx/base/mapped_file.h
// A read-only memory map of a whole file: parsers read it in place, so an
// input larger than memory is paged in and out by the kernel instead of
// being copied onto the heap.
//
//   StatusOr<MappedFile> f = MappedFile::Open(path);
//   if (f.ok()) Parse(f->data());
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hangdx/base/status.h"

namespace hangdx {

// Owns one mapping; movable, not copyable. Thread-compatible.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }
  MappedFile& operator=(MappedFile&& o) noexcept;
  ~MappedFile();

  // Maps `path`. Errors: kNotFound (no such file), kInvalidArgument (not a
  // regular file, or larger than `max_bytes`), kIo (open/mmap failed).
  // An empty file maps to an empty view.
  static StatusOr<MappedFile> Open(const std::string& path, uint64_t max_bytes = uint64_t{1} << 40);

  std::string_view data() const { return {static_cast<const char*>(addr_), size_}; }

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hangdx
