// Result<T>: a value or an Error, the data plane's error channel (no exceptions cross a worker).
// A small stand-in for C++23 std::expected; the accessors mirror its names so the switch is a
// search-and-replace.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kturn {

// An error with a stable machine-readable code and a human-readable message. For config errors the
// message names the field ("listeners[1].port: must be 1-65535").
struct Error {
  enum class Code {
    kInvalidArgument,
    kMalformed,
    kTooShort,
    kTooLong,
    kUnsupported,
    kNotFound,
    kExhausted,
    kIo,
    kInternal,
  };
  Code code = Code::kInternal;
  std::string message;
};

inline Error makeError(Error::Code code, std::string message) {
  return Error{code, std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace kturn
