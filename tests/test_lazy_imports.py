"""Libraries that a run does not use are not imported: pyarrow (the parquet history), rich (the console) and
TensorBoard's protobufs where nothing is written or shown."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_a_run_imports_only_the_loggers_it_uses(tmp_path):
    """Importing canter.logging.history (canter.api does) imported every logger's module, rich with the console's
    (0.1 s), and pyarrow (0.1-0.2 s) for tables that a trainer without a run directory never writes."""
    code = textwrap.dedent(f"""
        import sys, canter
        def imported():
            return sorted(m for m in ("rich", "pyarrow", "tensorboard", "wandb") if m in sys.modules)
        canter.train("ppo", "CartPole-v1", run_dir=None, max_steps=64, n_envs=1, n_steps=64, eval_episodes=0)
        print("no run directory:", imported())
        canter.train("dqn", "CartPole-v1", run_dir={str(tmp_path / "run")!r}, max_steps=64, eval_episodes=0)
        print("quiet run:", imported())
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert "no run directory: []" in out.stdout, out.stdout
    assert "quiet run: ['pyarrow', 'tensorboard']" in out.stdout, out.stdout
    assert (tmp_path / "run" / "history.parquet").exists()
