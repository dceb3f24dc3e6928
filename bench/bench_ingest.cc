// bench/bench_ingest.cc: parsing throughput, single thread (= MB/s per core).
//   BM_PickleParse          PickleDocument::Parse on one generated rank dump
//   BM_FlightRecorderPickle ParseFlightRecorderPickle (pickle machine + FR
//                           conversion, streamed into a DumpBuilder)
//   BM_FlightRecorderJson   ParseFlightRecorderJson on the JSON flavour
//                           (simdjson, ingest/json_tree.h)
//   BM_FlightRecorderJsonNlohmann  the same dump through the nlohmann reader
//                           (ParseFlightRecorderJsonWithNlohmann: the fallback,
//                           and every JSON dump's reader before simdjson)
// Argument: entries in the dump (2,000 = the default ring size).
//   BM_TextLog              ReadArtifact on an NCCL_DEBUG=INFO log (every
//                           text format that recognizes it, as the loader
//                           runs them); argument: MB of log
//   BM_TextFormat/<name>    one text format's parser alone on the same log
#include <benchmark/benchmark.h>

#include "bench_job.h"
#include "hangdx/ingest/formats.h"
#include "hangdx/ingest/formats/flight_recorder/flight_recorder.h"
#include "hangdx/ingest/formats/flight_recorder/pickle.h"

namespace hangdx::bench {
namespace {

bool LoadInput(benchmark::State& state, bool json, std::string* data) {
  std::string path = GeneratedDump(static_cast<int>(state.range(0)), json);
  *data = path.empty() ? "" : Slurp(path);
  if (data->empty()) {
    state.SkipWithError("could not generate the input dump (python3 scripts/synth/gen_dumps.py)");
    return false;
  }
  state.counters["file_bytes"] = static_cast<double>(data->size());
  return true;
}

void BM_PickleParse(benchmark::State& state) {
  std::string data;
  if (!LoadInput(state, false, &data)) return;
  // As the loader does: one document per thread, reused file after file,
  // reading the (memory-mapped) bytes in place.
  ingest::PickleDocument doc;
  for (auto _ : state) {
    ingest::PickleError err;
    bool ok = doc.ParseView(data, &err);
    if (!ok) {
      state.SkipWithError(err.message.c_str());
      return;
    }
    benchmark::DoNotOptimize(doc.root());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_PickleParse)->Arg(2000)->Unit(benchmark::kMillisecond);

// Pickle or JSON dump through its Flight Recorder reader into the model.
template <bool kJson, bool kNlohmann = false>
void BM_FlightRecorder(benchmark::State& state) {
  std::string data;
  if (!LoadInput(state, kJson, &data)) return;
  size_t ops = 0;
  for (auto _ : state) {
    model::DiagnosticSink diags;
    ingest::DumpBuilder out(kJson ? "nccl_trace_rank_0.json" : "nccl_trace_rank_0", &diags);
    ingest::Artifact in{data, out.file(), 0};
    bool ok = kNlohmann ? ingest::ParseFlightRecorderJsonWithNlohmann(in, &out)
              : kJson   ? ingest::ParseFlightRecorderJson(in, &out)
                        : ingest::ParseFlightRecorderPickle(in, &out);
    ingest::DumpBuilder::Result got = out.Finish();  // includes the completion pass
    if (!ok || got.dumps.empty()) {
      state.SkipWithError("the Flight Recorder reader failed");
      return;
    }
    ops = got.dumps[0].ops.size();
    benchmark::DoNotOptimize(got.dumps[0].ops.data());
  }
  state.counters["entries"] = static_cast<double>(ops);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(data.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(ops));
}
void BM_FlightRecorderPickle(benchmark::State& state) { BM_FlightRecorder<false>(state); }
void BM_FlightRecorderJson(benchmark::State& state) { BM_FlightRecorder<true>(state); }
void BM_FlightRecorderJsonNlohmann(benchmark::State& state) { BM_FlightRecorder<true, true>(state); }
BENCHMARK(BM_FlightRecorderPickle)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlightRecorderJson)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlightRecorderJsonNlohmann)->Arg(2000)->Unit(benchmark::kMillisecond);

// A text log through the loader's path (ReadArtifact) or one text format.
void TextLog(benchmark::State& state, const ingest::Format* only) {
  std::string path = GeneratedNcclLog(static_cast<int>(state.range(0)));
  std::string data = path.empty() ? "" : Slurp(path);
  if (data.empty()) {
    state.SkipWithError("could not generate the NCCL log (python3 scripts/synth/gen_nccl_log.py)");
    return;
  }
  for (auto _ : state) {
    model::DiagnosticSink diags;
    ingest::DumpBuilder out("nccl_rank3.log", &diags);
    ingest::Artifact in{data, out.file(), 3};
    if (only)
      only->parse(in, &out);
    else
      ingest::ReadArtifact(in, &out);
    ingest::DumpBuilder::Result got = out.Finish();
    benchmark::DoNotOptimize(got.dumps.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(data.size()));
}
void BM_TextLog(benchmark::State& state) { TextLog(state, nullptr); }
BENCHMARK(BM_TextLog)->Arg(20)->Unit(benchmark::kMillisecond);

// One benchmark per text format of the table, so a new one is measured too.
const bool kTextFormatsRegistered = [] {
  for (const ingest::Format& f : ingest::Formats()) {
    if (f.kind != ingest::Format::Kind::kText) continue;
    benchmark::RegisterBenchmark(("BM_TextFormat/" + std::string(f.name)).c_str(),
                                 [&f](benchmark::State& s) { TextLog(s, &f); })
        ->Arg(20)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace hangdx::bench
