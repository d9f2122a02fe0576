"""A CartPole whose ``close`` appends its process id to a file: ``closing_env:ClosingCartPole-v0`` (importable by
Ray workers), to see which processes closed their envs (an env whose close writes a file or frees a resource)."""
from __future__ import annotations

import os
import time

import gymnasium as gym


class ClosingCartPole(gym.Wrapper):
    """CartPole-v1 that writes ``<pid>`` as a line of ``close_log`` when closed. With ``fail_token`` (a path), the
    first one built in a process other than ``main_pid`` creates that file and, once another such process has built
    one (its pid a line of ``fail_token + '.built'``), raises: one explorer fails to start after another started."""

    def __init__(self, close_log: str, fail_token: str | None = None, main_pid: int = 0, **kwargs) -> None:
        if fail_token is not None and os.getpid() != main_pid:
            try:
                os.close(os.open(fail_token, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                with open(fail_token + ".built", "a") as f:
                    f.write(f"{os.getpid()}\n")
            else:
                deadline = time.monotonic() + 60
                while not os.path.exists(fail_token + ".built") and time.monotonic() < deadline:
                    time.sleep(0.05)
                time.sleep(2.0)  # the other explorer's constructor returns meanwhile
                raise RuntimeError("ClosingCartPole: this explorer fails to start")
        super().__init__(gym.make("CartPole-v1", **kwargs))
        self.close_log = close_log

    def close(self) -> None:
        with open(self.close_log, "a") as f:
            f.write(f"{os.getpid()}\n")
        super().close()


if "ClosingCartPole-v0" not in gym.registry:
    gym.register("ClosingCartPole-v0", entry_point=ClosingCartPole, disable_env_checker=True)
