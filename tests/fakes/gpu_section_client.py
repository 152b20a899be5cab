"""The child's side of cuda/cli/gpu_section.h for the stand-in programs of the tests (tests/fakes/
staged_mlp_train.py, tests/test_gpu_section.py's CHILD): the descriptors of MLP_GATE_SECTION_FDS,
"ready" and the scheduler's one-line answer, "done"."""
import os


def fds() -> tuple[int, int] | None:
    """(W, R) from MLP_GATE_SECTION_FDS, None when unset."""
    v = os.environ.get("MLP_GATE_SECTION_FDS")
    return tuple(int(x) for x in v.split(",")) if v else None


def ready(w: int, r: int) -> str:
    """Writes "ready" and waits for the answer line ("" when the scheduler went away)."""
    os.write(w, b"ready\n")
    answer = b""
    while not answer.endswith(b"\n"):
        got = os.read(r, 1)
        if not got:
            break
        answer += got
    return answer.decode().strip()


def done(w: int) -> None:
    os.write(w, b"done\n")
