//===- checkpoint_bench.cpp - Saving and restoring a large checkpoint ----===//
//
//   checkpoint_bench [--mib=1024] [--tensors=64] [--dir=DIR] [--repeats=3]
//                    [--format=tf|safetensors] [--sync=true|false]
//
// Saves `tensors` float32 variables of `mib` MiB in all into DIR with
// train::Saver (TF's tensor bundle or estc's safetensors: data written,
// fsynced and renamed, as in training; --sync=false: written and renamed,
// RunConfigOptions::sync_checkpoints false, as TF's Saver), then restores them
// with restore_latest (every CRC checked) in a child process, whose peak
// resident memory during the restore is measured (/proc/self/status's
// VmHWM, reset before it, minus VmRSS before it: the variables restored
// plus whatever the reader holds). Prints, as the median of `repeats` runs, one
// line:
//
//   format=tf sync=1 mib=1024 save_s=... save_mib_s=... restore_s=...
//   restore_mib_s=... restore_peak_rss_mib=... rss_ratio=...
//
// rss_ratio is that peak over the variables' size. bench/checkpoint.sh runs it
// beside bench/tf_checkpoint_peer.py (TF 2.15's SaveV2/RestoreV2 on the same
// tensors) and prints the ratios. A bad flag is one line and exit status 2.
//
//===----------------------------------------------------------------------===//

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Support/Flags.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

using namespace estc;

namespace {
double seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
long statusKb(const std::string &field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0)
      return std::stol(line.substr(field.size() + 1));
  return -1;
}

/// Resets the peak resident memory (VmHWM) to the current (Linux >= 4.0).
void resetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }
} // namespace

int main(int argc, char **argv) {
  int64_t mib = 1024, tensors = 64, repeats = 3;
  std::string dir = "/tmp/estc-checkpoint-bench", format = "tf";
  flags::FlagParser parser("checkpoint_bench",
                           "Saves and restores a large checkpoint.");
  parser.add(flags::Flag("mib", &mib, "the variables' size in MiB").positive());
  parser.add(
      flags::Flag("tensors", &tensors, "number of variables").positive());
  parser.add(flags::Flag("dir", &dir, "model_dir to write (removed first)"));
  parser.add(flags::Flag("repeats", &repeats, "runs; the median is printed")
                 .positive());
  parser.add(flags::Flag("format", &format, "checkpoint format")
                 .choices({"tf", "safetensors"}));
  bool sync = true;
  parser.add(
      flags::Flag("sync", &sync, "fsync the checkpoint (SaverOptions::sync)"));
  parser.parse_or_exit(argc, argv);

  try {
    int64_t elements = mib * (1 << 20) / 4 / tensors;
    train::VariableMap vars;
    for (int64_t t = 0; t < tensors; ++t) {
      std::vector<float> v(static_cast<size_t>(elements));
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>((i * 2654435761u + t) % 1000) * 1e-3f;
      char name[64];
      std::snprintf(name, sizeof name, "layer_%03d/kernel",
                    static_cast<int>(t));
      vars[name] = TensorValue::of<float>({elements}, v);
    }
    double bytes = static_cast<double>(elements) * 4 * tensors;
    double mibs = bytes / (1 << 20);
    std::vector<double> save, restore, rss;
    for (int64_t r = 0; r < repeats; ++r) {
      std::filesystem::remove_all(dir);
      train::SaverOptions options;
      options.format = format == "tf" ? train::CheckpointFormat::TensorBundle
                                      : train::CheckpointFormat::Safetensors;
      options.sync = sync;
      train::Saver saver(dir, options);
      double t0 = seconds();
      saver.save(vars, 1);
      save.push_back(seconds() - t0);

      // The restore in a child: its own peak memory, without `vars`.
      int pipefd[2];
      if (::pipe(pipefd) != 0)
        throw std::runtime_error("pipe failed");
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(pipefd[0]);
        train::VariableMap().swap(vars);
        resetPeakRss();
        long base = statusKb("VmRSS");
        double t1 = seconds();
        auto restored = train::restore_latest(dir);
        double result[2] = {seconds() - t1,
                            static_cast<double>(statusKb("VmHWM") - base)};
        if (!restored ||
            restored->variables.size() != static_cast<size_t>(tensors + 1))
          ::_exit(1);
        ssize_t ignored = ::write(pipefd[1], result, sizeof result);
        (void)ignored;
        ::_exit(0);
      }
      ::close(pipefd[1]);
      double result[2] = {0, 0};
      ssize_t got = ::read(pipefd[0], result, sizeof result);
      ::close(pipefd[0]);
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (got != sizeof result || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0)
        throw std::runtime_error("the restore failed");
      restore.push_back(result[0]);
      rss.push_back(result[1] / 1024.0);
    }
    std::filesystem::remove_all(dir);
    std::printf("format=%s sync=%d mib=%.0f save_s=%.3f save_mib_s=%.0f "
                "restore_s=%.3f restore_mib_s=%.0f restore_peak_rss_mib=%.0f "
                "rss_ratio=%.3f\n",
                format.c_str(), sync ? 1 : 0, mibs, median(save),
                mibs / median(save), median(restore), mibs / median(restore),
                median(rss), median(rss) / mibs);
  } catch (const std::exception &e) {
    flags::print_error_line("checkpoint_bench", e.what());
    return 1;
  }
  return 0;
}
