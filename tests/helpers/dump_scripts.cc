// dump_scripts DIR: writes the lock protocol's Lua scripts, exactly as rlock sends
// them, to DIR/NAME.lua (and their SHA1s to DIR/NAME.sha1), so that tests can run
// them directly with redis-cli EVAL (tests/scripts.bats) and compare them with the
// previous protocol version's (tests/fixtures/protocol-v1). DIR/functions.library is the
// Functions library rlock loads with RLOCK_FUNCTIONS=on (absent from a build without
// it), for tests/functions.bats.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "functions_library.h"
#include "lock/scripts.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dump_scripts DIR\n");
    return 64;
  }
  std::string dir = argv[1];
  mkdir(dir.c_str(), 0755);
  using rlock::Script;
  for (const Script* s :
       {&rlock::acquire_script(), &rlock::extend_script(), &rlock::release_script(),
        &rlock::leave_script(), &rlock::undo_script(), &rlock::status_script(),
        &rlock::break_script(), &rlock::forget_script(), &rlock::fence_script(),
        &rlock::history_script(), &rlock::nest_script(), &rlock::list_script()}) {
    std::ofstream lua(dir + "/" + s->name + ".lua", std::ios::binary);
    lua << s->source();
    std::ofstream sha(dir + "/" + s->name + ".sha1");
    sha << s->sha1 << "\n";
    if (!lua || !sha) {
      std::fprintf(stderr, "dump_scripts: cannot write to %s\n", dir.c_str());
      return 1;
    }
  }
  if (!rlock::lua::kFunctionsLibrary.empty()) {
    std::ofstream lib(dir + "/functions.library", std::ios::binary);
    lib << rlock::lua::kFunctionsLibrary;
    if (!lib) {
      std::fprintf(stderr, "dump_scripts: cannot write to %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
