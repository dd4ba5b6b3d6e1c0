"""numpy ⇄ Arrow through buffers: slices, chunks, nulls, unicode, empty arrays."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from searchbench.data._arrow import from_numpy, int_or, strings, to_numpy
from searchbench.data.ids import lookup


@pytest.mark.parametrize("values", [[1.5, -2.0, 3.25, 0.0], [3, 1, 4, 1, 5], [True, False, True]])
def test_to_numpy_equals_pyarrow_on_slices_and_chunks(values: list) -> None:
    arr = pa.array(values)
    for piece in (arr, arr.slice(1), arr.slice(1, 2), arr.slice(len(values))):
        assert to_numpy(piece).tolist() == piece.to_pylist()
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2)])
    assert to_numpy(chunked).tolist() == values


def test_to_numpy_of_empty_chunked_array() -> None:
    assert to_numpy(pa.chunked_array([], type=pa.float64())).dtype == np.float64


def test_int_or_fills_nulls_at_any_offset() -> None:
    arr = pa.array([None, 1, None, 7, 8, None, 2, None, 9, 4], type=pa.int32())
    for start in range(4):
        piece = arr.slice(start)
        expected = [-1 if v is None else v for v in piece.to_pylist()]
        assert int_or(piece, -1).tolist() == expected


def test_from_numpy_round_trip_shares_the_values() -> None:
    x = np.array([3, 1, 2], dtype=np.int64)
    assert from_numpy(x).to_pylist() == [3, 1, 2]
    assert from_numpy(x[::-1]).to_pylist() == [2, 1, 3]  # non-contiguous input is copied


@pytest.mark.parametrize("values", [["a", "bc", ""], ["naïve", "日本", "x"], []])
def test_strings_equals_pa_array(values: list[str]) -> None:
    built = strings(values)
    assert built.equals(pa.array(values, type=pa.string()))
    assert strings(np.array(values, dtype=object)).to_pylist() == values


def test_strings_refuses_non_strings() -> None:
    with pytest.raises(TypeError):
        strings(["a", 1])  # type: ignore[list-item]


def test_an_id_that_is_not_unicode_is_a_data_format_error() -> None:
    import searchbench as sb
    from searchbench.errors import DataFormatError

    with pytest.raises(DataFormatError, match="is not valid Unicode"):
        sb.Run.from_dict({"q": {"a\ud800": 1.0}})


def test_missing_ids_are_a_data_format_error() -> None:
    import searchbench as sb
    from searchbench.errors import DataFormatError

    with pytest.raises(DataFormatError, match="ids are missing"):
        sb.Run.from_columns(["q", None], ["a", "b"], [1.0, 2.0])


def test_from_numpy_refuses_booleans() -> None:
    with pytest.raises(TypeError, match="integers or floats"):
        from_numpy(np.array([True, False]))


class TestArrowBufferFastPath:
    """numpy ⇄ Arrow buffer views on chunks with offsets, nulls and non-numeric types."""

    def test_to_numpy_on_chunks_with_offsets_and_empty_chunks(self) -> None:
        bools = pa.array([bool(i % 3) for i in range(21)])
        chunked = pa.chunked_array([bools.slice(3, 7), bools.slice(0, 0), bools.slice(13)])
        assert to_numpy(chunked).tolist() == chunked.to_pylist()
        ints = pa.array(range(20), type=pa.int16())
        chunked = pa.chunked_array([ints.slice(5, 3), ints.slice(0, 0), ints.slice(17)])
        assert to_numpy(chunked).tolist() == [5, 6, 7, 17, 18, 19]
        assert to_numpy(chunked).dtype == np.int16

    def test_int_or_on_chunks_with_nulls(self) -> None:
        a = pa.array([1, None, 3, None, 5], type=pa.int32())
        chunked = pa.chunked_array([a.slice(1, 3), a.slice(4), pa.nulls(2, pa.int32())])
        assert int_or(chunked, -1).tolist() == [-1, 3, -1, 5, -1, -1]

    @pytest.mark.parametrize("kind", [pa.date32(), pa.date64(), pa.time32("s"),
                                      pa.timestamp("s"), pa.duration("ms")])
    def test_to_numpy_of_temporal_types_is_not_misread(self, kind: pa.DataType) -> None:
        """Only numbers take the buffer view; other fixed-width types keep pyarrow's conversion."""
        arr = pa.array([1, 2, 3], type=pa.int64()).cast(pa.int32() if kind.bit_width == 32
                                                         else pa.int64()).view(kind)
        want = arr.slice(1).to_numpy(zero_copy_only=False).tolist()
        assert to_numpy(arr.slice(1)).tolist() == want

    def test_strings_agree_with_lookup(self) -> None:
        values = ["", "é", "e", "E", "日本", "a b", "x" * 300]
        built = strings(values)
        assert built.to_pylist() == values
        assert built.equals(pa.array(values, type=pa.string()))
        vocab = np.array(sorted(set(values), key=str.encode), dtype=object)
        assert lookup(vocab, built).tolist() == [vocab.tolist().index(v) for v in values]
        assert lookup(vocab, ["nope", "é"]).tolist() == [-1, vocab.tolist().index("é")]
