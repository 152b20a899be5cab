"""A node's GPUs for the course gate (harness/gate/course.py): which GPUs, and who may use one when.

    gpus = select_gpus("all")            every GPU nvidia-smi lists: Gpu(index, name, uuid)
    gpus = select_gpus("0,1")            those indices
    run_on_gpus(items, gpus, jobs, work)  work(item, gpu, lock) for every item, `jobs` at a time per GPU

Each GPU has a GpuLock. A stage that needs the GPU to itself (the catalog's "exclusive" stages: the
timed train stage, and the contract stage, which reads the device's free memory) takes it alone: no
other stage runs on that GPU meanwhile, and a waiting exclusive stage holds back new shared ones so it
is not starved. The other stages share the GPU, up to `jobs` at once, one submission per worker; the
compute-sanitizer runs share it too, but queue for its sanitizer slots (one by default): one queue
of sanitized runs per GPU, beside the other submissions' unsanitized stages. A child runs with CUDA_VISIBLE_DEVICES set to its GPU's UUID, so it sees
that GPU alone (as device 0). `jobs` is per GPU: on one GPU it keeps its old meaning, submissions
gated at once, and their timed stages are undisturbed by each other.
"""
from __future__ import annotations

import queue
import shutil
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from spec.files import InputError

# Sanitized runs at once on one GPU. compute-sanitizer runs from separate processes time-slice the
# GPU rather than share it (four racechecks side by side took four times one on the H200), so one
# at a time keeps each run's limit honest and loses nothing (docs/PERFLOG.md: the measurement of one
# against two).
SANITIZER_SLOTS = 1


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str

    def env(self) -> dict[str, str]:
        """The environment a child on this GPU gets on top of ours."""
        return {"CUDA_VISIBLE_DEVICES": self.uuid}

    def record(self) -> dict:
        return asdict(self)


def list_gpus() -> list[Gpu]:
    """Every GPU nvidia-smi lists (index, name, UUID); [] without nvidia-smi or a GPU."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=index,name,uuid", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.stdout.splitlines() if out.returncode == 0 else []:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isascii() and parts[0].isdigit():
            gpus.append(Gpu(int(parts[0]), parts[1], parts[2]))
    return gpus


def select_gpus(spec: str | None, available: list[Gpu] | None = None) -> list[Gpu]:
    """--gpus: "all" (the default) or comma-separated indices of `available` (list_gpus()). No GPU at
    all is not an error here: the gate then runs where CUDA says there is none and each submission's
    first stage says so. A bad or unknown index is an InputError."""
    available = list_gpus() if available is None else list(available)
    text = "all" if spec is None else str(spec).strip()
    if text == "all":
        return available
    by_index = {g.index: g for g in available}
    chosen: list[Gpu] = []
    for item in text.split(","):
        item = item.strip()
        if not (item.isascii() and item.isdigit()):
            raise InputError(f"error: --gpus {spec!r}: expected 'all' or comma-separated GPU indices")
        i = int(item)
        if i not in by_index:
            have = ", ".join(str(g.index) for g in available) or "none"
            raise InputError(f"error: --gpus {spec!r}: no GPU {i} (nvidia-smi lists: {have})")
        if by_index[i] in chosen:
            raise InputError(f"error: --gpus {spec!r}: GPU {i} named twice")
        chosen.append(by_index[i])
    return chosen


class GpuLock:
    """Shared or exclusive use of one GPU; a waiting exclusive user blocks new shared ones. A
    compute-sanitizer run (sanitizer()) is a shared user that also holds one of the GPU's
    `sanitizer_slots` (default SANITIZER_SLOTS): sanitized runs queue for the GPU while other
    submissions' unsanitized stages run beside them."""

    def __init__(self, sanitizer_slots: int | None = None) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0
        self._sanitizers = threading.Semaphore(sanitizer_slots or SANITIZER_SLOTS)

    @contextmanager
    def sanitizer(self):
        with self._sanitizers, self.stage(False):
            yield

    @contextmanager
    def stage(self, exclusive: bool):
        with self._cond:
            if exclusive:
                self._waiting_exclusive += 1
                self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
                self._waiting_exclusive -= 1
                self._exclusive = True
            else:
                self._cond.wait_for(lambda: not self._exclusive and self._waiting_exclusive == 0)
                self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                if exclusive:
                    self._exclusive = False
                else:
                    self._shared -= 1
                self._cond.notify_all()


def run_on_gpus(items: list, gpus: list[Gpu | None], jobs: int, work, sanitizer_slots: int | None = None) -> list:
    """work(item, gpu, lock) for every item, in `jobs` workers per GPU pulling from one queue (an
    item goes to whichever GPU frees a worker first); results in the items' order. `gpus` empty:
    one pseudo-GPU None (the children then see whatever CUDA sees)."""
    gpus = list(gpus) or [None]
    locks = {id(g): GpuLock(sanitizer_slots) for g in gpus}
    todo: queue.Queue = queue.Queue()
    for k, item in enumerate(items):
        todo.put((k, item))
    results: list = [None] * len(items)
    errors: list[BaseException] = []

    def worker(gpu):
        while True:
            try:
                k, item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[k] = work(item, gpu, locks[id(gpu)])
            except BaseException as exc:  # noqa: BLE001 - re-raised below, after every worker stopped
                errors.append(exc)
                return

    threads = [threading.Thread(target=worker, args=(g,), daemon=True) for g in gpus for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
