#include "hangdx/base/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace hangdx {
namespace {

// Mappings the SIGBUS handler may repair. A slot is free when begin == 0.
// Lock-free so that the handler (which may run on any thread, at any point)
// only reads atomics.
constexpr int kSlots = 1024;
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<size_t> size{0};
  std::atomic<bool> shrank{false};
};
Slot g_slots[kSlots];
struct sigaction g_previous;
// begin == kClaimed: a slot being filled in, which the handler skips.
constexpr uintptr_t kClaimed = 1;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  long page = ::sysconf(_SC_PAGESIZE);
  for (Slot& s : g_slots) {
    uintptr_t b = s.begin.load(std::memory_order_acquire);
    size_t n = s.size.load(std::memory_order_acquire);
    if (b <= kClaimed || addr < b || addr >= b + n) continue;
    // Zero pages from the faulting page to the end of the mapping: every
    // later read past the new end of the file finds zeros too.
    uintptr_t from = addr & ~static_cast<uintptr_t>(page - 1);
    uintptr_t to = (b + n + page - 1) & ~static_cast<uintptr_t>(page - 1);
    void* p =
        ::mmap(reinterpret_cast<void*>(from), to - from, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      s.shrank.store(true, std::memory_order_release);
      return;  // the faulting read runs again and finds a zero
    }
    break;
  }
  // Not a mapping of ours (or it cannot be repaired): what would have
  // happened without this handler happens now.
  ::sigaction(SIGBUS, &g_previous, nullptr);
  if (!(g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_handler == SIG_IGN) ::signal(SIGBUS, SIG_DFL);
}

void InstallHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previous);
  });
}

int Register(void* addr, size_t size) {
  InstallHandler();
  for (int i = 0; i < kSlots; ++i) {
    uintptr_t expected = 0;
    if (!g_slots[i].begin.compare_exchange_strong(expected, kClaimed)) continue;
    g_slots[i].size.store(size, std::memory_order_release);
    g_slots[i].shrank.store(false, std::memory_order_release);
    g_slots[i].begin.store(reinterpret_cast<uintptr_t>(addr), std::memory_order_release);
    return i;
  }
  return -1;
}

// Reads what `fd` gives until end of file into *out, in 64 KiB steps; false
// when it gives more than `max_bytes` (a /proc file of unknown size).
bool ReadUnsized(int fd, uint64_t max_bytes, std::string* out) {
  constexpr size_t kStep = size_t{1} << 16;
  while (true) {
    size_t have = out->size();
    out->resize(have + kStep);
    ssize_t n = ::read(fd, out->data() + have, kStep);
    if (n < 0 && errno == EINTR) {
      out->resize(have);
      continue;
    }
    out->resize(have + (n > 0 ? static_cast<size_t>(n) : 0));
    if (n <= 0) return true;  // end, or an error (EAGAIN of a non-blocking file): what was read counts
    if (out->size() > max_bytes) return false;
  }
}

// Reads the whole file into *out with read(2): the fallback when every
// slot is taken (a shrinking file then just reads short).
bool ReadAll(int fd, size_t size, std::string* out) {
  out->resize(size);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, out->data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out->resize(got);
  return true;
}

}  // namespace

void ReleaseReadPages(std::string_view done) {
  if (done.empty()) return;
  uintptr_t from = reinterpret_cast<uintptr_t>(done.data()), to = from + done.size();
  for (Slot& s : g_slots) {
    uintptr_t b = s.begin.load(std::memory_order_acquire);
    size_t n = s.size.load(std::memory_order_acquire);
    if (b <= kClaimed || to <= b || from >= b + n) continue;
    // Whole pages only: a partial page at either end may hold bytes not read yet.
    uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    uintptr_t lo = (std::max(from, b) + page - 1) & ~(page - 1);
    uintptr_t hi = std::min(to, b + n) & ~(page - 1);
    if (std::min(to, b + n) == b + n) hi = (b + n + page - 1) & ~(page - 1);  // the mapping's last page is ours
    if (lo < hi) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
    return;
  }
}

void MappedFile::Release() {
  if (addr_ != nullptr && slot_ >= 0) {
    g_slots[slot_].begin.store(0, std::memory_order_release);
    ::munmap(addr_, size_);
  }
  owned_.clear();
  addr_ = nullptr;
  size_ = 0;
  slot_ = -1;
  read_without_size_ = false;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    Release();
    bool owned = o.slot_ < 0 && o.addr_ != nullptr;  // read into owned_, not mapped
    owned_ = std::move(o.owned_);
    addr_ = owned ? owned_.data() : o.addr_;
    size_ = o.size_;
    slot_ = o.slot_;
    read_without_size_ = o.read_without_size_;
    o.addr_ = nullptr;
    o.size_ = 0;
    o.slot_ = -1;
    o.owned_.clear();
  }
  return *this;
}

MappedFile::~MappedFile() { Release(); }

bool MappedFile::shrank() const { return slot_ >= 0 && g_slots[slot_].shrank.load(std::memory_order_acquire); }

StatusOr<MappedFile> MappedFile::Open(const std::string& path, uint64_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": " + std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return IoError(path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return InvalidArgument(path + ": " + std::to_string(st.st_size) + " bytes is over the limit of " +
                           std::to_string(max_bytes));
  }
  MappedFile m;
  if (st.st_size == 0) {
    bool fits = ReadUnsized(fd, max_bytes, &m.owned_);
    ::close(fd);
    if (!fits)
      return InvalidArgument(path + ": reports size 0 but gives more than the limit of " + std::to_string(max_bytes) +
                             " bytes when read");
    if (!m.owned_.empty()) {
      m.owned_.shrink_to_fit();
      m.addr_ = m.owned_.data();
      m.size_ = m.owned_.size();
      m.read_without_size_ = true;
    }
    return m;
  }
  {
    size_t size = static_cast<size_t>(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return IoError(path + ": mmap failed: " + std::strerror(e));
    }
    m.slot_ = Register(p, size);
    if (m.slot_ < 0) {
      ::munmap(p, size);
      ReadAll(fd, size, &m.owned_);
      m.addr_ = m.owned_.data();
      m.size_ = m.owned_.size();
    } else {
      ::madvise(p, size, MADV_SEQUENTIAL);
      m.addr_ = p;
      m.size_ = size;
    }
  }
  ::close(fd);
  return m;
}

}  // namespace hangdx
