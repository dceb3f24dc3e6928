// hangdx/base/memory_reserve.h
// A block of memory held back for when an allocation fails, so that running
// out of memory is an error hangdx can report instead of an abort.
//
//   InstallMemoryReserve();            // once, at the start of main()
//   try { Load(); } catch (const std::bad_alloc&) { free what was built; RefillMemoryReserve(); }
//
// Why: when an allocation fails deep inside a parser, the exception unwinds
// through destructors that allocate themselves (nlohmann::json frees a deep
// document with a heap stack, from a noexcept destructor): with no memory
// left that second failure calls std::terminate. The new-handler installed
// here frees the reserve before the failing allocation throws, so the
// unwinding has that much memory to run in.
#pragma once

#include <cstddef>

namespace hangdx {

// Holds `bytes` in reserve (allocated, never touched: it costs address
// space, not resident memory) and installs the new-handler that frees it
// when an allocation fails, then throws std::bad_alloc. Thread-safe; a
// second call only refills.
void InstallMemoryReserve(size_t bytes = size_t{32} << 20);

// Allocates the reserve again after an out-of-memory error was handled and
// what it built was freed. False when the memory cannot be had (the next
// failure then throws with no reserve to unwind in). Thread-safe.
bool RefillMemoryReserve();

// True while the reserve is held (for tests).
bool MemoryReserveHeld();

}  // namespace hangdx
