#!/usr/bin/env python3
"""lib/Data's CSV and text-line readers against TensorFlow's, file by file.

Writes CSV files (quoting, delimiters and line breaks inside quotes, missing
values, na_value, CRLF and lone CR, headers, every number syntax at its
edges, malformed records), reads each with TF 2.15 and with csv_tool
(test/data/csv_tool.cpp, lib/Data's readers), and compares:

  dataset  tf.data.experimental.CsvDataset      vs CsvReader
  decode   TextLineDataset + tf.io.decode_csv   vs TextLineReader + decode_csv
           (and decode_csv on records with '\\n' / '\\r' TF's way)
  lines    tf.data.TextLineDataset              vs TextLineReader
  infer    make_csv_dataset's column names and inferred types
                                                vs read_csv_header +
                                                   infer_column_defaults

Values must be equal (floats bit for bit, NaN to NaN, the sign of a zero
included); where TF raises an error estc must too (and not otherwise), and
the values yielded before it must be the same. Messages differ on purpose
(estc's name the file, line and column), so only the fact of an error is
compared.

Without TensorFlow the test prints SKIP and exits 77 (ctest's SKIP_RETURN_CODE).

  python3 test/e2e/tf_csv_compat.py --tool=build/bin/csv_tool --work=/tmp/w
"""

import argparse
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys

tf = None  # imported in main(), so a missing TF is a visible SKIP


def tf_message(e):
    """The first line of a TF error, without its "{{function_node ...}}"."""
    return re.sub(r"^\{\{function_node [^}]*\}\}\s*", "",
                  e.message.splitlines()[0])


def tf_dtype(name):
    return {"int32": tf.int32, "int64": tf.int64, "float32": tf.float32,
            "float64": tf.float64, "string": tf.string}[name]


def py_value(type_name, value):
    return {"int32": int, "int64": int, "float32": float, "float64": float,
            "string": str}[type_name](value)


class Checker:
    def __init__(self, tool, work):
        self.tool = tool
        self.work = work
        self.failures = []
        self.checked = 0
        self.errors_matched = 0
        self.counter = 0

    # Files and the tool -------------------------------------------------

    def write(self, content, name=None):
        self.counter += 1
        path = os.path.join(self.work, name or "case%04d.csv" % self.counter)
        with open(path, "wb") as f:
            f.write(content)
        return path

    def run_tool(self, specs):
        """Runs csv_tool on a list of specs; returns its answers."""
        spec_path = os.path.join(self.work, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(specs, f)
        out = subprocess.run([self.tool, spec_path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, check=False)
        if out.returncode != 0:
            raise SystemExit("csv_tool failed (%d): %s" %
                             (out.returncode, out.stderr.decode()))
        return json.loads(out.stdout)

    # Comparison ------------------------------------------------------------

    @staticmethod
    def estc_value(type_name, v):
        if type_name == "string":
            return bytes.fromhex(v)
        if type_name in ("int32", "int64"):
            return int(v)
        return float(v)  # "nan", "inf", "-inf" and numbers alike

    @staticmethod
    def same(type_name, a, b):
        if type_name == "string":
            return a == b
        if type_name in ("int32", "int64"):
            return int(a) == int(b)
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if type_name == "float32":
            return struct.pack("<f", a) == struct.pack("<f", b)
        return struct.pack("<d", a) == struct.pack("<d", b)

    def compare(self, what, types, tf_columns, tf_error, estc):
        self.checked += 1
        estc_error = estc["error"]
        if (tf_error is None) != (estc_error is None):
            self.failures.append("%s: TF %s, estc %s" % (
                what, "raised: " + tf_error if tf_error else "read fine",
                "raised: " + estc_error if estc_error else "read fine"))
            return
        if tf_error is not None:
            self.errors_matched += 1
        estc_columns = [[self.estc_value(t, v) for v in col]
                        for t, col in zip(types, estc["columns"])]
        if len(estc_columns) != len(tf_columns) and any(tf_columns):
            self.failures.append("%s: %d columns from TF, %d from estc" % (
                what, len(tf_columns), len(estc_columns)))
            return
        for c, (t, want, got) in enumerate(zip(types, tf_columns,
                                               estc_columns)):
            if len(want) != len(got) or not all(
                    self.same(t, a, b) for a, b in zip(want, got)):
                self.failures.append("%s: column %d: TF %r, estc %r" % (
                    what, c, want, got))
                return

    # TF's readers ----------------------------------------------------------

    @staticmethod
    def tf_defaults(defaults, for_decode):
        out = []
        for type_name, value in defaults:
            if value is None:
                out.append(tf.constant([], tf_dtype(type_name)) if for_decode
                           else tf_dtype(type_name))
            else:
                out.append(tf.constant([py_value(type_name, value)],
                                       tf_dtype(type_name)))
        return out

    @staticmethod
    def to_python(type_name, v):
        v = v.numpy() if hasattr(v, "numpy") else v
        if type_name == "string":
            return bytes(v)
        if type_name in ("int32", "int64"):
            return int(v)
        return float(v)

    def tf_dataset(self, path, defaults, opts):
        columns = [[] for _ in defaults]
        try:
            ds = tf.data.experimental.CsvDataset(
                path, self.tf_defaults(defaults, False),
                header=opts.get("header", False),
                field_delim=opts.get("field_delim", ","),
                use_quote_delim=opts.get("use_quote_delim", True),
                na_value=opts.get("na_value", ""),
                select_cols=opts.get("select_cols"),
                exclude_cols=opts.get("exclude_cols"),
                buffer_size=opts.get("buffer_size"))
            for row in ds:
                for i, v in enumerate(row):
                    columns[i].append(self.to_python(defaults[i][0], v))
        except tf.errors.OpError as e:
            return columns, tf_message(e)
        except UnicodeDecodeError:
            # TF's message quotes the field, and Python cannot decode it.
            return columns, "an error whose message is not UTF-8"
        return columns, None

    def tf_decode(self, records, defaults, opts):
        try:
            out = tf.io.decode_csv(
                tf.constant(records, tf.string),
                self.tf_defaults(defaults, True),
                field_delim=opts.get("field_delim", ","),
                use_quote_delim=opts.get("use_quote_delim", True),
                na_value=opts.get("na_value", ""),
                select_cols=opts.get("select_cols"))
        except tf.errors.OpError as e:
            return [[] for _ in defaults], tf_message(e)
        return [[self.to_python(defaults[i][0], v) for v in col.numpy()]
                for i, col in enumerate(out)], None

    @staticmethod
    def tf_lines(path):
        return [bytes(l.numpy()) for l in tf.data.TextLineDataset(path)]

    # Specs -----------------------------------------------------------------

    @staticmethod
    def spec(mode, defaults, opts, **more):
        s = {"mode": mode,
             "defaults": [{"type": t} if v is None else
                          {"type": t, "value": str(v)} for t, v in defaults]}
        for key in ("header", "field_delim", "use_quote_delim", "na_value",
                    "select_cols", "exclude_cols", "buffer_size", "batch"):
            if key in opts and opts[key] is not None:
                s[key] = opts[key]
        s.update(more)
        return s

    # The checks ------------------------------------------------------------

    def check_files(self, cases):
        """CsvDataset, TextLineDataset + decode_csv and TextLineDataset on
        each case's file."""
        specs, expected = [], []
        for name, content, defaults, opts in cases:
            path = self.write(content)
            types = [t for t, _ in defaults]
            specs.append(self.spec("dataset", defaults, opts, file=path))
            expected.append(("dataset " + name, types,
                             self.tf_dataset(path, defaults, opts)))
            # CsvReader in batches must give the same.
            batch_opts = dict(opts, batch=2)
            specs.append(self.spec("dataset", defaults, batch_opts, file=path))
            expected.append(("dataset(batch=2) " + name, types,
                             self.tf_dataset(path, defaults, opts)))
            specs.append({"mode": "lines", "file": path})
            expected.append(("lines " + name, ["string"],
                             ([self.tf_lines(path)], None)))
            if opts.get("header") or opts.get("exclude_cols"):
                continue  # decode_csv has neither
            lines = self.tf_lines(path)
            specs.append(self.spec("decode", defaults, opts, file=path))
            expected.append(("decode " + name, types,
                             self.tf_decode(lines, defaults, opts)))
        for (what, types, (columns, error)), got in zip(
                expected, self.run_tool(specs)):
            self.compare(what, types, columns, error, got)

    def check_records(self, cases):
        """decode_csv on records as given (line breaks inside)."""
        specs, expected = [], []
        for name, records, defaults, opts in cases:
            types = [t for t, _ in defaults]
            specs.append(self.spec("decode", defaults, opts,
                                   records=[r.decode() for r in records]))
            expected.append(("records " + name, types,
                             self.tf_decode(records, defaults, opts)))
        for (what, types, (columns, error)), got in zip(
                expected, self.run_tool(specs)):
            self.compare(what, types, columns, error, got)

    def check_numbers(self, values):
        """Each value alone in a field of each numeric type, through both of
        TF's parsers."""
        specs, expected = [], []
        for value in values:
            field = b'"' + value.replace(b'"', b'""') + b'"'
            path = self.write(field + b"\n")
            for type_name in ("int32", "int64", "float32", "float64"):
                defaults = [(type_name, 0)]
                what = "%s %r" % (type_name, value)
                specs.append(self.spec("dataset", defaults, {}, file=path))
                expected.append(("dataset " + what, [type_name],
                                 self.tf_dataset(path, defaults, {})))
                if b"\x00" in value or any(c >= 0x80 for c in value):
                    continue  # csv_tool's JSON strings are UTF-8 text
                specs.append(self.spec("decode", defaults, {},
                                       records=[field.decode("latin-1")]))
                expected.append(("decode " + what, [type_name],
                                 self.tf_decode([field], defaults, {})))
        for (what, types, (columns, error)), got in zip(
                expected, self.run_tool(specs)):
            self.compare(what, types, columns, error, got)

    def check_inference(self, cases):
        """make_csv_dataset's names and types."""
        specs, expected = [], []
        for name, contents, opts in cases:
            files = [self.write(c) for c in contents]
            rows = opts.get("num_rows_for_inference", 100)
            try:
                ds = tf.data.experimental.make_csv_dataset(
                    files, batch_size=1, num_epochs=1, shuffle=False,
                    header=True, na_value=opts.get("na_value", ""),
                    field_delim=opts.get("field_delim", ","),
                    select_columns=opts.get("select_cols"),
                    num_rows_for_inference=rows)
                want = ([k.encode() for k in ds.element_spec],
                        [v.dtype.name for v in ds.element_spec.values()])
                error = None
            except (ValueError, RuntimeError, tf.errors.OpError) as e:
                want, error = None, str(e).splitlines()[0]
            spec = {"mode": "infer", "files": files, "header": True,
                    "num_rows_for_inference": -1 if rows is None else rows}
            for key in ("na_value", "field_delim", "select_cols"):
                if key in opts:
                    spec[key] = opts[key]
            specs.append(spec)
            expected.append(("infer " + name, want, error,
                             opts.get("select_cols")))
        for (what, want, error, select), got in zip(expected,
                                                    self.run_tool(specs)):
            self.checked += 1
            if (error is None) != (got["error"] is None):
                self.failures.append("%s: TF %s, estc %s" % (
                    what, "raised: " + error if error else "inferred",
                    "raised: " + got["error"] if got["error"] else "inferred"))
                continue
            if error is not None:
                self.errors_matched += 1
                continue
            names, dtypes = want
            got_names = [bytes.fromhex(n) for n in got["names"]]
            if select:
                got_names = [got_names[i] for i in select]
            if (got_names, got["dtypes"]) != (names, dtypes):
                self.failures.append("%s: TF %r %r, estc %r %r" % (
                    what, names, dtypes, got_names, got["dtypes"]))


I32 = ("int32", 0)
S = ("string", "")

FILE_CASES = [
    ("every type", b'1,2,3.5,4.25,abc\n-1,-2,1e3,-0,"y z"\n',
     [("int32", 0), ("int64", 0), ("float32", 0), ("float64", 0), S], {}),
    ("required columns", b"1,2.5,x\n", [("int32", None), ("float64", None),
                                        ("string", None)], {}),
    ("header", b"a,b\n1,2\n", [I32, I32], {"header": True}),
    ("multi-line header", b'"a\nb",c,d\n1,2\n', [I32, I32], {"header": True}),
    ("header only", b"a,b\n", [I32, I32], {"header": True}),
    ("header only, no newline", b"a,b", [I32, I32], {"header": True}),
    ("empty file", b"", [I32, I32], {}),
    ("empty file with header", b"", [I32, I32], {"header": True}),
    ("quoting", b'"a,b","c""d"\n"x\ny",""\n"",z\n', [S, S], {}),
    ("quoted line breaks", b'1,"two\r\nlines"\r\n2,"\r"\n', [I32, S], {}),
    ("crlf", b"1,2\r\n3,4\r\n", [I32, I32], {}),
    ("lone cr", b"1,2\r3,4\r\n5,6", [I32, I32], {}),
    ("no final newline", b"1,2\n3,4", [I32, I32], {}),
    ("empty lines, one column", b"1\n\n3\n\r\n", [("int32", 7)], {}),
    ("empty lines, two columns", b"1,2\n\n3,4\n", [I32, I32], {}),
    ("missing trailing field", b"1,\n2,", [I32, ("int32", 5)], {}),
    ("na_value", b'1,NA,"NA"\nNA,2,x\n,,\n',
     [("int32", -1), ("float64", 7.5), ("string", "dflt")],
     {"na_value": "NA"}),
    ("na_value in a required column", b"1,2\n3,NA\n",
     [("int32", None), ("int32", None)], {"na_value": "NA"}),
    ("required field missing", b"1,2\n3,\n", [("int32", None), I32], {}),
    ("required string empty", b'x\n""\n', [("string", None)], {}),
    ("select_cols", b"1,2,3\n4,5,6,7\n", [I32, I32], {"select_cols": [0, 2]}),
    ("select_cols, malformed field after", b'4,5,6,7,junk"\n', [I32, I32],
     {"select_cols": [0, 2]}),
    ("select_cols, too few fields", b"1,2\n", [I32, I32],
     {"select_cols": [0, 2]}),
    ("select_cols, trailing delimiter", b"1,2,\n", [I32, ("int32", 9)],
     {"select_cols": [0, 2]}),
    ("exclude_cols", b"1,2,3\n4,5,6\n", [I32, I32], {"exclude_cols": [1]}),
    ("exclude_cols, too many", b"1,2,3,4\n", [I32, I32],
     {"exclude_cols": [1]}),
    ("too many fields", b"1,2,3\n", [I32, I32], {}),
    ("too few fields", b"1\n", [I32, I32], {}),
    ("bad int after good rows", b"1,2\n3,4\n5,x\n7,8\n", [I32, I32], {}),
    ("unterminated quote", b'1,"abc\n2,3\n', [I32, S], {}),
    ("quote in unquoted field", b'a"b,c\n', [S, S], {}),
    ("quote not doubled", b'"a"b,c\n', [S, S], {}),
    ("quote then space", b'"a" ,b\n', [S, S], {}),
    ("space then quote", b' "a",b\n', [S, S], {}),
    ("no quoting", b'a"b,"c\n', [S, S], {"use_quote_delim": False}),
    ("tab", b'1\t"a\tb"\n2\tc\n', [I32, S], {"field_delim": "\t"}),
    ("semicolon", b"1;2,5\n", [I32, S], {"field_delim": ";"}),
    ("spaces around numbers", b" 1 ,\t2\t, 3.5 \n", [I32, S, ("float32", 0)],
     {}),
    ("blank float", b" ,1\n", [("float32", 5), I32], {}),
    ("quoted numbers", b'"7"," 8 "\n', [I32, I32], {}),
    ("empty quoted field", b'"",x\n', [("string", "d"), S], {}),
    ("utf-8 and bytes", "h\u00e9llo,w\u00f6rld\n".encode() + b"\xff\xfe,x\n",
     [S, S], {}),
    ("small buffer", b'h1,h2,h3\r\n1,"a,b",2.5\r\n"2","x""y""",-1e3\r'
     b'3,"multi\nline\r\nfield",\n4,,""\n5,plain,0x10',
     [("int64", None), ("string", "-"), ("float64", 9)],
     {"header": True, "buffer_size": 3}),
    ("small buffer, no header", b'1,"a,b",2.5\r\n"2","x""y""",-1e3\r'
     b'4,,""\n5,plain,0x10',
     [("int64", None), ("string", "-"), ("float64", 9)], {"buffer_size": 2}),
    ("last line only cr", b"1\n\r", [("int32", 3)], {}),
    ("cr inside a line", b"a\rb,c\n", [S, S], {}),
]

RECORD_CASES = [
    ("line break after delimiter", [b"1,\n"], [I32], {}),
    ("line break in unquoted field", [b"1,2\n"], [I32, I32], {}),
    ("line breaks where fields start", [b"\n1,\r\n2"], [I32, I32], {}),
    ("empty record", [b""], [I32], {}),
    ("quoted line break", [b'"a\nb",c'], [S, S], {}),
    ("select_cols stops early", [b'1,2,3,x"y'], [I32, I32],
     {"select_cols": [0, 2]}),
    ("select_cols trailing delimiter", [b"1,2,"], [I32, I32],
     {"select_cols": [0, 2]}),
    ("trailing delimiter", [b"1,2,"], [I32, I32, I32], {}),
    ("lone quote", [b'"'], [S], {}),
    ("empty quotes", [b'""'], [("string", "x")], {}),
    ("quote then line break", [b'"a"\n'], [S], {}),
    ("many records, one bad", [b"1", b"2", b"x", b"4"], [I32], {}),
]

NUMBER_VALUES = [v.encode("latin-1") for v in [
    "1", "+1", "-1", " 1", "1 ", "\t1\t", "01", "0x10", "1e3", "1.0",
    "2147483647", "2147483648", "-2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "--1", "-", "- 1", "1 2", "0", "-0",
    "0" * 37 + "1", "\x0b1\x0c", "", " ", "  ",
    " 1.5 ", "1.", ".5", ".", "1E3", "1e+3", "1e-3", "1e", "1e+", "e3",
    "nan", "NaN", "-nan", "+nan", "NAN", "inf", "-inf", "+inf", "Inf", "INF",
    "infinity", "Infinity", "-Infinity", "nan(1)", "0X1f", "-0x10", "0x1.8",
    "0x1p3", "1e40", "-1e40", "1e-50", "1e-320", "1e400", "3.4028235e38",
    "3.4028236e38", "3.40282356e38", "-0.0", "1_000", "1.5x",
    "0.1" + "0" * 27 + "1", "0.1" + "0" * 28 + "1", "1d3", "1 .5", "+-1",
    "+.5", "-.5e-2", "4.9e-324", "2.5e-324", "1e-46", "1.4e-45", "-1.4e-45",
    "1.17549435e-38", "1.1754942e-38", "7e-46", "0x", "0xg", "0x10 ",
    " 0x10", "1.5e308", "1.8e308", "0x123456789abcdef0123",
    "0x" + "f" * 29, "0.000000000000000000001", "1" + "0" * 25,
    "0e999999999999", "1e999999999999999999999", "1e-5000",
    "1" + "0" * 38 + "e-30", "0x10e2", ".e5", "-.", "0x.1", "in", "na",
    "1.e5", " " * 28 + "1.5", " " * 29 + "1.5", "0.30000000000000004",
    "1.00000000000000011102230246251565404236316680908203125",
    "16777217", "9007199254740993", "1\x002", "\xa01"]]

INFERENCE_CASES = [
    ("each type", [b"i32,i64,f32,f64,s,none,neg_inf,under\n"
                   b"1,3000000000,1.5,1e40,abc,,-inf,1_000\n"
                   b"-2,1,2,1,1,,-Infinity,2\n"], {}),
    ("not floats", [b"a,b,c,d,e,f\nnan,inf,1e400,0x10,3.40282356e38,+5\n"],
     {}),
    ("types widen", [b"a,b,c,d\n1,1.5,3000000000,x\n2.5,2,4,5\n"], {}),
    ("na_value", [b"a,b\nNA,1\n2,x\n"], {"na_value": "NA"}),
    ("one row", [b"a,b\nNA,1\n2,x\n"],
     {"na_value": "NA", "num_rows_for_inference": 1}),
    ("all rows of two files", [b"a,b\nNA,1\n2,x\n", b"a,b\n1.5,2\n"],
     {"na_value": "NA", "num_rows_for_inference": None}),
    ("rows across files", [b"a,b\nNA,1\n2,x\n", b"a,b\n1.5,2\n"],
     {"na_value": "NA", "num_rows_for_inference": 2}),
    ("select_columns", [b"a,b,c\n1.5,2,x\n"], {"select_cols": [1, 2]}),
    ("field count", [b"a,b\n1,2\n3\n"], {}),
    ("field count one past the rows", [b"a,b\n1,2\n3\n"],
     {"num_rows_for_inference": 1}),
    ("empty line", [b"a\n1\n\n2\n"], {}),
    ("quoted", [b'a,"b,c"\n"1","x,y"\n'], {}),
    ("spaces", [b"a,b\n 1 , 2.5 \n"], {}),
    ("crlf", [b"a,b\r\n1,2\r\n"], {}),
    ("semicolon", [b"a;b\n1;2.5\n"], {"field_delim": ";"}),
    ("headers differ", [b"a,b\n1,2\n", b"a,c\n1,2\n"], {}),
    ("empty file", [b""], {}),
    ("duplicate names", [b"a,a\n1,2\n"], {}),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True, help="csv_tool")
    parser.add_argument("--work", required=True, help="a scratch directory")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    global tf
    try:
        import tensorflow
        tf = tensorflow
    except Exception as e:  # ImportError, or a broken installation
        print("SKIP: TensorFlow cannot be imported (%s: %s)" %
              (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        return 77
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    print("TensorFlow %s" % tf.__version__)
    checker = Checker(args.tool, args.work)
    checker.check_files(FILE_CASES)
    checker.check_records(RECORD_CASES)
    checker.check_numbers(NUMBER_VALUES)
    checker.check_inference(INFERENCE_CASES)
    for f in checker.failures:
        print("FAIL: " + f)
    print("%d comparisons, %d of them errors in both, %d failures" % (
        checker.checked, checker.errors_matched, len(checker.failures)))
    return 1 if checker.failures else 0


if __name__ == "__main__":
    sys.exit(main())
