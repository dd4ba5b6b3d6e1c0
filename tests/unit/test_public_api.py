"""The public API: a sorted, complete ``__all__`` and no heavy imports."""

from __future__ import annotations

import subprocess
import sys

import searchbench as sb


def test_all_is_sorted_and_complete() -> None:
    assert sb.__all__ == sorted(sb.__all__)
    public = {n for n in dir(sb) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(sb, n)).__name__ == "module"}
    assert set(sb.__all__) == public - modules - {"annotations"}
    for name in sb.__all__:
        assert getattr(sb, name) is not None


def test_core_imports_without_heavy_libraries() -> None:
    """data, measures and stats work with torch, faiss, numba and friends blocked."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'torch', 'faiss', 'numba', 'sentence_transformers',"
        " 'bm25s', 'matplotlib', 'pandas', 'hnswlib', 'rich', 'click'}:\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import searchbench as sb, searchbench.stats\n"
        "q = sb.Qrels.from_dict({'q': {'a': 1}})\n"
        "r = sb.Run.from_dict({'q': {'a': 1.0}})\n"
        "print(sb.evaluate(q, r, ['nDCG@10']).mean['nDCG@10'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1.0"
