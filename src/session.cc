#include "session.h"

#include <fmt/format.h>

#include <set>

#include "quorum.h"
#include "text.h"

namespace rlock {

Session::Session(const GlobalOptions& g) {
  std::vector<std::string> urls = effective_urls(g);
  if (urls.size() > kMaxMasters)
    throw_usage(
        fmt::format("{} URLs: quorum mode takes at most {} masters", urls.size(), kMaxMasters));
  std::set<std::string> seen;
  for (const std::string& url : urls) {
    ConnectionConfig cfg = connection_config(g, url);
    clients.push_back(make_client(loop, cfg));
    // Two URLs of one master would let one server count twice towards a
    // majority.
    if (!seen.insert(clients.back()->name()).second)
      throw_usage(fmt::format("{} is given twice: quorum mode needs independent masters",
                              clients.back()->name()));
  }
}

std::unique_ptr<Lock> Session::lock(const std::string& key, const std::string& prefix, int limit) {
  validate_key(key);
  validate_prefix(prefix);
  return make_lock(key, prefix, limit);
}

std::unique_ptr<Lock> Session::found_lock(const std::string& key, const std::string& prefix) {
  return make_lock(key, prefix, 0);
}

std::unique_ptr<Lock> Session::make_lock(const std::string& key, const std::string& prefix,
                                         int limit) {
  if (!quorum())
    return std::make_unique<SingleLock>(*clients.front(), LockNames(key, prefix), limit);
  if (limit > 0)
    throw_usage(
        "--limit cannot be used with several --url: a semaphore's count lives on one "
        "deployment, and the masters of a quorum could disagree on it");
  std::vector<Client*> masters;
  for (auto& c : clients) masters.push_back(c.get());
  return std::make_unique<QuorumLock>(std::move(masters), LockNames(key, prefix));
}

}  // namespace rlock
