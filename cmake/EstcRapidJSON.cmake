# RapidJSON (Debian: rapidjson-dev 1.1.0, header-only) as the INTERFACE
# library EstcRapidJSON: link it to use <rapidjson/...>.
#
# Release 1.1.0's document.h defines GenericStringRef::operator=, which
# assigns const members: GCC accepts it while it is unused, clang >= 19
# (the fuzz build's clang-22) refuses the header. Upstream deleted the
# operator (Tencent/rapidjson#718, after 1.1.0). When the installed header
# does not compile, a copy of the headers with that one definition removed
# goes into the build folder and comes first on the include path. (Only
# estc's .cpp files use it: installed packages do not need the headers.)
if(TARGET EstcRapidJSON)
  return()
endif()
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/document.h REQUIRED)
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_INCLUDES ${RAPIDJSON_INCLUDE_DIR})
check_cxx_source_compiles(
  "#include <rapidjson/document.h>\nint main() { return 0; }"
  ESTC_RAPIDJSON_COMPILES)
unset(CMAKE_REQUIRED_INCLUDES)

add_library(EstcRapidJSON INTERFACE)
if(ESTC_RAPIDJSON_COMPILES)
  target_include_directories(EstcRapidJSON SYSTEM INTERFACE
                             $<BUILD_INTERFACE:${RAPIDJSON_INCLUDE_DIR}>)
else()
  set(fixed ${PROJECT_BINARY_DIR}/rapidjson-fixed)
  file(REMOVE_RECURSE ${fixed})
  file(COPY ${RAPIDJSON_INCLUDE_DIR}/rapidjson DESTINATION ${fixed})
  file(READ ${fixed}/rapidjson/document.h text)
  set(broken "GenericStringRef& operator=(const GenericStringRef& rhs) { s = rhs.s; length = rhs.length; }")
  string(FIND "${text}" "${broken}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${RAPIDJSON_INCLUDE_DIR}/rapidjson/document.h does "
                        "not compile, and not because of the operator= of "
                        "release 1.1.0 (cmake/EstcRapidJSON.cmake)")
  endif()
  string(REPLACE "${broken}" "" text "${text}")
  file(WRITE ${fixed}/rapidjson/document.h "${text}")
  message(STATUS "RapidJSON: ${RAPIDJSON_INCLUDE_DIR}/rapidjson without "
                 "GenericStringRef::operator= in ${fixed}")
  target_include_directories(EstcRapidJSON SYSTEM BEFORE INTERFACE
                             $<BUILD_INTERFACE:${fixed}>)
endif()

# Its internal::Stack computes `nullptr + n` before its first allocation
# (fixed upstream after 1.1.0): UBSan's pointer-overflow check aborts the
# sanitizer builds on every document. That check is off in the files that
# use RapidJSON (harmless without sanitizers).
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(EstcRapidJSON INTERFACE -fno-sanitize=pointer-overflow)
endif()
