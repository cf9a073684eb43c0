#!/usr/bin/env bash
# The main job: installs what is missing (Debian packages, including
# Fashion-MNIST from dataset-fashion-mnist), builds estc, and trains the MNIST
# ConvNet example (examples/fashion_mnist, the Estimator with train_and_evaluate,
# the model compiled ahead of time by estc) on Fashion-MNIST's 60,000 training
# images, evaluating on its 10,000 test images after every checkpoint; it ends
# with the final evaluation metrics. Extra flags go to the trainer (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
# Builds only the trainer and what it needs (the compiler, the runtime, the
# Estimator), in the configuration scripts/test.sh shares.
./scripts/build.sh --data --target fashion_mnist_aot
model_dir=$(mktemp -d /tmp/fashion_mnist_model.XXXXXX)
echo "main: training into $model_dir"
build/bin/fashion_mnist_aot --data_dir=/usr/share/datasets/fashion-mnist \
  --model_dir="$model_dir" "$@"
