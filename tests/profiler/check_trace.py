# SPDX-License-Identifier: Apache-2.0
"""Checks a profile written by TP_PROFILE, loaded with Python's JSON parser.

Usage: check_trace.py workload|mirrored PROFILE.json
  workload: what tests/profiler/profile_workload.c records (APU latency 200 us)
  mirrored: what examples/mirrored_training.c records (10 epochs of 4 steps on CPU:0, CPU:1)
Prints one line per failed check and exits 1 if there is any."""
import json
import sys

PREFIX = "/job:localhost/replica:0/task:0/device:"
HOSTILE_NAME = "evil \"quoted\" \\ name\nline\x01 \ufffd end \u2028."
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def load(path):
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in events:
        if e["ph"] in "XiC":
            check(e["pid"] in processes, "event on an unnamed process: %r" % e)
            check(e["ts"] >= 0, "negative time: %r" % e)
        if e["ph"] in "Xi":
            check((e["pid"], e["tid"]) in threads, "event on an unnamed thread: %r" % e)
        if e["ph"] == "X":
            check(e["dur"] >= 0, "negative duration: %r" % e)
    return trace, events, processes, threads


def where(e, processes, threads):
    return processes[e["pid"]], threads.get((e["pid"], e.get("tid")))


def spans(events, category, name=None):
    return [e for e in events if e["ph"] == "X" and e.get("cat") == category
            and (name is None or e["name"] == name)]


def check_counters(events, processes):
    """Per device: the bytes in use rise above 0 and end at 0, every tensor released."""
    by_device = {}
    for e in sorted((e for e in events if e["ph"] == "C"), key=lambda e: e["ts"]):
        check(e["name"] == "memory", "a counter other than memory: %r" % e)
        by_device.setdefault(processes[e["pid"]], []).append(e["args"]["bytes_in_use"])
    for device, values in by_device.items():
        check(max(values) > 0, "%s: memory never in use" % device)
        check(values[-1] == 0, "%s: %d bytes still in use at the end" % (device, values[-1]))
    return by_device


def check_workload(path):
    trace, events, processes, threads = load(path)
    cpu0, cpu1, apu = PREFIX + "CPU:0", PREFIX + "CPU:1", PREFIX + "APU:0"
    check(sorted(processes.values()) == sorted(["Host", apu, cpu0, cpu1]),
          "processes: %r" % sorted(processes.values()))
    names = set(threads.values())
    for expected in ["main", "replica 0 (CPU:0)", "replica 1 (CPU:1)", "stream",
                     "stream (device time)", "enqueue (host time)"]:
        check(expected in names, "no track named %r among %r" % (expected, sorted(names)))

    relus = spans(events, "op", "Relu")
    if check(len(relus) == 2, "%d Relu ops, not 2" % len(relus)):
        for relu in relus:
            check(where(relu, processes, threads) == ("Host", "main"), "Relu not on main")
            check(relu["args"] == {"device": apu, "inputs": ["float32[1000]"],
                                   "outputs": ["float32[1000]"]}, "Relu args: %r" % relu["args"])
    matmuls = spans(events, "op", "MatMul")
    if check(len(matmuls) == 1, "%d MatMul ops, not 1" % len(matmuls)):
        check(matmuls[0]["args"] == {"device": cpu0, "inputs": ["float32[40,25]"] * 2,
                                     "outputs": ["float32[40,40]"]},
              "MatMul args: %r" % matmuls[0]["args"])
        launch = [e for e in spans(events, "launch", "MatMul")]
        if check(len(launch) == 1, "MatMul launches: %r" % launch):
            check(where(launch[0], processes, threads) == (cpu0, "stream"),
                  "MatMul launch at %r" % (where(launch[0], processes, threads),))
            check(matmuls[0]["ts"] <= launch[0]["ts"] and
                  launch[0]["ts"] + launch[0]["dur"] <= matmuls[0]["ts"] + matmuls[0]["dur"] + 0.002,
                  "the MatMul launch lies outside its op")

    copies = [e for e in spans(events, "copy", "copy") if e["args"]["to"] == apu]
    if check(len(copies) == 1, "copies to the APU: %r" % copies):
        check(copies[0]["args"] == {"from": cpu0, "to": apu, "bytes": 4000},
              "the copy to the APU: %r" % copies[0]["args"])
    reads = [e for e in spans(events, "copy", "copy to the host")
             if e["args"]["device"] == apu]
    check(len(reads) == 1 and reads[0]["args"]["bytes"] == 4000,
          "reads from the APU: %r" % reads)

    # The APU reports device times: each Relu's work runs on the device after it was queued,
    # and takes at least the simulated latency of 200 us.
    enqueued = sorted(spans(events, "launch", "Relu"), key=lambda e: e["ts"])
    ran = sorted(spans(events, "device", "Relu"), key=lambda e: e["ts"])
    if check(len(enqueued) == 2 and len(ran) == 2, "Relu enqueues %d, device spans %d"
             % (len(enqueued), len(ran))):
        for queued, device in zip(enqueued, ran):
            check(where(queued, processes, threads) == (apu, "enqueue (host time)"),
                  "Relu enqueued at %r" % (where(queued, processes, threads),))
            check(where(device, processes, threads) == (apu, "stream (device time)"),
                  "Relu ran at %r" % (where(device, processes, threads),))
            check(device["ts"] >= queued["ts"], "the device ran Relu before it was queued")
            check(device["dur"] >= 190, "Relu ran %.1f us, less than the latency" % device["dur"])
        check(ran[1]["ts"] >= ran[0]["ts"] + ran[0]["dur"], "the APU ran two Relus at once")
    device_copies = spans(events, "device", "copy from the host")
    check(any(processes[e["pid"]] == apu and e["dur"] >= 190 for e in device_copies),
          "no device time of the copy onto the APU: %r" % device_copies)

    calls = spans(events, "function", HOSTILE_NAME)
    if check(len(calls) == 2, "calls of the function: %r" % spans(events, "function")):
        check([c["args"]["traced"] for c in sorted(calls, key=lambda c: c["ts"])] == [True, False],
              "traced flags: %r" % [c["args"] for c in calls])
    traced = [e for e in events if e["ph"] == "i" and e["name"] == "traced " + HOSTILE_NAME]
    check(len(traced) == 1, "markers of the trace: %r" % traced)
    adds = spans(events, "op", "Add")
    check(len(adds) == 2 and all(a["args"].get("function") == HOSTILE_NAME for a in adds),
          "the function's Add nodes: %r" % adds)

    steps = sorted(spans(events, "mirrored"), key=lambda e: e["ts"])
    check([s["name"] for s in steps if s["name"].startswith("step")] == ["step 1", "step 2"],
          "steps: %r" % [s["name"] for s in steps])
    markers = [e for e in events if e["ph"] == "i" and e["cat"] == "mirrored"]
    check([(m["name"], m["s"]) for m in markers] == [("step 1", "g"), ("step 2", "g")],
          "step markers: %r" % markers)
    for replica, device in [(0, "CPU:0"), (1, "CPU:1")]:
        ran = spans(events, "mirrored", "replica %d" % replica)
        check(len(ran) == 2 and all(where(r, processes, threads)[1] == "replica %d (%s)"
                                    % (replica, device) for r in ran),
              "replica %d spans: %r" % (replica, ran))
        squares = [s for s in spans(events, "op", "Square")
                   if s["args"]["device"] == PREFIX + device]
        check(len(squares) == 2 and all(where(s, processes, threads)[1] == "replica %d (%s)"
                                        % (replica, device) for s in squares),
              "replica %d Square ops: %r" % (replica, squares))

    counters = check_counters(events, processes)
    check(apu in counters and cpu0 in counters, "memory counters for %r" % sorted(counters))
    check(trace["otherData"]["dropped_events"] == 0, "dropped events")


def check_mirrored(path):
    trace, events, processes, threads = load(path)
    steps = [s for s in spans(events, "mirrored") if s["name"].startswith("step ")]
    check(len(steps) == 40, "%d mirrored steps, not 40" % len(steps))
    markers = [e for e in events if e["ph"] == "i" and e["cat"] == "mirrored" and e["s"] == "g"]
    check(len(markers) == 40, "%d step markers, not 40" % len(markers))
    for replica, device in [(0, "CPU:0"), (1, "CPU:1")]:
        track = "replica %d (%s)" % (replica, device)
        ops = [e for e in spans(events, "op") if where(e, processes, threads)[1] == track]
        check(len(ops) > 100 and all(e["args"]["device"] == PREFIX + device for e in ops),
              "%s: %d ops, or some on another device" % (track, len(ops)))
    check_counters(events, processes)


if __name__ == "__main__":
    mode, path = sys.argv[1], sys.argv[2]
    {"workload": check_workload, "mirrored": check_mirrored}[mode](path)
    for failure in failures:
        print("FAIL:", failure)
    print("%s: %s" % (path, "ok" if not failures else "%d checks failed" % len(failures)))
    sys.exit(1 if failures else 0)
