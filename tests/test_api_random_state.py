"""The caller's global random states survive canter's first use: ``canter.train`` (the attribute) imports
canter.api, whose console logger imports rich, which draws ``random.getrandbits(24)`` as it imports."""
import random
import sys

import canter


def test_importing_a_public_name_leaves_pythons_random_state(tmp_path, monkeypatch):
    (tmp_path / "draws_on_import.py").write_text("import random\nID = random.getrandbits(24)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "draws_on_import", raising=False)
    random.seed(7)
    want = random.random()
    random.seed(7)
    canter._import_deferring_gc("draws_on_import")  # what canter.train's first access does for canter.api
    assert random.random() == want
