// Holder metadata comes from the environment, never from the user database.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "lock/lock.h"
#include "proc/procinfo.h"

namespace {

// Sets or unsets an environment variable for one test, restoring it after.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvVar() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string uid_name() {
  return geteuid() == 0 ? "root" : "uid " + std::to_string(geteuid());
}

TEST(LoginName, LognameFirstThenUser) {
  EnvVar l("LOGNAME", "alice"), u("USER", "bob");
  EXPECT_EQ(rlock::login_name_from_env(), "alice");
  EnvVar l2("LOGNAME", nullptr);
  EXPECT_EQ(rlock::login_name_from_env(), "bob");
}

TEST(LoginName, ImplausibleNamesGiveTheUid) {
  EnvVar u("USER", nullptr);
  for (const char* bad : {"", "-rf", "a b", "x\x1b[2J", "\xc3\xa9t\xc3\xa9", "a/b",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 33 */}) {
    EnvVar l("LOGNAME", bad);
    EXPECT_EQ(rlock::login_name_from_env(), uid_name()) << bad;
  }
  EnvVar l("LOGNAME", nullptr);
  EXPECT_EQ(rlock::login_name_from_env(), uid_name());
}

TEST(LoginName, CommonShapesAreKept) {
  EnvVar u("USER", nullptr);
  for (const char* ok : {"root", "deploy-bot", "first.last", "svc_ci", "WORKSTATION$",
                         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 32 */}) {
    EnvVar l("LOGNAME", ok);
    EXPECT_EQ(rlock::login_name_from_env(), ok);
  }
}

}  // namespace
