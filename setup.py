"""Package layout only (everything else is in pyproject.toml).

The top-level folders ``data_prep/`` and ``eval/`` are the sub-packages ``cavpref.data_prep`` and
``cavpref.eval``. pyproject's ``packages.find`` cannot rename a folder, so the mapping is written here.
``cavpref_lab/`` (the experiments: the ladder, the science runs, sweeps, benchmarks, the GPU check) installs
as its own top-level package beside ``cavpref``: the product never imports it (tests/test_layering.py).
"""

from setuptools import find_packages, setup

STAGES = {"cavpref.data_prep": "data_prep", "cavpref.eval": "eval"}

packages = find_packages(include=["cavpref", "cavpref.*", "cavpref_lab", "cavpref_lab.*"])
for name, folder in STAGES.items():
    packages += [name] + [f"{name}.{sub}" for sub in find_packages(where=folder)]

package_data = {
    "cavpref.eval.html_report": ["assets/*"],  # the HTML report's template, script and styles
    # the built-in tasks' facts (cavpref.task_registry reads them as data, data_prep's generators too)
    "cavpref.data_prep.tasks": ["*.yaml"],
}
setup(packages=packages, package_dir=STAGES, package_data=package_data)
