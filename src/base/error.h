// The one internal error type of the core: a status and a message that
// names the object, component, rule and numbers involved. Returned, never
// thrown, through the core; the C layer turns it into zt_status and the
// thread-local message.
#pragma once

#include <cstdarg>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace zt {

// Values equal zt_status of the C ABI (capi checks this with static_asserts).
enum class Status : int {
  ok = 0,
  io = 1,
  format = 2,
  invalid = 3,
  unsupported = 4,
  digest = 5,
  limit = 6,
  not_found = 7,
  argument = 8,
  state = 9,
  nomem = 10,
};

struct Error {
  Status status = Status::ok;
  std::string message;
};

// printf-style message builder for errors; the message goes through
// fit_message.
[[gnu::format(printf, 2, 3)]] Error make_error(Status s, const char* fmt, ...);

// The longest message an Error carries (longer ones are cut, saying so).
inline constexpr size_t kMaxMessageBytes = 4096;
// A message made fit to show: control bytes escaped as printable() does,
// and cut at kMaxMessageBytes on a UTF-8 boundary.
std::string fit_message(std::string msg);

// Text a file gave, made fit for a message: control bytes (NUL included)
// as \xNN, so that a message neither stops at an embedded NUL (a module
// "os\0x" shown as "os") nor moves a terminal.
std::string printable(std::string_view text);

// Result<T>: a value or an Error (std::expected is C++23; g++ 12 lacks it).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)) {}
  bool ok() const { return err_.status == Status::ok; }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { return err_; }
  Error&& error() && { return std::move(err_); }

 private:
  Error err_;
};

}  // namespace zt

// Guard clauses that read as one line (after zstd's RETURN_ERROR_IF).
#define ZT_FAIL_IF(cond, status, ...)                                     \
  do {                                                                    \
    if (cond) return ::zt::make_error(::zt::Status::status, __VA_ARGS__); \
  } while (0)
#define ZT_CAT_(a, b) a##b
#define ZT_CAT(a, b) ZT_CAT_(a, b)
#define ZT_TRY(expr) ZT_TRY_(expr, ZT_CAT(zt_try_r_, __COUNTER__))
#define ZT_TRY_(expr, var)                        \
  do {                                            \
    auto&& var = (expr);                          \
    if (!var.ok()) return std::move(var).error(); \
  } while (0)
