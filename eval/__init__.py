"""eval: benchmark runners, choice extraction, CircularEval, judges, metrics and reports."""
