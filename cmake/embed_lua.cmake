# Embeds the Lua scripts of the lock protocol (src/lock/lua/NAME.lua) in one C++ header, at build
# time, as `inline constexpr std::string_view kName` raw string literals in namespace
# rlock::lua, so that the compiler can hash them (src/sha1.h). Run by the build
# (CMakeLists.txt), whenever a script or this file changes:
#
#   cmake -DLUA_DIR=src/lock/lua -DNAMES=prelude,acquire,... -DWITH_PRELUDE=acquire,...
#         -DOUT=lua_scripts.h -P embed_lua.cmake
#
# A script file is Lua comments that document it (ARGV, replies), then one line that starts
# with "-- >8 --", then the script. What is embedded, and so sent to Redis, is the rest of
# the file from the newline that ends that line on, byte for byte: the comments above it
# are not part of the script and never change its SHA-1. Anything this cannot embed
# exactly stops the build with a message.
#
# Each script of WITH_PRELUDE is sent after the part of the prelude (prelude.lua, one of
# NAMES) it uses: that part is embedded as kNamePrelude (cmake/cut_prelude.cmake says how
# it is cut); the whole prelude stays kPrelude, which docs/PROTOCOL.md quotes.
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/cut_prelude.cmake)

foreach(var LUA_DIR NAMES WITH_PRELUDE OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_lua.cmake: -D${var}=... is missing")
  endif()
endforeach()

set(marker "-- >8 --")
# Must not occur in any script: a raw string literal ends at its first )rlock_lua".
set(delimiter "rlock_lua")

# prelude -> kPrelude, some_name -> kSomeName
function(constant_of name out)
  set(constant "k")
  string(REPLACE "_" ";" parts "${name}")
  foreach(part IN LISTS parts)
    string(SUBSTRING "${part}" 0 1 head)
    string(SUBSTRING "${part}" 1 -1 tail)
    string(TOUPPER "${head}" head)
    string(APPEND constant "${head}${tail}")
  endforeach()
  set(${out} "${constant}" PARENT_SCOPE)
endfunction()

string(REPLACE "," ";" names "${NAMES}")
set(body "")
foreach(name IN LISTS names)
  set(file "${LUA_DIR}/${name}.lua")
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "embed_lua.cmake: '${name}' is not a script name ([a-z][a-z0-9_]*)")
  endif()
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "embed_lua.cmake: ${file} does not exist")
  endif()
  file(READ "${file}" content)
  # file(READ) drops the CR of a CR LF: a file it does not give back whole cannot be embedded
  # byte for byte (a checkout with CRLF line ends; .gitattributes asks for LF).
  string(LENGTH "${content}" length)
  file(SIZE "${file}" size)
  if(NOT length EQUAL size)
    message(FATAL_ERROR "${file}: read as ${length} of its ${size} bytes (CRLF line ends?)")
  endif()

  # The one marker line, at the start of a line.
  set(lined "\n${content}")
  string(FIND "${lined}" "\n${marker}" first)
  string(FIND "${lined}" "\n${marker}" last REVERSE)
  if(first EQUAL -1)
    message(FATAL_ERROR "${file}: no line starting with '${marker}' says where the script starts")
  endif()
  if(NOT first EQUAL last)
    message(FATAL_ERROR "${file}: more than one line starts with '${marker}'")
  endif()
  string(SUBSTRING "${lined}" ${first} -1 rest)  # "\n-- >8 --...\n<script>"
  string(SUBSTRING "${rest}" 1 -1 rest)
  string(FIND "${rest}" "\n" newline)
  if(newline EQUAL -1)
    message(FATAL_ERROR "${file}: no script after the '${marker}' line")
  endif()
  string(SUBSTRING "${rest}" ${newline} -1 script)
  if(name STREQUAL "prelude")
    # The marker's line number, for cut_prelude.cmake's messages.
    string(SUBSTRING "${content}" 0 ${first} head)
    string(REGEX MATCHALL "\n" newlines "${head}")
    list(LENGTH newlines prelude_marker_line)
    math(EXPR prelude_marker_line "${prelude_marker_line} + 1")
  endif()
  set(script_${name} "${script}")

  if(script STREQUAL "\n")
    message(FATAL_ERROR "${file}: the script after the '${marker}' line is empty")
  endif()
  string(FIND "${script}" ")${delimiter}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file}: the script contains ')${delimiter}\"', which would end "
                        "its C++ raw string literal early; change embed_lua.cmake's delimiter")
  endif()
  # A compiler may read a lone CR as a line end, in raw strings too: the bytes sent would
  # differ from the file's.
  string(FIND "${script}" "\r" cr)
  if(NOT cr EQUAL -1)
    message(FATAL_ERROR "${file}: the script contains a carriage return")
  endif()

  constant_of("${name}" constant)
  string(APPEND body "\n// src/lock/lua/${name}.lua, from the end of its '${marker}' line on\n"
         "inline constexpr std::string_view ${constant} = "
         "R\"${delimiter}(${script})${delimiter}\";\n")
endforeach()

# Each script's own part of the prelude.
string(REPLACE "," ";" preluded "${WITH_PRELUDE}")
if(preluded AND NOT "prelude" IN_LIST names)
  message(FATAL_ERROR "embed_lua.cmake: scripts with the prelude (-DWITH_PRELUDE) but no "
                      "prelude in -DNAMES")
endif()
if(preluded)
  prelude_split("${script_prelude}")
endif()
foreach(name IN LISTS preluded)
  if(NOT name IN_LIST names OR name STREQUAL "prelude")
    message(FATAL_ERROR "embed_lua.cmake: '${name}' of -DWITH_PRELUDE is not a script of -DNAMES")
  endif()
  prelude_for("${script_${name}}" cut)
  constant_of("${name}_prelude" constant)
  string(APPEND body "\n// The part of src/lock/lua/prelude.lua that ${name}.lua uses, sent before it\n"
         "inline constexpr std::string_view ${constant} = "
         "R\"${delimiter}(${cut})${delimiter}\";\n")
endforeach()

# string(CONCAT), not set(): set() with several values would join them with ';'. And
# file(WRITE), not file(CONFIGURE), which would replace @VAR@ in a script.
string(CONCAT header
       "// Generated by cmake/embed_lua.cmake from src/lock/lua/*.lua at build time: do not edit.\n"
       "// Each constant is the text that rlock sends to Redis, byte for byte.\n"
       "#pragma once\n\n#include <string_view>\n\nnamespace rlock::lua {\n"
       "${body}\n}  // namespace rlock::lua\n")
file(WRITE "${OUT}" "${header}")
