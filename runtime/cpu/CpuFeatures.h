//===- CpuFeatures.h - Which ISA extensions this CPU has --------*- C++ -*-===//
//
// The x86 features code generation may use (LLVM's names), read with cpuid:
// what a loader checks before it runs native code compiled for another CPU
// (an export's model.so, docs/design/saved-model.md). Header-only, so that
// it adds nothing to libEstcRuntime.so's exported symbols.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_CPUFEATURES_H
#define ESTC_RUNTIME_CPU_CPUFEATURES_H

#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace estc {
namespace rt {

#if defined(__x86_64__)
/// LLVM's name of an x86 feature and where cpuid reports it.
struct CpuFeature {
  const char *name;
  unsigned leaf, subleaf;
  int reg; // 0 eax, 1 ebx, 2 ecx, 3 edx
  int bit;
};
/// The ISA extensions code generation uses for arithmetic, data movement
/// and bit manipulation. Features outside this table (cache hints, system
/// instructions) do not change what a compiled model executes.
inline constexpr CpuFeature kCpuFeatures[] = {
    {"sse3", 1, 0, 2, 0},
    {"pclmul", 1, 0, 2, 1},
    {"ssse3", 1, 0, 2, 9},
    {"fma", 1, 0, 2, 12},
    {"cx16", 1, 0, 2, 13},
    {"sse4.1", 1, 0, 2, 19},
    {"sse4.2", 1, 0, 2, 20},
    {"movbe", 1, 0, 2, 22},
    {"popcnt", 1, 0, 2, 23},
    {"aes", 1, 0, 2, 25},
    {"avx", 1, 0, 2, 28},
    {"f16c", 1, 0, 2, 29},
    {"sse", 1, 0, 3, 25},
    {"sse2", 1, 0, 3, 26},
    {"bmi", 7, 0, 1, 3},
    {"avx2", 7, 0, 1, 5},
    {"bmi2", 7, 0, 1, 8},
    {"avx512f", 7, 0, 1, 16},
    {"avx512dq", 7, 0, 1, 17},
    {"adx", 7, 0, 1, 19},
    {"avx512ifma", 7, 0, 1, 21},
    {"avx512cd", 7, 0, 1, 28},
    {"sha", 7, 0, 1, 29},
    {"avx512bw", 7, 0, 1, 30},
    {"avx512vl", 7, 0, 1, 31},
    {"avx512vbmi", 7, 0, 2, 1},
    {"avx512vbmi2", 7, 0, 2, 6},
    {"gfni", 7, 0, 2, 8},
    {"vaes", 7, 0, 2, 9},
    {"vpclmulqdq", 7, 0, 2, 10},
    {"avx512vnni", 7, 0, 2, 11},
    {"avx512bitalg", 7, 0, 2, 12},
    {"avx512vpopcntdq", 7, 0, 2, 14},
    {"avx512fp16", 7, 0, 3, 23},
    {"avxvnni", 7, 1, 0, 4},
    {"avx512bf16", 7, 1, 0, 5},
    {"lzcnt", 0x80000001, 0, 2, 5},
    {"sse4a", 0x80000001, 0, 2, 6},
};

inline bool host_has(const CpuFeature &f) {
  unsigned regs[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(f.leaf, f.subleaf, &regs[0], &regs[1], &regs[2],
                         &regs[3]))
    return false;
  return (regs[f.reg] >> f.bit) & 1u;
}
#endif

/// The features of `want` (LLVM's names: "avx2", "avx512f", ...) this CPU
/// lacks, among those the table knows.
inline std::vector<std::string>
missing_cpu_features(const std::vector<std::string> &want) {
  std::vector<std::string> missing;
#if defined(__x86_64__)
  for (const std::string &name : want)
    for (const CpuFeature &f : kCpuFeatures)
      if (name == f.name && !host_has(f))
        missing.push_back(name);
#else
  (void)want;
#endif
  return missing;
}

} // namespace rt
} // namespace estc

#endif // ESTC_RUNTIME_CPU_CPUFEATURES_H
