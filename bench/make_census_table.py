#!/usr/bin/env python3
"""Writes a census-like CSV whose label follows a known logistic model.

Usage:
  python3 bench/make_census_table.py --rows N --seed S --out FILE.csv

The benchmark table of bench/tf_canned_bench.py (and of estc's side of
bench/canned.sh): the columns of TF's census wide & deep tutorial, drawn
from a stated generator so that a C++ program can write the same bytes,
and a label drawn from a stated logistic model, so that accuracy means
something (the best possible accuracy is printed). Prints one JSON line
of statistics on stdout. The model's weights do not depend on the seed:
train and eval files are written with different seeds.

Random numbers: splitmix64, state = seed (uint64); each draw does
  state += 0x9E3779B97F4A7C15
  z = state
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9    (mod 2^64)
  z = (z ^ (z >> 27)) * 0x94D049BB133111EB    (mod 2^64)
  z = z ^ (z >> 31)
and a uniform double u = (z >> 11) * 2^-53, in [0, 1). Every row draws
exactly 18 uniforms, u[0] .. u[17], in this order, whatever they are used
for. All arithmetic below is IEEE double, evaluated left to right as
written (no fused multiply-add), floor() to an integer.

Columns, in file order (header line first; no quoting anywhere):

  age             int     18 + floor(30.0 * (u[8] + u[9]))       18..77
  workclass       string  WORKCLASS[floor(8.0 * u[0] * u[0])]
  education       string  EDUCATION[e], e = floor(16.0 * u[1] * u[1])
  education_num   int     e + 1                                  1..16
  marital_status  string  MARITAL_STATUS[floor(7.0 * u[2] * u[2])]
  occupation      string  OCCUPATION[o], o = floor(14.0 * u[3] * u[3])
  relationship    string  RELATIONSHIP[floor(6.0 * u[4] * u[4])]
  gender          string  GENDER[floor(2.0 * u[5] * u[5])]
  capital_gain    float   g / 1000 printed as "%d.%03d" (g // 1000,
                          g % 1000), g = floor(20000.0 * u[13]) if
                          u[12] < 0.1 else 0                    0..19.999
  capital_loss    float   l / 1000 the same way, l = floor(3000.0 * u[15])
                          if u[14] < 0.05 else 0                 0..2.999
  hours_per_week  int     20 + floor(50.0 * (u[10] + u[11] + u[16]) / 3.0)
                                                                 20..69
  native_country  string  "country_%02d" % floor(41.0 * u[6] * u[6])
                          (country_00 .. country_40)
  zip_code        string  "zip_%03d" % floor(1000.0 * u[7] * u[7])
                          (zip_000 .. zip_999)
  label           int     1 if u[17] < 1 / (1 + exp(-z)) else 0

(index = floor(V * u * u): category k has probability sqrt((k+1)/V) -
sqrt(k/V), so low indices are common, as in real categorical data.)

Vocabularies (in this order; index k is the k-th):
  WORKCLASS      = Private, Self-emp-not-inc, Self-emp-inc, Federal-gov,
                   Local-gov, State-gov, Without-pay, Never-worked
  EDUCATION      = Preschool, 1st-4th, 5th-6th, 7th-8th, 9th, 10th, 11th,
                   12th, HS-grad, Some-college, Assoc-voc, Assoc-acdm,
                   Bachelors, Masters, Prof-school, Doctorate
  MARITAL_STATUS = Married-civ-spouse, Divorced, Married-spouse-absent,
                   Never-married, Separated, Married-AF-spouse, Widowed
  OCCUPATION     = Tech-support, Craft-repair, Other-service, Sales,
                   Exec-managerial, Prof-specialty, Handlers-cleaners,
                   Machine-op-inspct, Adm-clerical, Farming-fishing,
                   Transport-moving, Priv-house-serv, Protective-serv,
                   Armed-Forces
  RELATIONSHIP   = Husband, Not-in-family, Wife, Own-child, Unmarried,
                   Other-relative
  GENDER         = Female, Male

The label's logit (integer indices k as drawn above; g, l in thousandths):
  z = BIAS
    + 0.15 * (e - 8)                                  education, monotone
    + w(0.5, 1, workclass k) + w(0.8, 2, marital_status k)
    + w(0.6, 3, o) + w(0.8, 4, relationship k) + w(0.4, 5, gender k)
    + w(0.3, 6, native_country k) + w(0.5, 7, zip_code k)
    + 0.6 * (((e * 5 + o * 3) % 7) - 3) / 3.0         education x occupation
    + 1.0 - 0.002 * (age - 45) * (age - 45)           peaks at 45
    + 0.03 * (hours_per_week - 40)
    + 0.25 * (g / 1000.0) - 0.3 * (l / 1000.0)
  w(a, s, k) = a * (((k * 7 + s) % 9) - 4) / 4.0      in [-a, a]
  BIAS = -1.0
exp is the C library's (Python's math.exp is glibc's exp); a C++ mirror
using another exp can differ only where u[17] falls within an ulp of p.

With these numbers about 36% of the labels are 1 (the majority class gives
0.64 accuracy) and the best possible accuracy (mean of max(p, 1 - p)) is
about 0.762.
"""

import argparse
import json
import math
import sys

MASK = (1 << 64) - 1

WORKCLASS = ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
             "Local-gov", "State-gov", "Without-pay", "Never-worked"]
EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th",
             "11th", "12th", "HS-grad", "Some-college", "Assoc-voc",
             "Assoc-acdm", "Bachelors", "Masters", "Prof-school",
             "Doctorate"]
MARITAL_STATUS = ["Married-civ-spouse", "Divorced", "Married-spouse-absent",
                  "Never-married", "Separated", "Married-AF-spouse",
                  "Widowed"]
OCCUPATION = ["Tech-support", "Craft-repair", "Other-service", "Sales",
              "Exec-managerial", "Prof-specialty", "Handlers-cleaners",
              "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
              "Transport-moving", "Priv-house-serv", "Protective-serv",
              "Armed-Forces"]
RELATIONSHIP = ["Husband", "Not-in-family", "Wife", "Own-child", "Unmarried",
                "Other-relative"]
GENDER = ["Female", "Male"]
NATIVE_COUNTRY = [f"country_{k:02d}" for k in range(41)]
ZIP_CODE = [f"zip_{k:03d}" for k in range(1000)]

HEADER = ["age", "workclass", "education", "education_num", "marital_status",
          "occupation", "relationship", "gender", "capital_gain",
          "capital_loss", "hours_per_week", "native_country", "zip_code",
          "label"]
BIAS = -1.0
DRAWS_PER_ROW = 18


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def uniform(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z = z ^ (z >> 31)
        return (z >> 11) * (1.0 / (1 << 53))


def skewed(n, u):
    return math.floor(n * u * u)


def w(a, s, k):
    return a * (((k * 7 + s) % 9) - 4) / 4.0


def thousandths(v):
    return f"{v // 1000}.{v % 1000:03d}"


def row(rng):
    """One row's fields (strings, file order) and its label probability."""
    u = [rng.uniform() for _ in range(DRAWS_PER_ROW)]
    age = 18 + math.floor(30.0 * (u[8] + u[9]))
    workclass = skewed(8, u[0])
    e = skewed(16, u[1])
    marital = skewed(7, u[2])
    o = skewed(14, u[3])
    relationship = skewed(6, u[4])
    gender = skewed(2, u[5])
    country = skewed(41, u[6])
    zip_code = skewed(1000, u[7])
    hours = 20 + math.floor(50.0 * (u[10] + u[11] + u[16]) / 3.0)
    g = math.floor(20000.0 * u[13]) if u[12] < 0.1 else 0
    loss = math.floor(3000.0 * u[15]) if u[14] < 0.05 else 0

    z = BIAS
    z += 0.15 * (e - 8)
    z += w(0.5, 1, workclass) + w(0.8, 2, marital)
    z += w(0.6, 3, o) + w(0.8, 4, relationship) + w(0.4, 5, gender)
    z += w(0.3, 6, country) + w(0.5, 7, zip_code)
    z += 0.6 * (((e * 5 + o * 3) % 7) - 3) / 3.0
    z += 1.0 - 0.002 * (age - 45) * (age - 45)
    z += 0.03 * (hours - 40)
    z += 0.25 * (g / 1000.0) - 0.3 * (loss / 1000.0)
    p = 1.0 / (1.0 + math.exp(-z))
    label = 1 if u[17] < p else 0
    fields = [str(age), WORKCLASS[workclass], EDUCATION[e], str(e + 1),
              MARITAL_STATUS[marital], OCCUPATION[o],
              RELATIONSHIP[relationship], GENDER[gender], thousandths(g),
              thousandths(loss), str(hours), NATIVE_COUNTRY[country],
              ZIP_CODE[zip_code], str(label)]
    return fields, p, label


def write_table(path, rows, seed):
    """Writes the table; returns its statistics (a dict)."""
    rng = SplitMix64(seed)
    positives = 0
    bayes = 0.0  # E[max(p, 1 - p)]: the best any model can expect
    oracle_hits = 0  # predicting p > 0.5 on the drawn labels
    with open(path, "w") as f:
        f.write(",".join(HEADER) + "\n")
        for _ in range(rows):
            fields, p, label = row(rng)
            f.write(",".join(fields) + "\n")
            positives += label
            bayes += max(p, 1.0 - p)
            oracle_hits += int((p > 0.5) == (label == 1))
    return {"file": path, "rows": rows, "seed": seed,
            "positive_rate": round(positives / rows, 4),
            "bayes_accuracy": round(bayes / rows, 4),
            "oracle_accuracy": round(oracle_hits / rows, 4)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.rows <= 0:
        print(f"make_census_table: --rows must be positive, got {args.rows}",
              file=sys.stderr)
        return 2
    print(json.dumps(write_table(args.out, args.rows, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
