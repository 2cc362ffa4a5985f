"""Benchmark builders: AURA- and TraceAV-Bench-style benchmarks from a user's own videos.

``cavpref build aura|traceav --videos DIR --out DIR`` runs the construction pipeline of each paper (AURA
Sec. 3-4, TraceAV-Bench Sec. 3) and writes the benchmark in its **released format**, so
``cavpref eval aura|traceav`` reads it unchanged. Every model role (captioners, generator, verifier,
blindfold solver) is an OpenAI-compatible endpoint reached through ``cavpref.chat_client`` (retries, timeouts,
the one SQLite reply cache, no key in any file); speech is transcribed by a local Whisper through
transformers; media are ``MediaSpec`` trees (trims, audio shifts, split screens, concatenations) decoded
only when a model or a written file needs them.

Shared pieces: ``endpoints`` (the roles' clients), ``work`` (the build folder and its resumable stages),
``media`` (loudness / scene scans, windows), ``asr`` (Whisper), ``quality`` (the ledger that reconciles,
the human-audit sample, the agreement statistics). One package per benchmark: ``aura``, ``traceav``.
"""
