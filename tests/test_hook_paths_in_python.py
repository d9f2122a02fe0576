"""``hooks`` in Python takes callables; the YAML form, an import path string, is for the run config's ``hooks``
(docs/training-control.md). Given in Python it said only "hook 'after_update' needs a callable, got 'pkg.mod:fn'"."""
import pytest

import canter
from canter.errors import CanterError


def test_an_import_path_given_to_pythons_hooks_names_where_it_goes():
    with pytest.raises(CanterError, match=r"needs a callable in Python \(hooks=\{'after_update': fn\}\), got the string "
                                          r"'pkg.mod:fn'; an import path goes in the run config's hooks .*"
                                          r"sets=\"hooks.after_update=pkg.mod:fn\""):
        canter.make_trainer("ppo", "CartPole-v1", hooks={"after_update": ["pkg.mod:fn"]})


def test_the_sets_form_the_error_names_takes_the_path():
    trainer = canter.make_trainer("ppo", "CartPole-v1", n_envs=1, sets="hooks.on_train_start=canter.callbacks:snake_case")
    assert trainer.run.hooks == {"on_train_start": "canter.callbacks:snake_case"}
    trainer.close()
