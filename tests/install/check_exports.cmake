# Checks the export list of ruda's shared libraries against the public
# headers. Run by CTest (test install_export_list):
#
#   cmake -DNM=nm -DCC=cc -DINCLUDE_DIR=include -DHEADERS=ruda/a.h,ruda/b.h
#         -DLIBRARIES=libruda.so,... -DWORK_DIR=dir -P check_exports.cmake
#
# Rules:
#   1. every symbol a library exports starts with ruda_, never ruda__;
#   2. every exported symbol is declared in a public header;
#   3. every function the headers declare (static inline ones aside) is
#      exported by one of the libraries.
cmake_minimum_required(VERSION 3.16)

foreach(var NM CC INCLUDE_DIR HEADERS LIBRARIES WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_exports: ${var} is not set")
  endif()
endforeach()

string(REPLACE "," ";" HEADERS "${HEADERS}")
string(REPLACE "," ";" LIBRARIES "${LIBRARIES}")

# The declared functions: preprocess every header, drop every brace body
# (struct and enum fields, static inline bodies) and read the name before
# the first "(" of each remaining declaration.
file(MAKE_DIRECTORY ${WORK_DIR})
set(all_h ${WORK_DIR}/all_headers.c)
set(text "")
foreach(h ${HEADERS})
  string(APPEND text "#include \"${h}\"\n")
endforeach()
file(WRITE ${all_h} "${text}")
execute_process(COMMAND ${CC} -E -P -I${INCLUDE_DIR} ${all_h}
                OUTPUT_VARIABLE pre RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_exports: preprocessing the headers failed:\n${err}")
endif()
string(REGEX REPLACE "\n#[^\n]*" "\n" pre "\n${pre}")
string(REPLACE ";" "@" pre "${pre}")
string(REPLACE "\n" " " pre "${pre}")
while(pre MATCHES "{[^{}]*}")
  string(REGEX REPLACE "{[^{}]*}" "@" pre "${pre}")
endwhile()
string(REPLACE "@" ";" statements "${pre}")
set(declared "")
foreach(st IN LISTS statements)
  string(STRIP "${st}" st)
  if(st MATCHES "^typedef" OR st STREQUAL "")
    continue()
  endif()
  if(st MATCHES "(^|[ *])(ruda_[A-Za-z0-9_]*)[ ]*\\(")
    set(name ${CMAKE_MATCH_2})
    if(NOT st MATCHES "(^| )static ")
      list(APPEND declared ${name})
    endif()
  elseif(st MATCHES "^extern .*(ruda_[A-Za-z0-9_]*)[ ]*(\\[[^]]*\\])?$")
    list(APPEND declared ${CMAKE_MATCH_1})
  endif()
endforeach()
list(REMOVE_DUPLICATES declared)
list(LENGTH declared n_declared)
if(n_declared LESS 10)
  message(FATAL_ERROR "check_exports: found only ${n_declared} declarations; the parser is broken")
endif()

set(problems "")
set(exported_all "")
foreach(lib ${LIBRARIES})
  execute_process(COMMAND ${NM} -D --defined-only ${lib}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_exports: ${NM} -D ${lib} failed:\n${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(n 0)
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ @]+)")
      continue()
    endif()
    set(sym ${CMAKE_MATCH_2})
    if(sym MATCHES "^(_init|_fini|_edata|_end|__bss_start)$")
      continue()
    endif()
    math(EXPR n "${n} + 1")
    list(APPEND exported_all ${sym})
    get_filename_component(lname ${lib} NAME)
    if(sym MATCHES "^ruda__")
      list(APPEND problems "${lname} exports the internal symbol ${sym}")
    elseif(NOT sym MATCHES "^ruda_")
      list(APPEND problems "${lname} exports ${sym}, which is not a ruda_ name")
    elseif(NOT sym IN_LIST declared)
      list(APPEND problems "${lname} exports ${sym}, which no public header declares")
    endif()
  endforeach()
  message(STATUS "${lib}: ${n} exported symbols")
endforeach()

foreach(fn IN LISTS declared)
  if(NOT fn IN_LIST exported_all)
    list(APPEND problems "${fn} is declared in a public header but not exported (declare it \
between RUDA_BEGIN_DECLS and RUDA_END_DECLS of ruda/export.h, and define it)")
  endif()
endforeach()

if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "check_exports: the export list does not match the public headers:\n  ${text}")
endif()
message(STATUS "check_exports: ${n_declared} public functions, all exported, nothing else exported")
