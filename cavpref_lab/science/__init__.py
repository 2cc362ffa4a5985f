"""The quickstart's science runs and probes (each module a command: ``scripts/<module>.py``)."""
