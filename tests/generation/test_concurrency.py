"""Generation under ``--concurrency``: the output does not depend on it nor on the order in
which answers complete, the budget bounds what the server receives, the batched judge sends one
request per query when the pool fits (a document whose grade is missing is graded alone), the
judge's ``max_calls`` is a true bound, and the answer cache takes writes from threads and from a
second process at once."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading

import pytest

from mteb_stratified.cli import main as cli_main
from mteb_stratified.generation import (BudgetedCalls, BudgetExhausted, CallCache, LLMJudge)
from mteb_stratified.llm import ChatEndpoint, Completion

from ._chat import ChatServer, _grade

pytest.importorskip("openai")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUTPUTS = ("queries.jsonl", "candidates.jsonl", "qrels/test.tsv", "qrels/generated.tsv",
           "qrels/dev.tsv", "coverage.json", "coverage.md")
DOCS = [(f"d{i}", f"Document text number {i} about vitamin d and the bones of mice {i}.")
        for i in range(9)]


def _cmd(folder, structure, url, out, budget, concurrency, *extra):
    return ["generate", "--dataset", folder, "--structure", structure, "--budget", str(budget),
            "--out", str(out), "--no-progress", "--model", "m", "--api-key", "none",
            "--base-url", url, "--no-dense", "--pool-bm25", "2", "--max-pool", "2",
            "--judge-batch", "2", "--seed", "5", "--concurrency", str(concurrency), "--json",
            *extra]


def _files(out) -> dict:
    return {name: open(os.path.join(out, name), "rb").read() for name in OUTPUTS}


def _usage(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["usage"]


def test_concurrency_4_gives_the_files_of_concurrency_1_whatever_the_completion_order(
        slice_paths, tmp_path, capsys):
    folder, structure = slice_paths
    with ChatServer(varied=True) as plain, ChatServer(varied=True, reverse=4,
                                                      hold_s=0.3) as lifo:
        assert cli_main.main(_cmd(folder, structure, plain.url, tmp_path / "c1", 64, 1)) == 0
        one = _usage(capsys)
        assert cli_main.main(_cmd(folder, structure, lifo.url, tmp_path / "c4", 64, 4)) == 0
        four = _usage(capsys)
    # the answers completed in another order than their requests were sent: several were in
    # flight at once, and the later ones came back first
    assert lifo.answered != sorted(lifo.answered)
    assert plain.count == lifo.count == one["paid_calls"] == four["paid_calls"] <= 64
    assert _files(tmp_path / "c4") == _files(tmp_path / "c1")
    cands = [json.loads(x) for x in open(tmp_path / "c1" / "candidates.jsonl")]
    assert len({c.get("query") for c in cands}) > 3  # the candidates differ
    assert any(c["status"] == "accepted" for c in cands)
    # each judged document names its rule: graded within one batched answer here
    rules = {r for c in cands for r in c.get("judged_by", {}).values()}
    assert rules == {"llm:m:batch"}


def test_the_budget_bounds_what_the_server_receives_under_concurrency(slice_paths, tmp_path,
                                                                      capsys):
    """Batched answers that each miss a grade: the judge's worst path (a document graded alone)
    runs in every candidate, four at a time, and the budget still bounds the requests."""
    folder, structure = slice_paths
    for budget in (13, 30):
        with ChatServer(varied=True, missing=True) as server:
            out = tmp_path / f"b{budget}"
            assert cli_main.main(_cmd(folder, structure, server.url, out, budget, 4)) == 0
            usage = _usage(capsys)
        assert server.count == usage["paid_calls"] == usage["calls"] <= budget
        cov = json.load(open(out / "coverage.json"))
        assert cov["stop_reason"].startswith("budget spent")
        cands = [json.loads(x) for x in open(out / "candidates.jsonl")]
        rules = [r for c in cands for r in c.get("judged_by", {}).values()]
        assert "llm:m:single" in rules and "llm:m:batch" in rules


class _Scripted:
    """Answers every request with ``answer``; counts them."""

    def __init__(self, answer: str) -> None:
        self.answer, self.received = answer, 0
        self.lock = threading.Lock()

    def complete(self, **request):
        with self.lock:
            self.received += 1
        return Completion(self.answer, 3, 1)


class _Graded(_Scripted):
    """Grades every document 1, in a batch or alone."""

    def __init__(self) -> None:
        super().__init__("")

    def complete(self, *, messages, **request):
        n = len(re.findall(r"^Document \d+:$", messages[-1]["content"], re.M))
        self.answer = json.dumps({"grades": [1] * n} if n else {"relevance": 1})
        return super().complete(**request)


def _calls(provider, cache=None, budget: int = 1000) -> BudgetedCalls:
    return BudgetedCalls(ChatEndpoint(None, "m", "k", provider=provider, backoff=0.0), cache,
                         max_calls=budget)


@pytest.mark.parametrize("batch", [1, 2, 3, 8])
def test_the_judges_max_calls_is_reached_by_answers_without_json_and_never_passed(batch):
    for n in range(1, len(DOCS) + 1):
        garbage = _Scripted("no JSON at all")
        judge = LLMJudge(_calls(garbage), batch=batch)
        grades = judge.judge("vitamin d", DOCS[:n])
        assert garbage.received == judge.max_calls(n), (batch, n)
        assert all(g is None for g, _ in grades.values()) and len(grades) == n
        good = _Graded()
        grades = LLMJudge(_calls(good), batch=batch).judge("vitamin d", DOCS[:n])
        assert good.received == -(-n // batch) <= judge.max_calls(n)
        assert {g for g, _ in grades.values()} == {1}


def _server_judge(server, batch: int) -> tuple[LLMJudge, BudgetedCalls]:
    calls = BudgetedCalls(ChatEndpoint(server.url, "m", "none"), None, max_calls=100)
    return LLMJudge(calls, batch=batch), calls


def test_the_batched_judge_sends_one_request_per_query_when_the_pool_fits():
    with ChatServer(varied=True) as server:
        judge, _ = _server_judge(server, 8)
        grades = judge.judge("vitamin d bones", DOCS[:6])
        assert server.count == 1
        # the grades a document gets alone (the same server's rule for one document)
        assert grades == {d: (_grade("vitamin d bones", t), "llm:m:batch") for d, t in DOCS[:6]}
        assert len({g for g, _ in grades.values()}) > 1
        # 9 documents, batch 4: ceil(9 / 4) = 3 requests of 3 documents
        judge, _ = _server_judge(server, 4)
        judge.judge("vitamin d bones", DOCS)
        assert server.count == 1 + 3
        assert judge.params()["batch"] == 4


def test_a_document_missing_from_the_batched_answer_is_graded_alone():
    with ChatServer(varied=True, missing=True) as server:
        judge, calls = _server_judge(server, 8)
        grades = judge.judge("vitamin d bones", DOCS[:3])
    # the answer held documents 1 and 2 only: one more request, for document 3 alone
    assert server.count == calls.usage()["paid_calls"] == 2 <= judge.max_calls(3)
    want = {d: _grade("vitamin d bones", t) for d, t in DOCS[:3]}
    assert grades == {"d0": (want["d0"], "llm:m:batch"), "d1": (want["d1"], "llm:m:batch"),
                      "d2": (want["d2"], "llm:m:single")}


def test_threads_never_take_more_calls_than_the_budget(tmp_path):
    """Eight threads, half of their calls answered from the cache: the calls stop at the budget
    exactly, and the requests sent are the ones counted."""
    cache = CallCache(str(tmp_path / "c.sqlite"))
    warm = _calls(_Scripted('{"query": "q"}'), cache)
    for i in range(0, 200, 2):
        warm.chat("write", [{"role": "user", "content": str(i)}], max_tokens=8)
    server = _Scripted('{"query": "q"}')
    calls = _calls(server, cache, budget=57)
    stopped = []

    def work(t):
        try:
            for i in range(t, 200, 8):
                calls.chat("write", [{"role": "user", "content": str(i)}], max_tokens=8)
        except BudgetExhausted:
            stopped.append(t)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    u = calls.usage()
    assert stopped and u["calls"] == 57  # (a thread may finish its own calls first)
    assert server.received == u["paid_calls"] and u["cached_calls"] == 57 - server.received
    assert u["tokens"] == 4 * 57


WRITER = """
import sys
sys.path.insert(0, {root!r})
from mteb_stratified.generation import CallCache
cache = CallCache({path!r})
for i in range(150):
    cache.put(f"p{{i}}", {{"content": f"process {{i}}"}}, kind="write", calls=1)
"""


def test_the_cache_takes_writes_from_threads_and_a_second_process_at_once(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    cache = CallCache(path)
    other = subprocess.Popen([sys.executable, "-c", WRITER.format(root=ROOT, path=path)],
                             stderr=subprocess.PIPE)
    errors = []

    def work(t):
        try:
            for i in range(60):
                key = f"t{t}-{i}"
                cache.put(key, {"content": key}, kind="judge", prompt_tokens=i, calls=1)
                got = cache.get(key)
                assert got["content"] == key and got["prompt_tokens"] == i
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert other.wait(60) == 0, other.stderr.read().decode()[-2000:]
    assert errors == []
    assert cache.count() == 6 * 60 + 150
    # every answer is committed when it is put: a fresh connection reads them all
    again = CallCache(path)
    assert again.get("p149")["content"] == "process 149" and again.get("t5-59") is not None
