"""The benchmark reports' tables: which runs are paired and how the canter/SB3 ratios and their spread are made."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_offpolicy  # noqa: E402


def speed(lib: str, seed: int, steps: int, sps: float, algo: str = "sac") -> dict:
    return {"kind": "speed", "lib": lib, "algo": algo, "seed": seed, "steps": steps, "sps": sps}


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| SAC |")]


def test_offpolicy_speed_pairs_runs_of_one_invocation_and_one_budget():
    """The report paired each seed's latest canter row with its latest SB3 row, wherever they came from: a later
    short run (--steps 200) took over seed 1's cell in the 3,000-step row, and a canter run whose SB3 run then
    failed was paired with the SB3 run of an earlier invocation."""
    rows = [speed("canter", 1, 3000, 100.0), speed("sb3", 1, 3000, 80.0),
            speed("canter", 2, 3000, 90.0), speed("sb3", 2, 3000, 60.0),
            speed("canter", 1, 200, 30.0), speed("sb3", 1, 200, 60.0),  # a short run: its own row
            speed("canter", 2, 3000, 999.0)]  # its SB3 run failed: no pair, seed 2's earlier pair stays
    text = bench_offpolicy.build_section(rows)
    assert table_rows(text) == [
        "| SAC | 256-256 | highest (plain float32, the default) | 200 | 1 | 30.0 | 60.0 | 30.0 | 60.0 | 0.50 |",
        "| SAC | 256-256 | highest (plain float32, the default) | 3,000 | 1, 2 | 100.0, 90.0 | 80.0, 60.0 | 95.0 | 70.0 "
        "| 1.38 (1.25 to 1.50) |"]
    assert "SAC misses it (median 1.38x at 3,000 steps)" in text


def quality_row(seed: int, budget: int, final: float) -> dict:
    return {"algo": "a2c", "env": "CartPole-v1", "seed": seed, "budget": budget, "target": 500.0, "steps": budget,
            "stop_reason": "max_steps", "best_eval": final, "last_eval": final, "final_eval": final,
            "final_episodes": 1, "wall_s": 1.0}


def test_onpolicy_quality_gives_each_budget_its_row_and_takes_each_seeds_latest_run():
    """All runs of an (algorithm, env) made one row: a smoke run at a small budget went into the median of the
    preset's runs, and a rerun of a seed counted twice ('seeds 1 1 2')."""
    import onpolicy_quality

    rows = [quality_row(1, 500_000, 500.0), quality_row(2, 500_000, 480.0), quality_row(1, 500_000, 490.0),
            quality_row(1, 400, 20.0)]
    lines = [line for line in onpolicy_quality.report(rows).splitlines() if line.startswith("| a2c |")]
    assert [line.split(" | ")[2:4] + [line.split(" | ")[7]] for line in lines] == [
        ["1", "400 (500k)", "20.0"], ["1 2", "500,000 (500k)", "490.0, 480.0"]]


def test_onpolicy_quality_gives_no_verdict_for_a_run_at_another_budget():
    """0d548a49 gave a --max-steps run its own row, but judged it against the bar set for the preset's budget: a
    400-step smoke check read 'MISSES (20.00 < 500)'."""
    import onpolicy_quality

    rows = [quality_row(1, 500_000, 500.0), dict(quality_row(1, 400, 20.0), max_steps_given=True)]
    verdicts = [line.split(" | ")[10] for line in onpolicy_quality.report(rows).splitlines()
                if line.startswith("| a2c |")]
    assert verdicts == ["not comparable (run --max-steps, not the preset's budget)", "meets (500.00 >= 500)"]


def test_onpolicy_quality_run_marks_only_a_budget_other_than_the_presets(monkeypatch):
    """3865dd94 recorded max_steps_given for any --max-steps, the preset's own budget included, and one such run in a
    row took the verdict of the whole row (the preset's runs of the other seeds too) to 'not comparable'."""
    import types

    import canter
    import canter.trainers.evaluation
    import onpolicy_quality

    class FakeTrainer:  # the preset trained in no time: a2c CartPole-v1's budget is 500,000 steps
        def __init__(self, algo, env, seed, torch_threads, max_steps=500_000):
            self.run = types.SimpleNamespace(max_steps=max_steps, target_reward=500.0)
            self.step, self.best_eval_return, self.agent, self.eval_env = max_steps, 500.0, None, None
            self.last_eval = types.SimpleNamespace(mean_return=500.0)

        def __call__(self):
            return iter([types.SimpleNamespace(stop_reason="max_steps")])

        def close(self):
            pass

    monkeypatch.setattr(canter, "make_trainer", FakeTrainer)
    final = types.SimpleNamespace(mean_return=500.0)
    monkeypatch.setattr(canter.trainers.evaluation, "evaluate", lambda *a, **k: final)
    assert "max_steps_given" not in onpolicy_quality.run("a2c", "CartPole-v1", 1, 1, max_steps=500_000)  # the preset's
    assert onpolicy_quality.run("a2c", "CartPole-v1", 1, 1, max_steps=400)["max_steps_given"] is True
    assert "max_steps_given" not in onpolicy_quality.run("a2c", "CartPole-v1", 1, 1)


@pytest.mark.slow
def test_onpolicy_quality_run_takes_a_small_budget(tmp_path):
    """``--max-steps`` (with ``--final-episodes``) is the script's smoke check: seconds, one row at that budget."""
    import json
    import subprocess

    jsonl = tmp_path / "q.jsonl"
    script = Path(bench_offpolicy.__file__).parent / "onpolicy_quality.py"
    proc = subprocess.run([sys.executable, str(script), "run", "a2c", "CartPole-v1", "1", "--jsonl", str(jsonl),
                           "--max-steps", "400", "--final-episodes", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = json.loads(jsonl.read_text())
    assert (row["budget"], row["steps"], row["final_episodes"], row["max_steps_given"]) == (400, 400, 1, True)


def explorers_row(n: int, sps: float, sleep_ms: float = 2.0) -> dict:
    return {"algo": "impala", "explorers": n, "n_envs": 4, "n_steps": 64, "sleep_ms": sleep_ms, "seconds": 30.0,
            "env_steps_per_s": sps, "learner_updates_per_s": 1.0, "learn_fraction": 0.1, "wait_fraction": 0.5,
            "weights_kb_per_s": 1.0, "trajectory_kb_per_s": 1.0, "weights_kb": 36.0, "policy_lag": 2 * n - 1.0,
            "per_explorer_steps_per_s": [sps / n] * n, "date": "d"}


def test_explorer_scaling_compares_runs_of_one_setting_only(tmp_path):
    """Rows were keyed by (algorithm, explorers) alone: a run at another --sleep-ms took its explorer count's
    place in the 2 ms table, its speed-up computed against the 2 ms run of one explorer (here 5x from 2)."""
    import json

    import bench_explorers

    path = tmp_path / "e.jsonl"
    rows = [explorers_row(1, 400), explorers_row(2, 800), explorers_row(2, 2000, sleep_ms=0.5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = bench_explorers.report(str(path))
    two_ms = text.split("sleeping 2 ms", 1)[1].split("###", 1)[0]
    assert "| 2 | 800 | 2.00x | 100% |" in two_ms and "2,000" not in two_ms
    half_ms = text.split("sleeping 0.5 ms", 1)[1].split("###", 1)[0]
    assert "| 2 | 2,000 | n/a | n/a |" in half_ms  # no 1-explorer run at 0.5 ms to compare with


def test_atari_steps_is_a_smoke_budget_passed_to_the_job_and_left_out_of_the_report(tmp_path, monkeypatch):
    """bench_atari had no budget smaller than its 3,072 / 6,000-step jobs (minutes each on Pong); --steps runs
    a job at that budget, records it as ``budget`` and --report leaves such rows out of the table."""
    import json
    import subprocess

    import bench_atari

    seen = []

    def fake_run(cmd, **kwargs):
        seen.append(cmd)
        res = {"lib": cmd[cmd.index("--job") + 1], "algo": "ppo", "seed": 1, "fps": 1.0, "budget": 64,
               "date": "2026-11-28 07:00 UTC", "loadavg": "0"}
        return subprocess.CompletedProcess(cmd, 0, bench_atari.RESULT_TAG + json.dumps(res) + "\n", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    jsonl, out = tmp_path / "a.jsonl", tmp_path / "RESULTS.md"
    standard = [{"lib": lib, "algo": "ppo", "seed": 1, "fps": fps, "date": "2026-11-27 07:00 UTC", "loadavg": "0"}
                for lib, fps in (("canter", 300.0), ("sb3", 100.0))]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in standard))
    assert bench_atari.main(["--job", "canter", "ppo", "--steps", "64", "--jsonl", str(jsonl)]) == 0
    assert seen[0][-2:] == ["--steps", "64"] and "--in-process" in seen[0]
    assert len(jsonl.read_text().splitlines()) == 3
    monkeypatch.setattr(bench_atari, "_versions", lambda: "v")
    assert bench_atari.main(["--report", "--jsonl", str(jsonl), "--out", str(out)]) == 0
    row = next(line for line in out.read_text().splitlines() if line.startswith("| PPO |"))
    assert row.startswith("| PPO | 3,072 | 300 (1) | 100 (1) | 3.00 |")


def test_offpolicy_report_names_the_machine_each_run_recorded():
    """The Machine line was the machine writing the report (``platform.processor()``, core count there), and said
    'runs serialised by a lock' though no code takes one; runs now record their CPU and the report lists those."""
    import os

    meta = bench_offpolicy._meta()
    assert meta["cpus"] == os.cpu_count() and meta["cpu"]
    rows = [dict(speed("canter", 1, 3000, 100.0), cpu="Some CPU", cpus=64), dict(speed("sb3", 1, 3000, 50.0))]
    line = next(x for x in bench_offpolicy.build_section(rows).splitlines() if x.startswith("Machine"))
    assert "Some CPU, 64 logical cores" in line and "not recorded" in line and "lock" not in line


def test_explorer_report_states_the_machine_and_window_the_runs_recorded(tmp_path, monkeypatch):
    """The footer said 'local Ray (2 CPUs)' whatever Ray had, the last row's measuring window for every row, and
    the CPU, core count and Python of the machine writing the report; runs now record them and the footer lists
    what they recorded."""
    import json

    import bench_explorers

    rows = [dict(explorers_row(1, 400), cpu="CPU A", ray_cpus=16, python="3.12.1"),
            dict(explorers_row(2, 800), seconds=10.0)]
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    footer = next(x for x in bench_explorers.report(str(path)).splitlines() if x.startswith("Each row"))
    assert "(16 CPUs / CPUs not recorded)" in footer and "10 s / 30 s measured" in footer
    assert "CPU CPU A / not recorded; Python 3.12.1 / not recorded." in footer


def test_cartpole_time_to_target_counts_canters_transitions_as_sb3_counts_its_steps():
    """'steps used' was canter's step counter, which counts the reset-only step after each episode's end (NEXT_STEP
    autoreset), against SB3's steps, which are all transitions; the column now compares transitions."""
    import argparse

    import bench_cartpole

    def t2t(steps: int, transitions: int | None = None) -> list[dict]:
        r = {"total_s": 2.0, "import_s": 1.0, "train_call_s": 1.0, "steps": steps, "solved": True}
        return [r if transitions is None else dict(r, transitions=transitions)]

    e2e = [{"command": "canter train", "e2e_s": 3.0, "steps": 10, "solved": True}]
    R = {"ppo_cfg": {"max_steps": 100}, "dqn_cfg": {"max_steps": 100}}
    for lib in ("canter", "sb3"):
        R[(lib, "ppo-sps")] = R[(lib, "dqn-sps")] = [{"sps": 1.0}]
        R[(lib, "ppo-e2e")] = e2e
    R[("canter", "dqn-sps-t2")] = []
    R[("canter", "ppo-t2t")], R[("sb3", "ppo-t2t")] = t2t(16_384, 16_000), t2t(16_384)
    R[("canter", "dqn-t2t")], R[("sb3", "dqn-t2t")] = t2t(5_120, 5_000), t2t(5_000)
    meta = {"date": "d", "cpu": "c", "load_before": "l", "load_after": "l", "versions": {}, "elapsed": 1.0,
            "command": "python benchmarks/bench_cartpole.py"}
    text = bench_cartpole.build_report(R, [1], argparse.Namespace(quick=False), meta)
    rows = [line for line in text.splitlines() if line.startswith(("| PPO | canter", "| DQN | canter"))]
    assert [row.split(" | ")[5] for row in rows] == ["16,000", "5,000"]


def test_offpolicy_flops_bound_takes_sb3_from_the_pairs_of_the_longest_budget():
    """The speed table gave each budget its row and the verdict the longest budget's pairs, but the flops bound still
    took the median of every SB3 speed row: a short --steps run (SB3 at 500/s over 200 steps, half of them before
    learning_starts) or an SB3 row without its canter run moved it."""
    flops = {"kind": "flops", "algo": "sac", "lib": "canter", "mflop_per_update": 1.0, "ms_per_update": 1.0,
             "gflops_achieved": 1.0, "ms_at_sgemm_rate": 2.0, "sgemm_256_gflops": 1.0}
    rows = [speed("canter", 1, 3000, 100.0), speed("sb3", 1, 3000, 50.0), speed("canter", 1, 200, 300.0),
            speed("sb3", 1, 200, 500.0), speed("sb3", 2, 3000, 500.0), flops]
    line = next(x for x in bench_offpolicy.build_section(rows).splitlines() if x.startswith("| SAC | canter |"))
    assert line.endswith(f"| {(1000 / 50.0) / 2.0:.2f} |"), line  # 20 ms per env step at SB3's 50/s, over 2 ms


def test_explorer_estimate_uses_the_setting_measured_last(tmp_path):
    """The estimate's 'setting measured last' was the setting of the last explorer count seen for the first time: a
    rerun at 2 ms after runs at 0.5 ms kept its key's first place, so the estimate came from the 0.5 ms runs."""
    import json

    import bench_explorers

    rows = [explorers_row(1, 400), explorers_row(2, 800), explorers_row(1, 1000, sleep_ms=0.5),
            explorers_row(2, 2000, sleep_ms=0.5), explorers_row(2, 820)]  # the last: a rerun at 2 ms
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    estimate = bench_explorers.report(str(path)).split("### Estimate", 1)[1]
    assert "one explorer collects ~410 env-steps/s" in estimate, estimate[:300]


def test_an_atari_job_records_a_budget_other_than_the_standard_one(monkeypatch):
    """The --steps test above faked the worker's result, ``budget`` included, so it passed with job() recording no
    budget at all (checked by taking the line out): here job() itself runs, with the libraries' runs faked."""
    import bench_atari

    calls = []

    def fake(lib):
        def run(algo, seed, *rest):
            calls.append((lib, rest[-1]))
            return {"steps": rest[-1] or bench_atari.STEPS[algo], "train_s": 1.0}
        return run

    monkeypatch.setattr(bench_atari, "_canter", fake("canter"))
    monkeypatch.setattr(bench_atari, "_sb3", fake("sb3"))
    monkeypatch.setattr(bench_atari, "cpu_model", lambda: "cpu")
    monkeypatch.setattr("torch.set_num_threads", lambda n: None)
    short = bench_atari.job("sb3", "dqn", 1, steps=300)
    standard = bench_atari.job("canter", "ppo", 1, steps=bench_atari.STEPS["ppo"])
    default = bench_atari.job("canter", "dqn", 1)
    assert calls == [("sb3", 300), ("canter", bench_atari.STEPS["ppo"]), ("canter", None)]
    assert short["budget"] == 300 and "budget" not in standard and "budget" not in default


def test_atari_flops_takes_sb3_speed_from_the_jobs_the_report_compares(tmp_path):
    """b03aa88e's --steps smoke jobs (and --device jobs) go to results_atari.jsonl, which the report leaves out,
    but atari_flops.py took the median fps of every SB3 PPO line there, theirs included."""
    import json

    import atari_flops

    rows = [{"lib": "sb3", "algo": "ppo", "fps": 400.0}, {"lib": "sb3", "algo": "ppo", "fps": 40.0, "budget": 64},
            {"lib": "sb3", "algo": "ppo", "fps": 30.0, "budget": 64}, {"lib": "sb3", "algo": "ppo", "fps": 4000.0,
                                                                        "device": "cuda"}]
    path = tmp_path / "results_atari.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert atari_flops.sb3_seconds_per_env_step(path) == 4 / 400.0


def test_cartpole_end_to_end_counts_canters_transitions_as_sb3_counts_its_steps(monkeypatch):
    """f79b3e85 made the time-to-target column transitions, but the end-to-end table's 'steps used' was still the
    canter run's summary steps (its reset-only step after each episode included) beside SB3's transitions."""
    import argparse
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    import bench_cartpole

    def fake_run(cmd, timeout=1800):  # `canter train ... --run-dir DIR`: 160 steps, 3 episodes, 1 on the last step
        run_dir = Path(cmd[cmd.index("--run-dir") + 1])
        run_dir.mkdir(parents=True)
        (run_dir / "summary.json").write_text(json.dumps({"steps": 160, "episodes": 3, "best_eval_return": 500.0,
                                                          "solved": True}))
        pq.write_table(pa.table({"step": [48, 96, 160]}), run_dir / "history.parquet")
        return 1.0, None

    monkeypatch.setattr(bench_cartpole, "_run", fake_run)
    canter = bench_cartpole.run_e2e("canter", 1, {}, quick=False)
    assert (canter["steps"], canter["transitions"]) == (160, 158)  # 160 - 3 + 1: the last one had no reset step yet
    R = {"ppo_cfg": {"max_steps": 100}, "dqn_cfg": {"max_steps": 100}, ("canter", "dqn-sps-t2"): []}
    t2t = [{"total_s": 2.0, "import_s": 1.0, "train_call_s": 1.0, "steps": 10, "solved": True}]
    for lib in ("canter", "sb3"):
        R[(lib, "ppo-sps")] = R[(lib, "dqn-sps")] = [{"sps": 1.0}]
        R[(lib, "ppo-t2t")] = R[(lib, "dqn-t2t")] = t2t
    R[("canter", "ppo-e2e")] = [canter]
    R[("sb3", "ppo-e2e")] = [{"e2e_s": 2.0, "steps": 160, "solved": True}]
    meta = {"date": "d", "cpu": "c", "load_before": "l", "load_after": "l", "versions": {}, "elapsed": 1.0,
            "command": "python benchmarks/bench_cartpole.py"}
    text = bench_cartpole.build_report(R, [1], argparse.Namespace(quick=False), meta)
    assert next(x for x in text.splitlines() if x.startswith("| canter | `canter train")).split(" | ")[3] == "158"
    assert "| lib | command | wall s (incl. Python start-up) | env steps used (transitions) | solved |" in text
