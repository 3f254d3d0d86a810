// What a holder does to its command when the lease is lost (--on-lost; the
// man page's "LOST LOCKS"): signal it with SIGTERM, then SIGKILL after a
// grace; SIGKILL at once; or only warn.
#pragma once

namespace rlock {

enum class OnLost { Term, Kill, Warn };

}  // namespace rlock
