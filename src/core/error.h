// Typed errors: one kind per boundary, each carrying its exit status from the
// exit table (--help, the man page's EXIT STATUS, README). Lower layers throw
// these; only run_cli (cli.cc) turns them into an exit.
#pragma once

#include <stdexcept>
#include <string>

namespace rlock {

/// Exit statuses of the exit table (sysexits-style where they overlap).
namespace exitcode {
inline constexpr int kOk = 0;
inline constexpr int kFree = 1;          // `status`/`break`: KEY is not held
inline constexpr int kUsage = 64;        // bad flag, duration, URL, key, token
inline constexpr int kUnavailable = 69;  // connect/TLS/timeout/IO failure
inline constexpr int kProtocol = 70;     // internal error or unexpected reply
inline constexpr int kNoKeeper = 71;     // acquire --while-pid: no keeper started
inline constexpr int kNotAcquired = 75;  // taken, --no-wait, --wait ran out
inline constexpr int kLost = 76;         // lease lost, or token no longer holds
inline constexpr int kPermission = 77;   // NOAUTH / WRONGPASS / NOPERM
inline constexpr int kCannotExec = 126;
inline constexpr int kNotFound = 127;
}  // namespace exitcode

enum class ErrorKind { Usage, Unavailable, Protocol, NotAcquired, Lost, Permission, Exec };

/// Whether an unavailable Error may pass by itself (a node restarting, a
/// Cluster failing over): set where the failure is seen (the transport, the
/// router), kept when the error is reworded on its way up.
enum class Cause {
  Other,     // a refusal, a name that does not resolve, TLS, a password, a protocol…
  Reset,     // the peer reset or closed the connection
  Timeout,   // the peer did not answer (connect or command) in time
  NodeDown,  // a Cluster node other than the URL's could not be reached
  // Protocol Errors: a key under rlock's prefix holds another program's value,
  Foreign,      // one of a lock's other keys (its :holders, a holder's hash...)
  ForeignLock,  // the lock's own key PREFIX{KEY}: no lock of rlock's is there
  // ...standard output's reader closed it (EPIPE): no error of rlock's; it
  // ends quietly, as killed by SIGPIPE (output.h).
  ReaderGone,
  // NotAcquired Errors: a newer --supersede job superseded this one (its exit
  // status is --superseded-exit-code, not -E).
  Superseded,
};

/// An error meant for the user: one line of text and the exit status it maps to.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, int status = -1, Cause cause = Cause::Other);
  ErrorKind kind() const { return kind_; }
  int exit_status() const { return status_; }
  Cause cause() const { return cause_; }
  /// An unavailable Error that may pass by itself (see Cause).
  bool transient() const { return kind_ == ErrorKind::Unavailable && cause_ != Cause::Other; }
  Error& set_cause(Cause cause) {
    cause_ = cause;
    return *this;
  }
  /// The same error (kind, status, cause) with another message.
  Error reworded(const std::string& message) const {
    return Error(kind_, message, status_, cause_);
  }

 private:
  ErrorKind kind_;
  int status_;
  Cause cause_;
};

[[noreturn]] void throw_usage(const std::string& message);
[[noreturn]] void throw_unavailable(const std::string& message, Cause cause = Cause::Other);
[[noreturn]] void throw_protocol(const std::string& message);

/// Default exit status of an error kind.
int default_status(ErrorKind kind);

}  // namespace rlock
