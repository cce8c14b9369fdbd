"""`DeadlinePool.map`'s affinity: items that share a key go to the worker that took the key, without changing any
item's outcome, deadline, retry or place in the results."""

import operator

import pytest
from pool_helpers import keyed_pid, keyed_task

from trl_grpo_ext.verifiers.core.affinity import KeyOwners
from trl_grpo_ext.verifiers.core.deadline_pool import DeadlinePool
from trl_grpo_ext.verifiers.core.deadline_pool_batch import AFFINITY_LOOKAHEAD, Batch


def _first(item: tuple) -> str:
    return item[0]


def _batch(items, owners=None) -> Batch:
    return Batch(abs, items, 1.0, 10.0, _first, owners or KeyOwners())


def test_a_worker_takes_its_own_key_then_a_new_key_then_the_oldest_item():
    batch = _batch([("a",), ("a",), ("b",), ("c",)])
    one, two = object(), object()
    assert batch.next_for(one) == 0  # `a` is new: it becomes one's
    assert batch.next_for(two) == 2  # the second `a` is one's: two takes the oldest new key, `b`
    assert batch.next_for(two) == 3  # no `b` left: the next new key
    assert batch.next_for(two) == 1  # only one's key is left and every item is found: two takes it
    assert batch.pending == []
    assert (batch.owners.owner("a"), batch.owners.owner("b"), batch.owners.owner("c")) == (one, two, two)


def test_while_items_are_still_being_found_a_worker_waits_for_a_new_key_rather_than_take_anothers():
    def found():
        yield from [("a",), ("a",), ("b",)]

    batch = _batch(found())
    batch.pull(), batch.pull()
    one, two = object(), object()
    assert batch.next_for(one) == 0
    assert batch.next_for(two) is None  # only `a` waits, and it is one's: two waits for the next item found
    batch.pull()
    assert batch.next_for(two) == 2
    batch.pull()  # the source is exhausted
    assert batch.source is None and batch.next_for(two) == 1


def test_without_affinity_items_go_in_input_order():
    batch = Batch(abs, [(3,), (1,), (2,)], 1.0, 10.0, None, KeyOwners())
    assert [batch.next_for(object()) for _ in range(3)] == [0, 1, 2]


def test_a_worker_looks_for_its_key_only_among_the_oldest_waiting_items():
    items = [("a",)] + [(f"k{i}",) for i in range(AFFINITY_LOOKAHEAD)] + [("a",)]
    batch = _batch(items)
    one, two = object(), object()
    assert batch.next_for(one) == 0
    for i in range(AFFINITY_LOOKAHEAD):
        batch.owners.take(f"k{i}", two)
    assert batch.next_for(one) == 1  # its own `a` lies beyond the window: the oldest item, no scan of the whole batch


def test_key_owners_are_bounded_and_forgotten_with_their_worker():
    owners = KeyOwners(max_keys=3)
    one, two = object(), object()
    for key, worker in [("a", one), ("b", two), ("c", one), ("a", one), ("d", two)]:
        owners.take(key, worker)
    assert len(owners) == 3 and owners.owner("b") is None  # the least recently taken key went first
    assert (owners.owner("a"), owners.owner("c"), owners.owner("d")) == (one, one, two)
    owners.disown(one)
    assert (owners.owner("a"), owners.owner("c"), owners.owner("d")) == (None, None, two)


ITEMS = [
    ("a", "ok"),
    ("a", "slow"),
    ("a", "ok"),
    ("b", "ok"),
    ("b", "exit"),
    ("b", "ok"),
    ("a", "memory"),
    ("b", "ok"),
    ("c", "ok"),
]
EXPECTED = [
    ("ok", "a"),
    ("timeout", None),
    ("ok", "a"),
    ("ok", "b"),
    ("crashed", None),
    ("ok", "b"),
    ("error", None),
    ("ok", "b"),
    ("ok", "c"),
]


@pytest.mark.parametrize("affinity", [None, _first])
def test_a_bad_item_of_a_key_fails_alone_and_outcomes_keep_input_order(affinity):
    """A timeout, a crash and a MemoryError among items of the same key: each charges its own item only; the other
    items of its key get their values, and the outcomes come back in input order, with or without affinity."""
    with DeadlinePool(n_workers=2) as pool:
        outcomes = pool.map(keyed_task, ITEMS, timeout_s=1.0, affinity=affinity)
        after = pool.map(operator.add, [(1, 2)], timeout_s=30, affinity=affinity)
    assert [(o.status, o.value) for o in outcomes] == EXPECTED
    assert "CPU time" in outcomes[1].error
    assert outcomes[4].error == "the worker process died (exit code 3), and again on a fresh worker (exit code 3)"
    assert outcomes[6].error_type == "MemoryError"
    assert after[0].value == 3  # the replaced workers serve the next call


def test_items_of_one_key_run_on_one_worker_and_the_owners_outlive_the_call():
    items = [("a", 0.2)] * 3 + [("b", 0.2)] * 3
    with DeadlinePool(n_workers=2) as pool:
        pool.wait_until_ready()
        first = [o.value for o in pool.map(keyed_pid, items, timeout_s=30, affinity=_first)]
        again = [o.value for o in pool.map(keyed_pid, items[::-1], timeout_s=30, affinity=_first)][::-1]
    assert len(set(first[:3])) == len(set(first[3:])) == 1 and first[0] != first[3]
    assert again == first  # the next call sends each key to the worker that already has it
