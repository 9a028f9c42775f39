"""The precision audit on the user's own model and task (issue: "The precision audit for the
user's own model and task").

The task is a 64-document BEIR folder the tests write (``beir_folder.py``, not NFCorpus). The
models are the real packaged ones, given the way a user gives their own: MiniLM by its folder,
SmolLM2 by its GGUF file (as a yes/no reranker), and a sentence-transformers ``CrossEncoder``
saved to a folder. No cross-encoder with trained weights ships offline, so that one is MiniLM's
encoder with a seeded, untrained one-logit head: it exercises loading, the head split and HPS on
the sigmoid path, and its ranking quality means nothing (no test reads it).
"""

from __future__ import annotations

import json
import os

import pytest

torch = pytest.importorskip("torch")

from mteb_stratified.adapters.precision import sweep as sw  # noqa: E402
from mteb_stratified.adapters.precision.models import infer_kind, resolve_model  # noqa: E402
from mteb_stratified.cli import main as cli  # noqa: E402
from mteb_stratified.core.errors import InputError  # noqa: E402

from .beir_folder import write_small_beir  # noqa: E402

REGIMES = ["fp32", "bf16", "bf16+hps"]


@pytest.fixture(scope="module")
def beir(tmp_path_factory):
    return write_small_beir(str(tmp_path_factory.mktemp("user-task") / "gardens"))


@pytest.fixture(scope="module")
def minilm_dir():
    from mteb_stratified.adapters.precision.models import minilm_path

    return minilm_path()


@pytest.fixture(scope="module")
def gguf_file():
    from mteb_stratified.adapters.precision.models import smollm2_files

    folder, name = smollm2_files()
    return os.path.join(folder, name)


def _sweep(capsys, *argv) -> tuple:
    rc = cli.main(["precision-sweep", *argv, "--no-plot", "--quiet"])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _rows(result: dict) -> dict:
    return {r["regime"]: r for r in result["rows"]}


def _check_precision_claims(rows: dict) -> None:
    """bf16 loses distinct scores; bf16+HPS restores fp32's count; its nDCG@10 range is ≤ bf16's.

    The folder holds no two identical documents, so "fp32's count, duplicates aside" is the
    count itself.
    """
    fp32, bf16, hps = rows["fp32"], rows["bf16"], rows["bf16+hps"]
    assert bf16["metadata"]["distinct_scores"] < fp32["metadata"]["distinct_scores"]
    assert hps["metadata"]["distinct_scores"] == fp32["metadata"]["distinct_scores"]
    assert bf16["distinct_scores_per_query"] < fp32["distinct_scores_per_query"]
    assert hps["distinct_scores_per_query"] == fp32["distinct_scores_per_query"]
    assert hps["ndcg10_range"] <= bf16["ndcg10_range"]
    assert fp32["ndcg10_range"] == 0.0 and hps["tied_share_at_10"] == 0.0


@pytest.fixture(scope="module")
def two_models(beir, minilm_dir, gguf_file, tmp_path_factory):
    """One CLI run: MiniLM by its path, and SmolLM2 by its file reranking MiniLM's top 10."""
    out = str(tmp_path_factory.mktemp("sweep-two"))
    rc = cli.main(["precision-sweep", "--model", minilm_dir, "--model", gguf_file, "--task", beir,
                   "--regimes", *REGIMES, "--rerank-depth", "10", "--max-length", "128",
                   "--out", out, "--no-plot", "--quiet"])
    assert rc == 0
    with open(os.path.join(out, "precision_sweep.json"), encoding="utf-8") as f:
        data = json.load(f)
    return out, data


def test_the_corpus_has_no_duplicate_documents(beir):
    from mteb_stratified.io import load_beir

    data = load_beir(beir, "test")
    texts = [(d["title"], d["text"]) for d in data.corpus.values()]
    assert len(set(texts)) == len(texts) == 64 and len(data.qrels) == 8


def test_minilm_given_by_its_path(two_models, minilm_dir):
    _, data = two_models
    result = data["results"][0]
    assert result["settings"]["model_kind"] == "bi-encoder"
    assert result["settings"]["model_source"] == "folder"
    assert result["settings"]["model_path"] == os.path.abspath(minilm_dir)
    assert result["settings"]["task_source"] == "folder" and result["task"] == "gardens"
    assert result["settings"]["candidates_per_query"] == 64
    _check_precision_claims(_rows(result))


def test_smollm2_as_a_yes_no_reranker_given_by_its_file(two_models, gguf_file):
    _, data = two_models
    result = data["results"][1]
    settings = result["settings"]
    assert settings["model_kind"] == "yes-no-reranker" and settings["model_source"] == "file"
    assert settings["model_path"] == os.path.abspath(gguf_file)
    assert settings["first_stage"].endswith("fp32 top 10")  # the other --model, a bi-encoder
    assert settings["candidates_per_query"] == 10 and settings["queries"] == 8
    assert settings["activation"] == "softmax"
    _check_precision_claims(_rows(result))
    assert len(data["order_flips"]) == len(REGIMES) * len(sw.MEASURES)


def test_outputs_keep_todays_row_fields_and_read_like_the_paper(two_models):
    out, data = two_models
    fields = [f for f in sw.SweepRow.__dataclass_fields__]
    for result in data["results"]:
        for row in result["rows"]:
            assert list(row) == fields
            assert {"regime", "model_dtype", "score_dtype", "hps", "forward_s",
                    "score_s"} <= set(row["metadata"])
    with open(os.path.join(out, "precision_sweep.md"), encoding="utf-8") as f:
        md = f.read()
    assert "| Regime | nDCG@10 E[M] (%) | Range | Bias | MRR@10 E[M] (%) | Range | Bias |" in md
    assert "distinct/q" in md and "tied@10" in md and "max grp" in md
    bf16 = _rows(data["results"][1])["bf16"]
    assert f"| bf16 | {100 * bf16['ndcg10_expected']:.2f} | {100 * bf16['ndcg10_range']:.2f} |" in md
    assert "SmolLM2-135M-Instruct.Q4\\_1.gguf on gardens" in md  # names are escaped Markdown


def _overlap_run(beir, path) -> None:
    """A plain lexical first stage: score = shared lower-case words (ties on purpose)."""
    from mteb_stratified.io import load_beir, write_run

    data = load_beir(beir, "test")
    run = {}
    for q, text in data.queries.items():
        words = set(text.lower().split())
        run[q] = {d: float(len(words & set((doc["title"] + " " + doc["text"]).lower().split())))
                  for d, doc in data.corpus.items()}
    write_run(run, path)


@pytest.fixture(scope="module")
def cross_encoder_dir(minilm_dir, tmp_path_factory):
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)  # the untrained head's weights
    model = CrossEncoder(minilm_dir, num_labels=1, device="cpu", local_files_only=True)
    path = str(tmp_path_factory.mktemp("ce") / "minilm-ce")
    model.save_pretrained(path)
    return path


def test_a_cross_encoder_folder_on_a_trec_run_first_stage(beir, cross_encoder_dir, tmp_path,
                                                         capsys):
    run = str(tmp_path / "overlap.trec")
    _overlap_run(beir, run)
    rc, out, err = _sweep(capsys, "--model", cross_encoder_dir, "--task", beir, "--first-stage",
                          run, "--rerank-depth", "20", "--regimes", *REGIMES, "--out",
                          str(tmp_path / "out"))
    assert rc == 0, err
    with open(tmp_path / "out" / "precision_sweep.json", encoding="utf-8") as f:
        result = json.load(f)["results"][0]
    assert result["settings"]["model_kind"] == "cross-encoder"  # inferred from its files
    assert result["settings"]["first_stage"] == f"TREC run {run} (top 20)"
    _check_precision_claims(_rows(result))


def test_the_cross_encoder_head_split_equals_the_models_own_logits(cross_encoder_dir, beir):
    """The forward/scoring split recomputes the head in the model dtype bit for bit (one batch
    on both sides: in bf16 the padding of a batch changes the hidden states themselves)."""
    from sentence_transformers import CrossEncoder

    from mteb_stratified.adapters.precision.hooks import CrossEncoderScorer
    from mteb_stratified.io import load_beir

    data = load_beir(beir, "test")
    docs = list(data.corpus.values())[:12]
    pairs = [(data.queries["q1"], d["title"] + " " + d["text"]) for d in docs]
    model = CrossEncoder(cross_encoder_dir, device="cpu", local_files_only=True,
                         model_kwargs={"dtype": torch.bfloat16})
    scorer = CrossEncoderScorer(model, activation="none", batch_size=12)
    h = scorer.head_inputs(pairs)
    assert h.dtype == torch.bfloat16 and h.shape == (12, 384)
    own = model.predict(pairs, activation_fn=torch.nn.Identity(), convert_to_tensor=True,
                        batch_size=12)
    mine = scorer.scores_from_head_inputs(h)
    assert mine.dtype == torch.bfloat16
    assert torch.equal(mine.float(), own.float())
    hps = scorer.with_score_dtype("float32").scores_from_head_inputs(h)
    assert hps.dtype == torch.float32 and len(set(hps.tolist())) == 12
    plain = scorer.logits(pairs)  # the public path: the model's own dtype, not ST's fp32 upcast
    assert plain.dtype == torch.bfloat16 and torch.equal(plain.reshape(-1), own.bfloat16())


@pytest.fixture(scope="module")
def decoder_cross_encoder_dir(gguf_file, tmp_path_factory):
    """SmolLM2's decoder as a ``LlamaForSequenceClassification`` with a seeded, untrained
    one-logit head, saved as a plain folder: the layout of the converted Qwen3-Reranker
    "seq-cls" models, whose head runs at every position and is read at the last token."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder, name = os.path.dirname(gguf_file), os.path.basename(gguf_file)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, local_files_only=True)
    torch.manual_seed(0)
    dequantised = AutoModelForSequenceClassification.from_pretrained(
        folder, gguf_file=name, num_labels=1, local_files_only=True)
    config = dequantised.config
    config.pad_token_id = tokenizer.pad_token_id
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # a GGUF-loaded model cannot be saved as such
    model = AutoModelForSequenceClassification.from_config(config)
    model.load_state_dict(dequantised.state_dict())
    path = str(tmp_path_factory.mktemp("decoder-ce") / "smollm2-seq-cls")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_a_decoder_sequence_classifier_is_read_at_its_last_token(beir, decoder_cross_encoder_dir,
                                                                 tmp_path, capsys):
    rc, out, err = _sweep(capsys, "--model", decoder_cross_encoder_dir, "--task", beir,
                          "--first-stage", "minilm", "--rerank-depth", "10", "--rerank-queries",
                          "4", "--regimes", *REGIMES, "--out", str(tmp_path / "out"))
    assert rc == 0, err
    with open(tmp_path / "out" / "precision_sweep.json", encoding="utf-8") as f:
        result = json.load(f)["results"][0]
    assert result["settings"]["model_kind"] == "cross-encoder"  # config: *ForSequenceClassification
    assert result["settings"]["queries"] == 4
    _check_precision_claims(_rows(result))


# ----------------------------------------------------------------------------- kinds


def _folder(tmp_path, name, files: dict) -> str:
    path = tmp_path / name
    path.mkdir()
    for file, content in files.items():
        (path / file).write_text(json.dumps(content), encoding="utf-8")
    return str(path)


def test_kinds_are_inferred_from_the_files(tmp_path, minilm_dir, gguf_file, cross_encoder_dir):
    assert infer_kind(minilm_dir)[0] == "bi-encoder"
    assert infer_kind(cross_encoder_dir)[0] == "cross-encoder"
    assert infer_kind(gguf_file)[0] == "yes-no-reranker"
    causal = _folder(tmp_path, "lm", {"config.json": {"architectures": ["LlamaForCausalLM"]}})
    assert infer_kind(causal)[0] == "yes-no-reranker"
    ce = _folder(tmp_path, "ce", {"config.json": {"architectures": ["XLMRobertaForSequenceClassification"]}})
    assert infer_kind(ce)[0] == "cross-encoder"
    st_causal = _folder(tmp_path, "st-lm", {  # sentence-transformers 6 on Qwen3-Reranker
        "config.json": {"architectures": ["Qwen3ForCausalLM"]},
        "config_sentence_transformers.json": {"model_type": "CrossEncoder"}})
    assert infer_kind(st_causal)[0] == "yes-no-reranker"
    bare = _folder(tmp_path, "bare", {"config.json": {"architectures": ["BertModel"]}})
    kind, why = infer_kind(bare)
    assert kind is None and "BertModel" in why
    assert infer_kind(_folder(tmp_path, "empty", {}))[0] is None
    assert resolve_model("minilm").source == "packaged"
    assert resolve_model(bare, "bi-encoder").kind == "bi-encoder"  # --model-kind decides


# ----------------------------------------------------------------------------- bad input


def _error(capsys, *argv) -> str:
    rc, out, err = _sweep(capsys, *argv)
    assert rc == 2, (out, err)
    assert "Traceback" not in err and "error:" in err
    return err


def test_a_model_that_cannot_be_loaded_offline(capsys, tmp_path, beir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = _error(capsys, "--model", "some-org/no-such-model", "--task", beir, "--out",
                 str(tmp_path / "o"))
    assert "cannot be loaded offline" in err and "HF_HUB_OFFLINE=1" in err
    assert os.path.abspath("some-org/no-such-model") in err  # the path it tried


def test_a_model_folder_that_does_not_load(capsys, tmp_path, beir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    broken = _folder(tmp_path, "broken", {"config.json": {
        "architectures": ["BertForSequenceClassification"], "model_type": "bert"}})
    err = _error(capsys, "--model", broken, "--first-stage", "minilm", "--task", beir,
                 "--regimes", "fp32", "--out", str(tmp_path / "o"))
    assert f"{broken}: cannot load" in err and "as a cross-encoder" in err
    assert "HF_HUB_OFFLINE=1" in err


def test_a_kind_that_cannot_be_inferred(capsys, tmp_path, beir):
    bare = _folder(tmp_path, "bare", {"config.json": {"architectures": ["BertModel"]}})
    err = _error(capsys, "--model", bare, "--task", beir, "--out", str(tmp_path / "o"))
    assert "cannot tell what kind of model" in err and "--model-kind" in err
    err = _error(capsys, "--model", "minilm", "--model-kind", "cross-encoder", "--task", beir,
                 "--out", str(tmp_path / "o"))
    assert "minilm is a bi-encoder" in err
    err = _error(capsys, "--model", "minilm", "--model-kind", "bi-encoder", "--model-kind",
                 "bi-encoder", "--task", beir, "--out", str(tmp_path / "o"))
    assert "2 --model-kind for 1 --model" in err


def test_a_task_that_is_neither_a_folder_nor_an_mteb_task(capsys, tmp_path):
    err = _error(capsys, "--task", "NFCorpusx", "--out", str(tmp_path / "o"))
    assert "neither a folder" in err and "MTEB retrieval or reranking task" in err
    assert "did you mean" in err and "nfcorpus" in err and "NFCorpus" in err
    err = _error(capsys, "--task", "STS12", "--out", str(tmp_path / "o"))
    assert "not retrieval or reranking" in err


def test_an_mteb_task_whose_data_is_on_the_unreachable_hub(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = _error(capsys, "--task", "SciFact", "--out", str(tmp_path / "o"))
    assert "could not be loaded through mteb" in err and "HF_HUB_OFFLINE=1" in err


def test_a_reranker_with_no_first_stage(capsys, tmp_path, beir, gguf_file, cross_encoder_dir):
    for model in (gguf_file, cross_encoder_dir):
        err = _error(capsys, "--model", model, "--task", beir, "--out", str(tmp_path / "o"))
        assert "reranks a first stage" in err and "--first-stage" in err
    err = _error(capsys, "--model", gguf_file, "--first-stage", cross_encoder_dir, "--task", beir,
                 "--out", str(tmp_path / "o"))
    assert "must be a TREC run file or a bi-encoder" in err


def test_a_kind_that_contradicts_the_files(capsys, tmp_path, beir, minilm_dir):
    err = _error(capsys, "--model", minilm_dir, "--model-kind", "cross-encoder", "--first-stage",
                 "minilm", "--task", beir, "--out", str(tmp_path / "o"))
    assert "contradicts the model's files" in err and "is a bi-encoder" in err


def test_a_cross_encoder_without_its_trained_head(capsys, tmp_path, beir, minilm_dir):
    """MiniLM's encoder alone (no sentence-transformers modules) read as a cross-encoder would
    get a freshly initialised head: refused, not scored."""
    import shutil

    bare = tmp_path / "encoder-only"
    bare.mkdir()
    for name in os.listdir(minilm_dir):
        if os.path.isfile(os.path.join(minilm_dir, name)) and name not in (
                "modules.json", "config_sentence_transformers.json", "sentence_bert_config.json"):
            shutil.copy(os.path.join(minilm_dir, name), bare / name)
    err = _error(capsys, "--model", str(bare), "--model-kind", "cross-encoder", "--first-stage",
                 "minilm", "--task", beir, "--regimes", "fp32", "--out", str(tmp_path / "o"))
    assert "no trained scoring head" in err and "'classifier.weight'" in err


def test_options_that_would_be_ignored_or_fail_late_fail_first(capsys, tmp_path, beir,
                                                               gguf_file):
    out = ["--task", beir, "--out", str(tmp_path / "o")]
    err = _error(capsys, "--model", "minilm", "--first-stage", "minilm", *out)
    assert "no --model is a reranker" in err
    err = _error(capsys, "--model", "minilm", "--instruction", "Find it", *out)
    assert "--instruction" in err and "no --model is one" in err
    err = _error(capsys, "--model", "minilm", "--hf-subset", "en", *out)
    assert "--hf-subset" in err
    err = _error(capsys, "--model", "minilm", "--rerank-depth", "5", *out)
    assert "--rerank-depth" in err and "no --model is a reranker" in err
    err = _error(capsys, "--model", "minilm", "--activation", "sigmoid", "--max-length", "64", *out)
    assert "--max-length, --activation" in err
    err = _error(capsys, "--model", "minilm", "--model", gguf_file, "--max-length", "30", *out)
    assert "--max-length 30 leaves no room" in err
    err = _error(capsys, "--model", gguf_file, "--first-stage", str(tmp_path / "nope.trec"), *out)
    assert "nope.trec: no such file" in err
    # a two-token answer fails on the tokenizer alone, before the bi-encoder sweep runs
    err = _error(capsys, "--model", "minilm", "--model", gguf_file, "--yes-token", "yes please",
                 *out)
    assert "no single token for 'yes please'" in err and "--yes-token" in err


def test_a_first_stage_run_with_a_document_of_another_corpus(capsys, tmp_path, beir, gguf_file):
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 astro-01 1 2.0 x\nq1 Q0 not-here 2 1.0 x\n", encoding="utf-8")
    err = _error(capsys, "--model", gguf_file, "--first-stage", str(run), "--task", beir,
                 "--out", str(tmp_path / "o"))
    assert f"{run}:2: document 'not-here'" in err


def test_a_prompt_template_that_reaches_past_its_fields(capsys, tmp_path, beir, gguf_file):
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps({"prefix": "", "body": "{query.__class__} {document}",
                               "suffix": ""}), encoding="utf-8")
    err = _error(capsys, "--model", gguf_file, "--first-stage", "minilm", "--prompt-template",
                 str(bad), "--task", beir, "--regimes", "fp32", "--out", str(tmp_path / "o"))
    assert "only {instruction}, {query} and {document}" in err


@pytest.mark.cpu_only
def test_cuda_without_a_gpu(capsys, tmp_path, beir):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    err = _error(capsys, "--device", "cuda", "--task", beir, "--out", str(tmp_path / "o"))
    assert "device 'cuda' is not available" in err and "--device cpu" in err


# ----------------------------------------------------------------------------- tasks and stages


def test_an_mteb_task_name_loads_through_mteb():
    """``StratifiedNFCorpus`` through mteb's task API gives exactly the bundled folder's data."""
    a = sw.load_task("StratifiedNFCorpus")
    b = sw.load_task("nfcorpus")
    assert a.source == "mteb" and b.source == "bundled"
    assert a.dataset.qrels == b.dataset.qrels and a.dataset.queries == b.dataset.queries
    assert a.dataset.corpus == b.dataset.corpus and len(a.dataset.corpus) == 3633


def test_a_reranking_tasks_own_candidates_are_its_first_stage(beir):
    from datasets import Dataset

    from mteb_stratified.adapters.precision.tasks import SweepTask, mteb_split_to_beir

    split = {"corpus": Dataset.from_dict({"id": ["a", "b", "c"], "title": ["", "", ""],
                                          "text": ["x", "y", "z"]}),
             "queries": [{"id": "q1", "text": "qx", "instruction": "briefly"},
                         {"id": "q2", "text": ["turn 1", "turn 2"]}],
             "relevant_docs": {"q1": {"a": 1}, "q2": {"c": 2}},
             "top_ranked": {"q1": ["c", "a", "b"], "q2": ["b", "c"]}}
    data, top = mteb_split_to_beir(split, "T", "test")
    assert data.queries == {"q1": "qx briefly", "q2": "turn 1\nturn 2"} and top["q2"] == ["b", "c"]
    task = SweepTask("T", data, "mteb", "mteb:T", top)
    kept, cands, what = sw.first_stage_candidates(task, ["q1", "q2"], None, 2)
    assert kept == ["q1", "q2"] and cands == [["c", "a"], ["b", "c"]] and "top_ranked" in what
    with pytest.raises(InputError, match="needs a first stage"):
        sw.first_stage_candidates(SweepTask("T", data, "mteb", "mteb:T"), ["q1"], None, 2)


def test_a_trec_first_stage_takes_the_top_k_in_trec_eval_order(tmp_path, beir):
    from mteb_stratified.adapters.precision.tasks import candidates_from_run
    from mteb_stratified.io import load_beir

    corpus = load_beir(beir, "test").corpus
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 astro-01 1 1.0 x\nq1 Q0 astro-03 2 2.0 x\nq1 Q0 astro-02 3 2.0 x\n"
                   "q2 Q0 bread-01 1 0.5 x\n", encoding="utf-8")
    kept, cands = candidates_from_run(str(run), ["q1", "q2", "q3"], corpus, 2)
    assert kept == ["q1", "q2"]  # q3 is not in the run: left out
    assert cands == [["astro-03", "astro-02"], ["bread-01"]]  # ties: doc id descending
    assert sw.top_candidates(["b", "a", "c"], [[0.5, 0.5, 0.1]], 2) == [["b", "a"]]


def test_a_hub_name_is_read_from_the_local_cache(tmp_path, beir, minilm_dir):
    """``--model org/name`` with HF_HUB_OFFLINE=1 loads the snapshot of the local Hugging Face
    cache (here MiniLM's files linked into a cache laid out as huggingface_hub writes it)."""
    import subprocess
    import sys

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hf" / "hub" / "models--someone--minilm-copy"
    snap = repo / "snapshots" / commit
    for root, _, files in os.walk(minilm_dir):
        for name in files:
            src = os.path.join(root, name)
            dst = snap / os.path.relpath(src, minilm_dir)
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(src, dst)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified.cli.main", "precision-sweep",
                           "--model", "someone/minilm-copy", "--task", beir, "--regimes", "fp32",
                           "--max-queries", "2", "--out", str(out), "--no-plot", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with open(out / "precision_sweep.json", encoding="utf-8") as f:
        settings = json.load(f)["results"][0]["settings"]
    assert settings["model"] == "someone/minilm-copy" and settings["model_source"] == "hub cache"
    assert settings["model_kind"] == "bi-encoder" and settings["model_path"] == str(snap)
