"""Block-wise interning: codes stay consistent across blocks and merges."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
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


class TestInternerFastPath:
    """Geometric interning over blocks, some adding nothing new."""

    @pytest.mark.parametrize("growth", [1, 2, 3])
    def test_interner_over_blocks_with_nothing_new(self, growth: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(Interner, "GROWTH", growth)
        rng = random.Random(growth)
        for _ in range(20):
            blocks = []
            for _ in range(rng.randint(1, 20)):
                pool = rng.choice([3, 40, 400])
                blocks.append([f"i{rng.randint(0, pool)}" for _ in range(rng.randint(0, 30))])
            blocks.append(blocks[0])  # a block adding no new id
            everything = [x for b in blocks for x in b]
            for sort in (True, False):
                interner = Interner()
                for i, b in enumerate(blocks):
                    padded = pa.array(["pad", *b, "pad"]).slice(1, len(b))
                    interner.add([b, padded, pa.chunked_array([padded[:3], padded[3:]])][i % 3])
                codes, vocab = interner.finish() if sort else interner.finish_unsorted()
                vocab = list(vocab) if sort else vocab.to_pylist()
                assert [vocab[c] for c in codes] == everything
                want = sorted(set(everything), key=str.encode) if sort else \
                    list(dict.fromkeys(everything))
                assert vocab == want
