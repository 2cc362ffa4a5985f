"""``script(name)``: a file of ``scripts/`` imported as a module, so a test can call its functions."""

import importlib.util
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass reads its module's namespace while it is defined
    spec.loader.exec_module(module)
    return module
