// `rlock list [PATTERN]`: held locks under the prefix, found with SCAN on
// every master (each master of a Cluster, every master of a quorum).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "commands/commands.h"
#include "duration.h"
#include "output.h"
#include "scripts.h"
#include "table.h"
#include "text.h"

namespace rlock {

namespace {

// How many keys' status calls `list` has in flight at once.
constexpr size_t kListBatch = 512;

// SCAN MATCH treats * ? [ ] \ specially; the prefix is literal.
std::string glob_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The lock name in Redis key `name` under `head` ("lock:{"): plain locks
// (PREFIX{KEY}) and semaphores (PREFIX{KEY}:holders); nullopt for any other key.
// Under --layout plain `head` is the prefix and KEY the rest (no braces: those
// are rlock's own keys); under --layout redisson `head` is empty and KEY the
// whole name (a lock name rlock could take: no braces either).
std::optional<std::string> lock_name(const std::string& name, const std::string& head,
                                     Layout layout = Layout::Rlock) {
  if (layout != Layout::Rlock) {
    if (name.compare(0, head.size(), head) != 0) return std::nullopt;
    std::string key = name.substr(head.size());
    try {
      validate_key(key);
    } catch (const Error&) {
      return std::nullopt;
    }
    return key;
  }
  auto close = name.find('}', head.size());
  if (name.compare(0, head.size(), head) != 0 || close == std::string::npos) return std::nullopt;
  std::string rest = name.substr(close + 1);
  if (!rest.empty() && rest != ":holders") return std::nullopt;
  return name.substr(head.size(), close - head.size());
}

// One SCAN reply: the cursor to go on with ("0": done); the lock names are added to `keys`.
std::string scan_step(const Reply& r, const std::string& head, std::set<std::string>& keys,
                      Layout layout = Layout::Rlock) {
  auto& e = r.as_array("a SCAN reply", 2);
  for (auto& k : e[1].as_array("SCAN keys"))
    if (auto key = lock_name(k.as_string("a key name"), head, layout)) keys.insert(*key);
  return e[0].as_string("a SCAN cursor");
}

// SCAN's arguments after the cursor: MATCH, COUNT and, under another tool's
// layout, the TYPE its lock has (a string, Redisson's hash).
Args scan_args(const std::string& cursor, const std::string& match, Layout layout,
               const char* count) {
  Args a{"SCAN", cursor, "MATCH", match, "COUNT", count};
  if (layout != Layout::Rlock) {
    a.push_back("TYPE");
    a.push_back(layout == Layout::Redisson ? "hash" : "string");
  }
  return a;
}

// Where lock names start in Redis keys: "lock:{" (rlock), the prefix (plain),
// nothing (Redisson).
std::string head_of(const GlobalOptions& g) {
  if (g.layout == Layout::Plain) return g.prefix;
  if (g.layout == Layout::Redisson) return "";
  return g.prefix + "{";
}

// The lock names that SCAN MATCH `match` finds on one node, added to `keys`.
void scan(Client& client, const std::string& node, const std::string& match,
          const std::string& head, std::set<std::string>& keys, Layout layout) {
  std::string cursor = "0";
  do {
    Reply r = call(client, scan_args(cursor, match, layout, "500"), "SCAN",
                   CallOptions{Millis(0), {}, {}, node});
    cursor = scan_step(r, head, keys, layout);
  } while (cursor != "0");
}

// SCAN MATCH for the locks whose KEY matches `pattern` (usage Error for a bad one).
std::string scan_match(const GlobalOptions& g, const std::string& pattern) {
  if (pattern.empty() || pattern.find_first_of("{}") != std::string::npos)
    throw_usage("invalid pattern: it is a glob over KEY, without '{' or '}'");
  validate_prefix(g.prefix);
  if (g.layout == Layout::Plain) return glob_escape(g.prefix) + pattern;
  if (g.layout == Layout::Redisson) return pattern;
  return glob_escape(g.prefix + "{") + pattern + "}*";
}

// The HOLDER column: host:pid of a single holder, "2/3" for a semaphore, "3
// shared" for the shared holders of a lock.
std::string holder_column(const LockStatus& st, const std::string& who) {
  if (st.limit) return fmt::format("{}/{}", st.holder_count, st.limit);
  if (!st.holders.empty() && st.holders.front().shared)
    return fmt::format("{} shared", st.holder_count);
  return who;
}

// The Prometheus text format, one gauge family after another (each sample of
// a family together, under its HELP and TYPE), for node_exporter's textfile
// collector: per held lock, whether it is held, how many hold and wait, the
// first holder's lease left and time held, and its fence.
class Prometheus {
 public:
  void add(const std::string& key, const LockStatus& st) {
    const Holder& h = st.holders.front();
    std::string k = "{key=\"" + label_value(key) + "\"}";
    int64_t held_ms = h.since_ms > 0 && st.now_ms > h.since_ms ? st.now_ms - h.since_ms : 0;
    values_[0] += fmt::format("rlock_held{} 1\n", k);
    values_[1] += fmt::format("rlock_holders{} {}\n", k, st.holder_count);
    values_[2] += fmt::format("rlock_waiters{} {}\n", k, st.waiter_count);
    values_[3] += fmt::format("rlock_lease_left_seconds{} {:.3f}\n", k,
                              std::max<int64_t>(0, h.ttl_left.count()) / 1000.0);
    values_[4] += fmt::format("rlock_held_seconds{} {:.3f}\n", k, held_ms / 1000.0);
    values_[5] += fmt::format("rlock_fence{} {}\n", k, h.fence);
  }
  std::string text() const {
    static const char* kHelp[][2] = {
        {"rlock_held", "1 for a lock that is held (free locks are not listed)."},
        {"rlock_holders", "How many hold the lock (a semaphore's or shared lock's holders)."},
        {"rlock_waiters", "How many wait in the lock's line."},
        {"rlock_lease_left_seconds",
         "Seconds left on the first holder's lease (a live holder renews it)."},
        {"rlock_held_seconds", "Seconds since the first holder acquired the lock."},
        {"rlock_fence", "The first holder's fencing token."}};
    std::string out;
    for (size_t i = 0; i < 6; ++i)
      out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}", kHelp[i][0], kHelp[i][1], kHelp[i][0],
                         values_[i]);
    return out;
  }

 private:
  // A label value: text from Redis escaped as everywhere (a backslash
  // doubled, control characters as \xHH, so that two keys never give one
  // series), then backslash and double quote as the format wants them.
  static std::string label_value(const std::string& s) {
    std::string out;
    for (char c : escape_text(s)) {
      if (c == '\\' || c == '"') out += '\\';
      out += c;
    }
    return out;
  }
  std::string values_[6];
};

}  // namespace

int cmd_list(const GlobalOptions& g, const std::string& pattern, bool prometheus) {
  std::string match = scan_match(g, pattern);
  Session s(g);
  std::string head = head_of(g);
  std::set<std::string> keys;  // sorted, de-duplicated (SCAN may repeat)
  // Every master: one server, each master of a Cluster, every master of a quorum (a
  // key that a quorum holds is on a majority of them: any one of those names it).
  // In quorum mode a minority of them may be down: a key a quorum holds is
  // still on one that answers.
  // A master that fails (down, stalled, refusing this ACL user) is left out of
  // the status calls too, so that a stalled one costs one --timeout, not one per key.
  std::vector<Client*> answered;
  std::optional<Error> failure;
  bool single_node = true;
  for (auto& client : s.clients) {
    try {
      auto masters = wait_for<std::vector<std::string>>(
          s.loop, [&](Done<std::vector<std::string>> d) { client->masters(std::move(d)); });
      single_node = single_node && masters.size() == 1;
      for (const std::string& node : masters) scan(*client, node, match, head, keys, g.layout);
      answered.push_back(client.get());
    } catch (const Error& e) {
      if (!s.quorum() || (e.kind() != ErrorKind::Unavailable && e.kind() != ErrorKind::Permission))
        throw;
      failure = e;
    }
  }
  size_t majority = s.clients.size() / 2 + 1;
  if (failure && answered.size() < majority) {
    if (failure->kind() == ErrorKind::Permission) throw *failure;
    throw_unavailable(
        fmt::format("cannot list: only {} of {} masters answered (a majority is {}); {}",
                    answered.size(), s.clients.size(), majority, failure->what()));
  }
  // On a terminal: a table for people (a header, whole seconds, lines within
  // its width); piped: bare tab-separated values, for scripts.
  const bool table = !g.json && !prometheus && stdout_is_tty();
  Prometheus metrics;
  std::vector<std::vector<std::string>> rows{
      {"KEY", "HOLDER", "LEFT", "FENCE", "WAITERS", "COMMAND"}};
  std::string out;
  // The status of every key, kListBatch at a time: their scripts go out together
  // (pipelined on each master's connection), so a long list costs about one round
  // trip per batch, not one per key; memory stays one batch of replies.
  // On one server that is no Cluster node, a batch is one `list` script call (one
  // prelude for all of them): what a line needs, not status's every record (--json
  // prints those). Anywhere else, or if the server refuses it, one status each.
  std::vector<std::string> all(keys.begin(), keys.end());
  bool one_call = !g.json && g.layout == Layout::Rlock && !s.quorum() && single_node;
  for (size_t from = 0; from < all.size(); from += kListBatch) {
    size_t to = std::min(all.size(), from + kListBatch);
    std::vector<std::unique_ptr<Lock>> locks;
    std::vector<std::optional<Outcome<LockStatus>>> got(to - from);
    size_t pending = to - from;
    if (one_call) {
      Args names;
      for (size_t i = from; i < to; ++i) names.push_back(LockNames(all[i], g.prefix).lock);
      Result r = settle<Result>(s.loop, [&](std::function<void(Result)> done) {
        run_script(*s.clients.front(), list_script(), names, {}, std::move(done));
      });
      try {
        std::vector<LockStatus> sts = parse_list_reply(expect_ok(r, "list script"), to - from);
        for (size_t i = 0; i < sts.size(); ++i) got[i] = Outcome<LockStatus>{{}, std::move(sts[i])};
        pending = 0;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Protocol) throw;
        // A Cluster of one node refuses keys of several slots: one status each.
        log_verbose(fmt::format("list script: {}; asking each lock", e.what()));
        one_call = false;
      }
    }
    for (size_t i = from; i < to && pending > 0; ++i) {
      locks.push_back(s.found_lock(all[i], g.prefix, answered));
      locks.back()->status([&got, &pending, i, from](Outcome<LockStatus> o) {
        got[i - from] = std::move(o);
        --pending;
      });
    }
    s.loop.run_until([&] { return pending == 0; });
    for (size_t i = from; i < to; ++i) {
      const std::string& key = all[i];
      Outcome<LockStatus>& o = *got[i - from];
      if (o.error) {
        // Under another tool's layout, a key of another type or kind is not a lock.
        if (g.layout == Layout::Rlock || o.error->kind() != ErrorKind::Protocol) throw *o.error;
        continue;
      }
      LockStatus& st = o.value;
      if (st.holders.empty()) continue;
      // Their locks always expire (PX, PEXPIRE): a key without expiry is something else.
      if (g.layout != Layout::Rlock && st.holders.front().ttl_left < Millis(0)) continue;
      if (prometheus) {
        metrics.add(key, st);
      } else if (g.json) {
        out += (out.empty() ? "" : ",") + status_json(key, st);
      } else if (table) {
        const Holder& h = st.holders.front();
        // A label (a CI job's URL) says more than host:pid.
        std::string who = !h.info.label.empty() ? escape_text(h.info.label)
                          : h.info.host.empty()
                              ? "?"
                              : fmt::format("{}:{}", escape_text(h.info.host), h.info.pid);
        Millis left = h.ttl_left;
        if (left >= Millis(1000)) left = std::chrono::ceil<std::chrono::seconds>(left);
        // A lease kept by --min-hold or --done-for runs no command any more.
        std::string cmd = (h.done_ms > 0   ? "(done) "
                           : h.kept_ms > 0 ? "(kept) "
                                           : "") +
                          escape_text(h.info.cmd);
        rows.push_back({escape_text(key), holder_column(st, who),
                        format_duration(std::max(left, Millis(0))), std::to_string(h.fence),
                        std::to_string(st.waiter_count), cmd});
      } else {
        // KEY HOLDER TTL_MS FENCE WAITERS CMD LABEL, bare values, tab-separated (cut -f):
        // every field is escaped, so none can hold a tab or newline.
        const Holder& h = st.holders.front();
        std::string who =
            h.info.host.empty() ? "?" : fmt::format("{}:{}", escape_text(h.info.host), h.info.pid);
        out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", escape_text(key), holder_column(st, who),
                           h.ttl_left.count(), h.fence, st.waiter_count, escape_text(h.info.cmd),
                           escape_text(h.info.label));
      }
    }
  }
  if (table && rows.size() > 1)
    for (auto& line : layout_table(rows, stdout_columns(), 0, {{0, 32}, {1, 24}}).lines)
      out += line + "\n";
  if (prometheus) out = metrics.text();
  print_out(g.json ? "[" + out + "]\n" : out);
  return exitcode::kOk;
}

// Names only, for shell completion: no round trip per key, at most
// kMaxListedNames, and one deadline (--timeout) for connecting and every SCAN
// on every master, so that neither a stalled server nor 100,000 keys keeps a
// shell waiting. A master that fails is left out; the first failure is thrown
// only when none answered.
int cmd_list_names(const GlobalOptions& given, const std::string& pattern) {
  std::string match = scan_match(given, pattern);
  const auto deadline = later(Clock::now(), given.timeout);
  GlobalOptions g = given;
  g.connect_timeout = std::min(g.connect_timeout, g.timeout);
  Session s(g);
  std::string head = head_of(g);
  std::set<std::string> keys;
  std::optional<Error> failure;
  size_t answered = 0;
  bool out_of_time = false;
  auto left = [&] { return std::chrono::ceil<Millis>(deadline - Clock::now()); };
  for (auto& client : s.clients) {
    if (keys.size() >= kMaxListedNames || out_of_time) break;
    try {
      auto masters = settle_by<Outcome<std::vector<std::string>>>(
          s.loop, deadline,
          [&](Done<std::vector<std::string>> d) { client->masters(std::move(d)); });
      if (!masters) {
        out_of_time = true;
        break;
      }
      if (masters->error) throw *masters->error;
      for (const std::string& node : masters->value) {
        std::string cursor = "0";
        do {
          if (keys.size() >= kMaxListedNames) break;
          if (left() <= Millis(0)) {
            out_of_time = true;
            break;
          }
          CallOptions opt{left(), {}, {}, node};
          auto r = settle_by<Result>(s.loop, deadline, [&](std::function<void(Result)> done) {
            client->command(scan_args(cursor, match, g.layout, "1000"), std::move(done), opt);
          });
          if (!r) {
            out_of_time = true;
            break;
          }
          cursor = scan_step(expect_ok(*r, "SCAN"), head, keys, g.layout);
        } while (cursor != "0");
        if (out_of_time || keys.size() >= kMaxListedNames) break;
      }
      ++answered;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Usage) throw;
      if (!failure) failure = e;
    }
  }
  std::string out;
  size_t n = 0;
  for (auto& key : keys) {
    if (n++ == kMaxListedNames) break;
    out += escape_text(key) + "\n";
  }
  print_out(out);
  if (out_of_time)
    throw_unavailable(fmt::format("list --names: --timeout ({}ms) ran out after {} names",
                                  given.timeout.count(), std::min(keys.size(), kMaxListedNames)));
  if (answered == 0 && failure) throw *failure;
  return exitcode::kOk;
}

}  // namespace rlock
