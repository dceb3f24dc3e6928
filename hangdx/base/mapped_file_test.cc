#include "hangdx/base/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hangdx {
namespace {

std::string TempFile(const std::string& content) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("hangdx_mapped_" + std::to_string(::getpid()))).string();
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(MappedFile, MapsAWholeFile) {
  std::string path = TempFile("hello");
  StatusOr<MappedFile> f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->data(), "hello");
  EXPECT_FALSE(f->shrank());
  MappedFile moved = std::move(f).value();
  EXPECT_EQ(moved.data(), "hello");
  std::remove(path.c_str());
}

TEST(MappedFile, RefusesWhatIsNotARegularFileOrTooBig) {
  EXPECT_EQ(MappedFile::Open("/nonexistent/x").status().code(), Status::Code::kNotFound);
  EXPECT_EQ(MappedFile::Open("/").status().code(), Status::Code::kInvalidArgument);
  std::string path = TempFile("0123456789");
  StatusOr<MappedFile> f = MappedFile::Open(path, 4);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("10 bytes is over the limit of 4"), std::string::npos);
  std::remove(path.c_str());
}

// A log rotated with copytruncate while it is read: the pages past the new
// end read as zeros instead of killing the process with SIGBUS.
TEST(MappedFile, AFileThatShrinksWhileMappedReadsZerosAndSaysSo) {
  long page = ::sysconf(_SC_PAGESIZE);
  std::string content(static_cast<size_t>(page) * 4, 'x');
  std::string path = TempFile(content);
  StatusOr<MappedFile> f = MappedFile::Open(path);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->data().size(), content.size());
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  std::string_view d = f->data();
  EXPECT_EQ(d[50], 'x');             // still in the file
  EXPECT_EQ(d[2 * page + 7], '\0');  // past the new end: would be SIGBUS
  EXPECT_EQ(d[d.size() - 1], '\0');
  EXPECT_TRUE(f->shrank());
  std::remove(path.c_str());
  // Other mappings are unaffected.
  std::string path2 = TempFile("again");
  StatusOr<MappedFile> g = MappedFile::Open(path2);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->shrank());
  EXPECT_EQ(g->data(), "again");
  std::remove(path2.c_str());
}

}  // namespace
}  // namespace hangdx
