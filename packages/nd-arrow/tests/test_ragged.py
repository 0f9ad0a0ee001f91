"""Ragged index arithmetic against the plain loops it replaces."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from nd_arrow._format import offsets_of, range_ids, range_positions


def test_ranges_of_an_example() -> None:
    starts, lengths = np.array([5, 0, 2]), np.array([2, 0, 3])
    assert range_ids(lengths).tolist() == [0, 0, 2, 2, 2]
    assert range_positions(starts, lengths).tolist() == [5, 6, 2, 3, 4]
    assert offsets_of(lengths).tolist() == [0, 2, 2, 5]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=20))
def test_ranges_match_the_loop(ranges: list[tuple[int, int]]) -> None:
    starts = np.array([s for s, _ in ranges], np.int64)
    lengths = np.array([n for _, n in ranges], np.int64)
    assert range_positions(starts, lengths).tolist() == [s + i for s, n in ranges for i in range(n)]
    assert range_ids(lengths).tolist() == [k for k, (_, n) in enumerate(ranges) for _ in range(n)]
    running = [0]
    for _, n in ranges:
        running.append(running[-1] + n)
    assert offsets_of(lengths).tolist() == running
    assert offsets_of(lengths, np.int32).dtype == np.int32
