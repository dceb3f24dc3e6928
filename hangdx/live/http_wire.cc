#include "hangdx/live/http_wire.h"

#include <charconv>

namespace hangdx::live {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseUint(std::string_view s, int base, uint64_t* out) {
  if (s.empty()) return false;
  auto res = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

}  // namespace

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

std::string_view HttpHead::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (EqualsNoCase(k, name)) return v;
  return {};
}

MessageReader::State MessageReader::Feed(const char* data, size_t n) {
  if (!error_.empty()) return State::kError;
  if (done_) {  // a finished message not yet taken: keep the bytes for the next
    buf_.append(data, n);
    return State::kDone;
  }
  buf_.append(data, n);
  return Parse();
}

MessageReader::State MessageReader::FeedEof() {
  if (done_) return State::kDone;
  if (!error_.empty()) return State::kError;
  if (head_done_ && until_eof_) {
    body_ += buf_;
    buf_.clear();
    done_ = true;
    return State::kDone;
  }
  error_ = head_done_ ? "the connection closed in the middle of the body" : "the connection closed before a response";
  return State::kError;
}

MessageReader::State MessageReader::Next() {
  std::string rest = std::move(buf_);
  head_ = HttpHead();
  body_.clear();
  buf_.clear();
  head_done_ = done_ = until_eof_ = false;
  if (!error_.empty()) return State::kError;
  buf_ = std::move(rest);
  return buf_.empty() ? State::kNeedMore : Parse();
}

MessageReader::State MessageReader::Parse() {
  if (!head_done_) {
    size_t end = buf_.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (buf_.size() > limits_.max_head_bytes) {
        error_ = "the message head is over " + std::to_string(limits_.max_head_bytes) + " bytes";
        return State::kError;
      }
      return State::kNeedMore;
    }
    if (end + 4 > limits_.max_head_bytes) {
      error_ = "the message head is over " + std::to_string(limits_.max_head_bytes) + " bytes";
      return State::kError;
    }
    if (!ParseHead(std::string_view(buf_).substr(0, end))) return State::kError;
    buf_.erase(0, end + 4);
    head_done_ = true;
  }
  if (head_.chunked) return ParseChunks();
  if (head_.content_length >= 0) {
    if (static_cast<uint64_t>(head_.content_length) > limits_.max_body_bytes) {
      error_ = "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes";
      return State::kError;
    }
    size_t want = static_cast<size_t>(head_.content_length);
    if (buf_.size() < want) {
      // Room for an announced body of up to 1 MiB at once (a probe round
      // is 10,000 answers of 59 KB: no doubling copies); a bigger one grows
      // as its bytes come, whatever a peer announces.
      if (want <= (size_t{1} << 20)) buf_.reserve(want);
      return State::kNeedMore;
    }
    if (buf_.size() == want) {  // the usual case: the body is the rest, taken without a copy
      body_ = std::move(buf_);
      buf_.clear();
    } else {
      body_.assign(buf_, 0, want);
      buf_.erase(0, want);
    }
    done_ = true;
    return State::kDone;
  }
  // No framing: a request has no body; a response runs to the end of the
  // connection (HTTP/1.0 style), unless its status never has one.
  if (kind_ == Kind::kRequest || head_.status == 204 || head_.status == 304 || head_.status / 100 == 1) {
    done_ = true;
    return State::kDone;
  }
  until_eof_ = true;
  head_.close = true;
  if (buf_.size() > limits_.max_body_bytes) {
    error_ = "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes";
    return State::kError;
  }
  return State::kNeedMore;
}

bool MessageReader::ParseHead(std::string_view text) {
  size_t eol = text.find("\r\n");
  std::string_view start = text.substr(0, eol);
  bool http10 = false;
  if (kind_ == Kind::kResponse) {
    // "HTTP/1.1 200 OK"
    if (start.substr(0, 5) != "HTTP/" || start.size() < 12 || start[8] != ' ') {
      error_ = "not an HTTP response";
      return false;
    }
    http10 = start.substr(0, 8) == "HTTP/1.0";
    uint64_t status = 0;
    if (!ParseUint(start.substr(9, 3), 10, &status) || status < 100 || status > 999) {
      error_ = "bad HTTP status line";
      return false;
    }
    head_.status = static_cast<int>(status);
  } else {
    // "POST /handler/ping HTTP/1.1"
    size_t sp1 = start.find(' '), sp2 = start.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1 || start.substr(sp2 + 1, 5) != "HTTP/") {
      error_ = "not an HTTP request line";
      return false;
    }
    head_.method = std::string(start.substr(0, sp1));
    head_.target = std::string(start.substr(sp1 + 1, sp2 - sp1 - 1));
    http10 = start.substr(sp2 + 1) == "HTTP/1.0";
  }
  head_.close = http10;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 2);
  while (!rest.empty()) {
    size_t e = rest.find("\r\n");
    std::string_view line = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      error_ = "malformed header line";
      return false;
    }
    std::string_view name = line.substr(0, colon), value = Trim(line.substr(colon + 1));
    head_.headers.emplace_back(std::string(name), std::string(value));
    if (EqualsNoCase(name, "content-length")) {
      uint64_t n = 0;
      if (!ParseUint(value, 10, &n) || n > (uint64_t{1} << 62) ||
          (head_.content_length >= 0 && static_cast<uint64_t>(head_.content_length) != n)) {
        error_ = "bad Content-Length";
        return false;
      }
      head_.content_length = static_cast<int64_t>(n);
    } else if (EqualsNoCase(name, "transfer-encoding")) {
      head_.chunked = value.size() >= 7 && EqualsNoCase(value.substr(value.size() - 7), "chunked");
    } else if (EqualsNoCase(name, "connection")) {
      if (EqualsNoCase(value, "close")) head_.close = true;
      if (EqualsNoCase(value, "keep-alive")) head_.close = false;
    }
  }
  return true;
}

MessageReader::State MessageReader::ParseChunks() {
  // Each chunk: hex size [;ext] CRLF data CRLF; a 0 chunk, trailers, CRLF end.
  for (;;) {
    size_t eol = buf_.find("\r\n");
    if (eol == std::string::npos)
      return buf_.size() > 1024 ? (error_ = "bad chunk header", State::kError) : State::kNeedMore;
    std::string_view line(buf_.data(), eol);
    line = line.substr(0, line.find(';'));
    uint64_t size = 0;
    if (!ParseUint(Trim(line), 16, &size)) {
      error_ = "bad chunk size";
      return State::kError;
    }
    if (size == 0) {
      size_t end = buf_.find("\r\n\r\n", eol);
      if (eol + 2 <= buf_.size() && buf_.compare(eol + 2, 2, "\r\n") == 0) end = eol;
      if (end == std::string::npos) return State::kNeedMore;
      buf_.erase(0, end + 4);
      done_ = true;
      return State::kDone;
    }
    if (size > limits_.max_body_bytes || body_.size() + size > limits_.max_body_bytes) {
      error_ = "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes";
      return State::kError;
    }
    if (buf_.size() < eol + 2 + size + 2) return State::kNeedMore;
    body_.append(buf_, eol + 2, size);
    if (buf_.compare(eol + 2 + size, 2, "\r\n") != 0) {
      error_ = "chunk not followed by CRLF";
      return State::kError;
    }
    buf_.erase(0, eol + 2 + size + 2);
  }
}

}  // namespace hangdx::live
