"""AURA builder: ``cavpref build aura`` (``pipeline.build``)."""
