"""Block-wise interning: codes stay consistent across blocks and merges."""

from __future__ import annotations

import numpy as np
import pytest

from searchbench.data.ids import Interner, lookup


@pytest.mark.parametrize("seed", range(4))
def test_codes_round_trip_across_many_blocks(seed: int) -> None:
    rng = np.random.default_rng(seed)
    blocks = [[f"d{rng.integers(0, 300)}" for _ in range(rng.integers(0, 120))]
              for _ in range(25)]  # repeats within and across blocks, some empty blocks
    everything = [x for b in blocks for x in b]
    for sort in (True, False):
        interner = Interner()
        for block in blocks:
            interner.add(block)
        codes, vocab = interner.finish() if sort else interner.finish_unsorted()
        vocab_list = list(vocab) if sort else vocab.to_pylist()
        assert [vocab_list[c] for c in codes] == everything
        assert len(set(vocab_list)) == len(vocab_list) == len(set(everything))
        if sort:
            assert vocab_list == sorted(vocab_list, key=str.encode)


def test_lookup_finds_codes_and_marks_absent() -> None:
    vocab = np.array(["a", "b", "é"], dtype=object)
    assert lookup(vocab, ["é", "x", "a"]).tolist() == [2, -1, 0]
