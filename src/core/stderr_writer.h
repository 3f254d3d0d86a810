// rlock's only way to write to standard error. It never throws and never
// blocks: rlock must go on renewing, releasing and exiting with the right
// status when stderr is a closed pipe, a full disk or a terminal that stopped
// reading (docs/GUIDE.md: "Nothing kills rlock but a signal").
//
// Descriptor 2 is shared with the child, so it stays blocking (no O_NONBLOCK):
// a write is only attempted when poll() says it is writable, in chunks small
// enough (512 bytes, POSIX's smallest PIPE_BUF) that such a write cannot
// block. What cannot be written yet waits in a small buffer that the event
// loop drains (Loop watches descriptor 2 while stderr_pending()); what does
// not fit is dropped and counted, and a line saying how many messages were
// dropped is written once stderr works again.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

namespace rlock {

/// Queues `text` for stderr and writes as much as can be written now.
void stderr_write(std::string_view text);

/// True while queued text waits for stderr to become writable.
bool stderr_pending();

/// Writes what can be written without blocking (the loop calls this when
/// descriptor 2 is writable).
void stderr_pump();

/// Before exit: waits at most `limit` for the queue to drain, then drops it.
void stderr_drain(std::chrono::milliseconds limit);

/// The buffer's capacity in bytes.
inline constexpr size_t kStderrBuffer = 16 * 1024;

}  // namespace rlock
