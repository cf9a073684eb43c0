#!/usr/bin/env bash
# Builds estc with the benchmark peers (libtorch with OpenBLAS, from Debian)
# and runs the side-by-side benchmarks. Results: docs/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh --bench
for threads in 1 2; do
  build/bin/model_bench --threads="$threads"
  echo
done
# TF 2.15's own Estimator on the same models (issue 15's peer; prints SKIP
# without tensorflow: pip install tensorflow-cpu==2.15.1
# tensorflow-estimator==2.15.0 "numpy<2"), then estc's Estimator on them:
# the same table.
python3 bench/tf_estimator_peer.py --threads 1,2
build/bin/estimator_bench --threads=1,2
# Time to 0.90 test accuracy on Fashion-MNIST and each process's peak
# memory, TF's Estimator beside estc's (the same ConvNet, batch, optimizer
# and evaluation schedule; a few minutes per thread count).
bench/fashion_tta.sh --build build --threads "1 2"
# Distributed training on loopback: Gloo's all-reduce against the link in the
# same run, the split of a 2-worker step into compute and communication, and
# the scaling model of 8-64 workers from both (docs/results.md,
# "Distributed training").
build/bin/allreduce_bench --json=build/allreduce.json
build/bin/distributed_bench --json=build/distributed.json
python3 bench/scaling_model.py --allreduce_json=build/allreduce.json \
    --distributed_json=build/distributed.json
# Recurrent training (issue 27): the SST-2-shaped LSTM through TF 2.15's
# Estimator, estc's Estimator and libtorch, an LSTM 512 against the sgemm
# roofline, the reverse pass's arena (docs/results.md, "Recurrent training").
bench/rnn.sh build
