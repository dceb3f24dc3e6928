#include "hangdx/base/memory_reserve.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace hangdx {
namespace {

std::atomic<void*> g_reserve{nullptr};
std::atomic<size_t> g_bytes{0};

// The new-handler: operator new calls it when an allocation fails. Frees
// the reserve for the unwinding that follows, then fails the allocation
// (returning would make operator new retry, and the retry would take the
// reserve for the very allocation that ran out).
void OnOutOfMemory() {
  void* r = g_reserve.exchange(nullptr);
  std::free(r);
  throw std::bad_alloc();
}

}  // namespace

void InstallMemoryReserve(size_t bytes) {
  g_bytes.store(bytes);
  RefillMemoryReserve();
  std::set_new_handler(OnOutOfMemory);
}

bool RefillMemoryReserve() {
  if (g_reserve.load() != nullptr) return true;
  void* r = std::malloc(g_bytes.load());
  if (!r) return false;
  void* none = nullptr;
  if (!g_reserve.compare_exchange_strong(none, r)) std::free(r);  // another thread refilled it first
  return true;
}

bool MemoryReserveHeld() { return g_reserve.load() != nullptr; }

}  // namespace hangdx
