#include "hangdx/ingest/formats/flight_recorder/pickle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "hangdx/base/file.h"

namespace hangdx::ingest {
namespace {

std::string TestFile(const std::string& name) {
  auto data = ReadFile(std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata/" + name);
  EXPECT_TRUE(data.ok()) << data.status().message();
  return data.ok() ? *data : std::string();
}

// The expected values are those make_pickles.py gave CPython's pickle.
class PickleProtocols : public ::testing::TestWithParam<int> {};

TEST_P(PickleProtocols, ReadsWhatCPythonWrote) {
  PickleDocument doc;
  PickleError err;
  ASSERT_TRUE(doc.Parse(TestFile("cpython_proto" + std::to_string(GetParam()) + "_data.pickle"), &err)) << err.message;
  EXPECT_EQ(doc.protocol(), GetParam());
  const PickleValue& root = doc.root();
  ASSERT_TRUE(root.is_dict());
  EXPECT_EQ(root.Get("version")->s(), "2.10");
  const PickleValue* entries = root.Get("entries");
  ASSERT_TRUE(entries && entries->kind() == PickleValue::Kind::kList);
  ASSERT_EQ(entries->size(), 2u);
  const PickleValue& e0 = entries->c()->items[0];
  EXPECT_EQ(e0.Get("x")->i(), -1);
  EXPECT_EQ(e0.Get("big")->i(), 1796021190774836354LL);
  EXPECT_EQ(e0.Get("neg")->i(), -300000);
  EXPECT_DOUBLE_EQ(e0.Get("f")->f(), 1.5);
  EXPECT_TRUE(e0.Get("t")->b());
  EXPECT_EQ(e0.Get("n")->kind(), PickleValue::Kind::kNone);
  EXPECT_EQ(e0.Get("huge")->kind(), PickleValue::Kind::kBigInt);
  EXPECT_EQ(e0.Get("u")->s(), "h\xc3\xa9llo");
  if (GetParam() >= 4) {
    EXPECT_EQ(e0.Get("b")->s(), std::string("\x00\x01", 2));
    EXPECT_EQ(e0.Get("s")->kind(), PickleValue::Kind::kSet);
    EXPECT_EQ(e0.Get("s")->size(), 2u);
  }
  const PickleValue* tup = e0.Get("tup");
  ASSERT_EQ(tup->kind(), PickleValue::Kind::kTuple);
  EXPECT_EQ(tup->c()->items[1].s(), "default_pg");
  // The frame dict is memoised once and fetched again: one shared object.
  const PickleValue* f0 = &e0.Get("frames")->c()->items[0];
  const PickleValue* f1 = &entries->c()->items[1].Get("frames")->c()->items[0];
  EXPECT_EQ(f0->c(), f1->c());
  EXPECT_EQ(f0->Get("line")->i(), 3);
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, PickleProtocols, ::testing::Values(2, 3, 4, 5));

TEST(Pickle, RefusesCodeExecutionWithoutSideEffects) {
  ::unlink("/tmp/hangdx_pwned");
  for (const char* name : {"evil_proto2_data.pickle", "evil_proto4_data.pickle"}) {
    PickleDocument doc;
    PickleError err;
    EXPECT_FALSE(doc.Parse(TestFile(name), &err));
    EXPECT_NE(err.message.find("refused opcode"), std::string::npos) << err.message;
    EXPECT_TRUE(err.message.find("GLOBAL") != std::string::npos) << err.message;
    EXPECT_GE(err.offset, 2);
  }
  struct stat st;
  EXPECT_NE(::stat("/tmp/hangdx_pwned", &st), 0) << "a refused pickle had a side effect";
}

TEST(Pickle, RefusesEveryObjectBuildingOpcode) {
  for (int op :
       {int{'c'}, 0x93, int{'R'}, int{'b'}, int{'i'}, int{'o'}, 0x81, 0x92, int{'P'}, int{'Q'}, 0x82, 0x83, 0x84}) {
    std::string data = "\x80\x02";
    data += "N";  // something on the stack
    data += static_cast<char>(op);
    data += "....";
    PickleDocument doc;
    PickleError err;
    EXPECT_FALSE(doc.Parse(data, &err)) << int(op);
    EXPECT_EQ(err.offset, 3) << int(op);
    EXPECT_NE(err.message.find("refused opcode"), std::string::npos) << err.message;
  }
}

TEST(Pickle, TruncationNamesTheOffset) {
  std::string full = TestFile("cpython_proto2_data.pickle");
  for (size_t cut : {size_t{1}, size_t{2}, size_t{10}, full.size() / 2, full.size() - 1}) {
    PickleDocument doc;
    PickleError err;
    EXPECT_FALSE(doc.Parse(full.substr(0, cut), &err)) << cut;
    EXPECT_GE(err.offset, 0);
    EXPECT_LE(err.offset, static_cast<int64_t>(cut));
    EXPECT_FALSE(err.message.empty());
  }
}

TEST(Pickle, MalformedStructure) {
  struct Case {
    std::string data;
    const char* needle;
  };
  std::vector<Case> cases = {
      {std::string("\x80\x02h\x05.", 5), "never stored"},
      {std::string("\x80\x02"
                   "e.",
                   4),
       "no MARK"},
      {std::string("\x80\x02NN.", 5), "STOP with 2 values"},
      {std::string("\x80\x02(N.", 5), "marks"},
      {std::string("\x80\x02N\xff.", 5), "unknown"},
      {std::string("\x80\x09N.", 4), "protocol 9"},
      {std::string("\x80\x02X\xff\xff\xff\x7f", 7), "truncated"},
      {std::string("\x80\x02NN"
                   "a.",
                   6),
       "non-list"},
  };
  for (const auto& c : cases) {
    PickleDocument doc;
    PickleError err;
    EXPECT_FALSE(doc.Parse(c.data, &err));
    EXPECT_NE(err.message.find(c.needle), std::string::npos) << err.message;
  }
}

TEST(Pickle, SelfReferentialListDoesNotHang) {
  // l = []; l.append(l): EMPTY_LIST BINPUT 0 BINGET 0 APPEND STOP
  std::string data(
      "\x80\x02]q\x00h\x00"
      "a.",
      9);
  PickleDocument doc;
  PickleError err;
  ASSERT_TRUE(doc.Parse(data, &err)) << err.message;
  EXPECT_EQ(doc.root().c()->items[0].c(), doc.root().c());
}

TEST(Pickle, EmptyContainersShareNoStorageUntilFilled) {
  // A list of 100,000 empty lists, dicts and tuples: one shared empty
  // container, no arena entry each (10 MB of `]` took 980 MB).
  std::string data = "\x80\x02](";
  for (int i = 0; i < 100000; ++i) data += "]})"[i % 3];
  data += "e.";
  PickleDocument doc;
  PickleError err;
  ASSERT_TRUE(doc.Parse(data, &err)) << err.message;
  const auto& items = doc.root().c()->items;
  ASSERT_EQ(items.size(), 100000u);
  EXPECT_EQ(items[0].kind(), PickleValue::Kind::kList);
  EXPECT_EQ(items[1].kind(), PickleValue::Kind::kDict);
  EXPECT_EQ(items[2].kind(), PickleValue::Kind::kTuple);
  for (const auto& v : items) ASSERT_EQ(v.size(), 0u);
  EXPECT_EQ(items[0].c(), items[99999].c());
}

TEST(Pickle, MemoisedOrDuplicatedEmptyListIsOneObject) {
  // l = []; memo 0; fetch 0; append 5 to the fetched copy; pop it: l is [5].
  std::string memo(
      "\x80\x02]q\x00h\x00K\x05"
      "a0.",
      12);
  // l = []; DUP; append 7 to the copy; pop it: l is [7].
  std::string dup(
      "\x80\x02]2K\x07"
      "a0.",
      9);
  for (const auto& [data, want] : {std::pair{memo, 5}, std::pair{dup, 7}}) {
    PickleDocument doc;
    PickleError err;
    ASSERT_TRUE(doc.Parse(data, &err)) << err.message;
    ASSERT_EQ(doc.root().size(), 1u);
    EXPECT_EQ(doc.root().c()->items[0].i(), want);
  }
}

// Pickle opcodes of protocol 2, for the streaming tests.
std::string Le32(uint32_t v) {
  std::string s(4, '\0');
  for (int k = 0; k < 4; ++k) s[k] = static_cast<char>((v >> (8 * k)) & 0xff);
  return s;
}
std::string Str(std::string_view s) { return "X" + Le32(static_cast<uint32_t>(s.size())) + std::string(s); }
std::string Int(uint32_t v) { return "J" + Le32(v); }
std::string Put(uint32_t key) { return "r" + Le32(key); }
std::string Get(uint32_t key) { return "j" + Le32(key); }
// {"version": "2.10", "entries": [entries...]} as CPython writes it: the
// list's items between MARK and APPENDS, memo keys from `first_key` on.
std::string Dump(const std::string& entries) {
  return "\x80\x02}" + Put(0) + "(" + Str("version") + Str("2.10") + Str("entries") + "]" + Put(1) + "(" + entries +
         "eu.";
}

// Collects what a streamed parse hands over, while it is valid.
struct Collect final : PickleItemSink {
  std::vector<int64_t> a;
  std::vector<const PickleContainer*> shared;
  std::vector<bool> stable;
  void Item(const PickleValue& item) override {
    a.push_back(item.Get("a") ? item.Get("a")->i() : -1);
    const PickleValue* f = item.Get("frames") ? item.Get("frames") : item.Get("f");
    shared.push_back(f && f->is_seq() && f->size() ? f->c()->items[0].c() : nullptr);
    stable.push_back(f && f->is_seq() && f->size() ? f->c()->items[0].c()->stable : false);
  }
};

TEST(PickleStreaming, EachEntryIsHandedOverOnceCompleteAndItsValuesAreReused) {
  // 10,000 entries {"a": i, "l": [i], "f": [frame]}, every container
  // memoised (as CPython does), the frame dict made in entry 0 and fetched
  // by the others: the items come in order, the frame stays one stable
  // object, and the document holds a few containers instead of 40,000.
  std::string entries;
  uint32_t key = 2;
  const uint32_t frame_key = 50000;
  for (uint32_t i = 0; i < 10000; ++i) {
    entries += "}" + Put(key++) + "(" + Str("a") + Int(i) + Str("l") + "]" + Put(key++) + Int(i) + "a" + Str("f") +
               "]" + Put(key++);
    entries += i == 0 ? "}" + Put(frame_key) + "(" + Str("line") + Int(7) + "u" : Get(frame_key);
    entries += "au";
  }
  std::string data = Dump(entries);
  PickleDocument doc;
  PickleError err;
  Collect got;
  ASSERT_TRUE(doc.ParseViewStreaming(data, "entries", &got, &err)) << err.message;
  EXPECT_EQ(doc.streamed(), 10000u);
  ASSERT_EQ(got.a.size(), 10000u);
  for (uint32_t i = 0; i < 10000; ++i) ASSERT_EQ(got.a[i], i);
  for (size_t i = 0; i < got.shared.size(); ++i) {
    ASSERT_EQ(got.shared[i], got.shared[0]) << i;
    ASSERT_TRUE(got.stable[i]) << i;
  }
  EXPECT_EQ(got.shared[0]->items[1].i(), 7);  // the frame outlives its entry
  EXPECT_LT(doc.containers(), 16u);
  EXPECT_EQ(doc.root().Get("entries")->size(), 0u);  // the list got none of them
  EXPECT_EQ(doc.root().Get("version")->s(), "2.10");
  // The same bytes parsed whole: the list holds every entry.
  PickleDocument whole;
  ASSERT_TRUE(whole.ParseView(data, &err)) << err.message;
  EXPECT_EQ(whole.root().Get("entries")->size(), 10000u);
  EXPECT_GE(whole.containers(), 30000u);
}

TEST(PickleStreaming, CPythonDumpsStreamAsTheyParse) {
  for (int proto : {2, 3, 4, 5}) {
    std::string data = TestFile("cpython_proto" + std::to_string(proto) + "_data.pickle");
    PickleDocument doc;
    PickleError err;
    Collect got;
    ASSERT_TRUE(doc.ParseViewStreaming(data, "entries", &got, &err)) << err.message;
    EXPECT_EQ(doc.streamed(), 2u) << proto;
    ASSERT_EQ(got.shared.size(), 2u);
    ASSERT_NE(got.shared[0], nullptr);
    EXPECT_EQ(got.shared[0], got.shared[1]) << proto;  // one memoised frame dict
    EXPECT_TRUE(got.stable[0]);
  }
}

TEST(PickleStreaming, WhatStreamingCannotFollowIsLeftToTheList) {
  PickleError err;
  // Items APPENDed one by one stay in the list, in order.
  {
    std::string data = "\x80\x02}(" + Str("entries") + "]" + Int(1) + "a" + Int(2) + "au.";
    PickleDocument doc;
    Collect got;
    ASSERT_TRUE(doc.ParseViewStreaming(data, "entries", &got, &err)) << err.message;
    EXPECT_EQ(doc.streamed(), 0u);
    EXPECT_EQ(doc.root().Get("entries")->size(), 2u);
  }
  // An earlier key of the same name is the one a reader gets: not streamed.
  {
    std::string data = "\x80\x02}(" + Str("entries") + "N" + Str("entries") + "](}}eu.";
    PickleDocument doc;
    Collect got;
    ASSERT_TRUE(doc.ParseViewStreaming(data, "entries", &got, &err)) << err.message;
    EXPECT_EQ(doc.streamed(), 0u);
  }
  // A value of an entry stored into a container made before it (the
  // memo's root dict, fetched at the list's level, which hands the entry
  // before it over): streaming stops there, the rest stays in the list.
  {
    std::string data = "\x80\x02}" + Put(0) + "(" + Str("entries") + "](}}" + Get(0) + Str("k") + "]s0}eu.";
    PickleDocument doc;
    Collect got;
    ASSERT_TRUE(doc.ParseViewStreaming(data, "entries", &got, &err)) << err.message;
    EXPECT_EQ(doc.streamed(), 2u);
    EXPECT_EQ(doc.root().Get("entries")->size(), 1u);
    EXPECT_TRUE(doc.root().Get("k")->is_seq());
  }
  // The items' MARK closed by another opcode than APPENDS: refused.
  {
    std::string data = "\x80\x02}(" + Str("entries") + "](}}}l0u.";
    PickleDocument doc;
    Collect got;
    EXPECT_FALSE(doc.ParseViewStreaming(data, "entries", &got, &err));
    EXPECT_NE(err.message.find("streamed list"), std::string::npos) << err.message;
  }
  // A pickle the walk of its opcodes refuses is parsed whole, and fails so.
  {
    std::string data = "\x80\x02}(" + Str("entries") + "](}}eu";
    PickleDocument doc;
    Collect got;
    EXPECT_FALSE(doc.ParseViewStreaming(data, "entries", &got, &err));
    EXPECT_EQ(doc.streamed(), 0u);
    EXPECT_NE(err.message.find("truncated"), std::string::npos) << err.message;
  }
}

TEST(Pickle, ValuesAreSixteenBytes) { EXPECT_EQ(sizeof(PickleValue), 16u); }

TEST(Pickle, Sniff) {
  EXPECT_TRUE(LooksLikePickle(std::string("\x80\x02}.", 4)));
  EXPECT_FALSE(LooksLikePickle("{\"version\": 1}"));
  EXPECT_FALSE(LooksLikePickle(""));
}

}  // namespace
}  // namespace hangdx::ingest
