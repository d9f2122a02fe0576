"""Experiment tooling on top of run directories: tune, plot, benchmark, report, video.

Each tool is a ``canter`` subcommand and a Python function:

- :func:`canter.tools.tune.tune` -- an Optuna study over the search space declared in the configs
- :func:`canter.tools.plot.plot_runs` -- learning curves, seeds grouped into mean and band
- :func:`canter.tools.benchmark.benchmark` -- algorithms x envs x seeds, table and figure
- :func:`canter.tools.report.write_report` -- a self-contained ``report.html`` for one run
- :class:`canter.tools.video.VideoRecorder` -- ``--record-every``: evaluation episodes as MP4

Modules are imported on use, so ``import canter`` stays light.
"""
