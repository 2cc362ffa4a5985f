"""Applications above the core: the ``cavpref`` command line and the embedded-default quickstart.

Layering (checked by ``tests/core/test_layering.py``): the core (``cavpref`` minus ``apps``, ``data_prep`` and
``eval``) imports none of the stages; ``cavpref.data_prep`` imports the core only; ``cavpref.eval`` imports
the core and ``cavpref.data_prep``; only the apps may import everything.
"""
