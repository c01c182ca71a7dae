# SPDX-License-Identifier: Apache-2.0
"""The cost of one eager op from Python, beside baselines measured in the same run.

    python3 bench/bench_python.py [--number N] [--repeat R]

with a python3 that imports tensorplug (the wheel installed; `make bench_python` in the build
folder makes a virtual environment with both wheels and runs this). Each figure is the median,
over R timeit repeats of N calls, of the time per call, in nanoseconds.

The ops run on 1-element float32 tensors: tp.nn.relu(t) and a + b. They are measured in three
device setups, each in its own interpreter since the runtime sets its devices up once per
process: the default plug-ins (the APU, if its wheel is installed, takes relu and add), the CPU
alone (TP_PLUGINS=none), and the CPU asked for by `with tp.device('/CPU:0')` with the plug-ins
loaded (through the private _test_device_push before tp.device exists). The baselines: the
builtin abs() on an int,
a bare call of a trivial C function (METH_O, as tp.nn.relu is); numpy.add on the same
1-element float32 arrays, with and without out=; torch.relu and torch.add(out=) when torch
imports.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import timeit

# Runs in a child interpreter: measures one device setup and prints a JSON list of
# [label, ns per call] pairs.
CHILD = r"""
import json, statistics, sys, timeit
import tensorplug as tp
number, repeat, scope = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def per_call_ns(statement, names):
    times = timeit.repeat(statement, globals=names, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e9

results = []
def measure():
    a = tp.constant([1.5], dtype=tp.float32)
    b = tp.constant([-2.0], dtype=tp.float32)
    relu = tp.nn.relu
    names = {"a": a, "b": b, "relu": relu, "add": getattr(tp, "add", tp._tensorplug.add)}
    results.append(["tp.nn.relu(t)  [%s]" % relu(a).device, per_call_ns("relu(a)", names)])
    resident = relu(a)
    if resident.device != a.device:  # each call above copied t to the op's device first
        names["r"] = resident
        results.append(["tp.nn.relu(t), t already there  [%s]" % relu(resident).device,
                        per_call_ns("relu(r)", names)])
    try:
        a + b
        statement, label = "a + b", "a + b"
    except TypeError:  # the Tensor operators are not in this build yet
        statement, label = "add(a, b)", "tp.add(a, b)"
    results.append(["%s  [%s]" % (label, eval(statement, names).device),
                    per_call_ns(statement, names)])

if scope == "none":
    measure()
elif hasattr(tp, "device"):
    with tp.device(scope):
        measure()
elif hasattr(tp._tensorplug, "_test_device_push"):  # the same tp_device_push, before tp.device
    tp._tensorplug._test_device_push(scope)
    measure()
    tp._tensorplug._test_device_pop()
print(json.dumps(results))
"""


def per_call_ns(statement, names, number, repeat):
    times = timeit.repeat(statement, globals=names, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e9


def baselines(number, repeat):
    rows = []
    x = -7
    rows.append(["abs(x), x an int: builtin C call", per_call_ns("abs(x)", {"x": x}, number,
                                                                      repeat)])
    import numpy
    a = numpy.array([1.5], dtype=numpy.float32)
    b = numpy.array([-2.0], dtype=numpy.float32)
    out = numpy.empty(1, dtype=numpy.float32)
    names = {"np": numpy, "a": a, "b": b, "out": out, "add": numpy.add}
    rows.append(["numpy.add(a, b)", per_call_ns("add(a, b)", names, number, repeat)])
    rows.append(["numpy.add(a, b, out=c)", per_call_ns("add(a, b, out=out)", names, number,
                                                        repeat)])
    try:
        import torch
    except ImportError as error:
        rows.append(["torch: skipped, it does not import (%s)" % error, None])
        return rows
    torch.set_num_threads(1)
    ta = torch.tensor([1.5], dtype=torch.float32)
    tb = torch.tensor([-2.0], dtype=torch.float32)
    tout = torch.empty(1, dtype=torch.float32)
    names = {"torch": torch, "a": ta, "b": tb, "out": tout, "relu": torch.relu,
             "add": torch.add}
    rows.append(["torch.relu(t) (%s)" % torch.__version__, per_call_ns("relu(a)", names, number,
                                                                      repeat)])
    rows.append(["torch.add(a, b, out=c)", per_call_ns("add(a, b, out=out)", names, number,
                                                        repeat)])
    return rows


def setup_rows(title, env, scope, number, repeat):
    environment = dict(os.environ)
    environment.update(env)
    result = subprocess.run([sys.executable, "-c", CHILD, str(number), str(repeat), scope],
                            env=environment, capture_output=True, text=True)
    if result.returncode != 0:
        return [["%s: failed: %s" % (title, result.stderr.strip().splitlines()[-1:]), None]]
    rows = json.loads(result.stdout)
    if not rows:
        return [["%s: skipped, this build has no tp.device" % title, None]]
    return [["%s: %s" % (title, label), ns] for label, ns in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=200000, help="calls per timeit repeat")
    parser.add_argument("--repeat", type=int, default=7, help="timeit repeats")
    args = parser.parse_args()
    rows = []
    rows += setup_rows("plug-ins", {}, "none", args.number, args.repeat)
    rows += setup_rows("TP_PLUGINS=none", {"TP_PLUGINS": "none"}, "none", args.number,
                       args.repeat)
    rows += setup_rows("tp.device('/CPU:0')", {}, "/CPU:0", args.number, args.repeat)
    rows += baselines(args.number, args.repeat)
    width = max(len(label) for label, _ in rows)
    print("%-*s  %10s" % (width, "one call, 1-element float32 (median of %d x %d)"
                          % (args.repeat, args.number), "ns"))
    for label, ns in rows:
        print("%-*s  %10s" % (width, label, "" if ns is None else "%.0f" % ns))


if __name__ == "__main__":
    main()
