"""OpenPiton's P-Mesh as a user of the toolkit meets it: the spec checked
from the CLI and the API, and run on the OpenPiton platform under the
random tester and mutation coverage."""

from __future__ import annotations

import json

import ccsim
from ccsim import protocol
from conftest import run_cli


def test_checked_from_the_cli_and_the_api():
    r = run_cli("protocol", "check", "pmesh", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["verified"] is True
    assert (rep["reachable_states"], rep["system_transitions"]) == (92_300, 376_320)
    assert rep["config"]["instances"] == {"l15": 3}
    assert protocol.check("pmesh", instances={"l15": 2}).reachable_states == 2_694


def test_the_random_tester_on_openpiton():
    r = ccsim.simulate("openpiton", system="pmesh", ops=40_000, lines=4, seed=5)
    m = r["metrics"]
    assert m["violations"] == 0 and m["reference_mismatches"] == 0
    assert m["ops"] == 3 * 40_000


def test_mutation_coverage_on_openpiton():
    df = ccsim.mutation_coverage("openpiton", system="pmesh", seeds=3, ops=1000)
    assert len(df) == 235 and (df["checker"] == "caught").sum() == 214
    # The escapes are the 21 checker survivors tests/pmesh.rs pins as benign
    # (an eviction kept, E for M, an L2 in S listing nobody serving like I);
    # the random tester finds nothing wrong with them either.
    escaped = set(df.loc[~df["caught"], "mutant"])
    assert len(escaped) == 21
    assert escaped == {
        "retarget l15: (S, evict): I -> S",
        "retarget l15: (E, load): E -> M",
        "retarget l15: (E, load_noshare): E -> M",
        "retarget l15: (IS_D, DATA_ACK_E): E -> M",
        "retarget l2: (I, LOAD_NOSHARE_REQ): I -> S",
        "retarget l2: (I, SWAPWB_REQ): I -> S",
        "retarget l2: (I, WB_REQ): I -> S",
        "drop-action l2: (S, SWAPWB_REQ [other_sharers]): clear_sharers",
        "retarget l2: (S, SWAPWB_REQ [no_other_sharers]): I -> S",
        "drop-action l2: (S, SWAPWB_REQ [no_other_sharers]): clear_sharers",
        "drop-action l2: (S, STORE_REQ [other_sharers]): clear_sharers",
        "drop-action l2: (S, STORE_REQ [no_other_sharers]): clear_sharers",
        "drop-action l2: (O, SWAPWB_REQ [not_from_owner]): clear_owner",
        "retarget l2: (O, SWAPWB_REQ [from_owner]): I -> S",
        "drop-action l2: (O, SWAPWB_REQ [from_owner]): clear_owner",
        "drop-action l2: (O, STORE_REQ [not_from_owner]): clear_owner",
        "retarget l2: (O, WB_REQ [from_owner]): I -> S",
        "drop-action l2: (O, WB_REQ [from_owner]): clear_owner",
        "retarget l2: (WS_A, INV_FWDACK [last_ack]): I -> S",
        "retarget l2: (WO_A, STORE_FWDACK): I -> S",
        "retarget l2: (WO_A, STORE_FWDACK_DATA): I -> S",
    }
