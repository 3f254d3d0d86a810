#include "core/error.h"

namespace rlock {

int default_status(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage:
      return exitcode::kUsage;
    case ErrorKind::Unavailable:
      return exitcode::kUnavailable;
    case ErrorKind::Protocol:
      return exitcode::kProtocol;
    case ErrorKind::NotAcquired:
      return exitcode::kNotAcquired;
    case ErrorKind::Lost:
      return exitcode::kLost;
    case ErrorKind::Permission:
      return exitcode::kPermission;
    case ErrorKind::Exec:
      return exitcode::kCannotExec;
  }
  return exitcode::kProtocol;
}

Error::Error(ErrorKind kind, const std::string& message, int status, Cause cause)
    : std::runtime_error(message),
      kind_(kind),
      status_(status < 0 ? default_status(kind) : status),
      cause_(cause) {}

void throw_usage(const std::string& m) {
  throw Error(ErrorKind::Usage, m);
}
void throw_unavailable(const std::string& m, Cause cause) {
  throw Error(ErrorKind::Unavailable, m, -1, cause);
}
void throw_protocol(const std::string& m) {
  throw Error(ErrorKind::Protocol, m);
}

}  // namespace rlock
