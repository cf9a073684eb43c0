//===- Flags.h - Command-line flags for estc's tools and examples --------===//
//
// One flag parser for every program that is not an LLVM tool (estc-models,
// estc-ckpt, the examples' trainers, the benchmarks), in the spirit of
// TensorFlow's C++ `tensorflow::Flag` / `Flags::Parse`: each program declares
// its flags with a name, the variable that receives the value, and a line of
// help; --help is generated from the declarations. Links no LLVM.
//
//   int64_t batch_size = 128;
//   std::string model = "convnet";
//   bool verbose = false;
//   estc::flags::FlagParser parser("trainer", "Trains a model.");
//   parser.add(Flag("batch_size", &batch_size, "examples per step").min(1));
//   parser.add(Flag("model", &model, "the model").choices({"convnet", "mlp"}));
//   parser.add(Flag("verbose", &verbose, "log every step"));
//   parser.parse_or_exit(argc, argv);
//
// Syntax (as absl / gflags):
//   --name=value or --name value    any flag but a bool (one dash works too:
//                                   -o FILE); a value that starts with "--"
//                                   is taken only in the --name=value form
//   --name, --name=true|false       bool flags (also 1 / 0)
//   --                              the rest are positional arguments
//   --help, -h                      the generated help on stdout, exit 0
// A flag given twice keeps the last value.
//
// A bad command line (unknown flag, missing value, a value that is not a
// number or out of range, a missing or extra positional argument) is one line
// on stderr, "<program>: error: <what>", naming the flag, and exit status
// kExitBadCommandLine (2); programs exit 1 when the run itself fails. Every
// estc program follows this (docs/user-guide.md, "Command lines").
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_FLAGS_H
#define ESTC_LIB_SUPPORT_FLAGS_H

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace estc {
namespace flags {

/// The exit status of every estc program for a bad command line.
inline constexpr int kExitBadCommandLine = 2;

/// A bad command line: one line naming the flag or argument at fault.
class FlagError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

/// One flag: its name (without dashes), the variable that receives its value
/// and its help. The variable's value when the flag is declared is the
/// default --help shows. Optional variables stay empty unless given.
class Flag {
public:
  using Destination =
      std::variant<bool *, int *, int64_t *, double *, std::string *,
                   std::optional<int64_t> *, std::optional<double> *,
                   std::optional<std::string> *>;

  Flag(std::string name, bool *dst, std::string help);
  Flag(std::string name, int *dst, std::string help);
  Flag(std::string name, int64_t *dst, std::string help);
  Flag(std::string name, double *dst, std::string help);
  Flag(std::string name, std::string *dst, std::string help);
  Flag(std::string name, std::optional<int64_t> *dst, std::string help);
  Flag(std::string name, std::optional<double> *dst, std::string help);
  Flag(std::string name, std::optional<std::string> *dst, std::string help);

  /// The placeholder --help shows ("--batch_size=N"); by default N for
  /// integers, X for numbers, VALUE for strings, a|b|c with choices.
  Flag &value_name(std::string name);
  /// Replaces the default --help shows ("the number of cores").
  Flag &default_text(std::string text);
  /// Numbers: the value must be >= `lo` / <= `hi` / > 0.
  Flag &min(double lo);
  Flag &max(double hi);
  Flag &positive();
  /// Strings: the value must be one of `values`.
  Flag &choices(std::vector<std::string> values);
  /// The flag must be given.
  Flag &required();

  const std::string &name() const { return name_; }
  bool is_bool() const { return std::holds_alternative<bool *>(dst_); }
  /// "--batch_size=N" (bool flags: "--verbose").
  std::string synopsis() const;
  /// The help line with the default: "examples per step (default: 128)".
  std::string description() const;

private:
  friend class FlagParser;
  /// Stores `text` given as --name=text; throws FlagError.
  void set(const std::string &text) const;
  void checkRange(double v, const std::string &text) const;

  std::string name_;
  Destination dst_;
  std::string help_;
  std::string valueName_;
  std::string defaultText_;
  std::optional<double> min_, max_;
  bool positive_ = false;
  std::vector<std::string> choices_;
  bool required_ = false;
};

/// The flags and positional arguments of one program.
class FlagParser {
public:
  /// `program` prefixes every error line; `description` opens --help.
  FlagParser(std::string program, std::string description);

  FlagParser &add(Flag flag);
  /// A positional argument (shown as `name` in the usage line), in order.
  FlagParser &positional(std::string name, std::string *dst, std::string help,
                         bool required = true);

  /// Parses argv[1..argc). Returns false when --help was given (nothing else
  /// is parsed then). Throws FlagError on a bad command line; destinations
  /// of flags given before the error may already be set.
  bool parse(int argc, const char *const *argv);
  /// parse(); --help prints help() on stdout and exits 0; a FlagError is
  /// "<program>: error: <message>" on stderr and exit kExitBadCommandLine.
  void parse_or_exit(int argc, const char *const *argv);
  /// For checks across flags after parsing ("--clock=cpu needs
  /// --threads=1"): the same one line and exit status as a bad flag.
  [[noreturn]] void fail(const std::string &message) const;

  /// Whether the flag was given on the command line.
  bool is_set(const std::string &name) const;
  /// "prog [flags] FILE".
  std::string usage() const;
  /// "usage: prog [flags] FILE", the description and the flag table.
  std::string help() const;
  const std::string &program() const { return program_; }

private:
  struct Positional {
    std::string name;
    std::string *dst;
    std::string help;
    bool required;
  };
  const Flag *find(const std::string &name) const;
  std::string suggestion(const std::string &name) const;

  std::string program_;
  std::string description_;
  std::vector<Flag> flags_;
  std::vector<Positional> positionals_;
  std::vector<std::string> set_;
};

/// Writes "<program>: error: <message>\n" to stderr in one write, so the
/// line stays whole when several processes share the stream (the ranks of
/// an mpirun job, whose output mpirun forwards in the chunks it reads).
/// Flushes stdout first, as every error path of estc's programs does.
void print_error_line(const std::string &program, const std::string &message);

} // namespace flags
} // namespace estc

#endif // ESTC_LIB_SUPPORT_FLAGS_H
