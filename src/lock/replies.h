// The lock scripts' replies parsed into records (lock/records.h). Every
// parser checks the reply's shape and size and throws a protocol Error for
// anything else: a reply is as hostile as any other input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lock/records.h"
#include "net/reply.h"

namespace rlock {

/// A number in a script's reply: an integer, or a string of digits (0 for
/// anything else).
int64_t reply_int(const Reply& r);

/// The acquire script's reply (acquire.lua) for a lock of `limit` holders
/// (0: exclusive), `shared` or not, named `key` in messages; `pool`: a named
/// pool's names, comma-separated ("": a count).
AcquireReply parse_acquire(const Reply& r, int limit, bool shared, const std::string& key,
                           const std::string& pool = {});

/// The release script's reply (release.lua).
ReleaseReply parse_release(const Reply& r);

/// The `status` script's reply (Protocol Error for a reply of another shape).
LockStatus parse_status_reply(const Reply& r);

/// What the `list` script returns for each lock (list.lua): a line's worth
/// (the limit, the counts and what a line shows of the first holder), or
/// status's every record (`list --json`).
enum class ListReply { Line, Full };

/// The `list` script's reply for `n` locks, in their order, each with the
/// server time; a free lock has no holders. A Full reply may cover only the
/// first of them (at least one: the caller asks again for the rest). Protocol
/// Error for a reply of another shape.
std::vector<LockStatus> parse_list_reply(const Reply& r, size_t n, ListReply kind);

}  // namespace rlock
