// `rlock doctor`: whether the Redis that rlock is pointed at is safe for locks,
// checked the way a lock depends on it (the man page's doctor; docs/GUIDE.md
// "Pointing rlock at Redis").
// Every check reads, except the ACL check, which runs the commands a lock
// needs on scratch keys of its own (a hash tag no lock has, each key with a
// 10-second expiry, all deleted at the end) so that no lock is touched.
// One line per check: ok, warn, fail or skip; exit 0 when nothing warns or
// fails, 1 when something does, 69 when the server cannot be reached, 77 only
// when rlock cannot authenticate.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/output.h"
#include "commands/commands.h"
#include "commands/doctor_footprint.h"
#include "core/text.h"
#include "lock/key.h"
#include "lock/scripts.h"
#include "net/resolver.h"
#include "net/slot.h"
#include "net/transport.h"

namespace rlock {

namespace {

enum class Verdict { Ok, Warn, Fail, Skip };

// Slower than this per command: a warning (a lease must outlast a few round trips).
constexpr double kSlowRoundTripMs = 50.0;
// More of maxmemory used than this: a warning (a full server refuses other clients' writes,
// and some of rlock's: docs/GUIDE.md, "Exit status").
constexpr double kMemoryWarnShare = 0.9;
// A server clock further off than this: a warning (times shown here are off).
constexpr double kClockWarnMs = 2000.0;
// INFO fields read at most (a hostile server's reply stays bounded).
constexpr size_t kMaxInfoFields = 2000;

// The ACL probe: every command rlock's scripts call (the rlock layout; tests/doctor.bats
// checks the list against src/lock/lua), tried with redis.pcall on scratch keys that share one
// hash tag (KEYS: a string, a hash, a sorted set, a list; ARGV[1]: a channel). Returns
// the names refused by the ACL ("~" for the keys, "&" for the channel), then "|", then those of the
// history (best effort). Each key gets a 10-second expiry as soon as it exists, and all are deleted
// at the end.
constexpr std::string_view kAclProbe = R"LUA(
local k, h, z, l, ch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1]
local out, hist = {}, {}
local function try(into, name, ...)
  local r = redis.pcall(name, ...)
  -- Redis 7.2 and later say NOPERM; 7.0 and 6.2 "The user executing the script can't ..."
  if type(r) == 'table' and r.err and (string.find(r.err, 'NOPERM', 1, true) or
      string.find(r.err, 'user executing the script', 1, true)) then
    -- a refused channel or key pattern rather than the command itself
    if string.find(r.err, 'channel', 1, true) then name = '&'
    elseif string.find(r.err, 'key', 1, true) then name = '~' end
    for _, n in ipairs(into) do if n == name then return end end
    into[#into + 1] = name
  end
end
local function t(name, ...) try(out, name, ...) end
t('TIME')
t('SET', k, '1', 'PX', 10000)
t('PEXPIRE', k, 10000)
t('GET', k) t('MGET', k) t('EXISTS', k) t('PTTL', k) t('INCR', k)
t('PERSIST', l .. ':none')  -- (a key that does not exist: nothing loses its expiry)
t('HSET', h, 'f', '1') redis.pcall('PEXPIRE', h, 10000)
t('HSETNX', h, 'g', '1') t('HGET', h, 'f') t('HMGET', h, 'f', 'g') t('HEXISTS', h, 'f')
t('HDEL', h, 'g') t('HLEN', h) t('HGETALL', h)
t('ZADD', z, 1, 'm') redis.pcall('PEXPIRE', z, 10000)
t('ZCARD', z) t('ZCOUNT', z, '-inf', '+inf') t('ZRANGE', z, 0, -1)
t('ZRANGEBYSCORE', z, '-inf', '+inf') t('ZRANK', z, 'm') t('ZSCORE', z, 'm')
t('ZREMRANGEBYSCORE', z, 5, 6) t('ZREM', z, 'm')
t('LPUSH', l, 'x') redis.pcall('PEXPIRE', l, 10000)
t('PUBLISH', ch, 'rlock doctor')
try(hist, 'XADD', h .. 's', 'MAXLEN', 1, '*', 'f', 'v') redis.pcall('PEXPIRE', h .. 's', 10000)
try(hist, 'XREVRANGE', h .. 's', '+', '-', 'COUNT', 1) try(hist, 'XRANGE', h .. 's', '-', '+', 'COUNT', 1)
t('DEL', k, h, z, l, h .. 's')
out[#out + 1] = '|'
for _, n in ipairs(hist) do out[#out + 1] = n end
return out
)LUA";

struct Finding {
  std::string where;  // the master (quorum mode, a Cluster), else empty
  std::string check;
  Verdict verdict;
  std::string text;  // what was found and why it matters for a lock
  std::string fix;   // what to do (empty for ok and skip)
  std::string json;  // more fields for --json (",\"name\":value…"), or empty
};

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return "ok";
    case Verdict::Warn:
      return "warn";
    case Verdict::Fail:
      return "fail";
    case Verdict::Skip:
      return "skip";
  }
  return "?";
}

// One command, its reply or failure as it came (an error reply is not thrown).
Result ask(Client& c, Args args, const std::string& node = {}) {
  CallOptions opt;
  opt.node = node;
  return settle<Result>(c.loop(), [&](std::function<void(Result)> done) {
    c.command(std::move(args), std::move(done), std::move(opt));
  });
}

using Fields = std::map<std::string, std::string>;

// INFO's (and CLUSTER INFO's) "name:value" lines, "#" headers skipped; at most
// kMaxInfoFields of them, so that a hostile server's reply stays bounded.
Fields parse_fields(const std::string& s) {
  Fields f;
  size_t at = 0;
  while (at < s.size() && f.size() < kMaxInfoFields) {
    size_t end = s.find('\n', at);
    if (end == std::string::npos) end = s.size();
    std::string line = s.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (!line.empty() && line[0] != '#' && colon != std::string::npos)
      f[line.substr(0, colon)] = line.substr(colon + 1);
    at = end + 1;
  }
  return f;
}

// Runs one check on one server, adding what it finds.
class Examiner {
 public:
  Examiner(Client& c, std::string node, std::string where, const std::string& prefix,
           std::vector<Finding>& out)
      : c_(c), node_(std::move(node)), where_(std::move(where)), prefix_(prefix), out_(out) {}

  // False when the server cannot be reached at all (the rest is skipped).
  bool run() {
    if (!connect()) return false;
    info_ = read_info();
    version();
    role();
    eviction();
    persistence();
    acl();
    functions();
    clock();
    footprint();
    return true;
  }

  // The server's run_id (INFO server): the same on two URLs means one server.
  std::string run_id() const { return info("run_id").value_or(""); }

 private:
  void add(const char* check, Verdict v, std::string text, std::string fix = {},
           std::string json = {}) {
    out_.push_back(Finding{where_, check, v, std::move(text), std::move(fix), std::move(json)});
  }

  Result ask(Args args) { return rlock::ask(c_, std::move(args), node_); }

  // PING five times: the round trip (the median), every lock pays it per command.
  bool connect() {
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      Result r = ask({"PING"});
      if (r.failure) {
        // Unreachable or not authenticated: the caller's exit status.
        throw *r.failure;
      }
      if (r.reply.is_error()) expect_ok(r, "PING");
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    rtt_ms_ = median;
    if (median > kSlowRoundTripMs)
      add("round-trip", Verdict::Warn,
          fmt::format("{:.1f} ms per command (median of 5 PINGs): every acquisition, renewal and "
                      "release pays it, and a lease must outlast a few of them",
                      median),
          "run rlock near the server, or give --ttl at least 100 times the round trip");
    else
      add("round-trip", Verdict::Ok,
          fmt::format("{:.2f} ms per command (median of 5 PINGs)", median));
    return true;
  }

  // INFO's "name:value" lines (every section); empty when INFO is refused.
  Fields read_info() {
    Result r = ask({"INFO"});
    if (r.failure) throw *r.failure;
    if (r.reply.is_error() || r.reply.type != Reply::Type::String) {
      info_error_ = r.reply.is_error() ? one_line(r.reply.str) : "not text";
      return {};
    }
    return parse_fields(r.reply.str);
  }

  std::optional<std::string> info(const std::string& name) const {
    auto it = info_.find(name);
    if (it == info_.end()) return std::nullopt;
    return it->second;
  }

  void skip_no_info(const char* check) {
    add(check, Verdict::Skip,
        fmt::format("INFO was refused or unreadable ({}): cannot tell",
                    info_error_.empty() ? "no such field" : escape_text(info_error_)));
  }

  void version() {
    auto v = info("redis_version");
    if (!v) return skip_no_info("version");
    int major = 0, minor = 0;
    if (std::sscanf(v->c_str(), "%d.%d", &major, &minor) != 2) {
      add("version", Verdict::Warn,
          fmt::format("the server says its version is '{}', which rlock cannot read",
                      escape_text(cut_display(*v, 40))),
          "make sure it is Redis 6.0 or later (or a server compatible with it)");
      return;
    }
    if (major < 6)
      add("version", Verdict::Fail,
          fmt::format("Redis {}: rlock needs 6.0 or later (fractional BLPOP timeouts while "
                      "waiting, ACLs)",
                      escape_text(*v)),
          "upgrade the server to Redis 6.0 or later");
    else if (major < 7)
      add("version", Verdict::Ok,
          fmt::format("Redis {} (7.0 adds the read-only script calls status and list use, and "
                      "sharded notices in a Cluster)",
                      escape_text(*v)));
    else
      add("version", Verdict::Ok, fmt::format("Redis {}", escape_text(*v)));
  }

  void role() {
    auto role = info("role");
    if (!role) return skip_no_info("role");
    if (*role == "slave") {
      add("role", Verdict::Fail,
          fmt::format("a replica (of {}:{}): it refuses the writes every lock needs",
                      escape_text(info("master_host").value_or("?")),
                      escape_text(info("master_port").value_or("?"))),
          "point rlock at the master, or at the sentinels (redis-sentinel://)");
      return;
    }
    long replicas = std::atol(info("connected_slaves").value_or("0").c_str());
    if (replicas > 0)
      add("role", Verdict::Ok,
          fmt::format("a master with {} replica{}: a failover may lose a grant made just "
                      "before it (man rlock, CHOOSING A TOPOLOGY); "
                      "--sync-replicas N makes each grant wait for N of them",
                      replicas, replicas == 1 ? "" : "s"));
    else
      add("role", Verdict::Ok, "a master without replicas");
  }

  void eviction() {
    auto maxmemory = info("maxmemory");
    auto policy = info("maxmemory_policy");
    if (!maxmemory || !policy) return skip_no_info("eviction");
    long long limit = std::atoll(maxmemory->c_str());
    long long used = std::atoll(info("used_memory").value_or("0").c_str());
    const std::string& p = *policy;
    bool evicts = p != "noeviction";
    if (limit <= 0 && evicts) {
      add("eviction", Verdict::Warn,
          fmt::format("maxmemory-policy {} without a maxmemory: nothing is evicted today, but "
                      "once a limit is set Redis evicts {}",
                      escape_text(p),
                      p.rfind("volatile", 0) == 0 ? "the keys with an expiry first: every lease"
                                                  : "any key, leases included"),
          "CONFIG SET maxmemory-policy noeviction (and in redis.conf)");
    } else if (limit <= 0) {
      add("eviction", Verdict::Ok, "no memory limit (maxmemory 0): nothing is evicted");
    } else if (evicts) {
      add("eviction", Verdict::Fail,
          fmt::format("maxmemory {} with maxmemory-policy {}: when memory runs short Redis "
                      "evicts {}, and a second holder gets in without anyone noticing",
                      limit, escape_text(p),
                      p.rfind("volatile", 0) == 0 ? "the keys with an expiry first: every lease"
                                                  : "any key, leases included"),
          "CONFIG SET maxmemory-policy noeviction (and in redis.conf): a full server then "
          "refuses writes (OOM) instead of dropping held locks");
    } else {
      double share = double(used) / double(limit);
      if (share > kMemoryWarnShare)
        add("eviction", Verdict::Warn,
            fmt::format("noeviction, but {:.0f}% of maxmemory {} is used: a full server "
                        "refuses other clients' writes (OOM), --layout plain and redisson "
                        "locks and superseding jobs; rlock's own grants go on past the limit",
                        share * 100, limit),
            "raise maxmemory, or free memory");
      else
        add("eviction", Verdict::Ok,
            fmt::format("noeviction with maxmemory {} ({:.0f}% used): a full server refuses "
                        "writes instead of dropping held locks",
                        limit, share * 100));
    }
  }

  void persistence() {
    auto aof = info("aof_enabled");
    if (!aof) return skip_no_info("persistence");
    if (*aof != "1") {
      add("persistence", Verdict::Warn,
          "appendonly no: a restart forgets every lock (a second holder gets in while the first "
          "still runs) and restarts every fence counter at 1 (snapshots are minutes old)",
          "CONFIG SET appendonly yes and appendfsync always (and in redis.conf), or keep a "
          "restarted server out of service for longer than the longest TTL");
      return;
    }
    Result r = ask({"CONFIG", "GET", "appendfsync"});
    std::string fsync;
    if (!r.failure && r.reply.type == Reply::Type::Array && r.reply.elements.size() == 2)
      fsync = r.reply.elements[1].text();
    if (fsync == "always")
      add("persistence", Verdict::Ok,
          "appendonly yes, appendfsync always: a restart keeps "
          "every lock and fence");
    else if (fsync == "everysec")
      add("persistence", Verdict::Ok,
          "appendonly yes, appendfsync everysec: a crash of the machine may lose the last "
          "second's grants (appendfsync always loses none)");
    else if (fsync == "no")
      add("persistence", Verdict::Warn,
          "appendonly yes, appendfsync no: a crash of the machine may lose the last grants and "
          "fences (the kernel writes when it likes)",
          "CONFIG SET appendfsync always (or everysec)");
    else
      add("persistence", Verdict::Ok,
          "appendonly yes (CONFIG GET appendfsync refused: how often it syncs is unknown)");
  }

  // The commands a lock needs, run on scratch keys inside one script (where a
  // refusal is an error the script sees, as rlock's scripts would meet it),
  // then those sent outside a script.
  // Scratch keys whose slot this server serves: in a Cluster each master is
  // probed on its own (ACLs are not shared between nodes); nullopt when this
  // master serves no slot (or CLUSTER SLOTS does not say).
  std::optional<std::string> scratch_base() {
    std::string token = new_token();
    auto base = [&](int n) { return fmt::format("{}{{rlock-doctor:{}:{}}}", prefix_, token, n); };
    if (node_.empty()) return base(0);
    Result r = ask({"CLUSTER", "SLOTS"});
    if (r.failure) throw *r.failure;
    std::vector<std::pair<long long, long long>> mine;
    if (r.reply.type == Reply::Type::Array)
      for (const Reply& range : r.reply.elements) {
        if (range.type != Reply::Type::Array || range.elements.size() < 3) continue;
        const Reply& master = range.elements[2];
        if (master.type != Reply::Type::Array || master.elements.size() < 2) continue;
        if (fmt::format("{}:{}", master.elements[0].text(), master.elements[1].text()) == node_)
          mine.emplace_back(range.elements[0].integer, range.elements[1].integer);
      }
    if (mine.empty()) return std::nullopt;
    for (int n = 0; n < 100000; ++n) {
      int slot = key_slot(base(n));
      for (auto [lo, hi] : mine)
        if (slot >= lo && slot <= hi) return base(n);
    }
    return std::nullopt;
  }

  void acl() {
    auto scratch = scratch_base();
    if (!scratch) {
      add("acl", Verdict::Skip, "this master serves no slot (CLUSTER SLOTS): nothing to try here");
      return;
    }
    const std::string& base = *scratch;
    Args eval = {
        "EVAL",     std::string(kAclProbe), "4", base, base + ":h", base + ":z", base + ":t",
        base + ":c"};
    Result r = ask(eval);
    if (r.failure) throw *r.failure;
    std::vector<std::string> missing, history;
    if (r.reply.is_error()) {
      if (r.reply.str.rfind("NOPERM", 0) != 0) {
        add("acl", Verdict::Fail,
            fmt::format("the ACL probe script failed: {}", escape_text(one_line(r.reply.str))),
            "see the server's log: rlock's scripts would fail the same way");
        return;
      }
      missing.push_back(r.reply.str.find("key") != std::string::npos ? "~" : "EVAL");
    } else if (r.reply.type == Reply::Type::Array) {
      bool hist = false;
      for (const Reply& e : r.reply.elements) {
        if (e.type != Reply::Type::String && e.type != Reply::Type::Status) continue;
        if (e.str == "|")
          hist = true;
        else
          (hist ? history : missing).push_back(cut_display(e.str, 40));
      }
    }
    // Outside a script: the script calls themselves, waiting in line, listing.
    const std::vector<std::pair<const char*, Args>> outside = {
        {"EVALSHA", {"EVALSHA", std::string(40, '0'), "1", base}},
        {"BLPOP", {"BLPOP", base + ":t", "0.01"}},
        {"SCAN", {"SCAN", "0", "MATCH", base + "*", "COUNT", "1"}},
    };
    for (const auto& [name, args] : outside) {
      Result x = ask(args);
      if (x.failure) throw *x.failure;
      if (!x.reply.is_error() || x.reply.str.rfind("NOPERM", 0) != 0) continue;
      std::string what = x.reply.str.find("key") != std::string::npos ? "~" : name;
      if (std::find(missing.begin(), missing.end(), what) == missing.end()) missing.push_back(what);
    }
    // Commands first, then the patterns.
    std::stable_partition(missing.begin(), missing.end(),
                          [](const std::string& m) { return m != "~" && m != "&"; });
    std::string who = user_name();
    std::string prefix = escape_text(prefix_);
    auto grant = [&](const std::vector<std::string>& cmds) {
      std::string out = "ACL SETUSER " + escape_text(who);
      for (const std::string& m : cmds)
        if (m != "~" && m != "&") out += " +" + lower(m);
      return out + fmt::format(" ~{}* &{}*", prefix, prefix);
    };
    auto words = [&](const std::vector<std::string>& items) {
      std::vector<std::string> w;
      for (const std::string& m : items)
        w.push_back(m == "~"   ? fmt::format("the keys under '{}'", prefix)
                    : m == "&" ? fmt::format("the channels under '{}'", prefix)
                               : m);
      return join(w, ", ");
    };
    if (!missing.empty())
      add("acl", Verdict::Fail,
          fmt::format("this user may not use {}: taking a lock fails with exit 77", words(missing)),
          grant(missing));
    else
      add("acl", Verdict::Ok,
          fmt::format("this user may run every command a lock needs on keys and channels under "
                      "'{}' (tried on scratch keys)",
                      escape_text(prefix_)));
    if (!history.empty())
      add("acl-history", Verdict::Warn,
          fmt::format("this user may not use {}: locks work, but their history stays empty",
                      words(history)),
          grant(history));
  }

  // With RLOCK_FUNCTIONS=on: whether the scripts will go by FCALL here. The read-only
  // status function is called on scratch keys, as a lock's first call would, and where
  // it is not found the library is loaded as that call would load it.
  void functions() {
    if (!functions_used()) return;
    auto scratch = scratch_base();
    if (!scratch) return;
    const std::string& b = *scratch;
    const Script& s = status_script();
    std::string lib(functions_library().substr(0, functions_library().find('\n')));
    lib = lib.substr(lib.find('=') + 1);
    auto call = [&](const char* verb) {
      return ask({verb, s.function, "6", b, b + ":fence", b + ":holders", b + ":limit",
                  b + ":queue", b + ":qseq", "1", "0"});
    };
    auto refused = [](const Result& r, const char* what) {
      return r.reply.is_error() && r.reply.str.rfind("NOPERM", 0) == 0 &&
             r.reply.str.find(what) != std::string::npos;
    };
    Result r = call("FCALL_RO");
    if (r.failure) throw *r.failure;
    if (r.reply.is_error() && r.reply.str.rfind("ERR unknown command", 0) == 0) {
      add("functions", Verdict::Skip, "no Redis 7 Functions here: the scripts go by EVALSHA");
      return;
    }
    bool ro = !refused(r, "'fcall_ro'");
    if (!ro) r = call("FCALL");
    if (r.failure) throw *r.failure;
    std::string who = escape_text(user_name());
    if (refused(r, "'fcall'")) {
      add("functions", Verdict::Warn,
          "this user may not call FCALL: with RLOCK_FUNCTIONS=on the scripts go by EVALSHA",
          fmt::format("ACL SETUSER {} +fcall +fcall_ro", who));
      return;
    }
    bool loaded = false;
    std::string load_said;
    if (r.reply.is_error() && r.reply.str.rfind("ERR Function not found", 0) == 0) {
      Result l = ask({"FUNCTION", "LOAD", std::string(functions_library())});
      if (l.failure) throw *l.failure;
      loaded = !l.reply.is_error();
      if (l.reply.is_error()) load_said = one_line(l.reply.str);
      r = call(ro ? "FCALL_RO" : "FCALL");
      if (r.failure) throw *r.failure;
    }
    if (r.reply.is_error() && r.reply.str.rfind("ERR Function not found", 0) == 0) {
      add("functions", Verdict::Warn,
          fmt::format("rlock's Functions library {} is not here and this user may not load it "
                      "({}): with RLOCK_FUNCTIONS=on the scripts go by EVALSHA",
                      escape_text(lib), escape_text(cut_display(load_said, 80))),
          "load it as a trusted user who may (function|load): RLOCK_FUNCTIONS=on rlock -u URL "
          "doctor");
      return;
    }
    if (r.reply.is_error()) {
      add("functions", Verdict::Fail,
          fmt::format("rlock's status function failed: {}", escape_text(one_line(r.reply.str))),
          "see the server's log: rlock's scripts would fail the same way");
      return;
    }
    add("functions", ro ? Verdict::Ok : Verdict::Warn,
        fmt::format("rlock's Functions library {} {}: the scripts go by FCALL{}", escape_text(lib),
                    loaded ? "was loaded now" : "is loaded",
                    ro ? "" : ", the read-only ones too (FCALL_RO is refused)"),
        ro ? "" : fmt::format("ACL SETUSER {} +fcall_ro", who));
  }

  std::string user_name() {
    Result r = ask({"ACL", "WHOAMI"});
    if (!r.failure && (r.reply.type == Reply::Type::String || r.reply.type == Reply::Type::Status))
      return cut_display(r.reply.str, 64);
    return "USER";
  }

  // The server's clock against this host's, at the middle of the round trip:
  // --done-for and history times come from the server, what people compare
  // them with from here.
  void clock() {
    auto before = std::chrono::system_clock::now();
    Result r = ask({"TIME"});
    auto after = std::chrono::system_clock::now();
    if (r.failure) throw *r.failure;
    if (r.reply.type != Reply::Type::Array || r.reply.elements.size() != 2) {
      add("clock", Verdict::Skip, "TIME was refused or unreadable: cannot tell");
      return;
    }
    long long sec = std::atoll(r.reply.elements[0].text().c_str());
    long long usec = std::atoll(r.reply.elements[1].text().c_str());
    double server_ms = double(sec) * 1000.0 + double(usec) / 1000.0;
    auto mid = before + (after - before) / 2;
    double here_ms = std::chrono::duration<double, std::milli>(mid.time_since_epoch()).count();
    double skew = server_ms - here_ms;
    if (std::fabs(skew) > kClockWarnMs)
      add("clock", Verdict::Warn,
          fmt::format("the server's clock is {:.1f} s {} this host's: leases are timed by the "
                      "server alone and stay right, but times shown here (--done-for, history, "
                      "status) are off by that much",
                      std::fabs(skew) / 1000.0, skew > 0 ? "ahead of" : "behind"),
          "run NTP (chrony, systemd-timesyncd) on both machines");
    else
      add("clock", Verdict::Ok,
          fmt::format("the server's clock is within {:.0f} ms of this host's",
                      std::fabs(skew) + 0.5));
  }

  // rlock's keys under the prefix: what they cost the server, and whether
  // the counters kept without an expiry pile up (doctor_footprint.h).
  void footprint() {
    Footprint f;
    try {
      f = measure_footprint(c_, node_, prefix_);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Unavailable) throw;
      add("footprint", Verdict::Skip, fmt::format("SCAN was refused ({}): cannot tell", e.what()));
      return;
    }
    std::string scope = f.complete ? "" : fmt::format(" in the first {} keys read", f.keys);
    std::string memory =
        !f.bytes      ? "its memory unknown (MEMORY USAGE refused)"
        : f.keys == 0 ? "no memory"
                      : fmt::format("about {} (MEMORY USAGE of {} sampled key{}, extrapolated)",
                                    format_bytes(*f.bytes), f.sampled, f.sampled == 1 ? "" : "s");
    std::string text = fmt::format(
        "{} held lock{}, {} history stream{}, {} fence counter{} ({} of idle keys), {} key{} "
        "in all under '{}'{}: {}",
        f.locks, f.locks == 1 ? "" : "s", f.histories, f.histories == 1 ? "" : "s", f.fences,
        f.fences == 1 ? "" : "s", f.idle_fences, f.keys, f.keys == 1 ? "" : "s",
        escape_text(prefix_), scope, memory);
    std::string json = fmt::format(
        ",\"footprint\":{{\"keys\":{},\"locks\":{},\"histories\":{},\"fences\":{},"
        "\"idle_fences\":{},\"complete\":{},\"sampled\":{}{}}}",
        f.keys, f.locks, f.histories, f.fences, f.idle_fences, f.complete ? "true" : "false",
        f.sampled, f.bytes ? fmt::format(",\"bytes\":{}", *f.bytes) : "");
    if (f.idle_fences > kIdleFencesWarn)
      add("footprint", Verdict::Warn,
          text +
              fmt::format(". Over {} fence counters of keys with no lock, line or history left "
                          "(unused for a week, or used with --history 0): rlock keeps a counter "
                          "without expiry so that fences never go back, and KEY names that never "
                          "repeat (a job id in the KEY) leave one each",
                          kIdleFencesWarn),
          "name locks after what they protect, not after each job; rlock forget KEY removes "
          "a key no longer used (its fences start again at 1)",
          json);
    else
      add("footprint", Verdict::Ok, text, {}, json);
  }

  static std::string one_line(const std::string& s) {
    std::string out = s.substr(0, s.find_first_of("\r\n"));
    return cut_display(out, 200);
  }
  static std::string cut_display(const std::string& s, size_t n) {
    return s.size() <= n ? s : s.substr(0, n) + "…";
  }
  static std::string lower(std::string s) {
    for (char& ch : s) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }
  static std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
    return out;
  }

  Client& c_;
  std::string node_, where_;
  const std::string& prefix_;
  std::vector<Finding>& out_;
  Fields info_;
  std::string info_error_;
  double rtt_ms_ = 0;
};

// CLUSTER INFO's fields, or nothing where the server is no Cluster node.
Fields cluster_info(Client& c) {
  Result r = ask(c, {"CLUSTER", "INFO"});
  if (r.failure || r.reply.type != Reply::Type::String) return {};
  return parse_fields(r.reply.str);
}

// A Cluster as a whole (as the URL's node sees it): every slot served, state ok.
void check_cluster(Client& c, const std::string& where, std::vector<Finding>& found) {
  Fields f = cluster_info(c);
  if (f.empty()) return;
  auto num = [&](const char* name) { return std::atol(f[name].c_str()); };
  long served = num("cluster_slots_ok");
  long assigned = num("cluster_slots_assigned");
  const std::string& state = f["cluster_state"];
  if (state == "ok" && served == 16384)
    found.push_back(Finding{where, "cluster", Verdict::Ok,
                            fmt::format("state ok, all 16384 slots served, {} masters",
                                        escape_text(f["cluster_size"]))});
  else
    found.push_back(Finding{
        where, "cluster", Verdict::Fail,
        fmt::format("state {}: {} of 16384 slots assigned, {} served: a lock whose key hashes "
                    "to a slot nobody serves cannot be taken or released (69)",
                    escape_text(state), assigned, served),
        "assign every slot to a master that answers (redis-cli --cluster fix), or bring the "
        "failed masters back"});
}

// Each sentinel of a redis-sentinel:// URL: reachable, and able to agree on a
// failover (SENTINEL CKQUORUM: enough sentinels to authorise one and to reach
// their quorum). A Sentinel that cannot fail over leaves the locks with the
// master until it comes back; one that cannot be reached is not asked.
void check_sentinels(Loop& loop, const ConnectionConfig& cfg, std::vector<Finding>& found) {
  const SentinelConfig& sc = *cfg.sentinel;
  for (const Endpoint& ep : sc.sentinels) {
    ConnectionConfig c = cfg;
    c.endpoint = ep;
    c.password_source = sc.password_source;
    c.server_kind = "sentinel";
    c.sentinel.reset();
    auto tls = c.endpoint.tls ? make_tls_context(c.tls) : nullptr;
    Connection conn(loop, c, tls,
                    std::make_shared<AddressBook>(loop, c.endpoint, c.connect_timeout));
    Result r = settle<Result>(loop, [&](std::function<void(Result)> done) {
      conn.command({"SENTINEL", "CKQUORUM", sc.master_name}, std::move(done));
    });
    std::string where = "sentinel " + ep.address();
    if (r.failure) {
      // The others may still agree on a failover (their own answers say).
      found.push_back(Finding{where, "sentinel", Verdict::Warn, r.failure->what(),
                              "bring it back, or take it out of the URL"});
    } else if (r.reply.is_error()) {
      found.push_back(Finding{
          where, "sentinel", Verdict::Fail,
          fmt::format("{}: no failover can be agreed on, so a failed master keeps its locks "
                      "(and every lock waits) until it comes back",
                      escape_text(r.reply.str.substr(0, 300))),
          "start enough sentinels for the quorum (and a majority of them)"});
    } else {
      found.push_back(
          Finding{where, "sentinel", Verdict::Ok, escape_text(r.reply.text().substr(0, 300))});
    }
  }
}

// Every server failed to answer: the first one's error is the exit status (69).
[[noreturn]] void throw_unavailable_all(const std::vector<Finding>& found) {
  throw Error(ErrorKind::Unavailable,
              fmt::format("no server answered: {}", found.empty() ? "" : found.front().text));
}

std::string finding_json(const Finding& f) {
  std::string out = "{";
  if (!f.where.empty()) out += "\"server\":" + json_string(f.where) + ",";
  out += "\"check\":" + json_string(f.check) +
         ",\"status\":" + json_string(verdict_name(f.verdict)) +
         ",\"message\":" + json_string(f.text);
  if (!f.fix.empty()) out += ",\"fix\":" + json_string(f.fix);
  return out + f.json + "}";
}

// Quorum mode: masters that are one server under two names (two ports of
// one host forwarded, a name and its address) make a majority of one
// server. Told apart by the run_id each server makes at start.
void check_distinct_masters(const std::vector<std::pair<std::string, std::string>>& run_ids,
                            size_t masters, std::vector<Finding>& out) {
  std::map<std::string, std::string> first;  // run_id -> the first master that has it
  size_t known = 0;
  for (const auto& [where, id] : run_ids) {
    if (id.empty()) continue;
    ++known;
    auto [it, fresh] = first.emplace(id, where);
    if (!fresh)
      out.push_back(Finding{
          "", "masters", Verdict::Fail,
          fmt::format("{} and {} are one server (run_id {}): a majority counted there is not a "
                      "majority of independent servers",
                      it->second, where, escape_text(truncate_text(id, 40))),
          "give each --url its own server (Redlock needs independent masters)"});
  }
  if (known < masters)
    out.push_back(Finding{"", "masters", Verdict::Skip,
                          fmt::format("{} of {} masters told their run_id: cannot tell whether "
                                      "some are one server",
                                      known, masters)});
  else if (first.size() == masters)
    out.push_back(Finding{"", "masters", Verdict::Ok,
                          fmt::format("{} masters, {} distinct servers", masters, masters)});
}

std::string finding_text(const Finding& f) {
  std::string out = fmt::format("{:<5} {}", verdict_name(f.verdict), f.check);
  if (!f.where.empty()) out += " (" + f.where + ")";
  out += ": " + f.text;
  if (!f.fix.empty()) out += "\n      fix: " + f.fix;
  return out;
}

}  // namespace

int cmd_doctor(const GlobalOptions& g) {
  Session s(g);
  std::vector<Finding> found;
  size_t unreachable = 0;
  std::vector<std::pair<std::string, std::string>> run_ids;  // quorum mode: master, run_id
  std::vector<std::string> urls = effective_urls(g);
  for (size_t i = 0; i < s.clients.size(); ++i) {
    Client& c = *s.clients[i];
    std::string where = s.quorum() ? c.name() : std::string();
    if (i < urls.size() && is_sentinel_url(urls[i])) {
      ConnectionConfig cfg = connection_config(g, urls[i]);
      if (cfg.sentinel) check_sentinels(s.loop, cfg, found);
    }
    // One master of several that cannot be reached is a finding; the only
    // server, or a password refused, is the command's exit status.
    auto unreachable_master = [&](const Error& e, const std::string& label, bool several) {
      if (e.kind() != ErrorKind::Unavailable || !several) throw e;
      found.push_back(Finding{label, "reach", Verdict::Fail, e.what(),
                              "bring it back: a lock needs a majority of the masters"});
      ++unreachable;
    };
    // A Cluster: every master's own checks (one server and Sentinel: the master).
    std::vector<std::string> nodes = {std::string()};
    auto masters = settle<Outcome<std::vector<std::string>>>(
        s.loop, [&](Done<std::vector<std::string>> d) { c.masters(std::move(d)); });
    if (masters.error) {
      unreachable_master(*masters.error, where, s.quorum());
      continue;
    }
    if (masters.value.size() > 1) nodes = masters.value;
    check_cluster(c, where, found);
    for (const std::string& node : nodes) {
      std::string label = nodes.size() > 1 ? node : where;
      try {
        Examiner x(c, nodes.size() > 1 ? node : std::string(), label, g.prefix, found);
        x.run();
        if (s.quorum() && nodes.size() == 1) run_ids.emplace_back(where, x.run_id());
      } catch (const Error& e) {
        unreachable_master(e, label, s.quorum() || nodes.size() > 1);
      }
    }
  }
  if (s.quorum()) check_distinct_masters(run_ids, s.clients.size(), found);
  if (unreachable > 0 && unreachable == found.size()) throw_unavailable_all(found);
  int bad = 0;
  for (const Finding& f : found)
    if (f.verdict == Verdict::Warn || f.verdict == Verdict::Fail) ++bad;
  std::string out;
  if (g.json) {
    out = "[";
    for (size_t i = 0; i < found.size(); ++i) out += (i ? "," : "") + finding_json(found[i]);
    out += "]\n";
  } else {
    for (const Finding& f : found) out += finding_text(f) + "\n";
    out += bad ? fmt::format("{} check{} need{} attention\n", bad, bad == 1 ? "" : "s",
                             bad == 1 ? "s" : "")
               : "every check passed\n";
  }
  print_out(out);
  return bad ? exitcode::kFree : exitcode::kOk;
}

}  // namespace rlock
