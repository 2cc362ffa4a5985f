"""Package layout only (everything else is in pyproject.toml).

The top-level folders ``data_prep/`` and ``eval/`` are the sub-packages ``cavpref.data_prep`` and
``cavpref.eval``. pyproject's ``packages.find`` cannot rename a folder, so the mapping is written here.
"""

from setuptools import find_packages, setup

STAGES = {"cavpref.data_prep": "data_prep", "cavpref.eval": "eval"}

packages = find_packages(include=["cavpref", "cavpref.*"])
for name, folder in STAGES.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(where=folder)]

# the HTML report's template, script and styles (inlined into every report.html)
setup(packages=packages, package_dir=STAGES, package_data={"cavpref.eval.html_report": ["assets/*"]})
