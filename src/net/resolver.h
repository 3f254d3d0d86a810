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

#include "core/error.h"
#include "core/lifetime.h"
#include "core/loop.h"
#include "net/transport.h"

namespace rlock {

/// A lookup younger than this is reused by a connection that is not
/// reconnecting (the command connection and a subscriber opened together).
inline constexpr Millis kFreshLookup{1000};

/// At most this many lookup threads run at once in the process: a lookup that
/// outlived its bound goes on in its thread until the resolver gives up, and
/// a resolver that stalls must not make rlock pile threads up. Beyond it, the
/// addresses found before are used (or the lookup fails with 69).
inline constexpr int kMaxLookupThreads = 4;

/// How long a reconnect waits for a fresh lookup when it has addresses from
/// an earlier one: a slow resolver must not hold up a renewal. The lookup
/// goes on (up to its bound), and the next connect uses what it finds.
inline constexpr Millis kLookupPatience{250};

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
  /// never from inside lookup(): with the fresh addresses, or, when there are
  /// earlier ones and the lookup takes longer than kLookupPatience, with those.
  void lookup(Found done);

  const Endpoint& endpoint() const { return ep_; }

 private:
  struct Pending;
  void start_lookup();
  void cannot_look_up(const std::string& why);
  void finish(std::optional<Error> err, std::vector<Address> found);
  void answer(const std::optional<Error>& err);

  Loop& loop_;
  Endpoint ep_;
  Millis bound_;
  bool numeric_ = false;  // converted once, never looked up
  std::vector<Address> last_;
  std::optional<Clock::time_point> last_at_;
  std::shared_ptr<Pending> pending_;  // the lookup in flight
  std::vector<Found> waiting_;
  Loop::TimerId patience_timer_ = 0;
  Lifetime life_;
};

}  // namespace rlock
