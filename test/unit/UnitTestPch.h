// The unit tests' precompiled header (test/unit/CMakeLists.txt, ESTC_PCH):
// GoogleTest and the standard headers most tests use (estc's own headers
// stay out: their names would meet every test's using-directives). Every
// test compiles as if it included this first; each still includes what it
// uses itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
