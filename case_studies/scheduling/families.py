"""Named workload families of the scheduling case study, and a registry that rebuilds them from their record.

- ``low_slo_workload``: the "low SLO" experiment. ``n_models`` instances of ResNet-50 (12 or 48), a total of
  600, 1,200 or 2,400 requests/s split evenly, an open-loop Poisson stream per model, one SLO for every model
  (3, 6, 12, 24, 48 or 96 ms), served by 6 GPUs.
- ``azure_like_workload``: SYNTHETIC. No Azure Functions trace can be downloaded here, so this generator
  imitates the shape of the Azure-trace experiment: 61 model kinds x 66 copies = 4,026 model instances,
  about 9,500 requests/s in total, SLO 100 ms, 12 GPUs. Instance popularity is log-normal
  (``popularity_sigma`` 3: the most popular 18.6 % of instances receive about 98 % of the requests, the
  most popular one about 1,750 r/s, and 40 % of them less than one request a minute: the heavy tail of
  serverless function popularity), and each instance's rate changes every second by a log-normal AR(1)
  factor (``burst_sigma``, ``burst_correlation``); the per-second counts are Poisson draws and each instance is
  replayed as a trace (``trace-replay`` streams, 1 s periods). It is not the real trace. Model kinds have
  their own execution times (``profiles="families"``, the default): the kinds are dealt to model families in
  the proportions of ``AZURE_FAMILY_MIX`` (of 61 kinds: 12 ResNet-18, 8 ResNet-34, 14 ResNet-50, 4
  ResNet-101, 3 DenseNet-121, 8 GoogLeNet, 3 Inception-v3, 8 MobileNet-v2, 1 BERT-base; ASSUMED curves
  scaled from ResNet-50, see ``profile``). The mix is an assumption too: light families outnumber heavy ones
  so that the average kind costs about what ResNet-50 costs (2.6 ms at batch 1, 0.69 ms per request at
  batch 8, against 2.7 and 0.81), which keeps 9,500 r/s servable on 12 GPUs as in the modelled study.
  ``profiles="resnet50"`` runs every kind with the ResNet-50 profile, as before.
- ``azure_trace_workload`` (in ``azure_trace``): the same shape built from a real trace file, with the same
  model kinds and families.
- ``multi_slo_workload``: models with different SLOs (the multi-SLO experiments of the modelled study's
  chapter 6, at a load where the order of service matters): ``models_per_slo`` ResNet-50 instances per SLO
  class (default classes 10, 25 and 100 ms; model ``m`` has ``slos_ms[m mod len(slos_ms)]``), ``total_rate``
  split evenly (default 1,200 r/s), Poisson per model, 2 GPUs. The study's own example (two models at
  150 r/s on one GPU, one answered within 100 ms, the other between 100 ms and 1,000 ms) has a lower bound
  on the response time, which a deadline-only system does not model; with deadlines alone that example is
  easy for every scheduler, so the family raises the load instead.

Every family records ``generator`` and ``params`` on the ``Workload``; ``rebuild.build_workload(generator,
params, seed)`` rebuilds it (same seed, same params: the same workload, checked by ``fingerprint()``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from case_studies.scheduling.workload import Stream, Workload
from wield.errors import ConfigError
from wield.seeding import make_rng

LOW_SLO_RATES = (600, 1200, 2400)
LOW_SLO_MODEL_COUNTS = (12, 48)
LOW_SLO_SLOS_MS = (3.0, 6.0, 12.0, 24.0, 48.0, 96.0)
LOW_SLO_GPUS = 6


def clockwork_reported_at_100(rate: float, slo_ms: float) -> bool:
    """Whether the modelled study reports Clockwork meeting 100% of the SLOs on this cell of its low-SLO grid
    (its section 5.3.2, fig. 5.7: every workload at 48 and 96 ms; 600 and 1,200 r/s at SLOs as small as 6 ms)."""
    return slo_ms >= 48.0 or (rate <= 1200.0 and slo_ms >= 6.0)

AZURE_KINDS, AZURE_COPIES, AZURE_RATE, AZURE_SLO_MS, AZURE_GPUS = 61, 66, 9500.0, 100.0, 12
MULTI_SLO_CLASSES_MS, MULTI_SLO_MODELS_PER_SLO, MULTI_SLO_RATE, MULTI_SLO_GPUS = (10.0, 25.0, 100.0), 4, 1200.0, 2
LOW_SLO = "low-slo"
AZURE_LIKE = "azure-like-synthetic"
MULTI_SLO = "multi-slo"
PROFILE_CHOICES = ("families", "resnet50")
AZURE_FAMILY_MIX: dict[str, int] = {"resnet18": 12, "resnet34": 8, "resnet50": 14, "resnet101": 4, "densenet121": 3,
                                    "googlenet": 8, "inception_v3": 3, "mobilenet_v2": 8, "bert_base": 1}
"""Model kinds per family out of 61 (ASSUMED; see the module docstring); other kind counts keep the shares."""


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not value > 0:
        raise ConfigError(name, value, reason="must be a number > 0")
    return float(value)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(name, value, reason="must be an integer >= 1")
    return int(value)


def low_slo_workload(total_rate: float = 2400.0, n_models: int = 48, slo_ms: float = 24.0,
                     duration_s: float = 10.0, seed: int = 0) -> Workload:
    """``n_models`` ResNet-50 instances, Poisson arrivals at ``total_rate / n_models`` r/s each, one SLO."""
    total_rate, slo_ms, duration_s = _positive("total_rate", total_rate), _positive("slo_ms", slo_ms), \
        _positive("duration_s", duration_s)
    n_models = _count("n_models", n_models)
    params = {"total_rate": total_rate, "n_models": n_models, "slo_ms": slo_ms, "duration_s": duration_s}
    streams = [Stream(m, "poisson", rate=total_rate / n_models) for m in range(n_models)]
    name = f"low-slo-{total_rate:g}rps-{n_models}m-{slo_ms:g}ms"
    return Workload(name, (slo_ms,) * n_models, streams, duration_s * 1000.0, int(seed), LOW_SLO, params)


def azure_like_rates(n_instances: int, seconds: int, total_rate: float, popularity_sigma: float,
                     burst_sigma: float, burst_correlation: float, rng: np.random.Generator) -> np.ndarray:
    """Expected requests per second, ``(n_instances, seconds)``: popularity x burst factor, scaled to
    ``total_rate`` on average.

    Popularity: the log-normal quantiles ``exp(popularity_sigma * z_k)`` at ``z_k = Phi^-1((k + 0.5) / n)``,
    dealt to the instances in a random order, so every seed has the same popularity distribution. Burst
    factor: log-normal AR(1) per instance and second (mean 1, stationary log-sd ``burst_sigma``).
    """
    from scipy import special  # here: the command line's option lists import this module, not scipy

    quantiles = special.ndtri((np.arange(n_instances) + 0.5) / n_instances)
    popularity = np.exp(popularity_sigma * quantiles)[rng.permutation(n_instances)]
    log_factor = np.empty((n_instances, seconds))
    log_factor[:, 0] = burst_sigma * rng.standard_normal(n_instances)
    innovation = burst_sigma * np.sqrt(1.0 - burst_correlation ** 2)
    for t in range(1, seconds):
        log_factor[:, t] = burst_correlation * log_factor[:, t - 1] + innovation * rng.standard_normal(n_instances)
    rates = popularity[:, None] * np.exp(log_factor - burst_sigma ** 2 / 2.0)
    return rates * (total_rate * seconds / rates.sum())


def kind_families(kinds: int) -> tuple[str, ...]:
    """The model family of each kind: kind ``k`` takes the family whose cumulative share of
    ``AZURE_FAMILY_MIX`` holds ``(k + 0.5) / kinds`` (61 kinds: exactly the mix's counts, in its order)."""
    kinds = _count("kinds", kinds)
    names = list(AZURE_FAMILY_MIX)
    shares = np.cumsum(list(AZURE_FAMILY_MIX.values())) / sum(AZURE_FAMILY_MIX.values())
    return tuple(names[int(np.searchsorted(shares, (k + 0.5) / kinds))] for k in range(kinds))


def kind_profiles(kinds: int, copies: int, profiles: str = "families") -> tuple[str, ...]:
    """The model family of every instance ``k * copies + c`` (``kind_families``), or ``()`` for
    ``profiles="resnet50"`` (every instance runs the simulator's default ResNet-50 profile)."""
    if profiles not in PROFILE_CHOICES:
        raise ConfigError("profiles", profiles, PROFILE_CHOICES)
    if profiles == "resnet50":
        return ()
    return tuple(name for name in kind_families(kinds) for _ in range(_count("copies", copies)))


def azure_like_workload(duration_s: int = 60, seed: int = 0, total_rate: float = AZURE_RATE,
                        kinds: int = AZURE_KINDS, copies: int = AZURE_COPIES, slo_ms: float = AZURE_SLO_MS,
                        popularity_sigma: float = 3.0, burst_sigma: float = 0.5,
                        burst_correlation: float = 0.7, profiles: str = "families") -> Workload:
    """SYNTHETIC Azure-Functions-like workload (see the module docstring); instance ``k * copies + c`` is
    copy ``c`` of model kind ``k``, which runs model family ``k mod 11`` (``profiles="families"``)."""
    duration_s, kinds, copies = _count("duration_s", duration_s), _count("kinds", kinds), _count("copies", copies)
    model_profiles = kind_profiles(kinds, copies, profiles)
    total_rate, slo_ms = _positive("total_rate", total_rate), _positive("slo_ms", slo_ms)
    popularity_sigma = _positive("popularity_sigma", popularity_sigma)
    burst_sigma = _positive("burst_sigma", burst_sigma)
    if not 0.0 <= burst_correlation < 1.0:
        raise ConfigError("burst_correlation", burst_correlation, reason="must be in [0, 1)")
    n = kinds * copies
    rng = make_rng(int(seed), AZURE_LIKE)
    counts = rng.poisson(azure_like_rates(n, duration_s, total_rate, popularity_sigma, burst_sigma,
                                          burst_correlation, rng))
    streams = [Stream(m, "trace-replay", counts=tuple(int(c) for c in counts[m]), period_ms=1000.0)
               for m in range(n) if counts[m].any()]
    params = {"duration_s": duration_s, "total_rate": total_rate, "kinds": kinds, "copies": copies,
              "slo_ms": slo_ms, "popularity_sigma": popularity_sigma, "burst_sigma": burst_sigma,
              "burst_correlation": burst_correlation, "profiles": profiles, "synthetic": True}
    name = f"azure-like-SYNTHETIC-{n}m-{total_rate:g}rps"
    return Workload(name, (slo_ms,) * n, streams, duration_s * 1000.0, int(seed), AZURE_LIKE, params,
                    model_profiles)


def multi_slo_workload(total_rate: float = MULTI_SLO_RATE, slos_ms: Sequence[float] = MULTI_SLO_CLASSES_MS,
                       models_per_slo: int = MULTI_SLO_MODELS_PER_SLO, duration_s: float = 10.0,
                       seed: int = 0) -> Workload:
    """Models with different SLOs: model ``m`` has SLO ``slos_ms[m mod len(slos_ms)]``, ``models_per_slo``
    models per SLO class, ResNet-50 everywhere, Poisson arrivals at ``total_rate / n_models`` r/s each (serve
    it with ``MULTI_SLO_GPUS`` GPUs)."""
    total_rate, duration_s = _positive("total_rate", total_rate), _positive("duration_s", duration_s)
    models_per_slo = _count("models_per_slo", models_per_slo)
    if isinstance(slos_ms, (str, bytes)) or not isinstance(slos_ms, Sequence) or len(slos_ms) < 2:
        raise ConfigError("slos_ms", slos_ms, reason="must be a list of at least two SLOs (ms)")
    slos = [_positive("slos_ms", v) for v in slos_ms]
    if len(set(slos)) != len(slos):
        raise ConfigError("slos_ms", slos_ms, reason="the SLO classes must differ")
    n_models = models_per_slo * len(slos)
    streams = [Stream(m, "poisson", rate=total_rate / n_models) for m in range(n_models)]
    params = {"total_rate": total_rate, "slos_ms": slos, "models_per_slo": models_per_slo, "duration_s": duration_s}
    name = f"multi-slo-{total_rate:g}rps-{n_models}m-" + "-".join(f"{v:g}" for v in slos) + "ms"
    return Workload(name, tuple(slos[m % len(slos)] for m in range(n_models)), streams, duration_s * 1000.0,
                    int(seed), MULTI_SLO, params)


def model_kinds(workload: Workload) -> np.ndarray:
    """The model kind of every instance of an Azure-like or Azure-trace workload (0 .. kinds-1)."""
    copies = int(workload.params.get("copies", 1))
    return np.arange(workload.n_models) // copies


GENERATORS: dict[str, Callable[..., Workload]] = {LOW_SLO: low_slo_workload, AZURE_LIKE: azure_like_workload,
                                                  MULTI_SLO: multi_slo_workload}
