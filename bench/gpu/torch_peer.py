#!/usr/bin/env python3
"""The PyTorch peer of gpu_step_bench: the seed models' training step on CUDA.

The same two models as examples/models (and bench/TorchModels.h):
  mlp      784-256-256-10, relu
  convnet  conv 20 5x5 valid relu, max-pool 2x2, conv 40 5x5 valid relu,
           max-pool 2x2, flatten, dense 256 relu, dropout 0.5, dense 256
           relu, dropout 0.5, dense 10
with estc's initialization (layers::dense and layers::conv2d: Glorot-uniform
kernels, zero biases) and step: sparse softmax cross-entropy averaged over
the batch, backward, Adam(lr 0.002, beta1 0.9, beta2 0.999, eps 1e-8; TF's
defaults). Images are NCHW here (PyTorch's own layout; estc takes NHWC): the
arithmetic is the same.

Like gpu_step_bench, a step starts from a batch in pinned host memory (estc's
run() copies its host inputs to the device), and the batch is the same every
step (no input pipeline is timed). Timing: `--warmup` steps, then `--steps`
steps between two torch.cuda.synchronize(), wall clock (time.perf_counter).

Modes: eager; torch.compile(mode="default"); torch.compile(mode=
"reduce-overhead") (CUDA graphs). In the compiled modes the model's forward
(and with it AOTAutograd's backward) is compiled in that mode and the
optimizer step with torch.compile's default mode;
the compile time is reported separately and not timed.

Prints one line per configuration as it finishes, then a table and one JSON
line: {"device": ..., "torch": ..., "results": [{"model", "batch", "mode",
"steps_per_sec", "ms_per_step", "compile_s", "final_loss"} or {..., "error"}]}.
A configuration that fails (e.g. torch.compile without a C compiler) is
reported with its error and the others go on. `--budget_s` stops starting new
configurations after that many seconds (what is done is still printed).
"""

import argparse
import json
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp,convnet")
    p.add_argument("--batches", default="128,1024")
    p.add_argument("--modes", default="eager,default,reduce-overhead",
                   help="eager, default, reduce-overhead (comma separated)")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--budget_s", type=float, default=0,
                   help="start no configuration after this many seconds "
                        "(0: no limit)")
    p.add_argument("--json", default="", help="also write the JSON here")
    return p.parse_args()


def build_model(torch, name):
    nn = torch.nn
    if name == "mlp":
        model = nn.Sequential(
            nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    elif name == "convnet":
        model = nn.Sequential(
            nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(20, 40, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(640, 256), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(256, 10))
    else:
        raise ValueError("unknown model '%s' (mlp, convnet)" % name)
    # estc's layers: Glorot-uniform kernels (fans from the kernel shape,
    # as TF's glorot_uniform for HWIO), zero biases.
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def input_shape(name, batch):
    return (batch, 784) if name == "mlp" else (batch, 1, 28, 28)


def run_config(torch, name, batch, mode, args):
    """Returns the result dictionary of one configuration."""
    device = torch.device(args.device)
    torch.manual_seed(1)
    model = build_model(torch, name).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.002,
                                 betas=(0.9, 0.999), eps=1e-8)
    loss_fn = torch.nn.CrossEntropyLoss()
    host_x = torch.rand(input_shape(name, batch)).pin_memory()
    host_y = torch.randint(0, 10, (batch,)).pin_memory()

    forward = model
    opt_step = optimizer.step
    if mode != "eager":
        forward = torch.compile(model, mode=mode)
        # The optimizer step as PyTorch's "compiling the optimizer" recipe
        # does it (mode default: its in-place updates of the parameters are
        # not CUDA-graph friendly).
        opt_step = torch.compile(optimizer.step)

    def step():
        x = host_x.to(device, non_blocking=True)
        y = host_y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt_step()
        return loss

    # The first steps compile (torch.compile) or warm the caches.
    start = time.perf_counter()
    step()
    torch.cuda.synchronize(device)
    compile_s = time.perf_counter() - start
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    return {
        "model": name, "batch": batch, "mode": mode,
        "steps_per_sec": args.steps / seconds,
        "ms_per_step": 1000.0 * seconds / args.steps,
        "compile_s": compile_s if mode != "eager" else 0.0,
        "final_loss": float(loss.item()),
    }


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as e:
        print("SKIP: torch cannot be imported (%s)" % e)
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device (torch %s)" % torch.__version__)
        return 77
    # estc's GEMMs are FP32 (cuBLAS without TF32): the same here.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    device_name = torch.cuda.get_device_name(torch.device(args.device))
    print("torch %s on %s" % (torch.__version__, device_name), flush=True)

    begin = time.perf_counter()
    results = []
    for mode in args.modes.split(","):
        for name in args.models.split(","):
            for batch in [int(b) for b in args.batches.split(",")]:
                if args.budget_s and time.perf_counter() - begin > args.budget_s:
                    results.append({"model": name, "batch": batch,
                                    "mode": mode, "error": "skipped: budget"})
                    continue
                try:
                    r = run_config(torch, name, batch, mode, args)
                    print("%-8s batch %5d %-16s %9.1f steps/s %8.3f ms/step"
                          "  (compile %.1f s, loss %.3f)"
                          % (name, batch, mode, r["steps_per_sec"],
                             r["ms_per_step"], r["compile_s"],
                             r["final_loss"]), flush=True)
                except Exception as e:  # one failed config, not the run
                    message = ("%s: %s" % (type(e).__name__, e)).splitlines()
                    r = {"model": name, "batch": batch, "mode": mode,
                         "error": message[0] if message else type(e).__name__}
                    print("%-8s batch %5d %-16s error: %s"
                          % (name, batch, mode, r["error"]), flush=True)
                results.append(r)
                if mode != "eager":
                    torch._dynamo.reset()  # each configuration compiles anew

    print("\n%-8s %6s %-16s %12s %10s" % ("model", "batch", "mode",
                                          "steps/s", "ms/step"))
    for r in results:
        if "error" in r:
            print("%-8s %6d %-16s %s" % (r["model"], r["batch"], r["mode"],
                                         r["error"]))
        else:
            print("%-8s %6d %-16s %12.1f %10.3f" % (
                r["model"], r["batch"], r["mode"], r["steps_per_sec"],
                r["ms_per_step"]))
    report = {"device": device_name, "torch": torch.__version__,
              "warmup": args.warmup, "steps": args.steps, "results": results}
    line = json.dumps(report)
    print(line)
    if args.json:
        with open(args.json, "w") as f:
            f.write(line + "\n")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
