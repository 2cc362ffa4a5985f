"""The HTML report of an evaluation run: one self-contained page per run (``report.html``) that shows what
the model did, item by item, and links every number of report.md to the items behind it.

- ``write``: the page of one run (written by every ``cavpref eval`` run and by ``eval report RUN --html``);
- ``run``: a finished run folder read back (items, the records the run used, outcomes);
- ``compare``: ``eval compare … --html``, per item where the runs differ;
- ``rows`` (every benchmark's item view; a benchmark extends it with ``Benchmark.inspect``), ``summary``
  (report.md with linked numbers), ``media`` (thumbnails and audio clips within a budget), ``page`` (the
  template, inline script and styles, the Content-Security-Policy).

docs/evaluation.md, "The HTML report", says what the page shows, its size budget and how it was checked in
a real browser (tests/eval/test_eval_html_browser.py).
"""
