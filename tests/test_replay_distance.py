"""CPU: case 13's replay comparison (cuda/gate/replay_distance.h), compiled here with g++: a replay equal
to the eager run is distance 0 and a differing one its relative distance; non-finite values at the same
places in both runs (an output never written, a NaN computed) are not blamed on another stream, while
a value finite in one run and not in the other, or non-finite of another kind, is infinitely far
(issue 40: a submission whose eager forward wrote nothing was reported as "another stream ...
distance inf")."""
from __future__ import annotations

import math
import subprocess

import pytest

from spec.files import ROOT

DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "gate/replay_distance.h"
// argv: two comma-separated lists of floats (nan, inf, -inf allowed): replay, eager
std::vector<float> parse(const char* s) {
  std::vector<float> v;
  std::string t(s);
  size_t a = 0;
  while (a <= t.size()) {
    size_t b = t.find(',', a);
    std::string x = t.substr(a, b == std::string::npos ? std::string::npos : b - a);
    v.push_back(std::strtof(x.c_str(), nullptr));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return v;
}
int main(int argc, char** argv) {
  std::vector<float> r = parse(argv[1]), e = parse(argv[2]);
  std::printf("%.17g %zu\n", gate::replay_distance(r, e), gate::non_finite_count(e));
}
"""


@pytest.fixture(scope="module")
def distance(tmp_path_factory):
    d = tmp_path_factory.mktemp("replay")
    (d / "driver.cpp").write_text(DRIVER)
    subprocess.run(["g++", "-O1", "-std=c++17", "-I", str(ROOT / "cuda"), str(d / "driver.cpp"), "-o",
                    str(d / "driver")], check=True)

    def go(replay, eager):
        out = subprocess.run([str(d / "driver"), replay, eager], capture_output=True, text=True, check=True).stdout
        dist, bad = out.split()
        return float(dist), int(bad)
    return go


def test_equal_and_differing_finite_runs(distance):
    assert distance("1,2,3", "1,2,3") == (0.0, 0)
    dist, _ = distance("1,2,3.5", "1,2,3")
    assert dist == pytest.approx(0.5 / math.sqrt(14), rel=1e-12)


def test_non_finite_at_the_same_places_is_not_another_stream(distance):
    assert distance("nan,nan,nan", "nan,nan,nan") == (0.0, 3)      # an output never written: poison both times
    assert distance("1,nan,inf", "1,nan,inf") == (0.0, 2)
    dist, bad = distance("1.0001,nan", "1,nan")
    assert dist == pytest.approx(1e-4, rel=1e-3) and bad == 1


@pytest.mark.parametrize("replay, eager", [("1,nan", "1,2"), ("1,2", "1,nan"), ("nan,1", "inf,1"),
                                           ("inf,1", "-inf,1"), ("1,2", "1,2,3")])
def test_a_value_that_differs_in_kind_is_infinitely_far(distance, replay, eager):
    assert math.isinf(distance(replay, eager)[0])
