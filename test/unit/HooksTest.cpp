//===- HooksTest.cpp - The built-in SessionRunHooks ----------------------===//
//
// The loop every Estimator call runs (MonitoredSession: call order, per-hook
// fetches, the caller's fetches, input running out, request_stop,
// exceptions), and every hook under it: FakeLoop drives the real
// MonitoredSession over FakeSession and a hand-written step ("global_step"
// after the step's update). Time is a counter the step advances by a fixed
// amount.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "estimator/Hooks.h"
#include "estimator/Logging.h"
#include "estimator/MonitoredSession.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <unistd.h>

using namespace estc;
using namespace estc::estimator;
namespace fs = std::filesystem;

namespace {

class FakeSession : public Session {
public:
  int64_t step = 0;
  VariableMap vars{{"w", TensorValue::of<float>({2}, {0.f, 0.f})}};
  std::string dir;

  int64_t global_step() const override { return step; }
  std::vector<std::string> variable_names() const override {
    std::vector<std::string> names;
    for (const auto &entry : vars)
      names.push_back(entry.first);
    names.push_back("global_step");
    return names;
  }
  TensorValue variable_value(const std::string &name) const override {
    if (name == "global_step")
      return TensorValue::of<int64_t>({}, {step});
    auto it = vars.find(name);
    if (it == vars.end())
      throw std::invalid_argument("unknown variable '" + name + "'");
    return it->second;
  }
  VariableMap checkpoint_variables() const override {
    VariableMap out = vars;
    out["global_step"] = TensorValue::of<int64_t>({}, {step});
    return out;
  }
  const std::string &model_dir() const override { return dir; }
};

/// The Estimator's loop (the real MonitoredSession) over FakeSession and a
/// hand-written step: a train function whose outputs at each step come from
/// `outputs(step)` (the step after the update), one batch per step while
/// `batches` last, at most `maxSteps` steps.
struct FakeLoop {
  FakeSession session;
  double now = 1000;        // the injected clock
  double secsPerStep = 0.5; // advanced by every step
  int64_t batches = std::numeric_limits<int64_t>::max();
  int64_t maxSteps = 10; // steps in this call
  bool incrementStep = true;
  std::function<std::map<std::string, TensorValue>(int64_t)> outputs =
      [](int64_t step) {
        return std::map<std::string, TensorValue>{
            {"loss", TensorValue::of<float>({}, {1.0f / float(step)})}};
      };
  // Recorded: the fetches of every hook at every step (by hook index).
  std::vector<std::vector<std::vector<std::string>>> fetches;
  int64_t stepsRun = 0;
  bool ended = false;

  Clock clock() {
    return [this] { return now; };
  }

  /// The step: updates the global step, w and the clock.
  struct Step : StepRunner {
    FakeLoop &loop;
    int64_t consumed = 0;
    std::map<std::string, TensorValue> outs;
    explicit Step(FakeLoop &loop) : loop(loop) {}
    std::string function_name() const override { return "train"; }
    bool next_batch() override {
      if (consumed == loop.batches)
        return false;
      ++consumed;
      return true;
    }
    void run(const std::vector<std::string> &names) override {
      FakeSession &s = loop.session;
      auto next = loop.outputs(s.step + (loop.incrementStep ? 1 : 0));
      for (const auto &name : names)
        if (name != "global_step" && !next.count(name) && !s.vars.count(name))
          throw std::invalid_argument("fetch '" + name +
                                      "' is not an output of function 'train'");
      if (loop.incrementStep)
        ++s.step;
      s.vars["w"] =
          TensorValue::of<float>({2}, {float(s.step), -float(s.step)});
      loop.now += loop.secsPerStep;
      ++loop.stepsRun;
      outs = std::move(next);
    }
    TensorValue value(const std::string &name) override {
      if (name == "global_step")
        return TensorValue::of<int64_t>({}, {loop.session.step});
      if (auto it = outs.find(name); it != outs.end())
        return it->second;
      return loop.session.vars.at(name);
    }
  };

  /// Forwards every call to `hook`, recording its fetches.
  struct Recorder : SessionRunHook {
    HookPtr hook;
    FakeLoop &loop;
    size_t index;
    Recorder(HookPtr hook, FakeLoop &loop, size_t index)
        : hook(std::move(hook)), loop(loop), index(index) {}
    std::vector<std::string> graph_fetches() const override {
      return hook->graph_fetches();
    }
    void begin() override { hook->begin(); }
    void after_create_session(Session &s) override {
      hook->after_create_session(s);
    }
    SessionRunArgs before_run(SessionRunContext &context) override {
      SessionRunArgs args = hook->before_run(context);
      if (index == 0)
        loop.fetches.emplace_back();
      loop.fetches.back().push_back(args.fetches);
      return args;
    }
    void after_run(SessionRunContext &context,
                   const SessionRunValues &values) override {
      hook->after_run(context, values);
    }
    void end(Session &s) override { hook->end(s); }
  };

  void run(const Hooks &hooks) {
    ended = false;
    Hooks recorded;
    for (size_t i = 0; i < hooks.size(); ++i)
      recorded.push_back(std::make_shared<Recorder>(hooks[i], *this, i));
    Step step(*this);
    MonitoredSession loop(session, step, recorded, nullptr);
    for (int64_t i = 0; i < maxSteps && !loop.should_stop(); ++i)
      if (!loop.run())
        break; // out of input: no after_run, end() still runs
    loop.close();
    ended = true;
  }
};

/// Captures the log lines while alive.
struct LogCapture {
  std::vector<std::string> lines;
  ScopedLogSink scope{[this](const std::string &s) { lines.push_back(s); }};
  std::vector<std::string> matching(const std::string &needle) const {
    std::vector<std::string> out;
    for (const auto &l : lines)
      if (l.find(needle) != std::string::npos)
        out.push_back(l);
    return out;
  }
};

using estc::estimator::tiny::errorOf;

class HooksTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir =
        (fs::temp_directory_path() /
         ("estc-hooks-test-" + std::to_string(::getpid()) + "-" + info->name()))
            .string();
    fs::remove_all(dir);
  }
  void TearDown() override {
    SummaryWriterCache::clear();
    fs::remove_all(dir);
  }
  /// (step, tag, value) of every scalar in the event files of `logdir`.
  std::vector<std::tuple<int64_t, std::string, float>>
  scalars(const std::string &logdir) {
    std::vector<std::tuple<int64_t, std::string, float>> out;
    for (const auto &file : summary::list_event_files(logdir))
      for (const auto &event : summary::read_events(file))
        if (event.has_summary())
          for (const auto &v : event.summary().value())
            out.emplace_back(event.step(), v.tag(), v.simple_value());
    return out;
  }
  std::string dir;
};

//===----------------------------------------------------------------------===//
// SecondOrStepTimer, format_tensor
//===----------------------------------------------------------------------===//

TEST(SecondOrStepTimer, EverySteps) {
  SecondOrStepTimer timer(std::nullopt, 3);
  EXPECT_TRUE(timer.should_trigger_for_step(5)); // the first step asked
  EXPECT_FALSE(timer.update_last_triggered_step(5).has_value());
  EXPECT_FALSE(timer.should_trigger_for_step(5)); // never twice
  EXPECT_FALSE(timer.should_trigger_for_step(7));
  EXPECT_TRUE(timer.should_trigger_for_step(8));
  auto elapsed = timer.update_last_triggered_step(9);
  ASSERT_TRUE(elapsed.has_value());
  EXPECT_EQ(elapsed->second, 4);
  EXPECT_EQ(timer.last_triggered_step(), 9);
  timer.reset();
  EXPECT_FALSE(timer.last_triggered_step().has_value());
  EXPECT_TRUE(timer.should_trigger_for_step(9));
}

TEST(SecondOrStepTimer, EverySecsWithInjectedClock) {
  double now = 10;
  SecondOrStepTimer timer(2.0, std::nullopt, [&] { return now; });
  timer.update_last_triggered_step(1);
  now = 11.9;
  EXPECT_FALSE(timer.should_trigger_for_step(100));
  now = 12;
  EXPECT_TRUE(timer.should_trigger_for_step(2));
  auto elapsed = timer.update_last_triggered_step(2);
  ASSERT_TRUE(elapsed.has_value());
  EXPECT_DOUBLE_EQ(elapsed->first, 2.0);
  EXPECT_EQ(elapsed->second, 1);
}

TEST(SecondOrStepTimer, BadArguments) {
  EXPECT_EQ(errorOf([] { SecondOrStepTimer(std::nullopt, std::nullopt); }),
            "SecondOrStepTimer: exactly one of every_secs and every_steps "
            "must be given");
  EXPECT_EQ(errorOf([] { SecondOrStepTimer(1.0, 1); }),
            "SecondOrStepTimer: exactly one of every_secs and every_steps "
            "must be given");
  EXPECT_EQ(errorOf([] { SecondOrStepTimer(std::nullopt, 0); }),
            "SecondOrStepTimer: every_steps must be > 0, got 0");
  EXPECT_EQ(errorOf([] { SecondOrStepTimer(-1.0, std::nullopt); }),
            "SecondOrStepTimer: every_secs must be > 0, got -1.0");
}

TEST(FormatTensor, NumpyStyle) {
  EXPECT_EQ(format_tensor(TensorValue::of<float>({}, {0.35f})), "0.35");
  EXPECT_EQ(format_tensor(TensorValue::of<float>({}, {2.f})), "2.0");
  EXPECT_EQ(format_tensor(TensorValue::of<double>({}, {0.1})), "0.1");
  EXPECT_EQ(format_tensor(TensorValue::of<float>({}, {std::nanf("")})), "nan");
  EXPECT_EQ(format_tensor(TensorValue::of<int64_t>({}, {200})), "200");
  EXPECT_EQ(format_tensor(TensorValue::of<bool>({2}, {true, false})),
            "[True False]");
  EXPECT_EQ(format_tensor(TensorValue::of<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6})),
            "[[1 2 3] [4 5 6]]");
  EXPECT_EQ(format_tensor(TensorValue::of<int32_t>({2, 1, 2}, {1, 2, 3, 4})),
            "[[[1 2]] [[3 4]]]");
  EXPECT_EQ(format_tensor(TensorValue::of<float>({0, 3}, {})), "[[]]");
  std::vector<int32_t> many(2000);
  for (int i = 0; i < 2000; ++i)
    many[i] = i;
  EXPECT_EQ(format_tensor(TensorValue::of<int32_t>({2000}, many)),
            "[0 1 2 ... 1997 1998 1999]");
}

TEST(GraphFetches, TensorsPrefixNamesGraphNodes) {
  EXPECT_EQ(graph_fetches_of({"loss", "tensors/dense/Relu", "tensors/", "w"}),
            (std::vector<std::string>{"dense/Relu"}));
  LoggingTensorHook::Options o;
  o.every_n_iter = 1;
  EXPECT_EQ(LoggingTensorHook({"loss", "tensors/a/b"}, o).graph_fetches(),
            (std::vector<std::string>{"a/b"}));
  EXPECT_EQ(NanTensorHook("tensors/loss").graph_fetches(),
            (std::vector<std::string>{"loss"}));
  SummarySaverHook::Options s;
  s.save_steps = 1;
  s.output_dir = "/nonexistent";
  EXPECT_EQ(
      SummarySaverHook(std::map<std::string, std::string>{{"act", "tensors/x"},
                                                          {"loss", "loss"}},
                       s)
          .graph_fetches(),
      (std::vector<std::string>{"x"}));
  EXPECT_EQ(FinalOpsHook({"w", "tensors/y"}).graph_fetches(),
            (std::vector<std::string>{"y"}));
}

//===----------------------------------------------------------------------===//
// MonitoredSession: the contract of SessionRunHook.h
//===----------------------------------------------------------------------===//

struct RecordingHook : SessionRunHook {
  std::vector<std::string> *calls;
  std::string name;
  std::vector<std::string> wants; // fetched in every step
  std::optional<int64_t> stopAt;  // request_stop at this global step
  RecordingHook(std::vector<std::string> *calls, std::string name)
      : calls(calls), name(std::move(name)) {}
  void begin() override { calls->push_back(name + ".begin"); }
  void after_create_session(Session &) override {
    calls->push_back(name + ".after_create_session");
  }
  SessionRunArgs before_run(SessionRunContext &) override {
    calls->push_back(name + ".before_run");
    return {wants};
  }
  void after_run(SessionRunContext &context,
                 const SessionRunValues &values) override {
    std::string got;
    for (const auto &[fetch, value] : values.results)
      got += " " + fetch + "=" + format_tensor(value);
    calls->push_back(name + ".after_run" + got);
    if (stopAt && context.session().global_step() >= *stopAt)
      context.request_stop();
  }
  void end(Session &) override { calls->push_back(name + ".end"); }
};

TEST(MonitoredSession, CallOrderAndInputRunningOut) {
  std::vector<std::string> calls;
  FakeLoop loop;
  loop.batches = 1;
  loop.maxSteps = 5;
  loop.run({std::make_shared<RecordingHook>(&calls, "a"),
            std::make_shared<RecordingHook>(&calls, "b")});
  // The second step finds no batch: it does not run, no after_run; end()
  // is called.
  EXPECT_EQ(calls, (std::vector<std::string>{
                       "a.begin", "b.begin", "a.after_create_session",
                       "b.after_create_session", "a.before_run", "b.before_run",
                       "a.after_run", "b.after_run", "a.before_run",
                       "b.before_run", "a.end", "b.end"}));
  EXPECT_EQ(loop.stepsRun, 1);
}

TEST(MonitoredSession, CreatesTheSessionBetweenBeginAndAfterCreateSession) {
  std::vector<std::string> calls;
  FakeSession session;
  FakeLoop fake;
  FakeLoop::Step step(fake);
  MonitoredSession loop(session, step,
                        {std::make_shared<RecordingHook>(&calls, "a")},
                        [&] { calls.push_back("create_session"); });
  EXPECT_EQ(calls, (std::vector<std::string>{"a.begin", "create_session",
                                             "a.after_create_session"}));
}

TEST(MonitoredSession, StopRequestEndsTheLoopAfterTheStepsAfterRuns) {
  std::vector<std::string> calls;
  FakeLoop fake;
  FakeLoop::Step step(fake);
  auto a = std::make_shared<RecordingHook>(&calls, "a");
  a->stopAt = 2;
  auto b = std::make_shared<RecordingHook>(&calls, "b");
  MonitoredSession loop(fake.session, step, {a, b}, nullptr);
  int steps = 0;
  while (!loop.should_stop() && loop.run())
    ++steps;
  EXPECT_EQ(steps, 2);
  EXPECT_EQ(loop.steps_run(), 2);
  EXPECT_EQ(calls.back(), "b.after_run"); // b still ran after a's request
  EXPECT_EQ(errorOf([&] { loop.run(); }),
            "MonitoredSession: run() after the loop stopped");
  loop.close();
  loop.close(); // once
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "a.end"), 1);
}

TEST(MonitoredSession, HooksGetTheirFetchesTheCallerGetsItsOwn) {
  std::vector<std::string> calls;
  FakeLoop fake;
  FakeLoop::Step step(fake);
  auto a = std::make_shared<RecordingHook>(&calls, "a");
  a->wants = {"global_step", "loss"};
  auto b = std::make_shared<RecordingHook>(&calls, "b");
  b->wants = {"w"};
  MonitoredSession loop(fake.session, step, {a, b}, nullptr);
  std::optional<FetchValues> out = loop.run({"loss", "w"});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->size(), 2u);
  EXPECT_EQ(format_tensor(out->at("w")), "[1.0 -1.0]");
  EXPECT_EQ(calls[6], "a.after_run global_step=1 loss=1.0");
  EXPECT_EQ(calls[7], "b.after_run w=[1.0 -1.0]");

  // An unknown fetch: one line, before the step runs.
  b->wants = {"nope"};
  EXPECT_EQ(errorOf([&] { loop.run(); }),
            "fetch 'nope' is not an output of function 'train'");
  EXPECT_EQ(fake.stepsRun, 1);
}

TEST(MonitoredSession, RunStepKeepsTheValuesRunReturns) {
  FakeLoop fake;
  FakeLoop::Step step(fake);
  std::vector<std::string> calls;
  auto a = std::make_shared<RecordingHook>(&calls, "a");
  a->wants = {"global_step"};
  MonitoredSession loop(fake.session, step, {a}, nullptr);
  ASSERT_TRUE(loop.run_step({"loss", "w"}));
  EXPECT_EQ(format_tensor(loop.value("loss")), "1.0");
  EXPECT_EQ(format_tensor(loop.value("w")), "[1.0 -1.0]");
  std::optional<FetchValues> out = loop.run({"loss", "w"});
  ASSERT_TRUE(out);
  EXPECT_EQ(format_tensor(out->at("loss")), format_tensor(loop.value("loss")));
  EXPECT_EQ(format_tensor(loop.value("w")), "[2.0 -2.0]");
  EXPECT_EQ(calls.back(), "a.after_run global_step=2");
  // Another step's own fetches replace the last ones.
  ASSERT_TRUE(loop.run_step({"w"}));
  EXPECT_EQ(format_tensor(loop.value("w")), "[3.0 -3.0]");
  EXPECT_THROW(loop.value("loss"), std::out_of_range);
  // The input ran out: no step, false, as run()'s nullopt.
  fake.batches = step.consumed;
  EXPECT_FALSE(loop.run_step({"w"}));
  EXPECT_TRUE(loop.should_stop());
}

TEST(MonitoredSession, FetchesThatChangeFromStepToStep) {
  // MonitoredSession keeps the fetch lists and values of the last step; a
  // step that asks for others must get exactly its own, fresh.
  std::vector<std::string> calls;
  FakeLoop fake;
  FakeLoop::Step step(fake);
  auto a = std::make_shared<RecordingHook>(&calls, "a");
  auto b = std::make_shared<RecordingHook>(&calls, "b");
  b->wants = {"global_step"};
  struct PhaseNames : SessionRunHook {
    std::vector<std::string> names;
    void after_run(SessionRunContext &, const SessionRunValues &v) override {
      for (const StepPhase &p : v.phases)
        names.push_back(p.name);
    }
  };
  auto phases = std::make_shared<PhaseNames>();
  MonitoredSession loop(fake.session, step, {a, b, phases}, nullptr);
  struct Want {
    std::vector<std::string> a, caller;
  };
  const std::vector<Want> wants = {
      {{"loss"}, {}}, {{"loss"}, {}},      {{"loss", "w"}, {"loss"}},
      {{}, {"w"}},    {{"w", "w"}, {"w"}}, {{"loss"}, {}}};
  std::vector<std::string> outs;
  for (const Want &w : wants) {
    a->wants = w.a;
    std::optional<FetchValues> out = loop.run(w.caller);
    ASSERT_TRUE(out);
    std::string got;
    for (const auto &[fetch, value] : *out)
      got += " " + fetch + "=" + format_tensor(value);
    outs.push_back(got);
  }
  std::vector<std::string> afterRuns;
  for (const std::string &c : calls)
    if (c.find(".after_run") != std::string::npos)
      afterRuns.push_back(c);
  EXPECT_EQ(afterRuns,
            (std::vector<std::string>{
                "a.after_run loss=1.0", "b.after_run global_step=1",
                "a.after_run loss=0.5", "b.after_run global_step=2",
                "a.after_run loss=0.33333334 w=[3.0 -3.0]",
                "b.after_run global_step=3", "a.after_run",
                "b.after_run global_step=4", "a.after_run w=[5.0 -5.0]",
                "b.after_run global_step=5", "a.after_run loss=0.16666667",
                "b.after_run global_step=6"}));
  EXPECT_EQ(outs,
            (std::vector<std::string>{"", "", " loss=0.33333334",
                                      " w=[4.0 -4.0]", " w=[5.0 -5.0]", ""}));
  ASSERT_EQ(phases->names.size(), 18u);
  for (size_t i = 0; i < phases->names.size(); i += 3)
    EXPECT_EQ(std::vector<std::string>(phases->names.begin() + i,
                                       phases->names.begin() + i + 3),
              (std::vector<std::string>{"before_run", "input", "run:train"}));
}

TEST(MonitoredSession, AnExceptionPropagatesAndSkipsEnd) {
  struct Throws : SessionRunHook {
    void after_run(SessionRunContext &, const SessionRunValues &) override {
      throw std::runtime_error("hook failed");
    }
  };
  std::vector<std::string> calls;
  FakeLoop loop;
  EXPECT_EQ(errorOf([&] {
              loop.run({std::make_shared<RecordingHook>(&calls, "a"),
                        std::make_shared<Throws>()});
            }),
            "hook failed");
  EXPECT_FALSE(loop.ended);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "a.end"), 0);
}

//===----------------------------------------------------------------------===//
// LoggingTensorHook
//===----------------------------------------------------------------------===//

TEST(LoggingTensorHook, EveryNIterLogsTfLines) {
  LogCapture logs;
  FakeLoop loop;
  LoggingTensorHook::Options o;
  o.every_n_iter = 3;
  o.clock = loop.clock();
  auto hook = std::make_shared<LoggingTensorHook>(
      std::map<std::string, std::string>{{"step", "global_step"},
                                         {"loss", "loss"}},
      o);
  loop.run({hook});
  // Iterations 0, 3, 6, 9 (the steps after them: 1, 4, 7, 10); tags sorted.
  EXPECT_EQ(logs.lines,
            (std::vector<std::string>{"loss = 1.0, step = 1",
                                      "loss = 0.25, step = 4 (1.500 sec)",
                                      "loss = 0.14285715, step = 7 (1.500 sec)",
                                      "loss = 0.1, step = 10 (1.500 sec)"}));
  // Fetches only on the steps that log.
  ASSERT_EQ(loop.fetches.size(), 10u);
  EXPECT_EQ(loop.fetches[0][0].size(), 2u);
  EXPECT_TRUE(loop.fetches[1][0].empty());
  EXPECT_EQ(loop.fetches[3][0].size(), 2u);
}

TEST(LoggingTensorHook, EveryNSecsUsesTheClock) {
  LogCapture logs;
  FakeLoop loop;
  loop.secsPerStep = 0.4;
  LoggingTensorHook::Options o;
  o.every_n_secs = 1.0;
  o.clock = loop.clock();
  auto hook = std::make_shared<LoggingTensorHook>(
      std::vector<std::string>{"global_step"}, o);
  loop.run({hook});
  // Iteration 0 logs after its step (t=1000.4); the next iteration that
  // begins at t >= 1001.4 is 4 (t=1001.6, logged at 1002.0), then 8.
  EXPECT_EQ(logs.lines, (std::vector<std::string>{
                            "global_step = 1", "global_step = 5 (1.600 sec)",
                            "global_step = 9 (1.600 sec)"}));
}

TEST(LoggingTensorHook, AtEndReadsVariablesAndTheLastOutputs) {
  LogCapture logs;
  FakeLoop loop;
  loop.maxSteps = 4;
  LoggingTensorHook::Options o;
  o.at_end = true;
  auto hook = std::make_shared<LoggingTensorHook>(
      std::vector<std::string>{"loss", "w", "global_step"}, o);
  loop.run({hook});
  EXPECT_EQ(logs.lines, (std::vector<std::string>{
                            "loss = 0.25, w = [4.0 -4.0], global_step = 4"}));
}

TEST(LoggingTensorHook, Formatter) {
  LogCapture logs;
  FakeLoop loop;
  loop.maxSteps = 2;
  LoggingTensorHook::Options o;
  o.every_n_iter = 1;
  o.formatter = [](const std::map<std::string, TensorValue> &v) {
    return "step " + format_tensor(v.at("global_step")) + "!";
  };
  loop.run({std::make_shared<LoggingTensorHook>(
      std::vector<std::string>{"global_step"}, o)});
  EXPECT_EQ(logs.lines, (std::vector<std::string>{"step 1!", "step 2!"}));
}

TEST(LoggingTensorHook, BadArguments) {
  LoggingTensorHook::Options none;
  EXPECT_EQ(errorOf([&] { LoggingTensorHook({"loss"}, none); }),
            "LoggingTensorHook: either at_end and/or exactly one of "
            "every_n_iter and every_n_secs must be given");
  LoggingTensorHook::Options zero;
  zero.every_n_iter = 0;
  EXPECT_EQ(errorOf([&] { LoggingTensorHook({"loss"}, zero); }),
            "LoggingTensorHook: invalid every_n_iter=0");
  LoggingTensorHook::Options ok;
  ok.every_n_iter = 1;
  EXPECT_EQ(errorOf([&] { LoggingTensorHook(std::vector<std::string>{}, ok); }),
            "LoggingTensorHook: no tensors to log");
  // An unknown fetch is the loop's one-line error.
  FakeLoop loop;
  EXPECT_EQ(errorOf([&] {
              loop.run({std::make_shared<LoggingTensorHook>(
                  std::vector<std::string>{"nope"}, ok)});
            }),
            "fetch 'nope' is not an output of function 'train'");
}

//===----------------------------------------------------------------------===//
// StopAtStepHook
//===----------------------------------------------------------------------===//

TEST(StopAtStepHook, NumStepsCountsFromTheSessionsStep) {
  FakeLoop loop;
  loop.session.step = 5;
  loop.maxSteps = 100;
  auto hook = std::make_shared<StopAtStepHook>(3, std::nullopt);
  loop.run({hook});
  EXPECT_EQ(hook->last_step(), 8);
  EXPECT_EQ(loop.session.step, 8);
  EXPECT_EQ(loop.stepsRun, 3);
  EXPECT_TRUE(loop.ended);
}

TEST(StopAtStepHook, LastStep) {
  FakeLoop loop;
  loop.session.step = 5;
  loop.maxSteps = 100;
  loop.run({std::make_shared<StopAtStepHook>(std::nullopt, 7)});
  EXPECT_EQ(loop.session.step, 7);
  EXPECT_EQ(errorOf([] { StopAtStepHook(std::nullopt, std::nullopt); }),
            "StopAtStepHook: one of num_steps or last_step must be given");
  EXPECT_EQ(errorOf([] { StopAtStepHook(1, 2); }),
            "StopAtStepHook: only one of num_steps or last_step can be given");
  EXPECT_EQ(errorOf([] { StopAtStepHook(-1, std::nullopt); }),
            "StopAtStepHook: num_steps must be >= 0, got -1");
}

//===----------------------------------------------------------------------===//
// CheckpointSaverHook
//===----------------------------------------------------------------------===//

struct RecordingListener : CheckpointSaverListener {
  std::vector<std::string> calls;
  int64_t stopAt = -1;
  void begin() override { calls.push_back("begin"); }
  void before_save(Session &session, int64_t step) override {
    EXPECT_EQ(session.global_step(), step);
    calls.push_back("before_save " + std::to_string(step));
  }
  bool after_save(Session &, int64_t step) override {
    calls.push_back("after_save " + std::to_string(step));
    return step == stopAt;
  }
  void end(Session &, int64_t step) override {
    calls.push_back("end " + std::to_string(step));
  }
};

TEST_F(HooksTest, CheckpointSaverHookEveryNStepsAndAtEnd) {
  LogCapture logs;
  FakeLoop loop;
  auto listener = std::make_shared<RecordingListener>();
  CheckpointSaverHook::Options o;
  o.save_steps = 3;
  o.listeners = {listener};
  o.saver_options.max_to_keep = 3;
  loop.run({std::make_shared<CheckpointSaverHook>(dir, o)});
  EXPECT_EQ(
      listener->calls,
      (std::vector<std::string>{
          "begin", "before_save 0", "after_save 0", "before_save 3",
          "after_save 3", "before_save 6", "after_save 6", "before_save 9",
          "after_save 9", "before_save 10", "after_save 10", "end 10"}));
  auto state = train::get_checkpoint_state(dir);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-6", "model.ckpt-9",
                                      "model.ckpt-10"}));
  EXPECT_FALSE(fs::exists(dir + "/model.ckpt-3.safetensors"));
  train::CheckpointReader reader(dir + "/model.ckpt-9");
  EXPECT_EQ(reader.global_step(), 9);
  EXPECT_EQ(reader.get_tensor("w").values<float>(),
            (std::vector<float>{9.f, -9.f}));
  EXPECT_EQ(
      logs.matching("Saving checkpoints for 9 into " + dir + "/model.ckpt.")
          .size(),
      1u);
}

TEST_F(HooksTest, CheckpointSaverListenerStopsTraining) {
  LogCapture logs;
  FakeLoop loop;
  auto listener = std::make_shared<RecordingListener>();
  listener->stopAt = 4;
  CheckpointSaverHook::Options o;
  o.save_steps = 2;
  o.listeners = {listener};
  loop.run({std::make_shared<CheckpointSaverHook>(dir, o)});
  EXPECT_EQ(loop.session.step, 4);
  // Step 4 was just saved: end() does not save it again.
  EXPECT_EQ(listener->calls,
            (std::vector<std::string>{
                "begin", "before_save 0", "after_save 0", "before_save 2",
                "after_save 2", "before_save 4", "after_save 4", "end 4"}));
}

TEST_F(HooksTest, CheckpointSaverHookEveryNSecs) {
  LogCapture logs;
  FakeLoop loop;
  loop.secsPerStep = 0.4;
  auto listener = std::make_shared<RecordingListener>();
  CheckpointSaverHook::Options o;
  o.save_secs = 1.0;
  o.clock = loop.clock();
  o.listeners = {listener};
  o.saver_options.prefix = "weights";
  loop.maxSteps = 6;
  loop.run({std::make_shared<CheckpointSaverHook>(dir, o)});
  // Saved at 0 (t=1000), then at the first step with t >= 1001: step 3
  // (t=1001.2), then t >= 1002.2: step 6 (t=1002.4), the end.
  std::vector<std::string> saves;
  for (const auto &c : listener->calls)
    if (c.rfind("after_save", 0) == 0)
      saves.push_back(c);
  EXPECT_EQ(saves, (std::vector<std::string>{"after_save 0", "after_save 3",
                                             "after_save 6"}));
  EXPECT_TRUE(fs::exists(dir + "/weights-6.safetensors"));
}

TEST_F(HooksTest, CheckpointSaverHookBadArguments) {
  CheckpointSaverHook::Options none;
  EXPECT_EQ(errorOf([&] { CheckpointSaverHook(dir, none); }),
            "CheckpointSaverHook: exactly one of save_secs and save_steps "
            "must be given");
  CheckpointSaverHook::Options ok;
  ok.save_steps = 1;
  EXPECT_EQ(errorOf([&] { CheckpointSaverHook("", ok); }),
            "CheckpointSaverHook: checkpoint_dir is empty");
}

//===----------------------------------------------------------------------===//
// StepCounterHook
//===----------------------------------------------------------------------===//

TEST_F(HooksTest, StepCounterHookWritesGlobalStepPerSec) {
  LogCapture logs;
  FakeLoop loop;
  loop.secsPerStep = 0.25;
  StepCounterHook::Options o;
  o.every_n_steps = 2;
  o.output_dir = dir;
  o.clock = loop.clock();
  loop.run({std::make_shared<StepCounterHook>(o)});
  // The timer starts at step 1; 2 steps per 0.5 sec at steps 3, 5, 7, 9.
  auto s = scalars(dir);
  ASSERT_EQ(s.size(), 4u);
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(std::get<0>(s[i]), int64_t(3 + 2 * i));
    EXPECT_EQ(std::get<1>(s[i]), "global_step/sec");
    EXPECT_FLOAT_EQ(std::get<2>(s[i]), 4.0f);
  }
  EXPECT_EQ(logs.matching("global_step/sec: 4").size(), 4u);
}

TEST_F(HooksTest, StepCounterHookWarnsWhenTheStepDoesNotGrow) {
  LogCapture logs;
  FakeLoop loop;
  loop.incrementStep = false;
  StepCounterHook::Options o;
  o.every_n_steps = std::nullopt;
  o.every_n_secs = 1.0;
  o.clock = loop.clock();
  loop.run({std::make_shared<StepCounterHook>(o)});
  EXPECT_EQ(logs.matching("It seems that global step has not been "
                          "increased")
                .size(),
            5u);
  StepCounterHook::Options both;
  both.every_n_secs = 1.0; // every_n_steps keeps its default 100
  EXPECT_EQ(errorOf([&] { StepCounterHook h(both); }),
            "StepCounterHook: exactly one of every_n_secs and every_n_steps "
            "must be given");
}

//===----------------------------------------------------------------------===//
// NanTensorHook
//===----------------------------------------------------------------------===//

std::map<std::string, TensorValue> nanAtThree(int64_t step) {
  float loss = step == 3 ? std::nanf("") : 1.0f;
  return {{"loss", TensorValue::of<float>({}, {loss})}};
}

TEST(NanTensorHook, FailsOnNanLoss) {
  LogCapture logs;
  FakeLoop loop;
  loop.outputs = nanAtThree;
  std::vector<std::string> calls;
  auto after = std::make_shared<RecordingHook>(&calls, "after");
  EXPECT_EQ(errorOf([&] {
              loop.run({std::make_shared<NanTensorHook>("loss", true), after});
            }),
            "NaN loss during training: fetch 'loss' is NaN at step 3");
  EXPECT_FALSE(loop.ended); // an exception skips end()
  EXPECT_EQ(loop.stepsRun, 3);
  EXPECT_EQ(logs.lines,
            (std::vector<std::string>{"Model diverged with loss = NaN."}));
  try {
    FakeLoop again;
    again.outputs = nanAtThree;
    again.run({std::make_shared<NanTensorHook>()});
    FAIL() << "no exception";
  } catch (const NanLossDuringTrainingError &) {
  }
}

TEST(NanTensorHook, StopsWhenNotFailing) {
  LogCapture logs;
  FakeLoop loop;
  loop.outputs = nanAtThree;
  std::vector<std::string> calls;
  auto after = std::make_shared<RecordingHook>(&calls, "after");
  loop.run({std::make_shared<NanTensorHook>("loss", false), after});
  EXPECT_TRUE(loop.ended);
  EXPECT_EQ(loop.session.step, 3);
  // The later hook's after_run still ran for step 3.
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "after.after_run"), 3);
  EXPECT_EQ(logs.lines,
            (std::vector<std::string>{"Model diverged with loss = NaN."}));
}

TEST(NanTensorHook, NoNanNoStop) {
  FakeLoop loop;
  loop.run({std::make_shared<NanTensorHook>()});
  EXPECT_EQ(loop.stepsRun, 10);
}

//===----------------------------------------------------------------------===//
// SummarySaverHook, SummaryWriterCache
//===----------------------------------------------------------------------===//

TEST_F(HooksTest, SummarySaverHookEveryNSteps) {
  FakeLoop loop;
  SummarySaverHook::Options o;
  o.save_steps = 4;
  o.output_dir = dir;
  loop.run({std::make_shared<SummarySaverHook>(std::vector<std::string>{"loss"},
                                               o)});
  // The first step, then every 4: steps 1, 5, 9.
  auto s = scalars(dir);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], std::make_tuple(int64_t(1), std::string("loss"), 1.0f));
  EXPECT_EQ(s[1], std::make_tuple(int64_t(5), std::string("loss"), 0.2f));
  EXPECT_EQ(s[2], std::make_tuple(int64_t(9), std::string("loss"), 1.0f / 9));
  // The scalars are fetched only on those steps.
  EXPECT_EQ(loop.fetches[0][0].size(), 2u);
  EXPECT_EQ(loop.fetches[1][0].size(), 1u);
}

TEST_F(HooksTest, SummarySaverHookEveryNSecsAndTags) {
  FakeLoop loop;
  loop.secsPerStep = 1.0;
  loop.maxSteps = 7;
  SummarySaverHook::Options o;
  o.save_secs = 2.0;
  o.output_dir = dir;
  o.clock = loop.clock();
  loop.run({std::make_shared<SummarySaverHook>(
      std::map<std::string, std::string>{{"training/loss", "loss"}}, o)});
  // Step 1 (written at t=1001), then the first step that begins at
  // t >= 1003: step 4 (written at t=1004), then step 7.
  auto s = scalars(dir);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(std::get<0>(s[1]), 4);
  EXPECT_EQ(std::get<1>(s[1]), "training/loss");
  EXPECT_EQ(std::get<0>(s[2]), 7);
}

TEST_F(HooksTest, SummarySaverHookWritesModelSummariesOnlyOnItsSteps) {
  FakeLoop loop;
  loop.maxSteps = 5;
  loop.outputs = [](int64_t step) {
    float f = float(step);
    return std::map<std::string, TensorValue>{
        {"loss", TensorValue::of<float>({}, {1.0f / f})},
        {"summaries/acc", TensorValue::of<float>({}, {f / 10})},
        {"summaries/w", TensorValue::of<float>({3}, {-1, 0, f})},
        {"summaries/img", TensorValue::of<float>({2, 1, 2, 1}, {0, 1, 2, 3})}};
  };
  SummarySaverHook::Options o;
  o.save_steps = 3;
  o.output_dir = dir;
  o.summaries = {{"acc", "scalar", "summaries/acc"},
                 {"w", "histogram", "summaries/w"},
                 {"img", "image", "summaries/img", 1},
                 {"notes", "text", "", 3, {"hi"}, {}}};
  loop.run({std::make_shared<SummarySaverHook>(std::vector<std::string>{"loss"},
                                               o)});
  // Steps 1 and 4 fetch global_step, the summaries with values and the
  // loss; the others only global_step.
  ASSERT_EQ(loop.fetches.size(), 5u);
  std::vector<size_t> counts;
  for (const auto &step : loop.fetches)
    counts.push_back(step[0].size());
  EXPECT_EQ(counts, (std::vector<size_t>{5, 1, 1, 5, 1}));
  SummaryWriterCache::clear();
  std::vector<summary::Event> events =
      summary::read_events(summary::list_event_files(dir).at(0));
  std::vector<std::pair<int64_t, std::vector<std::string>>> written;
  for (const summary::Event &e : events) {
    if (!e.has_summary())
      continue;
    std::vector<std::string> tags;
    for (const auto &v : e.summary().value())
      tags.push_back(v.tag());
    written.emplace_back(e.step(), tags);
  }
  // One Event per summary step: model_fn's summaries, then the scalars.
  std::vector<std::string> tags = {"acc", "w", "img/image", "notes", "loss"};
  EXPECT_EQ(written, (std::vector<std::pair<int64_t, std::vector<std::string>>>{
                         {1, tags}, {4, tags}}));
  const auto &last = events.back().summary();
  EXPECT_FLOAT_EQ(last.value(0).simple_value(), 0.4f);
  EXPECT_EQ(last.value(1).histo().num(), 3);
  EXPECT_EQ(last.value(1).histo().max(), 4);
  EXPECT_EQ(last.value(2).image().width(), 2);
  EXPECT_EQ(last.value(3).tensor().string_val(0), "hi");
}

TEST_F(HooksTest, SummarySaverHookRejectsNonScalars) {
  FakeLoop loop;
  SummarySaverHook::Options o;
  o.save_steps = 1;
  o.output_dir = dir;
  EXPECT_EQ(errorOf([&] {
              loop.run({std::make_shared<SummarySaverHook>(
                  std::vector<std::string>{"w"}, o)});
            }),
            "SummarySaverHook: fetch 'w' is F32[2], not a scalar");
  SummarySaverHook::Options noDir;
  noDir.save_steps = 1;
  EXPECT_EQ(errorOf([&] { SummarySaverHook({"loss"}, noDir); }),
            "SummarySaverHook: one of output_dir and summary_writer must be "
            "given");
}

TEST_F(HooksTest, SummaryWriterCacheSharesOneFilePerDirectory) {
  LogCapture logs;
  auto a = SummaryWriterCache::get(dir);
  auto b = SummaryWriterCache::get(dir + "/./");
  EXPECT_EQ(a.get(), b.get());
  FakeLoop loop;
  loop.maxSteps = 2;
  SummarySaverHook::Options o;
  o.save_steps = 1;
  o.output_dir = dir;
  StepCounterHook::Options c;
  c.every_n_steps = 1;
  c.output_dir = dir;
  c.clock = loop.clock();
  loop.run(
      {std::make_shared<SummarySaverHook>(std::vector<std::string>{"loss"}, o),
       std::make_shared<StepCounterHook>(c)});
  EXPECT_EQ(summary::list_event_files(dir).size(), 1u);
  EXPECT_EQ(scalars(dir).size(), 3u); // loss at 1 and 2, global_step/sec at 2
  // A removed directory gets a new writer.
  a.reset();
  b.reset();
  fs::remove_all(dir);
  auto c2 = SummaryWriterCache::get(dir);
  EXPECT_TRUE(fs::exists(c2->path()));
}

//===----------------------------------------------------------------------===//
// FinalOpsHook
//===----------------------------------------------------------------------===//

TEST(FinalOpsHook, VariablesAtEndAndLastOutputs) {
  FakeLoop loop;
  loop.maxSteps = 3;
  loop.outputs = [](int64_t step) {
    return std::map<std::string, TensorValue>{
        {"metrics/accuracy", TensorValue::of<float>({}, {0.1f * step})}};
  };
  auto hook = std::make_shared<FinalOpsHook>(
      std::vector<std::string>{"w", "metrics/accuracy", "global_step"});
  loop.run({hook});
  // Only the non-variable is fetched in steps.
  EXPECT_EQ(loop.fetches[0][0], (std::vector<std::string>{"metrics/accuracy"}));
  const auto &v = hook->final_ops_values();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v.at("w").values<float>(), (std::vector<float>{3.f, -3.f}));
  EXPECT_FLOAT_EQ(v.at("metrics/accuracy").values<float>()[0], 0.3f);
  EXPECT_EQ(v.at("global_step").values<int64_t>()[0], 3);
  EXPECT_EQ(errorOf([] { FinalOpsHook({}); }), "FinalOpsHook: no final_ops");
}

//===----------------------------------------------------------------------===//
// GlobalStepWaiterHook
//===----------------------------------------------------------------------===//

TEST(GlobalStepWaiterHook, WaitsPollingAndLogs) {
  LogCapture logs;
  FakeLoop loop;
  int64_t chiefStep = 0;
  double now = 0;
  int sleeps = 0;
  GlobalStepWaiterHook::Options o;
  o.global_step = [&](Session &) { return chiefStep; };
  o.clock = [&] { return now; };
  o.sleep = [&](double secs) {
    EXPECT_DOUBLE_EQ(secs, 0.5);
    ++sleeps;
    now += secs;
    chiefStep += 600;
  };
  loop.maxSteps = 2;
  loop.run({std::make_shared<GlobalStepWaiterHook>(2000, o)});
  EXPECT_EQ(sleeps, 4); // 0, 600, 1200, 1800, 2400
  EXPECT_EQ(loop.stepsRun, 2);
  EXPECT_EQ(logs.lines,
            (std::vector<std::string>{
                "Waiting for global step 2000 before starting training.",
                "Waiting for global step 2000 before starting training. "
                "Current step is 1200."}));
}

TEST(GlobalStepWaiterHook, TimesOut) {
  LogCapture logs;
  FakeLoop loop;
  double now = 0;
  GlobalStepWaiterHook::Options o;
  o.timeout_secs = 2.0;
  o.clock = [&] { return now; };
  o.sleep = [&](double secs) { now += secs; };
  EXPECT_EQ(errorOf([&] {
              loop.run({std::make_shared<GlobalStepWaiterHook>(10, o)});
            }),
            "GlobalStepWaiterHook: global step is 0, still below 10 after "
            "waiting 2.000 sec (timeout_secs 2.000)");
  // Nothing to wait for.
  FakeLoop quick;
  quick.run({std::make_shared<GlobalStepWaiterHook>(0, o)});
  EXPECT_EQ(quick.stepsRun, 10);
}

//===----------------------------------------------------------------------===//
// ProfilerHook
//===----------------------------------------------------------------------===//

TEST_F(HooksTest, ProfilerHookWritesChromeTraces) {
  FakeLoop loop;
  loop.maxSteps = 6;
  loop.session.dir = dir; // the default output_dir
  ProfilerHook::Options o;
  o.save_steps = 2;
  auto hook = std::make_shared<ProfilerHook>(o);
  loop.run({hook});
  EXPECT_EQ(hook->written(),
            (std::vector<std::string>{dir + "/timeline-2.json",
                                      dir + "/timeline-4.json",
                                      dir + "/timeline-6.json"}));
  json::Value trace = json::parse(fileio::readFile(dir + "/timeline-4.json"));
  const json::Value *events = trace.find("traceEvents");
  ASSERT_TRUE(events && events->isArray());
  std::vector<std::string> names;
  for (const auto &e : events->items) {
    ASSERT_TRUE(e.isObject());
    if (e.find("ph")->text != "X")
      continue;
    names.push_back(e.find("name")->text);
    EXPECT_EQ(e.find("pid")->text, "0");
    ASSERT_TRUE(e.find("ts") && e.find("dur"));
    EXPECT_EQ(e.find("args")->find("global_step")->text, "4");
  }
  // The phases MonitoredSession timed, in microseconds since it started.
  EXPECT_EQ(names,
            (std::vector<std::string>{"before_run", "input", "run:train"}));
  const json::Value &run = events->items[3];
  EXPECT_EQ(run.find("cat")->text, "run");
  EXPECT_GE(std::stod(run.find("ts")->text),
            std::stod(events->items[2].find("ts")->text));
}

TEST(ProfilerHook, ChromeTraceJson) {
  std::vector<StepPhase> phases = {{"input", 1500000, 100},
                                   {"run:train", 1500110, 1000}};
  EXPECT_EQ(chrome_trace_json(phases, 4),
            "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"
            "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, "
            "\"tid\": 0, \"args\": {\"name\": \"estc step 4\"}},\n"
            "  {\"name\": \"input\", \"cat\": \"input\", \"ph\": \"X\", "
            "\"pid\": 0, \"tid\": 0, \"ts\": 1500000.000, \"dur\": 100.000, "
            "\"args\": {\"global_step\": 4}},\n"
            "  {\"name\": \"run:train\", \"cat\": \"run\", \"ph\": \"X\", "
            "\"pid\": 0, \"tid\": 0, \"ts\": 1500110.000, \"dur\": "
            "1000.000, \"args\": {\"global_step\": 4}}\n"
            "]}\n");
}

TEST(ProfilerHook, NeedsADirectory) {
  FakeLoop loop;
  ProfilerHook::Options o;
  o.save_steps = 1;
  EXPECT_EQ(errorOf([&] { loop.run({std::make_shared<ProfilerHook>(o)}); }),
            "ProfilerHook: no output_dir and the session has no model_dir");
  ProfilerHook::Options none;
  EXPECT_EQ(errorOf([&] { ProfilerHook h(none); }),
            "ProfilerHook: exactly one of save_secs and save_steps must be "
            "given");
}

} // namespace
