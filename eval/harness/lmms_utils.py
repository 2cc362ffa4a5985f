"""utils.py of a task folder written by ``cavpref eval export --harness lmms_eval`` (a copy of
``cavpref/eval/harness/lmms_utils.py``): lmms-eval's hooks, each handed to cavpref's ``TaskFolder``, so the
replies are read and scored by the installed cavpref exactly as ``cavpref eval`` reads them. cavpref must be
importable where lmms-eval runs (``pip install cavpref`` beside it)."""

from pathlib import Path

from cavpref.eval.harness.lmms_eval import task_folder

FOLDER = str(Path(__file__).resolve().parent)


def doc_to_visual(doc):
    return task_folder(FOLDER).doc_to_visual(doc)


def doc_to_text(doc):
    return task_folder(FOLDER).doc_to_text(doc)


def process_results(doc, results):
    return task_folder(FOLDER).process_results(doc, results)


def _aggregation(metric):
    def aggregate(values):
        return task_folder(FOLDER).aggregate(metric, values)

    aggregate.__name__ = f"agg_{metric}"
    return aggregate


# one aggregation per metric of the task's YAML (export.json lists them): `!function utils.agg_<metric>`;
# the template itself, in cavpref's package, has no export.json and defines none
if (Path(FOLDER) / "export.json").is_file():
    for _metric in task_folder(FOLDER).config["metrics"]:
        globals()[f"agg_{_metric}"] = _aggregation(_metric)
