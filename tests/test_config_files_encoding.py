"""Config files as editors write them: a byte order mark, Windows line endings."""
from canter.config import resolve_config
from canter.yaml_io import load_yaml


def test_a_json_config_with_a_byte_order_mark_and_tabs_is_read(tmp_path):
    """A JSON config indented with tabs is read as JSON (PyYAML takes no tab); with the byte order mark Windows
    editors write first it was refused as 'a tab, which YAML does not take': the mark hid the '{' that tells JSON."""
    f = tmp_path / "run.json"
    f.write_bytes(b'\xef\xbb\xbf{\r\n\t"seed": 3,\r\n\t"hparams": {\r\n\t\t"lr": 1e-3\r\n\t}\r\n}\r\n')
    assert load_yaml(f) == {"seed": 3, "hparams": {"lr": 0.001}}
    run, cfg = resolve_config("ppo", "CartPole-v1", f)
    assert (run.seed, cfg.lr) == (3, 0.001)


def test_a_yaml_config_with_a_byte_order_mark_and_crlf_is_read(tmp_path):
    """The same for YAML (PyYAML skips the mark itself)."""
    f = tmp_path / "run.yaml"
    f.write_bytes(b"\xef\xbb\xbf# settings\r\nseed: 3\r\nhparams:\r\n  net_arch: [32, 32]\r\n")
    assert load_yaml(f) == {"seed": 3, "hparams": {"net_arch": [32, 32]}}
