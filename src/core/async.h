// Asynchronous results on the event loop: an operation calls its Done
// callback exactly once with an Outcome (a value or an Error); `wait_for`
// runs one to completion for the scriptable commands.
#pragma once

#include <functional>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/loop.h"

namespace rlock {

/// Asynchronous results: a value or an Error (never both).
template <class T>
struct Outcome {
  std::optional<Error> error;
  T value{};
};
template <class T>
using Done = std::function<void(Outcome<T>)>;

/// Runs an asynchronous operation to completion on `loop`; throws its Error.
template <class T>
T wait_for(Loop& loop, const std::function<void(Done<T>)>& op) {
  Outcome<T> out = settle<Outcome<T>>(loop, op);
  if (out.error) throw *out.error;
  return std::move(out.value);
}

}  // namespace rlock
