//===- FlagsTest.cpp - The command-line flag parser ----------------------===//

#include "lib/Support/Flags.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

using namespace estc::flags;

namespace {

/// Owns an argv built from strings; argv[0] is "prog".
struct Args {
  explicit Args(std::initializer_list<const char *> args)
      : Args(std::vector<const char *>(args)) {}
  explicit Args(const std::vector<const char *> &args) : items({"prog"}) {
    items.insert(items.end(), args.begin(), args.end());
    for (const std::string &s : items)
      pointers.push_back(s.c_str());
  }
  int argc() const { return static_cast<int>(pointers.size()); }
  const char *const *argv() const { return pointers.data(); }

  std::vector<std::string> items;
  std::vector<const char *> pointers;
};

/// The FlagError message of parsing `args`, or "" when it parses.
std::string errorOf(FlagParser &parser, const Args &args) {
  try {
    parser.parse(args.argc(), args.argv());
  } catch (const FlagError &e) {
    return e.what();
  }
  return "";
}

struct Trainer {
  int64_t batch_size = 128;
  int threads = 4;
  double learning_rate = 0.002;
  std::string model = "convnet";
  std::string data_dir;
  bool verbose = false;
  std::optional<int64_t> train_steps;
  FlagParser parser{"trainer", "Trains a model."};

  Trainer() {
    parser.add(Flag("batch_size", &batch_size, "examples per step").min(1));
    parser.add(Flag("threads", &threads, "kernel threads").positive());
    parser.add(Flag("learning_rate", &learning_rate, "Adam's step size")
                   .positive()
                   .max(1));
    parser.add(Flag("model", &model, "the model").choices({"convnet", "mlp"}));
    parser.add(Flag("data_dir", &data_dir, "IDX files").value_name("DIR"));
    parser.add(Flag("verbose", &verbose, "log every step"));
    parser.add(Flag("train_steps", &train_steps, "the last step"));
  }
};

TEST(FlagsTest, BothValueFormsAndEveryType) {
  Trainer t;
  Args args{"--batch_size=64", "--threads", "2",
            "--learning_rate", "1e-3",      "--model=mlp",
            "--data_dir",      "/d",        "--verbose",
            "--train_steps=-5"};
  ASSERT_TRUE(t.parser.parse(args.argc(), args.argv()));
  EXPECT_EQ(t.batch_size, 64);
  EXPECT_EQ(t.threads, 2);
  EXPECT_DOUBLE_EQ(t.learning_rate, 1e-3);
  EXPECT_EQ(t.model, "mlp");
  EXPECT_EQ(t.data_dir, "/d");
  EXPECT_TRUE(t.verbose);
  EXPECT_EQ(t.train_steps, std::optional<int64_t>(-5));
  EXPECT_TRUE(t.parser.is_set("threads"));
  EXPECT_FALSE(Trainer().parser.is_set("threads"));
}

TEST(FlagsTest, DefaultsStayWhenNotGiven) {
  Trainer t;
  Args args{};
  ASSERT_TRUE(t.parser.parse(args.argc(), args.argv()));
  EXPECT_EQ(t.batch_size, 128);
  EXPECT_EQ(t.model, "convnet");
  EXPECT_FALSE(t.verbose);
  EXPECT_FALSE(t.train_steps.has_value());
}

TEST(FlagsTest, BoolForms) {
  for (auto [text, expected] :
       std::vector<std::pair<const char *, bool>>{{"--verbose=true", true},
                                                  {"--verbose=1", true},
                                                  {"--verbose=false", false},
                                                  {"--verbose=0", false},
                                                  {"-verbose", true}}) {
    Trainer t;
    t.verbose = !expected;
    Args args{text};
    ASSERT_TRUE(t.parser.parse(args.argc(), args.argv())) << text;
    EXPECT_EQ(t.verbose, expected) << text;
  }
  // A bool flag does not take the next argument as its value.
  Trainer t;
  Args args{"--verbose", "false"};
  EXPECT_EQ(errorOf(t.parser, args),
            "unexpected argument 'false' (see --help)");
}

TEST(FlagsTest, LastValueWins) {
  Trainer t;
  Args args{"--batch_size=2", "--batch_size=3"};
  ASSERT_TRUE(t.parser.parse(args.argc(), args.argv()));
  EXPECT_EQ(t.batch_size, 3);
}

TEST(FlagsTest, HelpStopsParsing) {
  for (const char *help : {"--help", "-h", "-help"}) {
    Trainer t;
    Args args{help, "--bogus"};
    EXPECT_FALSE(t.parser.parse(args.argc(), args.argv())) << help;
  }
}

TEST(FlagsTest, OneLineErrorsNameTheFlag) {
  struct Case {
    std::vector<const char *> args;
    const char *error;
  };
  for (const Case &c : std::vector<Case>{
           {{"--frobnicate"}, "unknown flag '--frobnicate' (see --help)"},
           {{"--frobnicate=3"}, "unknown flag '--frobnicate' (see --help)"},
           {{"--batch=3"},
            "unknown flag '--batch' (did you mean --batch_size?)"},
           {{"--thread=3"},
            "unknown flag '--thread' (did you mean --threads?)"},
           {{"--batch_size"},
            "flag --batch_size needs a value (--batch_size=N)"},
           {{"--batch_size", "--verbose"},
            "flag --batch_size needs a value (--batch_size=N)"},
           {{"--batch_size="},
            "flag --batch_size needs a value (--batch_size=N)"},
           {{"--batch_size=12x"}, "--batch_size=12x: expected an integer"},
           {{"--batch_size=1.5"}, "--batch_size=1.5: expected an integer"},
           {{"--batch_size=0"}, "--batch_size=0: must be at least 1"},
           {{"--batch_size=99999999999999999999"},
            "--batch_size=99999999999999999999: integer out of range"},
           {{"--threads=3000000000"},
            "--threads=3000000000: integer out of range"},
           {{"--threads=0"}, "--threads=0: must be positive"},
           {{"--learning_rate=fast"},
            "--learning_rate=fast: expected a number"},
           {{"--learning_rate=nan"}, "--learning_rate=nan: expected a number"},
           {{"--learning_rate=2"}, "--learning_rate=2: must be at most 1"},
           {{"--model=resnet"}, "--model=resnet: must be one of convnet, mlp"},
           {{"--verbose=maybe"}, "--verbose=maybe: expected true or false"},
           {{"steps"}, "unexpected argument 'steps' (see --help)"},
           {{"--", "--verbose"},
            "unexpected argument '--verbose' (see --help)"},
       }) {
    Trainer t;
    Args args(c.args);
    EXPECT_EQ(errorOf(t.parser, args), c.error) << args.items[1];
  }
}

TEST(FlagsTest, Positionals) {
  bool verify = false;
  std::optional<std::string> tensor;
  std::string input, output;
  FlagParser parser("ckpt", "");
  parser.add(Flag("verify", &verify, "check"));
  parser.add(Flag("tensor", &tensor, "one tensor").value_name("NAME"));
  parser.positional("FILE", &input, "a checkpoint");
  parser.positional("OUT", &output, "where", /*required=*/false);
  EXPECT_EQ(parser.usage(), "ckpt [flags] FILE [OUT]");

  Args both{"a", "--tensor", "-w", "b"};
  ASSERT_TRUE(parser.parse(both.argc(), both.argv()));
  EXPECT_EQ(input, "a");
  EXPECT_EQ(output, "b");
  EXPECT_EQ(tensor, std::optional<std::string>("-w"));

  EXPECT_EQ(errorOf(parser, Args{"a", "b", "c"}),
            "more than one OUT given ('b' and 'c')");
  EXPECT_EQ(errorOf(parser, Args{"--verify"}),
            "missing FILE (usage: ckpt [flags] FILE [OUT])");
  input.clear();
  Args dash{"--", "-x"};
  ASSERT_TRUE(parser.parse(dash.argc(), dash.argv()));
  EXPECT_EQ(input, "-x");
}

TEST(FlagsTest, ShortFlagsAndRequired) {
  std::string output, model;
  FlagParser parser("models", "");
  parser.add(Flag("o", &output, "output file").value_name("FILE").required());
  parser.add(Flag("model", &model, "name").required());
  Args args{"-o", "x.pb", "--model=mlp"};
  ASSERT_TRUE(parser.parse(args.argc(), args.argv()));
  EXPECT_EQ(output, "x.pb");
  Args equals{"-o=y.pb", "--model=mlp"};
  ASSERT_TRUE(parser.parse(equals.argc(), equals.argv()));
  EXPECT_EQ(output, "y.pb");
  EXPECT_EQ(errorOf(parser, Args{"--model=mlp"}),
            "missing -o FILE (see --help)");
  EXPECT_EQ(errorOf(parser, Args{"-o", "x"}),
            "missing --model=VALUE (see --help)");
  EXPECT_EQ(errorOf(parser, Args{"-o", ""}), "flag -o needs a value (-o FILE)");
  // Suggestions: a prefix either way, or 2 edits between long names.
  EXPECT_EQ(errorOf(parser, Args{"--output=x"}),
            "unknown flag '--output' (did you mean -o?)");
  EXPECT_EQ(errorOf(parser, Args{"--modle=x"}),
            "unknown flag '--modle' (did you mean --model?)");
  EXPECT_EQ(errorOf(parser, Args{"-x"}), "unknown flag '-x' (see --help)");
}

TEST(FlagsTest, DeclaringAFlagTwiceIsAProgrammingError) {
  int a = 0;
  FlagParser parser("p", "");
  parser.add(Flag("a", &a, ""));
  EXPECT_THROW(parser.add(Flag("a", &a, "")), std::logic_error);
  EXPECT_THROW(parser.add(Flag("help", &a, "")), std::logic_error);
}

TEST(FlagsTest, HelpIsGeneratedFromTheDeclarations) {
  Trainer t;
  t.parser.positional("OUT", &t.data_dir, "where to write");
  EXPECT_EQ(t.parser.help(),
            "usage: trainer [flags] OUT\n"
            "Trains a model.\n"
            "\n"
            "arguments:\n"
            "  OUT                       where to write\n"
            "\n"
            "flags:\n"
            "  --batch_size=N            examples per step (default: 128)\n"
            "  --threads=N               kernel threads (default: 4)\n"
            "  --learning_rate=X         Adam's step size (default: 0.002)\n"
            "  --model=convnet|mlp       the model (default: convnet)\n"
            "  --data_dir=DIR            IDX files\n"
            "  --verbose                 log every step\n"
            "  --train_steps=N           the last step\n"
            "  --help                    print this help and exit\n"
            "\n"
            "exit status: 0 success, 1 the run failed, 2 a bad command line "
            "(one error line naming the flag)\n");
}

TEST(FlagsTest, LongSynopsisAndMultiLineHelp) {
  int64_t steps = 500;
  FlagParser parser("p", "");
  parser.add(
      Flag("save_checkpoints_steps", &steps, "checkpoint every N\nsteps"));
  parser.add(Flag("seed", &steps, "the seed").default_text("the time"));
  EXPECT_NE(
      parser.help().find("  --save_checkpoints_steps=N\n"
                         "                            checkpoint every N\n"
                         "                            steps (default: "
                         "500)\n"),
      std::string::npos)
      << parser.help();
  EXPECT_NE(parser.help().find("the seed (default: the time)"),
            std::string::npos);
}

TEST(FlagsDeathTest, ParseOrExitPrintsOneLineAndExitsTwo) {
  Trainer t;
  Args args{"--batch_size=0"};
  EXPECT_EXIT(t.parser.parse_or_exit(args.argc(), args.argv()),
              testing::ExitedWithCode(kExitBadCommandLine),
              "^trainer: error: --batch_size=0: must be at least 1\n$");
  EXPECT_EXIT(t.parser.fail("--clock=cpu needs --threads=1"),
              testing::ExitedWithCode(2),
              "^trainer: error: --clock=cpu needs --threads=1\n$");
  Args help{"--help"};
  EXPECT_EXIT(t.parser.parse_or_exit(help.argc(), help.argv()),
              testing::ExitedWithCode(0), "^$");
}

} // namespace
