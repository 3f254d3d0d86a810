#include "commands/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "core/text.h"
#include "hold/held.h"
#include "lock/layout.h"
#include "lock/multi.h"
#include "lock/quorum.h"
#include "lock/single.h"

namespace rlock {

std::string lock_location(const GlobalOptions& g) {
  return lock_location(effective_urls(g), g.layout);
}

namespace {

// A server as named by its URL, whatever the database, user or password: two
// databases of one server are one master.
std::string server_of(const ConnectionConfig& cfg) {
  if (cfg.sentinel) {
    std::vector<std::string> hosts;
    for (auto& s : cfg.sentinel->sentinels) hosts.push_back(ascii_lower(s.address()));
    std::sort(hosts.begin(), hosts.end());
    return fmt::format("sentinel {} {}", fmt::join(hosts, ","), cfg.sentinel->master_name);
  }
  return ascii_lower(cfg.endpoint.address());
}

// The run_id in an INFO reply ("run_id:<40 hex>").
std::optional<std::string> run_id_of(const std::string& info) {
  auto at = info.find("run_id:");
  if (at == std::string::npos) return std::nullopt;
  at += 7;
  auto end = info.find_first_of("\r\n", at);
  std::string id = info.substr(at, end == std::string::npos ? std::string::npos : end - at);
  if (id.empty() || id.size() > 64) return std::nullopt;
  return id;
}

// How long a command other than run and acquire waits for the masters'
// INFO before it goes on: a master that has not answered by then is not
// checked. The INFO itself is not cut short: a timeout closes the connection,
// and what is pipelined behind it (run's and acquire's first acquisition,
// whose own bound is the quorum's per-master one) would fail with it on a
// network whose round trip is longer. Its timeout is the command timeout and
// twice this much more, so that the command behind it (sent at once, or after
// this wait) times out first, under its own name and with its own clean-up.
constexpr Millis kIdentifyBound{250};

}  // namespace

Session::Session(const GlobalOptions& g) : history(g.history), layout(g.layout) {
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
    if (!seen.insert(server_of(cfg)).second)
      throw_usage(fmt::format("{} is given twice: quorum mode needs independent masters",
                              clients.back()->name()));
  }
  if (quorum()) refuse_same_server();
}

// Names differ, the server may not (localhost and 127.0.0.1, a socket and its
// port): each server's run_id says. One INFO to every master at once, sent
// here and not waited for: run and acquire send their first acquire right
// behind it on the same connections and check the replies before a grant
// counts (QuorumLock::set_identity_check); every other command waits for them
// first (check_identities).
void Session::refuse_same_server() {
  identities_ = std::make_shared<Identities>();
  identities_->ids.resize(clients.size());
  identities_->pending = clients.size();
  CallOptions opt;
  opt.timeout = clients.front()->command_timeout() + 2 * kIdentifyBound;
  for (size_t i = 0; i < clients.size(); ++i) {
    clients[i]->command(
        {"INFO", "server"},
        [ids = identities_, i](Result r) {
          if (!r.failure && r.reply.type == Reply::Type::String)
            ids->ids[i] = run_id_of(r.reply.str);
          --ids->pending;
        },
        opt);
  }
}

std::optional<Error> Session::same_server(const Identities& ids,
                                          const std::vector<std::string>& names) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < ids.ids.size(); ++i) {
    if (!ids.ids[i]) continue;
    auto [it, fresh] = first.emplace(*ids.ids[i], i);
    if (!fresh)
      return Error(ErrorKind::Usage,
                   fmt::format("{} and {} are the same server: quorum mode needs independent "
                               "masters",
                               names[it->second], names[i]));
  }
  return std::nullopt;
}

void Session::check_identities() {
  if (!identities_) return;
  auto ids = identities_;
  if (!ids->waited) {
    ids->waited = true;
    bool late = false;
    auto timer = loop.after(kIdentifyBound, [&late] { late = true; });
    loop.run_until([&] { return ids->pending == 0 || late; });
    loop.cancel(timer);
  }
  std::vector<std::string> names;
  for (auto& c : clients) names.push_back(c->name());
  if (auto e = same_server(*ids, names)) throw *e;
}

std::unique_ptr<Lock> Session::lock(const std::string& key, const std::string& prefix, int limit,
                                    bool shared) {
  if (!defer_identities_) check_identities();
  validate_key(key);
  validate_prefix(prefix);
  auto l = make_lock(key, prefix, limit);
  l->set_shared(shared);
  return l;
}

std::unique_ptr<Lock> Session::locks(const std::vector<std::string>& keys,
                                     const std::string& prefix, int limit, bool shared) {
  if (keys.size() == 1) return lock(keys.front(), prefix, limit, shared);
  if (limit > 0)
    throw_usage(
        "--and and --limit: several keys are taken all or nothing, one holder each; a "
        "semaphore's places are counted per KEY");
  std::vector<std::unique_ptr<Lock>> parts;
  for (size_t i = 0; i < keys.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (keys[j] == keys[i])
        throw_usage(
            fmt::format("'{}' is given twice: each --and names another KEY", escape_text(keys[i])));
    parts.push_back(lock(keys[i], prefix, 0, shared));
  }
  return std::make_unique<MultiLock>(std::move(parts));
}

std::unique_ptr<Lock> Session::locks(const LockOptions& o, const std::string& prefix) {
  // The first acquire goes out behind the masters' INFO: checked before a grant counts.
  defer_identities_ = true;
  auto l = locks(o.keys(), prefix, o.limit, o.shared);
  defer_identities_ = false;
  l->set_line_policy(LinePolicy{.priority = o.priority,
                                .supersede = o.supersede,
                                .cancel = o.cancel_in_progress,
                                .max_waiters = o.max_waiters});
  l->set_pool(o.pool);
  return l;
}

std::unique_ptr<Lock> Session::found_lock(const std::string& key, const std::string& prefix,
                                          const std::vector<Client*>& only) {
  check_identities();
  if (!quorum() || only.empty()) return make_lock(key, prefix, 0);
  return std::make_unique<QuorumLock>(only, LockNames(key, prefix), clients.size());
}

std::unique_ptr<Lock> Session::make_lock(const std::string& key, const std::string& prefix,
                                         int limit) {
  std::unique_ptr<Lock> l = make_lock_on(key, prefix, limit);
  l->set_history(history);
  return l;
}

std::unique_ptr<Lock> Session::make_lock_on(const std::string& key, const std::string& prefix,
                                            int limit) {
  if (layout != Layout::Rlock) {
    // check_layout_options refused these before; a lock found by `list` too.
    if (quorum() || limit > 0)
      throw_usage(
          fmt::format("--layout {} has neither a quorum mode nor --limit", layout_name(layout)));
    return std::make_unique<LayoutLock>(*clients.front(), LockNames::of(layout, key, prefix));
  }
  if (!quorum())
    return std::make_unique<SingleLock>(*clients.front(), LockNames(key, prefix), limit);
  if (limit > 0)
    throw_usage(
        "--limit cannot be used with several --url: a semaphore's count lives on one "
        "deployment, and the masters of a quorum could disagree on it");
  std::vector<Client*> masters;
  std::vector<std::string> names;
  for (auto& c : clients) {
    masters.push_back(c.get());
    names.push_back(c->name());
  }
  auto q = std::make_unique<QuorumLock>(std::move(masters), LockNames(key, prefix));
  if (defer_identities_ && identities_)
    q->set_identity_check([ids = identities_, names] { return same_server(*ids, names); });
  return q;
}

}  // namespace rlock
