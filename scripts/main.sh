#!/usr/bin/env bash
# The main job: sets up and builds estc, builds the MNIST ConvNet model graph
# with the C++ graph-builder API, and compiles it with estc to the est dialect.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
mkdir -p build/models
build/bin/estc-models --model=convnet -o build/models/convnet.pb
build/bin/estc build/models/convnet.pb --emit=mlir
