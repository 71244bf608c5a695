//! Validation paths of platform and experiment files, with golden messages.
//! Each case states the input change and the exact one-line error expected.

use ccsim_kernel::component::*;
use ccsim_platform::{ConfigError, Experiment, Platform, Role, WorkloadDecl};

static LINK: ComponentSpec = ComponentSpec {
    type_name: "pcie_link",
    description: "Test link.",
    params: &[
        ParamSpec {
            name: "generation",
            kind: ParamKind::Int,
            default: ParamDefault::Int(3),
            unit: "",
            range: ParamRange::between(1.0, 5.0),
            from: "test",
            description: "Gen.",
        },
        ParamSpec {
            name: "lanes",
            kind: ParamKind::Int,
            default: ParamDefault::Required,
            unit: "lanes",
            range: ParamRange::between(1.0, 32.0).power_of_two(),
            from: "",
            description: "Width.",
        },
        ParamSpec {
            name: "latency_ns",
            kind: ParamKind::Float,
            default: ParamDefault::Float(100.0),
            unit: "ns",
            range: ParamRange::at_least(0.0),
            from: "test",
            description: "Lat.",
        },
        ParamSpec {
            name: "posted",
            kind: ParamKind::Bool,
            default: ParamDefault::Bool(true),
            unit: "",
            range: ParamRange::ANY,
            from: "test",
            description: "Posted.",
        },
        ParamSpec {
            name: "encoding",
            kind: ParamKind::Enum(&["8b10b", "128b130b"]),
            default: ParamDefault::Str("128b130b"),
            unit: "",
            range: ParamRange::ANY,
            from: "test",
            description: "Enc.",
        },
    ],
    ports: &[],
    stats: &[],
    check: Some(link_check),
};

/// Generations 1 and 2 encode 8b/10b, later ones 128b/130b.
fn link_check(p: &Params, _: Peers<'_>) -> Result<(), ParamProblem> {
    let old = p.int("generation") < 3;
    match (old, p.str("encoding")) {
        (true, "128b130b") => Err(ParamProblem::new(
            "encoding",
            "must be 8b10b below generation 3, got \"128b130b\"",
        )),
        (false, "8b10b") => Err(ParamProblem::new(
            "encoding",
            "must be 128b130b from generation 3, got \"8b10b\"",
        )),
        _ => Ok(()),
    }
}

/// A rule on another component: the memory is written by posted writes.
fn mem_check(_: &Params, peers: Peers<'_>) -> Result<(), ParamProblem> {
    for link in peers.of_type("pcie_link") {
        if !link.params.bool("posted") {
            return Err(ParamProblem::of_peer(
                link,
                "posted",
                "must be true in a platform with a memory, got false",
            ));
        }
    }
    Ok(())
}
static MEM: ComponentSpec = ComponentSpec {
    type_name: "memory",
    description: "Test memory.",
    params: &[ParamSpec {
        name: "latency_ns",
        kind: ParamKind::Float,
        default: ParamDefault::Float(80.0),
        unit: "ns",
        range: ParamRange::at_least(0.0),
        from: "test",
        description: "Lat.",
    }],
    ports: &[],
    stats: &[],
    check: Some(mem_check),
};
static WL_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "mode",
        kind: ParamKind::Enum(&["latency", "bandwidth"]),
        default: ParamDefault::Required,
        unit: "",
        range: ParamRange::ANY,
        from: "",
        description: "Mode.",
    },
    ParamSpec {
        name: "iterations",
        kind: ParamKind::Int,
        default: ParamDefault::Int(10),
        unit: "",
        range: ParamRange::at_least(1.0),
        from: "test",
        description: "Reps.",
    },
];

/// Bandwidth is a rate between two completions: two iterations at least.
fn wl_check(p: &Params) -> Result<(), ParamProblem> {
    let n = p.int("iterations");
    if p.str("mode") == "bandwidth" && n < 2 {
        return Err(ParamProblem::new(
            "iterations",
            format!("must be at least 2 with mode = bandwidth, got {n}"),
        ));
    }
    Ok(())
}

fn registry() -> Vec<&'static ComponentSpec> {
    vec![&MEM, &LINK]
}

fn lookup(t: &str) -> Option<&'static ComponentSpec> {
    registry().into_iter().find(|s| s.type_name == t)
}

const PLATFORM: &str = r#"
[platform]
name = "toy"
description = "a link and a memory"
paper = ["a.txt", "b.txt"]

[components.pcie]
type = "pcie_link"
generation = { value = 5, from = "paper §1" }
lanes = { value = 16, from = "paper §1" }
encoding = { value = "128b130b", from = "PCIe spec" }

[components.host_mem]
type = "memory"
latency_ns = { value = 90, from = "assumed" }
"#;

fn load(text: &str) -> Result<Platform, ConfigError> {
    Platform::from_toml_str("platforms/toy.toml", text, &registry())
}

fn err(text: &str) -> String {
    load(text).expect_err("expected an error").to_string()
}

#[test]
fn a_valid_platform_has_every_parameter_with_provenance() {
    let p = load(PLATFORM).unwrap();
    assert_eq!(p.name, "toy");
    assert_eq!(p.paper, vec!["a.txt", "b.txt"]);
    assert_eq!(
        p.components.keys().collect::<Vec<_>>(),
        ["host_mem", "pcie"]
    );
    let pcie = &p.component("pcie").unwrap().params;
    assert_eq!(
        pcie.get("lanes").unwrap(),
        &(ParamValue::Int(16), "paper §1".to_string())
    );
    assert_eq!(
        pcie.get("latency_ns").unwrap(),
        &(ParamValue::Float(100.0), "default".to_string())
    );
    assert_eq!(pcie.get("posted").unwrap().1, "default");
    assert_eq!(
        pcie.iter().count(),
        5,
        "every declared parameter is present"
    );
    // An integer given for a number parameter widens.
    assert_eq!(
        p.component("host_mem")
            .unwrap()
            .params
            .get("latency_ns")
            .unwrap()
            .0,
        ParamValue::Float(90.0)
    );
    assert_eq!(p.instances_of("memory").len(), 1);
}

#[test]
fn golden_errors_for_platform_files() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "lanes = { value = 16,",
            "lanes = { value = \"x\",",
            "platforms/toy.toml: platform.pcie.lanes: expected integer, got \"x\"",
        ),
        (
            "lanes = { value = 16,",
            "lanez = { value = 16,",
            "platforms/toy.toml: platform.pcie.lanez: unknown parameter of pcie_link; did you mean \"lanes\"?",
        ),
        (
            "name = \"toy\"",
            "name = \"toy\"\nnmae = \"x\"",
            "platforms/toy.toml: platform.nmae: unknown key; did you mean \"name\"?",
        ),
        ("[components.host_mem]", "[extra]\n[components.host_mem]", "platforms/toy.toml: extra: unknown key (known: platform, components, systems)"),
        (
            "name = \"toy\"",
            "nmae = \"toy\"",
            "platforms/toy.toml: platform.nmae: unknown key; did you mean \"name\"?",
        ),
        (
            "type = \"memory\"",
            "type = \"memroy\"",
            "platforms/toy.toml: platform.host_mem.type: unknown component type \"memroy\"; did you mean \"memory\"?",
        ),
        (
            "lanes = { value = 16, from = \"paper §1\" }",
            "",
            "platforms/toy.toml: platform.pcie.lanes: required parameter of pcie_link missing",
        ),
        (
            "lanes = { value = 16, from = \"paper §1\" }",
            "lanes = 16",
            "platforms/toy.toml: platform.pcie.lanes: expected { value = ..., from = \"<provenance>\" }, got 16",
        ),
        (
            "lanes = { value = 16, from = \"paper §1\" }",
            "lanes = { value = 16 }",
            "platforms/toy.toml: platform.pcie.lanes: missing provenance: add from = \"<paper §, figure or table>\" or \"assumed\"",
        ),
        (
            "lanes = { value = 16, from = \"paper §1\" }",
            "lanes = { value = 16, from = \"x\", form = \"y\" }",
            "platforms/toy.toml: platform.pcie.lanes.form: unknown key; did you mean \"from\"?",
        ),
        (
            "encoding = { value = \"128b130b\"",
            "encoding = { value = \"64b66b\"",
            "platforms/toy.toml: platform.pcie.encoding: expected one of 8b10b|128b130b, got \"64b66b\"",
        ),
        (
            "latency_ns = { value = 90,",
            "latency_ns = { value = true,",
            "platforms/toy.toml: platform.host_mem.latency_ns: expected number, got true",
        ),
        (
            "generation = { value = 5,",
            "generation = { value = 5.5,",
            "platforms/toy.toml: platform.pcie.generation: expected integer, got 5.5",
        ),
        ("[components.host_mem]", "[components.Host]", "platforms/toy.toml: platform.Host: instance names use lowercase letters, digits and '_', starting with a letter"),
        ("description = \"a link and a memory\"", "", "platforms/toy.toml: platform.description: required key missing"),
        ("name = \"toy\"", "name = 3", "platforms/toy.toml: platform.name: expected string, got 3"),
        ("[platform]", "[platform", "platforms/toy.toml: invalid TOML: invalid table header\nexpected `.`, `]` (line 2)"),
        // Ranges, one of each kind of bound.
        (
            "generation = { value = 5,",
            "generation = { value = 7,",
            "platforms/toy.toml: platform.pcie.generation: must be from 1 to 5, got 7",
        ),
        (
            "lanes = { value = 16,",
            "lanes = { value = 12,",
            "platforms/toy.toml: platform.pcie.lanes: must be a power of two from 1 to 32, got 12",
        ),
        (
            "latency_ns = { value = 90,",
            "latency_ns = { value = -1.5,",
            "platforms/toy.toml: platform.host_mem.latency_ns: must be at least 0, got -1.5",
        ),
        // Cross-field rules: within a component, and on another one.
        (
            "generation = { value = 5,",
            "generation = { value = 2,",
            "platforms/toy.toml: platform.pcie.encoding: must be 8b10b below generation 3, got \"128b130b\"",
        ),
        (
            "lanes = { value = 16, from = \"paper §1\" }",
            "lanes = { value = 16, from = \"paper §1\" }\nposted = { value = false, from = \"x\" }",
            "platforms/toy.toml: platform.pcie.posted: must be true in a platform with a memory, got false",
        ),
    ];
    for (from, to, golden) in cases {
        assert!(
            PLATFORM.contains(from),
            "case input {from:?} not in the base file"
        );
        let text = PLATFORM.replacen(from, to, 1);
        let golden = golden.replace('\n', " ");
        assert_eq!(err(&text), golden, "after replacing {from:?} with {to:?}");
        assert!(!err(&text).contains('\n'), "errors are one line");
    }
}

#[test]
fn overrides_are_typed_and_marked() {
    let p = load(PLATFORM).unwrap();
    let q = p
        .with_overrides_from(
            &[
                ("pcie.lanes".into(), ParamValue::Int(8)),
                ("host_mem.latency_ns".into(), ParamValue::Int(70)),
            ],
            lookup,
        )
        .unwrap();
    assert_eq!(
        q.component("pcie").unwrap().params.get("lanes").unwrap(),
        &(ParamValue::Int(8), "override".into())
    );
    assert_eq!(
        q.component("host_mem").unwrap().params.float("latency_ns"),
        70.0
    );
    assert_eq!(q.overrides.len(), 2);
    assert_eq!(
        p.component("pcie").unwrap().params.int("lanes"),
        16,
        "the original is unchanged"
    );

    let e = |key: &str, v: ParamValue| {
        p.with_overrides_from(&[(key.into(), v)], lookup)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        e("pcie.lanes", ParamValue::Str("x".into())),
        "overrides: platform.pcie.lanes: expected integer, got \"x\""
    );
    assert_eq!(
        e("pcie.lanes", ParamValue::Float(8.5)),
        "overrides: platform.pcie.lanes: expected integer, got 8.5"
    );
    assert_eq!(
        e("pcie.lane", ParamValue::Int(8)),
        "overrides: platform.pcie.lane: unknown parameter of pcie_link; did you mean \"lanes\"?"
    );
    assert_eq!(
        e("pcei.lanes", ParamValue::Int(8)),
        "overrides: platform.pcei.lanes: no component instance \"pcei\" in platform toy; did you mean \"pcie\"?"
    );
    assert_eq!(
        e("lanes", ParamValue::Int(8)),
        "overrides: platform.lanes: override keys are <instance>.<parameter>, like \"pcie.lanes\""
    );
    // Ranges and cross-field rules hold for overrides too.
    assert_eq!(
        e("pcie.lanes", ParamValue::Int(0)),
        "overrides: platform.pcie.lanes: must be a power of two from 1 to 32, got 0"
    );
    assert_eq!(
        e("host_mem.latency_ns", ParamValue::Float(-2.0)),
        "overrides: platform.host_mem.latency_ns: must be at least 0, got -2.0"
    );
    assert_eq!(
        e("pcie.generation", ParamValue::Int(1)),
        "overrides: platform.pcie.encoding: must be 8b10b below generation 3, got \"128b130b\""
    );
    assert_eq!(
        e("pcie.posted", ParamValue::Bool(false)),
        "overrides: platform.pcie.posted: must be true in a platform with a memory, got false"
    );
    // Rules are checked on the final values: two overrides that only
    // together satisfy a rule are accepted.
    let old = p
        .with_overrides_from(
            &[
                ("pcie.generation".into(), ParamValue::Int(2)),
                ("pcie.encoding".into(), ParamValue::Str("8b10b".into())),
            ],
            lookup,
        )
        .unwrap();
    assert_eq!(old.component("pcie").unwrap().params.int("generation"), 2);
}

#[test]
fn text_values_parse_in_the_declared_kind() {
    let spec = LINK.param("lanes").unwrap();
    assert_eq!(
        ccsim_platform::parse_text(spec, "8"),
        Ok(ParamValue::Int(8))
    );
    assert_eq!(
        ccsim_platform::parse_text(spec, "x"),
        Err("expected integer, got \"x\"".to_string())
    );
    let spec = LINK.param("posted").unwrap();
    assert_eq!(
        ccsim_platform::parse_text(spec, "false"),
        Ok(ParamValue::Bool(false))
    );
    let spec = LINK.param("latency_ns").unwrap();
    assert_eq!(
        ccsim_platform::parse_text(spec, "2.5"),
        Ok(ParamValue::Float(2.5))
    );
    assert_eq!(
        ccsim_platform::parse_text(spec, "-1"),
        Err("must be at least 0, got -1".to_string())
    );
}

const EXPERIMENT: &str = r#"
[experiment]
name = "toy-dma"
title = "Toy"
paper = "a.txt"
calibrated_on = ["fact one", "fact two"]
x = { name = "message_bytes", label = "bytes", log = true }
sweep = [64, 128, 256]
quick = [64, 256]

[[series]]
name = "latency"
platform = "toy"
workload = "dma_read"
params = { mode = "latency" }
metric = "latency_ns"
panel = "lat"

[[panels]]
name = "lat"
ylabel = "latency (ns)"

[[reference]]
series = "latency"
x = 64
value = 2500.0
role = "calibration"
citation = "paper §VI"

[[reference]]
series = "latency"
x = 256
value = 2600
role = "prediction"
citation = "paper Fig. 14"
"#;

fn workloads() -> Vec<WorkloadDecl> {
    vec![WorkloadDecl {
        name: "dma_read",
        params: WL_PARAMS,
        check: Some(wl_check),
        metrics: vec!["latency_ns", "bandwidth_gbps"],
    }]
}

fn exp_err(text: &str) -> String {
    Experiment::from_toml_str("experiments/toy-dma.toml", text, &workloads())
        .expect_err("expected an error")
        .to_string()
}

#[test]
fn a_valid_experiment_resolves_params_and_references() {
    let e =
        Experiment::from_toml_str("experiments/toy-dma.toml", EXPERIMENT, &workloads()).unwrap();
    assert_eq!(e.x.name, "message_bytes");
    assert!(e.x.log);
    assert_eq!(e.x_values(true), &[64.0, 256.0]);
    assert_eq!(e.x_values(false).len(), 3);
    let s = e.series("latency").unwrap();
    assert_eq!(
        s.params.get("mode").unwrap(),
        &(
            ParamValue::Str("latency".into()),
            "experiment toy-dma".into()
        )
    );
    assert_eq!(
        s.params.get("iterations").unwrap(),
        &(ParamValue::Int(10), "default".into())
    );
    assert_eq!(e.references.len(), 2);
    assert_eq!(e.references[0].role, Role::Calibration);
    assert_eq!(e.references[1].role.as_str(), "prediction");
    assert_eq!(e.calibrated_on.len(), 2);
}

#[test]
fn golden_errors_for_experiment_files() {
    let cases: &[(&str, &str, &str)] = &[
        ("metric = \"latency_ns\"", "metric = \"lat\"", "experiments/toy-dma.toml: series[0].metric: unknown metric \"lat\" of workload dma_read; did you mean \"latency_ns\"?"),
        ("workload = \"dma_read\"", "workload = \"dma_raed\"", "experiments/toy-dma.toml: series[0].workload: unknown workload \"dma_raed\"; did you mean \"dma_read\"?"),
        ("params = { mode = \"latency\" }", "params = { mode = \"fast\" }", "experiments/toy-dma.toml: series[0].params.mode: expected one of latency|bandwidth, got \"fast\""),
        ("params = { mode = \"latency\" }", "params = { mode = \"latency\", iters = 3 }", "experiments/toy-dma.toml: series[0].params.iters: unknown parameter of workload dma_read (known: mode, iterations)"),
        ("params = { mode = \"latency\" }", "", "experiments/toy-dma.toml: series[0].params.mode: required parameter of workload dma_read missing"),
        ("role = \"calibration\"", "role = \"fit\"", "experiments/toy-dma.toml: reference[0].role: expected one of calibration|prediction, got \"fit\""),
        ("x = 64\n", "x = 65\n", "experiments/toy-dma.toml: reference[0].x: 65.0 is not in experiment.sweep"),
        ("quick = [64, 256]", "quick = [64, 512]", "experiments/toy-dma.toml: experiment.quick[1]: 512.0 is not in experiment.sweep"),
        ("panel = \"lat\"", "panel = \"latency\"", "experiments/toy-dma.toml: series[0].panel: unknown panel \"latency\"; did you mean \"lat\"?"),
        ("ylabel = \"latency (ns)\"", "ylabel = \"latency (ns)\"\nylgo = true", "experiments/toy-dma.toml: panels[0].ylgo: unknown key; did you mean \"ylog\"?"),
        ("ylabel = \"latency (ns)\"", "ylabel = \"latency (ns)\"\nhistogram_at = [64, 100]", "experiments/toy-dma.toml: panels[0].histogram_at[1]: 100.0 is not in experiment.sweep"),
        ("log = true }", "lg = true }", "experiments/toy-dma.toml: experiment.x.lg: unknown key; did you mean \"log\"?"),
        ("sweep = [64, 128, 256]", "sweep = [64, \"x\", 256]", "experiments/toy-dma.toml: experiment.sweep[1]: expected number, got \"x\""),
        ("series = \"latency\"\nx = 64", "series = \"lat\"\nx = 64", "experiments/toy-dma.toml: reference[0].series: unknown series \"lat\"; did you mean \"latency\"?"),
        ("params = { mode = \"latency\" }", "params = { mode = \"latency\", iterations = 0 }", "experiments/toy-dma.toml: series[0].params.iterations: must be at least 1, got 0"),
        ("params = { mode = \"latency\" }", "params = { mode = \"bandwidth\", iterations = 1 }", "experiments/toy-dma.toml: series[0].params.iterations: must be at least 2 with mode = bandwidth, got 1"),
    ];
    for (from, to, golden) in cases {
        assert!(
            EXPERIMENT.contains(from),
            "case input {from:?} not in the base file"
        );
        assert_eq!(
            exp_err(&EXPERIMENT.replacen(from, to, 1)),
            *golden,
            "after replacing {from:?} with {to:?}"
        );
    }
}

#[test]
fn unknown_names_and_missing_files_are_config_errors() {
    let e = Platform::load_with("no-such-platform", &registry()).unwrap_err();
    assert_eq!(e.file, "no-such-platform");
    assert!(
        e.message
            .starts_with("no shipped platform of this name and no such file"),
        "{e}"
    );
    let e = Platform::load_with("/nonexistent/dir/p.toml", &registry()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/dir/p.toml: cannot read platform file: "),
        "{e}"
    );
}

#[test]
fn platforms_load_from_a_path() {
    let dir = std::env::temp_dir().join(format!("ccsim-platform-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("toy.toml");
    std::fs::write(&path, PLATFORM).unwrap();
    let p = Platform::load_with(path.to_str().unwrap(), &registry()).unwrap();
    assert_eq!(p.source, path.to_str().unwrap());
    assert_eq!(p.origin, path.to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two series and a ratio of them, with a reference on the ratio.
fn with_derived(derived: &str) -> String {
    let second = EXPERIMENT.replace("[[panels]]", "[[series]]\nname = \"latency_b\"\nplatform = \"toy\"\nworkload = \"dma_read\"\nparams = { mode = \"latency\" }\nmetric = \"latency_ns\"\npanel = \"lat\"\n\n[[panels]]");
    format!("{second}\n[[derived]]\n{derived}\n\n[[reference]]\nseries = \"speedup\"\nx = 64\nvalue = 3.0\nrole = \"calibration\"\ncitation = \"a ratio fact\"\n")
}

#[test]
fn derived_series_are_validated_and_take_references() {
    let text = with_derived(
        "name = \"speedup\"\nop = \"ratio\"\nnumerator = \"latency\"\ndenominator = \"latency_b\"",
    );
    let e = Experiment::from_toml_str("experiments/toy-dma.toml", &text, &workloads()).unwrap();
    assert_eq!(e.derived.len(), 1);
    assert_eq!(e.derived[0].numerator, "latency");
    // Without a panel the derived series gets one of its own.
    assert_eq!(e.derived[0].panel, "speedup");
    assert!(e.panels.iter().any(|p| p.name == "speedup"));
    assert_eq!(e.references.last().unwrap().series, "speedup");

    let golden = [
        (
            "name = \"speedup\"\nop = \"ratio\"\nnumerator = \"latncy\"\ndenominator = \"latency_b\"",
            "experiments/toy-dma.toml: derived[0].numerator: unknown series \"latncy\"; did you mean \"latency\"?",
        ),
        (
            "name = \"speedup\"\nop = \"product\"\nnumerator = \"latency\"\ndenominator = \"latency_b\"",
            "experiments/toy-dma.toml: derived[0].op: expected one of ratio, got \"product\"",
        ),
        (
            "name = \"latency\"\nop = \"ratio\"\nnumerator = \"latency\"\ndenominator = \"latency_b\"",
            "experiments/toy-dma.toml: derived[0].name: duplicate series \"latency\"",
        ),
    ];
    for (derived, message) in golden {
        assert_eq!(exp_err(&with_derived(derived)), message);
    }
}

#[test]
fn a_histogram_panel_names_its_x_and_takes_no_derived_series() {
    let text = EXPERIMENT.replace(
        "ylabel = \"latency (ns)\"",
        "ylabel = \"accesses\"\nhistogram_at = [64, 256]",
    );
    let e = Experiment::from_toml_str("experiments/toy-dma.toml", &text, &workloads()).unwrap();
    assert_eq!(e.panels[0].histogram_at, vec![64.0, 256.0]);
    let line =
        Experiment::from_toml_str("experiments/toy-dma.toml", EXPERIMENT, &workloads()).unwrap();
    assert!(line.panels[0].histogram_at.is_empty());
    // A ratio of two series has no samples to bin.
    let derived = with_derived(
        "name = \"speedup\"\nop = \"ratio\"\nnumerator = \"latency\"\ndenominator = \"latency_b\"\npanel = \"lat\"",
    )
    .replace("ylabel = \"latency (ns)\"", "ylabel = \"accesses\"\nhistogram_at = [64]");
    assert_eq!(
        exp_err(&derived),
        "experiments/toy-dma.toml: derived[0].panel: panel \"lat\" draws histograms: a derived series has no samples to bin"
    );
}

const CLAIMS: &str = r#"
[[series]]
name = "bandwidth"
platform = "toy"
workload = "dma_read"
params = { mode = "latency" }
metric = "bandwidth_gbps"
panel = "lat"

[[claims]]
quote = "latency is constant up to 128 bytes"
section = "paper §VI"
kind = "constant_up_to"
series = "latency"
x = 128
tol = 0.05
why = "a 5% step is invisible on the figure"

[[claims]]
quote = "latency stays below bandwidth"
section = "paper §VI"
kind = "order"
series = ["latency", "bandwidth"]
expect = "not_held"
why_not_held = "the toy DMA has no latency/bandwidth relation"

[[claims]]
quote = "over 2 us"
section = "paper §VI"
kind = "bound"
series = "latency"
x = [64, 256]
lower = 2000.0

[[claims]]
quote = "a peak bandwidth of 3 GB/s"
section = "paper §VI"
kind = "peak"
series = "bandwidth"
value = 3.0
tol = 0.05
why = "the 5% goal of a point the text states"

[[claims]]
quote = "from 1 us (64 B) to 3 us (256 B)"
section = "paper §VI"
kind = "extremes"
series = "latency"
smallest = 64
largest = 256
"#;

fn with_claims() -> String {
    format!("{EXPERIMENT}{CLAIMS}")
}

#[test]
fn claims_are_validated_at_load() {
    let e = Experiment::from_toml_str("experiments/toy-dma.toml", &with_claims(), &workloads())
        .unwrap();
    assert_eq!(e.claims.len(), 5);
    let c = &e.claims[0];
    assert_eq!(c.kind, ccsim_platform::ClaimKind::ConstantUpTo);
    assert_eq!((c.x.clone(), c.tol), (vec![128.0], Some(0.05)));
    assert!(c.expect_held);
    assert_eq!(e.claims[1].series, vec!["latency", "bandwidth"]);
    assert!(e.claims[1].x.is_empty() && !e.claims[1].expect_held);
    assert!(e.claims[1]
        .why_not_held
        .contains("no latency/bandwidth relation"));
    assert!(e.claims[0].why_not_held.is_empty());
    assert_eq!(
        (e.claims[2].lower, e.claims[2].upper, e.claims[2].x.clone()),
        (Some(2000.0), None, vec![64.0, 256.0])
    );
    assert_eq!(
        (e.claims[3].kind, e.claims[3].value, e.claims[3].tol),
        (ccsim_platform::ClaimKind::Peak, Some(3.0), Some(0.05))
    );
    assert!(e.claims[3].x.is_empty() && e.claims[2].value.is_none());
    assert_eq!(
        (e.claims[4].kind, e.claims[4].smallest, e.claims[4].largest),
        (ccsim_platform::ClaimKind::Extremes, Some(64.0), Some(256.0))
    );
    assert!(e.claims[3].smallest.is_none() && e.claims[3].largest.is_none());
    for (s, k) in ccsim_platform::ClaimKind::ALL {
        assert_eq!(k.as_str(), s);
    }
}

#[test]
fn golden_errors_for_claims() {
    let base = with_claims();
    let f = "experiments/toy-dma.toml";
    let cases: &[(&str, &str, String)] = &[
        ("series = [\"latency\", \"bandwidth\"]", "series = [\"latency\", \"foo\"]", format!("{f}: claims[1].series[1]: no series \"foo\" (known: latency, bandwidth)")),
        ("series = [\"latency\", \"bandwidth\"]", "series = [\"latency\"]", format!("{f}: claims[1].series: a order claim names 2 series, got 1")),
        ("kind = \"order\"", "kind = \"ordr\"", format!("{f}: claims[1].kind: expected one of order|crossing|constant_up_to|converges_after|linear_after|bound|ratio|peak|extremes, got \"ordr\"; did you mean \"order\"?")),
        ("smallest = 64\nlargest = 256\n", "", format!("{f}: claims[4].smallest: an extremes claim needs smallest and/or largest (an x)")),
        ("smallest = 64\n", "smallest = 100\n", format!("{f}: claims[4].smallest: 100.0 is not in experiment.sweep")),
        ("smallest = 64\n", "x = [128, 256]\nsmallest = 64\n", format!("{f}: claims[4].smallest: 64.0 is not in the claim's x")),
        ("smallest = 64\nlargest = 256", "smallest = 64\nlargest = 64", format!("{f}: claims[4].largest: must differ from smallest")),
        ("smallest = 64\n", "x = [64]\nsmallest = 64\n", format!("{f}: claims[4].x: an extremes claim compares at least two x")),
        ("smallest = 64\n", "smallest = 64\ntol = 0.1\n", format!("{f}: claims[4].tol: not a key of a extremes claim (its own: x, smallest, largest)")),
        ("expect = \"not_held\"", "expect = \"maybe\"", format!("{f}: claims[1].expect: expected one of held|not_held, got \"maybe\"")),
        ("why_not_held = \"the toy DMA has no latency/bandwidth relation\"", "", format!("{f}: claims[1].why_not_held: a claim expected not_held says why (the mechanism the simulation lacks, or the contradiction)")),
        ("tol = 0.05", "tol = 0.05\nwhy_not_held = \"no\"", format!("{f}: claims[0].why_not_held: only a claim with expect = \"not_held\" says why it is not held")),
        ("x = 128\ntol", "x = 100\ntol", format!("{f}: claims[0].x[0]: 100.0 is not in experiment.sweep")),
        ("x = 128\ntol", "x = [64, 128]\ntol", format!("{f}: claims[0].x: a constant_up_to claim needs exactly one x")),
        ("kind = \"constant_up_to\"\nseries = \"latency\"\nx = 128", "kind = \"converges_after\"\nseries = \"latency\"\nx = [128, 64]", format!("{f}: claims[0].x: a converges_after claim needs one x (from) or two increasing ones (from, to)")),
        ("tol = 0.05", "tol = 5", format!("{f}: claims[0].tol: a relative tolerance, in (0, 1)")),
        ("tol = 0.05", "tol = 0.05\nr2 = 0.9", format!("{f}: claims[0].r2: not a key of a constant_up_to claim (its own: x, tol)")),
        ("why = \"a 5% step is invisible on the figure\"", "", format!("{f}: claims[0].why: a constant_up_to claim states why its tolerance is what it is")),
        ("lower = 2000.0", "", format!("{f}: claims[2].lower: a bound needs lower and/or upper")),
        ("lower = 2000.0", "lower = 2000.0\nupper = 1000.0", format!("{f}: claims[2].upper: must be above lower (2000.0)")),
        ("value = 3.0\n", "", format!("{f}: claims[3].value: required key missing")),
        ("value = 3.0\n", "value = 0.0\n", format!("{f}: claims[3].value: a peak's value is not 0 (its error is relative)")),
        ("value = 3.0\ntol = 0.05", "value = 3.0\ntol = 1.5", format!("{f}: claims[3].tol: a relative tolerance, in (0, 1)")),
        ("why = \"the 5% goal of a point the text states\"", "", format!("{f}: claims[3].why: a peak claim states why its tolerance is what it is")),
        ("lower = 2000.0\n", "lower = 2000.0\nvalue = 1.0\n", format!("{f}: claims[2].value: not a key of a bound claim (its own: x, lower, upper)")),
        ("quote = \"over 2 us\"", "quote = \" \"", format!("{f}: claims[2].quote: must not be empty")),
        ("section = \"paper §VI\"\nkind = \"bound\"", "kind = \"bound\"", format!("{f}: claims[2].section: required key missing")),
    ];
    for (from, to, golden) in cases {
        assert!(
            base.contains(from),
            "case input {from:?} not in the base file"
        );
        assert_eq!(
            exp_err(&base.replacen(from, to, 1)),
            *golden,
            "after replacing {from:?} with {to:?}"
        );
    }
}
