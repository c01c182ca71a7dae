# SPDX-License-Identifier: Apache-2.0
"""Keras' progress bar: "45/45 [==============================] - 0s 3ms/step - loss: 0.1234".
On a terminal it is redrawn as steps finish; elsewhere (a log, a pipe) only the final line of
each epoch is written, as Keras does."""
import sys
import time

WIDTH = 30


def _format_value(value):
    return ("%.4f" if abs(value) > 1e-3 else "%.4e") % value


def _format_step_time(seconds):
    if seconds >= 1:
        return "%.0fs/step" % seconds
    if seconds >= 1e-3:
        return "%.0fms/step" % (seconds * 1e3)
    return "%.0fus/step" % (seconds * 1e6)


class Progbar:
    def __init__(self, target, verbose=1, stream=None):
        self.target = target
        self.verbose = verbose
        self.stream = stream or sys.stdout
        self.start = time.time()
        self.last_draw = 0.0
        self.interactive = hasattr(self.stream, "isatty") and self.stream.isatty()

    def _bar(self, current):
        digits = len(str(self.target))
        text = "%*d/%d [" % (digits, current, self.target)
        filled = int(WIDTH * current / self.target) if self.target else WIDTH
        if filled > 0:
            text += "=" * (filled - 1) + (">" if current < self.target else "=")
        return text + "." * (WIDTH - filled) + "]"

    def update(self, current, values, finalize=False):
        """`values`: (name, value) pairs, written after the time."""
        if self.verbose == 0:
            return
        now = time.time()
        elapsed = now - self.start
        metrics = "".join(" - %s: %s" % (name, _format_value(value)) for name, value in values)
        if finalize:
            per_step = elapsed / max(current, 1)
            if self.verbose == 2:
                line = "%d/%d - %.0fs - %s%s" % (current, self.target, elapsed,
                                                 _format_step_time(per_step), metrics)
            else:
                line = "%s - %.0fs %s%s" % (self._bar(current), elapsed,
                                            _format_step_time(per_step), metrics)
            self.stream.write(("\r" if self.interactive else "") + line + "\n")
            self.stream.flush()
        elif self.interactive and self.verbose == 1 and now - self.last_draw >= 0.05:
            self.last_draw = now
            self.stream.write("\r%s - ETA: %.0fs%s" % (
                self._bar(current), elapsed / max(current, 1) * (self.target - current), metrics))
            self.stream.flush()
