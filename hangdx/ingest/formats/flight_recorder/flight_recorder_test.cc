#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "hangdx/base/file.h"
#include "hangdx/ingest/formats/flight_recorder/direct_pickle.h"
#include "hangdx/ingest/formats/flight_recorder/flat_pickle.h"
#include "hangdx/ingest/json_tree.h"
#include "hangdx/ingest/parse_for_test.h"

namespace hangdx::ingest {
namespace {

// Parses `data` (named `file`) with `parse` as a dump of unknown rank; *d
// gets the dump (left alone when there is none). Returns what `parse` does.
bool Parse(bool (*parse)(const Artifact&, RecordSink*), const std::string& data, const std::string& file,
           model::RankDump* d, std::vector<model::Diagnostic>* diags) {
  bool ok = false;
  DumpBuilder::Result r = ParseForTest(parse, data, -1, diags, file, &ok);
  if (!r.dumps.empty()) *d = std::move(r.dumps[0]);
  return ok;
}

std::string TestFile(const std::string& name) {
  auto data = ReadFile(std::string(HANGDX_SOURCE_DIR) + "/hangdx/ingest/formats/flight_recorder/testdata/" + name);
  EXPECT_TRUE(data.ok()) << data.status().message();
  return data.ok() ? *data : std::string();
}

// The values below were read off the dumps with Python's pickle/json
// modules (make_gloo_dump.py wrote them with torch 2.13, gloo, 2 ranks).
void ExpectRank0(const model::RankDump& d) {
  EXPECT_EQ(d.version, "2.10");
  ASSERT_EQ(d.ops.size(), 5u);
  const auto& first = d.ops[0];
  EXPECT_EQ(first.record_id, 0);
  EXPECT_EQ(first.pg_id, 0);
  EXPECT_EQ(first.pg_name, "0");
  EXPECT_EQ(first.pg_desc, "default_pg");
  EXPECT_EQ(first.collective_seq, 1);
  EXPECT_EQ(first.backend, "gloo");
  EXPECT_EQ(first.op, "all_reduce");
  EXPECT_EQ(first.input_sizes, (std::vector<model::Shape>{{4, 4}}));
  EXPECT_EQ(first.input_dtypes, (std::vector<std::string>{"Float"}));
  EXPECT_EQ(first.timeout_ms, 2000);
  EXPECT_FALSE(first.is_p2p);
  EXPECT_TRUE(first.retired);
  EXPECT_EQ(first.state, model::OpState::kScheduled);
  EXPECT_TRUE(first.completed);  // gloo: retired means it ended
  EXPECT_EQ(d.ops[3].pg_name, "1");
  EXPECT_EQ(d.ops[3].pg_desc, "undefined");
  EXPECT_EQ(d.ops[3].op, "broadcast");
  EXPECT_EQ(d.ops[4].collective_seq, 4);
  // gloo records no pg members: the placeholder is dropped.
  EXPECT_TRUE(d.pg_config.empty());
  ASSERT_EQ(d.pg_status.count(0), 1u);
  EXPECT_EQ(d.pg_status.at(0).last_completed, 4);
  EXPECT_EQ(d.pg_status.at(0).last_started, -1);
}

TEST(FlightRecorder, RealGlooPickle) {
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderPickle, TestFile("gloo_rank0.pickle"), "gloo_rank0.pickle", &d, &diags));
  EXPECT_TRUE(d.from_flight_recorder);
  ExpectRank0(d);
  ASSERT_FALSE(d.ops[0].frames->empty());
  const auto& f = d.frames[d.ops[0].frames->at(0)];
  EXPECT_EQ(f.name, "all_reduce");
  EXPECT_NE(f.filename.find("distributed_c10d.py"), std::string::npos);
  // The same frames are shared by entries from the same call site.
  EXPECT_EQ(d.ops[0].frames->at(0), d.ops[1].frames->at(0));
  for (const auto& diag : diags) ADD_FAILURE() << diag.message;
}

TEST(FlightRecorder, RealGlooJsonMatchesPickle) {
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderJson, TestFile("gloo_rank0.json"), "gloo_rank0.json", &d, &diags));
  EXPECT_TRUE(d.from_flight_recorder);
  ExpectRank0(d);
  EXPECT_TRUE(d.ops[0].frames->empty());  // JSON dumps carry no stacks
  EXPECT_EQ(d.ops[0].time_completed_ns, 0);
  for (const auto& diag : diags) ADD_FAILURE() << diag.message;
}

// testdata/torch/c_detail_sub, rank 1 (TORCH_DISTRIBUTED_DEBUG=DETAIL, a
// new_group): every entry's process_group is ('', ''); their pg_ids, read
// with Python's pickle module, are 1 1 0 1 1 0 3 3 2 3 3.
void ExpectEachPgIdItsOwnPg(const model::RankDump& d) {
  const std::vector<int64_t> ids = {1, 1, 0, 1, 1, 0, 3, 3, 2, 3, 3};
  const std::vector<int64_t> seqs = {3, 4, 1, 7, 8, 2, 3, 4, 1, 7, 8};
  ASSERT_EQ(d.ops.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(d.ops[i].pg_id, ids[i]) << i;
    EXPECT_EQ(d.ops[i].pg_name, "''#" + std::to_string(ids[i])) << i;
    EXPECT_EQ(d.ops[i].pg_desc, "no name; pg_id " + std::to_string(ids[i])) << i;
    EXPECT_EQ(d.ops[i].collective_seq, seqs[i]) << i;
  }
}

TEST(FlightRecorder, UnnamedPgsOfDetailAreToldApartByPgId) {
  for (const char* f : {"pickle/fr_trace_rank_1", "json/fr_trace_rank_1.json"}) {
    auto data = ReadFile(std::string(HANGDX_SOURCE_DIR) + "/testdata/torch/c_detail_sub/" + f);
    ASSERT_TRUE(data.ok()) << f;
    model::RankDump d;
    std::vector<model::Diagnostic> diags;
    bool pickle = std::string(f).rfind("pickle", 0) == 0;
    ASSERT_TRUE(Parse(pickle ? ParseFlightRecorderPickle : ParseFlightRecorderJson, *data, f, &d, &diags)) << f;
    ExpectEachPgIdItsOwnPg(d);
  }
}

TEST(FlightRecorder, PgStatusLagsRetired) {
  // Rank 1's pg_status says last completed 2 although entry seq 3 retired.
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderPickle, TestFile("gloo_rank1.pickle"), "r1", &d, &diags));
  ASSERT_EQ(d.ops.size(), 4u);
  EXPECT_EQ(d.pg_status.at(0).last_completed, 2);
  EXPECT_TRUE(d.ops[2].completed);
}

TEST(FlightRecorder, NcclStyleJson) {
  // The shape ProcessGroupNCCL writes (flight-recorder.md §1.6, §4 NCCLTraceTest).
  std::string json = R"({
    "version": "2.10", "comm_lib_version": "2.21.5",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
    "pg_status": {"0": {"last_enqueued_collective": "2", "last_started_collective": "-1",
                        "last_completed_collective": "1"}},
    "entries": [
      {"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 1,
       "p2p_seq_id": 0, "op_id": 1, "profiling_name": "nccl:all_reduce", "time_created_ns": 5,
       "input_sizes": [[3, 4]], "input_dtypes": ["Float"], "output_sizes": [[3, 4]],
       "output_dtypes": ["Float"], "state": "completed", "time_discovered_started_ns": 0,
       "time_discovered_completed_ns": 9, "retired": true, "timeout_ms": 600000, "is_p2p": false},
      {"record_id": 1, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 2,
       "p2p_seq_id": 0, "op_id": 2, "profiling_name": "nccl:all_reduce", "time_created_ns": 6,
       "input_sizes": [[3, 4]], "input_dtypes": ["Float"], "output_sizes": [[3, 4]],
       "output_dtypes": ["Float"], "state": "scheduled", "retired": true, "timeout_ms": 600000,
       "is_p2p": false, "duration_ms": 1.5}
    ]})";
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderJson, json, "x.json", &d, &diags));
  EXPECT_EQ(d.comm_lib_version, "2.21.5");
  EXPECT_EQ(d.pg_config.at("0").ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(d.pg_config.at("0").ranks_known);
  EXPECT_EQ(d.pg_status.at(0).last_enqueued, 2);
  EXPECT_TRUE(d.ops[0].completed);
  EXPECT_FALSE(d.ops[1].completed);  // NCCL: retired but not completed = timed out
  EXPECT_DOUBLE_EQ(d.ops[1].duration_ms, 1.5);
  EXPECT_TRUE(diags.empty());
}

TEST(FlightRecorder, BatchedP2PSettledByItsCompletedGroupEnd) {
  // batch_isend_irecv: the member entries stay "scheduled" (pytorch#137969);
  // the closing "coalesced" entry completes, so the whole group did.
  std::string json = R"({"version": "2.10", "entries": [
    {"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 0, "p2p_seq_id": 1,
     "profiling_name": "nccl:send 0->1", "state": "scheduled", "is_p2p": true},
    {"record_id": 1, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 0, "p2p_seq_id": 1,
     "profiling_name": "nccl:recv 0<-1", "state": "scheduled", "is_p2p": true},
    {"record_id": 2, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 0, "p2p_seq_id": 1,
     "profiling_name": "nccl:coalesced", "state": "completed", "is_p2p": true},
    {"record_id": 3, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 0, "p2p_seq_id": 2,
     "profiling_name": "nccl:send 0->1", "state": "scheduled", "is_p2p": true}]})";
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderJson, json, "x.json", &d, &diags));
  ASSERT_EQ(d.ops.size(), 4u);
  EXPECT_TRUE(d.ops[0].completed);
  EXPECT_TRUE(d.ops[1].completed);
  EXPECT_TRUE(d.ops[2].completed);
  EXPECT_FALSE(d.ops[3].completed);  // nothing after it finished
}

TEST(FlightRecorder, BadInputBecomesDiagnostics) {
  std::string good = TestFile("gloo_rank0.pickle");
  struct Case {
    std::string data;
    bool pickle;
    const char* needle;
  };
  std::vector<Case> cases = {
      {"", true, "empty"},
      {good.substr(0, good.size() / 3), true, "truncated"},
      {"{\"version\": \"2.10\", \"entries\": [", false, "unreadable JSON at byte"},
      {"[1, 2]", false, "an entry is not a dict"},
      {"\"text\"", false, "neither a dict nor a list"},
      {"{\"version\": \"7.1\", \"entries\": []}", false, "unknown Flight Recorder version '7.1'"},
      // Found by the fuzzer: nlohmann throws out_of_range, not parse_error.
      {"{\"version\": \"2.10\", \"entries\": [{\"profiling_name\": \"x\", \"collective_seq_id\": 1E400}]}", false,
       "number overflow"},
      {"{\"version\": \"2.10\", \"entries\": [{\"profiling_name\": \"nccl:all_reduce\", "
       "\"collective_seq_id\": \"x\"}]}",
       false, "'collective_seq_id' is not an integer"},
  };
  for (const auto& c : cases) {
    model::RankDump d;
    std::vector<model::Diagnostic> diags;
    if (c.pickle)
      Parse(ParseFlightRecorderPickle, c.data, "f", &d, &diags);
    else
      Parse(ParseFlightRecorderJson, c.data, "f", &d, &diags);
    bool found = false;
    for (const auto& diag : diags) {
      EXPECT_EQ(diag.file, "f");
      found = found || diag.message.find(c.needle) != std::string::npos;
    }
    EXPECT_TRUE(found) << c.needle << " not among " << diags.size() << " diagnostics"
                       << (diags.empty() ? "" : ": " + diags[0].message);
  }
}

TEST(FlightRecorder, NegativeOrFarOutOfStepSeqsAreNamed) {
  // Tester F15: seqs shifted to -100.. made a mismatch vanish in silence.
  // Six entries of pg 0: records 0-1 at seqs -97, -96 (negative), record 3
  // at 10^12 among 3 and 4 (the median of 3, 4, 10^12 is 4; 6 entries span
  // at most 6 seqs), record 5 a send with seq -1 (P2P: not looked at).
  auto entry = [](int record, const std::string& seq, const std::string& op = "all_reduce") {
    return R"({"record_id": )" + std::to_string(record) + R"(, "process_group": ["0", "default_pg"], )" +
           R"("collective_seq_id": )" + seq + R"(, "profiling_name": "nccl:)" + op + R"(", "state": "scheduled"})";
  };
  std::string json = R"({"version": "2.10", "entries": [)" + entry(0, "-97") + ", " + entry(1, "-96") + ", " +
                     entry(2, "3") + ", " + entry(3, "1000000000000") + ", " + entry(4, "4") + ", " +
                     entry(5, "-1", "send 0->1") + "]}";
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderJson, json, "x.json", &d, &diags));
  EXPECT_EQ(d.ops.size(), 6u);  // every entry is kept
  std::vector<std::string> got;
  for (const auto& g : diags) {
    EXPECT_EQ(g.file, "x.json");
    got.push_back(g.message);
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "record 0: collective_seq_id -97 of pg 0 is negative (a collective's seq counts up from 0): it is "
                     "matched with no other rank's record, so a mismatch there goes unseen; 1 more record like it",
                     "record 3: collective_seq_id 1000000000000 of pg 0 is far from the pg's other records (around "
                     "seq 4; 6 entries span at most as many seqs): it is matched with no other rank's record"}));
}

TEST(FlightRecorder, SeqsNoJobReachesOrNoIntegerAreNamedOnce) {
  // A dump of one record has no other record to be far from: a seq of 2^50
  // (past 2^40) is named for what it is. A seq that is not an integer is
  // named once, as not an integer, and not also as the seq -1 it left.
  auto entry = [](int record, const std::string& seq) {
    return R"({"record_id": )" + std::to_string(record) + R"(, "process_group": ["0", "default_pg"], )" +
           R"("collective_seq_id": )" + seq + R"(, "profiling_name": "nccl:all_reduce", "state": "scheduled"})";
  };
  auto messages = [](const std::string& json) {
    model::RankDump d;
    std::vector<model::Diagnostic> diags;
    EXPECT_TRUE(Parse(ParseFlightRecorderJson, R"({"version": "2.10", "entries": [)" + json + "]}", "x.json", &d,
                      &diags));
    std::vector<std::string> got;
    for (const auto& g : diags) got.push_back(g.message);
    return got;
  };
  EXPECT_EQ(messages(entry(0, "1125899906842624")),
            (std::vector<std::string>{"record 0: collective_seq_id 1125899906842624 of pg 0 is past 2^40, more "
                                      "collectives than any job issues (a corrupt record?): it is matched with no "
                                      "other rank's record"}));
  EXPECT_EQ(messages(entry(0, "[7]")),
            (std::vector<std::string>{"field 'collective_seq_id' is not an integer"}));
  // 2^40 itself is still a seq (the far check alone judges it).
  EXPECT_TRUE(messages(entry(0, "1099511627776")).empty());
}

}  // namespace
}  // namespace hangdx::ingest

namespace hangdx::ingest {
namespace {

// A dump of `seq` ops whose pg_config text is `config`; `more` is put
// before the closing brace. Its one thread name holds the text
// '"pg_config": {}' to trip a careless scan.
std::string DumpWith(const std::string& config, int seq, const std::string& more = "") {
  std::string entries;
  for (int s = 1; s <= seq; ++s)
    entries += std::string(s > 1 ? "," : "") + R"({"record_id": )" + std::to_string(s - 1) +
               R"(, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": )" + std::to_string(s) +
               R"(, "p2p_seq_id": 0, "op_id": 1, "profiling_name": "nccl:all_reduce", "time_created_ns": 5,
       "input_sizes": [[3]], "input_dtypes": ["Float"], "output_sizes": [[3]], "output_dtypes": ["Float"],
       "state": "completed", "retired": true, "timeout_ms": 600000, "is_p2p": false,
       "thread_name": "\"pg_config\": {}"})";
  return R"({"entries": [)" + entries + R"(], "pg_config": )" + config +
         R"(, "pg_status": {"0": {"last_enqueued_collective": ")" + std::to_string(seq) +
         R"(", "last_started_collective": "-1", "last_completed_collective": ")" + std::to_string(seq) +
         R"("}}, "version": "2.10")" + more + "}";
}

struct Parsed {
  DumpBuilder::Result result;
  std::vector<model::Diagnostic> diags;
};

// The pg_config cache is the nlohmann reader's (simdjson reads a
// 10,000-rank pg_config at memory speed).
Parsed ParseWith(const std::string& data, RankListCache* cache) {
  model::DiagnosticSink sink;
  DumpBuilder out("f", &sink);
  EXPECT_TRUE(ParseFlightRecorderJsonWithNlohmann(Artifact{data, "f", 3, cache}, &out));
  Parsed p{out.Finish(), sink.Take()};
  return p;
}

TEST(FlightRecorder, OneJobsPgConfigIsLexedOnceAndReadTheSame) {
  std::string list = "[0";
  for (int r = 1; r < 100; ++r) list += ", " + std::to_string(r);
  list += "]";  // 390 bytes: long enough to be worth caching
  std::string config = R"({"0": {"desc": "default_pg", "name": "0", "ranks": ")" + list + R"("}})";
  RankListCache cache;
  Parsed first = ParseWith(DumpWith(config, 2), &cache);
  ASSERT_NE(cache.Config(config), nullptr);  // kept for the other ranks
  Parsed second = ParseWith(DumpWith(config, 3), &cache);
  Parsed plain = ParseWith(DumpWith(config, 3), nullptr);
  for (const Parsed* p : {&first, &second, &plain}) {
    ASSERT_EQ(p->result.dumps.size(), 1u);
    const auto& cfg = p->result.dumps[0].pg_config.at("0");
    std::vector<int64_t> want(100);
    for (int r = 0; r < 100; ++r) want[r] = r;
    EXPECT_EQ(cfg.ranks, want);
    EXPECT_EQ(cfg.desc, "default_pg");
    EXPECT_TRUE(p->diags.empty());
  }
  EXPECT_EQ(second.result.dumps[0].ops.size(), 3u);
  EXPECT_EQ(second.result.dumps[0].ops[2].thread_name, "\"pg_config\": {}");
  EXPECT_EQ(second.result.dumps[0].pg_status.at(0).last_completed, 3);
  // A duplicate key elsewhere is warned of as without the cache.
  Parsed dup = ParseWith(DumpWith(config, 1, R"(, "version": "2.9")"), &cache);
  ASSERT_EQ(dup.diags.size(), 1u);
  EXPECT_NE(dup.diags[0].message.find("duplicate JSON key \"version\""), std::string::npos) << dup.diags[0].message;
  // A pg_config with a duplicate key inside is never cached: each dump warns.
  std::string twice = R"({"0": {"desc": "x", "desc": "default_pg", "name": "0", "ranks": ")" + list + R"("}})";
  for (int i = 0; i < 2; ++i) {
    Parsed p = ParseWith(DumpWith(twice, 1), &cache);
    ASSERT_EQ(p.diags.size(), 1u);
    EXPECT_NE(p.diags[0].message.find("duplicate JSON key \"desc\""), std::string::npos);
    EXPECT_EQ(p.result.dumps[0].pg_config.at("0").desc, "default_pg");
  }
  EXPECT_EQ(cache.Config(twice), nullptr);
  // Two pg_config keys: the later one is read (and warned of), cache or not.
  Parsed two = ParseWith(DumpWith(config, 1, R"(, "pg_config": {})"), &cache);
  EXPECT_TRUE(two.result.dumps[0].pg_config.empty());
  EXPECT_EQ(two.diags.size(), 1u);
}

// Everything a parse gave, in text: dumps, the unreadable rank, diagnostics.
std::string Describe(const DumpBuilder::Result& r, const std::vector<model::Diagnostic>& diags, bool ok) {
  std::ostringstream o;
  auto list = [&](const auto& v) {
    o << "[";
    for (const auto& x : v) o << x << ",";
    o << "]";
  };
  o << "ok=" << ok << " unreadable=" << r.unreadable_rank << "\n";
  for (const model::RankDump& d : r.dumps) {
    o << "rank " << d.rank << " v=" << d.version << " lib=" << d.comm_lib_version << " fr=" << d.from_flight_recorder
      << "\n";
    for (const model::OpRecord& op : d.ops) {
      o << op.record_id << " " << op.pg_id << " " << op.pg_name << "/" << op.pg_desc << " " << op.collective_seq << " "
        << op.p2p_seq << " " << op.op_id << " " << op.profiling_name << " " << op.backend << " " << op.op << " "
        << op.p2p_self_local << " " << op.p2p_peer_local << " " << static_cast<int>(op.state) << op.is_p2p << op.retired
        << op.completed << " " << op.source << " " << op.time_created_ns << " " << op.time_started_ns << " "
        << op.time_completed_ns << " " << op.duration_ms << " " << op.timeout_ms << " " << op.thread_name << " "
        << op.thread_id << " ";
      for (const auto* shapes : {&*op.input_sizes, &*op.output_sizes})
        for (const auto& shape : *shapes) list(shape);
      list(*op.input_dtypes);
      list(*op.output_dtypes);
      list(*op.frames);
      o << "\n";
    }
    for (const model::Frame& f : d.frames) o << "frame " << f.name << " " << f.filename << " " << f.line << "\n";
    for (const auto& [key, c] : d.pg_config) {
      o << "pg " << key << " " << c.name << " " << c.desc << " " << c.ranks_known << " " << c.size << " ";
      list(c.ranks.get());
      o << "\n";
    }
    for (const auto& [id, st] : d.pg_status)
      o << "status " << id << " " << st.last_enqueued << " " << st.last_started << " " << st.last_completed << "\n";
    if (d.history)
      o << "history " << d.history->entries() << " " << d.history->collectives() << " " << d.history->pgs().size()
        << "\n";
    list(d.op_pos);
  }
  for (const model::Diagnostic& g : diags)
    o << "diag " << static_cast<int>(g.severity) << " " << g.rank << " " << g.offset << " " << g.message << "\n";
  return o.str();
}

std::string ParseAndDescribe(bool (*parse)(const Artifact&, RecordSink*), const std::string& data) {
  std::vector<model::Diagnostic> diags;
  bool ok = false;
  DumpBuilder::Result r = ParseForTest(parse, data, 2, &diags, "f.json", &ok);
  return Describe(r, diags, ok);
}

// One random edit of a dump's text: a value replaced by another (the text
// mostly stays JSON, and the simdjson path reads it), or a byte changed,
// a span dropped or repeated, the text cut (mostly not JSON: the fallback).
std::string Mutate(const std::string& text, std::mt19937* rng) {
  static const char* kValues[] = {"0",
                                  "-0",
                                  "-1",
                                  "7",
                                  "1.5",
                                  "-2.5e3",
                                  "1e300",
                                  "1e-400",
                                  "0.1",
                                  "9223372036854775807",
                                  "9223372036854775808",
                                  "18446744073709551615",
                                  "-9223372036854775808",
                                  "true",
                                  "false",
                                  "null",
                                  "\"\"",
                                  "\"12\"",
                                  "\" 12\"",
                                  "\"-3\"",
                                  "\"completed\"",
                                  "\"started\"",
                                  "\"weird\"",
                                  "\"nccl:send 0->1\"",
                                  "\"nccl:recv 1<-0\"",
                                  "\"gloo:broadcast\"",
                                  "\"[0, 1, 2]\"",
                                  "\"[3,1,1]\"",
                                  "\"\\u00e9\\n\\\"\"",
                                  "[]",
                                  "{}",
                                  "[[1, 2], [3]]",
                                  "[[1, \"x\"]]",
                                  "[\"Float\", \"BFloat16\"]",
                                  "[\"0\", \"default_pg\"]",
                                  "[\"0\"]",
                                  "[1, 2]",
                                  "{\"a\": 1}",
                                  "{\"name\": \"f\", \"filename\": \"g.py\", \"line\": 3}",
                                  "\"2.10\"",
                                  "\"3.1\"",
                                  "[true]",
                                  "1E400",
                                  "NaN",
                                  "Infinity",
                                  "18446744073709551616",
                                  "\"\\ud800\"",
                                  "[[[[[[1]]]]]]"};
  static const char* kBytes = "\"\\{}[],:09-.entfu a\x01\xff";
  std::string t = text;
  std::uniform_int_distribution<size_t> pos(0, t.size() - 1);
  switch ((*rng)() % 6) {
    case 0:
    case 1:
    case 2: {  // a value (after a ':' or '[' or ',') replaced
      for (int tries = 0; tries < 50; ++tries) {
        size_t at = pos(*rng);
        if (t[at] != ':' && t[at] != '[' && t[at] != ',') continue;
        size_t start = at + 1;
        while (start < t.size() && t[start] == ' ') ++start;
        if (start >= t.size() || t[start] == '{' || t[start] == '[' || t[start] == ']' || t[start] == '}') continue;
        size_t end = start;
        if (t[end] == '"') {
          for (++end; end < t.size() && t[end] != '"'; ++end)
            if (t[end] == '\\') ++end;
          ++end;
        } else {
          while (end < t.size() && t[end] != ',' && t[end] != '}' && t[end] != ']') ++end;
        }
        if (end > t.size()) continue;
        if (t[start] == '"' && end < t.size() && t[end] == ':') {  // a key: repeat its member
          size_t stop = end;
          while (stop < t.size() && t[stop] != ',' && t[stop] != '}') ++stop;
          return t.substr(0, start) + t.substr(start, stop - start) + ", " + t.substr(start);
        }
        return t.substr(0, start) + kValues[(*rng)() % std::size(kValues)] + t.substr(end);
      }
      return t;
    }
    case 3:
      t[pos(*rng)] = kBytes[(*rng)() % std::strlen(kBytes)];
      return t;
    case 4: {
      size_t at = pos(*rng), n = 1 + (*rng)() % 8;
      return (*rng)() % 2 ? t.erase(at, n) : t.insert(at, t.substr(at, n));
    }
    default:
      return t.substr(0, pos(*rng));
  }
}

// The simdjson path and the nlohmann reader give the same records and
// diagnostics, whatever the text: real dumps edited at random.
TEST(FlightRecorder, SimdjsonAndNlohmannReadersAgreeOnAnyText) {
  std::vector<std::string> seeds = {TestFile("gloo_rank0.json"), TestFile("gloo_rank1.json")};
  for (const char* name : {"a/json/fr_trace_rank_0.json", "k/json/fr_trace_rank_1.json"}) {
    auto data = ReadFile(std::string(HANGDX_SOURCE_DIR) + "/testdata/torch/" + name);
    ASSERT_TRUE(data.ok()) << name;
    seeds.push_back(*data);
  }
  std::mt19937 rng(13);
  size_t fast = 0, total = 0;
  JsonTree tree;
  for (const std::string& seed : seeds) {
    ASSERT_TRUE(tree.Parse(seed));
    for (int i = 0; i < 1500; ++i) {
      std::string text = Mutate(seed, &rng);
      if (i % 3 == 2) text = Mutate(text, &rng);
      ++total;
      fast += tree.Parse(text);
      ASSERT_EQ(ParseAndDescribe(ParseFlightRecorderJson, text),
                ParseAndDescribe(ParseFlightRecorderJsonWithNlohmann, text))
          << text;
    }
  }
  EXPECT_GT(fast, total / 3);  // the simdjson path was taken often enough to count
}


// Every pickle of the repository's real dumps (testdata/, examples/, this
// format's testdata/): the files whose first bytes are a PROTO opcode.
std::vector<std::pair<std::string, std::string>> RealPickles() {
  std::vector<std::pair<std::string, std::string>> out;  // path in the repository, bytes
  namespace fs = std::filesystem;
  const std::string root = HANGDX_SOURCE_DIR;
  std::vector<std::string> paths;
  for (const char* dir : {"testdata", "examples", "hangdx/ingest/formats/flight_recorder/testdata"})
    for (const auto& e : fs::recursive_directory_iterator(root + "/" + dir))
      if (e.is_regular_file()) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());  // the same mutants on every machine
  for (const std::string& p : paths) {
    auto data = ReadFile(p);
    if (data.ok() && LooksLikePickle(*data)) out.emplace_back(p.substr(root.size() + 1), *data);
  }
  return out;
}

// One deterministic edit of a pickle: the bytes cut at a random point, a
// byte replaced (by a random one, or by an opcode of a dump), a span
// dropped or repeated.
std::string MutatePickle(const std::string& data, std::mt19937* rng) {
  static const char kOpcodes[] = "}](eutqhrjKMJX.N\x88\x89\x8a\x8c\x85\x86\x87)G\x94\x95\x80\x02\x05\x06\xff";
  std::string t = data;
  if (t.empty()) return t;
  std::uniform_int_distribution<size_t> pos(0, t.size() - 1);
  switch ((*rng)() % 5) {
    case 0:
      return t.substr(0, pos(*rng));
    case 1:
      t[pos(*rng)] = static_cast<char>((*rng)() & 0xff);
      return t;
    case 2:
      t[pos(*rng)] = kOpcodes[(*rng)() % (sizeof kOpcodes - 1)];
      return t;
    default: {
      size_t at = pos(*rng), n = 1 + (*rng)() % 12;
      return (*rng)() % 2 ? t.erase(at, n) : t.insert(at, t.substr(at, n));
    }
  }
}

// What a parse gave that the loader uses: everything when it succeeded;
// when it failed, its diagnostics and unreadable rank only (the loader
// drops what an unreadable file gave: LoadOne), as the two readers hand
// the entries before the failure over one opcode apart.
std::string DescribeUsed(bool (*parse)(const Artifact&, RecordSink*), const std::string& data) {
  std::vector<model::Diagnostic> diags;
  bool ok = false;
  DumpBuilder::Result r = ParseForTest(parse, data, 2, &diags, "f", &ok);
  if (!ok) r.dumps.clear();
  return Describe(r, diags, ok);
}

// The fast pickle reader (flat_pickle.h) takes every real dump, and gives
// exactly what the general machine gives on them and on 12,000 edits of
// them, whether it reads an edit itself or gives it up, at any point, to
// the general machine.
TEST(FlightRecorder, FastAndGeneralPickleReadersAgree) {
  std::vector<std::string> seeds;
  for (const auto& [path, data] : RealPickles()) seeds.push_back(data);
  ASSERT_GE(seeds.size(), 80u);  // 90 in the repository now
  struct Count final : FlatEntrySink {
    size_t n = 0;
    void Entry(const FlatValue&) override { ++n; }
  } count;
  FlatPickle flat;
  for (const auto& [path, seed] : RealPickles()) {
    // CPython's pickles (this format's testdata/cpython_*) memoise each
    // container before filling it, and some hold sets: the general
    // machine reads those; torch's dumps all go the fast way.
    if (path.find("/cpython_") == std::string::npos && path.find("/evil_") == std::string::npos)
      EXPECT_TRUE(flat.Read(seed, &count)) << "the fast reader declines " << path;
    ASSERT_EQ(DescribeUsed(ParseFlightRecorderPickle, seed), DescribeUsed(ParseFlightRecorderPickleWithMachine, seed))
        << path;
  }
  EXPECT_GT(count.n, 300u);  // entries were streamed (334 now)
  std::mt19937 rng(14);
  size_t fast = 0, resumed = 0, total = 0;
  while (total < 12000) {
    for (const std::string& seed : seeds) {
      std::string text = MutatePickle(seed, &rng);
      if (total % 3 == 2) text = MutatePickle(text, &rng);
      ++total;
      const bool read = flat.Read(text, &count);
      fast += read;
      resumed += !read && flat.streamed() > 0;
      ASSERT_EQ(DescribeUsed(ParseFlightRecorderPickle, text), DescribeUsed(ParseFlightRecorderPickleWithMachine, text))
          << "mutant " << total;
    }
  }
  // The fast reader read many of them itself (16 % now: a cut, most byte
  // changes and most spans dropped or repeated break a pickle), and gave up
  // on many after entries had gone to the converter (Converter::Resume).
  EXPECT_GT(fast, total / 8);
  EXPECT_GT(resumed, total / 8);
  std::printf("%zu mutants, %zu read by the fast reader, %zu given up after entries\n", total, fast, resumed);
}


// BINUNICODE of `v`, not memoised.
std::string PickleStr(const std::string& v) {
  std::string out = "X";
  for (int k = 0; k < 4; ++k) out += static_cast<char>((v.size() >> (8 * k)) & 0xff);
  return out + v;
}

// The opcodes of a pickle as [begin, end) spans, each with its argument;
// the spans end at the first opcode this does not know.
std::vector<std::pair<size_t, size_t>> PickleTokens(const std::string& p) {
  std::vector<std::pair<size_t, size_t>> out;
  auto le = [&](size_t at, size_t n) {
    size_t v = 0;
    for (size_t k = 0; k < n && at + k < p.size(); ++k) v |= static_cast<size_t>(static_cast<unsigned char>(p[at + k])) << (8 * k);
    return v;
  };
  for (size_t i = 0; i < p.size();) {
    const unsigned char op = static_cast<unsigned char>(p[i]);
    size_t n;  // the argument's bytes
    if ((op != 0 && std::strchr("(N}])eut.", op)) || (op >= 0x85 && op <= 0x89) || op == 0x94)
      n = 0;
    else if (op == 'K' || op == 'q' || op == 'h' || op == 0x80)
      n = 1;
    else if (op == 'M')
      n = 2;
    else if (op == 'J' || op == 'r' || op == 'j')
      n = 4;
    else if (op == 'G' || op == 0x95)
      n = 8;
    else if (op == 0x8a || op == 0x8c)
      n = 1 + le(i + 1, 1);
    else if (op == 'X')
      n = 4 + le(i + 1, 4);
    else
      break;
    if (i + 1 + n > p.size()) break;
    out.emplace_back(i, i + 1 + n);
    i += 1 + n;
  }
  return out;
}

// An opcode that may stand for a value or key of an entry: each kind of
// value a field may hold (None, bools, integers small and big, a float,
// strings: keys, states, P2P names, numbers), a memo read, the opcodes of
// containers.
std::string RandomToken(std::mt19937* rng) {
  const auto str = PickleStr;
  static const std::vector<std::string> kTokens = {
      "N", "\x88", "\x89", std::string("K\x00", 2), "K\x07", std::string("M\x00\x01", 3), "J\xff\xff\xff\xff",
      std::string("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80", 10), std::string("\x8a\x09", 2) + std::string(9, '\x01'),
      std::string("\x8a\x00", 2), std::string("\x8a\x03\xff\xff\xff", 5), std::string("G\x3f\xf8\x00\x00\x00\x00\x00\x00", 9),
      std::string("G\x7f\xf0\x00\x00\x00\x00\x00\x00", 9), str(""), str("completed"), str("started"), str("bogus"),
      str("nccl:send 0->1"), str("gloo:recv 1<-0"), str("12"), str("state"), str("profiling_name"), str("frames"),
      str("duration_ms"), str("input_sizes"), str("input_dtypes"), str("process_group"), str("collective_seq_id"),
      str("pg_id"), str("is_p2p"), str("name"), str("line"), "\x8c\x05" "Float", "}", "]", ")", "(", "e", "u", "t",
      "\x85", "\x86", "\x87", "\x94"};
  const size_t pick = (*rng)() % (kTokens.size() + 3);
  if (pick < kTokens.size()) return kTokens[pick];
  if (pick == kTokens.size()) return std::string("h") + static_cast<char>((*rng)() % 96);   // a memo read
  if (pick == kTokens.size() + 1) return std::string("q") + static_cast<char>((*rng)() % 96);  // a memo store
  return std::string("j") + static_cast<char>((*rng)() % 96) + std::string(3, '\0');
}

// One edit of a pickle at the opcode level: an opcode dropped, repeated,
// replaced by another of the pickle or by RandomToken, two swapped, or
// RandomToken inserted. Mostly still a pickle, whose entries then hold a
// field of another type, a field missing, repeated or unknown, a
// container more or less: what the direct decoder must decline, or read
// as the converter reads it.
std::string MutateTokens(const std::string& p, std::mt19937* rng) {
  const auto tokens = PickleTokens(p);
  if (tokens.size() < 4) return p;
  // Skip the header: most edits land in the entries.
  std::uniform_int_distribution<size_t> pick(tokens.size() / 8, tokens.size() - 2);
  const size_t i = pick(*rng);
  const auto [b, e] = tokens[i];
  const std::string tok = p.substr(b, e - b);
  switch ((*rng)() % 6) {
    case 0:
      return p.substr(0, b) + p.substr(e);
    case 1:
      return p.substr(0, e) + tok + p.substr(e);
    case 2: {
      const auto [b2, e2] = tokens[pick(*rng)];
      return p.substr(0, b) + p.substr(b2, e2 - b2) + p.substr(e);
    }
    case 3:
      return p.substr(0, b) + RandomToken(rng) + p.substr(e);
    case 4: {  // swapped with the next opcode
      const auto [nb, ne] = tokens[i + 1];
      return p.substr(0, b) + p.substr(nb, ne - nb) + tok + p.substr(ne);
    }
    default:
      return p.substr(0, b) + RandomToken(rng) + p.substr(b);
  }
}

// A FlatEntrySink that decodes entries directly with no converter behind,
// counting those the decoder took and those it declined.
struct DirectProbe final : FlatEntrySink {
  DirectDecoder decoder;
  size_t direct = 0, values = 0;
  void Entry(const FlatValue&) override { ++values; }
  bool TakesDirect() const override { return true; }
  size_t Direct(FlatPickle* fp, std::string_view data, size_t at) override {
    const size_t end = decoder.Decode(fp, data, at);
    direct += end != 0;
    return end;
  }
  void Start() {
    decoder.Reset();
    direct = values = 0;
  }
};

// The direct decoder (direct_pickle.h) takes every entry of every torch
// dump of the repository, and the records and diagnostics are those of the
// entries read as values, on them and on 12,000 edits of them (opcode
// edits that leave a pickle with odd entries, and the byte edits of
// MutatePickle), whether it takes an entry, declines it, or the file is
// given up later.
TEST(FlightRecorder, DirectAndFlatPickleReadersAgree) {
  std::vector<std::string> seeds;
  DirectProbe probe;
  FlatPickle flat;
  size_t entries = 0;
  for (const auto& [path, seed] : RealPickles()) {
    seeds.push_back(seed);
    if (path.find("/cpython_") == std::string::npos && path.find("/evil_") == std::string::npos) {
      probe.Start();
      EXPECT_TRUE(flat.Read(seed, &probe)) << path;
      EXPECT_EQ(probe.values, 0u) << "the direct decoder declines an entry of " << path;
      entries += probe.direct;
    }
    ASSERT_EQ(DescribeUsed(ParseFlightRecorderPickle, seed), DescribeUsed(ParseFlightRecorderPickleWithoutDirect, seed))
        << path;
  }
  EXPECT_GT(entries, 300u);  // 334 now
  std::mt19937 rng(13);
  size_t total = 0, all_direct = 0, mixed = 0, declined = 0;
  while (total < 12000) {
    for (const std::string& seed : seeds) {
      std::string text = total % 4 == 3 ? MutatePickle(seed, &rng) : MutateTokens(seed, &rng);
      if (total % 3 == 2) text = MutateTokens(text, &rng);
      ++total;
      probe.Start();
      flat.Read(text, &probe);
      all_direct += probe.direct > 0 && probe.values == 0;
      mixed += probe.direct > 0 && probe.values > 0;
      declined += probe.direct == 0 && probe.values > 0;
      const std::string direct = DescribeUsed(ParseFlightRecorderPickle, text);
      ASSERT_EQ(direct, DescribeUsed(ParseFlightRecorderPickleWithoutDirect, text)) << "mutant " << total;
      if (total % 8 == 0) {
        ASSERT_EQ(direct, DescribeUsed(ParseFlightRecorderPickleWithMachine, text)) << "mutant " << total;
      }
    }
  }
  // Many mutants had entries of both kinds, and some only declined ones.
  EXPECT_GT(all_direct, total / 10);
  EXPECT_GT(mixed, total / 10);
  EXPECT_GT(declined, total / 50);
  std::printf("%zu mutants: entries all direct in %zu, some declined in %zu, all declined in %zu\n", total, all_direct,
              mixed, declined);
}

// A hand-written dump of three entries in forms torch writes and some it
// does not (values read by hand off the bytes below): the direct decoder
// takes the first two and declines the third (a string seq), and the
// records are these.
TEST(FlightRecorder, DirectDecoderReadsFieldsAsTheConverter) {
  using namespace std::string_literals;  // bytes with NULs
  const auto str = PickleStr;
  std::string p = "\x80\x02}("s + str("version") + "q\x00"s + str("2.10") + "q\x01"s + str("entries") + "q\x02]("s;
  // Entry 1: new keys (memoised), a frame dict memoised, a loose one, a
  // float duration, a bare dtype string, sizes None.
  p += "}("s + str("frames") + "q\x03](}("s + str("name") + "q\x04"s + str("f") + "q\x05"s + str("line") + "q\x06K\x07uq\x07}("s +
       "h\x04"s + str("g") + "h\x06K\x08ue"s;
  p += str("profiling_name") + "q\x08"s + str("nccl:send 0->1") + "q\x09"s;
  p += str("collective_seq_id") + "q\x0a\x88"s + str("op_id") + "q\x0b\x8a\x02\xff\x7f"s;
  p += str("duration_ms") + "q\x0cG\x3f\xf8\x00\x00\x00\x00\x00\x00"s;
  p += str("input_dtypes") + "q\x0d"s + str("Half") + "q\x0e"s + str("input_sizes") + "q\x0fN"s;
  p += str("extra") + "q\x10N"s;
  p += str("state") + "q\x11"s + str("completed") + "q\x12u"s;
  // Entry 2: keys read back, the memoised frame read back, sizes [[2, 3]].
  p += "}(h\x08h\x09h\x03](h\x07"s + "eh\x0f](](K\x02K\x03"s + "eeh\x11h\x12u"s;
  // Entry 3: collective_seq_id "12", a string: the converter parses it.
  p += "}(h\x08h\x09h\x0a"s + str("12") + "u"s;
  p += "eu."s;
  DirectProbe probe;
  FlatPickle flat;
  probe.Start();
  ASSERT_TRUE(flat.Read(p, &probe));
  EXPECT_EQ(probe.direct, 2u);
  EXPECT_EQ(probe.values, 1u);
  model::RankDump d;
  std::vector<model::Diagnostic> diags;
  ASSERT_TRUE(Parse(ParseFlightRecorderPickle, p, "f", &d, &diags));
  ASSERT_EQ(d.ops.size(), 3u);
  const model::OpRecord& a = d.ops[0];
  EXPECT_EQ(a.profiling_name, "nccl:send 0->1");
  EXPECT_EQ(a.op, "send");
  EXPECT_EQ(a.p2p_self_local, 0);
  EXPECT_EQ(a.p2p_peer_local, 1);
  EXPECT_TRUE(a.is_p2p);       // a send
  EXPECT_EQ(a.collective_seq, 1);  // NEWTRUE reads as 1
  EXPECT_EQ(a.op_id, 0x7fff);
  EXPECT_EQ(a.duration_ms, 1.5);
  EXPECT_EQ(a.input_dtypes, (std::vector<std::string>{"Half"}));
  EXPECT_TRUE(a.input_sizes->empty());
  EXPECT_EQ(a.state, model::OpState::kCompleted);
  ASSERT_EQ(a.frames->size(), 2u);
  ASSERT_EQ(d.frames.size(), 2u);
  EXPECT_EQ(d.frames[(*a.frames)[0]].name, "f");
  EXPECT_EQ(d.frames[(*a.frames)[0]].line, 7);
  EXPECT_EQ(d.frames[(*a.frames)[1]].name, "g");
  EXPECT_EQ(d.frames[(*a.frames)[1]].line, 8);
  const model::OpRecord& b = d.ops[1];
  EXPECT_EQ(b.input_sizes, (std::vector<model::Shape>{{2, 3}}));
  ASSERT_EQ(b.frames->size(), 1u);
  EXPECT_EQ((*b.frames)[0], (*a.frames)[0]);  // the same frame dict
  EXPECT_EQ(b.collective_seq, -1);
  EXPECT_EQ(d.ops[2].collective_seq, 12);
  EXPECT_EQ(DescribeUsed(ParseFlightRecorderPickle, p), DescribeUsed(ParseFlightRecorderPickleWithMachine, p));
}

// Empty containers are one value to the general machine (its
// SharedEmpty) unless memoised: frames given as empty dicts, in an entry's
// own list or in a memoised list, are the same frames both ways.
TEST(FlightRecorder, FastReaderGivesEmptyContainersTheGeneralMachinesIdentity) {
  using namespace std::string_literals;  // bytes with NULs
  const auto str = PickleStr;
  const std::string entry_head = "}(" + str("profiling_name") + str("nccl:all_reduce") + str("frames");
  std::string p = "\x80\x02}(" + str("version") + str("2.10") + str("entries") + "](";
  p += entry_head + "](}}eu";              // frames [{}, {}]: one frame
  p += entry_head + "](}eq\x00u"s;          // frames [{}] memoised as key 0
  p += entry_head + "h\x00u"s;              // the same list again
  p += entry_head + "](}q\x01h\x01}eu";    // a memoised {} twice, then another {}
  p += "eu.";
  struct None final : FlatEntrySink {
    void Entry(const FlatValue&) override {}
  } none;
  FlatPickle flat;
  ASSERT_TRUE(flat.Read(p, &none));
  EXPECT_EQ(flat.streamed(), 4u);
  const std::string fast = DescribeUsed(ParseFlightRecorderPickle, p);
  EXPECT_EQ(fast, DescribeUsed(ParseFlightRecorderPickleWithMachine, p));
  EXPECT_NE(fast.find("ok=1"), std::string::npos) << fast;
}

}  // namespace
}  // namespace hangdx::ingest
