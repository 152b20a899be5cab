"""The gate's hints for a merged, staged run.json: cuda/gate/hints.cpp's hints_for in Python (the
supervisor merges stages that ran in separate processes, so no one process saw every case), held
to the C++ function case set by case set through `build/mlp_host hints` (tests/test_hints.py),
and the hints of what the supervisor saw happen to a stage (a timeout, a fault)."""
from __future__ import annotations

# cuda/gate/hints.cpp kStage: the entry point to write next when a case is "not implemented".
STAGE = {1: "mlp_forward (stage 1)", 2: "mlp_forward (stage 1)", 3: "mlp_loss (stage 2)",
         4: "mlp_backward (stage 3)", 5: "mlp_step (stage 4)", 6: "mlp_train_epoch (stage 5)",
         7: "mlp_train_epoch (stage 5)", 9: "mlp_train_epoch (stage 5)"}

FORWARD = ("forward: W1 is in x hidden row-major (X.W1), b1 is added per hidden unit, H is stored after the ReLU, "
           "Z = H.W2 + b2")
LOSS = ("loss-extreme: subtract each row's max before exp(), and compute the loss as log(sum exp(z - m)) - "
        "(z_label - m), not -log(softmax): p_label underflows at logits of +-60")
GRAD = ("grad-check: a missing ReLU mask (dH = (dZ.W2^T) * (H > 0)), a bias gradient summed over the wrong axis "
        "(db = column sums over the batch), or dZ without the 1/B")
STEP = "step: v = momentum*v - lr*g first, then p = p + v (check the sign of the update)"
OVERFIT = ("overfit-32 fails while grad-check passes: the ReLU mask or the update's sign (two errors can cancel at "
           "one gradient-check point), or the batch slicing of mlp_train_epoch")
EPOCH = ("epoch-check: the entry points pass but mlp_train_epoch does not match float64 after a few steps: every "
         "tensor updated each step (the step covers all n parameters), the short last batch (its rows, and the mean "
         "over its own size), the velocity carried from the previous step")
GUARD = ("guard-bands: a kernel wrote outside its buffer (an index past a buffer: a grid or bound check off by one); "
         "run `invoke sanitize` (memcheck names the kernel and the address)")
TRAIN = "train: if accuracy moved after fusing an epilogue, suspect a race (run `invoke sanitize`); and never time epoch 0"

# What the supervisor saw (harness/gate/supervisor.py prints and records these).
TIMEOUT = ("timeout: a kernel spinning on a flag no one sets, or a grid that does not cover the data (a loop that "
           "waits for work that never comes)")
FAULT = ("an illegal address or a fault usually means an index past a buffer: run `invoke sanitize` (memcheck names "
         "the kernel and the address)")


def hints_for(cases: list[dict]) -> list[str]:
    """cuda/gate/hints.cpp hints_for: the first case id's verdict counts; "not implemented" names the
    entry point to write next and nothing else."""
    first = {}
    for c in cases:
        first.setdefault(c.get("id"), c)

    def failed(i: int) -> bool:
        return i in first and first[i].get("passed") is not True

    def stub(i: int) -> bool:
        return i in first and "not implemented" in str(first[i].get("detail", ""))

    for i in (1, 2, 3, 4, 5, 6, 7, 9):
        if stub(i):
            return [f"case {i} is not implemented yet: write {STAGE[i]} next"]
    h = []
    if failed(1) or failed(2):
        h.append(FORWARD)
    if failed(3):
        h.append(LOSS)
    if failed(4):
        h.append(GRAD)
    if failed(5):
        h.append(STEP)
    if failed(6) and not failed(4):
        h.append(OVERFIT)
    if failed(9) and not failed(4) and not failed(5):
        h.append(EPOCH)
    if failed(10):
        h.append(GUARD)
    if failed(7):
        h.append(TRAIN)
    return h


def for_ending(ended: str) -> str | None:
    """The hint for how a stage ended: "timed out after N s" (TIMEOUT), "died: SIGSEGV" or "CUDA
    error: cudaErrorX" (FAULT); None for anything else (exited 0 or 1, or another status)."""
    if ended.startswith("timed out"):
        return TIMEOUT
    if ended.startswith(("died", "CUDA error")):
        return FAULT
    return None
