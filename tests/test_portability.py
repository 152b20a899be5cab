"""Every GPU runs the main job (issue 16): each path's fit to a device's limits (build/mlp_fit,
the binary's own fit logic, cuda/paths/path_fit.h), the MLP_CAP_* testing caps and their checking,
README's path table, harness/studies/portability.py; and, on a GPU, the main job under the T4 and L4
caps."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from harness.studies import arch_resources as ar
from harness.studies import portability as pt
from spec.files import BUILD_DIR, ROOT

FIT = BUILD_DIR / "mlp_fit"
TRAIN = BUILD_DIR / "mlp_train"
KB = 1024
H200 = ["--cc", "90", "--sms", "132", "--smem-per-block", str(227 * KB), "--smem-per-sm", str(228 * KB),
        "--reserved", "1024", "--threads-per-sm", "2048", "--max-blocks-per-sm", "32", "--clusters", "1"]


def fit(args, env=None):
    out = subprocess.run([str(FIT), *args], capture_output=True, text=True,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("MLP_CAP_")}, **(env or {})})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def stationary_smem(skipped):
    """{"<8,16>": bytes, ...}: each stationary shape's shared memory per block, as its label in
    mlp_fit's skip message gives it (the kernel's Cfg owns the number)."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"(<\d+,\d+>): \d+ clusters of \d+ \((\d+) B shared/block\)", skipped or "")}


def arch(a, sms=None):
    return ar.fit_args(ar.ARCHS[a], sms or ar.EXAMPLE_GPUS[a][1])


# ---- the fit on each class's limits -------------------------------------------------------------
def test_t4_persistent_takes_the_512_chunk_persistent2_and_stationary_skip():
    f = fit(arch("sm_75"))
    for p in ("unfused", "fused", "graph"):
        assert f[p]["skipped"] is None and f[p]["config"]
    assert f["persistent"] == {"config": "K chunk 512 (65536 B shared/block)", "skipped": None}
    assert f["persistent2"]["config"] is None
    assert f["persistent2"]["skipped"] == "73728 B shared memory per block > 65536"
    assert f["stationary"]["skipped"] == "needs compute capability 9.0, device has 7.5"


def test_l4_runs_the_shipped_persistent_kernels():
    f = fit(arch("sm_89"))
    assert f["persistent"]["config"] == "K chunk 1024 (100352 B shared/block)"
    assert f["persistent2"]["config"] == "73728 B shared/block"
    assert "compute capability 9.0" in f["stationary"]["skipped"]


def test_h200_runs_every_path_in_its_shipped_configuration():
    f = fit(H200)
    assert f["persistent"]["config"] == "K chunk 1024 (100352 B shared/block)"
    assert f["stationary"]["config"].startswith("<8,16>: 16 clusters of 8")  # SM bound; the device's answer may lower it


def test_rtx50_stationary_is_skipped_for_its_shared_memory():
    f = fit(arch("sm_120"))
    s = f["stationary"]["skipped"]
    need = stationary_smem(s)
    assert list(need) == ["<8,16>", "<8,20>", "<4,12>"], s
    assert all(b > 101376 and f"{b} B shared memory per block > 101376" in s for b in need.values()), s


def test_stationary_falls_back_then_skips_by_cluster_count():
    # 104 SMs hold 13 clusters of 8 but not 16: <8,20>; 100 SMs: 25 clusters of 4 hold 22: <4,12>
    assert fit(H200[:2] + ["--sms", "104"] + H200[4:])["stationary"]["config"].startswith("<8,20>")
    assert fit(H200[:2] + ["--sms", "100"] + H200[4:])["stationary"]["config"].startswith("<4,12>")
    s = fit(H200[:2] + ["--sms", "87"] + H200[4:])["stationary"]["skipped"]
    assert "22 co-resident clusters of 4 needed (88 SMs), 21 fit (87 SMs)" in s
    assert "13 co-resident clusters of 8 needed (104 SMs), 10 fit (87 SMs)" in s


def test_threads_per_sm_and_cooperation_limits_are_checked():
    f = fit(H200[:-6] + ["--threads-per-sm", "128", "--max-blocks-per-sm", "32", "--clusters", "1"])
    assert "1 block(s) of 256 threads" in f["persistent"]["skipped"] and "0 fit" in f["persistent"]["skipped"]
    assert "256 threads" in f["fused"]["skipped"]


# ---- the caps ---------------------------------------------------------------------------------------
def test_caps_lower_the_limits_and_are_recorded():
    caps = {"MLP_CAP_SMS": "40", "MLP_CAP_SMEM_PER_BLOCK": "65536", "MLP_CAP_THREADS_PER_SM": "1024"}
    f = fit(H200 + ["--caps-from-env"], caps)
    lim = f["device_limits"]
    assert (lim["sms"], lim["smem_per_block_optin"], lim["threads_per_sm"]) == (40, 65536, 1024)
    assert lim["capped"] == {k: int(v) for k, v in caps.items()}
    assert lim["smem_per_sm"] == 65536 + 1024  # the per-block cap plus the system's reserve
    assert f["persistent"]["config"].startswith("K chunk 512")
    s = f["stationary"]["skipped"]
    assert f"{stationary_smem(s)['<8,16>']} B shared memory per block > 65536" in s
    s = fit(H200 + ["--caps-from-env"], {"MLP_CAP_SMS": "40"})["stationary"]["skipped"]
    assert "13 co-resident clusters of 8 needed (104 SMs), 5 fit (40 SMs)" in s  # clusters bounded by capped SMs
    # A cap above the device's own value changes nothing; the CC cap removes clusters below 9.0.
    f = fit(H200 + ["--caps-from-env"], {"MLP_CAP_SMS": "1000", "MLP_CAP_CC": "89"})
    assert f["device_limits"]["sms"] == 132 and f["device_limits"]["clusters"] is False
    assert f["stationary"]["skipped"] == "needs compute capability 9.0, device has 8.9"
    assert fit(H200 + ["--caps-from-env"])["device_limits"]["capped"] == {}


@pytest.mark.parametrize("name,value", [("MLP_CAP_SMS", "abc"), ("MLP_CAP_SMS", "0"), ("MLP_CAP_SMS", "-4"),
                                        ("MLP_CAP_SMEM_PER_BLOCK", "64K"), ("MLP_CAP_THREADS_PER_SM", ""),
                                        ("MLP_CAP_CC", "7.5"), ("MLP_CAP_SMEM_PER_BLOCK", "99999999999999")])
def test_a_malformed_cap_is_bad_input(name, value):
    out = subprocess.run([str(FIT), *H200, "--caps-from-env"], capture_output=True, text=True,
                         env={**os.environ, name: value})
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and "expected a decimal integer" in lines[0]


def test_mlp_train_rejects_a_malformed_cap_before_the_gpu(tmp_path, built):
    built("mlp_train")
    out = subprocess.run([str(TRAIN), "--data", str(ROOT / "data"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "MLP_CAP_SMS": "forty"},
                         timeout=300)
    assert out.returncode == 2, out.stderr
    assert "MLP_CAP_SMS='forty'" in out.stderr and "CUDA" not in out.stderr
    assert not (tmp_path / "out").exists()


# ---- README's table ---------------------------------------------------------------------------------
def test_readme_path_table_is_the_fit_tools_output():
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- paths-table:start -->\n(.*?)<!-- paths-table:end -->", text, re.S)
    assert m, "README.md lost its paths-table markers"
    assert m.group(1) == ar.path_table(FIT), "README's path table is stale: python -m harness.studies.arch_resources --paths-table"
    assert ar.EXAMPLE_GPUS.keys() == ar.ARCHS.keys()


# ---- harness/studies/portability.py -------------------------------------------------------------------------
def test_portability_classes_are_the_issues_limits():
    assert pt.CLASSES["t4"] == {"MLP_CAP_SMS": 40, "MLP_CAP_SMEM_PER_BLOCK": 65536, "MLP_CAP_THREADS_PER_SM": 1024}
    assert pt.CLASSES["l4"] == {"MLP_CAP_SMS": 58, "MLP_CAP_SMEM_PER_BLOCK": 99 * KB, "MLP_CAP_THREADS_PER_SM": 1536}
    env = pt.cap_env("t4", {"PATH": "/bin", "MLP_CAP_CC": "75"})
    assert env == {"PATH": "/bin", "MLP_CAP_SMS": "40", "MLP_CAP_SMEM_PER_BLOCK": "65536",
                   "MLP_CAP_THREADS_PER_SM": "1024"}


def test_portability_unknown_class_is_bad_input(capsys):
    assert pt.main(["--classes", "t4,a100"]) == 2
    assert "--classes 't4,a100'" in capsys.readouterr().err


# ---- on a GPU: the main job under each class's caps -------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("cls", ["t4", "l4"])
def test_main_job_under_smaller_gpus_limits(cls, tmp_path, built):
    built("mlp_train")
    rc = pt.run_class(cls, tmp_path, report=True, extra_args=("--reference", "shipped"))
    dest = tmp_path / cls
    log = (dest / "run.log").read_text()
    assert rc == 0, log[-3000:]
    assert "gate: PASS" in log
    doc = json.loads((dest / "run.json").read_text())
    lim = doc["device_limits"]
    assert lim["capped"] == pt.CLASSES[cls]
    assert lim["sms"] == pt.CLASSES[cls]["MLP_CAP_SMS"]
    assert lim["smem_per_block_optin"] <= pt.CLASSES[cls]["MLP_CAP_SMEM_PER_BLOCK"]
    paths = doc["paths"]
    assert "skipped" not in paths["fused"] and paths["fused"]["passed"] is True
    for name, p in paths.items():
        assert p.get("passed") is True or p.get("skipped"), (name, p)
        if p.get("skipped"):
            assert f"path {name}: skipped: {p['skipped']}" in log
            assert p["median_ms"] is None and p["config"] is None
    if cls == "t4":
        assert paths["persistent"]["config"].startswith("K chunk 512")
    else:
        assert paths["persistent"]["config"].startswith("K chunk 1024")
    assert "shared memory per block >" in paths["stationary"]["skipped"]
    assert (dest / "RESULTS.md").is_file() and "skipped" in (dest / "RESULTS.md").read_text()


def test_a_class_run_that_does_not_finish_replaces_nothing(tmp_path, built):
    """A bad flag (exit 2 on any machine; no GPU ends the same way): the committed class folder stays
    byte for byte, this run's log goes to a failed/ folder (results/failed/ for the committed classes,
    git-ignored; issue 28: a failed run destroys no evidence)."""
    built("mlp_train")
    import hashlib
    shutil.copytree(ROOT / "results" / "portability", tmp_path / "p")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((tmp_path / "p").rglob("*")) if p.is_file()}
    rc = pt.run_class("t4", tmp_path / "p", report=True, extra_args=("--bogus",))
    assert rc == 2
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((tmp_path / "p").rglob("*"))
             if p.is_file() and "failed" not in p.relative_to(tmp_path / "p").parts}
    assert after == before
    assert "--bogus" in (tmp_path / "p" / "failed" / "t4" / "run.log").read_text()
    assert not (tmp_path / "p" / "t4.new").exists()
