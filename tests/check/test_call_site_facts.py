"""What the caller knows about an argument holds for the parameter it fills, and a call in an
assert's message runs only on the path where the assert fails (which raises)."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_call_in_an_assert_message_runs_only_when_the_assert_fails(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def loop():
            while True:
                owners = torch.ones(4, device="cuda")
                assert owners.numel() == 4, f"bad owners {owners.tolist()}"
                assert owners.numel() > 0, owners.cpu()
                total = owners.sum().item()  # expect
                dist.all_reduce(owners)
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_none_test_on_the_argument_holds_for_the_parameter(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        _endpoint = None

        def make(endpoint=None, bind=True):
            if endpoint is None:
                time.sleep(1)
                return
            if bind:
                open("x")
            subprocess.run(["connect"])  # expect

        def send():
            if _endpoint is None:
                return
            make(_endpoint, bind=False)

        def loop():
            while True:
                send()
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_facts_on_an_arguments_attributes_hold_for_the_parameters(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Kind:
            IDLE = 0
            EXTEND = 1

        def run_idle(batch):
            if batch.kind == Kind.EXTEND:
                torch.cuda.synchronize()
            return batch

        def run_any(batch):
            if batch.kind == Kind.EXTEND:
                torch.cuda.synchronize()  # expect

        def loop(work):
            while True:
                if work.kind == Kind.IDLE:
                    run_idle(work)
                run_any(work)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
