# SPDX-License-Identifier: Apache-2.0
"""Several Python threads at once: each its own device scope, each getting its own values; and
the GIL let go while the runtime waits on a device, so that a thread blocked on a slow device
does not stop the others."""
import json
import threading

import numpy

import tensorplug as tp

_tp = tp._tensorplug

# The device scope of the calling thread: tp.device once the build has it, else the module's
# private push and pop, which wrap the same tp_device_push.
SCOPE = """
import contextlib
import tensorplug as tp

@contextlib.contextmanager
def scope(name):
    if hasattr(tp, "device"):
        with tp.device(name):
            yield
        return
    tp._tensorplug._test_device_push(name)
    try:
        yield
    finally:
        tp._tensorplug._test_device_pop()
"""
namespace = {}
exec(SCOPE, namespace)
scope = namespace["scope"]


def run_threads(work, arguments):
    """Runs work(*a) for each a in arguments in its own thread, all started together; returns
    their results in order, raising the first failure."""
    barrier = threading.Barrier(len(arguments))
    results = [None] * len(arguments)
    failures = []

    def body(index, args):
        try:
            barrier.wait()
            results[index] = work(*args)
        except BaseException as error:  # handed to the main thread, which raises it
            failures.append(error)

    threads = [threading.Thread(target=body, args=(i, a)) for i, a in enumerate(arguments)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return results


def ops_in_scope(device, seed, rounds=200):
    """relu and add under `device`'s scope: each result on that device with the right values.
    Returns the devices the results were on."""
    rng = numpy.random.default_rng(seed)
    seen = set()
    with scope(device):
        for _ in range(rounds):
            values = rng.standard_normal(8).astype(numpy.float32)
            x = tp.constant(values)
            y = tp.nn.relu(x)
            seen.add(y.device)
            numpy.testing.assert_array_equal(y.numpy(), numpy.maximum(values, 0))
            if "CPU" in device:
                z = _tp.add(y, x)
                seen.add(z.device)
                numpy.testing.assert_allclose(z.numpy(), numpy.maximum(values, 0) + values)
    return seen


def test_threads_keep_their_own_scopes_and_values():
    default_device = tp.nn.relu(tp.constant([1.0])).device
    devices = ["/CPU:0"] * 3
    if default_device.endswith("APU:0"):  # the APU wheel is installed: it takes relu
        devices += ["/APU:0"] * 3
    seen = run_threads(ops_in_scope, [(d, i) for i, d in enumerate(devices)])
    for device, devices_seen in zip(devices, seen):
        assert devices_seen == {"/job:localhost/replica:0/task:0/device:" + device[1:]}, device
    # The main thread pushed no scope: the CPU threads' scopes were their own.
    assert tp.nn.relu(tp.constant([1.0])).device == default_device


def test_threads_on_two_apus_and_the_cpu(snippet):
    out, _ = snippet(SCOPE + """
import json, threading
import numpy
def work(device, seed):
    rng = numpy.random.default_rng(seed)
    devices, total = set(), 0.0
    with scope(device):
        for _ in range(200):
            values = rng.standard_normal(16).astype(numpy.float32)
            y = tp.nn.relu(tp.nn.relu(tp.constant(values)))
            devices.add(y.device)
            assert (y.numpy() == numpy.maximum(values, 0)).all()
            total += float(y.numpy().sum())
    results[seed] = (sorted(devices), total)
results = {}
threads = [threading.Thread(target=work, args=(d, i))
           for i, d in enumerate(["/APU:0", "/APU:1", "/CPU:0"] * 2)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps([results[i] for i in range(6)]))
""", env={"TP_APU_DEVICES": "2"})
    results = json.loads(out)
    assert [r[0] for r in results] == [["/job:localhost/replica:0/task:0/device:" + d]
                                       for d in ["APU:0", "APU:1", "CPU:0"] * 2]
    # Each thread's sum is that of its own random values: seeds differ, so sums do.
    for seed, (_, total) in enumerate(results):
        values = numpy.random.default_rng(seed).standard_normal((200, 16)).astype(numpy.float32)
        assert abs(total - float(numpy.maximum(values, 0).sum())) < 1e-3


# A thread spins a pure Python counter; the main thread makes the APU's queue slow
# (TP_APU_LATENCY_US) and blocks on it three ways: numpy(), an op on the CPU whose input is
# still pending on the APU, and str(). Each blocked call's time and the counter's progress
# during it are printed, beside the counter's rate while the main thread sleeps.
GIL_SNIPPET = SCOPE + """
import json, threading, time
counter = [0]
stop = []
def spin():
    while not stop:
        counter[0] += 1
x = tp.constant([1.0, -2.0])
def pending():
    with scope("/APU:0"):
        return tp.nn.relu(tp.nn.relu(x))
pending().numpy()  # the APU's first work, its setup, before any timing
spinner = threading.Thread(target=spin)
spinner.start()
time.sleep(0.05)
def measure(call):
    count, start = counter[0], time.perf_counter()
    value = call()
    seconds = time.perf_counter() - start
    return [seconds, (counter[0] - count) / seconds, value]
rate_alone = measure(lambda: time.sleep(0.3))[1]
rows = {}
y = pending()
rows["numpy"] = measure(lambda: y.numpy().tolist())
y = pending()
rows["add"] = measure(lambda: tp._tensorplug.add(y, y).numpy().tolist())
y = pending()
rows["str"] = measure(lambda: str(y))
stop.append(True)
spinner.join()
print(json.dumps({"rate_alone": rate_alone, "rows": rows}))
"""


def test_the_gil_is_released_while_the_runtime_waits(snippet):
    latency_s = 0.1
    out, _ = snippet(GIL_SNIPPET, env={"TP_APU_LATENCY_US": str(int(latency_s * 1e6))})
    result = json.loads(out)
    rows = result["rows"]
    assert rows["numpy"][2] == [1.0, 0.0]
    assert rows["add"][2] == [2.0, 0.0]
    assert rows["str"][2] == "tp.Tensor([1. 0.], shape=(2,), dtype=float32)"
    for what, (seconds, rate, _) in rows.items():
        # The call did wait for the slow device (two ops queued, each delayed)...
        assert seconds >= latency_s, (what, seconds)
        # ...and the spinning thread ran meanwhile at a good part of its rate alone. With the
        # GIL held through the wait it barely runs (1% of that rate, measured when the CPU op
        # kept the GIL): the margin is for a loaded machine.
        assert rate > 0.1 * result["rate_alone"], (what, rate, result["rate_alone"])
