//! Cohet's `[systems.cxl_expander]`: a table-agent home with a DDR5 memory
//! behind it, and the errors of a memory put anywhere else.

use ccsim_platform::Platform;

/// Cohet's platform file with `edit` applied (old -> new, once).
fn cohet_with(old: &str, new: &str) -> Result<Platform, ccsim_platform::ConfigError> {
    let text = ccsim_platform::shipped_text("platform", "cohet").unwrap();
    assert!(text.contains(old), "{old}");
    Platform::from_toml_str(
        "platforms/bad.toml",
        &text.replacen(old, new, 1),
        &ccsim_platform::registry(),
    )
}

#[test]
fn the_expander_controller_has_its_ddr5_memory() {
    let p = Platform::load("cohet").unwrap();
    let d = p.system("cxl_expander").unwrap();
    let mc = d.agents.iter().find(|a| a.name == "mc").unwrap();
    assert_eq!(mc.memory.as_deref(), Some("expander_dram"));
    assert_eq!(
        p.component("expander_dram").unwrap().type_name,
        "ddr5_controller"
    );
    // Messages are whole 16 B slots of the CXL flit.
    assert_eq!((d.line_bytes, d.header_bytes), (64, 16));
}

#[test]
fn a_memory_behind_a_thread_or_of_the_wrong_type_is_an_error() {
    let thread = r#"{ name = "thread0", instance = "expander_thread", role = "host" }"#;
    let e = cohet_with(
        thread,
        r#"{ name = "thread0", instance = "expander_thread", role = "host", memory = "expander_dram" }"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("systems.cxl_expander.agents[0].memory: only the protocol's home (role `mc`) or a memory-side role (one instance, holding the line in every state) has a memory behind it"),
        "{e}"
    );
    let e = cohet_with(r#"memory = "expander_dram""#, r#"memory = "expander_link""#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`expander_link` is a protocol_link; a memory is a coherent_bram, ddr_controller or ddr5_controller"),
        "{e}"
    );
}

#[test]
fn llc_slices_belong_to_a_table_agent_home_and_come_from_an_snc_mesh() {
    let p = Platform::load("cohet").unwrap();
    let llc = |system: &str| {
        let d = p.system(system).unwrap();
        d.agents
            .iter()
            .find(|a| a.name == "llc")
            .unwrap()
            .slices
            .clone()
    };
    for system in ["cxl", "cxl_two_devices", "cxl_io", "cxl_type2"] {
        assert_eq!(llc(system).as_deref(), Some("snc"), "{system}");
    }
    let home = r#"{ name = "llc", instance = "llc_home", role = "home", memory = "host_dram", slices = "snc" }"#;
    let e = cohet_with(
        home,
        &home.replace(r#"slices = "snc""#, r#"slices = "host_dram""#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("systems.cxl.agents[2].slices")
            && e.contains("`host_dram` is a ddr5_controller; slices come from an snc_mesh"),
        "{e}"
    );
    let core = r#"{ name = "core0", instance = "host_core", role = "core" }"#;
    let e = cohet_with(
        core,
        r#"{ name = "core0", instance = "host_core", role = "core", slices = "snc" }"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("systems.cxl.agents[0].slices")
            && e.contains(
                "only the protocol's home (role `home`) spreads its lines over LLC slices"
            ),
        "{e}"
    );
}
