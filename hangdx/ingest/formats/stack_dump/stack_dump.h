// hangdx/ingest/formats/stack_dump/stack_dump.h
// Reader for stack dumps of hung ranks: py-spy text (`py-spy dump`) and JSON
// (`py-spy dump --json`), gdb `thread apply all bt` (and python-gdb `py-bt`),
// Python faulthandler dumps, and a bare frame list (one function name per
// line, innermost first, as people paste a py-spy stack into an issue).
//
// Upstream: py-spy src/dump.rs and src/stack_trace.rs (benfred/py-spy); gdb's
// backtrace command; CPython Python/traceback.c (faulthandler
// dump_traceback). Versions: the py-spy text and --json dumps of its
// current releases, gdb's long-stable backtrace format, faulthandler of
// CPython 3. See docs/log-formats.md section 4.
#pragma once

#include <string_view>

#include "hangdx/ingest/artifact.h"
#include "hangdx/ingest/record_sink.h"
#include "hangdx/model/job.h"

namespace hangdx::ingest {

// Which stack format `data` is in, by content.
enum class StackFormat { kNone, kPySpy, kPySpyJson, kGdb, kFaulthandler, kBareFrames, kLldb };

// Sniffs: py-spy `Process N:` / `Thread N (idle|active...)` headers (the id
// may be left out), a JSON array whose objects carry "thread_id" and
// "frames", gdb `Thread N (Thread 0x.. (LWP N)` headers or a backtrace
// pasted without one (`#0  0x.. in f () from lib` then `#1 ...`, as gdb
// `where` and eu-stack print it), lldb `thread #N, ...` headers with
// `frame #N: 0x..` lines, faulthandler `Thread 0x.. (most recent call
// first):` or python-gdb `Traceback (most recent call first):`; else a short
// file whose every line is a frame (`func` or `func (file:line)`) and that
// names a torch.distributed call (all_reduce, broadcast, barrier, ...) or
// gives every frame's file and line (two lines at least).
StackFormat SniffStackFormat(std::string_view data);

// 50 when SniffStackFormat finds a stack format, else 0.
int SniffStackDump(std::string_view data);

// Reads a stack dump into `out` in the format SniffStackFormat finds:
// ParseStackDumpAs. Always returns true.
bool ParseStackDump(const Artifact& in, RecordSink* out);

// Reads a stack dump of format `f` into `out`: one StackSample per thread,
// frames innermost first, `thread` = the thread header as printed (id,
// state, name). Rank: a `[rankN]:` prefix in the file, else
// `in.rank_hint`; a dump with no rank gets a warning. A py-spy JSON dump
// that is not valid JSON gives a kError diagnostic. Nothing for kNone.
void ParseStackDumpAs(const Artifact& in, StackFormat f, RecordSink* out);

// Splits a py-spy frame line `func (file:line)` / `func (file)` / `func`
// into *frame. False on an empty line.
bool ParsePySpyFrame(std::string_view text, model::Frame* frame);

// Splits an lldb frame line `frame #3: 0x00007fb0 libtorch_cuda.so`c10d::X::abort() + 664`
// / `... mpi_lib.so`f(this=0x5) at cuda_operations.cc:124:53` into *frame:
// name without its argument list and offset, filename = the source file
// when given, else the module. False when not an lldb frame line.
bool ParseLldbFrame(std::string_view text, model::Frame* frame);

// Splits a gdb frame line `#3  0x00007f.. in func (args) at file.cc:713` /
// `... from /lib/libc.so.6` into *frame. False when not a frame line.
bool ParseGdbFrame(std::string_view text, model::Frame* frame);

}  // namespace hangdx::ingest
