# SPDX-License-Identifier: Apache-2.0
"""tp.device: `with tp.device(name):` places the ops of its block, nests, is per thread, checks
the name when it is made, and None changes nothing."""
import sys
import threading

import pytest

import tensorplug as tp

APU = "/job:localhost/replica:0/task:0/device:APU:0"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def relu_device():
    return tp.nn.relu(tp.constant([-1.0, 2.0])).device


def test_relu_goes_to_the_apu_by_default_and_to_the_cpu_when_asked():
    assert relu_device() == APU
    with tp.device("/CPU:0"):
        assert relu_device() == CPU
    assert relu_device() == APU


@pytest.mark.parametrize("name", ["/cpu:0", "/device:CPU:0", "CPU:0", "cpu",
                                  "/job:localhost/replica:0/task:0/device:CPU:0"])
def test_every_accepted_name_form(name):
    with tp.device(name):
        assert relu_device() == CPU


def test_scopes_nest_and_unwind():
    with tp.device("/CPU:0"):
        with tp.device("/APU:0"):
            assert relu_device() == APU
            with tp.device("/cpu:0"):
                assert relu_device() == CPU
            assert relu_device() == APU
        assert relu_device() == CPU
    assert relu_device() == APU


def test_none_changes_nothing():
    with tp.device("/CPU:0"):
        with tp.device(None) as scope:
            assert scope.name is None
            assert relu_device() == CPU
        assert relu_device() == CPU


def test_a_malformed_name_fails_when_the_scope_is_made_naming_it():
    with pytest.raises(ValueError, match=r"'/bad::name'"):
        tp.device("/bad::name")
    with pytest.raises(ValueError, match=r"/job:a/job:b"):
        tp.device("/job:a/job:b")


def test_a_name_that_is_not_a_str_is_a_type_error():
    with pytest.raises(TypeError, match="str or None, not int"):
        tp.device(0)


def test_an_unknown_device_fails_at_the_op_with_the_documents_runtime_error():
    scope = tp.device("/device:GPU:2")  # well formed: accepted here
    with pytest.raises(RuntimeError) as caught:
        with scope:
            tp.nn.relu(tp.constant([1.0]))
    assert str(caught.value) == (
        "Error copying tensor to device: /job:localhost/replica:0/task:0/device:GPU:2. "
        "/job:localhost/replica:0/task:0/device:GPU:2 unknown device.")
    assert relu_device() == APU  # the scope was popped on the way out


def test_an_exception_in_the_block_goes_on_and_the_scope_ends():
    with pytest.raises(KeyError):
        with tp.device("/CPU:0"):
            raise KeyError("inside")
    assert relu_device() == APU


def test_the_same_object_entered_twice_pops_twice():
    scope = tp.device("/CPU:0")
    with scope:
        with scope:
            assert relu_device() == CPU
        assert relu_device() == CPU
    assert relu_device() == APU
    with pytest.raises(RuntimeError, match="exit without a matching enter"):
        scope.__exit__(None, None, None)


def test_repr_and_name():
    scope = tp.device("/APU:0")
    assert scope.name == "/APU:0"
    assert repr(scope) == "tp.device('/APU:0')"
    assert tp.device(device_name="/cpu:0").name == "/cpu:0"


def test_scopes_are_per_thread():
    barrier = threading.Barrier(2, timeout=60)
    seen = {}

    def worker(name):
        with tp.device(name):
            barrier.wait()  # both threads are inside their own scope now
            seen[name] = [relu_device() for _ in range(50)]
            barrier.wait()
        seen[name + " after"] = relu_device()

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("/CPU:0", "/APU:0")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["/CPU:0"] == [CPU] * 50
    assert seen["/APU:0"] == [APU] * 50
    assert seen["/CPU:0 after"] == APU and seen["/APU:0 after"] == APU
    assert relu_device() == APU  # the main thread never had a scope


def test_no_reference_is_leaked():
    name = "/device:CPU:0"
    before = sys.getrefcount(name)
    for _ in range(1000):
        with tp.device(name) as scope:
            assert scope.name is name
    del scope
    assert sys.getrefcount(name) == before
