# Embeds one file in a C++ header as `inline constexpr unsigned char NAME[]`, byte for byte.
# Run by the build (CMakeLists.txt) for the guard program (src/proc/guard_program.cc):
#
#   cmake -DINPUT=rlock-guard -DNAME=kGuardProgram -DOUT=guard_program.h -P embed_binary.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var INPUT NAME OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_binary.cmake: -D${var}=... is missing")
  endif()
endforeach()
file(SIZE "${INPUT}" size)
if(size EQUAL 0 OR size GREATER 65536)
  message(FATAL_ERROR "embed_binary.cmake: ${INPUT} is ${size} bytes (expected 1 to 65536)")
endif()
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_binary.cmake: do not edit.\n"
  "#pragma once\n"
  "inline constexpr unsigned char ${NAME}[] = {\n  ${bytes}\n};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
