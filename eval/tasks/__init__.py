"""One module per registered benchmark (``cavpref.eval.registry`` scans this package on the first lookup)."""
