"""A node's GPUs for the course gate (harness/gate/course.py): which GPUs, and who may use one when.

    gpus = select_gpus("all")            every GPU nvidia-smi lists: Gpu(index, name, uuid)
    gpus = select_gpus("0,1")            those indices
    run_on_gpus(items, gpus, jobs, work)  work(item, gpu, lock) for every item, `jobs` at a time per GPU
                                         (items: a list, or an iterable that yields them as they are
                                         ready, e.g. as their builds finish)

Each GPU has a GpuLock. A stage that needs the GPU to itself (the catalog's "exclusive" stages: the
timed train stage, and the contract stage, which reads the device's free memory) takes it alone for
its work: its child starts as a shared user and, once its own start is done, becomes the exclusive one
(to_exclusive, through cuda/cli/gpu_section.h's handshake: harness/gate/child.py run_child), then
shares the GPU again for its exit (to_shared). No other stage runs on that GPU meanwhile, and a
waiting exclusive user holds back new shared ones so it is not starved. The other stages share the GPU, up to `jobs` at once, one submission per worker; the
compute-sanitizer runs share it too, but queue for the GPU's slots of their tool (SANITIZER_SLOTS:
one racecheck and one memcheck at a time by default): a queue of sanitized runs per tool and GPU,
beside the other submissions' unsanitized stages. A child runs with CUDA_VISIBLE_DEVICES set to its GPU's UUID, so it sees
that GPU alone (as device 0). `jobs` is per GPU: on one GPU it keeps its old meaning, submissions
gated at once, and their timed stages are undisturbed by each other.
"""
from __future__ import annotations

import shutil
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from spec.files import InputError

# Sanitized runs at once on one GPU, per tool. compute-sanitizer runs from separate processes
# time-slice the GPU rather than share it (four racechecks side by side took four times one on the
# H200), so one racecheck at a time keeps each run's limit honest and loses little; a memcheck run is
# mostly its own start (about 1 s, a few ms of instrumented kernels), so it runs beside a racecheck
# rather than queueing behind one (docs/PERFLOG.md: the course benchmark's measurements).
SANITIZER_SLOTS = {"memcheck": 1, "racecheck": 1}


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
    compute-sanitizer run (sanitizer(tool)) is a shared user that also holds one of the GPU's
    slots of its tool (`sanitizer_slots` over SANITIZER_SLOTS): sanitized runs queue for the GPU
    while other submissions' unsanitized stages run beside them."""

    def __init__(self, sanitizer_slots: dict[str, int] | None = None) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0
        slots = {**SANITIZER_SLOTS, **(sanitizer_slots or {})}
        self._sanitizers = {tool: threading.Semaphore(n) for tool, n in slots.items()}

    @contextmanager
    def sanitizer(self, tool: str):
        """A compute-sanitizer run of `tool`: one of its slots, and the GPU shared."""
        with self._sanitizers[tool], self.stage(False):
            yield

    def to_exclusive(self, cancel: threading.Event | None = None) -> bool:
        """A shared user (inside stage(False)) becomes the exclusive one: it waits as an exclusive
        stage waits (new shared users held back) until no one else uses the GPU. False, and still
        shared, when `cancel` is set first (its child ended). A child's GPU section
        (harness/gate/child.py run_child) calls it; to_shared gives it back."""
        with self._cond:
            self._shared -= 1
            self._cond.notify_all()
            if self._take_exclusive(cancel):
                return True
            self._shared += 1
            self._cond.notify_all()
            return False

    def to_shared(self) -> None:
        """The exclusive user (after to_exclusive) shares the GPU again, still inside its stage(False)."""
        with self._cond:
            self._exclusive = False
            self._shared += 1
            self._cond.notify_all()

    def _take_exclusive(self, cancel: threading.Event | None = None) -> bool:
        """With the condition held: wait, counted as a waiting exclusive user (new shared users held
        back), until no one uses the GPU, then be its exclusive user; False when `cancel` is set first."""
        self._waiting_exclusive += 1
        try:
            while self._exclusive or self._shared:
                if cancel is not None and cancel.is_set():
                    return False
                self._cond.wait(0.2 if cancel is not None else None)
            self._exclusive = True
            return True
        finally:
            self._waiting_exclusive -= 1

    @contextmanager
    def stage(self, exclusive: bool):
        with self._cond:
            if exclusive:
                self._take_exclusive()
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


def run_on_gpus(items, gpus: list[Gpu | None], jobs: int, work, sanitizer_slots: dict[str, int] | None = None) -> list:
    """work(item, gpu, lock) for every item, in `jobs` workers per GPU pulling from one source (an
    item goes to whichever GPU frees a worker first); results in the order the items came. `items`:
    a list, or an iterable that yields them as they become ready (a worker waits on it; the builds of
    a course feed the gating this way). `gpus` empty: one pseudo-GPU None (the children then see
    whatever CUDA sees)."""
    gpus = list(gpus) or [None]
    locks = {id(g): GpuLock(sanitizer_slots) for g in gpus}
    source = enumerate(items)
    take = threading.Lock()
    results: dict[int, object] = {}
    errors: list[BaseException] = []

    def worker(gpu):
        while not errors:
            with take:
                try:
                    k, item = next(source)
                except StopIteration:
                    return
                except BaseException as exc:  # noqa: BLE001 - the source failed: re-raised below
                    errors.append(exc)
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
    return [results[k] for k in sorted(results)]
