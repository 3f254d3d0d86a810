// Host names to socket addresses without ever blocking the event loop.
//
// A reconnect after a failover must follow a changed DNS record (managed Redis
// services fail over by changing one), but a renewal must never wait on a slow
// resolver. So a name is looked up with getaddrinfo() in a helper thread, with
// a bound; the loop hears the answer through a socket pair. Numeric addresses
// and Unix socket paths need no lookup and are converted at once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "error.h"
#include "loop.h"
#include "transport.h"

namespace rlock {

/// A lookup younger than this is reused by a connection that is not
/// reconnecting (the command connection and a subscriber opened together).
inline constexpr Millis kFreshLookup{1000};

/// The addresses of one endpoint, looked up again when a connection asks
/// for fresh ones. One lookup runs at a time; callers that ask meanwhile
/// share its answer.
class AddressBook {
 public:
  /// For `ep`; lookups are abandoned after `bound` (the connect timeout).
  AddressBook(Loop& loop, Endpoint ep, Millis bound);
  /// Fixed addresses that are never looked up (tests).
  AddressBook(Loop& loop, std::vector<Address> fixed);
  ~AddressBook();
  AddressBook(const AddressBook&) = delete;
  AddressBook& operator=(const AddressBook&) = delete;

  /// The addresses to use now, if no lookup is needed: a numeric host, a Unix
  /// path, fixed addresses, or a lookup younger than kFreshLookup (unless
  /// `fresh`: a reconnect).
  std::optional<std::vector<Address>> ready(bool fresh) const;

  /// The addresses to try (empty: none) and, when the lookup failed or
  /// outlived its bound, the unavailable Error that says why (naming the
  /// host); the addresses are then the ones found last, if any.
  using Found = std::function<void(std::optional<Error>, const std::vector<Address>&)>;
  /// Looks the name up (in a helper thread) and calls `done` from the loop,
  /// never from inside lookup().
  void lookup(Found done);

  const Endpoint& endpoint() const { return ep_; }

 private:
  struct Pending;
  void finish(std::optional<Error> err, std::vector<Address> found);

  Loop& loop_;
  Endpoint ep_;
  Millis bound_;
  bool numeric_ = false;  // converted once, never looked up
  std::vector<Address> last_;
  std::optional<Clock::time_point> last_at_;
  std::shared_ptr<Pending> pending_;  // the lookup in flight
  std::vector<Found> waiting_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace rlock
