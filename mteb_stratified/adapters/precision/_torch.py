"""Lazy torch access, torch dtypes, and the "can this hardware run that dtype?" probe.

Nothing here imports torch at module import; every function imports it when called and, when
torch is missing, raises an ImportError that names the extra to install.  Dtype names and
spellings: :data:`mteb_stratified.core.ranking.precision.DTYPES` (``dtype_name`` is re-exported
here).
"""

from __future__ import annotations

from ...core.errors import InputError
from ...core.ranking.precision import dtype_name
from .. import require

__all__ = ["torch_module", "dtype_name", "to_torch_dtype", "check_dtype_supported",
           "PrecisionUnsupportedError"]


class PrecisionUnsupportedError(InputError, RuntimeError):
    """The device cannot run an operation in the requested dtype (e.g. fp16 matmul on a CPU,
    or ``--device cuda`` without a GPU): a choice the user can fix, so the CLI prints it and
    exits 2 like any :class:`InputError`."""


def torch_module():
    """``import torch``, or an ImportError saying ``pip install mteb-stratified[mteb]``."""
    return require("torch", "mteb")


def to_torch_dtype(dtype):
    """The torch dtype for a name (``"bf16"``, ``"bfloat16"``) or a torch dtype."""
    torch = torch_module()
    return getattr(torch, dtype_name(dtype))


_CHECKED: dict = {}


def check_dtype_supported(dtype, device="cpu") -> None:
    """Run a tiny matmul, softmax, sigmoid and layer norm in ``dtype`` on ``device``.

    Raises :class:`PrecisionUnsupportedError` with a fix when the hardware or the installed
    torch build cannot run them (e.g. ``"addmm_impl_cpu_" not implemented for 'Half'`` on an
    old CPU build, or ``device="cuda"`` on a machine without a GPU). Results are cached per
    ``(dtype, device)``.
    """
    torch = torch_module()
    name = dtype_name(dtype)
    key = (name, str(device))
    if key in _CHECKED:
        if _CHECKED[key] is not None:
            raise _CHECKED[key]
        return
    error = None
    try:
        _probe(torch, getattr(torch, name), device)
    except (RuntimeError, AssertionError, TypeError, ValueError) as exc:  # bad dtype/device
        why = f"(torch {torch.__version__}): " + (str(exc).splitlines()[0] if str(exc)
                                                   else type(exc).__name__)
        if name == "float32":  # fp32 runs everywhere: the device itself is the problem
            error = PrecisionUnsupportedError(
                f"device {device!r} is not available to this torch build {why}",
                fix="pass --device cpu, or cuda / cuda:N on a machine with a CUDA GPU and the "
                    "CUDA build of torch")
        else:
            error = PrecisionUnsupportedError(
                f"{name} is not supported on device {device!r} by this torch build {why}",
                fix="pick a regime this hardware runs (fp32 always works; bf16 needs a CPU or "
                    "GPU with bf16 kernels, fp16 a GPU or a recent CPU build), or pass another "
                    "--device (--device cuda needs a CUDA GPU and the CUDA build of torch)")
    _CHECKED[key] = error
    if error is not None:
        raise error


def _probe(torch, dtype, device) -> None:
    """The tiny op set every regime needs; any failure raises."""
    a = torch.ones(4, 8, dtype=dtype, device=device)
    b = torch.ones(8, 3, dtype=dtype, device=device)
    out = a @ b
    out = torch.nn.functional.layer_norm(out, (3,))
    out = torch.softmax(out, dim=-1) + torch.sigmoid(out)
    torch.nn.functional.normalize(out, dim=-1).sum().item()
