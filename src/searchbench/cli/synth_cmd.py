"""``searchbench synth``: guarded synthetic questions from the corpus through an LLM."""

from __future__ import annotations

from pathlib import Path

import click

import searchbench as sb

from ._output import (
    QUIET_OPTION,
    UsageError,
    evalset_argument,
    output_option,
    refuse_existing,
    reported_warnings,
)
from .judge_llm_cmd import POSITIVE, endpoint_options

SHARE = click.FloatRange(0.0, 1.0, min_open=True)


@click.command("synth")
@evalset_argument()
@endpoint_options
@click.option("--per-doc", default=1, type=POSITIVE, metavar="INTEGER",
              help="Questions asked per document (one chunk each, spread over it).")
@click.option("--chunk", help="tokens:SIZE[:OVERLAP], sentences:N or recursive:MAX "
              "(whitespace words); default: whole documents.")
@output_option("synth.jsonl to write (queries with evidence).", required=True)
@click.option("--append", "append", is_flag=True, help="Also add the kept questions, their "
              "qrels and evidence to the evaluation-set folder.")
@click.option("--embed-model", default="minilm", show_default=True,
              help="Encoder of the near-duplicate guard (minilm, static, …).")
@click.option("--ngram", default=3, type=POSITIVE, metavar="INTEGER",
              help="Word n-gram size of the copy guard.")
@click.option("--copy-threshold", default=0.5, type=SHARE, metavar="FLOAT",
              help="Drop a question when this share of its n-grams is in the chunk.")
@click.option("--dup-threshold", default=0.9, type=SHARE, metavar="FLOAT",
              help="Drop a question this cosine-similar to a kept or existing one.")
@click.option("--judge-model", help="Model of the answerability check (default: --model; "
              "another model avoids grading the generator with itself).")
@click.option("--min-grade", default=2, type=click.IntRange(0, 3), metavar="GRADE",
              help="Drop a question whose chunk the judge grades lower (answerability).")
@QUIET_OPTION
def synth_command(evalset: str, endpoint: str, model: str, api_key_env: str,
                  concurrency: int, retries: int, timeout: float, cache_path: Path | None,
                  per_doc: int, chunk: str | None, output: Path, force: bool, append: bool,
                  embed_model: str, ngram: int, copy_threshold: float, dup_threshold: float,
                  judge_model: str | None, min_grade: int, quiet: bool) -> None:
    """Generate guarded synthetic questions (chunk kept as evidence) through an LLM."""
    from searchbench.judging import (  # lazy: cli start-up (judging, numpy)
        ChatClient,
        LlmCache,
        LlmJudge,
        append_to_evalset,
        generate_questions,
        load_prompt,
        write_questions,
    )

    folder = Path(evalset)
    if append and not folder.is_dir():
        raise UsageError(f"--append: {evalset!r} is not an evaluation-set folder")
    refuse_existing(force, output)
    sb.retrieval.parse_chunker(chunk)  # a bad --chunk fails before any request
    with reported_warnings(quiet):
        es = sb.load_evalset(evalset, quiet=quiet)
        client = ChatClient(endpoint, model, api_key_env=api_key_env, timeout=timeout,
                            retries=retries)
        encoder = sb.retrieval.encoder(embed_model, quiet=quiet or None)
        cache_file = cache_path or (folder / "llm_cache.sqlite" if folder.is_dir() else None)
        cache = LlmCache(cache_file) if cache_file else None
        checker = ChatClient(endpoint, judge_model, api_key_env=api_key_env, timeout=timeout,
                             retries=retries) if judge_model else client
        judge = LlmJudge(checker, load_prompt(), cache, concurrency=concurrency)
        try:
            kept, report = generate_questions(
                es, client, judge, encoder, per_doc=per_doc, chunk=chunk, ngram=ngram,
                copy_threshold=copy_threshold, dup_threshold=dup_threshold,
                min_grade=min_grade, quiet=quiet or None)
        finally:
            if cache:
                cache.close()
    write_questions(output, kept, overwrite=force)
    added = append_to_evalset(folder, kept) if append else 0
    d = report.dropped
    click.echo(f"{report.chunks} chunks asked, {report.generated} questions generated; "
               f"dropped: {d['malformed']} malformed, {d['copy']} near-copies, "
               f"{d['duplicate']} near-duplicates, {d['unanswerable']} unanswerable; "
               f"kept {report.kept} -> {output}"
               + (f" ({added} added to {folder})" if append else ""))
    click.echo(f"tokens: {report.prompt_tokens} prompt + {report.completion_tokens} "
               "completion")
    click.echo(f"note: every kept question is source=synthetic, generator={model}, "
               "verified=false; judge them with people, not with the same model (pitfall 2)")
