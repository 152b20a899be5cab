"""The Nsight Compute CSV readers on real H200 pages (tests/fixtures/ncu: copies of
results/ncu/*_details.csv and *_raw.csv from harness/ncu_counters.sh) and variants derived from them."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.ncu_csv import NcuCsvError, parse_number, read_counters, read_details, read_stalls

FIX = Path(__file__).parent / "fixtures" / "ncu"


def test_details_of_the_persistent_kernel():
    [k] = read_details(FIX / "persistent_details.csv")
    assert k["kernel"] == "k_persistent_epoch"
    m = k["metrics"]
    # The launch the persistent path declares: one block of 256 threads per SM of the H200.
    assert m["grid"] == "132" and m["block"] == "256"
    assert m["registers/thread"].endswith("register/thread")
    assert 0 < parse_number(m["achieved occupancy"].split()[0]) <= 100
    assert m["duration"].split()[1] in ("ms", "us", "ns")


def test_two_kernels_of_the_fused_path_in_id_order():
    ks = read_details(FIX / "fused_details.csv")
    assert [k["kernel"] for k in ks] == ["k_fwd_hidden_bias_relu", "k_dW1"]
    assert [k["id"] for k in ks] == [0, 1]


def test_stall_shares_sum_to_one_and_leave_out_the_not_issued_twins():
    stalls = read_stalls(FIX / "persistent_raw.csv")[0]
    assert abs(sum(s for _, _, s in stalls) - 1) < 1e-9
    assert all(not r.endswith("not_issued") for r, _, _ in stalls)
    assert [n for _, n, _ in stalls] == sorted((n for _, n, _ in stalls), reverse=True)
    # Cross-check one count against the raw column directly.
    df = pd.read_csv(FIX / "persistent_raw.csv", dtype=str, low_memory=False)
    top, n, _ = stalls[0]
    assert parse_number(df.loc[1, f"smsp__pcsamp_warps_issue_stalled_{top}"]) == n


def test_counters_without_a_raw_page_have_no_stalls(tmp_path):
    ks = read_counters(FIX / "fused_details.csv", tmp_path / "absent.csv")
    assert all(k["stalls"] == [] for k in ks)


def test_a_missing_metric_is_left_out(tmp_path):
    df = pd.read_csv(FIX / "persistent_details.csv", dtype=str, keep_default_na=False)
    df = df[df["Metric Name"] != "L2 Hit Rate"]
    p = tmp_path / "d.csv"
    df.to_csv(p, index=False)
    [k] = read_details(p)
    assert "L2 hit rate" not in k["metrics"] and "grid" in k["metrics"]


@pytest.mark.parametrize("text, reader, words", [
    ("a,b\n1,2\n", read_details, "no column"),
    ("ID,Kernel Name\n0,k\n", read_stalls, "warp-state samples"),
])
def test_wrong_pages_are_named(tmp_path, text, reader, words):
    p = tmp_path / "x.csv"
    p.write_text(text)
    with pytest.raises(NcuCsvError, match=words):
        reader(p)
