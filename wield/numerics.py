"""Reproducible floating-point arithmetic for Wield's small networks, and a record of the arithmetic a run used.

Why it exists: the learners' networks train in float32 on the CPU, and two libraries pick their code path by
the processor they run on. Intel MKL (linked into torch) chooses its matrix-multiply kernels by instruction
set *and* CPU vendor, and torch's own kernels (ATen) are compiled for several vector widths (default, AVX2,
AVX-512) and chosen at the first call. Each path rounds differently in the last bit; DQN's greedy argmax and
its prioritised replay (sampling by the TD errors) turn a last-bit difference into a different decision
within a few hundred updates, so the same seeds gave different index sets on different machines. Measured
on one AMD EPYC machine (AVX-512) with the quickstart: the default, ``MKL_CBWR=AVX2``, ``MKL_CBWR=COMPATIBLE``
and ``ATEN_CPU_CAPABILITY=default`` each gave a different training curve (-7.242, -7.257, -7.346, -7.243;
``benchmarks/numerics_divergence.py`` finds the first update where the parameters differ).

Two modes (``WIELD_NUMERICS``):

- ``reproducible`` (the ``wield`` command's default): MKL's conditional numerical reproducibility in its
  ``COMPATIBLE,STRICT`` mode (one SSE2-level code path that Intel documents as giving the same results on
  Intel and compatible processors), torch's kernels at their ``default`` capability (no AVX2/AVX-512
  variants, no fused multiply-add), and one torch thread while training (``wield.workflows.threads``: with
  two, MKL split a 64 x 128 by 128 x 133 product differently, and the slot network's weights changed). The variables must be set before torch runs
  its first kernel, so the ``wield`` command sets them first thing; Python users call
  ``use_reproducible_numerics()`` before importing torch, or set the two variables themselves.
- ``native``: whatever the machine picks (faster matrix products on big networks; Wield's are small).

What it cannot promise: identical figures across torch or MKL versions (``versions.json`` records both),
nor across processors for which Intel's compatible path differs (none known). ``numerics_state()`` reports
what is actually in force, which is what a run records, so ``wield reproduce`` can say whether the
recorded run and the rerun used the same arithmetic.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

from wield.errors import ConfigError

VARIABLE = "WIELD_NUMERICS"
MODES = ("reproducible", "native")
DEFAULT_MODE = "reproducible"
# The settings of the reproducible mode: MKL's compatible code path in strict mode, torch's default kernels.
REPRODUCIBLE_SETTINGS = {"MKL_CBWR": "COMPATIBLE,STRICT", "ATEN_CPU_CAPABILITY": "default"}
# MKL's names of the branches mkl_cbwr_get reports (mkl_cbwr.h), for the record.
_MKL_BRANCHES = {1: "auto (off)", 2: "auto", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1", 8: "SSE4_2",
                 9: "AVX", 10: "AVX2", 12: "AVX512"}
_MKL_STRICT = 0x10000


def requested_mode(default: str = DEFAULT_MODE) -> str:
    """The mode ``WIELD_NUMERICS`` asks for (``default`` when it is unset); a bad value is a usage error."""
    text = os.environ.get(VARIABLE, "").strip().lower() or default
    if text not in MODES:
        raise ConfigError(VARIABLE, os.environ.get(VARIABLE, ""), MODES)
    return text


def use_reproducible_numerics() -> dict[str, str]:
    """Set the reproducible mode's variables (overriding the user's ``MKL_CBWR``/``ATEN_CPU_CAPABILITY``) and
    return the values they replaced. Call it before torch is imported: afterwards it may be too late, which
    ``numerics_state()`` then reports (``reproducible`` false)."""
    replaced = {}
    for name, value in REPRODUCIBLE_SETTINGS.items():
        previous = os.environ.get(name)
        if previous is not None and previous != value:
            replaced[name] = previous
        os.environ[name] = value
    os.environ[VARIABLE] = "reproducible"
    return replaced


def apply_numerics_mode(mode: str | None = None) -> str:
    """Put ``mode`` (default: what ``WIELD_NUMERICS`` asks for) in force for this process and the worker
    processes it starts; returns the mode. ``native`` leaves the machine's choice alone."""
    chosen = requested_mode() if mode is None else mode
    if chosen not in MODES:
        raise ConfigError(VARIABLE, chosen, MODES)
    if chosen == "reproducible":
        use_reproducible_numerics()
    else:
        os.environ[VARIABLE] = "native"
    return chosen


def _mkl_branch() -> str:
    """MKL's code path as mkl_cbwr_get reports it (torch links MKL statically; its service functions are
    exported by libtorch_cpu), or 'unknown'."""
    try:
        import torch

        library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        get = library.mkl_serv_cbwr_get
    except (ImportError, OSError, AttributeError):
        return "unknown"
    get.argtypes, get.restype = [ctypes.c_int], ctypes.c_int
    value = int(get(-1))  # MKL_CBWR_ALL: the branch with the strict flag
    name = _MKL_BRANCHES.get(value & ~_MKL_STRICT, f"code {value & ~_MKL_STRICT}")
    return f"{name},STRICT" if value & _MKL_STRICT else name


def cpu_description() -> dict[str, Any]:
    """The processor: model name, vendor and the vector instruction sets that decide the code paths."""
    model, vendor, flags = platform.processor() or "unknown", "unknown", set()
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name":
            model = value.strip()
        elif key == "vendor_id":
            vendor = value.strip()
        elif key == "flags":
            flags = set(value.split())
            break
    wanted = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
              "amx_tile")
    return {"model": model, "vendor": vendor, "machine": platform.machine(),
            "vector_flags": [flag for flag in wanted if flag in flags]}


def numerics_state() -> dict[str, Any]:
    """What arithmetic this process computes with: the mode asked for, torch's kernel capability and MKL's
    code path actually in force, whether they are the reproducible mode's, torch's version and the processor."""
    state: dict[str, Any] = {"mode": requested_mode(default="native"), "cpu": cpu_description()}
    try:
        import torch
    except ImportError:
        return {**state, "reproducible": False}
    capability = str(torch.backends.cpu.get_cpu_capability())
    mkl = _mkl_branch() if torch.backends.mkl.is_available() else "no MKL"
    state.update(reproducible=capability == "DEFAULT" and mkl in ("COMPATIBLE,STRICT", "no MKL"),
                 torch_capability=capability, mkl_branch=mkl, torch=str(torch.__version__),
                 threads=torch.get_num_threads())
    return state


def arithmetic_differences(recorded: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """How two numerics states differ in ways that can change what a trained network decides (empty: the
    same arithmetic). Two reproducible states differ only by torch's version; otherwise the code paths and
    the processor count too. A record without numerics (an older Wield's) differs by 'not recorded'."""
    if not recorded:
        return ["the record does not say which arithmetic it used (written before Wield recorded it)"]
    keys = ["torch"]
    if not (recorded.get("reproducible") and current.get("reproducible")):
        keys += ["torch_capability", "mkl_branch"]
    differences = [f"{key} {recorded.get(key)!r} then, {current.get(key)!r} now"
                   for key in keys if recorded.get(key) != current.get(key)]
    if not (recorded.get("reproducible") and current.get("reproducible")):
        was, now = recorded.get("cpu") or {}, current.get("cpu") or {}
        differences += [f"processor {key} {was.get(key)!r} then, {now.get(key)!r} now"
                        for key in ("model", "vector_flags") if was.get(key) != now.get(key)]
    return differences
