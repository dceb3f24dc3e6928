#include "hangdx/ingest/logs/line_util.h"

#include <gtest/gtest.h>

namespace hangdx::ingest::logs {
namespace {

std::string_view Peel(std::string_view s, int64_t* rank, int64_t* local) {
  *rank = *local = -1;
  return PeelPrefixes(s, rank, local);
}

TEST(LineUtil, PeelsForeignPrefixes) {
  int64_t r, lr;
  EXPECT_EQ(Peel("(RayTrainWorker pid=615, ip=10.72.7.6) x NCCL INFO y", &r, &lr), "x NCCL INFO y");
  EXPECT_EQ(Peel("Fri Aug 11 12:31:45 2023[1,3]<stdout>:host:1:1 [0] NCCL INFO z", &r, &lr),
            "host:1:1 [0] NCCL INFO z");
  EXPECT_EQ(r, 3);
  EXPECT_EQ(Peel("2025-11-24T03:20:21.001125857Z [rank3]:[E ProcessGroupNCCL.cpp:1] m", &r, &lr),
            "[E ProcessGroupNCCL.cpp:1] m");
  EXPECT_EQ(r, 3);
  EXPECT_EQ(Peel("[default5]:hello", &r, &lr), "hello");
  EXPECT_EQ(lr, 5);
  EXPECT_EQ(r, -1);
  EXPECT_EQ(Peel("12: Thread 4 (idle)", &r, &lr), "Thread 4 (idle)");
  EXPECT_EQ(r, 12);
  EXPECT_EQ(Peel("[1803] text", &r, &lr), "text");
  EXPECT_EQ(r, -1);
  // Not prefixes: c10 severity brackets, PG prefixes.
  EXPECT_EQ(Peel("[E ProcessGroupNCCL.cpp:457] [Rank 3] W", &r, &lr), "[E ProcessGroupNCCL.cpp:457] [Rank 3] W");
}

TEST(LineUtil, CleansAnsiAndCarriageReturns) {
  std::string buf;
  EXPECT_EQ(CleanLine("10%\r50%\r\x1b[1;32mThread 1 (active)\x1b[0m  \r", &buf), "Thread 1 (active)");
  LineReader r("a\r\n\nb");
  Line l;
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.text, "a");
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.text, "");
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.text, "b");
  EXPECT_EQ(l.number, 3);
  EXPECT_EQ(l.offset, 4);
  EXPECT_FALSE(r.Next(&l));
}

TEST(LineUtil, NumbersNeverThrow) {
  int64_t v;
  EXPECT_TRUE(ParseHex("1a", &v));
  EXPECT_EQ(v, 26);
  EXPECT_TRUE(ParseHex("0x139d", &v));
  EXPECT_EQ(v, 0x139d);
  EXPECT_FALSE(ParseHex("ffffffffffffffffff", &v));
  EXPECT_FALSE(ParseDec("18446744073709551615", &v));
  EXPECT_FALSE(ParseDec("", &v));
  EXPECT_EQ(NcclDtypeName(6), "Half");
  EXPECT_EQ(NcclDtypeName(4), "Long");
  EXPECT_EQ(NcclDtypeName(99), "");
}

TEST(LineUtil, LongLinesAreCut) {
  std::string s(kMaxLineBytes * 2, 'x');
  LineReader r(s);
  Line l;
  ASSERT_TRUE(r.Next(&l));
  EXPECT_TRUE(l.truncated);
  EXPECT_EQ(l.text.size(), kMaxLineBytes);
  EXPECT_EQ(r.truncated_lines(), 1);
}

TEST(DecodeText, NulPaddingIsNotBinary) {
  std::string text;
  EXPECT_EQ(DecodeText("a NCCL INFO line\n", &text), TextEncoding::kText);
  // A crashed process's log: trailing NULs, and a run inside.
  std::string padded("line 1\n\0\0line 2\n\0\0\0\0", 19);
  EXPECT_EQ(DecodeText(padded, &text), TextEncoding::kNulPadded);
  EXPECT_EQ(text, "line 1\nline 2\n");
  // NULs only past the head.
  std::string long_log(5000, 'x');
  long_log += std::string(3, '\0');
  EXPECT_EQ(DecodeText(long_log, &text), TextEncoding::kNulPadded);
  EXPECT_EQ(text, std::string(5000, 'x'));
  // All NULs, or NULs among control bytes: binary.
  EXPECT_EQ(DecodeText(std::string(64, '\0'), &text), TextEncoding::kBinary);
  EXPECT_EQ(DecodeText(std::string("\x7f"
                                   "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0\x01\0\0\0",
                                   24),
                       &text),
            TextEncoding::kBinary);
  std::string random;
  for (int i = 0; i < 256; ++i) random.push_back(static_cast<char>((i * 167 + 13) & 0xff));
  EXPECT_EQ(DecodeText(random, &text), TextEncoding::kBinary);
}

TEST(DecodeText, Utf16) {
  std::string text;
  // BOM FF FE (little endian), a non-ASCII unit as '?'.
  EXPECT_EQ(DecodeText(std::string("\xff\xfe"
                                   "a\0b\0\xe9\0\n\0",
                                   10),
                       &text),
            TextEncoding::kUtf16);
  EXPECT_EQ(text, "ab?\n");
  EXPECT_EQ(DecodeText(std::string("\xfe\xff\0a\0b\0\n", 8), &text), TextEncoding::kUtf16);
  EXPECT_EQ(text, "ab\n");
  // No BOM: every other byte NUL.
  EXPECT_EQ(DecodeText(std::string("N\0C\0C\0L\0\n\0", 10), &text), TextEncoding::kUtf16);
  EXPECT_EQ(text, "NCCL\n");
  EXPECT_EQ(DecodeText(std::string("\0N\0C\0C\0L\0\n", 10), &text), TextEncoding::kUtf16);
  EXPECT_EQ(text, "NCCL\n");
}

}  // namespace
}  // namespace hangdx::ingest::logs
