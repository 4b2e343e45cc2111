# Writes OUT with the version from `git describe`, only when it changed (no needless rebuilds).
execute_process(COMMAND git -C ${SRC} describe --always --dirty --tags
  OUTPUT_VARIABLE GIT_DESC OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR GIT_DESC STREQUAL "")
  set(GIT_DESC "unknown")
endif()
set(content "#pragma once\n#define RAGFORM_VERSION \"${VERSION}\"\n#define RAGFORM_GIT \"${GIT_DESC}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUT} "${content}")
endif()
