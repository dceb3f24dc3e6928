// hangdx/base/mapped_file.h
// A read-only memory map of a whole file: parsers read it in place, so an
// input larger than memory is paged in and out by the kernel instead of
// being copied onto the heap.
//
//   StatusOr<MappedFile> f = MappedFile::Open(path);
//   if (f.ok()) Parse(f->data());
//   if (f->shrank()) ...  // the file was cut while it was read: distrust the result
//
// A file that shrinks while it is mapped (a log rotated with copytruncate
// under a live job) would kill the process with SIGBUS on the first read
// past its new end. Mappings are registered with a SIGBUS handler that
// instead maps zero pages over the rest of the mapping and marks it shrunk:
// the reader sees NUL bytes, finishes, and the caller reports the file.
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
  // A file that reports size 0 is read with read(2) instead, up to
  // `max_bytes`: a /proc or sysfs file has content but no size
  // (read_without_size() then says so); a truly empty file gives an empty
  // view.
  static StatusOr<MappedFile> Open(const std::string& path, uint64_t max_bytes = uint64_t{1} << 40);

  std::string_view data() const { return {static_cast<const char*>(addr_), size_}; }
  // True when the file shrank while mapped and a read past its new end
  // found zeros instead of data: what was read cannot be trusted.
  bool shrank() const;
  // True when the file reported size 0 but held bytes when read (a /proc
  // or sysfs file): data() holds what read(2) gave.
  bool read_without_size() const { return read_without_size_; }

 private:
  void Release();
  void* addr_ = nullptr;
  size_t size_ = 0;
  int slot_ = -1;      // registration with the SIGBUS handler, -1 none
  std::string owned_;  // the bytes, when read instead of mapped
  bool read_without_size_ = false;
};

// Drops the whole pages of `done` that lie in a live MappedFile mapping
// from this process's resident memory: a reader calls it on what it has
// read past, so that reading a 10 GB log does not keep 10 GB resident (a
// mapped page touched stays in the process's RSS until it is unmapped).
// The bytes stay readable: a later read finds them in the page cache (a
// minor fault), as they were. A no-op for memory that is not such a
// mapping (a file read with read(2), a test's string). Thread-safe.
void ReleaseReadPages(std::string_view done);

}  // namespace hangdx
