# SPDX-License-Identifier: Apache-2.0
"""tp.function: tracing once per signature, results in the function's structure, ops the body
leaves unused still run, placement lines, errors."""
import collections
import sys
import threading

import numpy as np
import pytest

import tensorplug as tp

add, relu = tp._tensorplug.add, tp.nn.relu
APU0 = "/job:localhost/replica:0/task:0/device:APU:0"


def test_decorated_function_runs_its_graph_and_keeps_its_name():
    @tp.function
    def double_relu(x):
        """Documented."""
        return relu(add(x, x))

    y = double_relu(tp.constant([-1.0, 2.0]))
    assert isinstance(y, tp.Tensor) and y.numpy().tolist() == [0.0, 4.0]
    assert double_relu.__name__ == "double_relu" and double_relu.__doc__ == "Documented."
    assert double_relu.python_function is double_relu.__wrapped__
    assert isinstance(double_relu, tp.Function)


def test_retraces_per_dtype_and_shape_not_per_value():
    traced = []

    @tp.function
    def f(x):
        traced.append(x.shape)
        return add(x, x)

    assert f(tp.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    assert f(tp.constant([5.0, 6.0])).numpy().tolist() == [10.0, 12.0]
    assert f.experimental_get_tracing_count() == 1
    f(tp.constant([1.0, 2.0, 3.0]))          # new shape
    f(tp.constant([1, 2, 3]))                # new dtype
    f(np.array([1.0, 2.0, 3.0], np.float32))  # a NumPy array is a tensor input
    assert f.experimental_get_tracing_count() == 3
    assert traced == [(2,), (3,), (3,)]


def test_python_values_trace_by_value():
    calls = []

    @tp.function
    def f(x, scale=1, mode="a"):
        calls.append((scale, mode))
        y = x
        for _ in range(scale):
            y = add(y, x)
        return y

    x = tp.constant(1.0)
    assert f(x).numpy() == 2.0
    assert f(x, scale=1).numpy() == 2.0  # bound as Python binds: the same call
    assert f(x, 1).numpy() == 2.0
    assert f(x=x, mode="a").numpy() == 2.0
    assert f(x, 3).numpy() == 4.0
    assert f(x, 3).numpy() == 4.0
    assert f(x, 3, mode="b").numpy() == 4.0
    assert f(x, 1.0 + 2.0 == 3.0).numpy() == 2.0  # True is not 1
    assert calls == [(1, "a"), (3, "a"), (3, "b"), (True, "a")]
    assert f.experimental_get_tracing_count() == 4
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        f(x, other=1)

    @tp.function
    def g(x, *rest, key=0, **extra):
        return add(x, x), rest, key, sorted(extra)

    y, rest, key, extra = g(tp.constant(1.0), 5, 6, key=2, b=1, a=2)
    assert y.numpy() == 2.0 and rest == (5, 6) and key == 2 and extra == ["a", "b"]
    g(tp.constant(1.0), 5, 6, a=2, b=1, key=2)  # keywords in another order: the same call
    assert g.experimental_get_tracing_count() == 1
    g(tp.constant(1.0))
    g(tp.constant(1.0), key=0)  # a keyword-only default given: the same call
    assert g.experimental_get_tracing_count() == 2


def test_results_keep_the_functions_structure():
    Pair = collections.namedtuple("Pair", "low high")

    @tp.function
    def f(x):
        return {"sum": add(x, x), "parts": [relu(x), (7, None)], "pair": Pair(x, relu(x))}

    out = f(tp.constant([-1.0, 3.0]))
    assert sorted(out) == ["pair", "parts", "sum"]
    assert out["sum"].numpy().tolist() == [-2.0, 6.0]
    assert out["parts"][0].numpy().tolist() == [0.0, 3.0]
    assert out["parts"][1] == (7, None)
    assert isinstance(out["pair"], Pair) and out["pair"].low.numpy().tolist() == [-1.0, 3.0]

    @tp.function
    def same_twice(x):
        y = relu(x)
        return y, y, x

    a, b, c = same_twice(tp.constant([2.0]))
    assert a.numpy() == b.numpy() == c.numpy() == 2.0

    @tp.function
    def nothing():
        pass

    @tp.function
    def python_only():
        return 3, "x"

    assert nothing() is None and nothing() is None and python_only() == (3, "x")
    assert nothing.experimental_get_tracing_count() == 1


def test_a_body_returning_none_still_runs_its_ops(snippet):
    _, err = snippet("""
        import tensorplug as tp

        @tp.function
        def run():
          d = tp.constant([1.0, -2.0, 3.0])  # Runs on CPU.
          e = tp.nn.relu(d)                  # Runs on APU.
        assert run() is None
        graph = run.experimental_get_graph()
        assert "Relu(" in graph, graph
        print("graph ok")
        """, env={"TP_LOG_DEVICE_PLACEMENT": "1"})
    assert "relu: (Relu): /job:localhost/replica:0/task:0/device:APU:0" in err


def test_unreturned_ops_are_in_the_graph_returned_ones_first():
    @tp.function
    def f(x):
        unused = add(x, x)  # noqa: F841
        return relu(x)

    graph = f.experimental_get_graph(tp.constant([1.0]))
    assert "Relu(" in graph and "Add(" in graph
    assert graph.strip().splitlines()[-1].startswith("return relu:0, add:0")
    assert f(tp.constant([-4.0])).numpy().tolist() == [0.0]


@pytest.mark.skipif(not hasattr(tp, "random"), reason="tp.random not merged yet")
def test_documents_snippet_runs_relu_on_the_apu(snippet):
    _, err = snippet("""
        import tensorplug as tp

        @tp.function
        def run():
          d = tp.random.uniform(shape=[100], dtype=tp.float32)  # Runs on CPU.
          e = tp.nn.relu(d)        # Runs on APU.

        run()
        """, env={"TP_LOG_DEVICE_PLACEMENT": "1"})
    assert "(Relu): /job:localhost/replica:0/task:0/device:APU:0" in err


def test_decorator_with_arguments_and_methods():
    @tp.function(jit_compile=False, reduce_retracing=True)
    def f(x):
        return relu(x)

    assert f(tp.constant([-1.0])).numpy().tolist() == [0.0]

    class Model:
        def __init__(self):
            self.bias = tp.constant([1.0, 1.0])

        @tp.function
        def __call__(self, x):
            return add(x, self.bias)

    m = Model()
    assert m(tp.constant([1.0, 2.0])).numpy().tolist() == [2.0, 3.0]
    assert tp.function(name="named")(lambda x: x)(tp.constant(1.0)).numpy() == 1.0


def test_errors():
    @tp.function
    def raises(x):
        raise KeyError("from the body")

    with pytest.raises(KeyError, match="from the body"):
        raises(tp.constant(1.0))
    assert raises.experimental_get_tracing_count() == 0

    @tp.function
    def reads_values(x):
        return x.numpy()

    with pytest.raises(tp.errors.OpError):
        reads_values(tp.constant(1.0))

    @tp.function
    def too_many(x):
        return [add(x, x) for _ in range(17)]

    with pytest.raises(ValueError, match="more than 16 tensors"):
        too_many(tp.constant(1.0))
    with pytest.raises(TypeError, match="not callable"):
        tp.function(3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tp.function(lambda: None, bogus=1)
    with pytest.raises(NotImplementedError, match="input_signature"):
        tp.function(lambda x: x, input_signature=[])


def test_several_threads_share_one_function():
    @tp.function
    def f(x):
        return relu(add(x, x))

    results, errors = {}, []

    def worker(i):
        try:
            for _ in range(20):
                results[i] = f(tp.constant([float(i), -1.0])).numpy().tolist()
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert results == {i: [2.0 * i, 0.0] for i in range(4)}
    assert f.experimental_get_tracing_count() == 1


def test_no_reference_leaks():
    @tp.function
    def f(x, n):
        return {"y": add(x, x), "n": n}

    x = tp.constant([1.0, 2.0])
    marker = object()
    f(x, marker)
    before = sys.getrefcount(x), sys.getrefcount(marker)
    for _ in range(200):
        f(x, marker)
    assert (sys.getrefcount(x), sys.getrefcount(marker)) == before


def test_variables_read_in_the_body_become_inputs():
    v, w = tp.Variable([1.0, 2.0]), tp.Variable(10.0)

    @tp.function
    def f(x):
        return add(add(x, v), w)

    assert f(tp.constant(1.0)).numpy().tolist() == [12.0, 13.0]
    v.assign([5.0, 6.0])  # seen by the next call: the value is an input, not a constant
    w.assign(0.0)
    assert f(tp.constant(1.0)).numpy().tolist() == [6.0, 7.0]
    assert f.experimental_get_tracing_count() == 1
    assert f.experimental_get_graph(tp.constant(1.0)).count("Argument(") == 3


def test_gradients_inside_a_body():
    v = tp.Variable([1.0, -2.0])

    @tp.function
    def grads(x):
        with tp.GradientTape() as tape:
            tape.watch(x)
            y = relu(add(x, v))
        return tape.gradient(y, [x, v])

    gx, gv = grads(tp.constant([0.5, 0.5]))
    assert gx.numpy().tolist() == [1.0, 0.0] and gv.numpy().tolist() == [1.0, 0.0]
    v.assign([-1.0, 3.0])
    gx, gv = grads(tp.constant([0.5, 0.5]))
    assert gx.numpy().tolist() == [0.0, 1.0] and gv.numpy().tolist() == [0.0, 1.0]


def test_assignments_inside_a_body_are_refused():
    v = tp.Variable(1.0)

    @tp.function
    def step():
        v.assign_add(1.0)

    with pytest.raises(NotImplementedError, match="assign_add inside a tp.function"):
        step()
    assert v.numpy() == 1.0

    @tp.function
    def returns_variable():
        return v

    with pytest.raises(TypeError, match="returns a tp.Variable"):
        returns_variable()


def test_a_variable_argument_is_the_variable():
    seen = []

    @tp.function
    def f(var, x):
        seen.append((var.name, var.shape))
        return add(var, x)

    a, b = tp.Variable([1.0, 2.0], name="a"), tp.Variable([0.0, 0.0], name="b")
    assert f(a, tp.constant(1.0)).numpy().tolist() == [2.0, 3.0]
    a.assign([3.0, 3.0])
    assert f(a, tp.constant(1.0)).numpy().tolist() == [4.0, 4.0]
    assert f(b, tp.constant(1.0)).numpy().tolist() == [1.0, 1.0]
    assert f.experimental_get_tracing_count() == 2  # one per variable, as it is captured
    assert set(seen) == {("a:0", (2,)), ("b:0", (2,))}


def test_gradients_flow_through_a_call_under_a_tape():
    @tp.function
    def f(x):
        return relu(add(x, x))

    x = tp.constant([1.0, -1.0])
    assert f(x).numpy().tolist() == [2.0, 0.0]
    with tp.GradientTape() as tape:
        tape.watch(x)
        y = f(x)  # runs eagerly: the tape records Add and Relu
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 0.0]
    assert f.experimental_get_tracing_count() == 1


def test_a_function_called_in_another_is_inlined():
    @tp.function
    def inner(x):
        return add(x, x)

    @tp.function
    def outer(x):
        return relu(inner(x))

    assert outer(tp.constant([1.0, -1.0])).numpy().tolist() == [2.0, 0.0]
    graph = outer.experimental_get_graph(tp.constant([1.0, -1.0]))
    assert "Add(" in graph and "Relu(" in graph
    assert inner.experimental_get_tracing_count() == 0  # its body ran in outer's trace


def _memory_info():
    experimental = getattr(getattr(tp, "config", None), "experimental", None)
    return getattr(experimental, "get_memory_info", None)


@pytest.mark.skipif(_memory_info() is None, reason="tp.config.experimental.get_memory_info "
                                                   "not merged yet")
def test_device_memory_returns_to_where_it_was():
    import gc

    def current():
        return [tp.config.experimental.get_memory_info(d)["current"] for d in ("CPU:0", "APU:0")]

    w = tp.Variable(np.ones(256, np.float32))
    opt = tp.keras.optimizers.Adam()

    @tp.function
    def f(x):
        return relu(add(x, w))

    def work():
        x = tp.constant(np.full(256, -0.5, np.float32))
        with tp.GradientTape() as tape:
            y = relu(add(x, w))
        opt.apply_gradients([(tape.gradient(y, w), w)])
        f(x).numpy()

    work()  # slots, traces and captures made once
    gc.collect()
    w.numpy()  # waits for the last update, so that the value it replaced is freed
    before = current()
    for _ in range(300):
        work()
    gc.collect()
    w.numpy()
    assert current() == before
