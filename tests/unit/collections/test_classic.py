"""Classic-collection loaders on tiny hand-made folders: quirks and error messages."""

from __future__ import annotations

import io
import tarfile
import warnings
from pathlib import Path

import pytest

from searchbench.collections.check import check_evalset
from searchbench.collections.classic import load_cacm, load_cisi, load_cranfield
from searchbench.errors import DataFormatError, SearchbenchWarning


def cranfield(tmp_path: Path, qrels: str = "1 2 2 \r\n1 1 -1\r\n2 2 4\r\n") -> Path:
    (tmp_path / "cran.all.1400").write_bytes(
        b".I 1\r\n.T\r\nsource paper\r\n.W\r\ntext one\r\n.I 2\r\n.T\r\nt\r\n.W\r\ntwo\r\n"
        b".I 3\r\n.T\r\n.A\r\n.B\r\n.W\r\n")
    (tmp_path / "cran.qry").write_bytes(b".I 001\r\n.W\r\nfirst ?\r\n.I 004\r\n.W\r\nsecond\r\n")
    (tmp_path / "cranqrel").write_bytes(qrels.encode())
    return tmp_path


def test_cranfield_positions_grades_and_source_doc(tmp_path: Path) -> None:
    es = load_cranfield(cranfield(tmp_path))
    assert es.queries.ids == ["1", "2"] and es.queries["2"].metadata["record_id"] == "004"
    assert es.qrels.to_dict() == {"1": {"2": 3, "1": 4}, "2": {"2": 1}}
    assert load_cranfield(tmp_path, source_doc_grade=0).qrels.to_dict()["1"]["1"] == 0
    report = check_evalset(es)
    assert report.ok and [w.kind for w in report.warnings] == ["empty-text", "small-set"]


def test_cranfield_bad_code_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"cranqrel:2: relevance code 7; expected -1 or 1"):
        load_cranfield(cranfield(tmp_path, "1 2 2\n1 1 7\n"))
    with pytest.raises(DataFormatError, match=r"cranqrel:2: 2 fields; expected 3 whitespace"):
        load_cranfield(cranfield(tmp_path, "1 2 2\n1 1\n"))
    (tmp_path / "cran.qry").unlink()
    with pytest.raises(DataFormatError, match=r"cran.qry: missing; expected the Cranfield files"):
        load_cranfield(tmp_path)


def test_cisi_unjudged_queries_excluded(tmp_path: Path) -> None:
    (tmp_path / "CISI.ALL").write_text(".I 1\n.T\nA\n.A\nX\n.W\nabc\n.X\n1\t5\t1\n")
    (tmp_path / "CISI.QRY").write_text(".I 1\n.W\nq one\n.I 2\n.W\nq two\n")
    (tmp_path / "CISI.REL").write_text("     1     1\t0\t0.000000\n")
    with pytest.warns(SearchbenchWarning, match="1 of 2 queries have no judgments"):
        es = load_cisi(tmp_path)
    assert es.judged_queries.ids == ["1"] and es.qrels.to_dict() == {"1": {"1": 1}}
    assert check_evalset(es).ok


def _html(title: str, abstract: str) -> bytes:
    return (f"<html>\n<pre>\n\n\n{title}\n\n{abstract}\n\nCACM June, 1970\n\nDoe, J.\n\n"
            f"CA700601 JB February 13, 1978  9:20 AM\n\n12\t5\t12\n\n</pre>\n</html>\n").encode()


def test_cacm_html_in_tarball(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "cacm.tar.gz", "w:gz") as tar:
        for name, page in [("CACM-0012.html", _html("On Lists", "An abstract\nof two lines.")),
                           ("CACM-0100.html", _html("Only a title", ""))]:
            info = tarfile.TarInfo(name)
            info.size = len(page)
            tar.addfile(info, io.BytesIO(page))
    (tmp_path / "topics.cacm.txt").write_text("<DOC>\n<DOCNO> 1 </DOCNO>\n lists?\n</DOC>\n"
                                              "<DOC>\n<DOCNO> 2 </DOCNO>\n none\n</DOC>\n")
    (tmp_path / "qrels.cacm.txt").write_text("1 Q0 CACM-12 1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        es = load_cacm(tmp_path)
    assert es.corpus.ids == ["CACM-12", "CACM-100"]
    doc = es.corpus["CACM-12"]
    assert (doc.title, doc.text) == ("On Lists", "An abstract\nof two lines.")
    assert doc.metadata["authors"] == ["Doe, J."] and "keywords" not in doc.metadata
    assert es.corpus["CACM-100"].text == "" and es.judged_queries.ids == ["1"]


def test_cisi_rel_not_a_number(tmp_path: Path) -> None:
    (tmp_path / "CISI.ALL").write_text(".I 1\n.W\nabc\n")
    (tmp_path / "CISI.QRY").write_text(".I 1\n.W\nq\n")
    (tmp_path / "CISI.REL").write_text("1 1 0 0.0\n1 x1 0 0.0\n")
    with pytest.raises(DataFormatError, match=r"CISI.REL:2: 'x1' is not an integer"):
        load_cisi(tmp_path)
