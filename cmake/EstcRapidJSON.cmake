# RapidJSON (Debian: rapidjson-dev 1.1.0, header-only) as the INTERFACE
# library EstcRapidJSON: link it to use <rapidjson/...>.
#
# Release 1.1.0 needs two fixes, made upstream after it. estc uses a copy of
# the headers, in the build folder and first on the include path, with:
#
#  1. GenericStringRef::operator= removed (document.h). It assigns const
#     members: GCC accepts it while it is unused, clang >= 19 (the fuzz
#     build's clang-22) refuses the header. Upstream deleted the operator
#     (Tencent/rapidjson#718).
#  2. No fraction or exponent parsed after NaN or Inf (reader.h, with
#     kParseNanAndInfFlag, which estc's readers of saved_model.json and of
#     REST requests use). 1.1.0 goes on to parse "Inf.5" or "Infe0" as a
#     number with no digits: full-precision parsing then reads before its
#     buffer (an assertion in builds with asserts; found by the
#     feature_column_json fuzz target). Upstream: Tencent/rapidjson#2299
#     and #2300, which make such input an invalid value.
#  3. A number whose digits are all zeros but whose exponent is large
#     ("0e221") is 0 (internal/strtod.h). 1.1.0 hands its zero significand
#     to DiyFp::Normalize, whose __builtin_clzll(0) is undefined (UBSan;
#     found by the same fuzz target). Upstream's rewrite of
#     StrtodFullPrecision returns 0 for "Buffer only contains zeros".
#
# Each fix is applied where the installed header still has the text it
# replaces; a header that has neither that text, nor the fixed one, nor
# upstream's fix fails the configuration, naming the file. (Only estc's .cpp files use the copy:
# installed packages do not need the headers.)
if(TARGET EstcRapidJSON)
  return()
endif()
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/document.h REQUIRED)

set(_fixed ${PROJECT_BINARY_DIR}/rapidjson-fixed)
file(REMOVE_RECURSE ${_fixed})
file(COPY ${RAPIDJSON_INCLUDE_DIR}/rapidjson DESTINATION ${_fixed})

# Replaces every `broken` in FILE (relative to the copy) with `fixed`; a file
# with neither (nor UPSTREAM, a text of upstream's fix) is a configuration
# error.
function(_estc_rapidjson_fix file broken fixed)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "UPSTREAM" "")
  file(READ ${_fixed}/rapidjson/${file} text)
  string(FIND "${text}" "${broken}" at)
  if(at EQUAL -1)
    if(NOT fixed STREQUAL "")
      string(FIND "${text}" "${fixed}" done)
    else()
      set(done 0)
    endif()
    if(done EQUAL -1 AND arg_UPSTREAM)
      string(FIND "${text}" "${arg_UPSTREAM}" done)
    endif()
    if(done EQUAL -1)
      message(FATAL_ERROR "${RAPIDJSON_INCLUDE_DIR}/rapidjson/${file} has "
                          "neither the text of release 1.1.0 nor its fix: "
                          "'${broken}' (cmake/EstcRapidJSON.cmake)")
    endif()
    return()
  endif()
  string(REPLACE "${broken}" "${fixed}" text "${text}")
  file(WRITE ${_fixed}/rapidjson/${file} "${text}")
endfunction()

_estc_rapidjson_fix(document.h
  "GenericStringRef& operator=(const GenericStringRef& rhs) { s = rhs.s; length = rhs.length; }"
  "")
_estc_rapidjson_fix(reader.h
  "if (Consume(s, '.')) {"
  "if (!useNanOrInf && Consume(s, '.')) {")
_estc_rapidjson_fix(reader.h
  "if (Consume(s, 'e') || Consume(s, 'E')) {"
  "if (!useNanOrInf && (Consume(s, 'e') || Consume(s, 'E'))) {")
set(_trim "    // Trim trailing zeros
    while (decimals[length - 1] == '0' && length > 1) {
        length--;
        decimalPosition--;
        exp++;
    }
")
_estc_rapidjson_fix(internal/strtod.h "${_trim}" "${_trim}
    if (length == 1 && *decimals == '0') // only zeros (\"0e221\")
        return 0.0;
" UPSTREAM "Buffer only contains zeros")

add_library(EstcRapidJSON INTERFACE)
target_include_directories(EstcRapidJSON SYSTEM BEFORE INTERFACE
                           $<BUILD_INTERFACE:${_fixed}>)

# Its internal::Stack computes `nullptr + n` before its first allocation
# (fixed upstream after 1.1.0): UBSan's pointer-overflow check aborts the
# sanitizer builds on every document. That check is off in the files that
# use RapidJSON (harmless without sanitizers).
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(EstcRapidJSON INTERFACE -fno-sanitize=pointer-overflow)
endif()
