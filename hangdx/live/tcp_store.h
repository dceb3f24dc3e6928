// hangdx/live/tcp_store.h
// A read-only client of torch's TCPStore wire protocol, to find the
// workers of a job: torch.distributed.debug.start_debug_server() writes
// each rank's worker-server address into the job's store through
// PrefixStore("debug_server", TCPStore(MASTER_ADDR, MASTER_PORT)) under the
// key "rank<N>", value "http://<hostname>:<port>"
// (torch/distributed/debug/__init__.py, torch 2.13).
//
//   auto store = TcpStoreReader::Connect(*ParseHostPort("node0:29500"), 5s);
//   auto urls = store->MultiGet({"debug_server/rank0", "debug_server/rank1"});
//   (*urls)[1] == "http://node01:41873", "" for a key not yet written
//
// The protocol (torch/csrc/distributed/c10d/TCPStore.cpp, TCPStoreBackend.hpp,
// checked against torch 2.13's server in tcp_store_test.py): a connection opens
// with VALIDATE (query type 0) and the magic number 0x3C85F7CE as uint32;
// a request is a query-type byte and its arguments; a string is a uint64
// length and its bytes; integers are little-endian. The client adds "/" in
// front of every key (TCPStore::keyPrefix_); PrefixStore joins with "/".
// Used here: CHECK (5: uint64 count, keys -> one byte, 0 ready, 1 not
// ready), MULTI_GET (10: uint64 count, keys -> one string per key, empty for
// a missing key) and PING (13: uint32 nonce -> the same nonce).
//
// This client has no way to write: it cannot set the key "exception_dump",
// which makes every NCCL rank of the job dump and then terminate. It reads
// the store once to discover workers (and again only for ranks still
// missing), never to poll: a job has one store server of limited throughput.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/live/url.h"

namespace hangdx::live {

class TcpStoreReader {
 public:
  // Connects and validates. Errors (kIo): no connection within `timeout`.
  static StatusOr<TcpStoreReader> Connect(const Endpoint& store, std::chrono::milliseconds timeout);
  TcpStoreReader(TcpStoreReader&& other) noexcept;
  TcpStoreReader& operator=(TcpStoreReader&& other) noexcept;
  ~TcpStoreReader();

  // The values of `keys` (as the job's code names them, without the
  // leading "/"), "" for a key that is not set. Errors (kIo): the
  // connection failed or the answer did not come within the timeout.
  StatusOr<std::vector<std::string>> MultiGet(const std::vector<std::string>& keys);
  // Whether every key of `keys` is set.
  StatusOr<bool> Check(const std::vector<std::string>& keys);
  // A round trip; errors as MultiGet.
  Status Ping();

 private:
  TcpStoreReader(int fd, std::chrono::milliseconds timeout) : fd_(fd), timeout_(timeout) {}
  Status Send(const std::string& bytes);
  Status Receive(void* out, size_t n);
  StatusOr<std::string> ReceiveString();

  int fd_ = -1;
  std::chrono::milliseconds timeout_;
};

// The worker addresses of ranks 0..world_size-1 from the store at `store`:
// keys "<prefix>/rank<N>" (prefix "debug_server", as start_debug_server
// writes them). Ranks that have not registered yet are absent from the
// map. Errors as TcpStoreReader.
StatusOr<std::map<int64_t, std::string>> ReadWorkerAddresses(const Endpoint& store, int64_t world_size,
                                                             const std::string& prefix,
                                                             std::chrono::milliseconds timeout);

}  // namespace hangdx::live
