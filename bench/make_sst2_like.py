#!/usr/bin/env python3
"""Writes the SST-2-shaped token data every peer of bench/rnn.sh reads.

Usage:
  python3 bench/make_sst2_like.py --out FILE [--examples 4096]
      [--vocab 16384] [--max_length 56] [--seed 1]

Synthetic sentences whose lengths follow SST-2's sentence-level training
split: log-normal, median 17.5 tokens (mu 2.819, sigma 0.5: mean about 19),
clipped to [2, max_length] (SST-2's longest is 56 tokens); token ids
uniform in [1, vocab) with 0 as padding; labels 0/1, uniform. The peers
take the examples in file order, 64 at a time, each batch padded to its own
longest sentence (no bucketing: the usual padded batch), so every peer
trains on the same batches of the same lengths.

File (little-endian): b"SST2LIKE", int64 examples, max_length, vocab; then
int64 lengths[examples], int64 labels[examples], int32 ids[examples,
max_length] (zero-padded).
"""

import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--examples", type=int, default=4096)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--max_length", type=int, default=56)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.examples < 1 or args.vocab < 2 or args.max_length < 2:
        print("make_sst2_like.py: error: --examples, --vocab and "
              "--max_length must be at least 1, 2 and 2", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    lengths = np.clip(np.rint(rng.lognormal(2.819, 0.5, args.examples)), 2,
                      args.max_length).astype(np.int64)
    labels = rng.integers(0, 2, args.examples).astype(np.int64)
    ids = rng.integers(1, args.vocab, (args.examples, args.max_length))
    ids[np.arange(args.max_length)[None, :] >= lengths[:, None]] = 0
    with open(args.out, "wb") as f:
        f.write(b"SST2LIKE")
        np.array([args.examples, args.max_length, args.vocab],
                 np.int64).tofile(f)
        lengths.tofile(f)
        labels.tofile(f)
        ids.astype(np.int32).tofile(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
