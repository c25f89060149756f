"""Execution-time profiles: how long one batch of a model takes on one GPU, for batch sizes 1..16.

The simulator needs ``ms(model, batch)`` for the supported batch sizes 1, 2, 4, 8 and 16. The shipped file
``profiles/resnet50.json`` holds three profiles of ResNet-50: two with 2.7 ms at batch 1 (the figure of the
Clockwork-style system this case study models) and one measured by Clockwork's authors:

- ``cpu-measured``: the forward pass of the plain-PyTorch ResNet-50 of ``resnet50.py`` timed on this
  project's CPU for every batch size 1..16 (fastest of several runs, random weights, ``torch.inference_mode``),
  then multiplied by one factor so that batch 1 takes 2.7 ms. The raw times, the machine, the thread count
  and the torch version are stored beside it. A CPU gains almost nothing from batching (the measured time
  per image does not fall with the batch size), so this profile has no batching trade-off.
- ``accelerator`` (the default): the linear batch-latency model used by inference-serving papers,
  ``ms(b) = ms(1) * (fixed_share + (1 - fixed_share) * b)``: a fixed part per batch (kernel launches, weight
  reads) plus a part per image. ``fixed_share = 0.8`` is an assumption, not a measurement: it gives
  batch 16 = 4 x batch 1 (0.68 ms per image instead of 2.7), the order of a CNN on a data-centre GPU, so
  that batching pays off as it does on the GPUs such systems run on. It was chosen so that the Clockwork
  heuristic serves the case study's heaviest workloads (2,400 r/s on 6 GPUs at SLO >= 24 ms; the
  Azure-like 9,500 r/s on 12 GPUs): a target of this project, not a figure of the modelled study (which
  simulated with ResNet-50 statistics measured by Clockwork, its sections 4.3 and 5.1.1, and reports
  Clockwork at 100% only at 48 and 96 ms SLOs, and at 6 ms for 600 and 1,200 r/s: its section 5.3.2).
  Nothing here measured it.

- ``clockwork-resnet50`` (published, measured on a GPU): the ResNet-50 (``resnet50_v2``) of Clockwork's model
  zoo for Volta GPUs (``clockwork-modelzoo-volta``), timed by Clockwork's ``check_model`` tool: 2.73, 4.05,
  5.88, 9.93 and 17.33 ms at batch 1, 2, 4, 8 and 16. These are the figures of the example output in
  Clockwork's public repository (gitlab.mpi-sws.org/cld/ml/clockwork, mirrored on GitHub as
  MachineLearningSystem/clockwork: ``docs/firstrun.md``, section "Test a model"; the system is Gujarati et
  al., "Serving DNNs like Clockwork", OSDI 2020); the GPU is not named beyond the zoo's Volta build. Batch
  sizes between those are interpolated linearly (the simulator runs only 1, 2, 4, 8 and 16). Its
  least-squares line is 2.00 ms per batch plus 0.965 ms per image (a fixed share of 0.67): batching gains
  less than the ASSUMED ``accelerator`` curve says (batch 16: 17.33 ms measured, 10.8 ms assumed). The same
  file shows the controller's own estimates for that model (b1 3.3, b2 5.3, b4 7.5, b8 12.4 ms), which
  include its overheads; they are not shipped.

``python -m case_studies.scheduling.profile`` re-measures the CPU profile (``--device cuda`` measures on a
GPU instead, with CUDA events, for users who have one) and rewrites the JSON atomically with how it was made.

Model families (``profiles/families.json``, ``load_family_profile``): ASSUMED curves, not measurements, for
the model kinds of the Azure-like workloads. Each is the ``accelerator`` curve of ResNet-50 split into its
two parts and scaled per family: the fixed part per batch (2.16 ms for ResNet-50) by the family's number of
weighted layers (convolutions and matrix multiplications run one after another, which is what costs
kernel launches and weight reads at small batches) relative to ResNet-50's 54, and the part per image
(0.54 ms for ResNet-50) by its multiply-accumulates per input relative to ResNet-50's 4.09 G:
``ms(b) = 2.16 * layers / 54 + 0.54 * gmacs / 4.09 * b``. The multiply-accumulates are the figures the
torchvision model documentation lists (BERT-base: computed for 128 tokens); the layer counts are counted
from the architectures. ``python -m case_studies.scheduling.profile --families`` rewrites the file from
``MODEL_FAMILIES``.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from wield.errors import ConfigError, DataError
from wield.io import atomic_write_json, read_json

SUPPORTED_BATCHES: tuple[int, ...] = (1, 2, 4, 8, 16)
MAX_BATCH = 16
RESNET50_BATCH1_MS = 2.7
ACCELERATOR_FIXED_SHARE = 0.8
DEFAULT_PROFILE = "accelerator"
CLOCKWORK_PROFILE = "clockwork-resnet50"
# ms per batch of Clockwork's resnet50_v2 on a Volta GPU, as its check_model tool printed them (docs/firstrun.md)
CLOCKWORK_RESNET50_MS: dict[int, float] = {1: 2.73, 2: 4.05, 4: 5.88, 8: 9.93, 16: 17.33}
CLOCKWORK_SOURCE = ("published measurement: Clockwork's check_model on resnet50_v2 of clockwork-modelzoo-volta "
                    "(a Volta GPU), execution latency b1 2.73, b2 4.05, b4 5.88, b8 9.93, b16 17.33 ms, the example "
                    "output in Clockwork's public repository, docs/firstrun.md, 'Test a model' (Gujarati et al., "
                    "Serving DNNs like Clockwork, OSDI 2020); other batch sizes interpolated linearly (never run by "
                    "the simulator)")
PROFILE_FILE = "resnet50.json"
FAMILY_FILE = "families.json"
RESNET50_LAYERS = 54  # 1 stem convolution + 16 blocks x 3 + 4 projection shortcuts + the classifier
RESNET50_GMACS = 4.09  # multiply-accumulates per 224 x 224 image, billions (torchvision's documented figure)


@dataclass(frozen=True)
class BatchProfile:
    """Milliseconds per batch of one model for batch sizes 1..16 (``batch_ms[b - 1]``), and its provenance."""

    name: str
    batch_ms: tuple[float, ...]
    source: str = ""
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if len(self.batch_ms) != MAX_BATCH:
            raise ConfigError("profile.batch_ms", f"{len(self.batch_ms)} values",
                              reason=f"need {MAX_BATCH} (batch 1..16)")
        values = np.asarray(self.batch_ms, dtype=float)
        if not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ConfigError("profile.batch_ms", list(self.batch_ms), reason="every time must be a positive number")

    def ms(self, batch: int) -> float:
        """Milliseconds for one batch of ``batch`` requests (1..16)."""
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or not 1 <= batch <= MAX_BATCH:
            raise ConfigError("batch", batch, reason="must be an integer 1..16")
        return float(self.batch_ms[int(batch) - 1])

    def supported_ms(self) -> np.ndarray:
        """Milliseconds of the supported batch sizes 1, 2, 4, 8, 16, in that order."""
        return np.array([self.ms(b) for b in SUPPORTED_BATCHES], dtype=np.float64)

    def scaled(self, factor: float, name: str | None = None) -> "BatchProfile":
        """The same curve multiplied by ``factor`` (a slower or faster model of the same shape)."""
        if not factor > 0:
            raise ConfigError("profile scale", factor, reason="must be > 0")
        return BatchProfile(name or f"{self.name}x{factor:g}", tuple(float(v) * factor for v in self.batch_ms),
                            f"{self.source} (scaled by {factor:g})", dict(self.details))


def linear_profile(batch1_ms: float = RESNET50_BATCH1_MS, fixed_share: float = ACCELERATOR_FIXED_SHARE,
                   name: str = DEFAULT_PROFILE) -> BatchProfile:
    """``ms(b) = batch1_ms * (fixed_share + (1 - fixed_share) * b)``: fixed cost per batch plus cost per image."""
    if not 0.0 <= fixed_share < 1.0:
        raise ConfigError("fixed_share", fixed_share, reason="must be in [0, 1)")
    if not batch1_ms > 0:
        raise ConfigError("batch1_ms", batch1_ms, reason="must be > 0")
    values = tuple(round(batch1_ms * (fixed_share + (1.0 - fixed_share) * b), 6) for b in range(1, MAX_BATCH + 1))
    source = (f"linear batch-latency model ms(b) = {batch1_ms} * ({fixed_share} + {1 - fixed_share:.2g} * b); "
              "fixed share assumed, not measured")
    return BatchProfile(name, values, source, {"method": "linear-model", "batch1_ms": batch1_ms,
                                               "fixed_share": fixed_share})


def clockwork_profile() -> BatchProfile:
    """ResNet-50's curve as Clockwork's authors measured it on a Volta GPU (``CLOCKWORK_SOURCE``)."""
    measured = sorted(CLOCKWORK_RESNET50_MS)
    values = np.interp(np.arange(1, MAX_BATCH + 1), measured, [CLOCKWORK_RESNET50_MS[b] for b in measured])
    return BatchProfile(CLOCKWORK_PROFILE, tuple(round(float(v), 6) for v in values), CLOCKWORK_SOURCE,
                        {"method": "published", "model": "resnet50_v2", "gpu": "Volta (clockwork-modelzoo-volta)",
                         "measured_batches": measured,
                         "reference": "gitlab.mpi-sws.org/cld/ml/clockwork (GitHub mirror: "
                                      "MachineLearningSystem/clockwork), docs/firstrun.md"})


def linear_fit(profile: BatchProfile) -> tuple[float, float]:
    """``(fixed_ms, per_image_ms)``: the least-squares line ``fixed + per_image * b`` through the supported batch
    sizes of ``profile`` (how a measured curve's batching gain is summarised and scaled to model families)."""
    batches = np.asarray(SUPPORTED_BATCHES, dtype=float)
    per_image, fixed = np.polyfit(batches, profile.supported_ms(), 1)
    return float(fixed), float(per_image)


@dataclass(frozen=True)
class ModelFamily:
    """A model family of the Azure-like workloads and the two figures its ASSUMED batch curve scales by."""

    name: str
    architecture: str  # "CNN" or "transformer"
    layers: int  # weighted layers (convolutions, matrix multiplications) at inference
    gmacs: float  # multiply-accumulates per input, billions
    input: str
    basis: str  # where the two figures come from


MODEL_FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily("resnet18", "CNN", 21, 1.81, "224x224 image", "1 + 8 blocks x 2 + 3 shortcuts + fc; torchvision GMACs"),
    ModelFamily("resnet34", "CNN", 37, 3.66, "224x224 image", "1 + 16 blocks x 2 + 3 shortcuts + fc; torchvision GMACs"),
    ModelFamily("resnet50", "CNN", RESNET50_LAYERS, RESNET50_GMACS, "224x224 image",
                "1 + 16 blocks x 3 + 4 shortcuts + fc; torchvision GMACs (the reference: 2.7 ms at batch 1)"),
    ModelFamily("resnet101", "CNN", 105, 7.8, "224x224 image", "1 + 33 blocks x 3 + 4 shortcuts + fc; torchvision GMACs"),
    ModelFamily("resnet152", "CNN", 156, 11.51, "224x224 image",
                "1 + 50 blocks x 3 + 4 shortcuts + fc; torchvision GMACs"),
    ModelFamily("densenet121", "CNN", 121, 2.83, "224x224 image",
                "1 + 58 dense layers x 2 + 3 transitions + fc; torchvision GMACs"),
    ModelFamily("googlenet", "CNN", 58, 1.5, "224x224 image", "3 stem + 9 inception modules x 6 + fc; torchvision GMACs"),
    ModelFamily("inception_v3", "CNN", 95, 5.71, "299x299 image",
                "5 stem + 3x7 + 4 + 4x10 + 6 + 2x9 module convolutions + fc; torchvision GMACs"),
    ModelFamily("mobilenet_v2", "CNN", 53, 0.3, "224x224 image",
                "1 + 2 + 16 inverted residuals x 3 + 1 + fc; torchvision GMACs"),
    ModelFamily("vgg16", "CNN", 16, 15.47, "224x224 image", "13 convolutions + 3 fc; torchvision GMACs"),
    ModelFamily("bert_base", "transformer", 97, 11.17, "128 tokens",
                "12 encoder layers x (Q, K, V, output, 2 feed-forward, 2 attention products) + pooler; GMACs "
                "computed: 12 x (4 x 128 x 768^2 + 2 x 128 x 768 x 3072 + 2 x 128^2 x 768)"),
)
"""The families, in the order the Azure-like workloads deal them to model kinds (kind k: family k mod 11)."""


def family_curve(family: ModelFamily, fixed_share: float = ACCELERATOR_FIXED_SHARE,
                 reference: tuple[float, float] | None = None) -> BatchProfile:
    """The ASSUMED curve of ``family``: ResNet-50's accelerator curve, its fixed part scaled by weighted layers and
    its per-image part by multiply-accumulates (see the module docstring). ``fixed_share``: the ResNet-50
    curve's fixed share (0.8 shipped; another value gives the sensitivity analyses' curves). ``reference``:
    ResNet-50's ``(fixed_ms, per_image_ms)`` instead (e.g. ``linear_fit(clockwork_profile())``, a measured
    curve's line); the family's curve is then still a scaling, ASSUMED."""
    if not 0.0 <= fixed_share < 1.0:
        raise ConfigError("fixed_share", fixed_share, reason="must be in [0, 1)")
    fixed_ms, image_ms = reference or (fixed_share * RESNET50_BATCH1_MS, (1.0 - fixed_share) * RESNET50_BATCH1_MS)
    fixed = fixed_ms * family.layers / RESNET50_LAYERS
    per_image = image_ms * family.gmacs / RESNET50_GMACS
    values = tuple(round(fixed + per_image * b, 6) for b in range(1, MAX_BATCH + 1))
    basis = "accelerator curve" if reference is None else "least-squares line of a given curve"
    source = (f"ASSUMED, not measured: ResNet-50's {basis} scaled, fixed part {fixed_ms:.3g} ms x "
              f"{family.layers}/{RESNET50_LAYERS} layers, per image {image_ms:.3g} ms x {family.gmacs:g}/"
              f"{RESNET50_GMACS:g} GMACs")
    return BatchProfile(family.name, values, source, {
        "method": "assumed-scaling", "architecture": family.architecture, "layers": family.layers,
        "gmacs": family.gmacs, "input": family.input, "basis": family.basis,
        "fixed_ms": round(fixed, 6), "per_image_ms": round(per_image, 6)})


def family_by_name(name: str) -> ModelFamily:
    """The ``MODEL_FAMILIES`` entry called ``name``."""
    for family in MODEL_FAMILIES:
        if family.name == name:
            return family
    raise ConfigError("model family", name, [f.name for f in MODEL_FAMILIES])


def families_document() -> dict[str, Any]:
    """The JSON document of ``profiles/families.json``: every family's curve with its provenance."""
    return {"batch_sizes": list(range(1, MAX_BATCH + 1)), "status": "ASSUMED (scaled from ResNet-50, not measured)",
            "rule": "ms(b) = 2.16 * layers / 54 + 0.54 * gmacs / 4.09 * b",
            "regenerate": "python -m case_studies.scheduling.profile --families",
            "order": [f.name for f in MODEL_FAMILIES],
            "profiles": {p.name: {"ms": list(p.batch_ms), "source": p.source, **p.details}
                         for p in (family_curve(f) for f in MODEL_FAMILIES)}}


@lru_cache(maxsize=None)
def _family_document() -> dict[str, Any]:
    return _load_document(resources.files("case_studies.scheduling") / "profiles" / FAMILY_FILE)


def family_names() -> tuple[str, ...]:
    """The shipped model families, in the order they are dealt to model kinds."""
    return tuple(_family_document()["order"])


@lru_cache(maxsize=None)
def load_family_profile(name: str) -> BatchProfile:
    """A model family's ASSUMED curve from the shipped ``profiles/families.json`` (one shared object per name)."""
    return load_profile(name, document=_family_document(), source=FAMILY_FILE, field="model_profiles")


@lru_cache(maxsize=None)
def timed_family_profile(name: str, timing: str) -> BatchProfile:
    """Model family ``name``'s ASSUMED curve re-scaled from ResNet-50 profile ``timing``'s least-squares line (the
    shipped curve for the default profile)."""
    if timing in ("", DEFAULT_PROFILE):
        return load_family_profile(name)
    return family_curve(family_by_name(name), reference=linear_fit(load_profile(timing)))


def workload_curves(model_profiles: tuple[str, ...], timing: str, n_models: int) -> list[BatchProfile] | None:
    """Every model's curve for a workload naming ``model_profiles`` (families, or none) under ResNet-50 profile
    ``timing`` ("" or the default: the shipped curves); None when it names neither (the simulator's default)."""
    if model_profiles:
        return [timed_family_profile(name, timing) for name in model_profiles]
    if timing in ("", DEFAULT_PROFILE):
        return None
    return [_named_profile(timing)] * n_models


@lru_cache(maxsize=None)
def _named_profile(name: str) -> BatchProfile:
    return load_profile(name)


def measure_batch_latency(device: str = "cpu", repetitions: int = 5, threads: int = 1,
                          max_batch: int = MAX_BATCH) -> list[float]:
    """Milliseconds of one ResNet-50 forward pass for batch sizes 1..max_batch (224 x 224 images): the
    fastest of ``repetitions`` timed runs after one warm-up. On the CPU the time is the process's CPU time
    (on ``threads`` threads), so other processes on a shared machine disturb it little; on CUDA, events."""
    import torch

    from case_studies.scheduling.resnet50 import ResNet50

    if device not in ("cpu", "cuda"):
        raise ConfigError("device", device, ("cpu", "cuda"))
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device", device, reason="no CUDA device is available")
    torch.manual_seed(0)
    if device == "cpu":
        torch.set_num_threads(threads)
    model = ResNet50().eval().to(device)
    fastest = []
    with torch.inference_mode():
        for batch in range(1, max_batch + 1):
            images = torch.randn(batch, 3, 224, 224, device=device)
            model(images)  # warm-up
            samples = []
            for _ in range(repetitions):
                if device == "cuda":
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    model(images)
                    end.record()
                    torch.cuda.synchronize()
                    samples.append(start.elapsed_time(end))
                else:  # CPU time of this process: what the forward pass costs, whatever else the machine runs
                    begin = time.process_time()
                    model(images)
                    samples.append((time.process_time() - begin) * 1000.0)
            fastest.append(float(min(samples)))
    return fastest


def measured_profile(raw_ms: list[float], device: str, details: dict[str, Any]) -> BatchProfile:
    """A measured curve scaled so that batch 1 takes 2.7 ms."""
    factor = RESNET50_BATCH1_MS / raw_ms[0]
    values = tuple(round(v * factor, 6) for v in raw_ms)
    source = (f"ResNet-50 (plain PyTorch, random weights) timed on {device} for batch 1..16, "
              f"scaled by {factor:.6g} so batch 1 = {RESNET50_BATCH1_MS} ms")
    return BatchProfile(f"{device}-measured", values, source, {**details, "raw_ms": raw_ms, "scale": factor})


def profiles_document(measured: BatchProfile) -> dict[str, Any]:
    """The JSON document: the default profile's name and every profile with its provenance."""
    accelerator = linear_profile()
    return {"model": "resnet50", "batch_sizes": list(range(1, MAX_BATCH + 1)), "default": DEFAULT_PROFILE,
            "regenerate": "python -m case_studies.scheduling.profile",
            "profiles": {p.name: {"ms": list(p.batch_ms), "source": p.source, **p.details}
                         for p in (accelerator, measured, clockwork_profile())}}


def load_profile(name: str = DEFAULT_PROFILE, path: str | Path | None = None, *,
                 document: dict[str, Any] | None = None, source: str | None = None,
                 field: str = "profile") -> BatchProfile:
    """A profile by name from the shipped ``profiles/resnet50.json`` (or from ``path``, or an already loaded
    ``document``); an unknown name raises ``ConfigError`` naming ``field``."""
    if document is None:
        if path is None:
            document = _load_document(resources.files("case_studies.scheduling") / "profiles" / PROFILE_FILE)
        else:
            document = _load_document(Path(path))
    profiles = document.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise DataError(f"{source or path or PROFILE_FILE}: expected an object 'profiles' with at least one profile")
    if name not in profiles:
        raise ConfigError(field, name, sorted(profiles))
    entry = profiles[name]
    details = {k: v for k, v in entry.items() if k not in ("ms", "source")}
    return BatchProfile(name, tuple(float(v) for v in entry["ms"]), str(entry.get("source", "")), details)


@lru_cache(maxsize=None)
def profile_names() -> tuple[str, ...]:
    """The ResNet-50 profiles shipped in ``profiles/resnet50.json``, the default first."""
    names = sorted(_load_document(resources.files("case_studies.scheduling") / "profiles" / PROFILE_FILE)["profiles"])
    return (DEFAULT_PROFILE, *(n for n in names if n != DEFAULT_PROFILE))


def _load_document(path) -> dict[str, Any]:
    try:
        document = read_json(path)
    except ValueError as exc:
        raise DataError(f"{path}: invalid JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise DataError(f"{path}: expected a JSON object")
    return document


def main(argv: list[str] | None = None) -> None:
    """Re-measure ResNet-50 and rewrite the profile JSON (about three minutes on one CPU thread); with
    ``--families``, rewrite the model families' ASSUMED curves instead (nothing is measured)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (torch.set_num_threads)")
    parser.add_argument("--out", type=Path, default=None, help=f"default: profiles/{PROFILE_FILE} "
                        f"(profiles/{FAMILY_FILE} with --families)")
    parser.add_argument("--families", action="store_true", help="rewrite the model families' ASSUMED curves")
    args = parser.parse_args(argv)
    if args.families:
        out = args.out or Path(__file__).with_name("profiles") / FAMILY_FILE
        document = families_document()
        atomic_write_json(out, document)
        for name, entry in document["profiles"].items():
            curve = [entry["ms"][b - 1] for b in SUPPORTED_BATCHES]
            print(f"{name:13s} " + "  ".join(f"b{b}={v:7.3f}" for b, v in zip(SUPPORTED_BATCHES, curve)))
        print(f"wrote {out}")
        return
    import torch

    args.out = args.out or Path(__file__).with_name("profiles") / PROFILE_FILE
    raw = measure_batch_latency(args.device, args.repetitions, args.threads)
    details = {"method": "measured", "device": args.device, "repetitions": args.repetitions,
               "threads": args.threads if args.device == "cpu" else None, "torch": torch.__version__,
               "machine": f"{platform.machine()} {platform.processor() or platform.platform()}",
               "date": datetime.date.today().isoformat(), "statistic": "fastest of repetitions after one warm-up"
               + ("; CPU time of the process (time.process_time)" if args.device == "cpu" else "; CUDA events")}
    document = profiles_document(measured_profile(raw, args.device, details))
    atomic_write_json(args.out, document)
    for b, (m, a) in enumerate(zip(document["profiles"][f"{args.device}-measured"]["ms"],
                                   document["profiles"][DEFAULT_PROFILE]["ms"]), start=1):
        print(f"batch {b:2d}: measured {raw[b - 1]:9.2f} ms -> {m:7.3f} ms   accelerator model {a:7.3f} ms")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
