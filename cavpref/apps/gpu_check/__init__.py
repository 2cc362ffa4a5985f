"""The GPU check's pieces (its command is ``scripts/gpu_check.py``): ``sections`` (what each section measures and
its rule) and ``tables`` (the JSON as Markdown)."""
