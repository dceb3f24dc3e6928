// hangdx/live/url.h
// Where a worker or a service listens: "http://host:port" (the form torch's
// start_debug_server() writes into the TCPStore, e.g. "http://node03:41873")
// or "host:port" (the form of --store and --listen).
//
//   StatusOr<Endpoint> e = ParseUrl("http://node03:41873");
//   e->host == "node03", e->port == 41873, e->path == ""
#pragma once

#include <string>
#include <string_view>

#include "hangdx/base/status.h"

namespace hangdx::live {

// A TCP endpoint of a plain-HTTP service. `path` is a base path without the
// trailing slash ("" for none); requests append their own path to it.
struct Endpoint {
  std::string host;
  int port = 0;
  std::string path;

  // "http://host:port" + path; IPv6 hosts in brackets.
  std::string Url() const;
  bool operator==(const Endpoint&) const = default;
};

// Parses "http://HOST:PORT[/PATH]" (IPv6 as "[::1]"). Errors
// (kInvalidArgument): another scheme (https is not spoken: the workers serve
// plain HTTP), no port, a port outside 1-65535, an empty host, a space or a
// control character anywhere (it would end the request line).
StatusOr<Endpoint> ParseUrl(std::string_view url);

// Parses "HOST:PORT" (IPv6 as "[::1]:PORT"); errors as ParseUrl. With
// `allow_any_port`, port 0 (an ephemeral port, for a listen address) is accepted.
StatusOr<Endpoint> ParseHostPort(std::string_view text, bool allow_any_port = false);

}  // namespace hangdx::live
