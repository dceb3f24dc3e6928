#include "hangdx/base/memory_reserve.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <new>

namespace hangdx {
namespace {

char* volatile g_sink = nullptr;  // the allocation escapes: the compiler may not elide it

TEST(MemoryReserve, FreedWhenAnAllocationFailsAndRefilled) {
  InstallMemoryReserve(size_t{1} << 20);
  EXPECT_TRUE(MemoryReserveHeld());
  volatile size_t too_much = size_t{1} << 62;  // volatile: the compiler must not see the size
  EXPECT_THROW(
      {
        g_sink = new char[too_much];
        delete[] g_sink;
      },
      std::bad_alloc);
  EXPECT_FALSE(MemoryReserveHeld());  // freed for the unwinding
  EXPECT_TRUE(RefillMemoryReserve());
  EXPECT_TRUE(MemoryReserveHeld());
}

}  // namespace
}  // namespace hangdx
