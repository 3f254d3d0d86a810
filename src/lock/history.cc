#include "lock/history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "core/duration.h"
#include "core/json.h"
#include "core/text.h"

namespace rlock {

namespace {

constexpr size_t kMaxField = 1024;
constexpr size_t kMaxFields = 32;

int64_t id_ms(const std::string& id) {
  auto dash = id.find('-');
  std::string ms = id.substr(0, dash);
  if (ms.empty() || ms.size() > 15 || ms.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::strtoll(ms.c_str(), nullptr, 10);
}

Event from_fields(const std::string& id, const std::vector<Reply>& kv, size_t from) {
  Event e;
  e.id = truncate_text(id, 64);
  e.ms = id_ms(e.id);
  for (size_t i = from; i + 1 < kv.size() && e.fields.size() < kMaxFields; i += 2) {
    std::string k = truncate_text(kv[i].text(), kMaxField);
    std::string v = truncate_text(kv[i + 1].text(), kMaxField);
    if (k == "ev")
      e.ev = v;
    else
      e.fields.emplace_back(std::move(k), std::move(v));
  }
  return e;
}

// A duration stored in ms, for people ("5m2s"); "" when it is not a number.
std::string ms_text(const std::string& v) {
  if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
    return "";
  return format_duration(Millis(std::strtoll(v.c_str(), nullptr, 10)));
}

bool is_ending(const std::string& ev) {
  return ev == "released" || ev == "kept" || ev == "done" || ev == "expired" || ev == "lost" ||
         ev == "broken";
}

void set_field(Event& e, const std::string& name, const std::string& value) {
  for (auto& [k, v] : e.fields)
    if (k == name) {
      v = value;
      return;
    }
  e.fields.emplace_back(name, value);
}

// Quorum mode: one tenure has one ending. When masters disagree (one missed
// the release and later saw the lease expire), the ending most masters
// recorded stands, and says what the others saw; the acquisition shows the
// fence its holder used (the ending's: the committed one, above each
// master's own counter).
void settle_endings(std::vector<Event>& out) {
  std::map<std::string, std::vector<size_t>> endings;  // tok -> indexes
  for (size_t i = 0; i < out.size(); ++i)
    if (is_ending(out[i].ev) && !out[i].get("tok").empty()) endings[out[i].get("tok")].push_back(i);
  std::vector<bool> drop(out.size(), false);
  for (auto& [tok, idx] : endings) {
    size_t best = idx.front();
    for (size_t i : idx)
      if (out[i].masters > out[best].masters) best = i;
    std::string also;
    for (size_t i : idx) {
      if (i == best) continue;
      also += fmt::format("{}{} on {}", also.empty() ? "" : ", ", out[i].ev, out[i].masters);
      drop[i] = true;
    }
    if (!also.empty()) set_field(out[best], "also", also);
    std::string fence = out[best].get("fence");
    for (auto& e : out)
      if (e.ev == "acquired" && e.get("tok") == tok && !fence.empty()) set_field(e, "fence", fence);
  }
  std::vector<Event> kept;
  for (size_t i = 0; i < out.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(out[i]));
  out = std::move(kept);
}

}  // namespace

std::string Event::get(const std::string& name) const {
  for (auto& [k, v] : fields)
    if (k == name) return v;
  return "";
}

Event parse_flat_event(const Reply& flat) {
  if (flat.type != Reply::Type::Array || flat.elements.empty()) return {};
  return from_fields(flat.elements[0].text(), flat.elements, 1);
}

std::vector<Event> merge_events(const std::vector<std::vector<Event>>& per_master, int of,
                                size_t window) {
  std::vector<Event> out;
  std::vector<std::vector<bool>> from;  // for each event of out: which masters had it
  std::map<std::pair<std::string, std::string>, size_t> seen;  // (ev, tok) -> index in out
  std::vector<std::pair<const Event*, size_t>> all;            // an event, its master
  for (size_t m = 0; m < per_master.size(); ++m)
    for (auto& e : per_master[m]) all.emplace_back(&e, m);
  std::stable_sort(all.begin(), all.end(),
                   [](auto& a, auto& b) { return a.first->ms < b.first->ms; });
  for (auto [e, m] : all) {
    auto key = std::make_pair(e->ev, e->get("tok"));
    auto it = seen.find(key);
    if (it != seen.end() && !key.second.empty()) {
      Event& first = out[it->second];
      from[it->second][m] = true;
      ++first.masters;
      // Each master keeps its own counter: the highest fence is the one used.
      std::string f = e->get("fence"), g = first.get("fence");
      if (f.size() > g.size() || (f.size() == g.size() && f > g))
        for (auto& [k, v] : first.fields)
          if (k == "fence") v = f;
      continue;
    }
    seen[key] = out.size();
    out.push_back(*e);
    out.back().masters = 1;
    out.back().of = of;
    from.emplace_back(per_master.size(), false);
    from.back()[m] = true;
  }
  // Each master that answered a whole window sees back to its oldest event only.
  std::vector<std::optional<int64_t>> horizon(per_master.size());
  for (size_t m = 0; m < per_master.size(); ++m)
    if (window > 0 && per_master[m].size() >= window)
      for (auto& e : per_master[m])
        if (!horizon[m] || e.ms < *horizon[m]) horizon[m] = e.ms;
  std::vector<Event> known;
  for (size_t i = 0; i < out.size(); ++i) {
    bool unseen = false;
    for (size_t m = 0; m < per_master.size() && !unseen; ++m)
      unseen = horizon[m] && !from[i][m] && out[i].ms < *horizon[m];
    if (!unseen) known.push_back(std::move(out[i]));
  }
  settle_endings(known);
  return known;
}

std::string event_line(const Event& e) {
  auto f = [&](const char* n) { return escape_text(e.get(n)); };
  std::vector<std::string> parts;
  if (!e.get("fence").empty()) parts.push_back("fence " + f("fence"));
  if (!e.get("who").empty()) parts.push_back(f("who"));
  const std::string& ev = e.ev;
  if (ev == "acquired") {
    if (e.get("mode") == "shared") parts.push_back("shared");
    if (!e.get("slot").empty() && e.get("slot") != "0") parts.push_back("slot " + f("slot"));
    std::string waited = ms_text(e.get("waited"));
    if (!waited.empty() && waited != "0ms") parts.push_back("waited " + waited);
    if (!e.get("cmd").empty()) parts.push_back("[" + truncate_columns(f("cmd"), 60) + "]");
  } else if (ev == "released" || ev == "kept" || ev == "done") {
    std::string held = ms_text(e.get("held"));
    if (!held.empty()) parts.push_back("held " + held);
    if (!e.get("exit").empty()) parts.push_back("exit " + f("exit"));
    if (!e.get("until").empty() && id_ms(e.get("until")) > 0)
      parts.push_back("taken until " + utc_when(id_ms(e.get("until"))) +
                      (ev == "done" ? " (--done-for)" : " (--min-hold)"));
    if (!e.get("why").empty()) parts.push_back(f("why"));
  } else if (ev == "expired") {
    parts.push_back("its lease ran out without a release");
  } else if (ev == "lost") {
    parts.push_back("its holder lost it: " + f("why"));
  } else if (ev == "broken") {
    parts.push_back("broken by " + f("by"));
    if (!e.get("reason").empty()) parts.push_back("reason: " + f("reason"));
  } else if (ev == "superseded") {
    parts.push_back("the waiter " + truncate_columns(f("tok"), 13) + " was superseded by " +
                    f("by"));
  } else if (ev == "cancelled") {
    parts.push_back("asked to stop by " + f("by") + " (--cancel-in-progress)");
  } else if (ev == "gave-up") {
    std::string waited = ms_text(e.get("waited"));
    if (!waited.empty()) parts.push_back("after waiting " + waited);
  } else {
    for (auto& [k, v] : e.fields)
      if (k != "tok") parts.push_back(escape_text(k) + " " + escape_text(v));
  }
  // Quorum mode: what a minority of masters recorded instead (settle_endings).
  if (!e.get("also").empty()) parts.push_back("also: " + f("also"));
  std::string line = fmt::format("{}  {:<10}  ", utc_when(e.ms), escape_text(ev));
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : "") + parts[i];
  if (e.of > 0) {
    line += fmt::format(" (on {} of {} masters", e.masters, e.of);
    if (ev == "acquired" && e.masters < e.of / 2 + 1) line += ": no majority, given back";
    line += ")";
  }
  return line;
}

namespace {

// How each field an event may carry is typed in JSON (the man page, JSON
// OUTPUT): numbers as numbers, `nested` as true, `who` also split into host
// and pid (or a label). Any other field, and a value that is not of its type
// (anybody can write the stream), goes under "other", as a string.
enum class FieldType { Text, Number, Flag };

std::optional<FieldType> field_type(const std::string& k) {
  static const std::map<std::string, FieldType> kTypes{
      {"tok", FieldType::Text},     {"fence", FieldType::Number}, {"who", FieldType::Text},
      {"mode", FieldType::Text},    {"slot", FieldType::Number},  {"waited", FieldType::Number},
      {"cmd", FieldType::Text},     {"held", FieldType::Number},  {"exit", FieldType::Number},
      {"until", FieldType::Number}, {"why", FieldType::Text},     {"by", FieldType::Text},
      {"nested", FieldType::Flag},  {"also", FieldType::Text},    {"reason", FieldType::Text}};
  auto it = kTypes.find(k);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// "HOST pid PID", as the scripts record a holder without a label: its host
// and pid; else (a label) nothing.
std::optional<std::pair<std::string, int64_t>> host_pid(const std::string& who) {
  auto at = who.rfind(" pid ");
  if (at == std::string::npos || at == 0) return std::nullopt;
  std::string host = who.substr(0, at);
  auto pid = parse_int64(std::string_view(who).substr(at + 5));
  if (!pid || *pid <= 0 || host.find(' ') != std::string::npos) return std::nullopt;
  return std::make_pair(host, *pid);
}

}  // namespace

std::string event_json(const Event& e) {
  JsonObject o, other;
  o.str("id", e.id).str("time", utc_iso(e.ms)).num("time_ms", e.ms).str("event", e.ev);
  std::set<std::string> seen{"id", "time",  "time_ms", "event", "masters",
                             "of", "other", "host",    "pid",   "label"};
  std::set<std::string> other_seen;
  for (auto& [k, v] : e.fields) {
    auto type = field_type(k);
    if (type && seen.insert(k).second) {
      if (v.empty()) continue;  // not known (an exit status, a command)
      if (*type == FieldType::Text) {
        o.str(k, v);
        if (k == "who") {
          if (auto hp = host_pid(v))
            o.str("host", hp->first).num("pid", hp->second);
          else
            o.str("label", v);
        }
        continue;
      }
      auto n = parse_int64(v);
      if (*type == FieldType::Number && n) {
        if (k != "slot" || *n > 0) o.num(k, *n);  // slot 0: none
        continue;
      }
      // A named pool's slot is its name (--limit db-a,db-b).
      if (k == "slot" && !n && is_printable_text(v)) {
        o.str("slot_name", v);
        continue;
      }
      if (*type == FieldType::Flag && v == "1") {
        o.boolean(k, true);
        continue;
      }
    }
    if (other_seen.insert(k).second) other.str(k, v);
  }
  if (e.of > 0) o.num("masters", e.masters).num("of", e.of);
  if (!other.empty()) o.raw("other", other.text());
  return o.text();
}

}  // namespace rlock
