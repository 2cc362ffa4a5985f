"""Other trainers' data formats both ways: LLaMA-Factory, ms-swift and TRL files <-> cavpref preference rows.

``export_dataset(ExportArgs(...))`` / ``import_dataset(ImportArgs(...))``; ``cavpref data export|import`` on the
command line (``data_prep/formats/cli.py``). One module per format (``llamafactory``, ``swift``, ``trl``), each
citing the documentation page its layout follows; docs/your_data.md describes them.
"""

from cavpref.data_prep.formats.convert import FORMATS, ExportArgs, ImportArgs, export_dataset, import_dataset

__all__ = ["FORMATS", "ExportArgs", "ImportArgs", "export_dataset", "import_dataset"]
