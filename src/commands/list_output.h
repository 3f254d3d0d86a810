// The output of `rlock list`: bare lines, JSON, the terminal's table or the
// Prometheus text, added lock by lock in order (src/commands/list.cc finds
// the locks and reads their status).
#pragma once

#include <string>
#include <vector>

#include "cli/options.h"
#include "commands/commands.h"  // status_json
#include "lock/lock.h"

namespace rlock {

// The Prometheus text format, one gauge family after another (each sample of
// a family together, under its HELP and TYPE), for node_exporter's textfile
// collector: per held lock, whether it is held, how many hold and wait, the
// first holder's lease left and time held, its fence, when it was acquired,
// when its lease and a --done-for period end, and who holds it (an info
// metric). docs/recipes/prometheus.md has them all.
class Prometheus {
 public:
  void add(const std::string& key, const LockStatus& st);
  std::string text() const;

 private:
  enum Family {
    kHeld,
    kHolders,
    kWaiters,
    kLeaseLeft,
    kHeldFor,
    kFence,
    kAcquiredAt,
    kExpiresAt,
    kDoneUntil,
    kHolderInfo,
    kFamilies
  };
  std::string values_[kFamilies];
};

// The lines of `list` in one of its forms, added lock by lock in order. Bare
// lines and JSON go to standard output batch by batch (flush), so that memory
// stays one batch whatever the number of locks; the terminal's table (its
// columns fit every row) and the Prometheus text (each family together) are
// printed whole at the end.
class ListOutput {
 public:
  ListOutput(const GlobalOptions& g, bool prometheus);
  void add(const std::string& key, const LockStatus& st);
  /// A lock that cannot be read (a key of another type among its keys,
  /// Cause::Foreign): named on stderr (the first few), left out of the output,
  /// and counted: finish() then fails (70) once everything else is printed.
  void unreadable(const std::string& key, const Error& why);
  void flush();
  void finish();

 private:
  const GlobalOptions& g_;
  const bool prometheus_, table_;
  bool any_ = false;
  size_t unreadable_ = 0;
  std::string first_unreadable_;
  std::string out_;
  Prometheus metrics_;
  std::vector<std::vector<std::string>> rows_{
      {"KEY", "HOLDER", "LEFT", "FENCE", "WAITERS", "COMMAND"}};
};

}  // namespace rlock
