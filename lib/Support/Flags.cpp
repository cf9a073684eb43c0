//===- Flags.cpp - Command-line flags for estc's tools and examples ------===//

#include "lib/Support/Flags.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>

namespace estc {
namespace flags {

namespace {

std::string formatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // The shortest text that reads back as v.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[64];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v)
      return shorter;
  }
  return buf;
}

std::string join(const std::vector<std::string> &items, const char *sep) {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

// Edit distance, for "did you mean" on unknown flags.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// "-o" for one-letter names, "--batch_size" for the rest.
std::string dashed(const std::string &name) {
  return (name.size() == 1 ? "-" : "--") + name;
}

} // namespace

// --- Flag --------------------------------------------------------------------

#define ESTC_FLAG_CONSTRUCTOR(Type)                                            \
  Flag::Flag(std::string name, Type *dst, std::string help)                    \
      : name_(std::move(name)), dst_(dst), help_(std::move(help)) {}
ESTC_FLAG_CONSTRUCTOR(bool)
ESTC_FLAG_CONSTRUCTOR(int)
ESTC_FLAG_CONSTRUCTOR(int64_t)
ESTC_FLAG_CONSTRUCTOR(double)
ESTC_FLAG_CONSTRUCTOR(std::string)
ESTC_FLAG_CONSTRUCTOR(std::optional<int64_t>)
ESTC_FLAG_CONSTRUCTOR(std::optional<double>)
ESTC_FLAG_CONSTRUCTOR(std::optional<std::string>)
#undef ESTC_FLAG_CONSTRUCTOR

Flag &Flag::value_name(std::string name) {
  valueName_ = std::move(name);
  return *this;
}
Flag &Flag::default_text(std::string text) {
  defaultText_ = std::move(text);
  return *this;
}
Flag &Flag::min(double lo) {
  min_ = lo;
  return *this;
}
Flag &Flag::max(double hi) {
  max_ = hi;
  return *this;
}
Flag &Flag::positive() {
  positive_ = true;
  return *this;
}
Flag &Flag::choices(std::vector<std::string> values) {
  choices_ = std::move(values);
  return *this;
}
Flag &Flag::required() {
  required_ = true;
  return *this;
}

std::string Flag::synopsis() const {
  if (is_bool())
    return dashed(name_);
  std::string value = valueName_;
  if (value.empty()) {
    if (!choices_.empty())
      value = join(choices_, "|");
    else if (std::holds_alternative<int *>(dst_) ||
             std::holds_alternative<int64_t *>(dst_) ||
             std::holds_alternative<std::optional<int64_t> *>(dst_))
      value = "N";
    else if (std::holds_alternative<double *>(dst_) ||
             std::holds_alternative<std::optional<double> *>(dst_))
      value = "X";
    else
      value = "VALUE";
  }
  return dashed(name_) + (name_.size() == 1 ? " " : "=") + value;
}

std::string Flag::description() const {
  std::string def = defaultText_;
  if (def.empty()) {
    if (auto *b = std::get_if<bool *>(&dst_))
      def = **b ? "true" : "";
    else if (auto *i = std::get_if<int *>(&dst_))
      def = std::to_string(**i);
    else if (auto *l = std::get_if<int64_t *>(&dst_))
      def = std::to_string(**l);
    else if (auto *d = std::get_if<double *>(&dst_))
      def = formatNumber(**d);
    else if (auto *s = std::get_if<std::string *>(&dst_))
      def = **s;
  }
  std::string out = help_;
  if (required_)
    out += " (required)";
  else if (!def.empty())
    out += " (default: " + def + ")";
  return out;
}

void Flag::checkRange(double v, const std::string &text) const {
  std::string flag = dashed(name_) + "=" + text;
  if (positive_ && !(v > 0))
    throw FlagError(flag + ": must be positive");
  if (min_ && v < *min_)
    throw FlagError(flag + ": must be at least " + formatNumber(*min_));
  if (max_ && v > *max_)
    throw FlagError(flag + ": must be at most " + formatNumber(*max_));
}

void Flag::set(const std::string &text) const {
  std::string flag = dashed(name_) + "=" + text;
  if (auto *b = std::get_if<bool *>(&dst_)) {
    if (text == "true" || text == "1")
      **b = true;
    else if (text == "false" || text == "0")
      **b = false;
    else
      throw FlagError(flag + ": expected true or false");
    return;
  }
  if (text.empty())
    throw FlagError("flag " + dashed(name_) + " needs a value (" + synopsis() +
                    ")");

  auto parseInteger = [&](int64_t lo, int64_t hi) {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0' || std::isspace(static_cast<unsigned char>(text[0])))
      throw FlagError(flag + ": expected an integer");
    if (errno == ERANGE || v < lo || v > hi)
      throw FlagError(flag + ": integer out of range");
    checkRange(static_cast<double>(v), text);
    return static_cast<int64_t>(v);
  };
  auto parseDouble = [&]() {
    char *end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (*end != '\0' || std::isspace(static_cast<unsigned char>(text[0])) ||
        !std::isfinite(v))
      throw FlagError(flag + ": expected a number");
    checkRange(v, text);
    return v;
  };
  auto checkChoice = [&]() {
    if (!choices_.empty() &&
        std::find(choices_.begin(), choices_.end(), text) == choices_.end())
      throw FlagError(flag + ": must be one of " + join(choices_, ", "));
  };

  constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  if (auto *i = std::get_if<int *>(&dst_))
    **i = static_cast<int>(parseInteger(std::numeric_limits<int>::min(),
                                        std::numeric_limits<int>::max()));
  else if (auto *l = std::get_if<int64_t *>(&dst_))
    **l = parseInteger(kInt64Min, kInt64Max);
  else if (auto *ol = std::get_if<std::optional<int64_t> *>(&dst_))
    **ol = parseInteger(kInt64Min, kInt64Max);
  else if (auto *d = std::get_if<double *>(&dst_))
    **d = parseDouble();
  else if (auto *od = std::get_if<std::optional<double> *>(&dst_))
    **od = parseDouble();
  else if (auto *s = std::get_if<std::string *>(&dst_)) {
    checkChoice();
    **s = text;
  } else if (auto *os = std::get_if<std::optional<std::string> *>(&dst_)) {
    checkChoice();
    **os = text;
  }
}

// --- FlagParser
// ----------------------------------------------------------------

FlagParser::FlagParser(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

FlagParser &FlagParser::add(Flag flag) {
  if (flag.name().empty() || flag.name() == "help" || flag.name() == "h" ||
      find(flag.name()))
    throw std::logic_error("FlagParser: flag name '" + flag.name() +
                           "' is empty, reserved or declared twice");
  flags_.push_back(std::move(flag));
  return *this;
}

FlagParser &FlagParser::positional(std::string name, std::string *dst,
                                   std::string help, bool required) {
  positionals_.push_back({std::move(name), dst, std::move(help), required});
  return *this;
}

const Flag *FlagParser::find(const std::string &name) const {
  for (const Flag &f : flags_)
    if (f.name() == name)
      return &f;
  return nullptr;
}

bool FlagParser::is_set(const std::string &name) const {
  return std::find(set_.begin(), set_.end(), name) != set_.end();
}

std::string FlagParser::suggestion(const std::string &name) const {
  const Flag *best = nullptr;
  size_t bestDistance = 3; // at most 2 edits, or a prefix
  for (const Flag &f : flags_) {
    bool prefix = f.name().rfind(name, 0) == 0 || name.rfind(f.name(), 0) == 0;
    bool longNames = name.size() >= 4 && f.name().size() >= 4;
    size_t d = prefix      ? 1
               : longNames ? editDistance(name, f.name())
                           : bestDistance;
    if (d < bestDistance) {
      best = &f;
      bestDistance = d;
    }
  }
  return best ? " (did you mean " + dashed(best->name()) + "?)"
              : " (see --help)";
}

bool FlagParser::parse(int argc, const char *const *argv) {
  set_.clear();
  size_t nextPositional = 0;
  auto addPositional = [&](const std::string &arg) {
    if (nextPositional >= positionals_.size()) {
      if (positionals_.empty())
        throw FlagError("unexpected argument '" + arg + "' (see --help)");
      const Positional &last = positionals_.back();
      throw FlagError("more than one " + last.name + " given ('" + *last.dst +
                      "' and '" + arg + "')");
    }
    *positionals_[nextPositional++].dst = arg;
  };

  bool onlyPositional = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (onlyPositional || arg.size() < 2 || arg[0] != '-') {
      addPositional(arg);
      continue;
    }
    if (arg == "--") {
      onlyPositional = true;
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    if (name == "help" || name == "h")
      return false;
    const Flag *flag = find(name);
    if (!flag)
      throw FlagError("unknown flag '" + arg.substr(0, arg.find('=')) + "'" +
                      suggestion(name));
    if (eq != std::string::npos) {
      flag->set(body.substr(eq + 1));
    } else if (flag->is_bool()) {
      flag->set("true");
    } else {
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
        throw FlagError("flag " + dashed(name) + " needs a value (" +
                        flag->synopsis() + ")");
      flag->set(argv[++i]);
    }
    set_.push_back(name);
  }

  for (size_t p = nextPositional; p < positionals_.size(); ++p)
    if (positionals_[p].required)
      throw FlagError("missing " + positionals_[p].name +
                      " (usage: " + usage() + ")");
  for (const Flag &f : flags_)
    if (f.required_ && !is_set(f.name()))
      throw FlagError("missing " + f.synopsis() + " (see --help)");
  return true;
}

void FlagParser::parse_or_exit(int argc, const char *const *argv) {
  try {
    if (!parse(argc, argv)) {
      std::cout << help();
      std::cout.flush();
      std::exit(0);
    }
  } catch (const FlagError &e) {
    fail(e.what());
  }
}

void print_error_line(const std::string &program, const std::string &message) {
  std::cout.flush();
  std::string line = program + ": error: " + message + "\n";
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
  std::cerr.flush();
}

void FlagParser::fail(const std::string &message) const {
  print_error_line(program_, message);
  std::exit(kExitBadCommandLine);
}

std::string FlagParser::usage() const {
  std::string out = program_;
  if (!flags_.empty())
    out += " [flags]";
  for (const Positional &p : positionals_)
    out += " " + (p.required ? p.name : "[" + p.name + "]");
  return out;
}

std::string FlagParser::help() const {
  std::ostringstream os;
  os << "usage: " << usage() << "\n";
  if (!description_.empty())
    os << description_ << "\n";

  // Two columns; a left column wider than 26 characters puts the help on
  // the next line.
  constexpr size_t kColumn = 28;
  auto row = [&](const std::string &left, const std::string &right) {
    os << "  " << left;
    if (left.size() + 2 >= kColumn)
      os << "\n" << std::string(kColumn, ' ');
    else
      os << std::string(kColumn - 2 - left.size(), ' ');
    // Continuation lines of a multi-line help are indented too.
    for (char c : right) {
      os << c;
      if (c == '\n')
        os << std::string(kColumn, ' ');
    }
    os << "\n";
  };
  if (!positionals_.empty()) {
    os << "\narguments:\n";
    for (const Positional &p : positionals_)
      row(p.name, p.help);
  }
  os << "\nflags:\n";
  for (const Flag &f : flags_)
    row(f.synopsis(), f.description());
  row("--help", "print this help and exit");
  os << "\nexit status: 0 success, 1 the run failed, " << kExitBadCommandLine
     << " a bad command line (one error line naming the flag)\n";
  return os.str();
}

} // namespace flags
} // namespace estc
