// Each script's ARGV in the order its named locals read them (src/lock/lua/,
// docs/PROTOCOL.md "Scripts"): a field that moves, or an optional argument
// sent where it was not, fails here before it reaches a server.
#include "lock/script_args.h"

#include <gtest/gtest.h>

namespace rlock {
namespace {

TEST(ScriptArgs, AcquireSendsItsSeventeenArgumentsInTheScriptsOrder) {
  AcquireArgs a{.token = "tok",
                .ttl = Millis(30000),
                .limit = 3,
                .mode = "wait",
                .queue_lease = Millis(6000),
                .channel = "lock:release:{k}",
                .host = "h",
                .pid = 42,
                .user = "u",
                .cmd = "make",
                .attempt = 2,
                .shared = true,
                .label = "job",
                .priority = -5,
                .supersede = true,
                .max_waiters = 7,
                .history = 50,
                .cancel = true,
                .pool = "db-a,db-b,db-c"};
  EXPECT_EQ(a.to_argv(),
            (Args{"tok", "30000", "3", "wait", "6000", "lock:release:{k}", "h", "42", "u", "make",
                  "2", "shared", "job", "-5", "1", "7", "50", "1", "db-a,db-b,db-c"}));
  AcquireArgs plain{.token = "t", .mode = "try"};
  Args argv = plain.to_argv();
  ASSERT_EQ(argv.size(), 19u);
  EXPECT_EQ(argv[4], "6000");  // the place lease
  EXPECT_EQ(argv[11], "");     // exclusive
  EXPECT_EQ(argv[14], "");     // no supersede
  EXPECT_EQ(argv[16], "100");  // the default history
  EXPECT_EQ(argv[17], "");     // no cancel
  EXPECT_EQ(argv[18], "");     // a count, not a named pool
}

TEST(ScriptArgs, ReleaseSendsTheTailOnlyWithAHistoryCap) {
  ReleaseArgs r{.token = "t",
                .min_hold = Millis(5),
                .channel = "c",
                .tombstone = Millis(9),
                .release_id = "rid",
                .exit_status = 3,
                .done_for = Millis(7),
                .history = 0,
                .lost = "why"};
  EXPECT_EQ(r.to_argv(), (Args{"t", "5", "c", "9", "rid", "3", "7", "0", "why"}));
  r.exit_status = 256;  // no exit status: not known
  EXPECT_EQ(r.to_argv()[5], "");
  r.exit_status = -1;
  EXPECT_EQ(r.to_argv()[5], "");
  r.history = std::nullopt;
  EXPECT_EQ(r.to_argv(), (Args{"t", "5", "c", "9", "rid"}));
  // A give-back: no id, so no tombstone.
  EXPECT_EQ((ReleaseArgs{.token = "t", .channel = "c", .history = 100}.to_argv()),
            (Args{"t", "0", "c", "0", "", "", "0", "100", ""}));
}

TEST(ScriptArgs, TheOtherScriptsInTheirOrder) {
  EXPECT_EQ((UndoArgs{.token = "t", .attempt = 4, .channel = "c", .history = 1}.to_argv()),
            (Args{"t", "4", "c", "1"}));
  EXPECT_EQ((ExtendArgs{.token = "t", .ttl = Millis(0), .history = 2, .supersede = true}.to_argv()),
            (Args{"t", "0", "2", "1"}));
  EXPECT_EQ((ExtendArgs{.token = "t", .ttl = Millis(10)}.to_argv()), (Args{"t", "10", "100", ""}));
  EXPECT_EQ((LeaveArgs{.token = "t", .channel = "c", .history = 3}.to_argv()),
            (Args{"t", "c", "3"}));
  EXPECT_EQ((StatusArgs{}.to_argv()), (Args{"1000"}));
  EXPECT_EQ((StatusArgs{.max_records = 5, .events = false}.to_argv()), (Args{"5", "0"}));
  EXPECT_EQ(
      (BreakArgs{.channel = "c", .history = 4, .by = "me", .tombstone = Millis(30000)}.to_argv()),
      (Args{"c", "4", "me", "30000", "", ""}));
  EXPECT_EQ((BreakArgs{.channel = "c",
                       .history = 4,
                       .by = "me",
                       .tombstone = Millis(30000),
                       .only = "tok",
                       .reason = "hung"}
                 .to_argv()),
            (Args{"c", "4", "me", "30000", "tok", "hung"}));
  EXPECT_EQ((FenceArgs{.token = "t", .fence = 1234567890123}.to_argv()),
            (Args{"t", "1234567890123", "0"}));
  EXPECT_EQ((FenceArgs{.token = "t", .fence = 7, .claim = true}.to_argv()), (Args{"t", "7", "1"}));
  EXPECT_EQ((HistoryArgs{.count = 20}.to_argv()), (Args{"20", ""}));
  EXPECT_EQ((HistoryArgs{.count = 100, .after = "1-0"}.to_argv()), (Args{"100", "1-0"}));
  EXPECT_EQ((ListArgs{.full = true, .seen = "13"}.to_argv()), (Args{"full", "13"}));
  EXPECT_EQ((ListArgs{}.to_argv()), (Args{"line", ""}));
}

TEST(ScriptArgs, NestSendsWhatItsOperationReads) {
  NestArgs n{.outer = "o", .member = "id 1 h", .ttl = Millis(9000), .channel = "c", .history = 5};
  n.op = "hold";
  EXPECT_EQ(n.to_argv(), (Args{"hold", "o", "id 1 h", "9000"}));
  n.op = "end";
  EXPECT_EQ(n.to_argv(), (Args{"end", "o", "id 1 h", "c", "5"}));
  n.op = "list";
  EXPECT_EQ(n.to_argv(), (Args{"list", "o"}));
}

TEST(ScriptArgs, TheLayoutsScripts) {
  EXPECT_EQ((LayoutAcquireArgs{.token = "t", .ttl = Millis(30000)}.to_argv()),
            (Args{"t", "30000"}));
  EXPECT_EQ((LayoutExtendArgs{.token = "t", .ttl = Millis(1)}.to_argv()), (Args{"t", "1"}));
  EXPECT_EQ(
      (PlainReleaseArgs{
          .token = "t", .channel = "c", .payload = "k", .tombstone = Millis(2), .release_id = "r"}
           .to_argv()),
      (Args{"t", "c", "k", "2", "r"}));
  EXPECT_EQ(
      (RedissonReleaseArgs{.id = "i", .channel = "c", .tombstone = Millis(2), .release_id = "r"}
           .to_argv()),
      (Args{"i", "c", "2", "r"}));
  EXPECT_EQ((PlainBreakArgs{.channel = "c", .payload = "k"}.to_argv()), (Args{"c", "k"}));
  EXPECT_EQ((RedissonBreakArgs{.channel = "c"}.to_argv()), (Args{"c"}));
}

}  // namespace
}  // namespace rlock
