"""TraceAV-Bench builder: ``cavpref build traceav`` (``pipeline.build``)."""
