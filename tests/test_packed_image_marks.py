"""Image entries of Dict / Tuple observations keep the layout their env marks (``mark_image_layout``): the packed
space records it (``PackedBox.given_image_layouts``, ``image_layouts`` in checkpoints) and the ``multi`` encoder
reads it so, as it reads the same image on its own; a checkpoint that read such an entry by its shape (written
before marks were kept) still loads as it was trained, and resuming it is a one-line error."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import canter
from canter.envs.packing import ObservationPacker
from canter.envs.spaces import space_from_dict, space_to_dict, spaces_match
from canter.errors import CanterError
from canter.models.cnn import make_encoder, mark_image_layout
from canter.resume_checks import check_env_layout_kept, check_image_layout_kept

ENV = "image_envs:MarkedDictImageSide-v0"
VEC = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def _marked(layout: str = "chw") -> gym.spaces.Box:
    return mark_image_layout(gym.spaces.Box(0, 255, (12, 10, 10), np.uint8), layout)


def _packed(structure: str, image: gym.Space) -> gym.Space:
    space = gym.spaces.Dict({"pixels": image, "v": VEC}) if structure == "dict" else gym.spaces.Tuple((image, VEC))
    return ObservationPacker(space, gym.spaces.Discrete(2)).space


@pytest.mark.parametrize("structure", ["dict", "tuple"])
def test_a_marked_entry_is_read_as_marked_and_its_checkpoint_keeps_it(structure):
    """The entry was read as channels-last by its shape ([10, 12, 10] inputs), though it reads chw on its own."""
    assert make_encoder(_marked()).in_shape == (12, 10, 10)
    packed = _packed(structure, _marked())
    assert make_encoder(packed).convs[0].in_shape == (12, 10, 10)
    d = json.loads(json.dumps(space_to_dict(packed)))
    assert d["image_layouts"] == ["chw"]
    saved = space_from_dict(d)
    assert make_encoder(saved).convs[0].in_shape == (12, 10, 10) and spaces_match(saved, packed)
    check_image_layout_kept(saved)  # not taken for a reading from before 2026-11-27
    check_env_layout_kept(saved, packed)
    unmarked = _packed(structure, gym.spaces.Box(0, 255, (12, 10, 10), np.uint8))
    assert make_encoder(unmarked).convs[0].in_shape == (10, 12, 10)  # the shape rule, where no mark is given
    with pytest.raises(CanterError, match=r"cannot resume: .*\(12, 10, 10\) image entry as channels-first .*: it does "
                                          r"not mark it"):
        check_env_layout_kept(saved, unmarked)


@pytest.fixture(scope="module")
def old_run(tmp_path_factory):
    """A run trained before packed spaces kept marks: it read the entry by its shape, as hwc (image_layouts
    ["hwc"]), as a run of the env without its mark reads it now."""
    import image_envs

    run = tmp_path_factory.mktemp("old") / "run"
    image_envs.MarkedDictImageSideEnv.layout = None
    try:
        canter.train("ppo", ENV, run_dir=run, seed=0, n_envs=1, max_steps=8, n_steps=8, batch_size=8, n_epochs=1,
                     eval_episodes=1)
    finally:
        image_envs.MarkedDictImageSideEnv.layout = "chw"
    assert json.loads((run / "checkpoints" / "last.json").read_text())["observation_space"]["image_layouts"] == ["hwc"]
    return run


def test_a_checkpoint_that_read_the_marked_entry_by_its_shape_loads_as_it_was_trained(old_run):
    """canter.load builds the model that read it as hwc, its weights load, and it acts in the (marked) env."""
    agent = canter.load(old_run)
    assert agent.algorithm.model.encoder.convs[0].in_shape == (10, 12, 10)
    obs, _ = gym.make(ENV).reset(seed=0)
    assert agent.predict(obs) in (0, 1)


def test_resuming_or_initialising_from_such_a_checkpoint_is_a_one_line_error(old_run, tmp_path):
    """--resume and init_from, whose models read the env's mark, refuse it in one line (the weights do not fit)."""
    with pytest.raises(CanterError, match=r"cannot resume: this run's model reads its \(12, 10, 10\) image entry as "
                                          r"channels-last \[H, W, C\]; the env gives it as channels-first .*: it marks "
                                          r"it so"):
        canter.resume(old_run, max_steps=16)
    with pytest.raises(CanterError, match=r"init_from .*channels-last \[H, W, C\]; the env gives it as channels-first"):
        canter.train("ppo", ENV, run_dir=tmp_path / "new", init_from=str(old_run), n_envs=1, max_steps=8, n_steps=8,
                     batch_size=8)


def test_a_run_of_the_marked_env_trains_saves_and_resumes(tmp_path):
    """The env's mark reaches the trained model, its checkpoint and a resume of it."""
    run = tmp_path / "run"
    canter.train("ppo", ENV, run_dir=run, seed=0, n_envs=1, max_steps=8, n_steps=8, batch_size=8, n_epochs=1, eval_episodes=1)
    meta = json.loads((run / "checkpoints" / "last.json").read_text())
    assert meta["observation_space"]["image_layouts"] == ["chw"]
    assert canter.load(run).algorithm.model.encoder.convs[0].in_shape == (12, 10, 10)
    agent = canter.resume(run, max_steps=16)
    assert agent.algorithm.model.encoder.convs[0].in_shape == (12, 10, 10)



@pytest.mark.parametrize("entry,needle", [("hcw", "did you mean 'hwc' or 'chw'?"), ("CHW", "did you mean 'chw'?"),
                                          (3, "unknown image_layouts entry 3: hw, hwc, chw, shwc, schw")])
def test_an_unknown_image_layouts_entry_names_the_closest_layout(entry, needle):
    """An edited checkpoint JSON's entry 'hcw' listed the layouts without the one it looks like."""
    d = json.loads(json.dumps(space_to_dict(_packed("dict", _marked()))))
    d["image_layouts"] = [entry]
    with pytest.raises(CanterError) as error:
        space_from_dict(d)
    assert needle in str(error.value) and "hw, hwc, chw, shwc, schw" in str(error.value)


@pytest.mark.parametrize("saved,needle", [("hcw", "did you mean 'hwc' or 'chw'?"), ("CHW", "did you mean 'chw'?"),
                                          ("NONE", "did you mean 'none'?")])
def test_an_unknown_image_layout_of_a_box_names_the_closest_layout(saved, needle):
    """A Box's own image_layout (no packed entry) was the list alone, as the image_layouts entries were."""
    d = json.loads(json.dumps(space_to_dict(gym.spaces.Box(0, 255, (10, 10, 3), np.uint8))))
    d["image_layout"] = saved
    with pytest.raises(CanterError) as error:
        space_from_dict(d)
    assert needle in str(error.value) and "hw, hwc, chw, shwc, schw or none" in str(error.value)
