"""AURA, MMAR-Rubrics and TraceAV-Bench on the shared evaluation harness.

One module per concern: ``aura`` / ``mmar`` / ``traceav`` (reader of the released format, prompt,
pure metrics), ``aura_judge`` / ``mmar_judge`` (LLM-judge scoring through ``eval.judge.ChatClient``),
``longvideo`` (frame and audio-window sampling of long videos), ``plugins`` (the three as
``eval.runner.Benchmark``s), ``pipeline`` / ``external`` (model runs and external predictions),
``reports`` (report sections and plots), ``base`` (``ReasoningBenchmark``, the registry class they share;
their registered classes are in ``cavpref.eval.tasks``). Everything is documented in
docs/reasoning_benchmarks.md.
"""
