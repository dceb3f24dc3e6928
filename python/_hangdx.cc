// _hangdx: the Python binding. A thin shim over pipeline::Diagnose: it
// releases the GIL while parsing and analyzing, and maps a failed Status to
// hangdx.Error. The document it returns is the CLI's JSON, byte for byte;
// formats() is the table `hangdx formats` prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "hangdx/pipeline/pipeline.h"

namespace py = pybind11;

namespace {

struct Result {
  std::string text;
  int exit_code = 0;
};

Result Run(const std::vector<std::string>& paths, const std::string& format, int64_t world_size, int threads,
           const std::map<std::string, int64_t>& rank_of, bool assume_timed_out) {
  hangdx::pipeline::PipelineOptions opt;
  opt.load.world_size = world_size;
  opt.load.threads = threads;
  opt.load.rank_of = rank_of;
  opt.analyze.assume_timed_out = assume_timed_out;
  Result r;
  std::string error;
  {
    py::gil_scoped_release release;
    auto d = hangdx::pipeline::Diagnose(paths, opt);
    if (!d.ok()) {
      error = d.status().message();
    } else {
      auto text = hangdx::pipeline::Render(*d, format);
      if (!text.ok())
        error = text.status().message();
      else
        r.text = std::move(*text), r.exit_code = hangdx::pipeline::ExitCode(*d);
    }
  }
  if (!error.empty()) throw std::invalid_argument(error);
  return r;
}

}  // namespace

PYBIND11_MODULE(_hangdx, m) {
  m.doc() = "hangdx native core";
  m.def(
      "run",
      [](const std::vector<std::string>& paths, const std::string& format, int64_t world_size, int threads,
         const std::map<std::string, int64_t>& rank_of, bool assume_timed_out) {
        Result r = Run(paths, format, world_size, threads, rank_of, assume_timed_out);
        return py::make_tuple(py::bytes(r.text), r.exit_code);
      },
      py::arg("paths"), py::arg("format") = "json", py::arg("world_size") = -1, py::arg("threads") = 0,
      py::arg("rank_of") = std::map<std::string, int64_t>{}, py::arg("assume_timed_out") = false,
      "Loads and analyzes `paths`; returns (report bytes in `format`, exit code). "
      "Raises ValueError for a path that does not exist or an unknown format.");
  m.def(
      "formats",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& f : hangdx::pipeline::InputFormats()) out.emplace_back(f.name, f.description);
        return out;
      },
      "The input formats hangdx reads, as (name, description) pairs in the order they are sniffed.");
}
