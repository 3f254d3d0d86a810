// A lock's history (`rlock history`, docs/GUIDE.md "What happened: the
// history"): the events the scripts record in PREFIX{KEY}:log, a capped Redis
// stream, in the same call that changes the state: acquired, released, kept (--min-hold), done
// (--done-for), expired (without a release, noticed by the next script),
// lost (its holder said why), broken, superseded, cancelled (asked to stop by
// --cancel-in-progress), gave-up.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "net/reply.h"

namespace rlock {

/// One event: the stream entry's id (its first part is the server's time in
/// Unix ms), its name and the fields that came with it, as stored.
struct Event {
  std::string id;
  int64_t ms = 0;
  std::string ev;
  std::vector<std::pair<std::string, std::string>> fields;
  /// Quorum mode: on how many masters of how many (0: one deployment).
  int masters = 0, of = 0;

  /// A field's value, or "" when it is not there.
  std::string get(const std::string& name) const;
};

/// One event from the flat form {id, f, v, ...} that the status and history
/// scripts answer: every field cut to 1 KiB, at most 32 kept (the stream is
/// anybody's to write); ms = 0 when the id is not one.
Event parse_flat_event(const Reply& flat);

/// The newest events a status carries, each master's in quorum mode (the
/// status script's `XREVRANGE ... COUNT 3`, docs/PROTOCOL.md).
inline constexpr size_t kStatusEvents = 3;

/// Events of several masters (quorum mode), each master's oldest first, merged
/// into one list, oldest first: the same event (name and token) of several
/// masters is one, at its earliest time, saying on how many masters it was
/// (`of`: the number of masters).
/// `window`: each master answered its newest `window` events at most (0: its
/// whole log). A master that answered that many may hold older ones it did not
/// say, so an event older than its oldest and not among its events is left
/// out: on how many masters it is cannot be told (a master that was down
/// missed the newest events, and its answer reaches further back).
std::vector<Event> merge_events(const std::vector<std::vector<Event>>& per_master, int of,
                                size_t window = 0);

/// "2026-11-27 14:03:22Z  released  fence 7, ci-4 pid 22836, held 5m2s, exit 0":
/// one line for people, UTC, text from Redis escaped.
std::string event_line(const Event& e);
/// The same as a JSON object.
std::string event_json(const Event& e);

}  // namespace rlock
