#!/usr/bin/python3
"""Feeds sextant-cli hostile input, as a user with broken files would, and counts what happened.

    /usr/bin/python3 scripts/hostile-probe.py SEXTANT_CLI [--per-seed N] [--seed S] [--shared DIR] [--keep DIR]

Five families, each from real files mutated deterministically (the same --seed gives the same
inputs, so a finding reproduces):
  model     byte flips, truncations, inserted bytes and protobuf-level edits (huge / negative / zero
            dims, unknown dtypes, NaN and huge attributes, dropped initializers, renamed values,
            duplicated nodes) of samples/, tests/data/ and the small models in ../shared/models,
            run with `sextant-cli run`
  target    JSON edits of the default target (resources/targets/npu-a.json): missing, negative, huge,
            fractional, NaN, string and nested values, truncated text; `compile --target`
  artifact  number edits of a compiled manifest.json (most with its hash file rewritten, as a
            forger would, so they reach the range checks) and byte flips of tasks.bin / weights.bin;
            `run ARTIFACT`
  profile   byte flips and truncations of a profile database written by `run --profile`;
            `compare-runs` and `export-trace`
  inputs    byte flips and dtype / name / shape edits of input_0.pb; `run --inputs`
Every case runs with a 30 s timeout and a 4 GiB address-space limit. Outcomes: accepted (exit 0
or 1), clear error (exit 2 and exactly one stderr line starting "error: ", or exit 3 - the simulator's
watchdog or race checker stopped the run - with an "error: " line among its report), unclear
(exit 2 or 3 otherwise),
crash (any other exit or a signal), hang (timeout). Prints one line per
family and the cases that were not accepted or a clear error; exits 1 if there was any crash,
hang or unclear message. --keep DIR keeps those cases' inputs.
"""

import argparse
import copy
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TIMEOUT = 30
MEMORY = 4 << 30


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


class Tally:
    def __init__(self, keep):
        self.counts = {}
        self.findings = []
        self.accepted = []
        self.keep = keep

    def run(self, family, label, argv, keep_files=()):
        try:
            p = subprocess.run(argv, capture_output=True, timeout=TIMEOUT, preexec_fn=limit_memory)
            rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            rc, err = None, ""
        lines = [l for l in err.splitlines() if l.strip()]
        if rc is None:
            outcome = "hang"
        elif rc in (0, 1):
            outcome = "accepted"
        elif rc == 2:
            outcome = "clear" if len(lines) == 1 and lines[0].startswith("error: ") else "unclear"
        elif rc == 3: # the watchdog or race checker stopped the run: its report may take lines
            outcome = "clear" if any(l.startswith("error: ") for l in lines) else "unclear"
        else:
            outcome = "crash"
        c = self.counts.setdefault(family, {})
        c[outcome] = c.get(outcome, 0) + 1
        if outcome == "accepted":
            self.accepted.append((family, label))
        if outcome in ("hang", "crash", "unclear"):
            self.findings.append((family, label, outcome, rc, err.strip()[-400:]))
            if self.keep:
                dest = os.path.join(self.keep, f"{len(self.findings):03d}-{family}")
                os.makedirs(dest, exist_ok=True)
                for f in keep_files:
                    if os.path.isdir(f):
                        shutil.copytree(f, os.path.join(dest, os.path.basename(f)), dirs_exist_ok=True)
                    elif os.path.exists(f):
                        shutil.copy(f, dest)
        return outcome


# ---- models ---------------------------------------------------------------------------------

def seed_models(shared):
    seeds = [os.path.join(ROOT, "samples", "residual_cnn.onnx")]
    for d in (os.path.join(ROOT, "tests", "data"),):
        for base, _, files in sorted(os.walk(d)):
            seeds += [os.path.join(base, f) for f in sorted(files) if f.endswith(".onnx") and "bad" not in base]
    if shared and os.path.isdir(os.path.join(shared, "models")):
        for base, _, files in sorted(os.walk(os.path.join(shared, "models"))):
            for f in sorted(files):
                p = os.path.join(base, f)
                if f.endswith(".onnx") and os.path.getsize(p) < (1 << 20):
                    seeds.append(p)
    return seeds


def byte_mutation(data, rng):
    b = bytearray(data)
    kind = rng.randrange(3)
    if kind == 0 and b:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b), "flip"
    if kind == 1 and b:
        return bytes(b[: rng.randrange(len(b))]), "truncate"
    at = rng.randrange(len(b) + 1)
    return bytes(b[:at]) + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))) + bytes(b[at:]), "insert"


HUGE = [0, -1, -7, 2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63 - 1]


def proto_mutation(model, rng):
    m = copy.deepcopy(model)
    g = m.graph
    kinds = ["dim", "dtype", "attr", "drop_init", "rename", "dup_node", "opset", "init_dims"]
    kind = rng.choice(kinds)
    if kind == "dim":
        vis = list(g.input) + list(g.output) + list(g.value_info)
        vis = [v for v in vis if v.type.tensor_type.shape.dim]
        if vis:
            d = rng.choice(rng.choice(vis).type.tensor_type.shape.dim)
            d.dim_value = rng.choice(HUGE)
    elif kind == "dtype":
        vis = list(g.input) + list(g.output) + list(g.initializer)
        if vis:
            v = rng.choice(vis)
            t = rng.choice([999, TensorProto.STRING, TensorProto.COMPLEX64, TensorProto.FLOAT16, TensorProto.DOUBLE])
            if hasattr(v, "data_type"):
                v.data_type = t
            else:
                v.type.tensor_type.elem_type = t
    elif kind == "attr":
        nodes = [n for n in g.node if n.attribute]
        if nodes:
            a = rng.choice(rng.choice(nodes).attribute)
            if a.ints:
                a.ints[rng.randrange(len(a.ints))] = rng.choice(HUGE)
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice([float("nan"), float("inf"), -1e38, 0.0])
            elif a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(HUGE)
            else:
                a.type = onnx.AttributeProto.STRINGS
    elif kind == "drop_init" and g.initializer:
        del g.initializer[rng.randrange(len(g.initializer))]
    elif kind == "rename" and g.node:
        n = rng.choice(g.node)
        if n.input:
            n.input[rng.randrange(len(n.input))] = rng.choice(["", "ghost", n.output[0] if n.output else "x"])
    elif kind == "dup_node" and g.node:
        g.node.append(copy.deepcopy(rng.choice(g.node)))
    elif kind == "opset":
        for o in m.opset_import:
            o.version = rng.choice([0, 1, 5, 99, 2 ** 40])
    elif kind == "init_dims" and g.initializer:
        t = rng.choice(g.initializer)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(HUGE)
    return m.SerializeToString(), "proto-" + kind


def probe_models(cli, tally, rng, per_seed, work, shared):
    for seed in seed_models(shared):
        data = open(seed, "rb").read()
        try:
            model = onnx.load_from_string(data)
        except Exception:
            model = None
        for k in range(per_seed):
            if model is not None and k % 2 == 1:
                mutant, how = proto_mutation(model, rng)
            else:
                mutant, how = byte_mutation(data, rng)
            path = os.path.join(work, "mutant.onnx")
            open(path, "wb").write(mutant)
            tally.run("model", f"{os.path.relpath(seed, ROOT)} #{k} {how}", [cli, "run", path], [path])


# ---- targets --------------------------------------------------------------------------------

def probe_targets(cli, tally, rng, count, work):
    base = json.load(open(os.path.join(ROOT, "resources", "targets", "npu-a.json")))
    values = [None, -1, 0, 0.5, 2 ** 64, 2 ** 63, 1e308, 1e-300, "eight", [], {}, True, float("nan")]
    sample = os.path.join(ROOT, "samples", "residual_cnn.onnx")
    for k in range(count):
        t = copy.deepcopy(base)
        key = rng.choice(sorted(t.keys()))
        if rng.random() < 0.15:
            del t[key]
        else:
            t[key] = rng.choice(values)
        text = json.dumps(t, allow_nan=True)
        if rng.random() < 0.1:
            text = text[: rng.randrange(len(text))]
        path = os.path.join(work, "target.json")
        open(path, "w").write(text)
        tally.run("target", f"#{k} {key}", [cli, "compile", sample, "--target", path, "-o", os.path.join(work, "t-out")],
                  [path])


# ---- artifacts ------------------------------------------------------------------------------

def json_numbers(node, path=()):
    """Every number in a JSON document, as the list of keys and indexes leading to it."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from json_numbers(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from json_numbers(v, path + (i,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path


def set_path(doc, path, value):
    cur = doc
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value


def path_text(path):
    return "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_manifest(art, doc, rehash):
    """Writes an edited manifest; with `rehash` also its hash file, as a forger would, so the edit
    reaches the range checks instead of stopping at the hash."""
    text = json.dumps(doc).encode()
    open(os.path.join(art, "manifest.json"), "wb").write(text)
    hash_file = os.path.join(art, "manifest.json.fnv1a64")
    if rehash and os.path.exists(hash_file):
        open(hash_file, "w").write("%016x  manifest.json\n" % fnv1a64(text))


def probe_artifacts(cli, tally, rng, count, work):
    good = os.path.join(work, "artifact-good")
    subprocess.run([cli, "compile", os.path.join(ROOT, "samples", "residual_cnn.onnx"), "-o", good],
                   capture_output=True, check=True)
    manifest = json.load(open(os.path.join(good, "manifest.json")))
    numbers = list(json_numbers(manifest))
    values = [0, -1, 1, 2 ** 31, 2 ** 32, 2 ** 62, 2 ** 64 - 1, 2 ** 64, 0.5, 1e308]
    for k in range(count):
        art = os.path.join(work, "artifact")
        shutil.rmtree(art, ignore_errors=True)
        shutil.copytree(good, art)
        r = rng.random()
        if r < 0.6 and numbers:
            where = rng.choice(numbers)
            doc = copy.deepcopy(manifest)
            set_path(doc, where, rng.choice(values))
            rehash = rng.random() < 0.8
            write_manifest(art, doc, rehash)
            label = f"#{k} manifest{path_text(where)}" + (" (hash rewritten)" if rehash else "")
        elif r < 0.7:
            doc = copy.deepcopy(manifest)
            key = rng.choice(sorted(doc.keys()))
            doc[key] = rng.choice([[], {}, None, "x"])
            write_manifest(art, doc, True)
            label = f"#{k} manifest.{key} replaced (hash rewritten)"
        else:
            name = rng.choice(["tasks.bin", "weights.bin", "manifest.json"])
            f = os.path.join(art, name)
            mutant, how = byte_mutation(open(f, "rb").read(), rng)
            open(f, "wb").write(mutant)
            label = f"#{k} {name} {how}"
        tally.run("artifact", label, [cli, "run", art], [art])


# ---- profile databases ----------------------------------------------------------------------

def probe_profiles(cli, tally, rng, count, work):
    good = os.path.join(work, "good.db")
    sample = os.path.join(ROOT, "samples", "residual_cnn.onnx")
    for level in ("-O1", "-O2"):
        subprocess.run([cli, "run", sample, level, "--profile", good], capture_output=True, check=True)
    data = open(good, "rb").read()
    for k in range(count):
        path = os.path.join(work, "mutant.db")
        if k % 3 == 2:
            shutil.copy(good, path)
            con = sqlite3.connect(path)
            tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
            table = rng.choice(tables)
            cols = [r[1] for r in con.execute(f"pragma table_info({table})")]
            col = rng.choice(cols)
            value = rng.choice(["text", -1, 2 ** 62, None, 1.5, b"\x00\x01"])
            try:
                con.execute(f"update {table} set {col} = ? where rowid in (select rowid from {table} limit 3)",
                            (value,))
                con.commit()
            except sqlite3.Error:
                con.rollback() # a constraint the schema itself enforces: the value never lands
            con.close()
            how = f"{table}.{col}={value!r}"
        else:
            mutant, how = byte_mutation(data, rng)
            open(path, "wb").write(mutant)
        if k % 2 == 0:
            argv = [cli, "compare-runs", path]
        else:
            argv = [cli, "export-trace", path, "-o", os.path.join(work, "trace.json")]
        tally.run("profile", f"#{k} {how} ({argv[1]})", argv, [path])


# ---- inputs ---------------------------------------------------------------------------------

def probe_inputs(cli, tally, rng, count, work):
    sample = os.path.join(ROOT, "samples", "residual_cnn.onnx")
    good = open(os.path.join(ROOT, "samples", "residual_cnn", "input_0.pb"), "rb").read()
    proto = TensorProto()
    proto.ParseFromString(good)
    folder = os.path.join(work, "inputs")
    os.makedirs(folder, exist_ok=True)
    for k in range(count):
        if k % 2 == 0:
            mutant, how = byte_mutation(good, rng)
        else:
            t = copy.deepcopy(proto)
            how = rng.choice(["dtype", "name", "dims", "raw"])
            if how == "dtype":
                t.data_type = rng.choice([999, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT64])
            elif how == "name":
                t.name = "not_the_input"
            elif how == "dims":
                t.dims[rng.randrange(len(t.dims))] = rng.choice(HUGE)
            else:
                t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
            mutant = t.SerializeToString()
        open(os.path.join(folder, "input_0.pb"), "wb").write(mutant)
        tally.run("inputs", f"#{k} {how}", [cli, "run", sample, "--inputs", folder], [folder])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cli")
    ap.add_argument("--per-seed", type=int, default=20, help="mutants per seed model")
    ap.add_argument("--count", type=int, default=200, help="cases per other family")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--keep", help="copy the inputs of every finding here")
    ap.add_argument("--accepted", action="store_true", help="also list the accepted inputs")
    ap.add_argument("--families", default="model,target,artifact,profile,inputs")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    rng = random.Random(a.seed)
    tally = Tally(a.keep)
    with tempfile.TemporaryDirectory(prefix="sextant-probe-") as work:
        families = a.families.split(",")
        if "model" in families:
            probe_models(cli, tally, rng, a.per_seed, work, a.shared)
        if "target" in families:
            probe_targets(cli, tally, rng, a.count, work)
        if "artifact" in families:
            probe_artifacts(cli, tally, rng, a.count, work)
        if "profile" in families:
            probe_profiles(cli, tally, rng, a.count, work)
        if "inputs" in families:
            probe_inputs(cli, tally, rng, a.count, work)
        for family, label in tally.accepted if a.accepted else []:
            print(f"accepted: {family} {label}")
        for family, label, outcome, rc, err in tally.findings:
            print(f"{outcome}: {family} {label} (exit {rc}): {err}")
    total = 0
    for family, c in tally.counts.items():
        n = sum(c.values())
        total += n
        parts = ", ".join(f"{k} {c.get(k, 0)}" for k in ("accepted", "clear", "unclear", "crash", "hang"))
        print(f"{family}: {n} inputs: {parts}")
    bad = sum(c.get(k, 0) for c in tally.counts.values() for k in ("unclear", "crash", "hang"))
    print(f"total: {total} inputs, {bad} crashes, hangs or unclear messages")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
