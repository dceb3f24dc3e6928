#include "hangdx/live/url.h"

#include <charconv>

namespace hangdx::live {
namespace {

// "'TEXT': WHY" (appended piecewise: GCC 12 warns falsely on "'" + string).
Status Bad(std::string_view text, std::string_view why) {
  std::string m;
  m += '\'';
  m += text;
  m += "': ";
  m += why;
  return InvalidArgument(std::move(m));
}

}  // namespace

std::string Endpoint::Url() const {
  bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + path;
}

StatusOr<Endpoint> ParseHostPort(std::string_view text, bool allow_any_port) {
  Endpoint e;
  std::string_view port;
  if (!text.empty() && text[0] == '[') {  // [v6]:port
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Bad(text, "want [IPV6]:PORT");
    e.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Bad(text, "want HOST:PORT");
    e.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  int p = 0;
  auto res = std::from_chars(port.data(), port.data() + port.size(), p);
  if (e.host.empty()) return Bad(text, "empty host");
  if (res.ec != std::errc() || res.ptr != port.data() + port.size() || p < (allow_any_port ? 0 : 1) || p > 65535)
    return Bad(text, "the port must be a number from 1 to 65535");
  e.port = p;
  return e;
}

StatusOr<Endpoint> ParseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme)
    return Bad(url, "want http://HOST:PORT (plain HTTP, as torch's workers serve)");
  // A URL comes from a flag, a file or the TCPStore (any rank writes it)
  // and goes into a request line: no space or control byte may reach it.
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return Bad(url, "a space or control character in the URL");
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find('/', rest.empty() || rest[0] != '[' ? 0 : rest.find(']'));
  std::string_view hostport = rest.substr(0, slash);
  HANGDX_ASSIGN_OR_RETURN(Endpoint e, ParseHostPort(hostport));
  if (slash != std::string_view::npos) {
    e.path = std::string(rest.substr(slash));
    while (!e.path.empty() && e.path.back() == '/') e.path.pop_back();
  }
  return e;
}

}  // namespace hangdx::live
