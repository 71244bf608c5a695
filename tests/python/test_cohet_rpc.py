"""The RPC (de)serialization offload experiment (`cohet-rpc`, Cohet Fig.
18), driven as a user drives it: the API's quick sweep and the CLI, with
the orderings the mechanisms imply (CXL.mem serialization beats RpcNIC on
every bench; the RPC prefetcher never slows CXL.cache down by more than 1%,
and gains little on bench2 on a server's recycled heap; RpcNIC's copy
makes the CXL-NIC's deserialization faster; RpcNIC's copy engine and its
copy's per-field work cost the many-field bench2 more than bench1;
bench2's serialization over CXL.cache is its chains of dependent reads,
which neither gem5 Ruby's prefetcher on the recycled heap nor the 1.5 GHz
ASIC hides), every paper value a prediction, and the claims' verdicts as
the file declares them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ccsim

EXP = "cohet-rpc"


@pytest.fixture(scope="module")
def quick():
    return ccsim.reproduce(EXP, quick=True)


def at(df):
    return {(s, x): v for s, x, v in zip(df.series, df.x, df.sim)}


def test_quick_runs_the_three_benches_the_text_names(quick):
    assert sorted(set(quick.df.x)) == [1.0, 2.0, 5.0]
    v = at(quick.df)
    for x in [1.0, 2.0, 5.0]:
        assert v[("parity", x)] == pytest.approx(1.0)
        assert v[("serialize_cxl_mem", x)] > 1.5
        # The prefetcher slows CXL.cache down by at most 1% (on bench1's
        # small flat messages its prefetches find nothing and share the
        # link: -0.3%).
        assert v[("serialize_cxl_cache_prefetch", x)] >= 0.99 * v[("serialize_cxl_cache", x)]
        # Deserialization: the CXL-NIC faster once RpcNIC pays its head DMA
        # and its copy; used in place, RpcNIC within a factor of two either
        # way (the head's push waits for the fields' GOs).
        assert 1.1 < v[("deserialize", x)] < 3.0
        assert 0.5 < v[("deserialize_no_copy", x)] < v[("deserialize", x)]
        # Construction through CXL.mem: slower than in host memory, by
        # about the text's 8% at most (bench1's small messages 7.2%).
        assert 1 / 1.10 <= v[("construct_cxl_mem", x)] < 1.0


def test_rpcnics_software_costs_are_mechanisms(quick):
    df = quick.df
    row = lambda s, x: df[(df.series == s) & (df.x == x)].iloc[0]
    for x in [1.0, 2.0, 5.0]:
        d = row("deserialize", x)
        # After its copy the CPU reads the objects from its own L1 and L2:
        # not free, and faster than the LLC hits after the CXL-NIC's pushes.
        assert 0 < d["metric.rpcnic_cpu_access_us"] < d["metric.cpu_access_us"] / 4
    # The copy is a CopyFrom (20 instructions a field) and the copy engine
    # pays per field on the fabric: bench2's ~90 fields cost RpcNIC more
    # than bench1's ~12 in both directions, though bench1 moves more bytes.
    d1, d2 = row("deserialize", 1.0), row("deserialize", 2.0)
    assert d1["metric.wire_bytes"] > d2["metric.wire_bytes"]
    assert d2["metric.fields"] > d1["metric.fields"] * 5
    assert d2["metric.rpcnic_time_us"] > d1["metric.rpcnic_time_us"] * 1.2
    s1, s2 = row("serialize_cxl_mem", 1.0), row("serialize_cxl_mem", 2.0)
    assert s2["metric.rpcnic_time_us"] > s1["metric.rpcnic_time_us"] * 1.3


def test_the_heap_decides_how_much_the_prefetcher_gains_on_bench2(quick):
    # On a fresh heap (and an arena) bench2's chains of only children are
    # consecutive blocks: the stride prefetcher gains 25% or more there. On
    # the server's recycled heap (the default) the blocks come off LIFO
    # free lists in other messages' destruction order: bench2's gain falls
    # under the text's 12% average (Cohet §VI-E: deep nesting limits
    # prefetch effectiveness), though it is still the largest of the three,
    # not the smallest as in the text (the notes say why).
    v = at(quick.df)
    gain = {heap: {x: v[("serialize_cxl_cache_prefetch" + heap, x)] / v[("serialize_cxl_cache" + heap, x)]
                   for x in [1.0, 2.0, 5.0]}
            for heap in ["", "_fresh", "_arena"]}
    # The serializer issues a read once its pointer arrived (by_pointer):
    # a prefetch saves less than with reads in walk order (+25% or more
    # on the fresh heap there, tests/rpc.rs), so +8% or more here.
    for heap in ["_fresh", "_arena"]:
        assert gain[heap][2.0] > 1.08, (heap, gain)
    assert 1.0 < gain[""][2.0] < 1.12, gain
    assert gain[""][2.0] - 1 < (gain["_fresh"][2.0] - 1) / 3, gain
    assert max(gain[""], key=gain[""].get) == 2.0, gain


def test_rpcnics_calibrated_dma_setup_is_paid_per_buffer(quick):
    # Each of RpcNIC's DMAs through the calibrated Cohet DMA path (cohet-dma)
    # makes RpcNIC slower, so every speedup rises; but the setup is paid per
    # 4 KB temp buffer, so bench5's 8 KB messages pay it more often than
    # bench1's 2 KB ones: deserialization's ordering stays the inverse of the
    # text's. Serialization's one H2C DMA pays it once: about 1 us more for
    # RpcNIC on every bench, so CXL.mem keeps bench1 above bench5.
    v = at(quick.df)
    row = lambda s, x: quick.df[(quick.df.series == s) & (quick.df.x == x)].iloc[0]
    for x in [1.0, 2.0, 5.0]:
        assert v[("deserialize_dma_setup", x)] > v[("deserialize", x)] * 1.5
        assert v[("serialize_cxl_mem_dma_setup", x)] > v[("serialize_cxl_mem", x)]
        setup = (row("serialize_cxl_mem_dma_setup", x)["metric.rpcnic_time_us"]
                 - row("serialize_cxl_mem", x)["metric.rpcnic_time_us"])
        assert 0.8 < setup < 1.2, (x, setup)
    assert v[("deserialize_dma_setup", 5.0)] > v[("deserialize_dma_setup", 1.0)]
    assert v[("serialize_cxl_mem_dma_setup", 1.0)] > v[("serialize_cxl_mem_dma_setup", 5.0)]


def test_ddio_and_the_serializers_fetch_order_are_mechanisms(quick):
    # DDIO: RpcNIC's DMA writes land in the LLC, so its CPU's copy loads
    # LLC hits: RpcNIC is faster on every bench, the large ones most, and
    # the CXL-NIC's deserialization gains less, bench1 least (1.07x; 0.96x
    # before RpcNIC's CopyFrom paid its mallocs).
    v = at(quick.df)
    for x in [1.0, 2.0, 5.0]:
        assert v[("deserialize_ddio", x)] < v[("deserialize", x)]
    assert v[("deserialize", 5.0)] - v[("deserialize_ddio", 5.0)] > v[("deserialize", 1.0)] - v[("deserialize_ddio", 1.0)]
    assert v[("deserialize_ddio", 1.0)] < min(v[("deserialize_ddio", x)] for x in [2.0, 5.0])
    # The serializer's reads by pointer beat its reads in walk order on
    # the nested benches; by pointer, against RpcNIC with a copy engine
    # that overlaps its descriptors (fabric), CXL.cache loses on bench2
    # most, whose 13-level chains of dependent reads outlast RpcNIC (with
    # std::strings apart each string adds a level and bench5 loses too,
    # 0.95x).
    for x in [2.0, 5.0]:
        assert v[("serialize_cxl_cache", x)] > 1.15 * v[("serialize_cxl_cache_in_order", x)]
    assert v[("serialize_cxl_cache_inline", 5.0)] > 1.0 > v[("serialize_cxl_cache_fabric", 2.0)]
    assert v[("serialize_cxl_cache_fabric", 2.0)] < 0.8 * v[("serialize_cxl_cache_fabric", 5.0)]


def test_bench2s_serialization_is_its_pointer_levels_and_no_prefetcher_hides_them(quick):
    # What serialization is made of: the CXL-NIC's time is its encoder's
    # cycles plus its stalls for lines, RpcNIC's its pre-serialization, its
    # DMA read and the same encoder. Bench2's few lines a response form the
    # longest chains of dependent reads, one CXL.cache round trip (about
    # 0.6 us) a level.
    df = quick.df
    row = lambda s, x: df[(df.series == s) & (df.x == x)].iloc[0]
    for x in [1.0, 2.0, 5.0]:
        r = row("serialize_cxl_cache", x)
        assert r["metric.cxl_encode_us"] + r["metric.cxl_stall_us"] == pytest.approx(r["metric.time_us"])
        assert (r["metric.rpcnic_preserialize_us"] + r["metric.rpcnic_h2c_us"] + r["metric.rpcnic_encode_us"]
                == pytest.approx(r["metric.rpcnic_time_us"]))
    b1, b2 = row("serialize_cxl_cache", 1.0), row("serialize_cxl_cache", 2.0)
    assert b2["metric.pointer_levels"] > 2 * b1["metric.pointer_levels"]
    assert 0.55 < b2["metric.cxl_last_line_us"] / b2["metric.pointer_levels"] < 0.7
    # At the ASIC the DCOH's and the link's cycles take 400/1500 of their
    # time, the host's part of a level does not: about 0.23 us a level,
    # and CXL.cache beats RpcNIC (whose CPU and copy engine keep their
    # times) on every bench, Bench2 the least.
    asic = row("serialize_cxl_cache_asic", 2.0)
    per_level = b2["metric.cxl_last_line_us"] / b2["metric.pointer_levels"]
    assert per_level * 400 / 1500 < asic["metric.cxl_last_line_us"] / asic["metric.pointer_levels"] < 0.4 * per_level
    asic_speedup = {x: row("serialize_cxl_cache_asic", x)["sim"] for x in [1.0, 2.0, 5.0]}
    assert min(asic_speedup.values()) > 1.0 and min(asic_speedup, key=asic_speedup.get) == 2.0, asic_speedup
    # CXL.mem at the ASIC: the type-2 device's DCOH, cache, crossbar and
    # links run at 1.5 GHz too, its DDR5 does not, so the serializer is
    # faster than at 400 MHz but by less than the clock's ratio; Bench5
    # the smallest speedup, as in the text.
    for x in [1.0, 2.0, 5.0]:
        fpga, asic = row("serialize_cxl_mem", x)["metric.time_us"], row("serialize_cxl_mem_asic", x)["metric.time_us"]
        assert fpga * 400 / 1500 < asic < fpga, (x, fpga, asic)
    mem_asic = {x: row("serialize_cxl_mem_asic", x)["sim"] for x in [1.0, 2.0, 5.0]}
    assert min(mem_asic, key=mem_asic.get) == 5.0 and mem_asic[5.0] > 2.0, mem_asic
    # gem5 Ruby's stream prefetcher on the recycled heap: hardly a prefetch
    # issued before its demand's pointer could arrive, so no gain; on
    # protobuf's Arena (HyperProtoBench's allocation) bench2's chains are
    # strides it learns, and bench2 gains the most, not the least.
    v = at(df)
    for x in [1.0, 2.0, 5.0]:
        assert row("serialize_cxl_cache_prefetch_ruby", x)["metric.prefetches_ahead"] < 0.5
        assert v[("serialize_cxl_cache_prefetch_ruby", x)] == pytest.approx(v[("serialize_cxl_cache", x)], rel=0.02)
    arena = {x: v[("serialize_cxl_cache_prefetch_ruby_arena", x)] / v[("serialize_cxl_cache_arena", x)]
             for x in [1.0, 2.0, 5.0]}
    assert arena[2.0] > 1.1 and max(arena, key=arena.get) == 2.0, arena


def test_rpcnics_copy_engine_pays_a_time_per_descriptor_only_in_gem5s_model(quick):
    # RpcNIC's pre-serialization with DSA (the default: a batch's
    # descriptors overlapped, 96 read buffers) and fabric (the same, 32 lines
    # in flight) against gem5's copy engine (a what-if: one descriptor at a
    # time, about 0.17 us each): the same H2C DMA and encoder, the many-field
    # bench2 (about 72 copied fields) paying most under gem5's; so every
    # CXL-NIC variant gains more over it.
    df = quick.df
    row = lambda s, x: df[(df.series == s) & (df.x == x)].iloc[0]
    v = at(df)
    pre = lambda s, x: row(s, x)["metric.rpcnic_preserialize_us"]
    for x in [1.0, 2.0, 5.0]:
        dsa, fabric, gem5 = (pre("serialize_cxl_cache" + e, x) for e in ["", "_fabric", "_gem5"])
        assert dsa <= fabric < gem5 / 1.5, (x, gem5, fabric, dsa)
        assert row("serialize_cxl_cache", x)["metric.rpcnic_h2c_us"] == pytest.approx(
            row("serialize_cxl_cache_gem5", x)["metric.rpcnic_h2c_us"], rel=0.01)
        for access in ["cxl_cache", "cxl_cache_prefetch", "cxl_mem"]:
            assert v[("serialize_" + access + "_gem5", x)] > v[("serialize_" + access + "_fabric", x)]
            assert v[("serialize_" + access + "_fabric", x)] >= v[("serialize_" + access, x)]
        # With gem5's engine the CXL-NIC wins every serialization pattern.
        assert v[("serialize_cxl_cache_gem5", x)] > 1.0
    assert pre("serialize_cxl_cache_gem5", 2.0) > 4 * pre("serialize_cxl_cache_gem5", 1.0)
    assert pre("serialize_cxl_cache", 2.0) < 3 * pre("serialize_cxl_cache", 1.0)


def test_strings_as_std_string_objects_cost_the_serializer_a_level(quick):
    # The default string_layout = std_string (protobuf's ArenaStringPtr: the
    # slot points at a 32 B std::string allocated apart, a long string's
    # characters in a further block) against the series *_inline (the
    # std::string in the object's slot): one more pointer level over
    # CXL.cache on the benches with strings, each about a CXL.cache round
    # trip; bench2 (no strings here) does not move; the decoders allocate
    # and write more.
    df = quick.df
    row = lambda s, x: df[(df.series == s) & (df.x == x)].iloc[0]
    for x in [1.0, 5.0]:
        inline, apart = row("serialize_cxl_cache_inline", x), row("serialize_cxl_cache", x)
        levels = apart["metric.pointer_levels"] - inline["metric.pointer_levels"]
        assert levels > 0.5, (x, levels)
        assert 0.45 < (apart["metric.time_us"] - inline["metric.time_us"]) / levels < 0.9
        assert apart["metric.speedup"] < inline["metric.speedup"]
        d, ds = row("deserialize_inline", x), row("deserialize", x)
        assert ds["metric.allocations"] > d["metric.allocations"] + 1
        assert ds["metric.object_lines"] > d["metric.object_lines"]
    assert (row("serialize_cxl_cache_inline", 2.0)["metric.time_us"]
            == row("serialize_cxl_cache", 2.0)["metric.time_us"])
    # The deserialization ordering stays the text's inverted: bench1 least.
    v = at(df)
    assert v[("deserialize", 1.0)] < v[("deserialize", 5.0)]
    # In a stream of requests, simulated (rpcstream12): the CXL-NIC faster
    # everywhere, bench2 (CopyFrom's 93 fields a request) most; with the
    # ring's head coalesced (the default) bench5 least, as in the text;
    # with a head push per request bench1 least (its heads' pushes, one
    # CXL.cache round trip each in ring order, pace it beyond its decoder).
    assert v[("deserialize_stream", 2.0)] > v[("deserialize_stream", 1.0)] > v[("deserialize_stream", 5.0)] > 1.0
    each = "deserialize_stream_head_each"
    assert v[(each, 2.0)] > v[(each, 5.0)] > v[(each, 1.0)] > 1.0
    assert v[(each, 1.0)] < v[("deserialize_stream", 1.0)]
    assert v[(each, 5.0)] == v[("deserialize_stream", 5.0)]


def test_every_reference_is_a_prediction_with_its_error(quick):
    refs = quick.df[quick.df.paper.notna()]
    assert len(refs) == 6
    assert (refs.role == "prediction").all()
    assert refs.error_pct.notna().all()


def test_claims_are_as_declared(quick):
    verdicts = [c["verdict"] for c in quick.claims()]
    assert verdicts == [
        # With DSA pre-serializing for RpcNIC (the default: its descriptors
        # overlapped): CXL.mem within the text's [2.0, 4.06] (claim 3),
        # CXL.cache slower than RpcNIC on four benches with and without the
        # prefetcher (claims 4 and 9).
        "held", "not_held", "held", "held", "not_held",
        "not_held", "not_held", "held", "held", "not_held",
        # The prefetcher's statements on ProtoAcc's serializer as its RTL
        # builds it (the *_protoacc series): it gains, Bench2 least.
        "held", "held",
        # Deserialization in a stream of requests (deserialize_stream,
        # simulated): the CXL-NIC faster everywhere; Bench2 above the text's
        # 2.05x (with the ring's head coalesced, Bench1 and Bench5 within).
        "held", "not_held",
        # Serialization on ProtoAcc with the prefetcher: 0.22-0.57x against
        # RpcNIC with DSA (0.82-1.09x against gem5's engine).
        "not_held",
        # fabric (32 lines in flight, the model before): CXL.cache with the
        # prefetcher loses on Bench1, Bench2 and Bench5, CXL.mem within the
        # text's [2.0, 4.06]; gem5's engine (a what-if, one descriptor at a
        # time): the CXL-NIC faster everywhere, CXL.mem above 4.06x.
        "not_held", "held", "held", "not_held",
        # The text's orderings (extremes, over the benches run): one request
        # at a time the deserialization ordering is inverted (Bench1 the
        # smallest); in a stream Bench5 is the smallest, as in the text, and
        # Bench2 the largest, not Bench1.
        "not_held", "not_held", "held", "not_held",
        # Serialization: CXL.mem Bench5 the smallest and Bench1 the largest;
        # CXL.cache with the prefetcher Bench2 the smallest, not Bench1 the
        # largest; the prefetcher's gain the smallest on Bench2 with
        # ProtoAcc's serializer only.
        "held", "held", "not_held", "not_held", "held",
        # At the ASIC clock (the *_asic series): all three CXL-NIC designs
        # outperform RpcNIC in serialization and CXL.mem lies within [2.0,
        # 4.06], but Bench2 just tops Bench1 with CXL.mem; Bench2 below the
        # prefetcher's 1.34x yet the smallest, and Bench1 the largest of the
        # three benches run (Bench3 tops it in the full sweep); no prefetch
        # gain; deserialization above 2.05x.
        "held", "held", "held", "not_held", "not_held", "held", "held", "not_held", "not_held",
    ]


def test_the_crowded_speedup_panel_gets_its_legend_below_it(quick, tmp_path):
    # The speedup panel draws most of the series: its legend goes to an
    # area of its own under the panel (it covered the curves before), the
    # small panels keep theirs inside, and no two series look alike.
    fig = quick.plot(tmp_path / "plot.png")
    panels = [p["name"] for p in quick.config["panels"]]
    curves, areas = fig.axes[:len(panels)], fig.axes[len(panels):]
    assert len(areas) == len(panels) and not any(a.axison for a in areas)
    speedup = panels.index("speedup")
    assert curves[speedup].get_legend() is None
    legend = areas[speedup].get_legend()
    assert legend is not None and len(legend.get_texts()) > 30
    assert curves[panels.index("construction")].get_legend() is not None
    looks = [(line.get_color(), line.get_linestyle()) for line in curves[speedup].get_lines()]
    assert len(set(looks)) == len(looks)
    assert (tmp_path / "plot.png").stat().st_size > 0


def test_cli_quick(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "ccsim", "reproduce", EXP, "--quick", "--out", str(tmp_path), "--json"],
        capture_output=True, text=True, check=True,
    )
    summary = json.loads(out.stdout)
    assert summary
    assert (tmp_path / EXP / "report.md").exists()
