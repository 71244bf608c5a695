//! The Enzian systems as data: `[systems.*]` of platforms/enzian.toml build
//! the same simulations the Rust declarations do (same trace, same
//! results), and every mistake in a section is refused at load with its
//! path.

use ccsim_eci::cc::{CcOp, CcOpKind, CPU_HOMED_BASE};
use ccsim_eci::cc_system::{CcParams, CcSystem};
use ccsim_eci::cpu::CpuOp;
use ccsim_eci::system::{CoherentParams, CoherentSystem, HomeMemory};
use ccsim_kernel::prelude::*;
use ccsim_platform::{EciOptions, Platform};

fn enzian() -> Platform {
    Platform::load("enzian").unwrap()
}

/// A mix of loads and stores on a few lines (some of them twice).
fn program() -> Vec<CpuOp> {
    (0..24u64)
        .map(|i| match i % 3 {
            2 => CpuOp::Store {
                line: i % 7,
                word: (i % 16) as u8,
                value: i * 11,
            },
            _ => CpuOp::Load { line: i % 7 },
        })
        .collect()
}

/// The instances a system section names, as the Rust declaration's params.
fn rust_params(p: &Platform, link: &str, cpu: &str, home: &str, memory: &str) -> CoherentParams {
    let params = |i: &str| p.components[i].params.clone();
    let mut c = CoherentParams {
        link: params(link),
        cpu: params(cpu),
        dc: params(home),
        ..Default::default()
    };
    if memory.contains("ddr") {
        c.ddr = params(memory);
    } else {
        c.bram = params(memory);
    }
    c
}

#[test]
fn the_enzian_platform_declares_its_coherent_systems() {
    let p = enzian();
    let names: Vec<&str> = p.systems.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "cpu_homed",
            "dc_bram",
            "dc_ddr",
            "invocation",
            "invocation_shared_dcu",
            "llc_ddr",
            "shared"
        ]
    );
    for (name, d) in &p.systems {
        assert!(d.is_eci(), "{name}");
        let protocols = match d.loaded() {
            ccsim_platform::Loaded::Eci(p) => p.tables.len(),
            _ => 0,
        };
        assert_eq!(protocols, if name == "shared" { 2 } else { 1 }, "{name}");
        assert_eq!((d.line_bytes, d.header_bytes), (128, 8), "{name}");
    }
    let dc = &p.systems["dc_ddr"].agents[1];
    assert_eq!(
        (dc.instance.as_str(), dc.memory.as_deref()),
        ("dc", Some("dc_ddr"))
    );
}

#[test]
fn a_system_from_data_runs_exactly_as_its_rust_declaration() {
    let p = enzian();
    for (system, link, home, memory, kind) in [
        ("dc_bram", "eci", "dc", "dc_bram", HomeMemory::Bram),
        ("dc_ddr", "eci", "dc", "dc_ddr", HomeMemory::Ddr),
        (
            "llc_ddr",
            "ccpi",
            "thunderx_home",
            "thunderx_ddr",
            HomeMemory::Ddr,
        ),
    ] {
        let mut data = p
            .coherent_system(system, &EciOptions::new(7, TraceMode::Hash))
            .unwrap();
        data.set_programs(vec![program()]).unwrap();
        data.run().unwrap();
        let rust = rust_params(&p, link, "llc", home, memory);
        let mut wired =
            CoherentSystem::build_with(&rust, kind, program(), vec![], 7, TraceMode::Hash).unwrap();
        wired.run().unwrap();
        assert_eq!(data.sim.trace_hash(), wired.sim.trace_hash(), "{system}");
        assert_eq!(data.sim.now(), wired.sim.now(), "{system}");
        assert_eq!(data.cpu().completed.len(), 24, "{system}");
        assert_eq!(data.protocol(), "eci-dc");
    }
    assert_eq!(
        p.coherent_system("invocation", &EciOptions::new(1, TraceMode::Off))
            .unwrap()
            .protocol(),
        "invocation"
    );
}

#[test]
fn the_cpu_homed_system_runs_as_its_rust_declaration() {
    let p = enzian();
    let line = CPU_HOMED_BASE + 3;
    let ops = || vec![CcOp::new(CcOpKind::Load, line)];
    let mut data = p
        .cc_system("cpu_homed", &EciOptions::new(5, TraceMode::Hash))
        .unwrap();
    data.cc_mut().push_ops(ops());
    data.run().unwrap();
    let params = |i: &str| p.components[i].params.clone();
    let rust = CcParams {
        link: params("eci"),
        home: params("cpu_home"),
        cc: params("cc"),
        ..Default::default()
    };
    let mut wired = CcSystem::build(&rust, vec![], ops(), 5).unwrap();
    wired.run().unwrap();
    assert_eq!(data.sim.trace_hash(), wired.sim.trace_hash());
    assert_eq!(
        data.cc().completed[0].data,
        Some(ccsim_coherence::initial_line(line))
    );
}

#[test]
fn the_shared_system_runs_as_its_rust_declaration() {
    use ccsim_eci::shared::{SharedParams, SharedSystem, SharedWork};
    let p = enzian();
    let work = || SharedWork {
        cpu: program(),
        device: vec![
            CcOp::new(CcOpKind::Load, CPU_HOMED_BASE + 1),
            CcOp::new(CcOpKind::Load, CPU_HOMED_BASE + 2),
        ],
        home: vec![CpuOp::Store {
            line: CPU_HOMED_BASE + 2,
            word: 0,
            value: 9,
        }],
        ..Default::default()
    };
    let mut data = p
        .shared_system("shared", &EciOptions::new(2, TraceMode::Hash))
        .unwrap();
    data.set_work(work()).unwrap();
    data.run().unwrap();
    let params = |i: &str| p.components[i].params.clone();
    let rust = SharedParams {
        coherent: rust_params(&p, "eci", "llc", "dc", "dc_bram"),
        home: params("cpu_home"),
        cc: params("cc"),
        cc_tables: None,
    };
    let mut wired = SharedSystem::build(&rust, HomeMemory::Bram, work(), 2).unwrap();
    wired.run().unwrap();
    assert_eq!(data.sim.trace_hash(), wired.sim.trace_hash());
    assert_eq!(data.cpu().completed.len(), 24);
    assert_eq!(data.cc().completed.len(), 2);
}

#[test]
fn workload_options_swap_instances_and_set_parameters() {
    let p = enzian();
    let opts = EciOptions::new(1, TraceMode::Off)
        .instance("cpu", "thunderx_cpu")
        .set("cpu", "cores", ParamValue::Int(2), "test: two cores");
    let sys = p.coherent_system("dc_bram", &opts).unwrap();
    assert_eq!(sys.cpu().cores(), 2);
    // The declared instance has one core.
    let sys = p
        .coherent_system("dc_bram", &EciOptions::new(1, TraceMode::Off))
        .unwrap();
    assert_eq!(sys.cpu().cores(), 1);

    let bad = |opts: EciOptions, want: &str| {
        let e = p
            .coherent_system("dc_bram", &opts)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("systems.dc_bram") && e.contains(want), "{e}");
    };
    let base = || EciOptions::new(1, TraceMode::Off);
    bad(
        base().instance("cpu", "dc"),
        "agent `cpu` is a coherent_cpu; instance `dc` is a directory_controller",
    );
    bad(base().instance("cpu", "nope"), "no component `nope`");
    bad(base().instance("gpu", "llc"), "no agent `gpu`");
    bad(
        base().set("gpu", "mshrs", ParamValue::Int(1), "x"),
        "no agent `gpu` in system dc_bram",
    );
    bad(base().set("cpu", "mshrs", ParamValue::Int(0), "x"), "mshrs");
    // A view of the other kind of system is refused.
    let e = p.cc_system("dc_bram", &base()).err().unwrap().to_string();
    assert!(e.contains("the system has no cpu_home"), "{e}");
}

#[test]
fn the_random_tester_refuses_an_enzian_system_and_vice_versa() {
    use ccsim_platform::BuildOptions;
    let opts = BuildOptions {
        seed: 1,
        trace: TraceMode::Off,
        checks: true,
        tester: None,
    };
    let e = enzian().build("dc_bram", opts).err().unwrap().to_string();
    assert!(e.contains("a system of Enzian agents"), "{e}");
    let msi = Platform::load("msi-dma").unwrap();
    let e = msi
        .coherent_system("random", &EciOptions::new(1, TraceMode::Off))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("a system of table agents"), "{e}");
}

const DC_BRAM: &str = r#"[systems.dc_bram]
description = "The LLC and the DC with BRAM"
protocol = "eci-dc"
line_bytes = { value = 128, from = "CCKit §4" }
agents = [
  { name = "cpu", instance = "llc", role = "cpu" },
  { name = "dc", instance = "dc", role = "dc", memory = "dc_bram" },
]
links = [
  { a = "cpu.eci0", b = "dc.eci0", instance = "eci" },
  { a = "cpu.eci1", b = "dc.eci1", instance = "eci" },
]
"#;

/// The platform's components (and a `protocol_link`, `net`) with `system`
/// in place of its systems.
fn with_system(system: &str) -> Result<Platform, ccsim_platform::ConfigError> {
    let text = ccsim_platform::shipped_text("platform", "enzian").unwrap();
    let components = &text[..text.find("[systems.").unwrap()];
    Platform::from_toml_str(
        "platforms/bad.toml",
        &format!("{components}\n[components.net]\ntype = \"protocol_link\"\n\n{system}"),
        &ccsim_platform::registry(),
    )
}

#[test]
fn bad_enzian_system_sections_name_their_path() {
    assert!(with_system(DC_BRAM).is_ok());
    let cases = [
        (r#"role = "cpu" }"#, r#"role = "dc" }"#, "systems.dc_bram.agents[0].role", "a coherent_cpu runs the `cpu` machine of eci-dc, not `dc`"),
        (r#", memory = "dc_bram""#, "", "systems.dc_bram.agents[1].memory", "a directory_controller names its memory"),
        (r#"memory = "dc_bram""#, r#"memory = "eci""#, "systems.dc_bram.agents[1].memory", "`eci` is a eci_link; a memory is a coherent_bram, ddr_controller or ddr5_controller"),
        (r#"role = "cpu" }"#, r#"role = "cpu", memory = "dc_bram" }"#, "systems.dc_bram.agents[0].memory", "a coherent_cpu has no memory of its own"),
        (r#"protocol = "eci-dc""#, r#"protocol = "eci-cc""#, "systems.dc_bram.agents[0].instance", "a coherent_cpu serves FPGA-homed lines; protocol eci-cc is CPU-homed"),
        (r#"protocol = "eci-dc""#, r#"protocol = "msi-dma""#, "systems.dc_bram.protocol", "two-node protocols"),
        ("value = 128", "value = 64", "systems.dc_bram.line_bytes", "Enzian agents hold 128-byte lines, got 64"),
        (r#"line_bytes = { value = 128, from = "CCKit §4" }"#, "line_bytes = { value = 128, from = \"CCKit §4\" }\nheader_bytes = { value = 16, from = \"x\" }", "systems.dc_bram.header_bytes", "ECI's 8-byte header, got 16"),
        (r#"b = "dc.eci1", instance = "eci""#, r#"b = "dc.eci1", instance = "ccpi""#, "systems.dc_bram.links[1].instance", "differs from the first eci_link's `eci`"),
        (r#"b = "dc.eci1", instance = "eci""#, r#"b = "dc.eci1", instance = "dc_bram""#, "systems.dc_bram.links[1].instance", "a link must be a protocol_link, a cxl_flexbus, a ccix_vc_link, an eci_link or an eci_wire"),
        (r#"b = "dc.eci1", instance = "eci""#, r#"b = "dc.eci1", instance = "net""#, "systems.dc_bram.links[1].instance", "`net` is a protocol_link, but agents[0] makes this a system of Enzian agents"),
        (r#"role = "cpu" }"#, r#"role = "cpu", protocol = "nope" }"#, "systems.dc_bram.agents[0].protocol", "nope"),
        (r#"role = "cpu" }"#, r#"role = "cpu", protocol = "eci-cc" }"#, "systems.dc_bram.agents[0].instance", "a coherent_cpu serves FPGA-homed lines; protocol eci-cc is CPU-homed"),
        ("  { a = \"cpu.eci1\", b = \"dc.eci1\", instance = \"eci\" },\n", "", "systems.dc_bram.agents[0]", "agent `cpu` has no link on its port `eci1`"),
        (r#"{ name = "dc", instance = "dc""#, r#"{ name = "dc", instance = "nic""#, "systems.dc_bram.agents[1].instance", "`nic` is a nic_mac; agents here must be of type table_agent or an Enzian agent"),
    ];
    for (old, new, path, message) in cases {
        assert!(DC_BRAM.contains(old), "{old}");
        let e = with_system(&DC_BRAM.replacen(old, new, 1))
            .err()
            .unwrap_or_else(|| panic!("{new} was accepted"))
            .to_string();
        assert!(
            e.contains(&format!("platforms/bad.toml: {path}")) && e.contains(message),
            "{path} / {message}:\n{e}"
        );
    }
}

#[test]
fn one_system_holds_one_family() {
    let text = ccsim_platform::shipped_text("platform", "msi-dma").unwrap();
    let mixed = text.replace(
        r#"{ name = "cache1", instance = "cache", role = "cache" },"#,
        r#"{ name = "cache1", instance = "cache", role = "cache" },
  { name = "dc", instance = "dc", role = "dc", memory = "mem" },"#,
    ) + r#"
[components.dc]
type = "directory_controller"

[components.mem]
type = "coherent_bram"
"#;
    let e = Platform::from_toml_str("platforms/mixed.toml", &mixed, &ccsim_platform::registry())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("systems.random.agents[2].instance")
            && e.contains("one system holds one family"),
        "{e}"
    );
}

#[test]
fn an_agent_may_run_a_protocol_given_by_path() {
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/../../protocols/eci-cc.toml");
    let text = ccsim_platform::shipped_text("platform", "enzian")
        .unwrap()
        .replace(
            r#"protocol = "eci-cc" }"#,
            &format!("protocol = {spec:?} }}"),
        );
    assert!(text.contains(spec));
    let p =
        Platform::from_toml_str("platforms/path.toml", &text, &ccsim_platform::registry()).unwrap();
    match p.systems["shared"].loaded() {
        ccsim_platform::Loaded::Eci(e) => assert_eq!(e.of_agent, [0, 1, 0, 1]),
        _ => panic!("an Enzian system"),
    }
    let mut sys = p
        .shared_system("shared", &EciOptions::new(1, TraceMode::Off))
        .unwrap();
    let line = CPU_HOMED_BASE + 4;
    sys.set_work(ccsim_eci::shared::SharedWork {
        device: vec![CcOp::new(CcOpKind::Load, line)],
        ..Default::default()
    })
    .unwrap();
    sys.run().unwrap();
    assert_eq!(
        sys.cc().completed[0].data,
        Some(ccsim_coherence::initial_line(line))
    );
}
