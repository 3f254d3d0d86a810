// The lifetime of an object whose callbacks may outlive it. A callback given
// to the loop, a connection or a lock runs later, when its owner may already
// be gone: it carries an Alive token and does nothing once the owner died.
//
//   class Thing {
//     ...
//     ~Thing() { life_.end(); ...cancel timers... }
//     void later() {
//       loop_.after(d, life_.guard([this] { tick(); }));        // skipped once dead
//       conn_.command(c, [this, alive = life_.token()](Result r) {
//         if (!alive) return;                                   // the same, by hand
//         ...
//       });
//     }
//     Lifetime life_;
//   };
//
// One thread, like the loop: the flag is not atomic.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace rlock {

/// A cheap, copyable token: true while the Lifetime it came from has not
/// ended. A default-constructed token is never alive.
class Alive {
 public:
  Alive() = default;
  explicit operator bool() const { return flag_ && *flag_; }

 private:
  friend class Lifetime;
  explicit Alive(std::shared_ptr<const bool> flag) : flag_(std::move(flag)) {}
  std::shared_ptr<const bool> flag_;
};

/// Owned by the object whose callbacks it guards (a member, neither copied
/// nor moved: tokens point at this owner). Ends when destroyed, or earlier by
/// end(): an owner whose other members fire callbacks as they are destroyed
/// calls end() first in its destructor.
class Lifetime {
 public:
  Lifetime() = default;
  ~Lifetime() { end(); }
  Lifetime(const Lifetime&) = delete;
  Lifetime& operator=(const Lifetime&) = delete;

  /// From now on every token is false and every guarded callback a no-op.
  void end() { *flag_ = false; }
  bool alive() const { return *flag_; }

  Alive token() const { return Alive(flag_); }

  /// `callback` wrapped so that it runs only while this Lifetime has not
  /// ended (for callbacks that return nothing: a skipped call has no value).
  template <class F>
  auto guard(F callback) const {
    return [alive = token(), callback = std::move(callback)](auto&&... args) mutable {
      static_assert(std::is_void_v<decltype(callback(std::forward<decltype(args)>(args)...))>,
                    "Lifetime::guard wraps callbacks that return void");
      if (alive) callback(std::forward<decltype(args)>(args)...);
    };
  }

 private:
  std::shared_ptr<bool> flag_ = std::make_shared<bool>(true);
};

}  // namespace rlock
