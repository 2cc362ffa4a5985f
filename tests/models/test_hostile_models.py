"""Hostile-input pass (issue 18), models: trust_remote_code runs a folder's code — say so (#20)."""

from __future__ import annotations

import logging


def test_trust_remote_code_warns_naming_the_folder(tiny, caplog):
    from cavpref.models import load_model_io
    from cavpref.models.config import AVModelArguments

    with caplog.at_level(logging.WARNING):
        load_model_io(str(tiny))
    assert "trust_remote_code" not in caplog.text
    args = AVModelArguments(model_name_or_path=str(tiny))
    args.trust_remote_code = (
        True  # not a recipe key: `cavpref train` copies CAVPrefConfig.trust_remote_code here
    )
    for how in ({"name_or_path": str(tiny), "trust_remote_code": True}, {"name_or_path": args}):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            load_model_io(**how)
        lines = [r.getMessage() for r in caplog.records if "trust_remote_code" in r.getMessage()]
        assert len(lines) == 1 and str(tiny) in lines[0] and "\n" not in lines[0], caplog.text
