# Included by embed_lua.cmake: cuts the prelude (src/lock/lua/prelude.lua's sent text) so that
# each script is sent with only the prelude definitions it uses, in their original order
# (docs/PROTOCOL.md, "Prelude"). EVALSHA runs the whole text at every call, and Lua 5.1
# builds a closure per `local function` each time: what a script never names costs it
# server time for nothing (docs/PERFORMANCE.md, "Server time per lock cycle").
#
# The prelude is split into top-level chunks. A chunk starts at a line at column 0 that
# begins with `local` (the comment lines directly above it belong to it) and runs to the
# next such start; it defines the names after `local` or `local function`. A line at
# column 0 that starts another statement starts a chunk that every script keeps, and so
# do the lines before the first chunk (they name the protocol). A script keeps the chunks
# that define a name its body mentions, then those that a kept chunk mentions, and so on:
# "mentions" is every [A-Za-z_][A-Za-z0-9_]* token, comments and strings included, which
# keeps too much rather than too little. Anything this cannot split stops the build.

# prelude_split(TEXT): sets, in the caller's scope, prelude_chunks (their count) and for
# each chunk I (0 = the lines naming the protocol) prelude_text_I, prelude_names_I (the
# names it defines; empty: kept by every script) and prelude_tokens_I.
function(prelude_split text)
  if(text MATCHES "\\[=*\\[")
    message(FATAL_ERROR "prelude.lua: a long bracket ([[ or [=[) in the prelude: "
                        "cut_prelude.cmake cannot tell its lines from top-level ones")
  endif()
  set(ident "[A-Za-z_][A-Za-z0-9_]*")
  set(rest "${text}")
  set(n 0)            # chunks closed so far
  set(cur "")         # the chunk being read
  set(cur_names "")
  set(pending "")     # comment lines since the last other line: they go with what follows
  # prelude.lua's line number: the sent text starts with the end of the marker line
  # (prelude_marker_line, set by embed_lua.cmake).
  math(EXPR lineno "${prelude_marker_line} - 1")
  while(TRUE)
    # The end of the text closes the last chunk as a start would.
    set(last FALSE)
    set(line "")
    set(start FALSE)
    set(names "")
    string(FIND "${rest}" "\n" nl)
    if(rest STREQUAL "")
      set(last TRUE)
      set(start TRUE)
      if(n EQUAL 0)
        message(FATAL_ERROR "prelude.lua: no line starts with `local`")
      endif()
    elseif(nl EQUAL -1)
      set(line "${rest}")
      set(rest "")
    else()
      math(EXPR after "${nl} + 1")
      string(SUBSTRING "${rest}" 0 ${after} line)
      string(SUBSTRING "${rest}" ${after} -1 rest)
    endif()
    math(EXPR lineno "${lineno} + 1")
    if(last)
    elseif(line MATCHES "^local[ \t]")
      set(start TRUE)
      if(line MATCHES "^local[ \t]+function[ \t]+(${ident})[ \t]*\\(")
        set(names "${CMAKE_MATCH_1}")
      elseif(line MATCHES "^local[ \t]+(${ident}([ \t]*,[ \t]*${ident})*)[ \t]*(=|--|\n|$)")
        string(REGEX MATCHALL "${ident}" names "${CMAKE_MATCH_1}")
      else()
        message(FATAL_ERROR "prelude.lua:${lineno}: cannot tell which "
                            "names this defines (cut_prelude.cmake): ${line}")
      endif()
      if("function" IN_LIST names)
        message(FATAL_ERROR "prelude.lua:${lineno}: cannot tell which "
                            "names this defines (cut_prelude.cmake): ${line}")
      endif()
    elseif(line MATCHES "^(end|else|elseif|until)([^A-Za-z0-9_]|$)")
      # closes (or continues) the statement above
    elseif(line MATCHES "^[A-Za-z_]")
      set(start TRUE)  # another top-level statement: every script keeps it
    elseif(NOT line MATCHES "^([ \t]|--|\n|$)")
      message(FATAL_ERROR "prelude.lua:${lineno}: a line at column 0 "
                          "that cut_prelude.cmake cannot place in a chunk: ${line}")
    endif()

    if(start)
      if(n EQUAL 0 OR last)
        # The comments above the first chunk name the protocol: every script keeps them.
        # (Comments at the end belong to the last chunk.)
        string(APPEND cur "${pending}")
        set(pending "")
      endif()
      set(prelude_text_${n} "${cur}" PARENT_SCOPE)
      set(prelude_names_${n} "${cur_names}" PARENT_SCOPE)
      string(REGEX MATCHALL "${ident}" tokens "${cur}")
      list(REMOVE_DUPLICATES tokens)
      set(prelude_tokens_${n} "${tokens}" PARENT_SCOPE)
      if(n EQUAL 0 AND NOT cur MATCHES "\n-- rlock lock protocol [0-9]+ ")
        message(FATAL_ERROR "prelude.lua: the lines before its first `local` do not name the "
                            "protocol ('-- rlock lock protocol N ...')")
      endif()
      math(EXPR n "${n} + 1")
      if(last)
        break()
      endif()
      set(cur "${pending}${line}")
      set(cur_names "${names}")
      set(pending "")
    elseif(line MATCHES "^--")
      string(APPEND pending "${line}")
    else()
      string(APPEND cur "${pending}${line}")
      set(pending "")
    endif()
  endwhile()
  set(prelude_chunks ${n} PARENT_SCOPE)
endfunction()

# prelude_for(BODY OUT): the prelude text that a script whose body is BODY is sent with
# (the chunks it needs, in order), in OUT; after prelude_split.
function(prelude_for body out)
  string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" needed "${body}")
  math(EXPR last "${prelude_chunks} - 1")
  foreach(i RANGE ${last})
    set(keep_${i} FALSE)
    if("${prelude_names_${i}}" STREQUAL "")
      set(keep_${i} TRUE)
      list(APPEND needed ${prelude_tokens_${i}})
    endif()
  endforeach()
  set(changed TRUE)
  while(changed)
    set(changed FALSE)
    list(REMOVE_DUPLICATES needed)
    foreach(i RANGE ${last})
      if(keep_${i})
        continue()
      endif()
      foreach(name IN LISTS prelude_names_${i})
        list(FIND needed "${name}" at)  # (not if(IN_LIST), which would read a variable `name`)
        if(NOT at EQUAL -1)
          set(keep_${i} TRUE)
          list(APPEND needed ${prelude_tokens_${i}})
          set(changed TRUE)
          break()
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(text "")
  foreach(i RANGE ${last})
    if(keep_${i})
      string(APPEND text "${prelude_text_${i}}")
    endif()
  endforeach()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
