// docs/PROTOCOL.md quotes the Lua scripts so other languages can take the
// same locks; this keeps the quotes and the code from drifting apart.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "lock/scripts.h"

namespace rlock {
namespace {

std::string read_doc() {
  std::ifstream in(std::string(RLOCK_SOURCE_DIR) + "/docs/PROTOCOL.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.front() == '\n' || s.front() == ' ')) s.erase(s.begin());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(ProtocolDoc, QuotesThePreludeVerbatim) {
  std::string doc = read_doc();
  ASSERT_FALSE(doc.empty()) << "docs/PROTOCOL.md not found";
  EXPECT_NE(doc.find(trim(script_prelude())), std::string::npos)
      << "docs/PROTOCOL.md does not quote the prelude as in src/lock/lua/prelude.lua "
         "(python3 tests/helpers/protocol_doc.py copies every script into it)";
}

TEST(ProtocolDoc, QuotesEveryScriptVerbatim) {
  std::string doc = read_doc();
  for (const Script* s : {&acquire_script(), &extend_script(), &release_script(), &leave_script(),
                          &undo_script(), &status_script(), &break_script(), &forget_script(),
                          &fence_script(), &history_script(), &nest_script()}) {
    std::string body = trim(std::string(s->body));
    EXPECT_NE(doc.find(body), std::string::npos)
        << "docs/PROTOCOL.md does not quote the " << s->name << " script as in src/lock/lua/"
        << s->name << ".lua";
  }
}

}  // namespace
}  // namespace rlock
