// Included first in every source file of rlock itself (CMakeLists.txt, -include), not in
// the tests'. With libstdc++ before GCC 13 every file that includes <iostream> (CLI11's
// headers do) carries a static std::ios_base::Init, so every run of rlock built the eight
// standard stream objects and the classic locale before main: 50,000 instructions and 26
// page faults in a binary that links libstdc++ statically, about 4% of an uncontended
// `rlock run` (docs/PERFORMANCE.md). rlock writes through its own functions
// (cli/output.h) and reads std::cin only in read_yes_answer (cli/output.h), the answer
// to the confirmation break and forget ask for.
//
// So here <iostream> declares the streams without that object: run_cli() (app/cli.cc)
// builds one before any command but the plain `run KEY -- CMD` parses its words, which
// is the first use of a standard stream on every path. Elsewhere (libc++, GCC 13's
// libstdc++, which initialises the streams once in the library) this file does nothing.
#pragma once

#include <version>

#if defined(__GLIBCXX__) && defined(_GLIBCXX_RELEASE) && _GLIBCXX_RELEASE < 13 && \
    !defined(_GLIBCXX_IOSTREAM)
#include <istream>
#include <ostream>
// <iostream> is guarded by this name: from here on it is included as already read.
#define _GLIBCXX_IOSTREAM 1
namespace std {
extern istream cin;
extern ostream cout;
extern ostream cerr;
extern ostream clog;
}  // namespace std
#define RLOCK_IOSTREAM_LAZY 1
#endif
