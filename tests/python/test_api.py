"""The Python API on the shipped platforms: loading, overrides, errors and
pickling by rebuilding from config."""

from __future__ import annotations

import pickle

import pytest

import ccsim


def shipped_platforms():
    names = ccsim.platforms()
    assert names, "platforms/ ships at least one platform"
    return names


def an_int_param(p):
    """(instance, param, value) of the first integer parameter of ``p``."""
    for inst, c in p.components().items():
        for name, (value, _prov) in c["params"].items():
            if isinstance(value, int) and not isinstance(value, bool):
                return inst, name, value
    pytest.skip(f"platform {p.name} has no integer parameter")


def test_every_shipped_platform_loads_with_provenance_everywhere():
    for name in shipped_platforms():
        p = ccsim.Platform.load(name)
        assert p.name == name
        assert p.source == f"platforms/{name}.toml"
        assert p.description
        comps = p.components()
        assert comps
        types = {t["type"]: t for t in ccsim.component_types()}
        for inst, c in comps.items():
            declared = {d["name"] for d in types[c["type"]]["params"]}
            assert set(c["params"]) == declared, f"{name}.{inst}: every declared param is resolved"
            for pname, (_value, prov) in c["params"].items():
                assert isinstance(prov, str) and prov.strip(), f"{name}.{inst}.{pname} has no provenance"


def test_overrides_are_typed_and_marked():
    name = shipped_platforms()[0]
    base = ccsim.Platform.load(name)
    inst, param, value = an_int_param(base)
    p = ccsim.Platform.load(name, overrides={f"{inst}.{param}": value + 1})
    assert p.components()[inst]["params"][param] == (value + 1, "override")
    assert p.overrides == {f"{inst}.{param}": value + 1}
    assert base.components()[inst]["params"][param][0] == value


def test_bad_overrides_raise_config_errors_naming_the_path():
    name = shipped_platforms()[0]
    inst, param, _ = an_int_param(ccsim.Platform.load(name))
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.Platform.load(name, overrides={f"{inst}.{param}": "x"})
    assert str(e.value) == f'overrides: platform.{inst}.{param}: expected integer, got "x"'
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.Platform.load(name, overrides={f"{inst}.no_such_param_zz": 1})
    assert e.value.path == f"platform.{inst}.no_such_param_zz"
    with pytest.raises(ccsim.ConfigError) as e:
        ccsim.Platform.load(name, overrides={f"{inst}.{param}": [1, 2]})
    assert e.value.message == "expected a number, boolean or string, got a list"


def test_text_overrides_parse_in_the_declared_kind():
    name = shipped_platforms()[0]
    inst, param, value = an_int_param(ccsim.Platform.load(name))
    p = ccsim.Platform.load(name, None, [(f"{inst}.{param}", str(value + 2))])
    assert p.components()[inst]["params"][param] == (value + 2, "override")


def test_platforms_pickle_by_rebuilding_from_config():
    name = shipped_platforms()[0]
    inst, param, value = an_int_param(ccsim.Platform.load(name))
    p = ccsim.Platform.load(name, overrides={f"{inst}.{param}": value + 1})
    reduced = p.__reduce__()
    assert reduced[1] == (name, {f"{inst}.{param}": value + 1}), "rebuilt from name and overrides"
    q = pickle.loads(pickle.dumps(p))
    assert q == p
    assert q.components() == p.components()


def test_experiments_pickle_by_rebuilding_from_config():
    names = ccsim.experiments()
    assert names
    for n in names:
        e = ccsim.Experiment.load(n)
        assert e.__reduce__()[1] == (n,)
        f = pickle.loads(pickle.dumps(e))
        assert f == e and f.to_dict() == e.to_dict()


def test_errors_pickle():
    with pytest.raises(ccsim.ConfigError) as info:
        ccsim.Platform.load("cohet", overrides={"pcie.lanes": [8]})
    e = info.value
    f = pickle.loads(pickle.dumps(e))
    assert type(f) is ccsim.ConfigError
    assert (f.file, f.path, f.message, str(f)) == (e.file, e.path, e.message, str(e))
    assert str(f) == f"overrides: platform.pcie.lanes: {e.message}" and "\n" not in str(f)
