"""Sweep reports: recall–QPS Pareto plot (SVG), table of all points, relevance cost.

``render_html`` gives one self-contained page (inline SVG, inline CSS); ``render_markdown``
the same tables for a README. Numbers are rounded here only, never in the library.
"""

from __future__ import annotations

from typing import Any

from .._util import md_table, md_text, visible_text
from .._util.plots import figure, legend, plain_text, save, svg_element
from ..errors import require
from .relevance import cheapest_lossless, noise_ties
from .sweep import SweepResult

__all__ = ["exactness_lines", "pareto", "plot", "plot_svg", "references_line", "render_html",
           "render_markdown", "rows"]


def _recall(p: dict[str, Any], variant: str = "by_id") -> float:
    return float(p["knn_recall"][variant]["mean"])


def pareto(points: list[dict[str, Any]], qps: str = "qps_batch") -> list[dict[str, Any]]:
    """Points no other point beats on both recall and QPS, by increasing recall."""
    ranked = sorted(points, key=lambda p: (-p[qps], -_recall(p)))
    front, best = [], -1.0
    for p in ranked:
        if _recall(p) > best:
            front.append(p)
            best = _recall(p)
    return sorted(front, key=_recall)


def _params(p: dict[str, Any]) -> str:
    both = {**p.get("build", {}), **p.get("search", {})}
    return " ".join(f"{k}={v}" for k, v in both.items())


def plot_svg(result: SweepResult, qps: str = "qps_batch") -> str:
    """ann-benchmarks-style plot as an inline ``<svg>`` element."""
    return svg_element(plot(result, qps, "svg"))


@plain_text
def plot(result: SweepResult, qps: str = "qps_batch", fmt: str = "svg") -> bytes:
    """knn_recall (x) vs QPS (y, log): all points faint, the Pareto frontier of each
    index family as a line, exact search as a dashed line; ``fmt`` svg, png or pdf."""
    k = result.meta.get("k", 10)
    fig = figure(7.5, 4.8, dpi=110, layout=None)
    ax = fig.add_subplot()
    for name in sorted({p["index"] for p in result.points}):
        pts = [p for p in result.points if p["index"] == name]
        ax.scatter([_recall(p) for p in pts], [p[qps] for p in pts], s=14, alpha=0.35)
        front = pareto(pts, qps)
        ax.plot([_recall(p) for p in front], [p[qps] for p in front], marker="o",
                color=ax.collections[-1].get_facecolor()[0][:3], label=visible_text(name))
    exact = result.meta.get("exact", {}).get("qps_batch")
    if exact and qps == "qps_batch":
        ax.axhline(exact, ls="--", color="grey", lw=1,
                   label=visible_text(result.meta["exact"].get("label", "exact (numpy)")))
    ax.set_yscale("log")
    ax.set_xlabel(f"knn_recall@{k} (by id, mean over queries)")
    threads = result.points[0].get("batch_threads") if result.points else "?"
    mode = f"batch, {threads} threads" if qps == "qps_batch" else "single query, 1 thread"
    if result.meta.get("db") and qps == "qps_batch":
        mode = "batch: one client call with all queries"
    ax.set_ylabel(f"queries per second ({mode})")
    ax.grid(True, which="both", alpha=0.3)
    legend(ax, loc="lower left")
    fig.tight_layout()
    return save(fig, fmt)


def _count(value: int | None) -> str:
    return "n/a" if value is None else str(value)


def _seconds(p: dict[str, Any]) -> str:
    wall, cpu = p.get("build_wall_s"), p.get("build_cpu_s")
    if wall is None:
        return "n/a"
    return f"{wall:.2f}" + ("" if cpu is None else f" ({cpu:.2f})")


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / 2**20:.1f}"


def _db_columns(p: dict[str, Any]) -> dict[str, str]:
    """Columns of a point measured through a database (``ann sweep --db``)."""
    db = p.get("db")
    if not db:
        return {"vs engine exact": "", "index used": "", "QPS concurrent": "",
                "p95 ms concurrent": "", "silent exact": ""}
    used = db.get("index_used")
    conc = db.get("latency_concurrent_ms", {})
    vs_engine = db.get("knn_recall_vs_engine_exact")  # None: the engine has no exact search
    return {"vs engine exact": (f"{vs_engine['by_id']['mean']:.4f}" if vs_engine
                                else "n/a (no exact search)"),
            "index used": "unknown" if used is None else ("yes" if used else "no"),
            "QPS concurrent": f"{db['qps_concurrent']:,.0f} ({db['concurrency']} threads)",
            "p95 ms concurrent": f"{conc.get('p95', float('nan')):.3f}",
            "silent exact": "FLAGGED" if p.get("exactness", {}).get("flag") else "no"}


def rows(result: SweepResult) -> list[dict[str, str]]:
    """One display row per point (strings, rounded); points measured through a database
    add knn_recall against the engine's exact search, index use, concurrent QPS and the
    silent-exactness flag."""
    out = []
    with_db = any(p.get("db") for p in result.points)
    for p in sorted(result.points, key=lambda p: (p["index"], _recall(p))):
        rec = p["knn_recall"]
        lat = p["latency_ms"]
        out.append({
            "index": p["index"], "params": _params(p),
            f"knn_recall@{p['k']}": f"{rec['by_id']['mean']:.4f}",
            "p5 / min": f"{rec['by_id']['p5']:.2f} / {rec['by_id']['min']:.2f}",
            "tie-aware": f"{rec['tie_aware']['mean']:.4f}",
            "ties": _count(rec.get("queries_with_ties")),
            "1-R@1": f"{p['one_recall_at_1']:.3f}",
            "QPS batch": _qps_batch(p),
            "batch CPU/wall": f"{p['batch_cpu_s'] / max(p['batch_wall_s'], 1e-12):.2f}",
            "QPS 1-query": _qps_single(p),
            "p50/p95/p99 ms": f"{lat['p50']:.3f} / {lat['p95']:.3f} / {lat['p99']:.3f}",
            "build s (CPU)": _seconds(p),
            "index MB": _mb(p.get("index_bytes")),
            **(_db_columns(p) if with_db else {}),
        })
    return out


def exactness_lines(result: SweepResult) -> list[str]:
    """One line per point flagged as silently exact, with the engine's evidence."""
    out = []
    for p in result.points:
        ex = p.get("exactness") or {}
        if ex.get("flag"):
            state = ", ".join(f"{k}={v}" for k, v in ex.get("index_state", {}).items())
            out.append(f"{_name(p)}: {'; '.join(ex['reasons'])}. Plan: {ex.get('plan')}. "
                       f"Index state: {state or 'not reported'}.")
    return out


def references_line(result: SweepResult) -> str:
    """How the two ground truths of a database sweep differ (empty for library sweeps)."""
    db = result.meta.get("db")
    if not db:
        return ""
    filt = f" Filter: {db['filter']}. {db.get('note', '')}" if db.get("filter") else ""
    notes = {p["exactness"].get("note") for p in result.points
             if p.get("exactness", {}).get("note")}
    return (f"Engine {db.get('engine')}, {db.get('concurrency')} concurrent clients. "
            f"{db.get('references', '')}{filt} {' '.join(sorted(notes))}").strip()


def _qps_single(p: dict[str, Any]) -> str:
    """Fastest round's single-query QPS, with the slowest round's when there were several."""
    low = p.get("qps_single_low")
    if low is None or p.get("single_rounds", 1) < 2:
        return f"{p['qps_single']:,.0f}"
    return f"{p['qps_single']:,.0f} ({low:,.0f}–{p['qps_single']:,.0f})"


def _qps_batch(p: dict[str, Any]) -> str:
    """Best batch QPS with the range used to call ties and a mark if it never settled."""
    low = p.get("qps_batch_low", p["qps_batch_min"])
    shaky = " unstable" if p.get("timing_stable") is False else ""
    return (f"{p['qps_batch']:,.0f} ({low:,.0f}–{p['qps_batch']:,.0f}, "
            f"{p.get('batch_repeats', '?')} runs{shaky})")


def _verdict(rel: dict[str, Any]) -> str:
    """The worst measure verdict, plus the queries the setting loses entirely."""
    said = [v.get("verdict") or ("loss" if v["significant_loss"] else "no significant loss")
            for v in rel.values() if isinstance(v, dict)]
    worst = next((w for w in ("loss", "possible loss") if w in said), "no significant loss")
    lost = rel.get("lost_queries") or []
    if lost:
        shown = ", ".join(lost[:5]) + (", …" if len(lost) > 5 else "")
        worst += f"; loses {len(lost)} quer{'y' if len(lost) == 1 else 'ies'} ({shown})"
    return worst


def relevance_rows(result: SweepResult) -> list[dict[str, str]]:
    """Δ per measure with p and 95 % interval, for points that have a relevance cost."""
    out = []
    for p in sorted(result.points, key=lambda p: -p["qps_batch"]):
        rel = p.get("relevance")
        if not rel:
            continue
        row = {"index": p["index"], "params": _params(p),
               f"knn_recall@{p['k']}": f"{_recall(p):.4f}",
               "QPS batch": f"{p['qps_batch']:,.0f}"}
        for m, v in rel.items():
            if isinstance(v, dict):
                row[f"Δ{m}"] = (f"{v['delta']:+.4f} (p={v['p']:.3f}, "
                                f"[{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}])")
        row["verdict"] = _verdict(rel)
        out.append(row)
    return out


def conclusion(result: SweepResult) -> str:
    """The sentence naming the recommended setting: the fastest without a significant (or
    possible) relevance loss and without a lost query, ties within timing noise broken by
    knn_recall (:func:`~searchbench.ann.relevance.cheapest_lossless`)."""
    if not any(p.get("relevance") for p in result.points):
        return ""
    rel = result.meta.get("relevance", {})
    how = f"{rel.get('test', 'paired')} test and 95 % interval, α={rel.get('alpha', 0.05)}"
    best = cheapest_lossless(result.points)
    if best is None:
        fallback = cheapest_lossless(result.points, allow_lost=True)
        if fallback is None:
            return f"Every setting loses relevance significantly against exact search ({how})."
        return (f"No setting keeps every query: each one without a significant loss ({how}) "
                f"loses some query entirely; the fastest of them, {_name(fallback)}, "
                f"{_verdict(fallback['relevance'])}.")
    deltas = ", ".join(f"Δ{m} {v['delta']:+.4f} (p={v['p']:.3f}, "
                       f"[{v['ci'][0]:+.4f}, {v['ci'][1]:+.4f}])"
                       for m, v in best["relevance"].items() if isinstance(v, dict))
    ties = [p for p in noise_ties(result.points) if p is not best]
    tie_text = (f" Within the timing noise of it (overlapping QPS ranges): "
                f"{'; '.join(_name(p) for p in ties)}; chosen for its higher knn_recall."
                if ties else "")
    return (f"Fastest setting without a significant relevance loss and without a lost "
            f"query ({how}): {_name(best)} — {best['qps_batch']:,.0f} QPS, "
            f"knn_recall@{best['k']} {_recall(best):.4f}; {deltas}.{tie_text}")


def _name(p: dict[str, Any]) -> str:
    return f"{p['index']} {_params(p)}"


def timing_line(result: SweepResult) -> str:
    """A warning when some settings' batch timings never settled (empty otherwise)."""
    t = result.meta.get("timing") or {}
    if not t.get("unstable_points"):
        return ""
    return (f"Timing noise: the batch QPS of {t['unstable_points']} settings did not settle "
            f"within {t.get('stable_within', 0.05):.0%} (spread up to "
            f"{t.get('worst_spread', 0):.0%}); QPS differences that small are noise, and the "
            "recommendation treats overlapping QPS ranges as ties.")


def exact_line(result: SweepResult) -> str:
    """Relevance of exact search itself, the baseline every Δ is measured against."""
    rel = next((p["relevance"] for p in result.points if p.get("relevance")), None)
    if not rel:
        return ""
    vals = ", ".join(f"{m} {v['exact']:.4f}" for m, v in rel.items() if isinstance(v, dict))
    n = result.meta.get("relevance", {}).get("queries", "?")
    return f"Exact search on the {n} judged queries: {vals}."


def _load(m: dict[str, Any]) -> str:
    load = m.get("machine", {}).get("load_average") or []
    return " / ".join(f"{x:.1f}" for x in load)



def _md_table(table: list[dict[str, str]]) -> str:
    if not table:
        return ""
    head = list(table[0])
    return md_table(head, [[r.get(h, "") for h in head] for r in table])


def render_markdown(result: SweepResult) -> str:
    """Header line, the points table, the relevance table and the conclusion."""
    m = result.meta
    machine = m.get("machine", {})
    head = (f"{m.get('n_base')} vectors × {m.get('dim')} dims, {m.get('n_queries')} queries, "
            f"metric {m.get('metric')}, exact search "
            f"{m.get('exact', {}).get('qps_batch', 0):,.0f} QPS; {machine.get('cpu')}, "
            f"{machine.get('cores')} cores, load average {_load(m)}")
    parts = [md_text(head), "", _md_table(rows(result))]
    if references_line(result):
        parts += ["", md_text(references_line(result))]
    flagged = exactness_lines(result)
    if flagged:
        parts += ["", "**Silent exactness** (an approximate answer was expected):", ""]
        parts += [f"- {md_text(line)}" for line in flagged]
    rel = relevance_rows(result)
    if rel:
        parts += ["", md_text(exact_line(result)), "", _md_table(rel), "",
                  md_text(conclusion(result))]
    if timing_line(result):
        parts += ["", f"**Warning:** {md_text(timing_line(result))}"]
    return "\n".join(parts) + "\n"


_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none';
 style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<title>searchbench · {{ title }}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;
 max-width:1100px;margin:0 auto;padding:1.5rem;background:#fff}
h1{font-size:1.6rem;margin-bottom:.2rem}
h2{font-size:1.25rem;border-bottom:2px solid #4c72b0;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:right}
th:first-child,td:first-child,td:nth-child(2),th:nth-child(2){text-align:left}
td{white-space:nowrap}td:nth-child(2){white-space:normal}
.up{color:#1a7f37}.down{color:#c62828}.muted{color:#666;font-size:12px}
.ok{background:#e8f5e9;border-left:4px solid #1a7f37;padding:.3rem .6rem}
svg{max-width:min(100%,780px);height:auto;display:block}figure{margin:.5rem 0}
</style></head><body>
<h1>{{ title }}</h1>
<p class="muted">{{ meta.n_base }} corpus vectors × {{ meta.dim }} dims, {{ meta.n_queries }}
queries, metric <b>{{ meta.metric }}</b>, k={{ meta.k }} (K={{ meta.K }} requested).
knn_recall is agreement with exact search, <b>not</b> relevance recall.
Tie tolerance: {{ tolerance }}. Machine: {{ meta.machine.cpu }}, {{ meta.machine.cores }}
cores, load average {{ load }}; {{ libs }}.</p>
{% if conclusion %}<p class="ok">{{ conclusion }}</p>{% endif %}
{% if timing %}<p class="down">{{ timing }}</p>{% endif %}
<h2>Recall – QPS (batch)</h2><figure>{{ svg_batch | safe }}</figure>
<h2>Recall – QPS (single query)</h2><figure>{{ svg_single | safe }}</figure>
<h2>All points</h2>
{{ table(points) }}
{% if references %}<p class="muted">{{ references }}</p>{% endif %}
{% if flagged %}<h2>Silent exactness</h2>
<p class="down">These settings answered exactly where an approximate index was expected:
their speed is not the index's.</p><ul>{% for f in flagged %}<li>{{ f }}</li>{% endfor %}
</ul>{% endif %}
{% if relevance %}<h2>Relevance cost against exact search</h2>
<p class="muted">Δ = ANN − exact per judged query; {{ meta.relevance.test }} test,
{{ meta.relevance.interval or "Student t" }} interval, α={{ meta.relevance.alpha }};
{{ meta.relevance.rule }}. {{ exact_line }}</p>
{{ table(relevance) }}{% endif %}
<h2>Ground truth</h2><p class="muted">{{ gt }}</p>
</body></html>
"""

_TABLE = """{% macro table(rs) %}<table><tr>{% for h in rs[0] %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in rs %}<tr>{% for h in rs[0] %}<td{% if h == 'verdict' %} class="{{ 'up'
 if r[h] == 'no significant loss' else 'down' }}"{% endif %}>{{ r[h] }}</td>{% endfor %}
</tr>{% endfor %}</table>{% endmacro %}"""


def render_html(result: SweepResult, title: str = "ANN sweep") -> str:
    """A self-contained HTML page (no external files)."""
    jinja2 = require("jinja2", "report")
    env = jinja2.Environment(autoescape=True)
    tpl = env.from_string(_TABLE + _TEMPLATE)
    m = result.meta
    tol = result.points[0]["knn_recall"]["tolerance"] if result.points else ""
    libs = ", ".join(f"{k} {v}" for k, v in m.get("machine", {}).get("libraries", {}).items())
    gt = ", ".join(f"{k}: {v}" for k, v in m.get("ground_truth", {}).items())
    return tpl.render(title=title, meta=m, tolerance=tol, libs=libs, gt=gt, load=_load(m),
                      exact_line=exact_line(result), timing=timing_line(result),
                      conclusion=conclusion(result), svg_batch=plot_svg(result),
                      svg_single=plot_svg(result, "qps_single"), points=rows(result),
                      relevance=relevance_rows(result), references=references_line(result),
                      flagged=exactness_lines(result))
