"""``searchbench judge llm``: graded LLM labels for a pool (registered in ``judge_cmd``)."""

from __future__ import annotations

from pathlib import Path

import click

import searchbench as sb
from searchbench._util import progress
from searchbench._util.secrets import remote_text

from ._output import QUIET_OPTION, evalset_argument, paths, reported_warnings

POSITIVE = click.IntRange(min=1)


def endpoint_options(f):
    """The chat endpoint's options, shared by ``judge llm`` and ``synth``."""
    for option in reversed((
        click.option("--endpoint", required=True,
                     help="OpenAI-compatible base URL (…/v1) of the chat endpoint."),
        click.option("--model", required=True, help="Model name sent to the endpoint."),
        click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
                     help="Environment variable holding the API key (never printed)."),
        click.option("--concurrency", default=4, type=POSITIVE, metavar="INTEGER",
                     help="Requests in flight at once."),
        click.option("--retries", default=4, type=click.IntRange(min=0), metavar="INTEGER",
                     help="Retries per request (backoff 1 s, 2 s, …; Retry-After honoured)."),
        click.option("--timeout", default=120.0, help="Seconds for one request (all of it)."),
        click.option("--cache", "cache_path", type=paths(),
                     help="Answer cache (SQLite); default EVALSET/llm_cache.sqlite."),
    )):
        f = option(f)
    return f


@click.command("llm")
@evalset_argument(folder=True)
@click.option("--pool", "pool_path", type=paths(must_exist=True), required=True,
              help="pool.jsonl to judge (from `searchbench pool`).")
@endpoint_options
@click.option("--batch", default=32, type=POSITIVE, metavar="INTEGER",
              help="Pairs judged (and stored) per batch.")
@click.option("--max-items", type=POSITIVE, metavar="INTEGER",
              help="Judge at most N pairs not judged yet (cost control).")
@click.option("--prompt", "prompt_name", default="umbrela-1", show_default=True,
              help="Packaged prompt version or a TOML prompt file.")
@click.option("--price-in", default=0.0, help="Price per million prompt tokens (cost line).")
@click.option("--price-out", default=0.0,
              help="Price per million completion tokens (cost line).")
@QUIET_OPTION
def llm_command(evalset: Path, pool_path: Path, endpoint: str, model: str, api_key_env: str,
                concurrency: int, retries: int, timeout: float, cache_path: Path | None,
                batch: int, max_items: int | None, prompt_name: str, price_in: float,
                price_out: float, quiet: bool) -> None:
    """Grade the pool 0-3 with an LLM (versioned UMBRELA prompt) into the judging store."""
    from searchbench.judging import (  # lazy: cli start-up (judging, numpy)
        ChatClient,
        JudgmentStore,
        LlmCache,
        LlmJudge,
        generator_warning,
        judge_pool,
        load_prompt,
        read_pool,
    )

    with reported_warnings(False):  # the pitfall-2 warning is never silenced
        es = sb.load_evalset(str(evalset), quiet=quiet)
        items = read_pool(pool_path)
        prompt = load_prompt(prompt_name)
        client = ChatClient(endpoint, model, api_key_env=api_key_env, timeout=timeout,
                            retries=retries)
        generator_warning(es, model, {i.query_id for i in items})
    cache = LlmCache(cache_path or Path(evalset) / "llm_cache.sqlite")
    judge = LlmJudge(client, prompt, cache, concurrency=concurrency)
    try:
        with JudgmentStore(evalset, check=True) as store, progress(
                min(len(items), max_items or len(items)), f"judging with {model}", quiet,
                unit="pairs", kept=f"judged and stored in {store.path}") as advance:
            report = judge_pool(es, items, judge, store, max_items=max_items, batch=batch,
                                progress=advance)
    finally:
        cache.close()
    _say(report, price_in, price_out)


def _say(report, price_in: float, price_out: float) -> None:
    grades = ", ".join(f"{g}: {n}" for g, n in sorted(report.grades.items())) or "none"
    click.echo(f"{report.annotator}: stored {report.stored} labels (grades {grades}); "
               f"{report.cached} answers from the cache, {report.requested} requested, "
               f"{report.already} pairs already judged by this annotator")
    cost = report.cost(price_in, price_out)
    click.echo(f"tokens: {report.prompt_tokens} prompt + {report.completion_tokens} "
               f"completion" + (f"; cost {cost:.4f}" if price_in or price_out else ""))
    if report.failed:
        shown = "; ".join(f"{q}/{d}: {remote_text(a, 60)!r}" for q, d, a in report.failed[:3])
        click.echo(f"warning: {len(report.failed)} answers were not a grade 0-3 and were not "
                   f"stored (run again to retry them): {shown}", err=True)
