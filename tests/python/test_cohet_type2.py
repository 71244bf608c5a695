"""The CXL type-2 bias experiment (`cohet-type2-bias`), driven as a user
drives it: the API's quick sweep, with the orderings the mechanisms imply
(the device's own loads are faster in device bias; a host load's flip of a
line the device's cache holds dirty costs more than one it does not), and
no paper value anywhere (every point a prediction)."""

from __future__ import annotations

import pytest

import ccsim

EXP = "cohet-type2-bias"


@pytest.fixture(scope="module")
def quick():
    return ccsim.reproduce(EXP, quick=True)


def at(df):
    return {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}


def test_device_loads_are_faster_in_device_bias(quick):
    v = at(quick.df)
    for s in ["device_load", "device_load_current"]:
        assert v[(s, 1.0)] < v[(s, 0.0)] - 2 * 210.4, (s, v[(s, 1.0)], v[(s, 0.0)])


def test_a_host_loads_flip_costs_only_when_the_device_holds_the_line(quick):
    v = at(quick.df)
    assert v[("host_load", 1.0)] == pytest.approx(v[("host_load", 0.0)], abs=0.01)
    assert v[("host_load_dirty", 1.0)] > v[("host_load", 1.0)]


def test_every_point_is_a_prediction_without_a_paper_value(quick):
    assert quick.df.paper.isna().all()
    assert not (quick.df.role == "calibration").any()
