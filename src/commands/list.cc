// `rlock list [PATTERN]`: held locks under the prefix, found with SCAN on
// every master (each master of a Cluster, every master of a quorum).
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "cli/key_hints.h"
#include "cli/output.h"
#include "commands/commands.h"
#include "commands/list_output.h"
#include "core/duration.h"
#include "core/text.h"
#include "lock/replies.h"
#include "lock/script_args.h"
#include "lock/scripts.h"

namespace rlock {

namespace {

// How many locks one `list` script call reads, or how many status calls `list`
// has in flight at once.
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

// What SCAN saw of a lock's keys: its lock key PREFIX{KEY} or HOLDERS (either
// makes it a lock to list), its line (:queue), its --limit (:limit). The list
// script reads a side key only when SCAN saw it (list.lua says where not).
enum : uint8_t { kSawQueue = 1, kSawLimit = 2, kSawLock = 4 };

// The lock names SCAN found, each with what it saw of its keys, de-duplicated
// (SCAN may repeat a key, and names a lock by several keys). Hashed while SCAN
// runs (half a million keys for 100,000 locks: one lookup each), sorted once.
struct Found {
  using Entry = std::pair<const std::string, uint8_t>;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint8_t, Hash, std::equal_to<>> seen;
  size_t locks = 0;  // names with kSawLock: the ones listed

  void add(std::string_view name, uint8_t saw) {
    auto it = seen.find(name);
    if (it == seen.end()) it = seen.emplace(std::string(name), 0).first;
    if ((saw & kSawLock) && !(it->second & kSawLock)) ++locks;
    it->second |= saw;
  }
  /// The locks to list (kSawLock), in KEY order (bytes).
  std::vector<const Entry*> sorted() const {
    std::vector<const Entry*> out;
    out.reserve(locks);
    for (auto& e : seen)
      if (e.second & kSawLock) out.push_back(&e);
    std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->first < b->first; });
    return out;
  }
};

// The lock name in Redis key `name` under `head` ("lock:{"), and which of its
// keys `name` is: plain locks (PREFIX{KEY}), semaphores (PREFIX{KEY}:holders),
// and their lines and limits; nullopt for any other key. The name is a view
// into `name`. With `histories` (list --names), a lock's history stream
// (PREFIX{KEY}:log) names a lock to list too, held or not.
// Under --layout plain `head` is the prefix and KEY the rest (no braces: those
// are rlock's own keys); under --layout redisson `head` is empty and KEY the
// whole name (a lock name rlock could take: no braces either).
std::optional<std::pair<std::string_view, uint8_t>> lock_name(std::string_view name,
                                                              std::string_view head,
                                                              Layout layout = Layout::Rlock,
                                                              bool histories = false) {
  if (name.substr(0, head.size()) != head) return std::nullopt;
  if (layout != Layout::Rlock) {
    std::string_view key = name.substr(head.size());
    try {
      validate_key(key);
    } catch (const Error&) {
      return std::nullopt;
    }
    return std::pair{key, uint8_t{kSawLock}};
  }
  auto close = name.find('}', head.size());
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = name.substr(close + 1);
  uint8_t saw = rest.empty() || rest == ":holders" ? kSawLock
                : rest == ":queue"                 ? kSawQueue
                : rest == ":limit"                 ? kSawLimit
                : histories && rest == ":log"      ? kSawLock
                                                   : 0;
  if (saw == 0) return std::nullopt;
  return std::pair{name.substr(head.size(), close - head.size()), saw};
}

// One SCAN reply: the cursor to go on with ("0": done); the locks are added to `found`.
std::string scan_step(const Reply& r, const std::string& head, Found& found,
                      Layout layout = Layout::Rlock, bool histories = false) {
  auto& e = r.as_array("a SCAN reply", 2);
  for (auto& k : e[1].as_array("SCAN keys"))
    if (auto key = lock_name(k.as_string("a key name"), head, layout, histories))
      found.add(key->first, key->second);
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

// The locks that SCAN MATCH `match` finds on one node, added to `found`. The
// next SCAN goes out as soon as a reply's cursor is read, before its keys are:
// the server scans on while rlock sorts out the names.
void scan(Client& client, const std::string& node, const std::string& match,
          const std::string& head, Found& found, Layout layout) {
  auto send = [&](const std::string& cursor) {
    auto result = std::make_shared<std::optional<Result>>();
    client.command(
        scan_args(cursor, match, layout, "500"), [result](Result r) { *result = std::move(r); },
        CallOptions{Millis(0), {}, {}, node});
    return result;
  };
  auto next = send("0");
  while (next) {
    auto got = std::move(next);
    client.loop().run_until([&] { return got->has_value(); });
    const Reply& r = expect_ok(**got, "SCAN");
    const std::string& cursor = r.as_array("a SCAN reply", 2)[0].as_string("a SCAN cursor");
    if (cursor != "0") next = send(cursor);
    scan_step(r, head, found, layout);
  }
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

// A held lock's status, for the output (free locks, and another tool's keys
// that are not its locks, are not listed; a lock with a key of another type
// among its keys is named and left out, ListOutput::unreadable); throws a
// failure that is one.
void emit(const GlobalOptions& g, const std::string& key, Outcome<LockStatus>& o, ListOutput& out) {
  if (o.error && o.error->cause() == Cause::ForeignLock) return;  // not a lock: as list.lua
  if (o.error && o.error->cause() == Cause::Foreign) return out.unreadable(key, *o.error);
  if (o.error) {
    // Under another tool's layout, a key of another type or kind is not a lock.
    if (g.layout == Layout::Rlock || o.error->kind() != ErrorKind::Protocol) throw *o.error;
    return;
  }
  const LockStatus& st = o.value;
  if (st.holders.empty()) return;
  // Their locks always expire (PX, PEXPIRE): a key without expiry is something else.
  if (g.layout != Layout::Rlock && st.holders.front().ttl_left < Millis(0)) return;
  out.add(key, st);
}

using Listed = std::vector<const Found::Entry*>;

// Quorum mode: the masters that failed a status call of the batch `got` (down,
// stalled, refusing) leave `answered`, each with a warning, so that a master
// lost part way costs one --command-timeout, not one per batch, and is never silently
// left out. Too few left: the next batch's calls say so (69).
void drop_failed_masters(const std::vector<std::optional<Outcome<LockStatus>>>& got,
                         std::vector<Client*>& answered) {
  for (const auto& o : got) {
    if (o->error) continue;
    for (const MasterStatus& m : o->value.masters) {
      if (!m.error ||
          (m.error->kind() != ErrorKind::Unavailable && m.error->kind() != ErrorKind::Permission))
        continue;
      auto it = std::find_if(answered.begin(), answered.end(),
                             [&](Client* c) { return c->name() == m.name; });
      if (it == answered.end()) continue;
      answered.erase(it);
      log_error(fmt::format("warning: {}; listing the rest from the {} masters that answered",
                            m.error->what(), answered.size()));
    }
  }
}

// The statuses of locks [from, to) of `all`, one status call each, all of them
// in flight together (pipelined on each master's connection): about one round
// trip for the batch, not one per lock.
void list_by_status(Session& s, const GlobalOptions& g, std::vector<Client*>& answered,
                    const Listed& all, size_t from, size_t to, ListOutput& out) {
  std::vector<std::unique_ptr<Lock>> locks;
  std::vector<std::optional<Outcome<LockStatus>>> got(to - from);
  size_t pending = to - from;
  for (size_t i = from; i < to; ++i) {
    locks.push_back(s.found_lock(all[i]->first, g.prefix, answered));
    if (g.json) locks.back()->set_status_events(false);  // list --json leaves them out
    locks.back()->status([&got, &pending, i, from](Outcome<LockStatus> o) {
      got[i - from] = std::move(o);
      --pending;
    });
  }
  s.loop.run_until([&] { return pending == 0; });
  for (size_t i = from; i < to; ++i) emit(g, all[i]->first, *got[i - from], out);
  if (s.quorum()) drop_failed_masters(got, answered);
}

// One `list` script call in flight: locks [from, to) of the list.
struct ListCall {
  size_t from, to;
  std::shared_ptr<std::optional<Result>> result = std::make_shared<std::optional<Result>>();
};

ListCall send_list_call(Client& c, const GlobalOptions& g, const Listed& all, size_t from,
                        size_t to, ListReply kind) {
  ListCall call{from, to};
  Args keys;
  std::string seen;
  for (size_t i = from; i < to; ++i) {
    keys.push_back(LockNames(all[i]->first, g.prefix).lock);
    seen += static_cast<char>('0' + (all[i]->second & (kSawQueue | kSawLimit)));
  }
  run_script(c, list_script(), keys,
             ListArgs{.full = kind == ListReply::Full, .seen = seen}.to_argv(),
             [r = call.result](Result res) { *r = std::move(res); });
  return call;
}

// The statuses of locks [from, end of `all`) by `list` script calls on one
// server (kListBatch locks each, one prelude per call), two calls in flight so
// that the server runs one while rlock prints the other's locks. Returns where
// it stopped: the end, or the first lock of a call the server refused (a
// Cluster of one node refuses keys of several slots), for the caller to ask
// each lock from there on.
size_t list_by_script(Session& s, const GlobalOptions& g, std::vector<Client*>& answered,
                      const Listed& all, ListReply kind, ListOutput& out) {
  Client& c = *s.clients.front();
  std::deque<ListCall> calls;
  size_t next = 0;
  auto top_up = [&] {
    while (calls.size() < 2 && next < all.size()) {
      size_t to = std::min(all.size(), next + kListBatch);
      calls.push_back(send_list_call(c, g, all, next, to, kind));
      next = to;
    }
  };
  top_up();
  while (!calls.empty()) {
    ListCall call = std::move(calls.front());
    calls.pop_front();
    s.loop.run_until([&] { return call.result->has_value(); });
    std::vector<LockStatus> sts;
    try {
      sts = parse_list_reply(expect_ok(**call.result, "list script"), call.to - call.from, kind);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Protocol) throw;
      if (e.cause() == Cause::Foreign) {
        // A lock of the batch has a key of another type (WRONGTYPE stopped the
        // script there): this batch is asked lock by lock, each unreadable one
        // named and left out, then the script goes on with the next.
        log_verbose(fmt::format("list script: {}; asking this batch's locks one by one", e.what()));
        list_by_status(s, g, answered, all, call.from, call.to, out);
        out.flush();
        top_up();
        continue;
      }
      log_verbose(fmt::format("list script: {}; asking each lock", e.what()));
      // The calls still in flight are refused too: let them finish unread.
      s.loop.run_until([&] {
        return std::all_of(calls.begin(), calls.end(),
                           [](const ListCall& c) { return c.result->has_value(); });
      });
      return call.from;
    }
    // A full reply may stop early (list.lua): the rest of its locks go out again, first.
    if (size_t done = call.from + sts.size(); done < call.to)
      calls.push_front(send_list_call(c, g, all, done, call.to, kind));
    top_up();
    for (size_t i = 0; i < sts.size(); ++i) {
      Outcome<LockStatus> o{{}, std::move(sts[i])};
      emit(g, all[call.from + i]->first, o, out);
    }
    out.flush();
  }
  return all.size();
}

}  // namespace

int cmd_list(const GlobalOptions& g, const std::string& pattern, bool prometheus) {
  std::string match = scan_match(g, pattern);
  Session s(g);
  std::string head = head_of(g);
  Found found;
  // Every master: one server, each master of a Cluster, every master of a quorum (a
  // key that a quorum holds is on a majority of them: any one of those names it).
  // In quorum mode a minority of them may be down: a key a quorum holds is
  // still on one that answers.
  // A master that fails (down, stalled, refusing this ACL user) is left out of
  // the status calls too, so that a stalled one costs one --command-timeout, not one per key.
  std::vector<Client*> answered;
  std::optional<Error> failure;
  std::vector<std::string> left_out;  // why each master that failed SCAN did
  bool single_node = true;
  for (auto& client : s.clients) {
    try {
      auto masters = wait_for<std::vector<std::string>>(
          s.loop, [&](Done<std::vector<std::string>> d) { client->masters(std::move(d)); });
      single_node = single_node && masters.size() == 1;
      for (const std::string& node : masters) scan(*client, node, match, head, found, g.layout);
      answered.push_back(client.get());
    } catch (const Error& e) {
      if (!s.quorum() || (e.kind() != ErrorKind::Unavailable && e.kind() != ErrorKind::Permission))
        throw;
      failure = e;
      left_out.push_back(e.what());
    }
  }
  size_t majority = s.clients.size() / 2 + 1;
  if (failure && answered.size() < majority) {
    if (failure->kind() == ErrorKind::Permission) throw *failure;
    throw_unavailable(
        fmt::format("cannot list: only {} of {} masters answered (a majority is {}); {}",
                    answered.size(), s.clients.size(), majority, failure->what()));
  }
  for (const std::string& why : left_out)
    log_error(fmt::format("warning: {}; listing from the {} masters that answered", why,
                          answered.size()));
  // The output is sorted by KEY: SCAN's names are all gathered first (what SCAN
  // saw of each, a few dozen bytes a lock), then the locks are read in order,
  // kListBatch at a time, and bare lines and JSON are printed batch by batch.
  Listed all = found.sorted();
  ListOutput out(g, prometheus);
  // On one server that is no Cluster node, a batch is one `list` script call (one
  // prelude for all of them): what a line needs, or for --json status's every
  // record. Anywhere else, or if the server refuses it, one status each.
  size_t from = 0;
  if (g.layout == Layout::Rlock && !s.quorum() && single_node)
    from = list_by_script(s, g, answered, all, g.json ? ListReply::Full : ListReply::Line, out);
  for (; from < all.size(); from += kListBatch) {
    list_by_status(s, g, answered, all, from, std::min(all.size(), from + kListBatch), out);
    out.flush();
  }
  out.finish();
  // Nothing found for a PATTERN that starts with the prefix: rlock added it again.
  if (all.empty() && g.layout != Layout::Redisson)
    if (auto hint = list_hint(pattern, g.prefix)) log_info(*hint);
  return exitcode::kOk;
}

// Names only, for shell completion: held locks and keys with a history (the
// names a user looks up with status and history), no round trip per key, at most
// kMaxListedNames, and one deadline (--command-timeout) for connecting and every SCAN
// on every master, so that neither a stalled server nor 100,000 keys keeps a
// shell waiting. A master that fails is left out; the first failure is thrown
// only when none answered.
int cmd_list_names(const GlobalOptions& given, const std::string& pattern) {
  std::string match = scan_match(given, pattern);
  const auto deadline = later(Clock::now(), given.command_timeout);
  GlobalOptions g = given;
  g.connect_timeout = std::min(g.connect_timeout, g.command_timeout);
  Session s(g);
  std::string head = head_of(g);
  Found found;
  std::optional<Error> failure;
  size_t answered = 0;
  bool out_of_time = false;
  auto left = [&] { return std::chrono::ceil<Millis>(deadline - Clock::now()); };
  for (auto& client : s.clients) {
    if (found.locks >= kMaxListedNames || out_of_time) break;
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
          if (found.locks >= kMaxListedNames) break;
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
          cursor = scan_step(expect_ok(*r, "SCAN"), head, found, g.layout, /*histories=*/true);
        } while (cursor != "0");
        if (out_of_time || found.locks >= kMaxListedNames) break;
      }
      ++answered;
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Usage) throw;
      if (!failure) failure = e;
    }
  }
  std::string out;
  size_t n = 0;
  for (const Found::Entry* e : found.sorted()) {
    if (n++ == kMaxListedNames) break;
    // Each name as it is, for a program (a completion) to use: escaped, it would
    // name another lock. A name that is not printable UTF-8 (a foreign key's
    // control bytes) cannot be one line of it, nor be typed: it is left out.
    if (is_printable_text(e->first)) out += e->first + "\n";
  }
  print_out(out);
  if (out_of_time)
    throw_unavailable(fmt::format("list --names: --command-timeout ({}ms) ran out after {} names",
                                  given.command_timeout.count(),
                                  std::min(found.locks, kMaxListedNames)));
  if (answered == 0 && failure) throw *failure;
  return exitcode::kOk;
}

}  // namespace rlock

namespace rlock {

std::vector<FoundLock> scan_locks(Session& s, const GlobalOptions& g, const std::string& pattern,
                                  ScanReport* report) {
  std::string match = scan_match(g, pattern);
  std::string head = head_of(g);
  Found found;
  std::optional<Error> failure;
  size_t answered = 0;
  for (auto& client : s.clients) {
    try {
      auto masters = wait_for<std::vector<std::string>>(
          s.loop, [&](Done<std::vector<std::string>> d) { client->masters(std::move(d)); });
      for (const std::string& node : masters) scan(*client, node, match, head, found, g.layout);
      ++answered;
      if (report) report->masters.insert(report->masters.end(), masters.begin(), masters.end());
    } catch (const Error& e) {
      if (!s.quorum() || (e.kind() != ErrorKind::Unavailable && e.kind() != ErrorKind::Permission))
        throw;
      failure = e;
      if (report)
        (e.kind() == ErrorKind::Permission ? report->refused : report->down)
            .push_back(client->name());
    }
  }
  if (failure && answered < s.clients.size() / 2 + 1) throw *failure;
  std::vector<FoundLock> out;
  out.reserve(found.seen.size());
  for (auto& [name, saw] : found.seen)
    if (saw & (kSawLock | kSawQueue))
      out.push_back(FoundLock{name, (saw & kSawLock) != 0, (saw & kSawQueue) != 0});
  return out;
}

}  // namespace rlock
