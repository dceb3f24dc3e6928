// hangdx/base/status.h
// Status and StatusOr<T>: how library functions report operational errors
// (unreadable file, bad usage) without exceptions. Data problems in inputs
// are not errors: they become model::Diagnostic entries and parsing goes on.
//
//   StatusOr<std::string> data = ReadFile(path);
//   if (!data.ok()) return data.status();
//
// or, with the macros below (abseil's RETURN_IF_ERROR / ASSIGN_OR_RETURN):
//
//   HANGDX_ASSIGN_OR_RETURN(std::string data, ReadFile(path));
//   HANGDX_RETURN_IF_ERROR(Check(data));
//
// Both types are [[nodiscard]]: an ignored error is a compile warning.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace hangdx {

// Status: ok, or an error code with a human-readable message that names
// what failed (file, offset, field). Cheap to copy; not thread-affine.
class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kInvalidArgument, kNotFound, kIo, kDataLoss, kUnimplemented, kResourceExhausted };

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Status::Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Status::Code::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {Status::Code::kIo, std::move(m)}; }
inline Status DataLoss(std::string m) { return {Status::Code::kDataLoss, std::move(m)}; }
// Out of memory: the message says what was being done and with what input.
inline Status ResourceExhausted(std::string m) { return {Status::Code::kResourceExhausted, std::move(m)}; }

// StatusOr<T>: a T, or the Status that explains why there is none.
// Never holds an ok Status without a value.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}                                  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

// Returns from the enclosing function (which returns Status or StatusOr)
// when `expr`, a Status, is not ok.
#define HANGDX_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::hangdx::Status hangdx_status_ = (expr);        \
    if (!hangdx_status_.ok()) return hangdx_status_; \
  } while (0)

#define HANGDX_STATUS_CONCAT_INNER_(a, b) a##b
#define HANGDX_STATUS_CONCAT_(a, b) HANGDX_STATUS_CONCAT_INNER_(a, b)

// `lhs` = the value of `rexpr` (a StatusOr<T>), or returns its Status from
// the enclosing function. `lhs` may declare a variable:
// HANGDX_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
#define HANGDX_ASSIGN_OR_RETURN(lhs, rexpr) \
  HANGDX_ASSIGN_OR_RETURN_IMPL_(HANGDX_STATUS_CONCAT_(hangdx_statusor_, __LINE__), lhs, rexpr)
#define HANGDX_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

}  // namespace hangdx
