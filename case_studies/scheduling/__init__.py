"""Request scheduling case study: serving DNN inference requests on GPUs within latency SLOs (Clockwork-style).

``simulator`` is the discrete-event model of the serving system (per-model queues at a controller, GPUs
running one batch at a time, deadlines and timeouts), with ``engine``/``schedulers``/``heaps``/``state``
its compiled parts; ``schedulers`` also holds the baselines (Clockwork's heuristic, FIFO, EDF, random);
``runner`` drives a Python policy every millisecond per GPU (the hook for learned policies); ``metrics``
summarises a run. ``profile`` gives batch execution times (ResNet-50, ``resnet50`` is the model that was
timed); ``workload`` the request streams; ``families`` the low-SLO and SYNTHETIC Azure-like workloads;
``azure_trace`` reads a real Azure Functions trace file; ``rebuild`` rebuilds any recorded workload.

The RL task on Wield's public API: ``system`` (the adapter: a decision per GPU every millisecond),
``task_design`` (the 25-number state, 12 x null/infer and batch-size heads, masks), ``rewards`` (dense
three-part, dense without the GPU term, sparse), ``environment`` (training episodes that grow, evaluation
episodes, ``make_env``), ``learners`` (Wield's PPO with masks, MaskablePPO), ``tasks`` (workloads per
randomisation class) and ``plugin`` (the ``scheduling`` CaseStudy).
"""
