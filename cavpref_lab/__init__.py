"""The lab beside the product (as torchtune keeps ``recipes/`` beside ``torchtune/``): the experiments that
measure ``cavpref`` rather than ship it.

* ``ladder`` — the learnability ladder (issue 38): ``config`` (its keys, methods and mixes), ``plan`` (its
  stages and the runner), ``rows`` (its training rows), ``margins`` (abstention margins read back),
  ``report`` (tables and plots), ``diagnose`` (why a run abstains);
* ``science`` — the quickstart's science runs and probes: ``quickstart_science``, ``probe_where``,
  ``repeat_world``, ``world_across_cpus``, ``real_media_inputs``;
* ``sweep`` — the λ sweep (Fig. 6); ``gpu_check`` — the GPU run's checks;
* ``bench`` — one module per benchmark.

Each command module has a ``main(argv)``; ``scripts/<name>.py`` is its few-line entry point. The lab imports
only the product's public names; the product never imports the lab (tests/core/test_layering.py).
"""
