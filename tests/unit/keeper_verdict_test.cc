// The keeper's verdict file (hold/verdict.h): passed once, read once, and
// never taken from a place or a file another user could have prepared.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "hold/verdict.h"

namespace rlock {
namespace {

class KeeperVerdictTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rlock-verdict-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    setenv("XDG_RUNTIME_DIR", base_.c_str(), 1);
    dir_ = base_ + "/rlock-" + std::to_string(geteuid());
  }
  void TearDown() override {
    unsetenv("XDG_RUNTIME_DIR");
    std::string cmd = "rm -rf '" + base_ + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  // The one file in the private directory (the name is the module's).
  std::string only_file() {
    std::string cmd = "ls '" + dir_ + "' 2>/dev/null";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[256];
      while (fgets(buf, sizeof buf, p)) out += buf;
      pclose(p);
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out.empty() ? "" : dir_ + "/" + out;
  }
  std::string base_, dir_;
};

TEST_F(KeeperVerdictTest, ReadOnceThenGone) {
  KeeperVerdict v{.failover_lost = true, .fence = 42, .unconfirmed = "a\tb\nc"};
  ASSERT_TRUE(write_keeper_verdict(123, "tok", v));
  struct stat st {};
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(take_keeper_verdict(123, "other-token").has_value());
  EXPECT_FALSE(take_keeper_verdict(124, "tok").has_value());
  auto got = take_keeper_verdict(123, "tok");
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->failover_lost);
  EXPECT_EQ(got->fence, 42);
  EXPECT_EQ(got->unconfirmed, "a b c");
  EXPECT_FALSE(take_keeper_verdict(123, "tok").has_value());
}

TEST_F(KeeperVerdictTest, ADirectoryOthersMayEnterIsNeverUsed) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  EXPECT_FALSE(write_keeper_verdict(1, "tok", KeeperVerdict{.failover_lost = true}));
  ASSERT_EQ(chmod(dir_.c_str(), 0700), 0);
  ASSERT_TRUE(write_keeper_verdict(1, "tok", KeeperVerdict{.failover_lost = true}));
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  EXPECT_FALSE(take_keeper_verdict(1, "tok").has_value());
}

TEST_F(KeeperVerdictTest, ALinkedDirectoryIsNeverFollowed) {
  std::string real = base_ + "/real";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), dir_.c_str()), 0);
  EXPECT_FALSE(write_keeper_verdict(1, "tok", KeeperVerdict{.failover_lost = true}));
}

TEST_F(KeeperVerdictTest, PlantedOrMalformedFilesPassNothing) {
  ASSERT_TRUE(write_keeper_verdict(1, "tok", KeeperVerdict{.failover_lost = true, .fence = 7}));
  std::string file = only_file();
  ASSERT_FALSE(file.empty());
  for (const char* text : {"rlock-verdict\t2\t7\t\n", "rlock-verdict\t1\t-7\t\n",
                           "rlock-verdict\t1\t7\n", "other\t1\t7\t\n", "rlock-verdict\t1\t7\t"}) {
    std::ofstream(file, std::ios::trunc) << text;
    EXPECT_FALSE(take_keeper_verdict(1, "tok").has_value()) << text;
  }
  // A link where the file goes: not followed on reading; replaced on writing.
  std::string target = base_ + "/target";
  std::ofstream(target) << "rlock-verdict\t1\t7\t\n";
  ASSERT_EQ(symlink(target.c_str(), file.c_str()), 0);
  EXPECT_FALSE(take_keeper_verdict(1, "tok").has_value());
  EXPECT_TRUE(write_keeper_verdict(1, "tok", KeeperVerdict{.fence = 9}));
  std::string kept;
  std::getline(std::ifstream(target), kept);
  EXPECT_EQ(kept, "rlock-verdict\t1\t7\t");
  // A FIFO never blocks the reader.
  unlink(file.c_str());
  ASSERT_EQ(mkfifo(file.c_str(), 0600), 0);
  EXPECT_FALSE(take_keeper_verdict(1, "tok").has_value());
}

}  // namespace
}  // namespace rlock
