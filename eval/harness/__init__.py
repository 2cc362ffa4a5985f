"""cavpref's benchmarks inside lmms-eval and VLMEvalKit, and their answers back into cavpref's scoring.

Researchers already run those two harnesses (both wrap Qwen2.5-Omni); neither has AVTrustBench. ``eval
export --harness lmms_eval|vlmevalkit`` writes every pass cavpref would ask (CircularEval's rotations
included, the prompt rendered by the same function) with its media as files those harnesses read: an
lmms-eval task folder (``lmms_eval.py``, its metrics computed by cavpref's own scoring) or a VLMEvalKit
MCQ TSV in MMBench's circular layout (``vlmevalkit.py``). ``eval score --harness …`` reads their per-sample
answers back as cavpref predictions rows and scores them with the benchmark's own pipeline, so every
cavpref metric (paired trust, false abstention, per-task tables, the judge) comes out the same as from
``cavpref eval``. ``passes.py`` holds what both exports share.
"""
