"""The indexing case study's evaluation metrics, declared once with their units (the study's Table 6.3).

Improvements are 1 - value / value with no secondary index; the relative index size is the bytes of a
method's indexes over the full-index baseline's on the same workload.
"""

from wield.metrics import Metric

METRICS = (
    Metric("mean_latency_improvement", "mean latency improvement over no index", "fraction"),
    Metric("p99_latency_improvement", "p99 latency improvement over no index", "fraction"),
    Metric("mean_work_improvement", "mean work improvement over no index", "fraction"),
    Metric("p99_work_improvement", "p99 work improvement over no index", "fraction"),
    Metric("relative_index_size", "index size relative to the full index", "fraction", higher_is_better=False),
    Metric("index_bytes", "index size", "bytes", higher_is_better=False),
    Metric("indexes_created", "indexes created", "count", higher_is_better=False),
    Metric("uses_per_index", "uses per index", "number"),
    Metric("unused_indexes", "unused indexes", "count", higher_is_better=False),
    Metric("unused_index_bytes", "unused index size", "bytes", higher_is_better=False),
    Metric("mean_latency_ms", "mean latency", "ms", higher_is_better=False),
)

BY_NAME = {metric.name: metric for metric in METRICS}
