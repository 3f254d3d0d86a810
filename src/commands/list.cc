// `rlock list [PATTERN]`: held locks under the prefix, found with SCAN on
// every master (each master of a Cluster, every master of a quorum).
#include <fmt/format.h>

#include <optional>
#include <set>

#include "commands/commands.h"
#include "duration.h"
#include "output.h"
#include "table.h"

namespace rlock {

namespace {

// SCAN MATCH treats * ? [ ] \ specially; the prefix is literal.
std::string glob_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The lock names under `head` ("lock:{") that SCAN MATCH `match` finds on one
// node, added to `keys`: plain locks (PREFIX{KEY}) and semaphores
// (PREFIX{KEY}:holders).
void scan(Client& client, const std::string& node, const std::string& match,
          const std::string& head, std::set<std::string>& keys) {
  std::string cursor = "0";
  do {
    Reply r = call(client, {"SCAN", cursor, "MATCH", match, "COUNT", "500"}, "SCAN",
                   CallOptions{Millis(0), {}, {}, node});
    auto& e = r.as_array("a SCAN reply", 2);
    cursor = e[0].as_string("a SCAN cursor");
    for (auto& k : e[1].as_array("SCAN keys")) {
      const std::string& name = k.as_string("a key name");
      auto close = name.find('}', head.size());
      if (name.compare(0, head.size(), head) != 0 || close == std::string::npos) continue;
      std::string rest = name.substr(close + 1);
      if (rest.empty() || rest == ":holders")
        keys.insert(name.substr(head.size(), close - head.size()));
    }
  } while (cursor != "0");
}

}  // namespace

int cmd_list(const GlobalOptions& g, const std::string& pattern) {
  if (pattern.empty() || pattern.find_first_of("{}") != std::string::npos)
    throw_usage("invalid pattern: it is a glob over KEY, without '{' or '}'");
  validate_prefix(g.prefix);
  Session s(g);
  std::string head = g.prefix + "{";
  std::string match = glob_escape(head) + pattern + "}*";
  std::set<std::string> keys;  // sorted, de-duplicated (SCAN may repeat)
  // Every master: one server, each master of a Cluster, every master of a quorum (a
  // key that a quorum holds is on a majority of them: any one of those names it).
  // In quorum mode a minority of them may be down: a key a quorum holds is
  // still on one that answers.
  // A master that fails (down, stalled, refusing this ACL user) is left out of
  // the status calls too, so that a stalled one costs one --timeout, not one per key.
  std::vector<Client*> answered;
  std::optional<Error> failure;
  for (auto& client : s.clients) {
    try {
      auto masters = wait_for<std::vector<std::string>>(
          s.loop, [&](Done<std::vector<std::string>> d) { client->masters(std::move(d)); });
      for (const std::string& node : masters) scan(*client, node, match, head, keys);
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
  const bool table = !g.json && stdout_is_tty();
  std::vector<std::vector<std::string>> rows{
      {"KEY", "HOLDER", "LEFT", "FENCE", "WAITERS", "COMMAND"}};
  std::string out;
  for (auto& key : keys) {
    auto lock = s.found_lock(key, g.prefix, answered);
    auto st = wait_for<LockStatus>(s.loop, [&](Done<LockStatus> d) { lock->status(std::move(d)); });
    if (st.holders.empty()) continue;
    if (g.json) {
      out += (out.empty() ? "" : ",") + status_json(key, st);
    } else if (table) {
      const Holder& h = st.holders.front();
      std::string who =
          h.info.host.empty() ? "?" : fmt::format("{}:{}", escape_text(h.info.host), h.info.pid);
      Millis left = h.ttl_left;
      if (left >= Millis(1000)) left = std::chrono::ceil<std::chrono::seconds>(left);
      // A lease kept by --min-hold runs no command any more.
      std::string cmd = (h.kept_ms > 0 ? "(kept) " : "") + escape_text(h.info.cmd);
      rows.push_back({escape_text(key),
                      st.limit ? fmt::format("{}/{}", st.holder_count, st.limit) : who,
                      format_duration(std::max(left, Millis(0))), std::to_string(h.fence),
                      std::to_string(st.waiter_count), cmd});
    } else {
      // KEY HOLDER TTL_MS FENCE WAITERS CMD, bare values, tab-separated (cut -f):
      // every field is escaped, so none can hold a tab or newline.
      const Holder& h = st.holders.front();
      std::string who =
          h.info.host.empty() ? "?" : fmt::format("{}:{}", escape_text(h.info.host), h.info.pid);
      out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", escape_text(key),
                         st.limit ? fmt::format("{}/{}", st.holder_count, st.limit) : who,
                         h.ttl_left.count(), h.fence, st.waiter_count, escape_text(h.info.cmd));
    }
  }
  if (table && rows.size() > 1)
    for (auto& line : layout_table(rows, stdout_columns(), 0, {{0, 32}, {1, 24}}).lines)
      out += line + "\n";
  print_out(g.json ? "[" + out + "]\n" : out);
  return exitcode::kOk;
}

}  // namespace rlock
